"""Mixed precision (`mixed_float16`, `mixed_bfloat16`) for every layer, cell and `Seq2Seq`.

The promise, on the TensorFlow, JAX and PyTorch backends:

- variables stay float32; outputs, contexts, alignments and the weights returned by
  `return_attention_scores` are in the compute dtype (float16 / bfloat16), as
  `keras.layers.Attention` returns them;
- scores are formed in float32 (the operands of the score product are cast first, `use_scale`
  and the weight normalisation run in float32), and masking and the softmax run in float32:
  logits of ±1e4 (and beyond float16's 65504), masks and fully padded rows give no NaN/Inf;
- a short training run (fixed seed, small model) ends at the float32 loss within
  `TRAIN_RTOL` (`mixed_float16` through the `LossScaleOptimizer` that `compile` adds).

Accuracy is checked against the float64 NumPy reference (`tests/reference.py`) on inputs and
weights rounded to the compute dtype, as the layers see them.
"""

from __future__ import annotations

import keras
import ml_dtypes
import numpy as np
import pytest

from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttentionCell,
    LuongAttention,
    LuongAttentionCell,
)
from keras_attention.models import Seq2Seq
from tests import reference as ref
from tests.backend_utils import to_numpy, value_and_grad, variable
from tests.conftest import LAYER_CASES, LAYER_IDS, layer_weights, randomize_weights

POLICIES = ("mixed_float16", "mixed_bfloat16")
_NUMPY_DTYPE = {"mixed_float16": np.float16, "mixed_bfloat16": ml_dtypes.bfloat16}
# One rounding of the compute dtype (unit roundoff): 2^-11 for float16, 2^-8 for bfloat16.
_EPS = {"mixed_float16": 2.0**-11, "mixed_bfloat16": 2.0**-8}
# Against the float64 reference on rounded inputs, moderate scores (|e| of a few units). The
# remaining error is the rounding of projections, tanh and context inside the layer.
_WEIGHTS_ATOL = {"mixed_float16": 0.01, "mixed_bfloat16": 0.06}

# Relative gap |loss_mixed - loss_float32| / loss_float32 allowed at every step of a short
# training run (TRAIN_STEPS full-batch Adam(1e-2) steps from the same float32 weights). Measured
# over seeds 0-2 on CPU (table in `_train_gap`): largest gap 8.5e-4 (mixed_float16, one step of
# local_predictive on JAX; otherwise <= 1.4e-4) and 1.1e-3 (mixed_bfloat16). The tolerances leave
# a margin of >= 5x.
TRAIN_STEPS = 30
TRAIN_RTOL = {"mixed_float16": 5e-3, "mixed_bfloat16": 1e-2}

pytestmark = pytest.mark.parametrize("policy", POLICIES)


def _compute_dtype(policy: str) -> str:
    return keras.mixed_precision.Policy(policy).compute_dtype


def _rounded(x, policy: str) -> np.ndarray:
    """`x` rounded to the compute dtype, as float64 (what the layer computes with)."""
    return np.asarray(x, np.float32).astype(_NUMPY_DTYPE[policy]).astype(np.float64)


def _f64(x) -> np.ndarray:
    return np.asarray(to_numpy(x)).astype(np.float64)


def _dtype(x) -> str:
    return keras.backend.standardize_dtype(x.dtype)


def _batch(rng, batch=4, steps=3, memory=7, dim=5, garbage=50.0):
    """Query, memory and mask: one full row, a partial row, a row of padding only."""
    query = rng.normal(size=(batch, steps, dim)).astype("float32")
    value = rng.normal(size=(batch, memory, dim)).astype("float32")
    lengths = rng.integers(1, memory + 1, size=batch)
    lengths[0], lengths[1], lengths[-1] = memory, 3, 0
    mask = np.arange(memory)[None, :] < lengths[:, None]
    value[~mask] = garbage * rng.normal(size=value[~mask].shape)
    return query, value, mask


def _layer(case, policy):
    _, cls, kwargs, _ = case
    return cls(**kwargs, dtype=policy)


def _reference(case, weights, query, value, mask):
    return ref.attention(query, value, value_mask=mask, weights=weights, **case[3])


def _check_padding(weights, output, mask):
    """Padding gets exactly zero weight; a row of padding only, zero weights and context."""
    assert np.all(np.isfinite(weights)) and np.all(np.isfinite(output))
    assert np.all(weights >= 0.0)
    assert np.all(np.where(mask[:, None, :], 0.0, weights) == 0.0)
    empty = ~mask.any(-1)
    assert np.all(weights[empty] == 0.0) and np.all(output[empty] == 0.0)


