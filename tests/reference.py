"""Float64 NumPy reference for the attention mathematics of docs/design.md §2.

This module is an independent transcription of the equations in docs/design.md §2 ("The
mathematics"),
written from the equations only and without reading or importing ``keras_attention``. The tests
compare the Keras layers against it. Clarity beats speed: the code loops explicitly over the batch
row ``b``, the query step ``t`` and the memory position ``i`` wherever that makes the
correspondence with the equations obvious. Inputs in the tests are tiny.

Conventions (shapes are batch-first):

- ``B`` batch, ``T`` query steps, ``S`` memory steps, ``U`` attention units, ``D`` local
  half-window (``window_radius``).
- query ``s`` is ``[B, T, d_s]``, keys ``h`` are ``[B, S, d_k]``, values ``[B, S, d_v]``.
- Kernels are Keras-style ``[in, out]``; the weight names are the contract names of §2
  (``score_kernel``, ``query_kernel``, ``key_kernel``, ``score_vector``, ``norm_scale``,
  ``norm_bias``, ``scale``, ``position_kernel``, ``position_vector``, ``attention_kernel``).

Choices made where docs/design.md §2 leaves room (kept in one place so they are easy to check):

- Rounding of the window centre: ``round(p) = floor(p + 0.5)`` (round half up), not NumPy's
  round-half-to-even. Only local_predictive can produce exact halves.
- local_monotonic: ``p_t = clip(query_position_t, 0, S_b - 1)`` where ``S_b`` is the number of
  valid memory positions of row ``b`` and ``query_position_t`` defaults to ``t``.
- local_predictive: ``p_t = S_b * sigmoid(v_p . tanh(s_t W_p))`` (real-valued, not clipped); the
  Gaussian uses the unrounded ``p_t``; ``sigma = D / 2``; no renormalisation after the Gaussian.
- A memory position ``i`` is usable when ``0 <= i < S`` and ``value_mask[b, i]`` is true, and, with
  ``use_causal_mask``, ``i <= query_position_t``. Global attention takes the softmax over all usable
  positions; local attention over the usable positions inside the window only.
- A query with no usable position gets all-zero weights and a zero context (never NaN).
- ``use_scale`` multiplies the final score (after the weight-normalised form, if any) by ``scale``.
- ``normalize=True`` is defined only for the additive score; other modes raise ``ValueError``.
- ``query_mask`` zeroes the *output* rows (context, or attentional output when ``attention_units``
  is set) where it is false, as ``keras.layers.Attention`` does; the returned weights are not
  changed by ``query_mask``.
- The attentional output is ``act([s_t; c_t] @ attention_kernel)`` with ``act`` = tanh, or the
  identity when ``attention_activation`` is ``None`` (or ``"linear"``).
"""

from __future__ import annotations

import numpy as np

SCORE_MODES = ("dot", "general", "concat", "additive")
ALIGNMENTS = ("global", "local_monotonic", "local_predictive")


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def round_half_up(x):
    """Round to the nearest integer, halves upwards: ``floor(x + 0.5)``."""
    return int(np.floor(x + 0.5))


def masked_softmax(scores, mask):
    """Softmax over the last axis, restricted to the positions where ``mask`` is true.

    Args:
        scores: float array ``[..., S]``.
        mask: bool array broadcastable to ``scores``, or ``None`` (every position valid).

    Returns:
        float64 array shaped like ``scores``. Masked-out positions are exactly 0; a row with no
        true position is all zeros (no NaN).
    """
    scores = _f64(scores)
    if mask is None:
        mask = np.ones(scores.shape, dtype=bool)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    out = np.zeros_like(scores)
    flat_scores = scores.reshape(-1, scores.shape[-1])
    flat_mask = mask.reshape(-1, scores.shape[-1])
    flat_out = out.reshape(-1, scores.shape[-1])
    for r in range(flat_scores.shape[0]):
        valid = flat_mask[r]
        if not valid.any():
            continue  # row stays all zeros
        row = flat_scores[r][valid]
        e = np.exp(row - row.max())
        flat_out[r][valid] = e / e.sum()
    return flat_out.reshape(scores.shape)


def masked_hardmax(scores, mask):
    """tfa's ``hardmax`` over the valid positions of the last axis: weight 1 on the first
    highest valid score, 0 elsewhere; a row with no valid position is all zeros."""
    scores = _f64(scores)
    if mask is None:
        mask = np.ones(scores.shape, dtype=bool)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    out = np.zeros_like(scores)
    flat_scores = scores.reshape(-1, scores.shape[-1])
    flat_mask = mask.reshape(-1, scores.shape[-1])
    flat_out = out.reshape(-1, scores.shape[-1])
    for r in range(flat_scores.shape[0]):
        valid = np.flatnonzero(flat_mask[r])
        if valid.size:
            best = valid[0]
            for i in valid:  # strictly greater: ties stay with the first position
                if flat_scores[r, i] > flat_scores[r, best]:
                    best = i
            flat_out[r, best] = 1.0
    return flat_out.reshape(scores.shape)


