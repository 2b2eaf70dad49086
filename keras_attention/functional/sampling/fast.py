"""The fast draw: `sample_tokens`, the ids of `gumbel_tokens` (or the same distribution)
with a fraction of its work, by hashing only the uniforms of the tokens that can win.

Two paths (`sample_tokens` says which runs when):

- **Top-k candidates** (`_top_k_sample`): the k largest logits lie in the blocks with the k
  largest maxima; the blocks are found by a bisection on the block maxima and listed by
  `compact_indices`; the cuts and the draw run on their ~16·k candidates with the
  `token_uniforms` of those tokens, so the ids equal `gumbel_tokens`' over all V.
- **Two levels** (`_two_level_sample`): a block of 16 tokens by its mass, then a token in it;
  with top-p >= 0.5 alone, an exact rejection chain instead of the nucleus cut.

Why it pays: inside a decoding loop under XLA on CPU, `ops.top_k` is a full sort, `cumsum` a
slow reduce-window and a nested loop costs more per round than straight-line code; this path
avoids all three where it can (see BENCHMARKS.md §4). Correctness is
`gumbel_tokens`: `tests/decoding/test_sampling.py` compares the ids (ties, -inf and the
fallbacks included) and the distributions.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from keras import ops

from keras_attention._validation import check_int
from keras_attention.functional.sampling.reference import (
    _ZERO_PROBABILITY,
    _count,
    _count_threshold,
    _race,
    _rounds,
    _row_floor,
    argmax_tokens,
    gumbel_tokens,
    nucleus_threshold,
    resolve_top_k_method,
    top_k_threshold,
)
from keras_attention.functional.sampling.rng import (
    _GOLDEN,
    _mix,
    _row_keys,
    _uniforms,
    token_uniforms,
)

__all__ = ["compact_indices", "sample_tokens"]


def sample_tokens(
    log_probs: Any,
    seed: Any,
    t: Any,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    top_k_method: str = "auto",
) -> Any:
    """One token per row from the filtered `softmax(log_probs / T)` of `filter_logits`, with a
    fraction of the work of `gumbel_tokens` over all V; `sample_search` draws with this.

    The random numbers are a function of `(seed, t, row)` and a counter only (as
    `token_uniforms`), and only those of the tokens that can win are hashed:

    - **top-k** (with or without top-p): the k largest logits lie in the k blocks (of b
      tokens V / b apart: b = 16 for top-k alone, 8 with top-p, whose cuts then read half as
      many candidates) with the largest maxima. One pass takes the block maxima, a
      bisection on those (b times fewer values) finds a bound below the k-th largest, and
      `compact_indices` lists the selected blocks (`top_k_method="sort"`: the candidates are
      `ops.top_k`'s k instead). The cuts (`top_k_threshold`; the nucleus by bisection, by
      the sorted candidates' cumulative mass, or by the rejection chain below) and the draw
      run on these ~b k candidates, with their `token_uniforms`: **the token `gumbel_tokens`
      draws with `token_uniforms(seed, t, N, V)`** (up to float32 rounding at a cut). When
      ties select more blocks than the candidates hold (or more than k tokens tie at the k-th
      logit, with "sort"), the batch is drawn by `gumbel_tokens` over all V. Used when the
      candidates are fewer than V / 2 (with either method: both draw the same ids).
    - **otherwise, a two-level draw**: a block with probability proportional to its mass
      (an exponential race over V / 16 uniforms), then a token in it (16 uniforms): the same
      distribution, other random numbers than `gumbel_tokens`'. One pass over V for the
      block masses. **Top-p >= 0.5 alone** adds an exact rejection chain: a token is in the
      nucleus iff the mass of the strictly more probable tokens is below `top_p` of the
      total, so the nucleus lies above any token that is not in it; a drawn token is tested
      (one pass, which also gives the block masses above it) and, if it is out, the next is
      drawn among the tokens above it. Each round succeeds with probability >= `top_p`
      whatever the logits: 2-4 rounds for 64 rows at p = 0.9, against the 20-30 passes of the
      bisection, which finds the cut for p < 0.5 (and top-k's when its candidates would not
      be fewer than V / 2).

    Args:
        log_probs: `[N, V]` logits or log-probabilities.
        seed: A Python int or an int32 scalar tensor (as in `token_uniforms`).
        t: The step index (int or int32 scalar tensor).
        temperature, top_k, top_p, top_k_method: As in `filter_logits`.

    Returns:
        int32 `[N]` token ids.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.functional.sampling import filter_logits
    >>> z = np.random.default_rng(0).normal(size=(8, 1000)).astype("float32")
    >>> fast = sample_tokens(z, seed=7, t=3, top_k=10, top_p=0.9)
    >>> full = gumbel_tokens(z, token_uniforms(7, 3, 8, 1000), top_k=10, top_p=0.9)
    >>> bool(np.all(ops.convert_to_numpy(fast) == ops.convert_to_numpy(full)))
    True
    >>> kept = ops.convert_to_numpy(filter_logits(z, top_p=0.9)) > -1e38
    >>> ids = ops.convert_to_numpy(sample_tokens(z, seed=7, t=3, top_p=0.9))
    >>> bool(kept[np.arange(8), ids].all())
    True
    """
    z = ops.cast(log_probs, "float32")
    if z.shape[0] == 0:
        return ops.zeros((0,), "int32")
    vocab = z.shape[-1]
    if vocab is None:  # (a dynamic vocabulary: the plain draw)
        rows, dynamic_vocab = ops.shape(z)[0], ops.shape(z)[1]
        uniforms = token_uniforms(seed, t, rows, dynamic_vocab)
        return gumbel_tokens(z, uniforms, temperature, top_k, top_p, top_k_method)
    vocab = int(vocab)
    if top_k is not None and top_k >= vocab:
        top_k = None
    if top_p is not None and top_p >= 1.0:
        top_p = None
    keys = _row_keys(seed, t, ops.shape(z)[0])
    lowest = None
    if top_k is not None:
        method = resolve_top_k_method(top_k_method)
        # (Both methods choose the same path, so they draw the same ids for a seed.)
        if _top_k_capacity(top_k) * _BLOCK < vocab // 2:
            # The temperature keeps the order: the candidates are chosen on the logits and
            # only theirs are divided (not all V).
            return _top_k_sample(z, keys, top_k, top_p, method, temperature)
    if temperature != 1.0:
        z = z / temperature
    if top_k is not None:
        lowest = top_k_threshold(z, top_k, method)
    if top_p is not None and (lowest is not None or top_p < 0.5):
        lowest, top_p = nucleus_threshold(z, top_p, lowest), None
    return _two_level_sample(z, keys, lowest, top_p)


_BLOCK = 16  # tokens per block of the two-level draw and of top-k's candidate search
# Tokens per block of the candidate search when a cut runs on the candidates (top-k with top-p):
# half the candidates, so the cut's passes read half as much, for twice the block maxima (the
# cut's passes outnumber the search's; top-k alone has no cut and keeps 16; BENCHMARKS.md §4).
_CUT_BLOCK = 8


def _strided_blocks(x, fill: float, size: int = _BLOCK):
    """`x` `[N, V]` as `[N, b, ⌈V/b⌉]` blocks of `b = size` tokens ⌈V/b⌉ apart: token j at
    `[j // ⌈V/b⌉, j mod ⌈V/b⌉]`, padded with `fill` (the id of slot s of block c is
    `s · ⌈V/b⌉ + c`). Sums and maxima over a block then reduce the major axis, which XLA on CPU
    fuses into one pass; over a narrow minor axis it calls a slower library reduction."""
    rows, vocab = ops.shape(x)[0], int(x.shape[-1])
    blocks = -(-vocab // size)
    if blocks * size != vocab:
        x = ops.pad(x, ((0, 0), (0, blocks * size - vocab)), constant_values=fill)
    return ops.reshape(x, (rows, size, blocks))


def _top_k_capacity(k: int) -> int:
    """How many blocks the top-k candidates hold: k, plus room for a few tied maxima."""
    return 8 * (k // 8 + 2)


_GROUP = 16  # entries per group of `compact_indices`' two-level count


def compact_indices(selected: Any, capacity: int) -> Any:
    """int32 `[N, capacity]`: the indices of the true entries of each row of `selected`
    `[N, M]`, in increasing order, then -1 (true entries past the `capacity`-th are left
    out). Each row is `np.flatnonzero(row)[:capacity]` padded with -1 (`jnp.nonzero(row,
    size=capacity, fill_value=-1)`), with a static shape for a compiled loop; the top-k draw
    lists its selected blocks with this.

    No scatter and no cumulative sum along M (inside a decoding loop under XLA on CPU both
    cost more than the whole search; see BENCHMARKS.md §4): the entries are counted in
    groups of 16 (`c_g`, the count through group g), slot r's group is the number of groups
    with `c_g <= r`, and its place in the group the number of the group's running counts
    that are still `<= r`. The two running counts are products with triangular matrices of
    ones (`_running_count`), not `ops.cumsum`, exact while M < 2**24.

    Args:
        selected: `[N, M]` booleans (or 0/1 numbers), M static.
        capacity: How many indices per row: an integer >= 1.

    Returns:
        int32 `[N, capacity]`.

    Example:

    >>> from keras import ops
    >>> selected = ops.convert_to_tensor([[False, True, False, True], [True, True, True, False]])
    >>> ops.convert_to_numpy(compact_indices(selected, 3)).tolist()
    [[1, 3, -1], [0, 1, 2]]
    """
    capacity = check_int("capacity", capacity, minimum=1)
    selected = ops.convert_to_tensor(selected)
    rows, size = ops.shape(selected)[0], int(selected.shape[-1])
    groups = -(-size // _GROUP)
    flags = ops.cast(selected, "int32")
    if groups * _GROUP != size:
        flags = ops.pad(flags, ((0, 0), (0, groups * _GROUP - size)))
    running = _running_count(ops.reshape(flags, (rows * groups, _GROUP)))  # within a group
    running = ops.reshape(running, (rows, groups, _GROUP))
    through = _running_count(running[:, :, -1])  # [N, G]: selected through group g
    slot = ops.reshape(ops.arange(capacity, dtype="int32"), (1, capacity, 1))
    group = ops.sum(ops.cast(ops.expand_dims(through, 1) <= slot, "int32"), axis=-1)  # [N, C]
    found = group < groups
    group = ops.minimum(group, groups - 1)
    before = ops.take_along_axis(through - running[:, :, -1], group, axis=1)  # [N, C]
    counts = ops.take_along_axis(running, ops.expand_dims(group, -1), axis=1)  # [N, C, 16]
    place = ops.sum(ops.cast(counts + ops.expand_dims(before, -1) <= slot, "int32"), axis=-1)
    return ops.where(found, group * _GROUP + place, -ops.ones_like(place))


def _running_count(counts):
    """int32 `ops.cumsum(counts, axis=-1)` of a non-negative int32 `[R, n]` with sums below
    2**24, as a float32 product with the upper-triangular `[n, n]` matrix of ones (exact:
    every partial sum is an integer below 2**24). XLA on CPU lowers `cumsum` to a
    reduce-window, slow inside the decoding loop; the product is a small GEMM (see
    BENCHMARKS.md §4)."""
    n = int(counts.shape[-1])
    steps = ops.arange(n, dtype="int32")
    upper = ops.cast(ops.expand_dims(steps, 1) <= ops.expand_dims(steps, 0), "float32")
    return ops.cast(ops.matmul(ops.cast(counts, "float32"), upper), "int32")


def _token_race(weights, keys, ids):
    """`_race` with the `token_uniforms` of token `ids` `[N, C]` (rows' `keys` `[N]`)."""
    return _race(weights, _uniforms(_mix(ops.expand_dims(keys, -1) + ids)))


def _winner(scores, ids):
    """The id at each row's largest race score (0 where no score is positive: a row without
    a kept token, as `gumbel_tokens` returns)."""
    return _winner_at(argmax_tokens(scores), scores, ids)


def _winner_at(index, scores, ids):
    """The id at candidate `index` `[N]` (0 in rows where no score is positive)."""
    token = ops.take_along_axis(ids, ops.expand_dims(index, -1), axis=-1)[:, 0]
    return ops.where(ops.max(scores, axis=-1) > 0, token, ops.zeros_like(token))


# ---------------------------------------------------------------- top-k: a draw among candidates
class _Candidates(NamedTuple):
    """The tokens the top-k draw runs on: `values` `[N, C]` their logits and `ids` `[N, C]`
    their ids (ascending in each row); `overflow`, a scalar, true when ties may leave some
    row's k largest outside them (the batch is then drawn over all V); `bound` `[N, 1]`, a
    lower bound of each row's k-th largest logit (the block search's; `None` for the sorted
    candidates, which are the k largest themselves)."""

    values: Any
    ids: Any
    overflow: Any
    bound: Any


def _sorted_candidates(z, k):
    """`ops.top_k`'s k largest logits of `z` `[N, V]` (`top_k_method="sort"`); they miss some
    of the k largest where logits beyond the k returned tie with the k-th."""
    values, ids = ops.top_k(z, k)
    ids = ops.cast(ids, "int32")
    overflow = ops.any(_count(z >= values[:, k - 1 : k]) > k)
    return _Candidates(values, ids, overflow, None)


def _block_candidates(z, k, size):
    """The tokens of the blocks (`_strided_blocks` of `size` tokens) whose maxima are among
    the k largest block maxima: every token among the k largest lies in one of them."""
    rows, inf = ops.shape(z)[0], float("inf")
    grouped = _strided_blocks(z, -inf, size)
    blocks = int(grouped.shape[-1])
    maxima = ops.max(grouped, axis=1)
    # Every token among the k largest lies in a block whose maximum is among the k
    # largest maxima: at least k tokens are >= the k-th largest maximum. Any bound below
    # it that selects at most `capacity` blocks will do, so the search stops as soon as
    # it has one (a few passes before the exact k-th largest maximum).
    capacity = _top_k_capacity(k)
    # (<= the k-th largest logit; its 6-7 passes written out: a loop nested in the
    # decoding loop costs more per pass, see `_rounds`.)
    bound = _count_threshold(_unmerged(maxima), k, capacity, unrolled=7)
    selected = maxima >= bound
    overflow = ops.any(_count(selected) > capacity)
    index = compact_indices(selected, capacity)  # [N, capacity]; -1 past the last block
    valid = ops.expand_dims(index >= 0, 1)
    index = ops.expand_dims(ops.maximum(index, 0), 1)  # [N, 1, capacity]
    gathered = ops.take_along_axis(grouped, index, axis=2)  # [N, size, capacity]
    values = ops.reshape(
        ops.where(valid, gathered, ops.full_like(gathered, -inf)), (rows, capacity * size)
    )
    # (Slot-major, blocks in order: the candidates' ids ascend, as over all V.)
    slots = ops.reshape(ops.arange(size, dtype="int32"), (1, size, 1))
    ids = ops.reshape(slots * blocks + index, (rows, -1))
    return _Candidates(values, ids, overflow, bound)


def _top_k_sample(z, keys, k, top_p, method, temperature=1.0):
    """The top-k draw among candidates (see `sample_tokens`); `z` are the logits before the
    temperature, which divides the candidates' values only (the same division, element by
    element, as `z / temperature`, and monotonic: the same candidates and the same cuts)."""
    if method == "sort":
        candidates = _sorted_candidates(z, k)
    else:
        candidates = _block_candidates(z, k, _BLOCK if top_p is None else _CUT_BLOCK)
    values, ids, overflow, bound = candidates
    if temperature != 1.0:
        values = values / temperature
        if bound is not None:
            bound = bound / temperature  # (still <= the k-th largest: division is monotonic)

    def among_candidates():
        return _draw_among_candidates(values, ids, bound, keys, k, top_p)

    def over_all_tokens():
        all_ids = ops.expand_dims(ops.arange(int(z.shape[-1]), dtype="int32"), 0)
        uniforms = _uniforms(_mix(ops.expand_dims(keys, -1) + all_ids))
        return gumbel_tokens(z, uniforms, temperature, k, top_p, method)

    return ops.cond(overflow, over_all_tokens, among_candidates)


def _draw_among_candidates(values, ids, bound, keys, k, top_p):
    """The token `gumbel_tokens` draws over all V, found among the candidates (`values`, after
    the temperature, and `ids` `[N, C]`; `bound` as in `_Candidates`, `None` when sorted)."""
    rows, inf = ops.shape(values)[0], float("inf")
    top = _row_floor(values)[0]  # (the row's top logit is a candidate)
    if top_p is None and bound is not None:
        # No cut: the race runs over the candidates at or above `bound` (a superset of
        # the k largest: every token above it lies in a selected block), and the chain
        # keeps the best score whose token is among the k largest, i.e. has fewer than k
        # candidates strictly above it (ties with the k-th are in): the best score among
        # the k largest. Starting from `bound` rather than from every candidate (~16 k of
        # them) the chain needs 1-2 rounds, not 6-8, on flat logits.
        above = values >= bound
        weights = ops.where(above, ops.exp(values - top), ops.zeros_like(values))
        scores = _token_race(weights, keys, ids)
        ones = ops.cast(above, "float32")  # each candidate counts once
        goal = ops.full((rows, 1), float(k), "float32")
        return _winner_at(_nucleus_chain(values, ones, scores, goal, 0), scores, ids)
    floor = top - _ZERO_PROBABILITY
    if bound is None:  # (sorted: the k-th largest is the k-th candidate)
        cut = ops.maximum(values[:, k - 1 : k], floor)
    else:  # (the bracket starts at the k-th largest block maximum, not 104 below the top)
        cut = top_k_threshold(values, k, "bisection", lowest=bound)
    kept = values >= cut
    weights = ops.where(kept, ops.exp(values - top), ops.zeros_like(values))
    if top_p is not None:
        goal = top_p * ops.sum(weights, axis=-1, keepdims=True)
        if bound is None:
            # Sorted candidates: a token is in the nucleus iff the mass before it is below
            # the goal; ties with the last one in are kept (cut = its logit).
            before = ops.cumsum(weights, axis=-1) - weights
            inside = ops.logical_and(kept, before < goal)
            cut = ops.min(ops.where(inside, values, ops.full_like(values, inf)), -1, True)
            weights = ops.where(values >= cut, weights, ops.zeros_like(weights))
        elif top_p >= 0.5:
            scores = _token_race(weights, keys, ids)
            return _winner_at(_nucleus_chain(values, weights, scores, goal), scores, ids)
        else:
            cut = nucleus_threshold(ops.where(kept, values, ops.full_like(values, -inf)), top_p)
            weights = ops.where(values >= cut, weights, ops.zeros_like(weights))
    return _winner(_token_race(weights, keys, ids), ids)


# ---------------------------------------------------------------- two levels: a block, a token
def _two_level_sample(z, keys, lowest=None, top_p=None):
    """A token from `softmax(z)` over `z >= lowest` (and, with `top_p`, its nucleus), drawn in
    two levels: a block of 16 tokens (`_strided_blocks`) with probability proportional to its
    mass, then a token of that block (`_block_draw`: `[N, V/16]` and `[N, 16]` hashed
    uniforms, not `[N, V]`); with `top_p`, redrawn until in the nucleus
    (`_nucleus_rejection`). Rows without a kept token get 0."""
    rows, vocab = ops.shape(z)[0], int(z.shape[-1])
    top, _ = _row_floor(z)
    floor = top - _ZERO_PROBABILITY  # (z >= max(min z, floor) is z >= floor: no min needed)
    if lowest is not None:
        floor = ops.maximum(floor, lowest)
    weights = _strided_blocks(ops.where(z >= floor, ops.exp(z - top), ops.zeros_like(z)), 0.0)
    masses = ops.sum(weights, axis=1)  # [N, blocks]
    none = ops.full((rows, 1), -1.0, "float32")  # (below every weight)
    total = ops.sum(masses, axis=-1)
    token, value = _block_draw(weights, keys, 0, masses, none)
    if top_p is not None:
        token = _nucleus_rejection(weights, keys, token, value, top_p * total, vocab)
    return ops.where(total > 0, token, ops.zeros_like(token))  # (no kept token: 0)


def _block_draw(weights, keys, round_, masses, bound):
    """A token whose weight is above `bound` `[N, 1]`, drawn by mass, and its weight `[N, 1]`:
    a block by `masses` `[N, blocks]`, then a token of that block's `weights` `[N, 16,
    blocks]`, each by an exponential race over its own hashed uniforms (round `round_`'s)."""
    rows, blocks = ops.shape(weights)[0], int(weights.shape[-1])
    block_counters = ops.expand_dims(ops.arange(blocks, dtype="int32"), 0)
    token_counters = ops.expand_dims(ops.arange(blocks, blocks + _BLOCK, dtype="int32"), 0)
    golden = ops.convert_to_tensor(_GOLDEN, "int32")
    key = ops.expand_dims(_mix(keys + ops.multiply(ops.cast(round_, "int32"), golden)), -1)
    block = argmax_tokens(_race(masses, _uniforms(_mix(key + block_counters))))
    pick = ops.reshape(block, (rows, 1, 1))
    block_w = ops.take_along_axis(weights, pick, axis=2)[:, :, 0]  # [N, 16]
    block_w = ops.where(block_w > bound, block_w, ops.zeros_like(block_w))
    offset = argmax_tokens(_race(block_w, _uniforms(_mix(key + token_counters))))
    value = ops.take_along_axis(block_w, ops.expand_dims(offset, -1), axis=-1)
    return offset * blocks + block, value


def _nucleus_rejection(weights, keys, token, value, goal, vocab):
    """`token` `[N]` (weight `value` `[N, 1]`, the first `_block_draw`) redrawn until it lies in
    the nucleus of mass `goal` `[N]`: the rejection chain of `_nucleus_chain` with a fresh draw
    per round from the tokens above the rejected one. Exact, because the nucleus lies inside
    every such set, so an accepted draw is a draw from the nucleus. One pass over V a round,
    which gives both the mass above the rejected token (the test) and the block masses of the
    next draw. "Above" compares the float32 weights `exp(z - top)` (the probabilities the draw
    uses), not the logits: the loop then reads one `[N, V]` tensor, not two (logits whose
    weights round to the same float32 are tied, as equal probabilities)."""

    def cond(i, token, value, done):
        # (Each round raises a rejected row's bound past one more logit: V rounds at most.)
        return ops.logical_and(i < vocab, ops.logical_not(ops.all(done)))

    def body(i, token, value, done):
        above = ops.sum(
            ops.where(weights > ops.expand_dims(value, -1), weights, ops.zeros_like(weights)),
            1,
        )  # [N, blocks]: the block masses above the drawn token
        done = ops.logical_or(done, ops.sum(above, axis=-1) < goal)
        next_token, next_value = _block_draw(weights, keys, i + 1, above, value)
        keep = ops.expand_dims(done, -1)
        return (
            i + 1,
            ops.where(done, token, next_token),
            ops.where(keep, value, next_value),
            done,
        )

    _, token, _, _ = _rounds(cond, body, (0, token, value, goal <= 0), unrolled=1)
    return token


def _nucleus_chain(values, weights, scores, goal, unrolled: int = 2):
    """The index `[N]` of the best race score among the nucleus, by rejection.

    `values` `[N, C]` are logits, `weights` their `exp(value - top)` (0 for tokens not kept),
    `scores` the race scores (0 for tokens not kept), `goal` `[N, 1]` the nucleus mass. A
    token is in the nucleus iff the mass of the strictly more probable tokens is below the
    goal (ties with it are then in too), so the nucleus is every token above some logit. The
    best score among the tokens above a bound (first: all) is tested in one pass; if it is
    out, the nucleus lies strictly above its logit, which becomes the bound, and the best
    score above it is the next candidate. Rows without mass (goal 0) take index 0.

    With `weights` 1 per candidate and `goal` k, the test is the rank: a token is among the k
    largest iff fewer than k candidates are strictly above it, and the chain draws from the
    top-k without finding its cut. `unrolled`: the rounds written out before the loop.
    """
    count = int(values.shape[-1])
    below = ops.full_like(scores, -1.0)

    def best_of(candidates):
        """The first index of each row's best candidate score, and its logit."""
        index = argmax_tokens(candidates)
        return index, ops.take_along_axis(values, ops.expand_dims(index, -1), axis=-1)

    def cond(i, winner, value, done):
        # (Each round raises a rejected row's bound past one more logit: C rounds at most.)
        return ops.logical_and(i < count, ops.logical_not(ops.all(done)))

    def inside(value):
        """One pass: is the token at `value` in (the mass above its logit below the goal)?"""
        above = ops.where(values > value, weights, ops.zeros_like(weights))
        return ops.sum(above, axis=-1) < goal[:, 0]

    def body(i, winner, value, done):
        # A rejected row's next candidate: the best score above its winner's logit, tested.
        index, next_value = best_of(ops.where(values > value, scores, below))
        winner = ops.where(done, winner, index)
        value = ops.where(ops.expand_dims(done, -1), value, next_value)
        return i + 1, winner, value, ops.logical_or(done, inside(value))

    winner, value = best_of(scores)
    # The first winner's test comes before the loop, which then only runs for rejected rows.
    start = (0, winner, value, ops.logical_or(goal[:, 0] <= 0, inside(value)))
    _, winner, _, _ = _rounds(cond, body, start, unrolled=unrolled)
    return winner


def _unmerged(x):
    """`x` with NaN as 0: an elementwise step that stops XLA from merging a reduction of `x`
    with the reduction that made it. The row maximum of `[N, V/16]` block maxima is otherwise
    rewritten as one maximum over all `[N, V]` logits, which XLA on CPU hands to a library
    reduction far slower than reading the maxima (see BENCHMARKS.md §4)."""
    return ops.where(ops.isnan(x), ops.zeros_like(x), x)
