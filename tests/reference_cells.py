"""Float64 NumPy reference for the attentional decoders of docs/design.md §2 "Recurrent cells".

An independent transcription of the equations, written from docs/design.md and the documented
equations of Keras' ``LSTMCell`` and ``GRUCell`` (not from ``keras_attention``). Attention itself
comes from :func:`tests.reference.attention`, called for one query step at a time. The tests
compare ``AttentionRNN`` over ``BahdanauAttentionCell`` / ``LuongAttentionCell`` against it.

Conventions (batch-first, Keras-style ``[in, out]`` kernels):

- ``y`` ``[B, T, d_y]`` are the decoder inputs (``y_{t-1}`` at step ``t``, already shifted);
  ``memory`` ``[B, S, d_h]``; ``memory_mask`` bool ``[B, S]``; ``target_mask`` bool ``[B, T]``.
- A wrapped RNN cell is a function ``cell_fn(x, states, weights) -> (h, new_states)`` over a flat
  list of ``[B, n]`` states (:func:`lstm_cell`: ``[h, c]``, :func:`gru_cell`: ``[h]``,
  :func:`stacked_cell`: the cells' states in order); the decoder state is that list, then
  ``h̃_{t-1}`` for Luong with input feeding.
- Decoder-side padding (``target_mask[b, t]`` false): every state of row ``b`` is carried
  unchanged through step ``t`` and the output and alignment of that step are zeros.
"""

from __future__ import annotations

import numpy as np

from tests import reference


def _f64(x):
    return np.asarray(x, dtype=np.float64)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-_f64(x)))


def lstm_step(x, h, c, kernel, recurrent_kernel, bias):
    """Keras ``LSTMCell`` (sigmoid recurrent activation, tanh activation).

    ``z = x W + h U + b`` split into the gates in the order i, f, c, o;
    ``c' = σ(z_f) c + σ(z_i) tanh(z_c)``, ``h' = σ(z_o) tanh(c')``.

    Returns:
        ``(h', c')``.
    """
    z = _f64(x) @ _f64(kernel) + _f64(h) @ _f64(recurrent_kernel) + _f64(bias)
    z_i, z_f, z_c, z_o = np.split(z, 4, axis=-1)
    c_new = sigmoid(z_f) * _f64(c) + sigmoid(z_i) * np.tanh(z_c)
    h_new = sigmoid(z_o) * np.tanh(c_new)
    return h_new, c_new


def gru_step(x, h, kernel, recurrent_kernel, bias):
    """Keras ``GRUCell`` with ``reset_after=True`` (the default).

    ``bias`` is ``[2, 3U]`` (input bias, recurrent bias); gates in the order z, r, h:
    ``x W + b_i = [x_z, x_r, x_h]``, ``h U + b_r = [r_z, r_r, r_h]``,
    ``z = σ(x_z + r_z)``, ``r = σ(x_r + r_r)``, ``ĥ = tanh(x_h + r * r_h)``,
    ``h' = z h + (1 - z) ĥ``.
    """
    h = _f64(h)
    bias = _f64(bias)
    x_z, x_r, x_h = np.split(_f64(x) @ _f64(kernel) + bias[0], 3, axis=-1)
    r_z, r_r, r_h = np.split(h @ _f64(recurrent_kernel) + bias[1], 3, axis=-1)
    z = sigmoid(x_z + r_z)
    r = sigmoid(x_r + r_r)
    hh = np.tanh(x_h + r * r_h)
    return z * h + (1.0 - z) * hh


def lstm_cell(x, states, weights):
    """``LSTMCell`` as a decoder cell: states ``[h, c]``, output ``h``."""
    h, c = lstm_step(x, states[0], states[1], **weights)
    return h, [h, c]


def gru_cell(x, states, weights):
    """``GRUCell`` as a decoder cell: states ``[h]``, output ``h``."""
    h = gru_step(x, states[0], **weights)
    return h, [h]


lstm_cell.num_states = 2
gru_cell.num_states = 1


