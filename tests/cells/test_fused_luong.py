"""The fused Luong input-feeding LSTM decoder (`cells._fused_luong`): when `AttentionRNN` takes
it, and that it computes what the stepped cell computes, forward and backward.

Its forward pass is also covered by the float64 NumPy reference tests of
`test_cells_reference.py` (their LSTM + global dot/general cases take this path on TensorFlow and
JAX). Here: the same outputs, weights, final states and gradients as the stepped loop
(`_allow_fused = False`, differentiated automatically), and the hand-written gradients against
finite differences in float64.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from keras_attention import AdditiveAttention, AttentionRNN, LuongAttention, LuongAttentionCell
from keras_attention.cells._fused_luong import fusable
from tests.backend_utils import BACKEND, enable_float64, to_numpy, value_and_grad, variable
from tests.cells.test_cells_reference import (
    FINITE_DIFFERENCES,
    FINITE_DIFFERENCES_FLOAT32_INSIDE,
    _compiled_loss,
)
from tests.conftest import randomize_weights

FUSED_BACKENDS = ("tensorflow", "jax")
needs_fused = pytest.mark.skipif(
    BACKEND not in FUSED_BACKENDS,
    reason="PyTorch always runs the stepped loop (Keras' PyTorch custom_gradient takes one output)",
)
B, T, S, D_Y, D_H, UNITS = 3, 5, 4, 7, 6, 6


def _rnn(score="general", activation="tanh", dtype=None, **cell_kwargs):
    attention = LuongAttention(score, dtype=dtype)
    size = 5 if score == "general" else None
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(UNITS, dtype=dtype),
        attention,
        attention_units=size,
        attention_activation=activation,
        dtype=dtype,
        **cell_kwargs,
    )
    return AttentionRNN(cell, return_attention_scores=True, return_state=True, dtype=dtype)


def _inputs(rng, dtype="float32"):
    y = rng.normal(size=(B, T, D_Y)).astype(dtype)
    memory = rng.normal(size=(B, S, D_H)).astype(dtype)
    memory_mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]], bool)  # one row empty
    step_mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 1, 1, 0]], bool)
    h0, c0 = (rng.normal(size=(B, UNITS)).astype(dtype) for _ in range(2))
    return y, memory, memory_mask, step_mask, h0, c0


# ------------------------------------------------------------------ when the path is taken
@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: _rnn(), True),
        (lambda: _rnn("dot", None), True),
        (lambda: _rnn(input_feeding=False), False),
        (lambda: _rnn(output_attention=False), False),
        (lambda: _rnn(activation="relu"), False),
        (lambda: _rnn("concat"), False),
        (
            lambda: AttentionRNN(
                LuongAttentionCell(
                    keras.layers.LSTMCell(UNITS), LuongAttention("general", use_scale=True)
                )
            ),
            False,
        ),
        (
            lambda: AttentionRNN(
                LuongAttentionCell(
                    keras.layers.LSTMCell(UNITS),
                    LuongAttention("general", "local_monotonic", window_radius=1),
                )
            ),
            False,
        ),
        (
            lambda: AttentionRNN(
                LuongAttentionCell(keras.layers.GRUCell(UNITS), LuongAttention("general"))
            ),
            False,
        ),
        (
            lambda: AttentionRNN(
                LuongAttentionCell(keras.layers.LSTMCell(UNITS), AdditiveAttention(score_units=3))
            ),
            False,
        ),
        (
            lambda: AttentionRNN(
                LuongAttentionCell(
                    keras.layers.LSTMCell(UNITS, recurrent_dropout=0.1), LuongAttention()
                )
            ),
            False,
        ),
        (
            lambda: AttentionRNN(
                LuongAttentionCell(keras.layers.LSTMCell(UNITS), LuongAttention()),
                return_sequences=False,
            ),
            False,
        ),
    ],
    ids=[
        "general",
        "dot-linear",
        "no-input-feeding",
        "output-s",
        "relu",
        "concat",
        "scale",
        "local",
        "gru",
        "additive",
        "recurrent-dropout",
        "last-step",
    ],
)
def test_which_models_take_the_fused_path(make, expected):
    rnn = make()
    rnn(np.ones((2, 3, 4), "float32"), np.ones((2, 5, UNITS), "float32"))
    assert fusable(rnn, rnn.cell, False, False) is (expected and BACKEND in FUSED_BACKENDS)
    rnn._allow_fused = False
    assert not fusable(rnn, rnn.cell, False, False)


def test_attention_dropout_in_training_and_mixed_precision_take_the_stepped_loop():
    rnn = AttentionRNN(LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention(dropout=0.2)))
    rnn(np.ones((2, 3, 4), "float32"), np.ones((2, 5, 4), "float32"))
    assert not fusable(rnn, rnn.cell, False, True)
    assert fusable(rnn, rnn.cell, False, False) is (BACKEND in FUSED_BACKENDS)
    mixed = _rnn(dtype="mixed_bfloat16")
    mixed(np.ones((2, 3, 4), "float32"), np.ones((2, 5, D_H), "float32"))
    assert not fusable(mixed, mixed.cell, False, False)


# ------------------------------------------------------------------ the same numbers
def _outputs_and_gradients(rnn, inputs, upstream, fused):
    """The five outputs and the gradients of Σ outputs · upstream with respect to the inputs
    (y, memory, h0, c0) and every weight, through the fused path or the stepped loop."""
    y, memory, memory_mask, step_mask, h0, c0 = inputs
    rnn._allow_fused = fused
    tensors = [variable(x, name=n) for x, n in zip((y, memory, h0, c0), "y m h c".split())]

    def run():
        y_, m_, h_, c_ = tensors
        return rnn(y_, m_, memory_mask=memory_mask, mask=step_mask, initial_state=[h_, c_])

    def loss_fn():
        return sum(ops.sum(ops.multiply(o, u)) for o, u in zip(run(), upstream))

    outputs = [to_numpy(o) for o in run()]
    _, grads = value_and_grad(loss_fn, tensors + list(rnn.trainable_weights))
    return outputs, grads


@needs_fused
@pytest.mark.parametrize("score, activation", [("general", "tanh"), ("dot", None)])
@pytest.mark.parametrize("masks", [True, False], ids=["masks", "no-masks"])
def test_fused_equals_the_stepped_loop(score, activation, masks):
    rng = np.random.default_rng(0)
    inputs = _inputs(rng)
    if not masks:
        inputs = inputs[:2] + (None, None) + inputs[4:]
    rnn = _rnn(score, activation)
    rnn(*inputs[:2])
    randomize_weights(rnn, rng)
    size = rnn.cell.output_size
    shapes = [(B, T, size), (B, T, S), (B, UNITS), (B, UNITS), (B, size)]
    upstream = [rng.normal(size=s).astype("float32") for s in shapes]
    want, want_grads = _outputs_and_gradients(rnn, inputs, upstream, fused=False)
    got, got_grads = _outputs_and_gradients(rnn, inputs, upstream, fused=True)
    for g, w in zip(got, want):  # float32 round-off, summed in another order over the steps
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert len(got_grads) == len(want_grads) == 4 + len(rnn.trainable_weights)
    for g, w in zip(got_grads, want_grads):
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * np.abs(w).max())
    if masks:  # padded memory and an empty memory row get no gradient, and no weight
        assert np.all(got_grads[1][1, 2:] == 0.0) and np.all(got_grads[1][2] == 0.0)
        assert np.all(got[1][2] == 0.0) and np.all(got[1][1, 3:] == 0.0)


@needs_fused
def test_fused_gradients_match_finite_differences_float64():
    with enable_float64():
        rng = np.random.default_rng(1)
        inputs = _inputs(rng, "float64")
        rnn = _rnn(dtype="float64")
        rnn(*inputs[:2])
        randomize_weights(rnn, rng)
        for w in rnn.weights:
            w.assign(to_numpy(w).astype(np.float64) + 1e-3 * rng.normal(size=w.shape))
        assert fusable(rnn, rnn.cell, False, True)
        y, memory, memory_mask, step_mask, h0, c0 = inputs
        tensors = [variable(x, name=n) for x, n in zip((y, memory, h0), "y m h".split())]
        shapes = [(B, T, 5), (B, T, S), (B, UNITS), (B, UNITS), (B, 5)]
        upstream = [rng.normal(size=s) for s in shapes]

        def loss_fn():
            outs = rnn(
                tensors[0], tensors[1], memory_mask=memory_mask, mask=step_mask,
                initial_state=[tensors[2], c0],
            )  # fmt: skip
            assert keras.backend.standardize_dtype(outs[0].dtype) == "float64"
            return sum(ops.sum(ops.multiply(o, u)) for o, u in zip(outs, upstream))

        variables = tensors + list(rnn.trainable_weights)
        _, grads = value_and_grad(loss_fn, variables)
        evaluate = _compiled_loss(loss_fn, tensors + list(rnn.weights))
        eps, rtol, atol = FINITE_DIFFERENCES.get(BACKEND, FINITE_DIFFERENCES_FLOAT32_INSIDE)
        for var, grad in zip(variables, grads):
            base = to_numpy(var)
            flat, grad = base.reshape(-1), grad.reshape(-1)
            for i in rng.choice(flat.size, size=min(flat.size, 4), replace=False):
                values = []
                for sign in (1, -1):
                    bumped = flat.copy()
                    bumped[i] += sign * eps
                    var.assign(bumped.reshape(base.shape))
                    values.append(evaluate())
                var.assign(base)
                numeric = (values[0] - values[1]) / (2 * eps)
                np.testing.assert_allclose(
                    grad[i], numeric, rtol=rtol, atol=atol, err_msg=f"{var.name}[{i}]"
                )


@needs_fused
def test_one_xla_train_step_equals_the_stepped_loop():
    """`fit` under `jit_compile=True`: the same loss and the same weights after one Adam step."""
    rng = np.random.default_rng(2)
    y, memory, memory_mask, step_mask, _, _ = _inputs(rng)
    targets = rng.integers(0, 5, size=(B, T))

    def model(fused):
        keras.utils.set_random_seed(0)
        y_in, m_in = keras.Input((T, D_Y)), keras.Input((S, D_H))
        m_mask, s_mask = keras.Input((S,), dtype="bool"), keras.Input((T,), dtype="bool")
        rnn = AttentionRNN(LuongAttentionCell(keras.layers.LSTMCell(UNITS), LuongAttention()))
        rnn._allow_fused = fused
        out = rnn(y_in, m_in, memory_mask=m_mask, mask=s_mask)
        logits = keras.layers.Dense(5)(out)
        m = keras.Model([y_in, m_in, m_mask, s_mask], logits)
        m.compile(  # SGD: an update linear in the gradient (Adam's first step is ~sign(g))
            keras.optimizers.SGD(0.5),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=True,
        )
        return m

    results = []
    for fused in (False, True):
        m = model(fused)
        loss = m.train_on_batch([y, memory, memory_mask, step_mask], targets)
        results.append((float(loss), [to_numpy(w) for w in m.weights]))
    (loss_a, weights_a), (loss_b, weights_b) = results
    np.testing.assert_allclose(loss_b, loss_a, rtol=1e-6)
    for a, b in zip(weights_a, weights_b):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ token ids in
def _ids_rnn(vocabulary):
    cell = _rnn().cell
    embedding = keras.layers.Embedding(vocabulary, D_Y, mask_zero=True)
    return AttentionRNN(
        cell, return_attention_scores=True, return_state=True, embedding=embedding, name="decoder"
    )


def _ids(rng, vocabulary):
    ids = rng.integers(1, vocabulary, size=(B, T)).astype("int32")
    ids[1, 3:] = 0  # padding: masked through the embedding's mask_zero
    ids[2, 1] = vocabulary + 2  # outside the table: a zero vector, the step kept
    ids[0, 2] = -1
    return ids


def _through_ids(rnn, ids, memory, memory_mask, h0, c0, upstream, as_ids):
    """Outputs and gradients (w.r.t. every weight, the table included) of the layer given the
    ids, or given the vectors `embed_ids` makes from them (the stepped loop: the reference)."""
    from keras_attention.cells.attention_rnn import embed_ids

    rnn._allow_fused = as_ids

    def run():
        if as_ids:
            return rnn(ids, memory, memory_mask=memory_mask, initial_state=[h0, c0])
        return rnn(
            embed_ids(rnn.embedding, ids), memory, memory_mask=memory_mask,
            mask=ids != 0, initial_state=[h0, c0],
        )  # fmt: skip

    def loss_fn():
        return sum(ops.sum(ops.multiply(o, u)) for o, u in zip(run(), upstream))

    outputs = [to_numpy(o) for o in run()]
    _, grads = value_and_grad(loss_fn, list(rnn.trainable_weights))
    return outputs, grads


@pytest.mark.parametrize(
    "vocabulary, folded",
    [(9, True), (40, False)],
    ids=["table-folded (V+1 <= B*T)", "looked-up (V+1 > B*T)"],
)
def test_token_ids_equal_embedding_first(vocabulary, folded, monkeypatch):
    """Ids in (the table folded into the LSTM's input kernel, or looked up first) give the
    stepped loop's outputs and gradients over the embedded ids, on every backend."""
    from keras_attention.cells import _fused_luong

    choices = []
    either = _fused_luong._either
    monkeypatch.setattr(
        _fused_luong, "_either", lambda p, a, b: choices.append(p) or either(p, a, b)
    )
    rng = np.random.default_rng(3)
    _, memory, memory_mask, _, h0, c0 = _inputs(rng)
    ids = _ids(rng, vocabulary)
    rnn = _ids_rnn(vocabulary)
    rnn(ids, memory)
    randomize_weights(rnn, rng)
    size = rnn.cell.output_size
    shapes = [(B, T, size), (B, T, S), (B, UNITS), (B, UNITS), (B, size)]
    upstream = [rng.normal(size=s).astype("float32") for s in shapes]
    want, want_grads = _through_ids(rnn, ids, memory, memory_mask, h0, c0, upstream, False)
    choices.clear()
    got, got_grads = _through_ids(rnn, ids, memory, memory_mask, h0, c0, upstream, True)
    if BACKEND in FUSED_BACKENDS:
        assert choices and all(c is folded for c in choices), choices
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert got[0][1, 3:].max() == got[0][1, 3:].min() == 0.0  # padded steps: zeros
    assert len(got_grads) == len(want_grads) == len(rnn.trainable_weights)
    for g, w in zip(got_grads, want_grads):
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5 * np.abs(w).max())
    table = got_grads[[w.path for w in rnn.trainable_weights].index(rnn.embedding.embeddings.path)]
    unused = np.setdiff1d(np.arange(vocabulary), ids)
    assert np.all(table[unused] == 0.0) and np.all(table[0] == 0.0)  # (id 0: padding only)


