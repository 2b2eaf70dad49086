"""Sampling: the token distribution against softmax(logits / T) restricted to the top-k / nucleus
set (chi-square and per-token bounds, fixed seeds), filtered tokens never drawn, seeds, XLA."""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops
from scipy import stats

from keras_attention.decoding import greedy_search, sample_search
from keras_attention.functional.sampling import (
    argmax_tokens,
    draw_tokens,
    filter_logits,
    gumbel_tokens,
    sample_tokens,
    step_uniforms,
    token_uniforms,
)
from keras_attention.functional.sampling.fast import compact_indices
from tests.backend_utils import BACKEND, jit, to_numpy
from tests.reference import lowbias32 as _lowbias32

START, END = 1, 9
VOCAB = 10
# Fixed logits: token 0 (padding) and the end token impossible (-1e9), the rest spread so that
# no top-k or nucleus boundary below is within float32 rounding of a tie.
LOGITS = np.array([-1e9, 0.3, 2.0, 1.1, -0.4, 0.7, 1.6, -1.3, 0.1, -1e9], "float32")
ROWS, STEPS = 3000, 4  # 12,000 draws per case


def slow_on_torch(test):
    """`jit` is torch.compile on PyTorch: half a minute per search on a CPU."""
    return pytest.mark.slow(test) if BACKEND == "torch" else test


def _step_fn(tokens, state, t):
    """The same distribution at every step for every row."""
    logits = ops.tile(ops.expand_dims(ops.convert_to_tensor(LOGITS), 0), (ops.shape(tokens)[0], 1))
    return logits, state, None


def _expected(temperature, top_k, top_p, logits=LOGITS):
    """softmax(logits / T) restricted to the top-k, then to the nucleus of the renormalised
    remainder, in float64 (an independent NumPy transcription)."""
    z = logits.astype(np.float64) / temperature
    vocab = z.size
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-p, kind="stable")
    keep = np.zeros(vocab, bool)
    keep[order[: top_k or vocab]] = True
    q = np.where(keep, p, 0.0)
    q /= q.sum()
    if top_p is not None:
        mass_before = np.cumsum(q[order]) - q[order]
        nucleus = order[mass_before < top_p]
        keep = np.zeros(vocab, bool)
        keep[nucleus] = True
        q = np.where(keep, q, 0.0)
        q /= q.sum()
    return q


CASES = [
    (1.0, None, None),
    (0.7, 3, None),
    (1.5, None, 0.8),
    (0.8, 5, 0.7),
    (2.0, 1, None),  # top-k 1: always the argmax
]


def _check_frequencies(ids, expected):
    """Filtered tokens never drawn; chi-square and 5-sigma bounds on the kept ones (the kept
    tokens expected fewer than 5 times share one chi-square bin)."""
    counts = np.bincount(ids, minlength=expected.size)
    n = ids.size
    kept = expected > 0
    # Filtered tokens never appear.
    assert counts[~kept].sum() == 0, (counts, expected)
    if kept.sum() > 1:
        # Pearson chi-square over the kept tokens; with a fixed seed the test is deterministic,
        # and a correct sampler fails this bound with probability 1e-4.
        big = kept & (n * expected >= 5)
        observed = np.append(counts[big], counts[kept & ~big].sum())
        wanted = np.append(n * expected[big], n * expected[kept & ~big].sum())
        observed, wanted = observed[wanted > 0], wanted[wanted > 0]
        chi2 = ((observed - wanted) ** 2 / wanted).sum()
        assert chi2 < stats.chi2.ppf(1 - 1e-4, observed.size - 1), (chi2, observed, wanted)
        # And every token expected 5 times or more within 5 standard errors of its count.
        sigma = np.sqrt(n * expected * (1 - expected))
        assert np.all((np.abs(counts - n * expected) <= 5 * sigma + 1e-9)[big])


