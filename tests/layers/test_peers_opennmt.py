"""OpenNMT-py's `GlobalAttention` (dot, general, mlp; softmax or sparsemax), reproduced by our
layers and `LuongAttentionCell` configured as docs/attention-layers.md ("OpenNMT-py") maps it,
with the weights copied across, against a float64 NumPy transcription of OpenNMT's own forward
(`tests/reference_peers.py`, from `onmt/modules/global_attention.py`).

The mapping (PyTorch's `nn.Linear` weights are `[out, in]`, ours `[in, out]`):

- `attn_type="dot"`: `LuongAttention("dot", attention_units=dim)`;
- `"general"`: `LuongAttention("general", attention_units=dim)`, `score_kernel = linear_in.weight`
  (`(W q) · h = q · (h W)`);
- `"mlp"`: `LuongAttention("concat", use_query_bias=True, attention_units=dim,
  attention_activation=None, use_attention_bias=True)`, `query_kernel = linear_query.weightᵀ`,
  `query_bias = linear_query.bias`, `key_kernel = linear_context.weightᵀ`,
  `score_vector = v.weight[0]` (the score alone: `AdditiveAttention(use_query_bias=True)`);
- `linear_out` acts on `[c; q]`, our `W_c` on `[s; c]`: `attention_kernel` is
  `linear_out.weightᵀ` with its two halves of rows swapped, `attention_bias = linear_out.bias`
  (mlp only); OpenNMT applies the tanh for dot and general only (`attention_activation=None`
  for mlp);
- `attn_func="sparsemax"`: `probability_fn="sparsemax"`; `src_len`: a value mask.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import AdditiveAttention, LuongAttention, LuongAttentionCell
from tests.backend_utils import to_numpy
from tests.reference_peers import opennmt_global_attention

DIM, BATCH, TGT, SRC = 5, 3, 4, 6
LENGTHS = np.array([6, 4, 1])
TOL = {"atol": 2e-6, "rtol": 1e-5}


def _opennmt_weights(rng, attn_type):
    """Random parameters of `GlobalAttention(DIM, attn_type=...)`, by PyTorch name."""
    weights = {"linear_out.weight": rng.normal(scale=0.4, size=(DIM, 2 * DIM))}
    if attn_type == "general":
        weights["linear_in.weight"] = rng.normal(scale=0.4, size=(DIM, DIM))
    if attn_type == "mlp":
        weights["linear_context.weight"] = rng.normal(scale=0.4, size=(DIM, DIM))
        weights["linear_query.weight"] = rng.normal(scale=0.4, size=(DIM, DIM))
        weights["linear_query.bias"] = rng.normal(scale=0.4, size=(DIM,))
        weights["v.weight"] = rng.normal(scale=0.4, size=(1, DIM))
        weights["linear_out.bias"] = rng.normal(scale=0.4, size=(DIM,))
    return weights


def _attention_kernel(weights):
    """`linear_out` on `[c; q]` as our `W_c` on `[s; c]`: transpose, swap the row halves."""
    transposed = weights["linear_out.weight"].T  # rows 0..dim-1 see c, dim..2dim-1 see q
    return np.concatenate([transposed[DIM:], transposed[:DIM]], axis=0)


def _our_layer(attn_type, attn_func):
    """The documented mapping of `GlobalAttention(DIM, attn_type, attn_func)`."""
    mlp = attn_type == "mlp"
    return LuongAttention(
        {"dot": "dot", "general": "general", "mlp": "concat"}[attn_type],
        attention_units=DIM,
        attention_activation=None if mlp else "tanh",
        use_query_bias=mlp,
        use_attention_bias=mlp,
        probability_fn=attn_func,
    )


def _copy_score(layer, weights, attn_type):
    if attn_type == "general":
        layer.score_kernel.assign(weights["linear_in.weight"])
    if attn_type == "mlp":
        layer.query_kernel.assign(weights["linear_query.weight"].T)
        layer.query_bias.assign(weights["linear_query.bias"])
        layer.key_kernel.assign(weights["linear_context.weight"].T)
        layer.score_vector.assign(weights["v.weight"][0])


def _data(rng):
    source = rng.normal(size=(BATCH, TGT, DIM)).astype("float32")
    memory = rng.normal(size=(BATCH, SRC, DIM)).astype("float32")
    return source, memory, np.arange(SRC)[None, :] < LENGTHS[:, None]


@pytest.mark.parametrize("attn_func", ["softmax", "sparsemax"])
@pytest.mark.parametrize("attn_type", ["dot", "general", "mlp"])
def test_layer_is_opennmt_global_attention(attn_type, attn_func):
    rng = np.random.default_rng(["dot", "general", "mlp"].index(attn_type))
    weights = _opennmt_weights(rng, attn_type)
    source, memory, mask = _data(rng)
    expected_h, expected_align = opennmt_global_attention(
        source, memory, weights, attn_type, src_len=LENGTHS, attn_func=attn_func
    )

    layer = _our_layer(attn_type, attn_func)
    layer.build([source.shape, memory.shape])
    _copy_score(layer, weights, attn_type)
    layer.attention_kernel.assign(_attention_kernel(weights))
    if attn_type == "mlp":
        layer.attention_bias.assign(weights["linear_out.bias"])
    attn_h, align = layer(source, memory, value_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(align), expected_align, **TOL)
    np.testing.assert_allclose(to_numpy(attn_h), expected_h, **TOL)

    # One step ([batch, dim]), as OpenNMT's decoder calls it.
    step_h, step_align = layer(source[:, 1], memory, value_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(step_align), expected_align[:, 1], **TOL)
    np.testing.assert_allclose(to_numpy(step_h), expected_h[:, 1], **TOL)


def test_mlp_score_alone_is_additive_attention_with_a_query_bias():
    rng = np.random.default_rng(5)
    weights = _opennmt_weights(rng, "mlp")
    source, memory, mask = _data(rng)
    _, expected_align = opennmt_global_attention(source, memory, weights, "mlp", src_len=LENGTHS)
    layer = AdditiveAttention(use_query_bias=True)
    layer.build([source.shape, memory.shape])
    _copy_score(layer, weights, "mlp")
    context, align = layer(source, memory, value_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(to_numpy(align), expected_align, **TOL)
    np.testing.assert_allclose(
        to_numpy(context), expected_align @ np.where(mask[..., None], memory, 0.0), **TOL
    )
    # Without the bias (the default) the mlp score is out of reach: the weights differ.
    plain = AdditiveAttention()
    plain.build([source.shape, memory.shape])
    for name in ("query_kernel", "key_kernel", "score_vector"):
        getattr(plain, name).assign(getattr(layer, name))
    _, plain_align = plain(source, memory, value_mask=mask, return_attention_scores=True)
    assert np.abs(to_numpy(plain_align) - expected_align).max() > 1e-3


def test_cell_attentional_vector_is_opennmt_linear_out():
    """`LuongAttentionCell(use_attention_bias=True)`: one decoder step's h̃ is OpenNMT's
    `GlobalAttention("mlp")(s_t, memory)` on the wrapped cell's new output s_t."""
    rng = np.random.default_rng(6)
    weights = _opennmt_weights(rng, "mlp")
    _, memory, mask = _data(rng)
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(DIM),
        LuongAttention("concat", use_query_bias=True),
        attention_units=DIM,
        attention_activation=None,
        use_attention_bias=True,
    )
    inputs = rng.normal(size=(BATCH, 3)).astype("float32")
    cell.build(inputs.shape, memory.shape)
    attention = cell.attentions[0]
    _copy_score(attention, weights, "mlp")
    cell.attention_kernel.assign(_attention_kernel(weights))
    cell.attention_bias.assign(weights["linear_out.bias"])
    prepared = cell.prepare_memory(memory, mask)
    states = cell.get_initial_state(BATCH, prepared)
    # A cell state c to move s_t; tensors throughout (PyTorch does not mix in arrays).
    states[1] = ops.convert_to_tensor(rng.normal(size=(BATCH, DIM)).astype("float32"))
    output, new_states, align = cell.step(ops.convert_to_tensor(inputs), states, prepared)
    s_t = to_numpy(new_states[0])  # the LSTM's new h
    expected_h, expected_align = opennmt_global_attention(
        s_t, memory, weights, "mlp", src_len=LENGTHS
    )
    np.testing.assert_allclose(to_numpy(align), expected_align, **TOL)
    np.testing.assert_allclose(to_numpy(output), expected_h, **TOL)
    np.testing.assert_allclose(to_numpy(new_states[2]), expected_h, **TOL)  # fed to t + 1
    assert cell.attention_bias.path.endswith("attention_bias")