def test_token_ids_into_the_fused_decoder_skip_the_lookup(monkeypatch):
    """Ids going to the fused decoder are not embedded first (it reads the table itself; the
    lookup was dead work when run eagerly); the stepped loop still embeds them."""
    from keras_attention.cells import attention_rnn

    lookups = []
    embed = attention_rnn.embed_ids
    monkeypatch.setattr(
        attention_rnn, "embed_ids", lambda e, ids: lookups.append(ids.shape) or embed(e, ids)
    )
    rng = np.random.default_rng(5)
    _, memory, memory_mask, _, _, _ = _inputs(rng)
    ids = _ids(rng, 9)
    rnn = _ids_rnn(9)
    rnn(ids, memory, memory_mask=memory_mask)
    lookups.clear()
    got = to_numpy(rnn(ids, memory, memory_mask=memory_mask)[0])
    assert lookups == ([] if BACKEND in FUSED_BACKENDS else [(B, T)])
    rnn._allow_fused = False
    lookups.clear()
    want = to_numpy(rnn(ids, memory, memory_mask=memory_mask)[0])
    assert lookups == [(B, T)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@needs_fused
def test_token_ids_fold_decided_at_run_time_when_shapes_are_unknown():
    """A TensorFlow graph traced with unknown batch and length chooses fold or look-up with
    `ops.cond`; both give the eager result."""
    if BACKEND != "tensorflow":
        pytest.skip("JAX always traces static shapes")
    import tensorflow as tf

    rng = np.random.default_rng(4)
    _, memory, memory_mask, _, h0, c0 = _inputs(rng)
    vocabulary = 9
    rnn = _ids_rnn(vocabulary)
    rnn(_ids(rng, vocabulary), memory)
    randomize_weights(rnn, rng)
    spec = [
        tf.TensorSpec((None, None), "int32"),
        tf.TensorSpec((None, S, D_H), "float32"),
        tf.TensorSpec((None, S), "bool"),
    ]

    @tf.function(input_signature=spec)
    def traced(ids, memory, memory_mask):
        with tf.GradientTape() as tape:
            out = rnn(ids, memory, memory_mask=memory_mask)[0]
            loss = tf.reduce_sum(out * out)
        return out, tape.gradient(loss, rnn.embedding.embeddings.value)

    for batch, steps in ((B, T), (1, 2)):  # B·T = 15 >= V + 1 (fold); 2 < V + 1 (look up)
        ids = _ids(rng, vocabulary)[:batch, :steps]
        with tf.GradientTape() as tape:
            want = rnn(ids, memory[:batch], memory_mask=memory_mask[:batch])[0]
            loss = tf.reduce_sum(want * want)
        want_grad = tf.convert_to_tensor(tape.gradient(loss, rnn.embedding.embeddings.value))
        got, got_grad = traced(ids, memory[:batch], memory_mask[:batch])
        np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_numpy(got_grad), to_numpy(want_grad), rtol=1e-4, atol=1e-6)


