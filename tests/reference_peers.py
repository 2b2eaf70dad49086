"""Float64 NumPy transcriptions of peers' attention code, written from their published source.

Independent of `keras_attention` (nothing here imports it, and nothing was written from its
outputs): each function follows one peer's own code line by line, with PyTorch's conventions
(`nn.Linear(x) = x Wᵀ + b` with `W` `[out, in]`; `nn.Conv1d` a cross-correlation with weights
`[out_channels, in_channels, K]` on `[B, C, S]` inputs). The tests copy the peer's weights into
our layers through the documented mapping (docs/attention-layers.md, "Peers") and compare.

- OpenNMT-py, `onmt/modules/sparse_activations.py` (`threshold_and_support`,
  `SparsemaxFunction.forward` and `.backward`) and `onmt/modules/global_attention.py`
  (`GlobalAttention.score` and `.forward`, `coverage=None`), github.com/OpenNMT/OpenNMT-py.
- Tacotron 2 (NVIDIA's reference implementation), `model.py` (`LocationLayer.forward`,
  `Attention.get_alignment_energies`, `Attention.forward`, and the decoder's
  `attention_weights_cum += attention_weights`), github.com/NVIDIA/tacotron2.
"""

from __future__ import annotations

import numpy as np


def _linear(x, weight, bias=None):
    """`torch.nn.Linear`: `x Wᵀ (+ b)`, `W` `[out, in]`."""
    out = np.asarray(x, np.float64) @ np.asarray(weight, np.float64).T
    return out if bias is None else out + np.asarray(bias, np.float64)


def _softmax(x, axis=-1):
    """`torch.softmax` (−inf entries get 0; a row of only −inf gives NaN, as in PyTorch)."""
    with np.errstate(invalid="ignore"):
        shifted = x - np.max(x, axis=axis, keepdims=True)
        e = np.exp(shifted)
        return e / np.sum(e, axis=axis, keepdims=True)


# ------------------------------------------------------------------ OpenNMT-py: sparsemax
def opennmt_sparsemax(z, dim=-1):
    """`onmt.modules.sparse_activations.sparsemax(z, dim)`: `threshold_and_support`, then
    `clamp(z − τ, min=0)`."""
    z = np.moveaxis(np.asarray(z, np.float64), dim, -1)
    sorted_z = -np.sort(-z, axis=-1)  # descending
    with np.errstate(invalid="ignore"):
        z_sum = np.cumsum(sorted_z, axis=-1) - 1  # "sort of a misnomer"
        k = np.arange(1, z.shape[-1] + 1, dtype=np.float64)
        support = k * sorted_z > z_sum
    k_z = support.sum(axis=-1, keepdims=True)
    index = np.maximum(k_z - 1, 0)  # torch's gather(k_z − 1) (k_z ≥ 1 on any finite row)
    tau = np.take_along_axis(z_sum, index, axis=-1) / k_z
    with np.errstate(invalid="ignore"):
        out = np.clip(z - tau, 0.0, None)
    return np.moveaxis(out, -1, dim)


def opennmt_sparsemax_backward(output, grad_output, dim=-1):
    """`SparsemaxFunction.backward`: zero off the support, minus the support's mean on it."""
    output = np.moveaxis(np.asarray(output, np.float64), dim, -1)
    grad = np.moveaxis(np.array(grad_output, np.float64), dim, -1)
    grad[output == 0] = 0
    k_z = (output != 0).sum(axis=-1, keepdims=True)
    v_hat = grad.sum(axis=-1, keepdims=True) / k_z
    grad = np.where(output != 0, grad - v_hat, grad)
    return np.moveaxis(grad, -1, dim)


# ------------------------------------------------------------------ OpenNMT-py: GlobalAttention
def opennmt_global_attention(
    source, memory_bank, weights, attn_type, src_len=None, attn_func="softmax"
):
    """`GlobalAttention(dim, attn_type=..., attn_func=...).forward(source, memory_bank,
    src_len)`.

    Args:
        source: Queries `[batch, tgt_len, dim]` (or one step `[batch, dim]`).
        memory_bank: `[batch, src_len, dim]`.
        weights: The module's parameters by PyTorch name: `linear_in.weight` (general);
            `linear_context.weight`, `linear_query.weight`, `linear_query.bias`, `v.weight`
            (mlp); `linear_out.weight` and, for mlp, `linear_out.bias`.
        attn_type: "dot", "general" or "mlp".
        src_len: Optional lengths `[batch]` (positions past them are masked with −inf).
        attn_func: "softmax" or "sparsemax".

    Returns:
        `(attn_h, align_vectors)`: `[batch, tgt_len, dim]` and `[batch, tgt_len, src_len]`.
    """
    source = np.asarray(source, np.float64)
    memory_bank = np.asarray(memory_bank, np.float64)
    one_step = source.ndim == 2
    if one_step:
        source = source[:, None]
    batch, source_l, dim = memory_bank.shape
    _, target_l, _ = source.shape

    # score(h_t, h_s)
    h_t, h_s = source, memory_bank
    if attn_type in ("general", "dot"):
        if attn_type == "general":
            h_t = _linear(h_t.reshape(batch * target_l, dim), weights["linear_in.weight"])
            h_t = h_t.reshape(batch, target_l, dim)
        align = h_t @ np.swapaxes(h_s, 1, 2)
    else:
        wq = _linear(
            h_t.reshape(-1, dim), weights["linear_query.weight"], weights["linear_query.bias"]
        ).reshape(batch, target_l, 1, dim)
        uh = _linear(h_s.reshape(-1, dim), weights["linear_context.weight"])
        uh = uh.reshape(batch, 1, source_l, dim)
        wquh = np.tanh(wq + uh)
        align = _linear(wquh.reshape(-1, dim), weights["v.weight"]).reshape(
            batch, target_l, source_l
        )

    if src_len is not None:
        mask = np.arange(source_l)[None, :] < np.asarray(src_len)[:, None]  # sequence_mask
        align = np.where(mask[:, None, :], align, -np.inf)

    flat = align.reshape(batch * target_l, source_l)
    if attn_func == "softmax":
        align_vectors = _softmax(flat, -1)
    else:
        align_vectors = opennmt_sparsemax(flat, -1)
    align_vectors = align_vectors.reshape(batch, target_l, source_l)

    c = align_vectors @ memory_bank
    concat_c = np.concatenate([c, source], axis=2).reshape(batch * target_l, dim * 2)
    attn_h = _linear(concat_c, weights["linear_out.weight"], weights.get("linear_out.bias"))
    attn_h = attn_h.reshape(batch, target_l, dim)
    if attn_type in ("general", "dot"):
        attn_h = np.tanh(attn_h)
    if one_step:
        return attn_h[:, 0], align_vectors[:, 0]
    return attn_h, align_vectors