@pytest.mark.parametrize("temperature, top_k, top_p", CASES)
def test_frequencies_match_the_filtered_softmax(temperature, top_k, top_p):
    result = sample_search(
        _step_fn, (), ROWS, START, END, STEPS, temperature=temperature, top_k=top_k,
        top_p=top_p, seed=1234,
    )  # fmt: skip
    ids = to_numpy(result["ids"]).ravel()
    assert ids.size == ROWS * STEPS  # the end token is impossible: every row runs STEPS steps
    _check_frequencies(ids, _expected(temperature, top_k, top_p))
    # Scores: log-probabilities of the drawn tokens under the unfiltered model (T = 1).
    log_p = LOGITS.astype(np.float64) - np.log(np.exp(LOGITS.astype(np.float64)).sum())
    np.testing.assert_allclose(
        to_numpy(result["scores"]), log_p[to_numpy(result["ids"])].sum(1), rtol=1e-5, atol=1e-5
    )


def test_draws_are_independent_across_steps_and_rows():
    ids = to_numpy(sample_search(_step_fn, (), ROWS, START, END, STEPS, seed=5)["ids"])
    p = _expected(1.0, None, None)
    # Two different steps of a row agree with probability sum(p^2), not more.
    agree = (ids[:, 0] == ids[:, 1]).mean()
    sigma = np.sqrt((p**2).sum() * (1 - (p**2).sum()) / ROWS)
    assert abs(agree - (p**2).sum()) < 5 * sigma
    agree_rows = (ids[:-1, 0] == ids[1:, 0]).mean()  # neighbouring rows, same step
    assert abs(agree_rows - (p**2).sum()) < 5 * sigma


def test_step_uniforms_are_the_documented_hash():
    """`step_uniforms` against a NumPy uint32 transcription of lowbias32."""

    with np.errstate(over="ignore"):
        for seed, t in ((0, 0), (12345, 3), (2**32 - 1, 41)):
            key = _lowbias32(np.array([seed], np.uint64) & 0xFFFFFFFF)
            step = _lowbias32(
                ((key.astype(np.uint64) + np.uint64(t * 0x9E3779B9)) & 0xFFFFFFFF).astype(np.uint32)
            )
            bits = _lowbias32(
                ((step.astype(np.uint64) + np.arange(7, dtype=np.uint64)) & 0xFFFFFFFF).astype(
                    np.uint32
                )
            )
            expected = ((bits >> np.uint32(9)).astype(np.float64) + 0.5) / 2**23
            np.testing.assert_array_equal(
                to_numpy(step_uniforms(seed, t, 7)), expected.astype("float32")
            )


def test_inverse_cdf_by_hand():
    log_probs = np.log(np.array([[0.5, 0.0, 0.3, 0.2]] * 4, "float32") + 1e-38)
    u = np.array([0.1, 0.55, 0.81, 0.999], "float32")
    np.testing.assert_array_equal(to_numpy(draw_tokens(log_probs, u)), [0, 2, 3, 3])
    # top-k 2 keeps {0, 2}: mass 0.5 / 0.8 = 0.625 for token 0.
    np.testing.assert_array_equal(to_numpy(draw_tokens(log_probs, u, top_k=2)), [0, 0, 2, 2])
    # top-p 0.5: only token 0 (its mass already reaches 0.5).
    np.testing.assert_array_equal(to_numpy(draw_tokens(log_probs, u, top_p=0.5)), [0, 0, 0, 0])


def test_seeds_reproduce_and_differ():
    run = lambda seed: to_numpy(sample_search(_step_fn, (), 64, START, END, 5, seed=seed)["ids"])  # noqa: E731
    np.testing.assert_array_equal(run(7), run(7))
    assert not np.array_equal(run(7), run(8))
    assert not np.array_equal(run(None), run(None))  # fresh seeds: equal with prob ~1e-60
    # A tensor seed draws what the same Python int draws.
    np.testing.assert_array_equal(run(ops.convert_to_tensor(7, "int32")), run(7))