def stacked_cell(*cell_fns):
    """``StackedRNNCells``: the cells in order, each feeding its output to the next.

    The returned cell takes a list of weight dicts (one per cell); its states are the cells'
    states concatenated, and its hidden state (Bahdanau's query) is the top cell's ``h``.
    """

    def cell(x, states, weights):
        new_states, start = [], 0
        for fn, w in zip(cell_fns, weights):
            x, s = fn(x, states[start : start + fn.num_states], w)
            new_states += s
            start += fn.num_states
        return x, new_states

    cell.cells = cell_fns
    cell.num_states = sum(fn.num_states for fn in cell_fns)
    cell.hidden_index = cell.num_states - cell_fns[-1].num_states
    return cell


def _initial_states(cell_fn, cell_weights, batch, initial_state):
    if initial_state is not None:
        return [_f64(s).copy() for s in initial_state]
    if hasattr(cell_fn, "cells"):
        return [
            state
            for fn, w in zip(cell_fn.cells, cell_weights)
            for state in _initial_states(fn, w, batch, None)
        ]
    units = _f64(cell_weights["recurrent_kernel"]).shape[0]
    return [np.zeros((batch, units)) for _ in range(cell_fn.num_states)]


def _attend(query, memory, memory_mask, t, attention):
    """Attention of one query step ``[B, d_s]`` at step index ``t``: ``(context, alignment)``."""
    batch = query.shape[0]
    context, alpha = reference.attention(
        query[:, None, :],
        memory,
        value_mask=memory_mask,
        query_positions=np.full((batch, 1), t),
        **attention,
    )
    return context[:, 0], alpha[:, 0]


def _keep(valid, new, old):
    """Rows where ``valid`` take ``new``, the others keep ``old``."""
    return np.where(valid[:, None], new, old)


def luong_decoder(
    y,
    memory,
    memory_mask,
    cell_fn,
    cell_weights,
    attention,
    attention_kernel,
    input_feeding=True,
    activation="tanh",
    target_mask=None,
    initial_state=None,
    output_attention=True,
):
    """Luong et al. (2015) attentional decoder, teacher-forced over ``y``.

    ``x_t = [y_{t-1}; h̃_{t-1}]`` (input feeding, ``h̃_0 = 0``) or ``y_{t-1}``;
    ``s_t = cell(x_t, s_{t-1})``; ``c_t = attention(s_t)``; ``h̃_t = act([s_t; c_t] W_c)``;
    the output is ``h̃_t`` (or ``s_t`` when not ``output_attention``).

    Several attentions (``attention`` a list of keyword dicts, ``attention_kernel`` a list of
    kernels): every ``c^k_t`` from ``s_t``, ``h̃_t = [act([s_t; c^1_t] W_c^1); …]``, and the
    reported alignment is the mean of the attentions' alignments. ``attention_kernel=None``: no
    attention layer, ``h̃_t = [c^1_t; …]`` (tfa's ``attention_layer_size=None``).

    Args:
        y: ``[B, T, d_y]``.
        memory: ``[B, S, d_h]``.
        memory_mask: bool ``[B, S]`` or ``None``.
        cell_fn: :func:`lstm_cell`, :func:`gru_cell` or a :func:`stacked_cell`.
        cell_weights: dict ``kernel``, ``recurrent_kernel``, ``bias`` of the wrapped cell (a list
            of them for a stacked cell).
        attention: keyword arguments of :func:`tests.reference.attention` (``mode``, ``weights``,
            ``alignment``, ``window_radius``, ...), without ``attention_units``; or a list.
        attention_kernel: ``W_c`` ``[d_s + d_h, units]``, a list of them, or ``None``.
        input_feeding: feed ``h̃_{t-1}`` into step ``t``.
        activation: ``"tanh"`` or ``None`` (identity).
        target_mask: bool ``[B, T]`` or ``None``.
        initial_state: the wrapped cell's states (then ``h̃_0 = 0``), or those followed by
            ``h̃_0`` (input feeding only), or ``None`` for zeros.
        output_attention: output ``h̃_t`` (else ``s_t``).

    Returns:
        ``(outputs [B, T, d_out], alignments [B, T, S], final_states)``; ``final_states`` is the
        cell's states, then ``h̃`` when ``input_feeding``.
    """
    y = _f64(y)
    memory = _f64(memory)
    attentions = attention if isinstance(attention, (list, tuple)) else [attention]
    if attention_kernel is None:
        kernels = None
        size = len(attentions) * memory.shape[2]
    else:
        kernels = (
            attention_kernel if isinstance(attention_kernel, (list, tuple)) else [attention_kernel]
        )
        kernels = [_f64(k) for k in kernels]
        if len(kernels) != len(attentions):
            raise ValueError("one attention_kernel per attention")
        size = sum(k.shape[1] for k in kernels)
    n_b, n_t, _ = y.shape
    if target_mask is None:
        target_mask = np.ones((n_b, n_t), dtype=bool)
    target_mask = np.asarray(target_mask, dtype=bool)
    feed = np.zeros((n_b, size))  # h̃_{t-1}
    if initial_state is not None and len(initial_state) == cell_fn.num_states + 1:
        if not input_feeding:
            raise ValueError("a full initial state with h̃_0 needs input_feeding=True")
        *initial_state, feed = initial_state
        feed = _f64(feed).copy()
    states = _initial_states(cell_fn, cell_weights, n_b, initial_state)
    outputs, alignments = [], np.zeros((n_b, n_t, memory.shape[1]))
    for t in range(n_t):
        valid = target_mask[:, t]
        x = np.concatenate([y[:, t], feed], axis=-1) if input_feeding else y[:, t]
        s, new_states = cell_fn(x, states, cell_weights)
        parts, alphas = [], []
        for k, kwargs in enumerate(attentions):
            context, alpha = _attend(s, memory, memory_mask, t, kwargs)
            alphas.append(alpha)
            if kernels is None:
                parts.append(context)
                continue
            pre = np.concatenate([s, context], axis=-1) @ kernels[k]
            if activation == "tanh":
                parts.append(np.tanh(pre))
            elif activation is None or activation == "linear":
                parts.append(pre)
            else:
                raise ValueError(f"activation must be 'tanh' or None, got {activation!r}")
        out = np.concatenate(parts, axis=-1)
        emitted = out if output_attention else s
        states = [_keep(valid, n, o) for n, o in zip(new_states, states)]
        feed = _keep(valid, out, feed)
        outputs.append(np.where(valid[:, None], emitted, 0.0))
        alignments[:, t] = np.where(valid[:, None], np.mean(alphas, axis=0), 0.0)
    final = states + ([feed] if input_feeding else [])
    return np.stack(outputs, axis=1), alignments, final


