"""Drawing tokens from logits: temperature, top-k and nucleus filtering, a stateless generator.

Shared by `sample_search` and by scheduled sampling in `AttentionRNN`. Everything is float32
`keras.ops`; the random numbers come in as uniforms in (0, 1), one per row, so the draw itself
is deterministic given them (`draw_tokens`). `step_uniforms` makes those uniforms from a seed,
the step and the row with an integer hash: a counter-based generator, stateless (no variable to
carry through a `while_loop`, which JAX cannot update inside a compiled loop), whose seed may be
a tensor (an argument of a compiled function or of an exported signature), and which gives the
same numbers on every backend, device and compiler (int32 arithmetic wraps the same way
everywhere), eager or XLA.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import keras
from keras import ops
from numpy import bool_ as np_bool

__all__ = [
    "argmax_tokens",
    "check_sampling",
    "check_sampling_used",
    "check_seed",
    "draw_tokens",
    "filter_logits",
    "gumbel_tokens",
    "nucleus_threshold",
    "resolve_top_k_method",
    "sample_tokens",
    "step_uniforms",
    "token_uniforms",
    "top_k_threshold",
]

# Lowest float32 "logit" of filtered tokens (finite: no -inf - -inf = NaN downstream).
_FILTERED = -3.0e38
# exp(-104) < 2**-149, the smallest float32 subnormal: a token this far below its row's top
# logit has probability exactly zero.
_ZERO_PROBABILITY = 104.0


#: The sampling temperature's bounds. Below `MIN_TEMPERATURE`, `log_probs / temperature`
#: leaves float32's exact range in the sampler's sums (at 1e-10 XLA drew only padding while
#: eager did not; at 1e-38 both did), and sampling is greedy search in all but rounding: use
#: `sample=False`. Above `MAX_TEMPERATURE` a token banned at the -1e9 logit of the searches
#: (padding, the start token) would come within float32's probability floor of the best
#: token, whose log-probability is at least -ln(V), and could be drawn.
MIN_TEMPERATURE = 1e-4
MAX_TEMPERATURE = 1e6
#: The smallest nucleus mass. The most probable token holds at least 1/V of the mass, so any
#: `top_p <= 1/V` keeps it alone; below this, `top_p * sum` fell to float32 subnormals and
#: zero, and the nucleus kept nothing (only padding was drawn). For top-1 use `top_k=1`.
MIN_TOP_P = 1e-6


def check_sampling(temperature: Any, top_k: Any, top_p: Any, vocab_size: Any = None) -> tuple:
    """`(temperature, top_k, top_p)` validated: a `ValueError` names a bad one.

    `temperature` must be in [`MIN_TEMPERATURE`, `MAX_TEMPERATURE`], `top_k` an integer >= 1
    (and at most `vocab_size` when that is known: a larger cut keeps every token, which is
    almost surely a mistake), `top_p` in [`MIN_TOP_P`, 1]."""
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, numbers.Real)
        or not math.isfinite(float(temperature))
        or not MIN_TEMPERATURE <= temperature <= MAX_TEMPERATURE
    ):
        raise ValueError(
            f"`temperature` must be a finite number in [{MIN_TEMPERATURE:g}, "
            f"{MAX_TEMPERATURE:g}] (lower is greedy search up to rounding: use sample=False). "
            f"Received: temperature={temperature!r}"
        )
    if top_k is not None and (
        isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1
    ):
        raise ValueError(f"`top_k` must be None or an integer >= 1. Received: top_k={top_k!r}")
    if top_k is not None and vocab_size is not None and top_k > vocab_size:
        raise ValueError(
            f"`top_k` must be at most the vocabulary size ({vocab_size}). Received: top_k={top_k!r}"
        )
    if top_p is not None and (
        isinstance(top_p, bool)
        or not isinstance(top_p, numbers.Real)
        or not MIN_TOP_P <= float(top_p) <= 1
    ):
        raise ValueError(
            f"`top_p` must be None or a number in [{MIN_TOP_P:g}, 1] (for the most probable "
            f"token alone use top_k=1). Received: top_p={top_p!r}"
        )
    return (
        float(temperature),
        None if top_k is None else int(top_k),
        None if top_p is None else float(top_p),
    )


#: Seeds are integers in [0, MAX_SEED]: they travel as int32 (a tensor argument of compiled
#: functions and exports), so every entry point takes the same range.
MAX_SEED = 2**31 - 1


def check_seed(seed: Any, allow_none: bool = True) -> int | None:
    """A Python-integer seed in [0, 2**31) (`None` passes with `allow_none`), else a
    `ValueError` naming it. Tensors are not checked here (they are int32 already)."""
    if seed is None and allow_none:
        return None
    if (
        isinstance(seed, (bool, np_bool))
        or not isinstance(seed, numbers.Integral)
        or not 0 <= seed <= MAX_SEED
    ):
        raise ValueError(
            f"`seed` must be {'None or ' if allow_none else ''}an integer in [0, 2**31). "
            f"Received: seed={seed!r}"
        )
    return int(seed)


def check_sampling_used(sample: bool, temperature: Any, top_k: Any, top_p: Any) -> None:
    """A `ValueError` when a sampling option is set but `sample` is off (greedy and beam
    search would ignore it without a word)."""
    if sample:
        return
    given = {"temperature": (temperature, 1.0), "top_k": (top_k, None), "top_p": (top_p, None)}
    for name, (value, default) in given.items():
        if value != default:
            raise ValueError(
                f"`{name}` applies to sampling only: pass sample=True with it. Received: "
                f"{name}={value!r} with sample=False"
            )


def argmax_tokens(x: Any) -> Any:
    """int32 `[N]`: the index of the first largest entry of each row of `x` `[N, V]`, as
    `ops.argmax(x, axis=-1)`, in two elementwise passes (the row maximum, then the lowest
    index that reaches it). XLA on CPU lowers `ops.argmax` to a variadic reduction about 3x
    slower at `[64, 8000]` (BENCHMARKS.md, section 4); greedy search and the Gumbel draw pick
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