@slow_on_torch
@pytest.mark.parametrize("method", ["bisection", "sort"])
def test_compiled_equals_eager_for_the_same_seed(method):
    def run(seed):
        return sample_search(
            _step_fn, (), 64, START, END, 6, top_k=5, top_p=0.9, seed=seed, top_k_method=method
        )

    eager = run(ops.convert_to_tensor(11, "int32"))
    compiled = jit(run)(ops.convert_to_tensor(11, "int32"))
    for key in ("ids", "lengths"):
        np.testing.assert_array_equal(to_numpy(compiled[key]), to_numpy(eager[key]), key)
    np.testing.assert_allclose(to_numpy(compiled["scores"]), to_numpy(eager["scores"]), 1e-6)


def test_top_k_one_is_greedy_and_alignments_follow():
    def step_fn(tokens, state, t):  # changing logits, one-hot alignments of the fed token
        logits = ops.one_hot((tokens + t) % 7 + 2, VOCAB) * 3.0
        return logits, state, ops.one_hot(tokens, VOCAB)

    greedy = greedy_search(step_fn, (), 5, START, 8, 6)
    sampled = sample_search(step_fn, (), 5, START, 8, 6, top_k=1, seed=0)
    for key in ("ids", "lengths", "scores", "alignments"):
        np.testing.assert_allclose(to_numpy(sampled[key]), to_numpy(greedy[key]), err_msg=key)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"temperature": 0.0}, "temperature=0.0"),
        ({"temperature": -1}, "temperature=-1"),
        ({"temperature": float("nan")}, "temperature=nan"),
        ({"top_k": 0}, "top_k=0"),
        ({"top_k": 2.5}, "top_k=2.5"),
        ({"top_p": 0.0}, "top_p=0.0"),
        ({"top_p": 1.5}, "top_p=1.5"),
        ({"seed": "x"}, "seed='x'"),
        ({"max_length": 0}, "max_length=0"),
        ({"top_k_method": "heap"}, "top_k_method='heap'"),
        ({"end_id": 10}, "end_id=10"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    args = {"start_id": START, "end_id": END, "max_length": 3, **kwargs}
    with pytest.raises(ValueError, match=match):
        sample_search(_step_fn, (), 2, **args)


# ---------------------------------------------------------------- the sort-free filters
def _reference_kept(z, top_k, top_p):
    """The kept set by sorting, in float64: the k largest, then the nucleus of the rest (the
    token that reaches `top_p` included); the same tie and zero-probability rules as
    `filter_logits` (ties at a boundary kept, tokens 104 below the top dropped). Also says
    which rows are too close to call: a boundary within 2**-22 x max(1, |top|) of the next
    logit (the filter's tie resolution is 2**-23 of that), or a nucleus whose cumulative mass
    lands within float32 rounding of the goal."""
    z = z.astype(np.float64)
    top = z.max(-1, keepdims=True)
    resolution = np.maximum(np.abs(top), 1.0) * 2.0**-22
    keep = z >= top - 104.0
    ambiguous = np.zeros(len(z), bool)
    values = -np.sort(-np.where(keep, z, -np.inf), axis=-1)  # decreasing

    def cut_at(position):  # keep values >= values[position]; flag a near-tie below it
        nonlocal ambiguous
        cut = np.take_along_axis(values, position[:, None], -1)
        below = np.where(values < cut, values, -np.inf).max(-1, keepdims=True)
        ambiguous |= (cut - below)[:, 0] <= resolution[:, 0]
        return cut

    if top_k is not None:
        available = keep.sum(-1)
        keep &= z >= cut_at(np.minimum(top_k, available) - 1)
        values = -np.sort(-np.where(keep, z, -np.inf), axis=-1)
    if top_p is not None:
        w = np.where(np.isfinite(values), np.exp(values - top), 0.0)
        cum = np.cumsum(w, -1)
        total = cum[:, -1:]
        position = ((cum - w) < top_p * total).sum(-1) - 1  # the token that reaches top_p
        keep &= z >= cut_at(position)
        ambiguous |= np.any(np.abs(cum - top_p * total) <= 1e-5 * total, axis=-1)
    return keep, ambiguous


@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0])
@pytest.mark.parametrize(
    "top_k, top_p, method",
    [(1, None, "bisection"), (7, None, "bisection"), (50, None, "bisection"),
     (499, None, "bisection"), (600, None, "bisection"), (7, None, "sort"), (50, None, "sort"),
     (499, None, "sort"), (None, 0.05, "auto"), (None, 0.5, "auto"), (None, 0.9, "auto"),
     (None, 0.999, "auto"), (50, 0.8, "bisection"), (50, 0.8, "sort")],
)  # fmt: skip
def test_filter_logits_keeps_what_a_sort_keeps(scale, top_k, top_p, method):
    rng = np.random.default_rng(int(scale * 100) + (top_k or 0))
    z = (rng.standard_normal((48, 500)) * scale).astype("float32")
    z[:4, ::3] = -1e9  # masked tokens, as Seq2Seq masks [PAD] and [START]
    z[4:8, 100:] = -np.inf
    z[8:12] += 1e4  # a large offset: the cut is relative to each row's top
    out = to_numpy(filter_logits(z, top_k=top_k, top_p=top_p, top_k_method=method))
    # Kept = not filtered and with a float32 probability (k >= V filters nothing at all).
    kept = (out > -1e38) & (z >= z.max(-1, keepdims=True) - 104.0)
    expected, ambiguous = _reference_kept(z, top_k, top_p)
    assert ambiguous.sum() <= 8, ambiguous.sum()  # the comparison covers most rows
    np.testing.assert_array_equal(kept[~ambiguous], expected[~ambiguous])
    if top_k is not None and top_p is None:
        # k tokens, or all that have a probability; more only through exact ties, as in the
        # float32 rows offset by 1e4.
        available = (z >= z.max(-1, keepdims=True) - 104.0).sum(-1)
        np.testing.assert_array_equal(kept.sum(-1)[12:], np.minimum(top_k, available)[12:])
        assert np.all(kept.sum(-1) >= np.minimum(top_k, available))


