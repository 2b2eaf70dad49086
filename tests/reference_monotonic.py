"""Float64 NumPy reference for monotonic and location-sensitive attention.

An independent transcription of the equations (Raffel et al., 2017, eqs. 9-14 and their
"parallel" closed form as tfa 0.23 computes it; Chorowski et al., 2015, eqs. 5-9), written
without reading or importing ``keras_attention``. Loops over the batch row ``b``, the memory
position ``i`` (and the filter tap ``j``) keep the correspondence with the equations obvious.

Conventions (batch-first, Keras-style ``[in, out]`` kernels, the contract weight names):

- Monotonic energies: additive ``e_i = v · tanh(s W_a + h_i U_a) + r`` (``query_kernel``,
  ``key_kernel``, ``score_vector``, ``score_bias``; normalised form
  ``(g v / |v|) · tanh(s W_a + h_i U_a + b) + r`` with ``norm_scale``, ``norm_bias``), or
  Luong "general" ``e_i = g · s · (h_i W_g) + r`` (``score_kernel``, optional ``scale``).
- ``p_i = sigmoid(e_i + noise_i)``; in "hard" mode ``p_i = 1 if e_i + noise_i > 0 else 0``;
  ``p_i = 0`` on padded positions.
- "recursive" and "parallel" compute the same recursion ``q_0 = a_0``,
  ``q_i = (1 - p_{i-1}) q_{i-1} + a_i``, ``alpha_i = p_i q_i`` (``a`` the previous alignment),
  "parallel" through tfa's closed form with its clipping: ``cp_i = prod_{k<i} max(1 - p_k,
  tiny)``, ``alpha_i = p_i cp_i sum_{j<=i} a_j / clip(cp_j, 1e-10, 1)``. "hard" is
  ``p_i <- p_i * sum_{j<=i} a_j`` then ``alpha_i = p_i prod_{k<i} (1 - p_k)``.
- Location-sensitive: ``e_i = v · tanh(s W_a + h_i U_a + f_i P)``, ``f_i[k] = sum_j sum_c
  A[i + j - (K - 1) // 2, c] F[j, c, k]`` (zero outside the memory), ``A`` the previous alignment
  (channel 0) and, cumulative, the sum of all previous alignments (channel 1); softmax over the
  valid positions.
- The context is ``c = sum_i alpha_i v_i``.
"""

from __future__ import annotations

import numpy as np


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-_f64(x)))


def additive_energy(query, memory, w, normalize=False):
    """``[B, S]`` additive energies of one query step ``[B, d_s]`` (no score bias)."""
    query, memory = _f64(query), _f64(memory)
    v = _f64(w["score_vector"])
    bias = np.zeros_like(v)
    if normalize:
        v = _f64(w["norm_scale"]) * v / np.sqrt(np.sum(v * v))
        bias = _f64(w["norm_bias"])
    out = np.zeros(memory.shape[:2])
    for b in range(memory.shape[0]):
        q = query[b] @ _f64(w["query_kernel"])
        for i in range(memory.shape[1]):
            k = memory[b, i] @ _f64(w["key_kernel"])
            out[b, i] = np.dot(v, np.tanh(q + k + bias))
    return out


def general_energy(query, memory, w, use_scale=False):
    """``[B, S]`` Luong "general" energies ``g · s · (h_i W_g)`` of one query step."""
    query, memory = _f64(query), _f64(memory)
    out = np.zeros(memory.shape[:2])
    for b in range(memory.shape[0]):
        for i in range(memory.shape[1]):
            out[b, i] = np.dot(query[b], memory[b, i] @ _f64(w["score_kernel"]))
    if use_scale:
        out = out * _f64(w["scale"])
    return out


def choose_probabilities(energy, mode, mask=None, noise=None):
    energy = _f64(energy) + (0.0 if noise is None else _f64(noise))
    p = (energy > 0).astype(np.float64) if mode == "hard" else sigmoid(energy)
    if mask is not None:
        p = np.where(mask, p, 0.0)
    return p


