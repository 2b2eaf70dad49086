"""Local attention windows (Luong et al., 2015, §3.2) with a static window of 2D+1 positions.

Everything here is O(T·(2D+1)) per row: windows are gathered, never cut out of a full `[T, S]`
score matrix. Rounding is half-up: `round(p) = floor(p + 0.5)`.
"""

from __future__ import annotations

from keras import ops

from keras_attention.functional._checks import check_min_rank, check_radius
from keras_attention.functional.scores import matmul
from keras_attention.functional.softmax import masked_softmax, wide_float_dtype

__all__ = [
    "valid_lengths",
    "gather_positions",
    "window_dot_scores",
    "window_weighted_sum",
    "window_positions",
    "window_validity",
    "gaussian_window",
    "expand_window_weights",
    "last_valid_positions",
    "block_size",
    "blocked_window_attention",
    "tile_sizes",
    "tiled_window_attention",
]


def valid_lengths(mask):
    """Number of valid memory positions per row, int32 `[B]`, from a boolean mask `[B, S]`."""
    return ops.sum(ops.cast(mask, "int32"), axis=-1)


def gather_positions(memory, positions):
    """Gather `memory[b, positions[b, ...]]`, positions clipped into `[0, S)`.

    Args:
        memory: `[B, S, ...]`.
        positions: Integer `[B, ...]`.

    Returns:
        `[B, *positions.shape[1:], *memory.shape[2:]]`.

    Example:

    >>> import numpy as np
    >>> m = np.arange(6.0).reshape(1, 3, 2)
    >>> np.asarray(gather_positions(m, np.array([[[2, 0, 5]]]))).tolist()
    [[[[4.0, 5.0], [0.0, 1.0], [4.0, 5.0]]]]
    """
    check_min_rank("memory", memory, 2)
    shape = ops.shape(memory)
    batch, length = shape[0], shape[1]
    rest = tuple(memory.shape[2:])
    positions = ops.clip(ops.cast(positions, "int32"), 0, length - 1)
    offsets = ops.arange(batch, dtype="int32") * ops.cast(length, "int32")
    offsets = ops.reshape(offsets, (-1,) + (1,) * (len(positions.shape) - 1))
    flat = ops.reshape(memory, (-1,) + rest)
    return ops.take(flat, positions + offsets, axis=0)


def _lanes(dim: int) -> int:
    """Width of the inner axis `window_dot_scores` splits the feature axis into (8 if it can)."""
    for lanes in (8, 4, 2):
        if dim % lanes == 0:
            return lanes
    return 1