def test_token_ids_table_gradient_is_dense_and_summed_on_tensorflow():
    """On TensorFlow the fused path hands the table one summed row per token (a dense tensor),
    where the embedding layer's own look-up gives `IndexedSlices` with one slice per read. Keras'
    Adam squares those slices one by one (a row read twice gets `g1**2 + g2**2` as its second
    moment), so the two forms take different Adam steps; the dense one is Adam's, and the one
    JAX and PyTorch take."""
    if BACKEND != "tensorflow":
        pytest.skip("the other backends' gradients are always dense")
    import tensorflow as tf

    rng = np.random.default_rng(6)
    _, memory, _, _, _, _ = _inputs(rng)
    vocabulary = 9
    ids = _ids(rng, vocabulary)
    ids = np.where(ids < vocabulary, np.abs(ids), 1)  # inside the table (and ids read twice)
    rnn = _ids_rnn(vocabulary)
    rnn(ids, memory)
    randomize_weights(rnn, rng)
    table = rnn.embedding.embeddings
    grads = {}
    for as_ids in (True, False):
        with tf.GradientTape() as tape:
            if as_ids:
                out = rnn(ids, memory)[0]
            else:
                out = rnn(rnn.embedding(ids), memory, mask=rnn.embedding.compute_mask(ids))[0]
            loss = tf.reduce_sum(out * out)
        grads[as_ids] = tape.gradient(loss, table.value)
    assert isinstance(grads[True], tf.Tensor), type(grads[True])
    assert isinstance(grads[False], tf.IndexedSlices), type(grads[False])
    summed = tf.convert_to_tensor(grads[False])
    np.testing.assert_allclose(grads[True], summed, rtol=1e-4, atol=1e-6)
    # One Adam step from zero moments moves every read row by lr * sign(g) (to eps): the
    # summed gradient's step, not the one of the slices taken one by one.
    start = np.asarray(table)
    keras.optimizers.Adam(0.01).apply([grads[True]], [table])
    read = np.unique(ids[ids > 0])
    assert len(read) < np.sum(ids > 0)  # some row is read more than once
    step = np.asarray(table)[read] - start[read]
    np.testing.assert_allclose(step, -0.01 * np.sign(to_numpy(summed)[read]), atol=1e-4)