def _unmerged(x):
    """`x` with NaN as 0: an elementwise step that stops XLA from merging a reduction of `x`
    with the reduction that made it. The row maximum of `[N, V/16]` block maxima is otherwise
    rewritten as one maximum over all `[N, V]` logits, which XLA on CPU hands to a library
    reduction ~30x slower than reading the maxima (65 us at `[64, 8000]`)."""
    return ops.where(ops.isnan(x), ops.zeros_like(x), x)


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
    logits (15-20 passes on V = 8000; BENCHMARKS.md section 4); logits within
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
      `_compact` lists the selected blocks (`top_k_method="sort"`: the candidates are
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


_GROUP = 16  # entries per group of `_compact`'s two-level count


def _compact(selected, capacity: int):
    """int32 `[N, capacity]`: the indices of the true entries of `selected` `[N, M]`, in
    order, then -1 (entries past `capacity` are left out).

    No scatter and no cumulative sum along M (inside a decoding loop under XLA on CPU both
    cost more than the whole search; BENCHMARKS.md section 4): the entries are counted in
    groups of 16 (`c_g`, the count through group g), slot r's group is the number of groups
    with `c_g <= r`, and its place in the group the number of the group's running counts
    that are still `<= r`. The two running counts are products with triangular matrices of
    ones (`_running_count`), not `ops.cumsum`.
    """
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
    reduce-window that took 75-80 us at `[64, 64, 16]` inside the decoding loop; the product
    is a small GEMM (BENCHMARKS.md section 4)."""
    n = int(counts.shape[-1])
    steps = ops.arange(n, dtype="int32")
    upper = ops.cast(ops.expand_dims(steps, 1) <= ops.expand_dims(steps, 0), "float32")
    return ops.cast(ops.matmul(ops.cast(counts, "float32"), upper), "int32")


def _race(weights, uniforms):
    """The Gumbel-max draw's scores in the exponential-race form: `argmax_j w_j / E_j`, with
    `w = exp(z - top)` and `E = -log u` standard exponential, is `argmax_j z_j + G_j`,
    `G = -log(-log u)` (take the log of the ratio), with one logarithm per token instead of
    two, and the weights the nucleus needs anyway. Filtered tokens have weight 0."""
    return weights / -ops.log(uniforms)


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


def _top_k_sample(z, keys, k, top_p, method, temperature=1.0):
    """The top-k draw among candidates (see `sample_tokens`); `z` are the logits before the
    temperature, which divides the candidates' values only (the same division, element by
    element, as `z / temperature`, and monotonic: the same candidates and the same cuts)."""
    rows, vocab = ops.shape(z)[0], int(z.shape[-1])
    inf = float("inf")
    if method == "sort":
        values, ids = ops.top_k(z, k)
        ids = ops.cast(ids, "int32")
        # Logits tied with the k-th beyond the k returned: the candidates miss some.
        overflow = ops.any(_count(z >= values[:, k - 1 : k]) > k)
    else:
        size = _BLOCK if top_p is None else _CUT_BLOCK
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
        index = _compact(selected, capacity)  # [N, capacity]; -1 past the last selected block
        valid = ops.expand_dims(index >= 0, 1)
        index = ops.expand_dims(ops.maximum(index, 0), 1)  # [N, 1, capacity]
        gathered = ops.take_along_axis(grouped, index, axis=2)  # [N, size, capacity]
        values = ops.reshape(
            ops.where(valid, gathered, ops.full_like(gathered, -inf)), (rows, capacity * size)
        )
        # (Slot-major, blocks in order: the candidates' ids ascend, as over all V.)
        slots = ops.reshape(ops.arange(size, dtype="int32"), (1, size, 1))
        ids = ops.reshape(slots * blocks + index, (rows, -1))
    if temperature != 1.0:
        values = values / temperature
        if method != "sort":
            bound = bound / temperature  # (still <= the k-th largest: division is monotonic)

    def among_candidates():
        top = _row_floor(values)[0]  # (the row's top logit is a candidate)
        if top_p is None and method != "sort":
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
        if method == "sort":  # (sorted: the k-th largest is the k-th candidate)
            cut = ops.maximum(values[:, k - 1 : k], floor)
        else:  # (the bracket starts at the k-th largest block maximum, not 104 below the top)
            cut = top_k_threshold(values, k, "bisection", lowest=bound)
        kept = values >= cut
        weights = ops.where(kept, ops.exp(values - top), ops.zeros_like(values))
        if top_p is not None:
            goal = top_p * ops.sum(weights, axis=-1, keepdims=True)
            if method == "sort":
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

    def over_all_tokens():
        all_ids = ops.expand_dims(ops.arange(vocab, dtype="int32"), 0)
        uniforms = _uniforms(_mix(ops.expand_dims(keys, -1) + all_ids))
        return gumbel_tokens(z, uniforms, temperature, k, top_p, method)

    return ops.cond(overflow, over_all_tokens, among_candidates)


def _two_level_sample(z, keys, lowest=None, top_p=None):
    """A token from `softmax(z)` over `z >= lowest` (and, with `top_p`, its nucleus), drawn in
    two levels: a block of 16 tokens (`_strided_blocks`) with probability proportional to its
    mass, then a token
    of that block (each by an exponential race over its own hashed uniforms: `[N, V/16]` and
    `[N, 16]` of them, not `[N, V]`). With `top_p`, the rejection chain of `_nucleus_chain` with
    a fresh draw per round from the tokens above the bound: exact, because the nucleus lies
    inside every such set, so an accepted draw is a draw from the nucleus. One pass over V a
    round, which gives both the mass above the rejected token (the test) and the block masses
    of the next draw. "Above" compares the float32 weights `exp(z - top)` (the probabilities
    the draw uses), not the logits: the loop then reads one `[N, V]` tensor, not two (logits
    whose weights round to the same float32 are tied, as equal probabilities)."""
    rows, vocab = ops.shape(z)[0], int(z.shape[-1])
    top, _ = _row_floor(z)
    floor = top - _ZERO_PROBABILITY  # (z >= max(min z, floor) is z >= floor: no min needed)
    if lowest is not None:
        floor = ops.maximum(floor, lowest)
    weights = _strided_blocks(ops.where(z >= floor, ops.exp(z - top), ops.zeros_like(z)), 0.0)
    blocks = int(weights.shape[-1])
    masses = ops.sum(weights, axis=1)  # [N, blocks]
    block_counters = ops.expand_dims(ops.arange(blocks, dtype="int32"), 0)
    token_counters = ops.expand_dims(ops.arange(blocks, blocks + _BLOCK, dtype="int32"), 0)
    golden = ops.convert_to_tensor(_GOLDEN, "int32")

    def draw(round_, masses, bound):
        """A token whose weight is above `bound` `[N, 1]`, drawn by mass, and its weight;
        round `round_`'s uniforms."""
        key = ops.expand_dims(_mix(keys + ops.multiply(ops.cast(round_, "int32"), golden)), -1)
        block = argmax_tokens(_race(masses, _uniforms(_mix(key + block_counters))))
        pick = ops.reshape(block, (rows, 1, 1))
        block_w = ops.take_along_axis(weights, pick, axis=2)[:, :, 0]  # [N, 16]
        block_w = ops.where(block_w > bound, block_w, ops.zeros_like(block_w))
        offset = argmax_tokens(_race(block_w, _uniforms(_mix(key + token_counters))))
        value = ops.take_along_axis(block_w, ops.expand_dims(offset, -1), axis=-1)
        return offset * blocks + block, value

    none = ops.full((rows, 1), -1.0, "float32")  # (below every weight)
    total = ops.sum(masses, axis=-1)
    token, value = draw(0, masses, none)
    if top_p is not None:
        goal = top_p * total

        def cond(i, token, value, done):
            # (Each round raises a rejected row's bound past one more logit: V rounds at most.)
            return ops.logical_and(i < vocab, ops.logical_not(ops.all(done)))

        def body(i, token, value, done):
            above = ops.sum(
                ops.where(weights > ops.expand_dims(value, -1), weights, ops.zeros_like(weights)),
                1,
            )  # [N, blocks]: the block masses above the drawn token
            done = ops.logical_or(done, ops.sum(above, axis=-1) < goal)
            next_token, next_value = draw(i + 1, above, value)
            keep = ops.expand_dims(done, -1)
            return (
                i + 1,
                ops.where(done, token, next_token),
                ops.where(keep, value, next_value),
                done,
            )

        _, token, _, _ = _rounds(cond, body, (0, token, value, goal <= 0), unrolled=1)
    return ops.where(total > 0, token, ops.zeros_like(token))  # (no kept token: 0)