def window_dot_scores(query, keys, positions):
    """`query[b, t] · keys[b, positions[b, t, w]]`, `[B, T, W]`, written for XLA to fuse.

    The same numbers as `dot_scores(query, gather_positions(keys, positions))` (to float32
    round-off), but as a gather, a product and two sums that XLA compiles into one loop over
    the memory: the `[B, T, W, d]` windows are never written out. The feature axis is split as
    `d = (d / L) · L` (`L = 8` lanes when `d` allows) and summed over the `d / L` axis first, so
    the inner loop runs over `L` adjacent floats (one vector register) instead of a horizontal
    sum over `d`, faster than the einsum over gathered windows on CPU (see BENCHMARKS.md §2).
    Without XLA (TensorFlow graphs, PyTorch), and
    under JAX's XLA, which writes its gathers out, the product is materialised and the einsum
    is faster: `LocalAttentionBase` chooses.

    Args:
        query: `[B, T, d]`.
        keys: The memory `[B, S, d]`.
        positions: Integer `[B, T, W]` (clipped into `[0, S)` as by `gather_positions`).

    Returns:
        `[B, T, W]`, float32 (float64 for float64 inputs), as `dot_scores`.

    Example:

    >>> import numpy as np
    >>> q = np.array([[[1.0, 2.0]]]); k = np.array([[[3.0, 4.0], [1.0, 0.0]]])
    >>> np.asarray(window_dot_scores(q, k, np.array([[[1, 0, 1]]]))).tolist()
    [[[1.0, 11.0, 1.0]]]
    """
    check_min_rank("query", query, 3)
    check_min_rank("keys", keys, 3)
    dim = query.shape[-1]
    if dim is None or keys.shape[-1] != dim:
        raise ValueError(
            "window_dot_scores: `query` and `keys` need the same static last axis. "
            f"Received: query.shape={query.shape}, keys.shape={keys.shape}"
        )
    dtype = wide_float_dtype(query.dtype)
    lanes = _lanes(dim)
    split = (dim // lanes, lanes)
    query = ops.cast(query, dtype)
    query = ops.reshape(query, tuple(ops.shape(query)[:2]) + (1,) + split)  # [B, T, 1, d/L, L]
    keys = ops.cast(keys, dtype)
    keys = ops.reshape(keys, tuple(ops.shape(keys)[:2]) + split)  # [B, S, d/L, L]
    partial = ops.sum(query * gather_positions(keys, positions), axis=3)  # [B, T, W, L]
    return ops.sum(partial, axis=-1)


def window_weighted_sum(weights, values, positions):
    """`Σ_w weights[b, t, w] · values[b, positions[b, t, w]]`, `[B, T, d_v]`, for XLA to fuse.

    The same numbers as `einsum("btw,btwd->btd", weights, gather_positions(values, positions))`
    to float32 round-off, written as a gather, a product and a sum over the window axis, which
    XLA compiles into one loop without writing the `[B, T, W, d_v]` windows out.

    Args:
        weights: `[B, T, W]` (cast to the dtype of `values`).
        values: `[B, S, d_v]`.
        positions: Integer `[B, T, W]`.

    Returns:
        `[B, T, d_v]` in the dtype of `values`.

    Example:

    >>> import numpy as np
    >>> v = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    >>> np.asarray(window_weighted_sum(np.array([[[0.5, 0.5]]]), v, np.array([[[0, 1]]]))).tolist()
    [[[2.0, 3.0]]]
    """
    weights = ops.cast(weights, values.dtype)
    total = ops.sum(ops.expand_dims(weights, -1) * gather_positions(values, positions), axis=2)
    return ops.where(ops.any(ops.not_equal(weights, 0), axis=-1, keepdims=True), total, 0)


def window_positions(center, radius: int):
    """Integer positions `center - D ... center + D`, `[B, T] -> [B, T, 2D+1]`."""
    check_radius(radius, 0)
    offsets = ops.arange(-radius, radius + 1, dtype="int32")
    return ops.expand_dims(ops.cast(center, "int32"), -1) + offsets


def window_validity(positions, length, mask=None, query_positions=None):
    """Which window positions are real memory: `0 <= i < S`, `mask[b, i]`, and (causal) `i <= t`.

    Args:
        positions: Integer `[B, T, W]`.
        length: Padded memory length `S`.
        mask: Optional boolean `[B, S]`. Defaults to `None`.
        query_positions: Optional integer `[B, T]`; when given, positions after the query's
            own step are invalid (causal attention). Defaults to `None`.

    Returns:
        Boolean `[B, T, W]`.
    """
    positions = ops.cast(positions, "int32")
    valid = ops.logical_and(positions >= 0, positions < length)
    if mask is not None:
        valid = ops.logical_and(valid, gather_positions(ops.cast(mask, "bool"), positions))
    if query_positions is not None:
        valid = ops.logical_and(
            valid, positions <= ops.expand_dims(ops.cast(query_positions, "int32"), -1)
        )
    return valid


def gaussian_window(positions, center, radius: int):
    """`exp(-(i - p_t)^2 / (2 sigma^2))` with `sigma = D / 2`, `[B, T, W]`, float32 or float64.

    Gradients flow to the (real-valued) predicted position `center` `[B, T]`.
    """
    check_radius(radius, 1)  # sigma = 0 would divide by zero
    sigma = radius / 2.0
    center = ops.convert_to_tensor(center)
    dtype = wide_float_dtype(center.dtype)
    distance = ops.cast(positions, dtype) - ops.expand_dims(ops.cast(center, dtype), -1)
    return ops.exp(-ops.square(distance) / (2.0 * sigma * sigma))


def expand_window_weights(weights, start, length):
    """Lay window weights `[B, T, W]` (window starting at `start` `[B, T]`) out over `[B, T, S]`.

    Position `s` takes window slot `s - start` when that slot exists, else 0. Costs O(T·S): only
    used when the caller asks for the full alignment matrix.
    """
    width = weights.shape[-1]
    start = ops.cast(start, "int32")
    slots = ops.arange(length, dtype="int32") - ops.expand_dims(start, -1)
    inside = ops.logical_and(slots >= 0, slots < width)
    # A flat `take` rather than `take_along_axis`: TensorFlow's broadcasts the indices, and the
    # gradient of that broadcast inside a while loop is rejected by XLA for dynamic batches.
    rows = ops.reshape(ops.arange(ops.size(start), dtype="int32") * width, ops.shape(start))
    index = ops.expand_dims(rows, -1) + ops.clip(slots, 0, width - 1)
    gathered = ops.take(ops.reshape(weights, (-1,)), index)
    return ops.where(inside, gathered, 0.0)


def last_valid_positions(mask):
    """Index of the last valid step of each row, int32 `[B]` (0 for a row with none).

    Args:
        mask: Boolean `[B, S]`.
    """
    steps = ops.arange(ops.shape(mask)[-1], dtype="int32")
    last = ops.max(ops.where(ops.cast(mask, "bool"), steps, -ops.ones_like(steps)), axis=-1)
    return ops.maximum(last, 0)


def _row_counts(ids, rows, bins: int):
    """Per-row histogram: int32 `[B, bins]` counts of the integers `ids` `[B, N]` in `[0, bins)`."""
    flat = ops.reshape(ids + rows * bins, (-1,))
    ones = ops.ones(ops.shape(flat), "int32")
    counts = ops.segment_sum(ones, flat, num_segments=ops.shape(ids)[0] * bins)
    return ops.reshape(ops.cast(counts, "int32"), (-1, bins))


def _take_rows(x, index):
    """`x[b, index[b, ...]]` for `x` `[B, N, ...]` and in-range integer `index` `[B, ...]`."""
    shape = ops.shape(x)
    rest = tuple(x.shape[2:])
    offsets = ops.arange(shape[0], dtype="int32") * ops.cast(shape[1], "int32")
    offsets = ops.reshape(offsets, (-1,) + (1,) * (len(index.shape) - 1))
    return ops.take(ops.reshape(x, (-1,) + rest), index + offsets, axis=0)


def tile_sizes(length: int, radius: int, dim: int) -> tuple[int, int]:
    """Queries per tile `Q` and keys per chunk `C` for `tiled_window_attention`.

    A tile scores `Q` queries against `C + 2D` keys in one small matmul. Larger tiles make
    better matmuls but score more positions outside the windows (`(C + 2D) / (2D + 1)` per
    query, plus the empty slots: at most `T/Q + S/C` tiles are laid out). `C` is a multiple of
    8 near `2D + 1` (at least 16); `Q` matches it, and is halved for wide keys (`d > 128`), where
    the matmuls are efficient already at small sizes.
    """
    del length
    chunk = max(16, -(-(2 * radius + 1) // 8) * 8)
    queries = chunk if dim <= 128 else max(8, chunk // 2)
    return queries, chunk


def tiled_window_attention(
    query,
    keys,
    values,
    center,
    radius: int,
    *,
    mask=None,
    query_positions=None,
    predicted=None,
    score_fn=None,
    centers_sorted: bool = False,
    return_window_weights: bool = False,
    queries_per_tile: int | None = None,
    keys_per_chunk: int | None = None,
):
    """Local dot-product attention without gathering a window per query.

    The same numbers as gathering the windows `center - D ... center + D` (`window_positions`,
    `gather_positions`), scoring them with `query · key`, a masked softmax over the valid window
    positions (`window_validity`), the Gaussian of `predicted` when given, and the weighted sum
    of the values — but computed in tiles: the key axis is cut into chunks of `C` positions;
    the queries, sorted by centre, are grouped by the chunk their centre falls in, `Q` at a
    time; each tile scores its (up to) `Q` queries against the one contiguous span of `C + 2D`
    keys that covers all their windows as one batched matmul, and masks what lies outside each
    query's window. At most `ceil(T/Q) + S//C + 1` tiles exist, a static bound, so shapes stay
    static (XLA) and the work is O(T + S) per row whatever the centres are; the gradient
    scatters `[tiles, C + 2D, d]` key spans, not `[T, 2D+1, d]` windows.

    Args:
        query: Query features `[B, T, d]`.
        keys: `[B, S, d]` (static `S`).
        values: `[B, S, d_v]` (may be `keys`).
        center: Integer window centres `[B, T]` in `[0, S]`.
        radius: `D`.
        mask: Optional boolean `[B, S]`.
        query_positions: Optional integer `[B, T]`: causal, keys after it are invalid.
        predicted: Optional real centres `[B, T]` (local-p): weights times the Gaussian.
        score_fn: Optional function applied to the float32 scores (e.g. a learned scale).
        centers_sorted: The centres are known to be nondecreasing along `T` (local-m with the
            default positions): skips the sort.
        return_window_weights: Also return the window weights `[B, T, 2D+1]`.
        queries_per_tile, keys_per_chunk: `Q` and `C`; default from `tile_sizes`.

    Returns:
        `(context [B, T, d_v] in the dtype of values, window weights [B, T, 2D+1] or None)`.
    """
    length, dim = keys.shape[1], query.shape[-1]
    steps = query.shape[1]
    q_tile, chunk = tile_sizes(length, radius, dim)
    q_tile, chunk = queries_per_tile or q_tile, keys_per_chunk or chunk
    span = chunk + 2 * radius
    n_chunks = length // chunk + 1  # centre S (local-p, sigmoid -> 1) falls in the last
    n_tiles = steps // q_tile + n_chunks
    batch = ops.shape(query)[0]
    center = ops.cast(center, "int32")
    dtype = wide_float_dtype(query.dtype)

    # Bookkeeping, all integer: sorted order, chunk of each query, tile slot of each query.
    if centers_sorted:
        order = ops.zeros((batch, steps), "int32") + ops.arange(steps, dtype="int32")
        sorted_center = center
    else:
        order = ops.cast(ops.argsort(center, axis=-1), "int32")
        sorted_center = _take_rows(center, order)
    rows = ops.expand_dims(ops.arange(batch, dtype="int32"), -1)
    sorted_chunk = sorted_center // chunk  # [B, T], nondecreasing along T
    counts = _row_counts(sorted_chunk, rows, n_chunks)  # queries per chunk [B, NC]
    first = ops.cumsum(counts, axis=-1) - counts  # sorted position of each chunk's first query
    # Every chunk gets max(1, ceil(n / Q)) consecutive tiles: at most T/Q + NC in all. The
    # one tile of an empty chunk keeps the starts strictly increasing, so a running count of
    # the starts names the chunk of every tile without a search.
    tiles = ops.maximum((counts + q_tile - 1) // q_tile, 1)
    tile_start = ops.cumsum(tiles, axis=-1) - tiles  # [B, NC]
    tile_chunk = ops.cumsum(_row_counts(tile_start, rows, n_tiles), axis=-1) - 1  # [B, NT]
    tile_rank = ops.arange(n_tiles, dtype="int32") - _take_rows(tile_start, tile_chunk)
    rank = ops.expand_dims(tile_rank * q_tile, -1) + ops.arange(q_tile, dtype="int32")  # [B, NT, Q]
    filled = rank < ops.expand_dims(_take_rows(counts, tile_chunk), -1)
    sorted_index = ops.minimum(ops.expand_dims(_take_rows(first, tile_chunk), -1) + rank, steps - 1)
    slot_query = _take_rows(order, sorted_index)  # original query index of each slot
    # The slot of each query: its chunk's first tile · Q + its rank among the chunk's queries.
    sorted_rank = ops.arange(steps, dtype="int32") - _take_rows(first, sorted_chunk)
    sorted_slot = _take_rows(tile_start, sorted_chunk) * q_tile + sorted_rank
    if centers_sorted:
        query_slot = sorted_slot
    else:
        # query_slot[order[i]] = sorted_slot[i]: the inverse permutation by a scatter of the
        # integers (half the time of a second argsort under XLA on CPU).
        flat_rows = ops.reshape(ops.broadcast_to(rows, (batch, steps)), (-1,))
        index = ops.stack([flat_rows, ops.reshape(order, (-1,))], axis=-1)
        query_slot = ops.scatter(index, ops.reshape(sorted_slot, (-1,)), (batch, steps))

    # Tiles: queries [B, NT, Q, d], key spans [B, NT, C + 2D, d].
    tile_query = ops.cast(_take_rows(query, slot_query), dtype)
    tile_center = ops.expand_dims(_take_rows(center, slot_query), -1)  # [B, NT, Q, 1]
    positions = ops.expand_dims(tile_chunk * chunk - radius, -1) + ops.arange(span, dtype="int32")
    span_keys = gather_positions(keys, positions)  # [B, NT, K, d]
    span_values = span_keys if values is keys else gather_positions(values, positions)
    key_positions = ops.expand_dims(positions, 2)  # [B, NT, 1, K]
    valid = window_validity(key_positions, length, None if mask is None else mask)
    valid = ops.logical_and(valid, ops.abs(key_positions - tile_center) <= radius)
    valid = ops.logical_and(valid, ops.expand_dims(filled, -1))
    if query_positions is not None:
        tile_position = _take_rows(ops.cast(query_positions, "int32"), slot_query)
        valid = ops.logical_and(valid, key_positions <= ops.expand_dims(tile_position, -1))
    # The products run on [B * NT] matrices (XLA on CPU: 1.1-1.3x faster than two batch axes).
    flat_keys = ops.reshape(ops.cast(span_keys, dtype), (-1, span, dim))
    scores = matmul(ops.reshape(tile_query, (-1, q_tile, dim)), ops.transpose(flat_keys, (0, 2, 1)))
    scores = ops.reshape(scores, (batch, n_tiles, q_tile, span))
    if score_fn is not None:
        scores = score_fn(scores)
    weights = masked_softmax(scores, valid)  # [B, NT, Q, K]
    if predicted is not None:
        tile_predicted = _take_rows(predicted, slot_query)
        weights = weights * gaussian_window(key_positions, tile_predicted, radius)
    context = matmul(
        ops.reshape(ops.cast(weights, span_values.dtype), (-1, q_tile, span)),
        ops.reshape(span_values, (-1, span, values.shape[-1])),
    )  # [B * NT, Q, d_v]
    flat_context = ops.reshape(context, (batch, n_tiles * q_tile, values.shape[-1]))
    context = _take_rows(flat_context, query_slot)
    if not return_window_weights:
        return context, None
    width = 2 * radius + 1
    # The window of query t starts at slot offset (center - D) - (chunk start - D) = center % C.
    flat_weights = ops.reshape(weights, (batch, n_tiles * q_tile * span))
    index = ops.expand_dims(query_slot * span + center % chunk, -1) + ops.arange(
        width, dtype="int32"
    )
    return context, _take_rows(flat_weights, index)


def block_size(radius: int) -> int:
    """Queries per block `Q` of `blocked_window_attention`: `max(32, 2D)` rounded up to 8.

    A block scores `Q` queries against `Q + 2D` keys: larger blocks make better matmuls but
    score `(Q + 2D) / (2D + 1)` positions per query; the floor of 32 was chosen by measurement
    on CPU (see BENCHMARKS.md §2).
    """
    return max(32, -(-(2 * radius) // 8) * 8)


def _blocks(x, radius: int, n_blocks: int, block: int):
    """Overlapping spans of `x` `[B, S, ...]`: block k holds positions `kQ - D ... kQ + Q + D - 1`.

    Built from static pads, reshapes and one concatenation (positions outside `[0, S)` are
    zero), so the gradient is static slices and adds, no scatter. Returns `[B, n, Q + 2D, ...]`.
    """
    length = x.shape[1]
    rest = tuple(x.shape[2:])
    used = min(length, n_blocks * block + radius)
    x = x[:, :used]
    pad = [[0, 0], [radius, (n_blocks + 1) * block - radius - used]] + [[0, 0]] * len(rest)
    chunks = ops.reshape(ops.pad(x, pad), (-1, n_blocks + 1, block, *rest))
    if radius == 0:
        return chunks[:, :-1]
    return ops.concatenate([chunks[:, :-1], chunks[:, 1:, : 2 * radius]], axis=2)


def blocked_window_attention(
    query,
    keys,
    values,
    radius: int,
    *,
    mask=None,
    causal: bool = False,
    score_fn=None,
    return_window_weights: bool = False,
    block: int | None = None,
):
    """Local-m dot-product attention (`p_t = min(t, S_b - 1)`) in blocks of consecutive queries.

    The same numbers as gathering the windows `p_t - D ... p_t + D`, scoring `query · key`, a
    masked softmax over the valid positions and the weighted sum of the values. Consecutive
    queries have overlapping windows: the `Q` queries `kQ ... kQ + Q - 1` need exactly the keys
    `kQ - D ... kQ + Q + D - 1`, one contiguous span, so a block is one `[Q, d] x [d, Q + 2D]`
    matmul whose entries outside each query's band are masked. No window is gathered and no
    gradient scatters. A query past its row's valid length `S_b` has its window clipped to
    `S_b - 1 ± D`; those windows (one per row) are scored separately when a mask is given or
    `T > S`, and selected with `where`.

    Args:
        query: Query features `[B, T, d]` (static `T`), query step t at index t.
        keys: `[B, S, d]` (static `S`).
        values: `[B, S, d_v]` (may be `keys`).
        radius: `D`.
        mask: Optional boolean `[B, S]`.
        causal: Keys after the query's own step are invalid.
        score_fn: Optional function applied to the float32 scores.
        return_window_weights: Also return the window weights `[B, T, 2D+1]`.
        block: `Q` (at least `2D`); defaults to `block_size(radius)`.

    Returns:
        `(context [B, T, d_v] in the dtype of values, window weights [B, T, 2D+1] or None)`.
    """
    steps, length = query.shape[1], keys.shape[1]
    block = block or block_size(radius)
    if block < 2 * radius:
        raise ValueError(f"`block` must be at least 2 * radius. Received: block={block!r}")
    n_blocks = -(-steps // block)
    span = block + 2 * radius
    width = 2 * radius + 1
    dtype = wide_float_dtype(query.dtype)
    batch = ops.shape(query)[0]

    padded = ops.pad(query, [[0, 0], [0, n_blocks * block - steps], [0, 0]])
    block_query = ops.cast(ops.reshape(padded, (-1, n_blocks, block, query.shape[-1])), dtype)
    span_keys = ops.cast(_blocks(keys, radius, n_blocks, block), dtype)  # [B, n, K, d]
    span_values = _blocks(values, radius, n_blocks, block)  # in the dtype of the values
    row = ops.arange(block, dtype="int32")[:, None]  # i
    col = ops.arange(span, dtype="int32")[None, :]  # j: position kQ - D + j
    starts = ops.reshape(ops.arange(n_blocks, dtype="int32") * block - radius, (-1, 1, 1))
    positions = starts + col  # [n, 1, K]
    valid = ops.logical_and(col >= row, col <= row + 2 * radius)  # the band: |j - D - i| <= D
    valid = ops.logical_and(valid, ops.logical_and(positions >= 0, positions < length))
    if causal:
        valid = ops.logical_and(valid, col <= row + radius)
    if mask is not None:
        span_mask = _blocks(ops.cast(mask, "int32"), radius, n_blocks, block) > 0  # [B, n, K]
        valid = ops.logical_and(valid, ops.expand_dims(span_mask, 2))
    scores = matmul(block_query, ops.transpose(span_keys, (0, 1, 3, 2)))  # [B, n, Q, K]
    if score_fn is not None:
        scores = score_fn(scores)
    weights = masked_softmax(scores, valid)
    context = matmul(ops.cast(weights, span_values.dtype), span_values)
    context = ops.reshape(context, (-1, n_blocks * block, values.shape[-1]))[:, :steps]
    window_weights = None
    if return_window_weights:  # query t's window starts at slot t % Q of its block's span
        t = ops.arange(steps, dtype="int32")
        index = ops.expand_dims(t * span + t % block, -1) + ops.arange(width, dtype="int32")
        flat = ops.reshape(weights, (batch, n_blocks * block * span))
        window_weights = _take_rows(flat, index + ops.zeros((batch, 1, 1), "int32"))
    if mask is None and steps <= length:
        return context, window_weights

    # Queries past S_b (p_t = S_b - 1 for all of them): one window per row, scored densely.
    if mask is None:
        valid_length = ops.zeros((batch,), "int32") + length
    else:
        valid_length = valid_lengths(mask)
    last = ops.expand_dims(valid_length - 1, -1)  # [B, 1]
    tail_positions = window_positions(last, radius)  # [B, 1, W]
    tail_keys = ops.cast(gather_positions(keys, tail_positions)[:, 0], dtype)  # [B, W, d]
    tail_values = gather_positions(values, tail_positions)[:, 0]
    t = ops.arange(steps, dtype="int32")
    tail_valid = window_validity(
        tail_positions, length, mask, ops.expand_dims(t, 0) if causal else None
    )  # [B, T or 1, W]
    tail_scores = matmul(ops.cast(query, dtype), ops.transpose(tail_keys, (0, 2, 1)))
    if score_fn is not None:
        tail_scores = score_fn(tail_scores)
    tail_weights = masked_softmax(tail_scores, tail_valid)
    tail_context = matmul(ops.cast(tail_weights, tail_values.dtype), tail_values)
    clipped = ops.expand_dims(ops.expand_dims(t, 0) >= ops.expand_dims(valid_length, -1), -1)
    context = ops.where(clipped, tail_context, context)
    if window_weights is not None:
        window_weights = ops.where(clipped, tail_weights, window_weights)
    return context, window_weights
