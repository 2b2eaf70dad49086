"""The reference draw: the top-k and nucleus filters and the plain draws over all V tokens.

`filter_logits` applies temperature, top-k and the nucleus (cuts found by bisection on the
logit value, `top_k_threshold` and `nucleus_threshold`: no sort, no cumulative sum);
`gumbel_tokens` draws from what it keeps by the Gumbel-max trick, with one uniform per token
(`token_uniforms`), and defines the ids `sample_tokens` (the fast draw, `fast.py`) must
return; `draw_tokens` draws by inverse CDF with one uniform per row (scheduled sampling, whose
uniforms are drawn before the loop); `argmax_tokens` is the argmax greedy search and the
draws pick their tokens with. Everything is float32 `keras.ops`; given the uniforms, each
draw is deterministic.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

__all__ = [
    "argmax_tokens",
    "draw_tokens",
    "filter_logits",
    "gumbel_tokens",
    "nucleus_threshold",
    "resolve_top_k_method",
    "top_k_threshold",
]


# Lowest float32 "logit" of filtered tokens (finite: no -inf - -inf = NaN downstream).
_FILTERED = -3.0e38
# exp(-104) < 2**-149, the smallest float32 subnormal: a token this far below its row's top
# logit has probability exactly zero.
_ZERO_PROBABILITY = 104.0


def argmax_tokens(x: Any) -> Any:
    """int32 `[N]`: the index of the first largest entry of each row of `x` `[N, V]`, as
    `ops.argmax(x, axis=-1)`, in two elementwise passes (the row maximum, then the lowest
    index that reaches it). XLA on CPU lowers `ops.argmax` to a slower variadic reduction
    (see BENCHMARKS.md §4); greedy search and the Gumbel draw pick
    their tokens with this. A row without a maximum (all NaN) gets index 0, not V.

    Example:

    >>> from keras import ops
    >>> ops.convert_to_numpy(argmax_tokens([[0.1, 3.0, 3.0], [-1.0, -2.0, -3.0]])).tolist()
    [1, 0]
    """
    x = ops.convert_to_tensor(x)
    if x.shape[0] == 0:  # (Keras 3.15's PyTorch max with `initial` gets this shape wrong)
        return ops.zeros((0,), "int32")
    vocab = ops.shape(x)[-1]
    # `initial`: Keras refuses the max of an empty tensor eagerly, and a batch may be empty.
    top = ops.max(x, axis=-1, keepdims=True, initial=-float("inf"))
    from_end = vocab - ops.expand_dims(ops.arange(vocab, dtype="int32"), 0)  # V - j
    first = vocab - ops.max(ops.where(x >= top, from_end, 0), axis=-1, initial=0)
    return ops.where(first >= vocab, ops.zeros_like(first), first)


def _row_floor(z):
    """`(top, floor)`: each row's largest logit and the lowest logit that still has a float32
    probability (`exp(floor - top)` is below the smallest subnormal: a token under the floor
    has probability exactly zero). Rows whose top is not finite get a top of 0 (no NaN)."""
    inf = float("inf")  # `initial`: an empty batch has no max for Keras without one
    top = ops.max(z, axis=-1, keepdims=True, initial=-inf)
    top = ops.where(ops.isfinite(top), top, ops.zeros_like(top))
    lowest = ops.min(z, axis=-1, keepdims=True, initial=inf)
    floor = ops.maximum(lowest, top - _ZERO_PROBABILITY)
    return top, floor


def _count(keep):
    return ops.sum(ops.cast(keep, "int32"), axis=-1, keepdims=True)


def _bisect(
    z, lo, hi, measure, goal, finished, resolution, unrolled: int = 0, max_iterations: int = 64
):
    """The threshold search shared by top-k and the nucleus, without sorting.

    Per row, `[lo, hi)` brackets the cut: `measure(z >= lo, count) >= goal` and
    `measure(z >= hi, count) < goal`, where `measure(keep, count)` is non-increasing in the
    threshold (the count of kept logits itself, or their probability mass). Each
    step halves the bracket in value space (one compare-and-sum pass over V); a row stops when
    `finished(count(z >= lo), count(z >= hi))` says its kept set is decided, or when its
    bracket is narrower than `resolution` (`[N, 1]`): then the logits left in `[lo, hi)` are
    ties to within float32 rounding of the row's scale, and all of them are kept. Returns
    `lo`: the kept set is `z >= lo`. From a bracket of width ~105 the resolution 2**-23 x
    max(1, |top|) is reached in at most 30 steps; `max_iterations` only guards the loop.
    `unrolled`: steps written out before the loop (`_rounds`; finished rows stay put).
    """
    c_lo, c_hi = _count(z >= lo), _count(z >= hi)
    done = finished(c_lo, c_hi)

    def cond(i, lo, hi, c_lo, c_hi, done):
        return ops.logical_and(i < max_iterations, ops.logical_not(ops.all(done)))

    def body(i, lo, hi, c_lo, c_hi, done):
        mid = 0.5 * lo + 0.5 * hi
        keep = z >= mid
        c = _count(keep)
        ok = measure(keep, c) >= goal
        stuck = ops.logical_or(hi - lo <= resolution, ops.logical_or(mid <= lo, mid >= hi))
        new_lo, new_hi = ops.where(ok, mid, lo), ops.where(ok, hi, mid)
        new_c_lo, new_c_hi = ops.where(ok, c, c_lo), ops.where(ok, c_hi, c)
        new_done = ops.logical_or(stuck, finished(new_c_lo, new_c_hi))
        old = lambda a, b: ops.where(done, a, b)  # noqa: E731  (finished rows stay put)
        return (
            i + 1,
            old(lo, new_lo),
            old(hi, new_hi),
            old(c_lo, new_c_lo),
            old(c_hi, new_c_hi),
            ops.logical_or(done, new_done),
        )

    _, lo, _, _, _, _ = _rounds(cond, body, (0, lo, hi, c_lo, c_hi, done), unrolled)
    return lo


def _ceiling(top):
    """A value above every logit of the row (`top + 1` is `top` itself near float32's max)."""
    return top + 1.0 + ops.abs(top) * (2.0**-20)


def _resolution(top):
    """Logits closer than this to a boundary count as tied with it: 2**-23 of the row's scale
    (one or two float32 ulps of the top logit; the probabilities differ by a relative 1e-7)."""
    return ops.maximum(ops.abs(top), 1.0) * (2.0**-23)


TOP_K_METHODS = ("auto", "bisection", "sort")


def resolve_top_k_method(method: Any) -> str:
    """`"bisection"` or `"sort"` for `method` (`"auto"`: bisection on TensorFlow, whose XLA
    makes `ops.top_k` a full sort, and a sort elsewhere: JAX's `top_k` and `torch.topk` are
    partial sorts); a `ValueError` names a bad one."""
    if method not in TOP_K_METHODS:
        raise ValueError(
            f"`top_k_method` must be one of {TOP_K_METHODS}. Received: top_k_method={method!r}"
        )
    if method == "auto":
        return "bisection" if keras.backend.backend() == "tensorflow" else "sort"
    return method


def top_k_threshold(z, k: int, method: str = "bisection", lowest=None):
    """`[N, 1]` thresholds with `z >= threshold` the k largest logits of each row: every logit
    tied with the k-th largest is kept too, and logits without a float32 probability (more
    than 104 below the row's top) are never kept.

    `method="bisection"` sorts nothing: a bisection (`_bisect`) of about log2(range / gap)
    compare-and-count passes over V, where `gap` separates the k-th and (k+1)-th largest
    logits (see BENCHMARKS.md §4); logits within
    2**-23 x max(1, |top|) of the k-th largest count as tied with it. `method="sort"` takes
    the k-th largest from `ops.top_k` (a partial sort on JAX, PyTorch and TensorFlow without
    XLA; a full sort under XLA on CPU). `lowest` `[N, 1]`, if given, is a known lower bound
    of the threshold (at least k logits of the row are >= it): the bisection starts there."""
    if method == "sort":
        _, floor = _row_floor(z)
        if lowest is not None:
            floor = ops.maximum(floor, lowest)
        kth = ops.top_k(z, k)[0][:, k - 1 : k]
        return ops.maximum(kth, floor)
    # Exactly k kept (or fewer, where fewer than k logits have mass).
    return _count_threshold(z, k, k, lowest)


def _count_threshold(z, k: int, most: int, lowest=None, unrolled: int = 0):
    """`[N, 1]` thresholds keeping at least `k` and at most `most` of the logits with mass,
    by `_bisect` on the count (fewer than k where fewer have mass; more than `most` only
    where logits tied within the resolution leave no such threshold); `unrolled` as there."""
    top, floor = _row_floor(z)
    if lowest is not None:
        floor = ops.maximum(floor, lowest)
    return _bisect(
        z,
        floor,
        _ceiling(top),
        lambda keep, count: count,
        k,
        lambda c_lo, c_hi: c_lo <= most,
        _resolution(top),
        unrolled,
    )


def nucleus_threshold(z, top_p: float, lowest=None):
    """`[N, 1]` thresholds with `z >= threshold` the nucleus of `softmax(z)` restricted to
    `z >= lowest`: the most probable tokens whose mass reaches `top_p` of the total, the token
    that reaches it included (and any tied with it). No sort: a bisection (`_bisect`) on the
    threshold, each pass a masked sum of the probabilities; a row is decided when one logit is
    left inside its bracket."""
    top, floor = _row_floor(z)
    if lowest is not None:
        floor = ops.maximum(floor, lowest)
    weights = ops.where(z >= floor, ops.exp(z - top), ops.zeros_like(z))
    goal = top_p * ops.sum(weights, axis=-1, keepdims=True)
    return _bisect(
        z,
        floor,
        _ceiling(top),
        lambda keep, count: ops.sum(
            ops.where(keep, weights, ops.zeros_like(weights)), -1, keepdims=True
        ),
        goal,
        lambda c_lo, c_hi: c_lo - c_hi <= 1,  # one logit left in [lo, hi): the boundary token
        _resolution(top),
    )


def filter_logits(
    log_probs: Any,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    top_k_method: str = "auto",
) -> Any:
    """float32 `log_probs / temperature` with the tokens outside the top-k and then outside
    the nucleus of the renormalised remainder set to a very low finite value (-3e38).

    The cuts are thresholds (`top_k_threshold`, `nucleus_threshold`) found by bisection, a
    few dozen elementwise passes over V instead of the sort XLA on CPU makes of `ops.top_k`;
    the top-k one may instead come from `ops.top_k` (`top_k_method`). Ties at a boundary are
    all kept: a top-k filter keeps every token whose logit equals the k-th largest, so the
    kept set does not depend on token order (`ops.top_k` alone would keep the lowest ids).
    Tokens more than 104 below a row's largest logit (probability exactly zero in float32
    after the temperature) are always filtered.

    Args:
        log_probs: `[N, V]` logits or log-probabilities.
        temperature: T > 0. Defaults to `1.0`.
        top_k: Keep the k most probable tokens. Defaults to `None` (all).
        top_p: Keep the nucleus of mass `top_p`. Defaults to `None` (all; `1.0` is the same).
        top_k_method: How the top-k cut is found: `"bisection"`, `"sort"` (`ops.top_k`) or
            `"auto"` (bisection on TensorFlow, a sort elsewhere; see `top_k_threshold`). The
            nucleus is always found by bisection. Defaults to `"auto"`.

    Returns:
        float32 `[N, V]`.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> z = np.log(np.array([[0.1, 0.5, 0.15, 0.25]], "float32"))
    >>> kept = ops.convert_to_numpy(filter_logits(z, top_k=3)) > -1e38
    >>> kept.tolist()
    [[False, True, True, True]]
    >>> (ops.convert_to_numpy(filter_logits(z, top_p=0.7)) > -1e38).tolist()  # 0.5 + 0.25
    [[False, True, False, True]]
    """
    z = ops.cast(log_probs, "float32")
    if temperature != 1.0:
        z = z / temperature
    if z.shape[0] == 0:  # an empty batch: nothing to filter
        return z
    vocab = z.shape[-1]
    if top_k is not None and vocab is not None and top_k >= int(vocab):
        top_k = None
    if top_p is not None and top_p >= 1.0:
        top_p = None
    lowest = None
    if top_k is not None:
        lowest = top_k_threshold(z, top_k, resolve_top_k_method(top_k_method))
    if top_p is not None:
        lowest = nucleus_threshold(z, top_p, lowest)
    if lowest is None:
        return z
    return ops.where(z >= lowest, z, ops.full_like(z, _FILTERED))


def draw_tokens(
    log_probs: Any,
    uniforms: Any,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Any:
    """One token per row from `softmax(log_probs / T)`, filtered, by inverse-CDF sampling.

    Filters apply in the KerasHub order (`filter_logits`): temperature first, then the
    `top_k` most probable tokens, then the nucleus of that renormalised remainder (the
    smallest set of most probable tokens whose mass reaches `top_p`; the most probable token
    is always kept; ties at a boundary are all kept). The draw is token `j` with
    `C_{j-1} < u C_V <= C_j`, `C` the cumulative sum of the kept (unnormalised) probabilities
    in float32: a token whose probability is zero (filtered) is never drawn, because its
    cumulative sum equals its predecessor's. One uniform per row (scheduled sampling draws
    them ahead of the loop); `gumbel_tokens` is the faster draw of `sample_search`.

    Args:
        log_probs: `[N, V]` logits or log-probabilities (any float dtype; computed in float32).
        uniforms: `[N]` numbers in (0, 1), one per row (e.g. `step_uniforms`).
        temperature: T > 0. Defaults to `1.0`.
        top_k: Keep the k most probable tokens. Defaults to `None` (all).
        top_p: Keep the nucleus of mass `top_p`. Defaults to `None` (all; `1.0` is the same).

    Returns:
        int32 `[N]` token ids.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> log_probs = np.log(np.array([[0.5, 0.3, 0.2]] * 3, "float32"))
    >>> uniforms = np.array([0.1, 0.6, 0.9], "float32")
    >>> ops.convert_to_numpy(draw_tokens(log_probs, uniforms)).tolist()
    [0, 1, 2]
    >>> ops.convert_to_numpy(draw_tokens(log_probs, uniforms, top_k=2)).tolist()
    [0, 0, 1]
    """
    z = filter_logits(log_probs, temperature, top_k, top_p)
    weights = ops.exp(z - ops.max(z, axis=-1, keepdims=True))
    cumulative = ops.cumsum(weights, axis=-1)
    threshold = ops.expand_dims(ops.cast(uniforms, "float32"), -1) * cumulative[:, -1:]
    # u < 1 so u * C_V <= C_V: the count is at most V - 1; u > 0 skips zero-probability tokens.
    return ops.sum(ops.cast(cumulative < threshold, "int32"), axis=-1)


def gumbel_tokens(
    log_probs: Any,
    uniforms: Any,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    top_k_method: str = "auto",
) -> Any:
    """One token per row from the same filtered distribution as `draw_tokens`, by the
    Gumbel-max trick: `argmax_j (z_j + G_j)` over the kept tokens, `G_j = -log(-log u_j)`
    with one uniform per token. Exact for `softmax(z)` (Gumbel 1954; Maddison et al. 2014)
    and free of the cumulative sum, which XLA on CPU computes slowly: the draw costs about
    what greedy's argmax costs. It is computed in the equivalent exponential-race form
    `argmax_j exp(z_j - top) / (-log u_j)` (one logarithm per token, not two; the same
    token up to float32 rounding of near-equal scores). With 23-bit uniforms, `G` lies in
    [-2.8, 16.6], so a token more than 19.4 below the row's top logit (probability < 4e-9)
    is never drawn.

    Args:
        log_probs: `[N, V]` logits or log-probabilities.
        uniforms: `[N, V]` numbers in (0, 1) (e.g. `token_uniforms`).
        temperature, top_k, top_p, top_k_method: As in `filter_logits`.

    Returns:
        int32 `[N]` token ids.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention.functional.sampling import token_uniforms
    >>> log_probs = np.log(np.array([[0.7, 0.0, 0.3]], "float32") + 1e-38)
    >>> u = ops.convert_to_numpy(token_uniforms(0, 0, 4000, 3))
    >>> ids = ops.convert_to_numpy(gumbel_tokens(np.repeat(log_probs, 4000, 0), u))
    >>> sorted(set(ids.tolist())), bool(0.67 < np.mean(ids == 0) < 0.73)
    ([0, 2], True)
    """
    z = filter_logits(log_probs, temperature, top_k, top_p, top_k_method)
    top = ops.max(z, axis=-1, keepdims=True, initial=_FILTERED)
    top = ops.where(top > _FILTERED, top, ops.zeros_like(top))  # (a row with no kept token)
    # A filtered -3e38 has weight exp(-3e38 - top) = 0: below every kept token.
    return argmax_tokens(_race(ops.exp(z - top), ops.cast(uniforms, "float32")))


def _race(weights, uniforms):
    """The Gumbel-max draw's scores in the exponential-race form: `argmax_j w_j / E_j`, with
    `w = exp(z - top)` and `E = -log u` standard exponential, is `argmax_j z_j + G_j`,
    `G = -log(-log u)` (take the log of the ratio), with one logarithm per token instead of
    two, and the weights the nucleus needs anyway. Filtered tokens have weight 0."""
    return weights / -ops.log(uniforms)


def _rounds(cond, body, state, unrolled: int):
    """`ops.while_loop(cond, body, state)` with its first `unrolled` rounds written out (a
    finished row stays put, so extra rounds change nothing): most batches finish within
    them and the loop then stops at its first test. A loop nested in a decoding loop costs
    more per round than straight-line code under XLA on CPU (see BENCHMARKS.md §4)."""
    for _ in range(unrolled):
        state = body(*state)
    return ops.while_loop(cond, body, state)