# ----------------------------------------------------------------------------- layers
@pytest.mark.parametrize("case", LAYER_CASES, ids=LAYER_IDS)
def test_layer_dtypes_and_reference(case, policy):
    rng = np.random.default_rng(1)
    query, value, mask = _batch(rng)
    layer = _layer(case, policy)
    layer(query, value, value_mask=mask)
    randomize_weights(layer, rng)
    assert all(_dtype(w) == "float32" for w in layer.weights)
    out, weights = layer(query, value, value_mask=mask, return_attention_scores=True)
    compute = _compute_dtype(policy)
    assert _dtype(out) == compute and _dtype(weights) == compute
    out, weights = _f64(out), _f64(weights)
    _check_padding(weights, out, mask)

    rounded = {k: _rounded(w, policy) for k, w in layer_weights(layer).items()}
    ref_out, ref_weights = _reference(
        case, rounded, _rounded(query, policy), _rounded(value, policy), mask
    )
    atol = _WEIGHTS_ATOL[policy]
    np.testing.assert_allclose(weights, ref_weights, rtol=0, atol=atol)
    np.testing.assert_array_less(np.abs(out - ref_out), atol * (1.0 + np.abs(ref_out)))


@pytest.mark.parametrize("attention_units", [None, 4])
def test_single_step_pooling_and_attentional_output_dtypes(policy, attention_units):
    rng = np.random.default_rng(2)
    query, value, mask = _batch(rng)
    layer = LuongAttention("general", attention_units=attention_units, dtype=policy)
    compute = _compute_dtype(policy)
    for args in ((query, value), (query[:, 0], value), (value,)):
        kwargs = {"value_mask": mask} if len(args) == 2 else {"mask": mask}
        out, weights = layer(*args, **kwargs, return_attention_scores=True)
        assert _dtype(out) == compute and _dtype(weights) == compute
        assert np.all(np.isfinite(_f64(out))) and np.all(np.isfinite(_f64(weights)))
    assert all(_dtype(w) == "float32" for w in layer.weights)


def _scale_scores_to(case, layer, query, value, mask, target):
    """Rescale the inputs or the linear score weight so the largest valid |score| is `target`.

    dot / general scores are bilinear in (query, memory): both are scaled by sqrt(factor).
    concat / additive scores are linear in `v` (`g` when weight-normalised): that is scaled.
    """
    mode = case[3]["mode"]
    options = {k: case[3][k] for k in ("normalize", "use_scale") if k in case[3]}
    weights = layer_weights(layer)
    scores = ref.scores(query, value, mode, weights, **options)
    factor = target / np.abs(np.where(mask[:, None, :], scores, 0.0)).max()
    if mode in ("dot", "general"):
        root = np.float32(np.sqrt(factor))
        return query * root, value * root
    name = "norm_scale" if options.get("normalize") else "score_vector"
    weight = next(w for w in layer.weights if w.name == name)
    weight.assign((weight.numpy() * factor).astype("float32"))
    return query, value


def _well_conditioned_rows(case, policy, weights, query, value, mask, rng):
    """Rows whose float64 reference weights move by < 0.01 when every input and weight moves
    by two roundings of the compute dtype: near-ties at |e| ~ 1e4 are left to the invariants."""
    _, expected = _reference(case, weights, query, value, mask)
    stable = np.ones(expected.shape[:2], bool)
    for _ in range(3):

        def jitter(x):
            return x * (1.0 + 2 * _EPS[policy] * rng.uniform(-1, 1, size=np.shape(x)))

        moved = {k: jitter(w) for k, w in weights.items()}
        _, other = _reference(case, moved, jitter(query), jitter(value), mask)
        stable &= np.abs(other - expected).max(-1) < 0.01
    return expected, stable