@needs_fused
def test_one_xla_train_step_with_token_ids_equals_embedding_first():
    """`fit` under `jit_compile=True` of `AttentionRNN(embedding=...)` over ids: the same loss
    and weights after one step as the same model embedding first and stepping the cell."""
    rng = np.random.default_rng(5)
    _, memory, memory_mask, _, _, _ = _inputs(rng)
    ids = _ids(rng, 9)
    targets = rng.integers(0, 5, size=(B, T))

    def model(as_ids):
        keras.utils.set_random_seed(0)
        ids_in, m_in = keras.Input((T,), dtype="int32"), keras.Input((S, D_H))
        m_mask = keras.Input((S,), dtype="bool")
        embedding = keras.layers.Embedding(9, D_Y, mask_zero=True)
        cell = LuongAttentionCell(keras.layers.LSTMCell(UNITS), LuongAttention())
        if as_ids:
            out = AttentionRNN(cell, embedding=embedding)(ids_in, m_in, memory_mask=m_mask)
        else:
            rnn = AttentionRNN(cell)
            rnn._allow_fused = False
            out = rnn(embedding(ids_in), m_in, memory_mask=m_mask)
        m = keras.Model([ids_in, m_in, m_mask], keras.layers.Dense(5)(out))
        m.compile(
            keras.optimizers.SGD(0.5),
            keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=True,
        )
        return m

    ids = np.where((ids >= 0) & (ids < 9), ids, 3)  # (Keras' own Embedding: ids in range)
    results = []
    for as_ids in (False, True):
        m = model(as_ids)
        loss = m.train_on_batch([ids, memory, memory_mask], targets)
        weights = {w.path.split("/")[-1]: to_numpy(w) for w in m.weights}
        results.append((float(loss), weights))
    (loss_a, weights_a), (loss_b, weights_b) = results
    np.testing.assert_allclose(loss_b, loss_a, rtol=1e-6)
    assert sorted(weights_a) == sorted(weights_b)
    for name, a in weights_a.items():
        np.testing.assert_allclose(weights_b[name], a, rtol=1e-5, atol=1e-6, err_msg=name)