def monotonic_alignment(p, previous, mode):
    """``[B, S]`` monotonic alignment from choosing probabilities and the previous alignment."""
    p, previous = _f64(p), _f64(previous)
    out = np.zeros_like(p)
    tiny = np.finfo(np.float64).tiny
    for b in range(p.shape[0]):
        if mode == "recursive":
            q = 0.0
            for i in range(p.shape[1]):
                q = previous[b, 0] if i == 0 else (1.0 - p[b, i - 1]) * q + previous[b, i]
                out[b, i] = p[b, i] * q
        elif mode == "parallel":
            cp, total = 1.0, 0.0
            for i in range(p.shape[1]):
                if i > 0:
                    cp *= min(max(1.0 - p[b, i - 1], tiny), 1.0)
                total += previous[b, i] / min(max(cp, 1e-10), 1.0)
                out[b, i] = p[b, i] * cp * total
        elif mode == "hard":
            reached, alive = 0.0, 1.0
            for i in range(p.shape[1]):
                reached += previous[b, i]
                chosen = p[b, i] * reached
                out[b, i] = chosen * alive
                alive *= 1.0 - chosen
        else:
            raise ValueError(mode)
    return out


def monotonic_step(query, memory, w, family, mode, previous, mask=None, noise=None, **score):
    """One step: ``(context [B, d_h], alignment [B, S])``. ``family``: additive or general."""
    memory = _f64(memory)
    if mask is not None:
        memory = np.where(mask[..., None], memory, 0.0)
    if family == "additive":
        energy = additive_energy(query, memory, w, normalize=score.get("normalize", False))
    else:
        energy = general_energy(query, memory, w, use_scale=score.get("use_scale", False))
    energy = energy + _f64(w["score_bias"])
    alignment = monotonic_alignment(choose_probabilities(energy, mode, mask, noise), previous, mode)
    context = np.einsum("bs,bsd->bd", alignment, memory)
    return context, alignment


def first_alignment(batch, steps):
    previous = np.zeros((batch, steps))
    previous[:, 0] = 1.0
    return previous


def monotonic_sequence(queries, memory, w, family, mode, previous=None, mask=None, **score):
    """Queries ``[B, T, d_s]``: ``(contexts [B, T, d_h], alignments [B, T, S])``."""
    queries = _f64(queries)
    batch, steps = memory.shape[:2]
    previous = first_alignment(batch, steps) if previous is None else _f64(previous)
    contexts, alignments = [], []
    for t in range(queries.shape[1]):
        context, previous = monotonic_step(
            queries[:, t], memory, w, family, mode, previous, mask, **score
        )
        contexts.append(context)
        alignments.append(previous)
    return np.stack(contexts, 1), np.stack(alignments, 1)


def location_features(channels, kernel):
    """``[B, S, F]``: ``f[b, i, k] = sum_j sum_c A[b, i + j - (K - 1) // 2, c] F[j, c, k]``."""
    channels, kernel = _f64(channels), _f64(kernel)
    batch, steps, _ = channels.shape
    width, _, filters = kernel.shape
    offset = (width - 1) // 2
    out = np.zeros((batch, steps, filters))
    for b in range(batch):
        for i in range(steps):
            for j in range(width):
                src = i + j - offset
                if 0 <= src < steps:
                    out[b, i] += channels[b, src] @ kernel[j]
    return out


def masked_softmax(scores, mask):
    out = np.zeros_like(scores)
    for b in range(scores.shape[0]):
        valid = np.ones(scores.shape[1], bool) if mask is None else mask[b]
        if valid.any():
            e = np.exp(scores[b, valid] - scores[b, valid].max())
            out[b, valid] = e / e.sum()
    return out


def location_sequence(queries, memory, w, cumulative=False, mask=None, use_scale=False):
    """Location-sensitive attention over queries ``[B, T, d_s]`` from zero initial alignments.

    Returns ``(contexts [B, T, d_h], alignments [B, T, S], final cumulative alignment)``.
    """
    queries, memory = _f64(queries), _f64(memory)
    if mask is not None:
        memory = np.where(mask[..., None], memory, 0.0)
    batch, steps = memory.shape[:2]
    previous, total = np.zeros((batch, steps)), np.zeros((batch, steps))
    contexts, alignments = [], []
    for t in range(queries.shape[1]):
        channels = np.stack([previous, total] if cumulative else [previous], -1)
        loc = location_features(channels, w["location_kernel"]) @ _f64(w["location_projection"])
        energy = np.zeros((batch, steps))
        for b in range(batch):
            q = queries[b, t] @ _f64(w["query_kernel"])
            for i in range(steps):
                k = memory[b, i] @ _f64(w["key_kernel"])
                energy[b, i] = np.dot(_f64(w["score_vector"]), np.tanh(q + k + loc[b, i]))
        if use_scale:
            energy = energy * _f64(w["scale"])
        previous = masked_softmax(energy, mask)
        total = total + previous
        contexts.append(np.einsum("bs,bsd->bd", previous, memory))
        alignments.append(previous)
    return np.stack(contexts, 1), np.stack(alignments, 1), total