@pytest.mark.parametrize("case", LAYER_CASES, ids=LAYER_IDS)
def test_logits_of_1e4_with_masks_are_finite(case, policy):
    rng = np.random.default_rng(3)
    query, value, mask = _batch(rng, garbage=5.0)
    layer = _layer(case, policy)
    layer(query, value, value_mask=mask)
    randomize_weights(layer, rng)
    query, value = _scale_scores_to(case, layer, query, value, mask, target=1e4)

    out, weights = layer(query, value, value_mask=mask, return_attention_scores=True)
    out, weights = _f64(out), _f64(weights)
    _check_padding(weights, out, mask)
    totals = weights.sum(-1)[mask.any(-1)]
    assert np.all(totals <= 1.0 + 1e-2)
    if case[3].get("alignment", "global") != "local_predictive":
        np.testing.assert_allclose(totals, 1.0, atol=1e-2)

    rounded = {k: _rounded(w, policy) for k, w in layer_weights(layer).items()}
    q, v = _rounded(query, policy), _rounded(value, policy)
    scores = ref.scores(q, v, case[3]["mode"], rounded, **{
        k: case[3][k] for k in ("normalize", "use_scale") if k in case[3]})  # fmt: skip
    assert np.abs(np.where(mask[:, None, :], scores, 0.0)).max() > 0.9e4
    expected, stable = _well_conditioned_rows(case, policy, rounded, q, v, mask, rng)
    assert stable.mean() >= 0.5, "too few well-conditioned rows: the check would be vacuous"
    np.testing.assert_allclose(weights[stable], expected[stable], rtol=0, atol=0.02)

    projection = keras.ops.convert_to_tensor(rng.normal(size=out.shape), "float32")
    inputs = [variable(query, name="query"), variable(value, name="value")]

    def loss():
        o, w = layer(*inputs, value_mask=mask, return_attention_scores=True)
        o, w = keras.ops.cast(o, "float32"), keras.ops.cast(w, "float32")
        return keras.ops.sum(o * projection) + keras.ops.sum(w * w)

    variables = inputs + list(layer.trainable_weights)
    _, grads = value_and_grad(loss, variables)
    for var, grad in zip(variables, grads):
        assert grad is not None and np.all(np.isfinite(grad)), var.name


def test_scores_beyond_float16_range(policy):
    """Products of ±9e4 that cancel, and `scale` × 1e4 = 8e4: both past float16's 65504."""
    query = np.array([[[300.0, 300.0, 1.0, 0.0]]], "float32")
    # Values exact in float16 and bfloat16: 300, 8192, 8128.
    value = np.array(
        [[[300.0, -300.0, 0.0, 0.0], [0.0, 0.0, 8192.0, 0.0], [0.0, 0.0, 8128.0, 0.0],
          [0.0, 0.0, 0.0, 3e4]]], "float32",
    )  # fmt: skip
    mask = np.array([[True, True, True, False]])
    layer = LuongAttention("dot", use_scale=True, dtype=policy)
    layer(query, value, value_mask=mask)
    layer.scale.assign(8.0)
    out, weights = layer(query, value, value_mask=mask, return_attention_scores=True)
    # Scores 0, 65536, 65024 (and a masked 0): all weight on position 1.
    np.testing.assert_array_equal(_f64(weights), [[[0.0, 1.0, 0.0, 0.0]]])
    np.testing.assert_array_equal(_f64(out), value[:, 1:2])

    layer = LuongAttention("dot", dtype=policy)
    small = np.array([[[300.0, 300.0, 1.0, 0.0]]], "float32")
    memory = np.array([[[300.0, -300.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]]], "float32")
    weights = _f64(layer(small, memory, return_attention_scores=True)[1])
    np.testing.assert_allclose(weights, [[[1 / (1 + np.e**2), 1 / (1 + np.e**-2)]]], atol=4e-3)


@pytest.mark.parametrize("norm", [1e3, 1e-5])
def test_weight_normalisation_of_large_and_tiny_vectors(policy, norm):
    """‖v‖² overflows float16 past ‖v‖ = 256 and underflows for tiny v: it is taken in float32."""
    rng = np.random.default_rng(4)
    query, value, mask = _batch(rng)
    layer = AdditiveAttention(score_units=6, normalize=True, dtype=policy)
    layer(query, value, value_mask=mask)
    randomize_weights(layer, rng)
    direction = rng.normal(size=6)
    layer.score_vector.assign((norm * direction / np.linalg.norm(direction)).astype("float32"))
    out, weights = layer(query, value, value_mask=mask, return_attention_scores=True)
    out, weights = _f64(out), _f64(weights)
    _check_padding(weights, out, mask)
    rounded = {k: _rounded(w, policy) for k, w in layer_weights(layer).items()}
    _, expected = ref.attention(
        _rounded(query, policy), _rounded(value, policy), mode="additive", normalize=True,
        weights=rounded, value_mask=mask,
    )  # fmt: skip
    np.testing.assert_allclose(weights, expected, rtol=0, atol=_WEIGHTS_ATOL[policy])