# ------------------------------------------------------------------ Tacotron 2
def tacotron2_location_layer(attention_weights_cat, conv_weight, dense_weight):
    """`LocationLayer.forward`: `Conv1d(2, n_filters, K, padding=(K − 1) // 2, bias=False)` on
    `[B, 2, S]`, transposed to `[B, S, n_filters]`, then `Linear(n_filters, attention_dim,
    bias=False)`."""
    x = np.asarray(attention_weights_cat, np.float64)  # [B, C, S]
    conv_weight = np.asarray(conv_weight, np.float64)  # [F, C, K]
    filters, channels, size = conv_weight.shape
    padding = int((size - 1) / 2)
    batch, _, steps = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    out_steps = steps + 2 * padding - size + 1
    conv = np.zeros((batch, filters, out_steps))
    for b in range(batch):
        for f in range(filters):
            for i in range(out_steps):
                conv[b, f, i] = np.sum(padded[b, :, i : i + size] * conv_weight[f])
    processed = np.swapaxes(conv, 1, 2)  # [B, S, F]
    return _linear(processed, dense_weight)


def tacotron2_attention_step(query, memory, attention_weights_cat, weights, mask=None):
    """`Attention.forward(attention_hidden_state, memory, processed_memory,
    attention_weights_cat, mask)` with `processed_memory = memory_layer(memory)`.

    Args:
        query: The attention RNN's output `[B, attention_rnn_dim]`.
        memory: The encoder outputs `[B, S, embedding_dim]`.
        attention_weights_cat: `[B, 2, S]`: the previous and the cumulative weights.
        weights: By PyTorch name: `query_layer.weight` `[attention_dim, attention_rnn_dim]`,
            `memory_layer.weight` `[attention_dim, embedding_dim]`, `v.weight`
            `[1, attention_dim]`, `location_layer.location_conv.weight` `[F, 2, K]`,
            `location_layer.location_dense.weight` `[attention_dim, F]`.
        mask: Optional boolean `[B, S]`, true on *padding* (Tacotron's `~get_mask_from_lengths`).

    Returns:
        `(attention_context [B, embedding_dim], attention_weights [B, S], energies [B, S])`.
    """
    memory = np.asarray(memory, np.float64)
    processed_memory = _linear(memory, weights["memory_layer.weight"])
    # get_alignment_energies
    processed_query = _linear(np.asarray(query, np.float64)[:, None], weights["query_layer.weight"])
    processed_attention_weights = tacotron2_location_layer(
        attention_weights_cat,
        weights["location_layer.location_conv.weight"],
        weights["location_layer.location_dense.weight"],
    )
    energies = _linear(
        np.tanh(processed_query + processed_attention_weights + processed_memory),
        weights["v.weight"],
    )[..., 0]
    alignment = energies if mask is None else np.where(mask, -np.inf, energies)
    attention_weights = _softmax(alignment, 1)
    attention_context = (attention_weights[:, None] @ memory)[:, 0]
    return attention_context, attention_weights, energies


def tacotron2_attention(queries, memory, weights, mask=None):
    """The decoder's attention over T steps from zero initial weights (`initialize_decoder_states`;
    `attention_weights_cum += attention_weights` after each step).

    Returns:
        `(contexts [B, T, embedding_dim], alignments [B, T, S], energies [B, T, S])`.
    """
    queries = np.asarray(queries, np.float64)
    batch, steps, _ = queries.shape
    length = np.asarray(memory).shape[1]
    attention_weights = np.zeros((batch, length))
    attention_weights_cum = np.zeros((batch, length))
    contexts, alignments, energies = [], [], []
    for t in range(steps):
        attention_weights_cat = np.stack([attention_weights, attention_weights_cum], axis=1)
        context, attention_weights, energy = tacotron2_attention_step(
            queries[:, t], memory, attention_weights_cat, weights, mask
        )
        attention_weights_cum = attention_weights_cum + attention_weights
        contexts.append(context)
        alignments.append(attention_weights)
        energies.append(energy)
    return np.stack(contexts, 1), np.stack(alignments, 1), np.stack(energies, 1)