def bahdanau_decoder(
    y,
    memory,
    memory_mask,
    cell_fn,
    cell_weights,
    attention,
    target_mask=None,
    initial_state=None,
):
    """Bahdanau et al. (2014) attentional decoder, teacher-forced over ``y``.

    ``c_t = attention(s_{t-1})`` with ``s_{t-1}`` the cell's hidden state ``h`` (its first
    state; the top cell's for :func:`stacked_cell`); ``s_t = cell([y_{t-1}; c_t], s_{t-1})``;
    output ``[s_t; c_t]``.

    Args: as :func:`luong_decoder` (no ``attention_kernel``, ``input_feeding``, ``activation``).

    Returns:
        ``(outputs [B, T, d_s + d_h], alignments [B, T, S], final_states)`` (the cell's states).
    """
    y = _f64(y)
    memory = _f64(memory)
    n_b, n_t, _ = y.shape
    if target_mask is None:
        target_mask = np.ones((n_b, n_t), dtype=bool)
    target_mask = np.asarray(target_mask, dtype=bool)
    states = _initial_states(cell_fn, cell_weights, n_b, initial_state)
    hidden = getattr(cell_fn, "hidden_index", 0)
    outputs = np.zeros((n_b, n_t, states[hidden].shape[1] + memory.shape[2]))
    alignments = np.zeros((n_b, n_t, memory.shape[1]))
    for t in range(n_t):
        valid = target_mask[:, t]
        context, alpha = _attend(states[hidden], memory, memory_mask, t, attention)
        s, new_states = cell_fn(np.concatenate([y[:, t], context], axis=-1), states, cell_weights)
        states = [_keep(valid, n, o) for n, o in zip(new_states, states)]
        outputs[:, t] = np.where(valid[:, None], np.concatenate([s, context], axis=-1), 0.0)
        alignments[:, t] = np.where(valid[:, None], alpha, 0.0)
    return outputs, alignments, states