def test_filter_logits_keeps_ties_and_never_makes_nan():
    z = np.array([[0.0, 1.0, 0.0, 0.0, -2.0], [5.0, 5.0, 5.0, 5.0, 5.0]], "float32")
    np.testing.assert_array_equal(
        to_numpy(filter_logits(z, top_k=2)) > -1e38,
        [[True, True, True, True, False], [True] * 5],  # the 2nd largest is a three-way tie
    )
    np.testing.assert_array_equal(
        to_numpy(filter_logits(z, top_k=1)) > -1e38,
        [[False, True, False, False, False], [True] * 5],
    )
    # 1 / (1 + 3/e) = 0.475 < 0.5: the tied zeros join, all three.
    np.testing.assert_array_equal(
        to_numpy(filter_logits(z, top_p=0.5)) > -1e38,
        [[True, True, True, True, False], [True] * 5],
    )
    extreme = np.array([[3e38, -3e38, 0.0], [-np.inf, -np.inf, 2.0]], "float32")
    for kwargs in ({"top_k": 2}, {"top_p": 0.9}, {"top_k": 1, "top_p": 0.5}):
        out = to_numpy(filter_logits(extreme, **kwargs))
        assert not np.isnan(out).any(), kwargs
        np.testing.assert_array_equal(np.argmax(out, -1), [0, 2])
        ids = to_numpy(gumbel_tokens(extreme, np.full((2, 3), 0.5, "float32"), **kwargs))
        np.testing.assert_array_equal(ids, [0, 2])


def test_gumbel_tokens_is_the_argmax_of_the_perturbed_kept_logits():
    """By hand: with uniforms u, the draw is argmax(z - log(-log u)) over the kept tokens."""
    z = np.log(np.array([[0.5, 0.2, 0.3], [0.5, 0.2, 0.3]], "float32"))
    u = np.array([[0.1, 0.99, 0.5], [0.9, 0.05, 0.2]], "float32")
    noisy = z.astype(np.float64) - np.log(-np.log(u.astype(np.float64)))
    np.testing.assert_array_equal(to_numpy(gumbel_tokens(z, u)), np.argmax(noisy, -1))
    # top-k 2 drops token 1, whose noisy value won row 0.
    np.testing.assert_array_equal(
        to_numpy(gumbel_tokens(z, u, top_k=2)), np.argmax(np.where([1, 0, 1], noisy, -np.inf), -1)
    )