# ----------------------------------------------------------------------------- cells
_VOCAB, _DIM, _UNITS = 13, 8, 8


def _luong_lstm():
    return LuongAttentionCell(keras.layers.LSTMCell(_UNITS), LuongAttention("general"))


def _luong_gru_dot_local_m():
    return LuongAttentionCell(
        keras.layers.GRUCell(_UNITS),
        LuongAttention("dot", "local_monotonic", window_radius=2, use_scale=True),
        input_feeding=False,
    )


def _luong_lstm_concat_local_p():
    return LuongAttentionCell(
        keras.layers.LSTMCell(_UNITS),
        LuongAttention("concat", "local_predictive", window_radius=2),
        attention_units=6,
    )


def _bahdanau_gru():
    return BahdanauAttentionCell(
        keras.layers.GRUCell(_UNITS),
        AdditiveAttention(score_units=6, normalize=True, use_scale=True),
    )


CELLS = [_luong_lstm, _luong_gru_dot_local_m, _luong_lstm_concat_local_p, _bahdanau_gru]
CELL_IDS = [f.__name__.strip("_") for f in CELLS]
# Eager AttentionRNN runs take 10-30 s each on JAX (CPU): one cell runs in the fast suite.
CELL_PARAMS = [
    pytest.param(f, id=i, marks=() if f is _bahdanau_gru else pytest.mark.slow)
    for f, i in zip(CELLS, CELL_IDS)
]


def _rnn_model(make_cell, float_memory=False):
    """Embedded targets → AttentionRNN over an (embedded or given) memory → Dense logits."""
    tgt = keras.Input((None,), dtype="int32", name="target")
    if float_memory:
        src = keras.Input((None, _DIM), name="memory")
        mask = keras.Input((None,), dtype="bool", name="memory_mask")
        memory, inputs = src, {"target": tgt, "memory": src, "memory_mask": mask}
    else:
        src = keras.Input((None,), dtype="int32", name="source")
        memory = keras.layers.Embedding(_VOCAB, _DIM, mask_zero=True)(src)
        mask, inputs = None, {"target": tgt, "source": src}
    rnn = AttentionRNN(make_cell(), return_attention_scores=True, name="decoder")
    outputs, alignments = rnn(
        keras.layers.Embedding(_VOCAB, _DIM, mask_zero=True)(tgt), memory, memory_mask=mask
    )
    logits = keras.layers.Dense(_VOCAB, name="logits")(outputs)
    return keras.Model(inputs, {"logits": logits, "alignments": alignments})


def _tokens(rng, batch, length, empty_row=False):
    """Right-padded token ids (0 = padding); row 0 full, and optionally a last row of padding."""
    tokens = rng.integers(1, _VOCAB, size=(batch, length))
    lengths = rng.integers(1, length + 1, size=batch)
    lengths[0] = length
    if empty_row:
        lengths[-1] = 0
    tokens[np.arange(length)[None, :] >= lengths[:, None]] = 0
    return tokens.astype("int32")


def _rnn_data(seed, batch=5):
    rng = np.random.default_rng(seed)
    return {"target": _tokens(rng, batch, 6), "source": _tokens(rng, batch, 8, empty_row=True)}


@pytest.mark.parametrize("make_cell", CELL_PARAMS)
def test_attention_rnn_dtypes_and_float32_match(make_cell, policy):
    keras.utils.set_random_seed(0)
    data = _rnn_data(5)
    reference = _rnn_model(make_cell)
    expected = reference.predict(data, verbose=0)
    keras.config.set_dtype_policy(policy)
    model = _rnn_model(make_cell)
    model.set_weights(reference.get_weights())
    assert all(_dtype(w) == "float32" for w in model.weights)
    out = model(data)
    compute = _compute_dtype(policy)
    assert _dtype(out["alignments"]) == compute
    assert _dtype(out["logits"]) == compute  # Dense under the policy; the loss casts to float32
    alignments, logits = _f64(out["alignments"]), _f64(out["logits"])
    assert np.all(np.isfinite(alignments)) and np.all(np.isfinite(logits))
    assert np.all(alignments[-1] == 0.0)  # the row whose memory is all padding
    atol = 3 * _WEIGHTS_ATOL[policy]  # errors compound over the recurrent steps
    np.testing.assert_allclose(alignments, expected["alignments"], rtol=0, atol=atol)
    np.testing.assert_allclose(logits, expected["logits"], rtol=0, atol=atol * 5)


