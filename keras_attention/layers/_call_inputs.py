"""Parsing and checking of the attention layers' call forms. Private."""

from __future__ import annotations

from typing import Any

from keras import ops

from keras_attention._validation import (
    broadcasts,
    check_mask,
    check_rank,
    dtype_name,
    is_integer,
)


def check_list_length(layer: str, n: int) -> None:
    # Keras' wording (`keras.layers.Attention`), so that a port of its tests and its users'
    # searches find the same words; with the layer's name and the value received.
    if n not in (2, 3):
        raise ValueError(
            f"Layer {layer} accepts an inputs list of length 2 or 3, namely [query, value] or "
            f"[query, value, key]. Received: a list of {n} inputs"
        )


def check_ranks(layer: str, query_shape, value_shape, key_shape, nd: bool) -> None:
    """The ranks of a call: a query `[B, T, d]` (or one step `[B, d]`) and a memory
    `[B, S, d]`; with `nd`, also queries `[*batch, T, d]` of rank > 3 (as
    `keras.layers.Attention`) over a memory of the same rank and the same leading axes."""
    rank = len(query_shape)
    if rank <= 3 or not nd:
        if nd and rank < 2:
            raise ValueError(
                f"`query` of layer {layer} must have rank 2 or more ([batch, dim], [batch, "
                f"steps, dim] or [*batch, steps, dim]). Received: query.shape={tuple(query_shape)}"
            )
        check_rank(layer, "query", query_shape, (2, 3))
        check_rank(layer, "value", value_shape, (3,))
        check_rank(layer, "key", key_shape, (3,))
        return
    for name, shape in (("value", value_shape), ("key", key_shape)):
        if len(shape) != rank:
            raise ValueError(
                f"`{name}` of layer {layer} must have the rank of `query` ({rank}: [*batch, "
                f"steps, dim], the batch axes shared) when the query has rank > 3. Received: "
                f"query.shape={tuple(query_shape)}, {name}.shape={tuple(shape)}"
            )
        lead, their_lead = tuple(query_shape[:-2]), tuple(shape[:-2])
        if any(a is not None and b is not None and a != b for a, b in zip(lead, their_lead)):
            raise ValueError(
                f"`query` and `{name}` of layer {layer} must have the same leading (batch) "
                f"axes. Received: query.shape={tuple(query_shape)}, "
                f"{name}.shape={tuple(shape)}"
            )


def raise_list_and_tensors(layer: str) -> None:
    raise ValueError(
        f"Layer {layer}: pass either a list [query, value(, key)] or separate tensors, not "
        "both. Received: a list and value/key arguments"
    )


def check_positions(layer: str, positions, query_shape: Any) -> None:
    """`query_positions` must be integer and broadcast to the queries' `[B, T]` (or `[B]`)."""
    if positions is None:
        return
    if isinstance(positions, (str, bytes)) or not hasattr(positions, "shape"):
        if is_integer(positions):
            return
        raise ValueError(
            f"Layer {layer}: `query_positions` must be integer step indices (a tensor "
            f"[batch, steps], [batch] or a scalar). Received: query_positions={positions!r}"
        )
    dtype = dtype_name(positions)
    if not dtype.startswith(("int", "uint")):
        raise ValueError(
            f"Layer {layer}: `query_positions` must be integer step indices. Received: "
            f"query_positions.dtype={dtype}"
        )
    expected = tuple(query_shape[:-1])
    shape = tuple(positions.shape)
    if len(expected) == 1 and len(shape) == 2 and shape[-1] in (1, None):
        shape = shape[:1]  # one position per single-step query, [B, 1]
    if not broadcasts(shape, expected):
        raise ValueError(
            f"Layer {layer}: `query_positions` must broadcast to the queries' {expected} "
            f"([batch, steps] or [batch]). Received: query_positions.shape={shape}"
        )


def _describe(masks) -> str:
    """A mask argument as an error shows it: tensors by their shape, not their values."""
    if isinstance(masks, (list, tuple)):
        return "[" + ", ".join(_describe(m) for m in masks) + "]"
    if hasattr(masks, "shape"):
        return f"<{dtype_name(masks)} tensor of shape {tuple(masks.shape)}>"
    return repr(masks)