def test_options_round_trip_and_default_off():
    for layer in (
        AdditiveAttention(score_units=3, use_query_bias=True),
        LuongAttention("concat", use_query_bias=True, attention_units=4, use_attention_bias=True),
    ):
        config = layer.get_config()
        restored = type(layer).from_config(config)
        assert restored.get_config() == config
        restored([np.ones((2, 3, 4), "float32"), np.ones((2, 5, 4), "float32")])
        names = sorted(w.path.split("/")[-1] for w in restored.weights)
        assert "query_bias" in names
    # Defaults: no new weight, so older checkpoints and configs load as before.
    for layer in (AdditiveAttention(score_units=3), LuongAttention("concat", attention_units=4)):
        layer([np.ones((2, 3, 4), "float32"), np.ones((2, 5, 4), "float32")])
        names = [w.path.split("/")[-1] for w in layer.weights]
        assert "query_bias" not in names and "attention_bias" not in names
        config = layer.get_config()
        for key in ("use_query_bias", "use_attention_bias"):
            config.pop(key, None)
        assert type(layer).from_config(config).get_config() == layer.get_config()
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(4),
        [LuongAttention("general"), AdditiveAttention(score_units=3)],
        attention_units=[2, 3],
        use_attention_bias=True,
    )
    restored = LuongAttentionCell.from_config(cell.get_config())
    assert restored.use_attention_bias is True
    restored.build((2, 3), (2, 5, 4))
    names = [w.path.split("/")[-1] for w in restored.weights]
    assert "attention_bias_0" in names and "attention_bias_1" in names


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: LuongAttention("general", use_query_bias=True), r"score_mode='general'"),
        (lambda: LuongAttention("dot", use_attention_bias=True), r"attention_units=None"),
        (lambda: AdditiveAttention(use_query_bias="yes"), r"use_query_bias='yes'"),
        (
            lambda: LuongAttentionCell(
                keras.layers.LSTMCell(4),
                LuongAttention(),
                attention_layer=False,
                use_attention_bias=True,
            ),
            r"use_attention_bias=True, attention_layer=False",
        ),
    ],
)
def test_bad_options_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_attention_bias_keeps_the_cell_off_the_fused_path():
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(4), LuongAttention("general"), use_attention_bias=True
    )
    from keras_attention.cells._execution_plan import contract_refusal

    assert "use_attention_bias" in (contract_refusal(cell, training=False) or "")
    plain = LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention("general"))
    assert contract_refusal(plain, training=False) is None
