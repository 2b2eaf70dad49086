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
    if n not in (2, 3):
        raise ValueError(
            f"Layer {layer} expects a list of 2 tensors [query, value] or 3 tensors "
            f"[query, value, key]. Received: a list of {n} inputs"
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


def _unpack_masks(layer: str, masks, query_mask, value_mask, key_mask):
    """Fill the explicit masks not given from a list `[query_mask, value_mask(, key_mask)]`."""
    if masks is None:
        return query_mask, value_mask, key_mask
    if not isinstance(masks, (list, tuple)) or len(masks) > 3:
        raise ValueError(
            f"Layer {layer}: `mask` must be a list with one mask (or None) per input. "
            f"Received: mask={masks!r}"
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
):
    """Bring every call form to `(query, value, key, query_mask, memory_mask, pooling)`.

    `memory_mask` combines `value_mask` and `key_mask`; `pooling` is true for the single-sequence
    form, where `value` is the sequence itself and the query is still to be picked.
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
    check_rank(layer, "query", query.shape, (2, 3))
    check_rank(layer, "value", value.shape, (3,))
    check_rank(layer, "key", key.shape, (3,))
    if None not in (key.shape[1], value.shape[1]) and key.shape[1] != value.shape[1]:
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