def _unpack_masks(layer: str, masks, query_mask, value_mask, key_mask):
    """Fill the explicit masks not given from a list `[query_mask, value_mask(, key_mask)]`."""
    if masks is None:
        return query_mask, value_mask, key_mask
    if not isinstance(masks, (list, tuple)):
        raise ValueError(
            f"Layer {layer}: the layer mask must be a list, namely [query_mask, value_mask] "
            f"or [query_mask, value_mask, key_mask] (None for no mask). Received: "
            f"mask={_describe(masks)}"
        )
    if len(masks) not in (2, 3):  # as Keras: [query_mask] alone would drop the value mask
        raise ValueError(
            f"Layer {layer} accepts a mask list of length 2 or 3, namely [query_mask, "
            f"value_mask] or [query_mask, value_mask, key_mask]. Received: a list of "
            f"{len(masks)} masks, mask={_describe(masks)}"
        )
    masks = list(masks) + [None] * (3 - len(masks))
    return (
        masks[0] if query_mask is None else query_mask,
        masks[1] if value_mask is None else value_mask,
        masks[2] if key_mask is None else key_mask,
    )


def parse_call_inputs(
    layer: str,
    query,
    value,
    key,
    *,
    mask,
    query_mask,
    value_mask,
    key_mask,
    use_causal_mask: bool,
    nd: bool = False,
):
    """Bring every call form to `(query, value, key, query_mask, memory_mask, pooling)`.

    `memory_mask` combines `value_mask` and `key_mask`; `pooling` is true for the single-sequence
    form, where `value` is the sequence itself and the query is still to be picked. With `nd`,
    queries of rank > 3 are accepted (`check_ranks`); `flatten_batch` then brings them to 3.
    """
    pooling = False
    if isinstance(query, (list, tuple)):
        if value is not None or key is not None:
            raise_list_and_tensors(layer)
        check_list_length(layer, len(query))
        if isinstance(query_mask, (list, tuple)):
            # Keras fills `query_mask` with the list of input masks whenever another tensor
            # argument (`mask`, `query_positions`) is passed alongside the list.
            mask = query_mask if mask is None else mask
            query_mask = None
        query, value, key = list(query) + [None] * (3 - len(query))
        query_mask, value_mask, key_mask = _unpack_masks(
            layer, mask, query_mask, value_mask, key_mask
        )
    elif value is None:
        if key is not None:
            raise ValueError(
                f"Layer {layer}: `key` was given without `value`. Received: value=None"
            )
        if use_causal_mask:
            raise ValueError(
                f"Layer {layer}: `use_causal_mask=True` needs a sequence of queries; for "
                "self-attention call the layer as layer([x, x]). Received: a single input "
                "(attention pooling)"
            )
        pooling = True
        value = query
        if value_mask is None and not isinstance(mask, (list, tuple)):
            value_mask = mask
    elif isinstance(mask, (list, tuple)):
        query_mask, value_mask, key_mask = _unpack_masks(
            layer, mask, query_mask, value_mask, key_mask
        )

    key = value if key is None else key
    check_ranks(layer, query.shape, value.shape, key.shape, nd and not pooling)
    if None not in (key.shape[-2], value.shape[-2]) and key.shape[-2] != value.shape[-2]:
        raise ValueError(
            "`key` and `value` must have the same number of steps. Received: "
            f"key.shape={tuple(key.shape)}, value.shape={tuple(value.shape)}"
        )
    check_mask("value_mask", value_mask, value, "value")
    check_mask("key_mask", key_mask, key, "key")
    if pooling:
        query_mask = None
    else:
        check_mask("query_mask", query_mask, query, "query")
    if key_mask is not None:
        key_mask = ops.cast(key_mask, "bool")
        value_mask = (
            key_mask
            if value_mask is None
            else ops.logical_and(ops.cast(value_mask, "bool"), key_mask)
        )
    return query, value, key, query_mask, value_mask, pooling


def flatten_batch(query, value, key, query_mask, value_mask, query_positions):
    """Queries `[*batch, T, d]` of rank > 3 and their memory `[*batch, S, d]` as one batch axis.

    Returns `(query, value, key, query_mask, value_mask, query_positions, batch_shape)`: the
    tensors `[prod(batch), ...]` and the leading axes, for `unflatten_batch`. Masks and
    positions broadcast to the queries' `[*batch, T]` / the memory's `[*batch, S]` first.
    """
    query_dims = ops.shape(query)
    batch_shape = tuple(query_dims[:-2])
    steps = query_dims[-2]

    def rows(x):  # [*batch, n, ...] -> [prod(batch), n, ...]
        return None if x is None else ops.reshape(x, (-1, *ops.shape(x)[len(batch_shape) :]))

    if query_positions is not None:
        query_positions = ops.cast(query_positions, "int32") + ops.zeros(
            (*batch_shape, steps), "int32"
        )
    return (
        rows(query),
        rows(value),
        rows(key),
        rows(query_mask),
        rows(value_mask),
        rows(query_positions),
        batch_shape,
    )


def unflatten_batch(x, batch_shape):
    """`x` `[prod(batch), ...]` back to `[*batch, ...]` (`flatten_batch`'s inverse)."""
    return None if x is None else ops.reshape(x, (*batch_shape, *ops.shape(x)[1:]))
