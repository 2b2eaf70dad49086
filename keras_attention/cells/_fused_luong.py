"""A Luong input-feeding LSTM decoder over a whole sequence, with a hand-written backward pass.

`AttentionRNN` runs this instead of stepping the cell when the model is the common one: a plain
`LSTMCell` (tanh, sigmoid), one global `LuongAttention` with a dot or general score and a
softmax, input feeding, `W_c` with tanh or no activation, on TensorFlow or JAX. Which models
those are is declared once, over the components' full configs, in `cells/_execution_plan.py`
(`CONTRACTS`): an option the contract does not declare, or a value it does not support, sends
the model to the stepped loop.

Why: differentiated automatically, a time loop accumulates every weight's gradient inside the
backward loop, one `[B]`-row outer product per step and weight (`dU += hᵀ dz`, `dW_c += …`,
`dK_b += …`), each a thin matmul that reads and writes the whole weight gradient at every step.
Here the backward loop computes only what is sequential (the gradients of the states) and writes
each step's pre-activation gradients out; the weight gradients are then one large matmul each
over all `T·B` rows, after the loop, as cuDNN does for its RNNs. The forward pass keeps what the
backward pass cannot cheaply recompute (`z`, the new states, the weights `α`); the gates are
recomputed from `z`.

One step, with `x_t = y_t W_y + b` (for all steps at once, before the loop), `f` the fed vector
h̃_{t-1}, `[W_y; F]` the LSTM kernel (the rows of `y`, then of `f`), `U` its recurrent kernel,
`W_c = [W_h; W_v]` (the rows of `s`, then of the context), `K` the keys `[B, d, S]` (`h W_g`
for "general"), `V` the values `[B, S, d_h]` and `P = V W_v` `[B, S, a]` (once per sequence):

    z = x_t + [h; f] [U; F];  i, j, g, o = split(z)
    c' = σ(j) c + σ(i) tanh(g);  h' = σ(o) tanh(c')
    α = softmax over the valid positions of h' K
    f' = act(h' W_h + α P)        (= act([h'; α V] W_c): the output and the next fed vector)

The context `α V` itself is never formed: `α P` costs `S·a` per row where `(α V) W_v` costs
`S·d_h + d_h·a`. The backward step, from the gradients `dh, dc, df` of the states the step
produced, `dout` of its output and `dα` of its weights:

    da = (dout + df) ⊙ act'(·)
    dα += da Pᵀ;  ds = α ⊙ (dα - Σ α dα);  dh' = dh + da W_hᵀ + ds Kᵀ
    do = dh' ⊙ tanh(c') ⊙ σ'(o);  dc' = dc + dh' ⊙ σ(o) ⊙ tanh'(c')
    di, dj, dg = dc' ⊙ tanh(g) ⊙ σ'(i), dc' ⊙ c ⊙ σ'(j), dc' ⊙ σ(i) ⊙ tanh'(g)
    dz = [di; dj; dg; do];  [dh_prev; df_prev] = dz [U; F]ᵀ;  dc_prev = dc' ⊙ σ(j)

then, after the loop (sums over steps and rows): `dy = dz W_yᵀ`, `db = Σ dz`,
`d[W_y; F] = Σ [y; f]ᵀ dz`, `dU = Σ hᵀ dz`, `dW_h = Σ h'ᵀ da`, `dP_b = Σ_t α_tᵀ da_t`,
`dW_v = Σ Vᵀ dP`, `dV = dP W_vᵀ`, `dK_b = Σ_t h'_tᵀ ds_t`. Padded decoder steps (`step_valid`
false) keep the state and output zeros, so their backward step passes the state gradients
through unchanged.

Given token ids and their embedding table `E` `[V, d_y]` instead of `y`, and when `V + 1 <= T·B`
(the extra row: the zero vector that ids outside the table read), the `y` rows of the kernel are
folded into the table: `x_t = (E W_y)[id_t] + b`, one `[V + 1, d_y] × [d_y, 4 d]` product
instead of a `[T·B, d_y]` one; after the loop `D = Σ_{(t, b): id = v} dz` (a segment sum per
token), `dW_y = Eᵀ D` and `dE = D W_yᵀ` replace `Σ yᵀ dz`, `dy = dz W_yᵀ` and the embedding's
scatter of `dy`. Three `T·B`-row products become three `V`-row ones.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_attention.functional.loops import time_loop
from keras_attention.functional.scores import matmul
from keras_attention.functional.softmax import mask_value


def fusable(rnn, cell, sampled, training) -> bool:
    """Whether `AttentionRNN.call` may run `luong_lstm_sequence` for this cell and call:
    `cells._execution_plan.fused_refusal` finds nothing against it, and the layer's
    `implementation` is not "stepped"."""
    from keras_attention.cells._execution_plan import fused_refusal

    if rnn.implementation == "stepped":
        return False
    return fused_refusal(rnn, cell, sampled, training) is None


def luong_lstm_sequence(
    sequences,
    states,
    kernel,
    recurrent_kernel,
    bias,
    attention_kernel,
    keys,
    value,
    memory_mask,
    step_mask,
    tanh_output: bool,
    embeddings=None,
):
    """Run the decoder over all steps; differentiable (custom gradient) on TensorFlow and JAX.

    Args:
        sequences: `[T, B, d_y]`, the decoder inputs (time first); with `embeddings`, the
            token ids `[T, B]` (integers) whose embeddings they are.
        states: `[h, c, f]`, `[B, d]`, `[B, d]`, `[B, a]`.
        kernel: The LSTM kernel `[W_y; F]`, `[d_y + a, 4 d]` (the rows of `y`, then those of
            the fed vector).
        recurrent_kernel: `U`, `[d, 4 d]`.
        bias: `[4 d]`.
        attention_kernel: `W_c = [W_h; W_v]`, `[d + d_h, a]`.
        keys: `[B, d, S]` (transposed).
        value: `[B, S, d_h]`, zero on padding.
        memory_mask: Boolean `[B, S]` or `None`.
        step_mask: Boolean `[T, B]` or `None`.
        tanh_output: Whether `f' = tanh([h'; ctx] W_c)` (else no activation).
        embeddings: `None`, or the embedding table `[V, d_y]` that `sequences` index (an id
            outside `[0, V)` reads as a zero vector). When `V + 1 <= T·B`, the LSTM kernel's
            `y` rows are folded into the table, `x_t = (E W_y)[id] + b`: one `[V + 1, d_y] ×
            [d_y, 4 d]` product instead of `T·B` rows, and the same saving in the backward
            pass (`d(E W_y)` is the per-token sum of `dz`). Otherwise the ids are looked up
            first. The table gets its gradient either way.

    Returns:
        `(outputs [T, B, a], weights [T, B, S], [h, c, f] final)`.
    """
    dtype = value.dtype
    batch, length = ops.shape(value)[0], ops.shape(value)[1]
    memory_valid = (
        ops.ones((batch, length), dtype) if memory_mask is None else ops.cast(memory_mask, dtype)
    )
    steps = ops.shape(sequences)[0]
    step_valid = (
        ops.ones((steps, batch), dtype) if step_mask is None else ops.cast(step_mask, dtype)
    )
    masked = step_mask is not None
    weights_in = (kernel, recurrent_kernel, bias, attention_kernel)
    args = (sequences, *states, *weights_in, keys, value, memory_valid, step_valid)
    if embeddings is None:
        run = keras.ops.custom_gradient(
            lambda *args: _forward(*args, tanh_output=tanh_output, masked=masked)
        )
    else:
        # The ids travel as floats (exact below 2**24, which `AttentionRNN` checks): a
        # custom gradient's inputs all get a cotangent, which JAX refuses for integers.
        vocabulary = embeddings.shape[0]
        ids = ops.convert_to_tensor(sequences)
        valid = ops.logical_and(ops.greater_equal(ids, 0), ops.less(ids, vocabulary))
        ids = ops.cast(ops.where(valid, ids, vocabulary), dtype)  # V: the zero row
        run = keras.ops.custom_gradient(
            lambda table, *args: _forward_ids(table, *args, tanh_output=tanh_output, masked=masked)
        )
        args = (embeddings, ids, *args[1:])
    outputs, weights, h, c, f = run(*(_tensor(x) for x in args))
    return outputs, weights, [h, c, f]


def _forward_ids(embeddings, ids, *args, tanh_output, masked):
    """`_forward` over token ids into `embeddings` (see `luong_lstm_sequence`)."""
    dtype = keras.backend.standardize_dtype(embeddings.dtype)
    rows = embeddings.shape[-1]
    table = ops.concatenate([embeddings, ops.zeros((1, rows), dtype)], axis=0)  # [V + 1, d_y]
    ids = ops.cast(ids, "int32")
    W = args[3]
    W_y = W[:rows]
    steps, batch = ops.shape(ids)[0], ops.shape(ids)[1]
    entries = table.shape[0]
    if isinstance(steps, int) and isinstance(batch, int):
        fold = entries <= steps * batch
    else:
        fold = ops.less_equal(entries, steps * batch)

    def folded_inputs():
        return ops.take(matmul(table, W_y), ids, axis=0)  # [T, B, 4 d]

    def looked_up_inputs():
        return matmul(ops.take(table, ids, axis=0), W_y)

    projected = _either(fold, folded_inputs, looked_up_inputs)
    result, grad = _forward(
        projected, *args, tanh_output=tanh_output, masked=masked, projected=True
    )

    def grad_ids(*upstream):
        d_projected, *rest = grad(*upstream)  # d_projected: dz [T, B, 4 d]; rest[3]: dF
        dz_rows = ops.reshape(d_projected, (-1, d_projected.shape[-1]))
        id_rows = ops.reshape(ids, (-1,))

        def folded_grads():  # d(E W_y) = the per-token sums of dz
            d_product = ops.segment_sum(dz_rows, id_rows, num_segments=entries)
            return matmul(d_product, ops.transpose(W_y)), matmul(ops.transpose(table), d_product)

        def looked_up_grads():
            y_rows = ops.take(table, id_rows, axis=0)
            d_y = matmul(dz_rows, ops.transpose(W_y))
            return ops.segment_sum(d_y, id_rows, num_segments=entries), matmul(
                ops.transpose(y_rows), dz_rows
            )

        d_table, d_W_y = _either(fold, folded_grads, looked_up_grads)
        rest[3] = ops.concatenate([d_W_y, rest[3]], axis=0)
        return (d_table[:-1], ops.zeros_like(ids, dtype=dtype), *rest)

    return result, grad_ids


def _either(pred, true_fn, false_fn):
    """`true_fn()` or `false_fn()`: chosen here when `pred` is a Python bool, else `ops.cond`."""
    if isinstance(pred, bool):
        return true_fn() if pred else false_fn()
    return ops.cond(pred, true_fn, false_fn)


def _forward(
    sequences,
    h0,
    c0,
    f0,
    W,
    U,
    b,
    W_c,
    keys,
    value,
    memory_valid,
    step_valid,
    *,
    tanh_output,
    masked,
    projected=False,
):
    """The forward pass and its gradient function. With `projected`, `sequences` is already
    `y W_y` `[T, B, 4 d]` (the caller differentiates that product): its gradient is `dz`, and
    the kernel's gradient holds the `F` rows only."""
    units = h0.shape[-1]
    rows = W.shape[0] - f0.shape[-1]  # the rows of the kernel that see y
    W_y, F = W[:rows], W[rows:]
    if projected:
        inputs = sequences + b
    else:
        inputs = matmul(sequences, W_y) + b  # [T, B, 4 d]: the part of z that sees y, at once
    W_r = ops.concatenate([U, F], axis=0)
    W_h, W_v = W_c[:units], W_c[units:]
    # The context's share of W_c, once per sequence: ctx W_v = α (V W_v).
    value_out = matmul(value, W_v)  # [B, S, a]
    dtype = keras.backend.standardize_dtype(inputs.dtype)
    lowest = ops.convert_to_tensor(mask_value(dtype), dtype)
    is_valid = memory_valid > 0

    def step(_, xs, carry):
        h, c, f = carry
        x_t, valid_t = xs
        z = x_t + matmul(ops.concatenate([h, f], axis=-1), W_r)
        i, j, g, o = ops.split(z, 4, axis=-1)
        c_new = ops.sigmoid(j) * c + ops.sigmoid(i) * ops.tanh(g)
        h_new = ops.sigmoid(o) * ops.tanh(c_new)
        scores = _product(h_new, keys)  # [B, S]
        alpha = ops.softmax(ops.where(is_valid, scores, lowest), axis=-1) * memory_valid
        f_new = matmul(h_new, W_h) + _product(alpha, value_out)
        if tanh_output:
            f_new = ops.tanh(f_new)
        # Keras 3.15 computes float64 tanh/sigmoid in float32 on JAX: the carry keeps its dtype.
        new = tuple(ops.cast(x, dtype) for x in (h_new, c_new, f_new))
        if masked:  # padded steps keep the state
            keep = ops.expand_dims(valid_t, -1) > 0
            new = tuple(ops.where(keep, n, o_) for n, o_ in zip(new, carry))
        # What the backward pass needs: z, the new state, the weights. (On padded steps these
        # hold the kept state instead; the backward pass ignores those steps.)
        return new, (z, *new, ops.cast(alpha, dtype))

    shapes = [ops.shape(inputs)[1:], *(ops.shape(x) for x in (h0, c0, f0)), ops.shape(memory_valid)]
    (h, c, f), saved = time_loop(step, (inputs, step_valid), (h0, c0, f0), shapes, dtype)
    zs, hs, cs, fs, alphas = saved
    if masked:
        valid = ops.expand_dims(step_valid, -1) > 0
        outputs = ops.where(valid, fs, ops.zeros_like(fs))
        weights = ops.where(valid, alphas, ops.zeros_like(alphas))
    else:
        outputs, weights = fs, alphas

    def grad(*upstream):
        if len(upstream) == 1 and isinstance(upstream[0], (tuple, list)):
            upstream = tuple(upstream[0])  # JAX: one cotangent with the outputs' structure
        like = (outputs, weights, h, c, f)
        d_out, d_weights, dh, dc, df = (
            ops.zeros_like(x) if g is None else ops.cast(g, x.dtype) for g, x in zip(upstream, like)
        )
        W_r_t = ops.transpose(W_r)
        W_h_t = ops.transpose(W_h)
        value_out_t = ops.transpose(value_out, (0, 2, 1))
        keys_rows = ops.transpose(keys, (0, 2, 1))  # [B, S, d]
        c_prev = ops.concatenate([ops.expand_dims(c0, 0), cs[:-1]], axis=0)

        def back(_, xs, carry):
            dh, dc, df = carry
            d_o, d_w, z, c_prev, c_new, f_new, alpha, valid_t = xs
            i, j, g, o = ops.split(z, 4, axis=-1)
            si, sj, so, tg = ops.sigmoid(i), ops.sigmoid(j), ops.sigmoid(o), ops.tanh(g)
            tc = ops.tanh(c_new)
            da = d_o + df
            if tanh_output:
                da = da * (1.0 - f_new * f_new)
            d_alpha = _product(da, value_out_t) + d_w  # [B, S]
            ds = alpha * (d_alpha - ops.sum(alpha * d_alpha, axis=-1, keepdims=True))
            dh_new = dh + matmul(da, W_h_t) + _product(ds, keys_rows)
            do = dh_new * tc * so * (1.0 - so)
            dc_new = dc + dh_new * so * (1.0 - tc * tc)
            di = dc_new * tg * si * (1.0 - si)
            dj = dc_new * c_prev * sj * (1.0 - sj)
            dg = dc_new * si * (1.0 - tg * tg)
            dz = ops.concatenate([di, dj, dg, do], axis=-1)
            dhf = matmul(dz, W_r_t)
            new = tuple(ops.cast(x, dtype) for x in (dhf[:, :units], dc_new * sj, dhf[:, units:]))
            if masked:
                keep = ops.expand_dims(valid_t, -1) > 0
                new = tuple(ops.where(keep, n, o_) for n, o_ in zip(new, carry))
                dz, da, ds = (ops.where(keep, x, ops.zeros_like(x)) for x in (dz, da, ds))
            return new, tuple(ops.cast(x, dtype) for x in (dz, da, ds))

        xs = (d_out, d_weights, zs, c_prev, cs, fs, alphas, step_valid)
        shapes = [ops.shape(zs)[1:], ops.shape(fs)[1:], ops.shape(alphas)[1:]]
        (dh0, dc0, df0), (dz, da, ds) = time_loop(
            back, xs, (dh, dc, df), shapes, dtype, reverse=True
        )

        def rows(x):
            return ops.reshape(x, (-1, x.shape[-1]))

        # The inputs of each step's gate product: the state before it.
        h_prev = ops.concatenate([ops.expand_dims(h0, 0), hs[:-1]], axis=0)
        f_prev = ops.concatenate([ops.expand_dims(f0, 0), fs[:-1]], axis=0)
        dz_rows = rows(dz)
        d_F = matmul(ops.transpose(rows(f_prev)), dz_rows)
        if projected:  # the F rows only (the caller adds the y rows')
            d_W = d_F
            d_sequences = dz
        else:
            d_W = ops.concatenate([matmul(ops.transpose(rows(sequences)), dz_rows), d_F], axis=0)
            d_sequences = matmul(dz, ops.transpose(W_y))
        d_U = matmul(ops.transpose(rows(h_prev)), dz_rows)
        # Sums over the steps t of [T, B, ...] products: batched over B, contracted over T.
        by_row = (1, 0, 2)
        d_value_out = matmul(ops.transpose(alphas, (1, 2, 0)), ops.transpose(da, by_row))
        d_W_c = ops.concatenate(
            [
                matmul(ops.transpose(rows(hs)), rows(da)),
                matmul(ops.transpose(rows(value)), rows(d_value_out)),
            ],
            axis=0,
        )
        d_keys = matmul(ops.transpose(hs, (1, 2, 0)), ops.transpose(ds, by_row))
        d_value = matmul(d_value_out, ops.transpose(W_v))
        return (
            d_sequences,
            dh0,
            dc0,
            df0,
            d_W,
            d_U,
            ops.sum(dz_rows, axis=0),
            d_W_c,
            d_keys,
            d_value,
            ops.zeros_like(memory_valid),
            ops.zeros_like(step_valid),
        )

    return (outputs, weights, h, c, f), grad


def _product(vector, matrix):
    """`[B, k] × [B, k, n] -> [B, n]`: one batched matrix-vector product."""
    return matmul(ops.expand_dims(vector, 1), matrix)[:, 0]


def _tensor(x):
    """`x` as a tensor; a variable is read (TensorFlow's custom gradients would otherwise ask
    for the variables, and Keras' `convert_to_tensor` hands a TensorFlow variable back)."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.convert_to_tensor(getattr(x, "value", x))
    return ops.convert_to_tensor(x)