def score_pair(s, h, mode, weights, normalize=False, use_scale=False):
    """The score ``e(s, h)`` of one query vector ``s [d_s]`` and one key vector ``h [d_k]``."""
    s = _f64(s)
    h = _f64(h)
    if mode not in SCORE_MODES:
        raise ValueError(f"mode must be one of {SCORE_MODES}, got {mode!r}")
    if normalize and mode != "additive":
        raise ValueError(f"normalize=True is only defined for mode='additive', got {mode!r}")
    if mode == "dot":
        if s.shape[-1] != h.shape[-1]:
            raise ValueError(
                f"dot score needs d_s == d_k, got d_s={s.shape[-1]} and d_k={h.shape[-1]}"
            )
        e = np.dot(s, h)
    elif mode == "general":
        w_g = _f64(weights["score_kernel"])  # [d_k, d_s]
        e = np.dot(s, h @ w_g)
    else:  # "concat" (Luong) and "additive" (Bahdanau) share the form
        w_q = _f64(weights["query_kernel"])  # [d_s, U]
        w_k = _f64(weights["key_kernel"])  # [d_k, U]
        v = _f64(weights["score_vector"])  # [U]
        if normalize:
            g = float(_f64(weights["norm_scale"]))
            b = _f64(weights["norm_bias"])  # [U]
            e = np.dot(g * v / np.linalg.norm(v), np.tanh(s @ w_q + h @ w_k + b))
        else:
            e = np.dot(v, np.tanh(s @ w_q + h @ w_k))
    if use_scale:
        e = float(_f64(weights["scale"])) * e
    return float(e)


def scores(query, key, mode, weights, normalize=False, use_scale=False):
    """All scores ``e[b, t, i] = e(s_{b,t}, h_{b,i})``.

    Args:
        query: ``[B, T, d_s]``.
        key: ``[B, S, d_k]``.
        mode: ``"dot"``, ``"general"``, ``"concat"`` or ``"additive"``.
        weights: dict of weight arrays by contract name.
        normalize: weight-normalised additive score.
        use_scale: multiply the score by ``weights["scale"]``.

    Returns:
        ``[B, T, S]`` float64.
    """
    query = _f64(query)
    key = _f64(key)
    n_b, n_t, _ = query.shape
    n_s = key.shape[1]
    e = np.zeros((n_b, n_t, n_s))
    for b in range(n_b):
        for t in range(n_t):
            for i in range(n_s):
                e[b, t, i] = score_pair(
                    query[b, t], key[b, i], mode, weights, normalize=normalize, use_scale=use_scale
                )
    return e


def predictive_position(s, valid_length, weights):
    """local_predictive centre ``p_t = S_b * sigmoid(v_p . tanh(s_t W_p))`` for one query ``s``."""
    w_p = _f64(weights["position_kernel"])  # [d_s, U]
    v_p = _f64(weights["position_vector"])  # [U]
    z = np.dot(v_p, np.tanh(_f64(s) @ w_p))
    return float(valid_length) / (1.0 + np.exp(-z))