@pytest.mark.parametrize("make_cell", CELL_PARAMS)
def test_attention_rnn_logits_of_1e4(make_cell, policy):
    """A memory of ±2e3 (and large score weights) drives the scores of every step to ~1e4."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(6)
    keras.config.set_dtype_policy(policy)
    model = _rnn_model(make_cell, float_memory=True)
    attention = model.get_layer("decoder").cell.attention
    data = {"target": _tokens(rng, 4, 5), "memory": 2e3 * rng.normal(size=(4, 7, _DIM))}
    data["memory_mask"] = np.arange(7)[None, :] < np.array([[7], [3], [5], [0]])
    data["memory"] = data["memory"].astype("float32")
    model(data)  # build
    for w in attention.weights:
        if w.name in ("score_vector", "norm_scale"):
            w.assign((w.numpy() * 2e3).astype("float32"))
    out = model(data)
    alignments, logits = _f64(out["alignments"]), _f64(out["logits"])
    assert np.all(np.isfinite(alignments)) and np.all(np.isfinite(logits))
    assert np.all(np.where(data["memory_mask"][:, None, :], 0.0, alignments) == 0.0)
    assert np.all(alignments[-1] == 0.0)

    labels = rng.integers(0, _VOCAB, size=data["target"].shape)

    def loss():
        logits = keras.ops.cast(model(data)["logits"], "float32")
        return keras.ops.mean(
            keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        )

    value, grads = value_and_grad(loss, model.trainable_weights)
    assert np.isfinite(value)
    for weight, grad in zip(model.trainable_weights, grads):
        assert grad is None or np.all(np.isfinite(grad)), weight.path


# ----------------------------------------------------------------------------- training
def _layer_model(case):
    """Embedded memory (mask_zero) and a float query → attention → Dense logits per query."""
    _, cls, kwargs, _ = case
    src = keras.Input((None,), dtype="int32", name="source")
    query = keras.Input((None, _DIM), name="query")
    memory = keras.layers.Embedding(_VOCAB, _DIM, mask_zero=True)(src)
    context = cls(**kwargs, name="attention")([query, memory])
    logits = keras.layers.Dense(_VOCAB, name="logits")(context)
    return keras.Model({"source": src, "query": query}, logits)


def _layer_data(seed, batch=16):
    rng = np.random.default_rng(seed)
    x = {
        "source": _tokens(rng, batch, 8),
        "query": rng.normal(size=(batch, 4, _DIM)).astype("float32"),
    }
    return x, rng.integers(0, _VOCAB, size=(batch, 4)).astype("int32")


def _rnn_train_data(seed, batch=16):
    rng = np.random.default_rng(seed)
    x = {"target": _tokens(rng, batch, 6), "source": _tokens(rng, batch, 8)}
    return x, {"logits": rng.integers(0, _VOCAB, size=(batch, 6)).astype("int32")}


def _seq2seq(attention):
    return Seq2Seq(_VOCAB, _VOCAB, embedding_dim=8, units=8, attention=attention)


def _seq2seq_data(seed, batch=16):
    rng = np.random.default_rng(seed)
    target = _tokens(rng, batch, 6)
    x = {"source_ids": _tokens(rng, batch, 8), "target_ids": target}
    labels = np.concatenate([target[:, 1:], np.zeros((batch, 1), "int32")], axis=1)
    return x, labels


class _SummedAdam(keras.optimizers.Adam):
    """Adam on each gradient summed to a dense tensor first.

    TensorFlow gives an embedding table a sparse gradient (`IndexedSlices`, one slice per
    looked-up id, repeats included) and Keras' Adam squares those slices one by one, so its
    second moment of a row read twice is `g1**2 + g2**2`, not `(g1 + g2)**2`. The fused Luong
    decoder's folded table (float32 only) hands its gradient over summed, as JAX and PyTorch
    always do. Summing here makes both runs take the same optimizer step, so that the gap
    measures precision, not the gradient's form.
    """

    def apply(self, grads, trainable_variables=None):
        if keras.backend.backend() == "tensorflow":  # the only backend with sparse gradients
            import tensorflow as tf

            grads = [None if g is None else tf.convert_to_tensor(g) for g in grads]
        return super().apply(grads, trainable_variables)


def _train(build, data, policy, seed):
    """Loss of every step of TRAIN_STEPS full-batch Adam steps, from weights made in float32."""
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(seed)
    x, y = data
    initial = build()
    initial(x)
    keras.config.set_dtype_policy(policy)
    model = build()
    model(x)
    model.set_weights(initial.get_weights())
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if isinstance(y, dict):
        loss = {name: loss for name in y}
    model.compile(_SummedAdam(1e-2, name="summed_adam"), loss=loss)
    if policy == "mixed_float16":  # compile adds the loss scaling on every backend
        assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    history = model.fit(x, y, batch_size=len(x[next(iter(x))]), epochs=TRAIN_STEPS, verbose=0)
    keras.config.set_dtype_policy("float32")
    return np.asarray(history.history["loss"])


_FLOAT32_LOSSES: dict = {}


def _train_gap(name, build, data, policy, seed=0):
    """Largest relative gap between the mixed and float32 loss curves.

    Measured gaps, max over seeds 0-2, 30 steps, on CPU (TensorFlow 2.21, JAX 0.10, torch
    2.13, Keras 3.15; the seq2seq-luong rows of TensorFlow and JAX remeasured with the folded
    embedding table and `_SummedAdam`):

    | model                         | backend    | mixed_float16 | mixed_bfloat16 |
    | ----------------------------- | ---------- | ------------- | -------------- |
    | luong-concat-local_predictive | tensorflow | 2e-5          | 3.1e-4         |
    | additive-normalize-scale      | tensorflow | 2e-5          | 1.9e-4         |
    | bahdanau_gru (AttentionRNN)   | tensorflow | 6e-5          | 7.2e-4         |
    | seq2seq-luong                 | tensorflow | 4e-5          | 7.6e-4         |
    | luong-concat-local_predictive | jax        | 8.5e-4        | 9.0e-4         |
    | additive-normalize-scale      | jax        | 2e-5          | 1.5e-4         |
    | bahdanau_gru (AttentionRNN)   | jax        | 9e-5          | 7.2e-4         |
    | seq2seq-luong                 | jax        | 6e-5          | 8.3e-4         |
    | luong-concat-local_predictive | torch      | 1.4e-4        | 1.7e-4         |
    | additive-normalize-scale      | torch      | 2e-5          | 2.4e-4         |
    | bahdanau_gru (AttentionRNN)   | torch      | 7e-5          | 5.6e-4         |
    | seq2seq-luong                 | torch      | 8e-5          | 1.1e-3         |
    """
    key = (name, seed)
    if key not in _FLOAT32_LOSSES:
        _FLOAT32_LOSSES[key] = _train(build, data, "float32", seed)
    expected = _FLOAT32_LOSSES[key]
    losses = _train(build, data, policy, seed)
    assert np.all(np.isfinite(losses))
    assert expected[-1] < 0.9 * expected[0], "the float32 run must learn for the test to mean much"
    return float(np.max(np.abs(losses - expected) / expected))


# One case per score family (the forward tests above cover every mode and alignment).
TRAIN_LAYER_IDS = (
    "luong-general-global",
    "luong-concat-local_predictive",
    "additive-normalize-scale",
)
TRAIN_LAYER_CASES = [case for case in LAYER_CASES if case[0] in TRAIN_LAYER_IDS]
TRAIN_CELLS = [_luong_lstm, _bahdanau_gru]


@pytest.mark.slow
@pytest.mark.parametrize("case", TRAIN_LAYER_CASES, ids=TRAIN_LAYER_IDS)
def test_layer_training_matches_float32(case, policy):
    gap = _train_gap(case[0], lambda: _layer_model(case), _layer_data(0), policy)
    assert gap <= TRAIN_RTOL[policy], gap


@pytest.mark.slow
@pytest.mark.parametrize("make_cell", TRAIN_CELLS, ids=["luong_lstm", "bahdanau_gru"])
def test_attention_rnn_training_matches_float32(make_cell, policy):
    build = lambda: _rnn_model(make_cell)  # noqa: E731
    gap = _train_gap(make_cell.__name__, build, _rnn_train_data(0), policy)
    assert gap <= TRAIN_RTOL[policy], gap


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["luong", "bahdanau"])
def test_seq2seq_training_matches_float32(attention, policy):
    gap = _train_gap(f"seq2seq-{attention}", lambda: _seq2seq(attention), _seq2seq_data(0), policy)
    assert gap <= TRAIN_RTOL[policy], gap