def _rounds(cond, body, state, unrolled: int):
    """`ops.while_loop(cond, body, state)` with its first `unrolled` rounds written out (a
    finished row stays put, so extra rounds change nothing): most batches finish within
    them and the loop then stops at its first test. A loop nested in a decoding loop costs
    more per round than straight-line code under XLA on CPU (BENCHMARKS.md, section 4)."""
    for _ in range(unrolled):
        state = body(*state)
    return ops.while_loop(cond, body, state)


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


# ---------------------------------------------------------------- a stateless generator
def _int32(value: int) -> int:
    """A 32-bit pattern as the int32 holding the same bits."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


_M1, _M2, _GOLDEN = _int32(0x7FEB352D), _int32(0x846CA68B), _int32(0x9E3779B9)


def _shift_right(x, bits: int):
    """Logical right shift of int32 bit patterns (`>>` is arithmetic on negatives)."""
    return ops.bitwise_and(ops.right_shift(x, bits), (1 << (32 - bits)) - 1)


def _mix(x):
    """The `lowbias32` integer hash (C. Wellons), in int32 arithmetic that wraps."""
    x = ops.bitwise_xor(x, _shift_right(x, 16))
    x = ops.multiply(x, ops.convert_to_tensor(_M1, "int32"))
    x = ops.bitwise_xor(x, _shift_right(x, 15))
    x = ops.multiply(x, ops.convert_to_tensor(_M2, "int32"))
    return ops.bitwise_xor(x, _shift_right(x, 16))


def seed_tensor(seed: Any):
    """A seed (Python int or integer tensor) as an int32 scalar tensor (Python ints are reduced
    to 32 bits)."""
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return ops.convert_to_tensor(_int32(int(seed)), "int32")
    return ops.reshape(ops.cast(seed, "int32"), ())


def step_uniforms(seed: Any, t: Any, rows: int | Any):
    """`[rows]` float32 uniforms in (0, 1) for step `t`, a function of `(seed, t, row)` only.

    `u = ((hash(hash(hash(seed) + t * φ) + row) >> 9) + 0.5) / 2**23`, with `hash` the
    `lowbias32` integer hash and φ = 0x9E3779B9 (all mod 2**32): 23 random bits per number,
    exact in float32, so `0 < u < 1` always.

    Args:
        seed: A Python int or an int32 scalar tensor.
        t: The step index (int or int32 scalar tensor).
        rows: How many numbers (int or scalar tensor).

    Returns:
        float32 `[rows]`.
    """
    return _uniforms(_row_keys(seed, t, rows))


def token_uniforms(seed: Any, t: Any, rows: int | Any, vocab: int | Any):
    """`[rows, vocab]` float32 uniforms in (0, 1) for step `t`: element `(r, j)` is
    `((hash(row_key_r + j) >> 9) + 0.5) / 2**23` with `row_key_r = hash(step_key + r)` and
    `step_key = hash(hash(seed) + t * φ)` (the keys of `step_uniforms`), so each row's
    numbers are independent of the others' and of the vocabulary size.

    Args:
        seed: A Python int or an int32 scalar tensor.
        t: The step index (int or int32 scalar tensor).
        rows: N (int or scalar tensor).
        vocab: V (int or scalar tensor).

    Returns:
        float32 `[rows, vocab]`.
    """
    tokens = ops.expand_dims(ops.arange(vocab, dtype="int32"), 0)
    return _uniforms(_mix(ops.expand_dims(_row_keys(seed, t, rows), -1) + tokens))


def _row_keys(seed, t, rows):
    """int32 `[rows]`: `hash(hash(hash(seed) + t * φ) + row)`, the per-row keys of step `t`."""
    key = _mix(seed_tensor(seed))
    step = _mix(key + ops.multiply(ops.cast(t, "int32"), ops.convert_to_tensor(_GOLDEN, "int32")))
    return _mix(step + ops.arange(rows, dtype="int32"))


def _uniforms(bits):
    """Hashed int32 bits as float32 uniforms `((bits >> 9) + 0.5) / 2**23`, in (0, 1)."""
    return (ops.cast(_shift_right(bits, 9), "float32") + 0.5) * (1.0 / (1 << 23))