def test_token_ids_layer_serializes_with_its_embedding(tmp_path):
    rng = np.random.default_rng(6)
    _, memory, memory_mask, _, _, _ = _inputs(rng)
    ids = _ids(rng, 9)
    ids_in, m_in = keras.Input((T,), dtype="int32"), keras.Input((S, D_H))
    rnn = _ids_rnn(9)
    out = rnn(ids_in, m_in)
    model = keras.Model([ids_in, m_in], out[0])
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    layer = loaded.get_layer("decoder")
    assert isinstance(layer.embedding, keras.layers.Embedding) and layer.embedding.mask_zero
    np.testing.assert_allclose(
        to_numpy(loaded([ids, memory])), to_numpy(model([ids, memory])), rtol=1e-6, atol=1e-6
    )
    assert "embedding" not in _rnn().get_config()  # configs without one stay as they were


def test_token_ids_need_an_embedding():
    rnn = _rnn()
    rnn(np.ones((B, T, D_Y), "float32"), np.ones((B, S, D_H), "float32"))
    with pytest.raises(
        ValueError, match=r"integer `sequences` \(token ids\) without an `embedding`"
    ):
        rnn(np.ones((B, T), "int32"), np.ones((B, S, D_H), "float32"))
    with pytest.raises(TypeError, match="`embedding` must be None or a Keras layer.*embedding=3"):
        AttentionRNN(rnn.cell, embedding=3)
