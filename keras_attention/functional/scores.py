"""Score functions e(s, h) (Bahdanau et al., 2014; Luong et al., 2015), over a whole memory
or over gathered windows.

Keys are either a whole memory `[B, S, d]` (global attention, scores `[B, T, S]`) or one window
of keys per query `[B, T, W, d]` (local attention, scores `[B, T, W]`). Projections of the keys
(`h W_g`, `h U_a`) are made once per memory by the caller, never per query step.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_attention.functional._checks import check_same_size
from keras_attention.functional.softmax import wide_float_dtype

__all__ = ["additive_scores", "dot_scores", "matmul", "project"]

_LETTERS = "abcdefghij"


def matmul(a, b):
    """`ops.matmul(a, b)` that keeps float64 inputs in float64 on every backend.

    Keras 3.15's PyTorch `matmul` (and `dot`, `tensordot`) computes float64 operands in float32
    (its dtype promotion mistakes torch dtypes for Python types), so float64 layers would silently
    lose precision there. For float64 operands the product is written as the equal `einsum`, which
    keeps the dtype on every backend; everything else goes to `ops.matmul` unchanged.

    Args:
        a: `[..., n, k]`, or `[..., k]` when `b` is a 2-D kernel.
        b: `[k, m]`, or `[..., k, m]` with the same leading (batch) axes as `a`.

    Returns:
        `a @ b`.

    Example:

    >>> import numpy as np
    >>> np.asarray(matmul(np.eye(2), np.array([[1.0, 2.0], [3.0, 4.0]]))).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    a, b = ops.convert_to_tensor(a), ops.convert_to_tensor(b)
    wide = "float64" in (
        keras.backend.standardize_dtype(a.dtype),
        keras.backend.standardize_dtype(b.dtype),
    )
    if not wide:
        return ops.matmul(a, b)
    lead = _LETTERS[: len(a.shape) - 1]
    if len(b.shape) == 2:  # [..., k] @ [k, m]
        return ops.einsum(f"{lead}y,yz->{lead}z", a, b)
    batch = _LETTERS[: len(a.shape) - 2]
    return ops.einsum(f"{batch}xy,{batch}yz->{batch}xz", a, b)


def dot_scores(query, keys, keys_transposed: bool = False):
    """Dot-product scores `s · k`.

    Args:
        query: `[B, T, d]`.
        keys: `[B, S, d]` (one memory per row) or `[B, T, W, d]` (one window per query).
        keys_transposed: `keys` is a memory given as `[B, d, S]` (transposed once per memory,
            e.g. outside a decoder loop). Defaults to `False`.

    Returns:
        `[B, T, S]` or `[B, T, W]`, float32 (float64 for float64 inputs): the operands are cast
        before the product, so float16 / bfloat16 inputs (mixed precision) can neither overflow
        (float16 ends at 65504) nor round large scores coarsely.

    Example:

    >>> import numpy as np
    >>> q = np.array([[[1.0, 2.0]]]); k = np.array([[[3.0, 4.0], [1.0, 0.0]]])
    >>> np.asarray(dot_scores(q, k)).tolist()
    [[[11.0, 1.0]]]
    """
    key_axis = -2 if keys_transposed else -1
    check_same_size("dot_scores", "query", query, -1, "keys", keys, key_axis)
    dtype = wide_float_dtype(query.dtype)
    query, keys = ops.cast(query, dtype), ops.cast(keys, dtype)
    if keys_transposed:
        return matmul(query, keys)
    if len(keys.shape) == 3:
        return matmul(query, ops.transpose(keys, (0, 2, 1)))
    return ops.einsum("btd,btwd->btw", query, keys)


def additive_scores(query_features, key_features, score_vector, bias=None):
    """Additive (Bahdanau) / concat (Luong) scores `v · tanh(s W_q + h W_k [+ b])`.

    Args:
        query_features: `s W_q`, `[B, T, U]`.
        key_features: `h W_k`, `[B, S, U]` or windows `[B, T, W, U]`.
        score_vector: `v`, `[U]` (already weight-normalised when that form is used).
        bias: Optional `[U]` bias inside the tanh (the `normalize=True` form).
            Defaults to `None`.

    Returns:
        `[B, T, S]` or `[B, T, W]`, float32 (float64 for float64 inputs): the tanh runs in the
        input dtype, the sum over U in float32, so a large `v` cannot overflow float16.

    Example:

    >>> import numpy as np
    >>> q = np.zeros((1, 1, 2)); k = np.zeros((1, 3, 2)); v = np.ones(2)
    >>> np.asarray(additive_scores(q, k, v)).tolist()
    [[[0.0, 0.0, 0.0]]]
    """
    check_same_size(
        "additive_scores", "query_features", query_features, -1, "key_features", key_features, -1
    )
    check_same_size(
        "additive_scores", "key_features", key_features, -1, "score_vector", score_vector, -1
    )
    if len(key_features.shape) == 3:
        key_features = ops.expand_dims(key_features, 1)  # [B, 1, S, U]
    features = ops.expand_dims(query_features, 2) + key_features  # [B, T, S|W, U]
    if bias is not None:
        features = features + bias
    hidden = ops.tanh(features)
    dtype = wide_float_dtype(hidden.dtype)
    return ops.einsum("btsu,u->bts", ops.cast(hidden, dtype), ops.cast(score_vector, dtype))


def project(x, kernel):
    """`x @ kernel` over the last axis of `x` `[..., d]` (kernel `[d, n]`) as one 2-D matmul.

    The same as `ops.matmul(x, kernel)`, but on TensorFlow a rank > 2 `matmul` is a
    `tf.tensordot`, whose transpose permutation becomes a loop value in the gradient of a
    while loop, which XLA rejects ("must be a compile-time constant") when the batch size is
    dynamic; reshaping to 2-D avoids it.
    """
    if len(kernel.shape) != 2:
        raise ValueError(f"`kernel` must be [d, n]. Received: kernel.shape={tuple(kernel.shape)}")
    check_same_size("project", "x", x, -1, "kernel", kernel, 0)
    if len(x.shape) == 2:
        return matmul(x, kernel)
    lead = ops.shape(x)[:-1]
    flat = matmul(ops.reshape(x, (-1, kernel.shape[0])), kernel)
    return ops.reshape(flat, (*lead, kernel.shape[-1]))