# ---------------------------------------------------------------- decoders with carried alignments
def monotonic_attend(family, mode, weights, noises=None, **score):
    """``attend(query, memory, mask, states) -> (context, alignment, new_states)`` for
    :func:`decoder`: monotonic attention, the state ``[alpha_{t-1}]``. With ``noises``
    ``[T, B, S]``, call t adds ``noises[t]`` to the energies (the pre-sigmoid noise)."""
    calls = []

    def attend(query, memory, mask, states):
        noise = None if noises is None else noises[len(calls)]
        calls.append(None)
        context, alignment = monotonic_step(
            query, memory, weights, family, mode, states[0], mask, noise, **score
        )
        return context, alignment, [alignment]

    return attend


def location_attend(weights, cumulative=False):
    """``attend`` for :func:`decoder`: location-sensitive attention, the state
    ``[alpha_{t-1}]`` (and the cumulative alignment)."""

    def attend(query, memory, mask, states):
        memory = np.where(mask[..., None], _f64(memory), 0.0) if mask is not None else memory
        channels = np.stack(states, -1)
        loc = location_features(channels, weights["location_kernel"])
        loc = loc @ _f64(weights["location_projection"])
        batch, steps = memory.shape[:2]
        energy = np.zeros((batch, steps))
        for b in range(batch):
            q = _f64(query[b]) @ _f64(weights["query_kernel"])
            for i in range(steps):
                k = memory[b, i] @ _f64(weights["key_kernel"])
                energy[b, i] = np.dot(_f64(weights["score_vector"]), np.tanh(q + k + loc[b, i]))
        alignment = masked_softmax(energy, mask)
        context = np.einsum("bs,bsd->bd", alignment, memory)
        new = [alignment] + ([states[1] + alignment] if cumulative else [])
        return context, alignment, new

    return attend


def decoder(kind, y, memory, mask, cell_fn, cell_weights, attend, attention_states,
            attention_kernel=None, target_mask=None):  # fmt: skip
    """A teacher-forced decoder whose attention carries ``attention_states`` from step to step.

    ``kind="luong"``: ``x_t = [y_{t-1}; h~_{t-1}]`` (input feeding, ``h~_0 = 0``),
    ``s_t = cell(x_t)``, ``c_t = attend(s_t)``, output ``h~_t = tanh([s_t; c_t] W_c)``.
    ``kind="bahdanau"``: ``c_t = attend(s_{t-1})``, ``s_t = cell([y_{t-1}; c_t])``, output
    ``[s_t; c_t]``. Decoder padding keeps every state (the attention's too) and gives zeros.

    Returns ``(outputs [B, T, d], alignments [B, T, S], final attention states)``.
    """
    y, memory = _f64(y), _f64(memory)
    batch, steps, _ = y.shape
    target_mask = np.ones((batch, steps), bool) if target_mask is None else target_mask
    states = [np.zeros((batch, cell_weights["recurrent_kernel"].shape[0]))] * cell_fn.num_states
    feed = None if attention_kernel is None else np.zeros((batch, attention_kernel.shape[1]))
    attention_states = [_f64(s) for s in attention_states]
    outputs, alignments = [], []
    for t in range(steps):
        valid = target_mask[:, t][:, None]
        if kind == "luong":
            s, new_states = cell_fn(np.concatenate([y[:, t], feed], -1), states, cell_weights)
            context, alignment, new_attention = attend(s, memory, mask, attention_states)
            out = np.tanh(np.concatenate([s, context], -1) @ _f64(attention_kernel))
            feed = np.where(valid, out, feed)
        else:
            context, alignment, new_attention = attend(states[0], memory, mask, attention_states)
            s, new_states = cell_fn(np.concatenate([y[:, t], context], -1), states, cell_weights)
            out = np.concatenate([s, context], -1)
        states = [np.where(valid, n, o) for n, o in zip(new_states, states)]
        attention_states = [np.where(valid, n, o) for n, o in zip(new_attention, attention_states)]
        outputs.append(np.where(valid, out, 0.0))
        alignments.append(np.where(valid, alignment, 0.0))
    return np.stack(outputs, 1), np.stack(alignments, 1), attention_states