def test_token_uniforms_are_the_documented_hash():
    """`token_uniforms` against a NumPy uint32 transcription (row keys, then one hash a token)."""

    add = lambda a, b: ((a.astype(np.uint64) + b) & 0xFFFFFFFF).astype(np.uint32)  # noqa: E731
    with np.errstate(over="ignore"):
        seed, t = 2**31 + 5, 9
        key = _lowbias32(np.array([seed], np.uint64) & 0xFFFFFFFF)
        step = _lowbias32(add(key, np.uint64(t * 0x9E3779B9 & 0xFFFFFFFF)))
        rows = _lowbias32(add(step, np.arange(3, dtype=np.uint64)))
        bits = _lowbias32(add(rows[:, None], np.arange(5, dtype=np.uint64)[None, :]))
        expected = ((bits >> np.uint32(9)).astype(np.float64) + 0.5) / 2**23
    np.testing.assert_array_equal(
        to_numpy(token_uniforms(seed, t, 3, 5)), expected.astype("float32")
    )


def test_argmax_tokens_is_argmax_first_index_and_takes_empty_batches():
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 3, size=(40, 9)).astype("float32")  # many ties: the first one wins
    x[0] = -np.inf
    np.testing.assert_array_equal(to_numpy(argmax_tokens(x)), np.argmax(x, -1))
    assert to_numpy(argmax_tokens(np.full((2, 3), np.nan, "float32"))).tolist() == [0, 0]
    empty = to_numpy(argmax_tokens(np.zeros((0, 5), "float32")))
    assert empty.shape == (0,)
    assert to_numpy(filter_logits(np.zeros((0, 5), "float32"), top_k=2, top_p=0.5)).shape == (0, 5)


# ------------------------------------------- a large vocabulary: the candidate and chain paths
# V = 1000 (not a multiple of the 16-token blocks): top-k draws among the blocks with the k
# largest maxima, top-p >= 0.5 alone by the rejection chain (`sampling.sample_tokens`).
BIG_LOGITS = (np.random.default_rng(3).normal(size=1000) * 2.5).astype("float32")
BIG_LOGITS[[0, END]] = -1e9


_slow_if_torch = [pytest.mark.slow] if BACKEND == "torch" else []


def _big_step_fn(tokens, state, t):
    logits = ops.convert_to_tensor(BIG_LOGITS)
    return ops.tile(ops.expand_dims(logits, 0), (ops.shape(tokens)[0], 1)), state, None


@pytest.mark.parametrize(
    "temperature, top_k, top_p, method",
    [
        # (Bisection in eager PyTorch: 10-15 s a case, so slow there; "sort" is its default.)
        pytest.param(1.0, 5, None, "bisection", marks=_slow_if_torch),
        pytest.param(0.8, 12, 0.7, "bisection", marks=_slow_if_torch),
        (1.0, 12, 0.7, "sort"),
        (1.0, None, 0.9, "auto"),
        pytest.param(1.3, None, 0.6, "auto", marks=_slow_if_torch),  # (12 s in eager torch)
        (0.9, None, 0.3, "auto"),  # p < 0.5: the cut by bisection, then the two-level draw
        (1.0, None, None, "auto"),  # the plain two-level draw
    ],
)
def test_frequencies_with_a_large_vocabulary(temperature, top_k, top_p, method):
    result = sample_search(
        _big_step_fn, (), ROWS, START, END, STEPS, temperature=temperature, top_k=top_k,
        top_p=top_p, seed=99, top_k_method=method,
    )  # fmt: skip
    expected = _expected(temperature, top_k, top_p, BIG_LOGITS)
    assert (ROWS * STEPS * expected >= 5).sum() >= 3  # (a case that the chi-square can judge)
    _check_frequencies(to_numpy(result["ids"]).ravel(), expected)


