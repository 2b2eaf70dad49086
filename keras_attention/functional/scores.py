"""Score functions e(s, h) of DESIGN.md §2, over a whole memory or over gathered windows.

Keys are either a whole memory `[B, S, d]` (global attention, scores `[B, T, S]`) or one window
of keys per query `[B, T, W, d]` (local attention, scores `[B, T, W]`). Projections of the keys
(`h W_g`, `h U_a`) are made once per memory by the caller, never per query step.
"""

from __future__ import annotations

from keras import ops

__all__ = ["additive_scores", "dot_scores", "project"]


def dot_scores(query, keys, keys_transposed: bool = False):
    """Dot-product scores `s · k`.

    Args:
        query: `[B, T, d]`.
        keys: `[B, S, d]` (one memory per row) or `[B, T, W, d]` (one window per query).
        keys_transposed: `keys` is a memory given as `[B, d, S]` (transposed once per memory,
            e.g. outside a decoder loop). Defaults to `False`.

    Returns:
        `[B, T, S]` or `[B, T, W]`.

    Example:

    >>> import numpy as np
    >>> q = np.array([[[1.0, 2.0]]]); k = np.array([[[3.0, 4.0], [1.0, 0.0]]])
    >>> np.asarray(dot_scores(q, k)).tolist()
    [[[11.0, 1.0]]]
    """
    if keys_transposed:
        return ops.matmul(query, keys)
    if len(keys.shape) == 3:
        return ops.matmul(query, ops.transpose(keys, (0, 2, 1)))
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
        `[B, T, S]` or `[B, T, W]`.

    Example:

    >>> import numpy as np
    >>> q = np.zeros((1, 1, 2)); k = np.zeros((1, 3, 2)); v = np.ones(2)
    >>> np.asarray(additive_scores(q, k, v)).tolist()
    [[[0.0, 0.0, 0.0]]]
    """
    if len(key_features.shape) == 3:
        key_features = ops.expand_dims(key_features, 1)  # [B, 1, S, U]
    features = ops.expand_dims(query_features, 2) + key_features  # [B, T, S|W, U]
    if bias is not None:
        features = features + bias
    return ops.einsum("btsu,u->bts", ops.tanh(features), score_vector)


def project(x, kernel):
    """`x @ kernel` over the last axis of `x` `[..., d]` (kernel `[d, n]`) as one 2-D matmul.

    The same as `ops.matmul(x, kernel)`, but on TensorFlow a rank > 2 `matmul` is a
    `tf.tensordot`, whose transpose permutation becomes a loop value in the gradient of a
    while loop, which XLA rejects ("must be a compile-time constant") when the batch size is
    dynamic; reshaping to 2-D avoids it.
    """
    if len(x.shape) == 2:
        return ops.matmul(x, kernel)
    lead = ops.shape(x)[:-1]
    flat = ops.matmul(ops.reshape(x, (-1, kernel.shape[0])), kernel)
    return ops.reshape(flat, (*lead, kernel.shape[-1]))