def attention(
    query,
    value,
    key=None,
    *,
    mode,
    weights,
    normalize=False,
    use_scale=False,
    value_mask=None,
    query_mask=None,
    alignment="global",
    window_radius=10,
    query_positions=None,
    use_causal_mask=False,
    attention_units=False,
    attention_activation="tanh",
    probability_fn="softmax",
):
    """Attention of docs/design.md §2 for a batch of queries over a batch of memories.

    Args:
        query: ``[B, T, d_s]`` (rank 3 only).
        value: ``[B, S, d_v]``.
        key: ``[B, S, d_k]``; defaults to ``value``.
        mode: score mode, see :func:`scores`.
        weights: dict of weight arrays by contract name.
        normalize, use_scale: see :func:`scores`.
        value_mask: bool ``[B, S]`` or ``None`` (all valid).
        query_mask: bool ``[B, T]`` or ``None``; false rows of the output are zeroed.
        alignment: ``"global"``, ``"local_monotonic"`` or ``"local_predictive"``.
        window_radius: ``D``, the local half-window.
        query_positions: int ``[B, T]`` or ``None`` (``arange(T)`` for every row).
        use_causal_mask: only memory positions ``i <= query_position_t`` are usable.
        attention_units: truthy to return the attentional output ``h~`` instead of the context.
        attention_activation: ``"tanh"`` or ``None``/``"linear"`` (identity).
        probability_fn: ``"softmax"`` or ``"hardmax"`` (tfa's one-hot on the highest score;
            global and local_monotonic only).

    Returns:
        ``(output, alignment_weights)``: output ``[B, T, d_out]`` (``d_v``, or ``units`` when
        ``attention_units``), weights ``[B, T, S]`` over the full memory (zeros outside the window
        for local alignments).
    """
    query = _f64(query)
    value = _f64(value)
    key = value if key is None else _f64(key)
    if query.ndim != 3 or value.ndim != 3 or key.ndim != 3:
        raise ValueError(
            f"query, value and key must be rank 3, got ranks {query.ndim}, {value.ndim}, {key.ndim}"
        )
    if alignment not in ALIGNMENTS:
        raise ValueError(f"alignment must be one of {ALIGNMENTS}, got {alignment!r}")
    n_b, n_t, d_s = query.shape
    n_s = value.shape[1]
    if key.shape[:2] != (n_b, n_s):
        raise ValueError(f"key shape {key.shape} does not match value shape {value.shape}")
    if value_mask is None:
        value_mask = np.ones((n_b, n_s), dtype=bool)
    value_mask = np.asarray(value_mask, dtype=bool)
    if query_positions is None:
        query_positions = np.tile(np.arange(n_t), (n_b, 1))
    query_positions = np.asarray(query_positions)
    d = int(window_radius)
    if alignment != "global" and d < 0:
        raise ValueError(f"window_radius must be >= 0, got {window_radius!r}")
    if alignment == "local_predictive" and d < 1:
        # sigma = D / 2 would be 0 and the Gaussian undefined.
        raise ValueError(f"local_predictive needs window_radius >= 1, got {window_radius!r}")

    if probability_fn not in ("softmax", "hardmax"):
        raise ValueError(f"probability_fn must be 'softmax' or 'hardmax', got {probability_fn!r}")
    if probability_fn == "hardmax" and alignment == "local_predictive":
        raise ValueError("hardmax is not defined for local_predictive")
    normalizer = masked_hardmax if probability_fn == "hardmax" else masked_softmax
    e = scores(query, key, mode, weights, normalize=normalize, use_scale=use_scale)
    alpha = np.zeros((n_b, n_t, n_s))
    context = np.zeros((n_b, n_t, value.shape[2]))

    for b in range(n_b):
        valid_length = int(value_mask[b].sum())  # S_b
        for t in range(n_t):
            pos_t = int(query_positions[b, t])
            # Usable memory positions for this query: valid, and causal if asked.
            usable = value_mask[b].copy()
            if use_causal_mask:
                usable &= np.arange(n_s) <= pos_t

            if alignment == "global":
                alpha[b, t] = normalizer(e[b, t], usable)
            else:
                if alignment == "local_monotonic":
                    p_t = float(np.clip(pos_t, 0, valid_length - 1)) if valid_length else 0.0
                else:
                    p_t = predictive_position(query[b, t], valid_length, weights)
                centre = round_half_up(p_t)
                in_window = np.zeros(n_s, dtype=bool)
                for i in range(centre - d, centre + d + 1):
                    if 0 <= i < n_s and usable[i]:
                        in_window[i] = True
                a = normalizer(e[b, t], in_window)
                if alignment == "local_predictive":
                    sigma = d / 2.0
                    for i in range(n_s):
                        if in_window[i]:
                            a[i] *= np.exp(-((i - p_t) ** 2) / (2.0 * sigma**2))
                alpha[b, t] = a

            for i in range(n_s):
                context[b, t] += alpha[b, t, i] * value[b, i]

    if attention_units:
        w_c = _f64(weights["attention_kernel"])  # [d_s + d_v, units]
        if w_c.shape[0] != d_s + value.shape[2]:
            raise ValueError(
                f"attention_kernel must have {d_s + value.shape[2]} rows, got {w_c.shape[0]}"
            )
        pre = np.concatenate([query, context], axis=-1) @ w_c
        if attention_activation == "tanh":
            output = np.tanh(pre)
        elif attention_activation is None or attention_activation == "linear":
            output = pre
        else:
            raise ValueError(
                f"attention_activation must be 'tanh' or None, got {attention_activation!r}"
            )
    else:
        output = context

    if query_mask is not None:
        output = output * np.asarray(query_mask, dtype=bool)[:, :, None].astype(np.float64)
    return output, alpha


def lowbias32(x):
    """The lowbias32 integer hash (C. Wellons) in NumPy uint32 arithmetic: the hash of
    the package's sampling RNG and hashed dropout (`functional/sampling/rng.py`)."""
    x = x.astype(np.uint32)
    x ^= x >> np.uint32(16)
    x = (x * np.uint32(0x7FEB352D)).astype(np.uint32)
    x ^= x >> np.uint32(15)
    x = (x * np.uint32(0x846CA68B)).astype(np.uint32)
    return x ^ (x >> np.uint32(16))