def _logit_cases():
    rng = np.random.default_rng(1)
    yield "normal", rng.normal(size=(16, 1001)).astype("float32")
    yield "peaked", (rng.normal(size=(16, 1001)) * 4).astype("float32")
    z = rng.normal(size=(16, 1001)).astype("float32")
    z[:, ::3] = -np.inf  # masked tokens
    yield "masked", z
    yield "rounded", np.round(rng.normal(size=(16, 1001)) * 2).astype("float32")  # many ties
    yield "flat", np.zeros((4, 1001), "float32")  # every block tied: all V drawn from
    z = np.full((3, 1001), -np.inf, "float32")
    z[1, 5] = 0.0  # rows without a finite logit draw token 0
    yield "no finite logit", z


@pytest.mark.parametrize(
    "name, z", list(_logit_cases()), ids=lambda x: x if isinstance(x, str) else ""
)
def test_top_k_sample_tokens_draws_what_the_full_gumbel_draw_draws(name, z):
    """With top-k, the candidate blocks and `ops.top_k`'s candidates (with the nucleus by
    bisection, by the sorted candidates' cumulative mass, or by the rejection chain) give the
    ids of `gumbel_tokens` over all V with the same uniforms (ties, -inf and fallbacks
    included); the temperature, which divides only the candidates there, as well."""
    rows, vocab = z.shape
    for kwargs in (
        {"top_k": 10},
        {"top_k": 10, "temperature": 1.7},
        {"top_k": 10, "top_p": 0.8, "temperature": 0.7},
        {"top_k": 10, "top_p": 0.3},
        {"top_k": 10, "top_p": 0.3, "temperature": 0.5},
        {"top_k": 10, "top_k_method": "sort"},
        {"top_k": 10, "top_p": 0.8, "top_k_method": "sort"},
        {"top_k": 10, "top_p": 0.8, "top_k_method": "sort", "temperature": 0.7},
    ):
        for t in range(2):
            full = gumbel_tokens(z, token_uniforms(21, t, rows, vocab), **kwargs)
            fast = sample_tokens(z, 21, t, **kwargs)
            np.testing.assert_array_equal(to_numpy(fast), to_numpy(full), err_msg=str(kwargs))


@pytest.mark.slow  # three compiled searches (~9 s on TensorFlow)
def test_large_vocabulary_compiled_equals_eager():
    def run(seed):
        return [
            sample_search(_big_step_fn, (), 32, START, END, 3, seed=seed, top_k=top_k, top_p=top_p)[
                "ids"
            ]
            for top_k, top_p in ((12, None), (12, 0.8), (None, 0.9))
        ]

    eager = run(ops.convert_to_tensor(5, "int32"))
    compiled = jit(run)(ops.convert_to_tensor(5, "int32"))
    for a, b in zip(compiled, eager):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


@pytest.mark.parametrize(
    "name, z", list(_logit_cases()), ids=lambda x: x if isinstance(x, str) else ""
)
def test_two_level_draws_keep_the_kept_set(name, z):
    """Without top-k, draws are two-level (a block by mass, then a token): never a filtered
    token, never a token without probability, token 0 in rows without a finite logit."""
    rows, vocab = z.shape
    for kwargs in ({}, {"top_p": 0.9}, {"top_p": 0.55}, {"top_p": 0.3, "temperature": 0.8}):
        kept = to_numpy(filter_logits(z, **kwargs)) > -1e38
        for t in range(3):
            ids = to_numpy(sample_tokens(z, 21, t, **kwargs))
            has_token = np.isfinite(z).any(-1)
            assert np.all(kept[np.arange(rows), ids][has_token]), kwargs
            assert np.all(ids[~has_token] == 0)


def test_compaction_lists_the_selected_indices_in_order():
    """`compact_indices` (the top-k candidates' block compaction) against `np.flatnonzero`: every
    density from none to all, M not a multiple of its groups of 16, more selected than slots."""
    rng = np.random.default_rng(4)
    selected = rng.random((24, 500)) < np.linspace(0.0, 1.0, 24)[:, None]
    selected[0] = False
    for capacity in (1, 64, 512):
        out = to_numpy(compact_indices(selected, capacity))
        for row, flags in zip(out, selected):
            expected = np.full(capacity, -1)
            found = np.flatnonzero(flags)[:capacity]
            expected[: found.size] = found
            np.testing.assert_array_equal(row, expected)
