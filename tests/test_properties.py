"""Property-based tests (hypothesis) of the invariants of docs/design.md §2, on every backend.

Hypothesis draws the shapes (B, T, S and the feature sizes), the memory masks (full rows, empty
rows, a single valid position, prefixes and arbitrary patterns), the mode options (window radius,
`use_scale`, `normalize`), single-step or sequence queries and the query positions; the layer ×
alignment matrix is a pytest parameter so every combination runs. Checked, for every example:

- the weights and the context equal the float64 NumPy transcription (`tests/reference.py`);
- weights are non-negative, exactly zero at padding and outside the local window;
- they sum to one over the valid positions (global), over the window's valid positions
  (local_monotonic), or to at most one (local_predictive, whose Gaussian is not renormalised);
- a row with no valid position gives zero weights and a zero context, never NaN;
- padding invariance: new values at padded positions, or more padding appended, change nothing;
- permutation equivariance: permuting the batch permutes the outputs; permuting memory positions
  with their mask permutes the global weights the same way and leaves the context unchanged (for
  local windows: permuting inside the window, see `test_memory_permutation`);
- mixed precision (`mixed_bfloat16`, `mixed_float16`): the same invariants, looser tolerances;
- `AttentionRNN`: outputs, alignments and states do not depend on padded memory values.

Determinism: every test runs with `derandomize=True` and `database=None` (no `.hypothesis`
directory is written), so CI sees the same examples on every run. Layers are built once per
configuration and cached; on JAX every call goes through `jax.jit` (one XLA compilation per shape
instead of one per operation, which would cost seconds per example).
"""

from __future__ import annotations

import operator
import zlib

import keras
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttentionCell,
    LuongAttention,
    LuongAttentionCell,
)
from tests import reference
from tests.conftest import layer_weights, randomize_weights

# Deterministic, database-free profile; the conftest's autouse policy-reset fixture is harmless
# across examples, hence function_scoped_fixture is suppressed.
_PROFILE = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "print_blob": False,
    "suppress_health_check": [
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
}

# float32 against float64: as tests/layers/test_reference_match.py.
TOL = {"rtol": 1e-5, "atol": 1e-5}
# Same computation, reordered or resized (padding appended, rows or positions permuted).
SAME = {"rtol": 1e-6, "atol": 1e-6}
GARBAGE = 50.0  # scale of the values put at padded memory positions

BACKEND = keras.backend.backend()


def _examples(count: int, jax_count: int) -> int:
    """`max_examples` for this backend.

    On JAX every new shape (and configuration) costs one XLA compilation, 0.3-0.7 s on a busy
    CPU, against milliseconds per eager call on TensorFlow and PyTorch. The layer math is the
    same `keras.ops` code on every backend, so JAX runs fewer examples to stay under a minute.
    """
    return jax_count if BACKEND == "jax" else count


# (id, score mode, alignment); AdditiveAttention is global only.
CASES = [
    (f"{mode}-{alignment}", mode, alignment)
    for mode in ("dot", "general", "concat")
    for alignment in ("global", "local_monotonic", "local_predictive")
] + [("additive-global", "additive", "global")]
CASE_IDS = [c[0] for c in CASES]
# Hypothesis starts from the "simplest" draw (first option, smallest size); with the orders below
# that first example is already a padded batch, which matters where few examples run (JAX).
MASK_KINDS = ("prefix", "pattern", "empty", "single", "full")


# ----------------------------------------------------------------------------- strategies
def _sizes(largest: int, first: int | None = None) -> st.SearchStrategy[int]:
    """Sizes 1..largest, starting (as the simplest example) from `first` (default largest)."""
    first = largest if first is None else first
    return st.sampled_from([first] + [n for n in range(1, largest + 1) if n != first])


@st.composite
def memory_masks(draw, batch: int, length: int) -> np.ndarray:
    """A boolean `[batch, length]` mask, each row full, empty, one-hot, a prefix or arbitrary."""
    rows = []
    for _ in range(batch):
        kind = draw(st.sampled_from(MASK_KINDS))
        if kind == "full":
            row = [True] * length
        elif kind == "empty":
            row = [False] * length
        elif kind == "single":
            j = draw(st.integers(0, length - 1))
            row = [i == j for i in range(length)]
        elif kind == "prefix":
            n = draw(st.integers(1, length))
            row = [i < n for i in range(length)]
        else:
            row = draw(st.lists(st.booleans(), min_size=length, max_size=length))
        rows.append(row)
    return np.array(rows, dtype=bool)


@st.composite
def layer_options(draw, mode: str, alignment: str) -> dict:
    """Constructor options and feature sizes for one (score mode, alignment) case."""
    options = {
        "mode": mode,
        "alignment": alignment,
        "radius": 0,
        "use_scale": draw(st.booleans()),
        "normalize": mode == "additive" and draw(st.booleans()),
        "d_query": draw(st.sampled_from((2, 3))),
        "d_value": draw(st.sampled_from((2, 3))),
        "d_key": None,
    }
    if alignment == "local_monotonic":
        options["radius"] = draw(st.integers(0, 3))
    elif alignment == "local_predictive":
        options["radius"] = draw(st.integers(1, 3))
    # An explicit key (a [query, value, key] call) for some examples; dot needs d_k == d_s.
    if draw(st.booleans()):
        options["d_key"] = options["d_query"] if mode == "dot" else draw(st.sampled_from((2, 4)))
    elif mode == "dot":
        options["d_value"] = options["d_query"]
    return options


@st.composite
def problems(draw, mode: str, alignment: str, max_batch: int = 3, max_steps: int = 3):
    """Options, inputs (query, value, key, mask, positions) and a numpy seed for one example."""
    options = draw(layer_options(mode, alignment))
    batch = draw(_sizes(max_batch))
    steps = draw(_sizes(max_steps))
    length = draw(_sizes(6, first=5))
    single_step = draw(st.booleans())
    mask = draw(memory_masks(batch, length))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    query_shape = (batch, options["d_query"]) if single_step else (batch, steps, options["d_query"])
    query = rng.normal(size=query_shape).astype("float32")
    value = rng.normal(size=(batch, length, options["d_value"])).astype("float32")
    key = None
    if options["d_key"] is not None:
        key = rng.normal(size=(batch, length, options["d_key"])).astype("float32")
    value, key = _with_garbage(rng, mask, value, key)
    # Step indices: needed by single-step local_monotonic; may run past the memory (clipped).
    positions = None
    if single_step and alignment == "local_monotonic":
        positions = rng.integers(0, length + 2, size=(batch,)).astype("int32")
    elif not single_step and draw(st.booleans()):
        positions = rng.integers(0, length + 2, size=(batch, steps)).astype("int32")
    return options, (query, value, key, mask, positions), seed


# ----------------------------------------------------------------------------- helpers
def _with_garbage(rng, mask, value, key=None, scale=GARBAGE):
    """Copies of value (and key) with fresh large random numbers at the padded positions."""
    value = value.copy()
    value[~mask] = scale * rng.normal(size=value[~mask].shape)
    if key is not None:
        key = key.copy()
        key[~mask] = scale * rng.normal(size=key[~mask].shape)
    return value, key


def _seed_of(key) -> int:
    return zlib.crc32(repr(key).encode())


def _compiled(fn):
    """`fn` jit-compiled on JAX (eager per-op dispatch compiles every op for every new shape)."""
    if BACKEND == "jax":
        import jax

        return jax.jit(fn)
    return fn


_LAYERS: dict = {}


def _attention(options: dict, dtype: str = "float32"):
    """`(layer, call, weights)`: a built layer with random weights, cached by configuration.

    `call(query, value, key, mask, positions)` returns `(output, weights)` as NumPy arrays;
    `weights` are the layer's weights by contract name (float64) for the reference.
    """
    cache_key = (tuple(sorted(options.items())), dtype)
    if cache_key not in _LAYERS:
        if options["mode"] == "additive":
            layer = AdditiveAttention(
                score_units=3,
                normalize=options["normalize"],
                use_scale=options["use_scale"],
                dtype=dtype,
            )
        else:
            layer = LuongAttention(
                options["mode"],
                options["alignment"],
                window_radius=options["radius"],
                score_units=3,
                use_scale=options["use_scale"],
                dtype=dtype,
            )
        d_key = options["d_key"] or options["d_value"]
        layer.build(
            (None, options["d_query"]), (None, None, options["d_value"]), (None, None, d_key)
        )
        randomize_weights(layer, np.random.default_rng(_seed_of(cache_key)))

        def run(query, value, key, mask, positions):
            return layer(
                query,
                value,
                key,
                value_mask=mask,
                query_positions=positions,
                return_attention_scores=True,
            )

        _LAYERS[cache_key] = (layer, _compiled(run), layer_weights(layer))
    layer, run, weights = _LAYERS[cache_key]

    def call(query, value, key, mask, positions, raw=False):
        out = run(query, value, key, mask, positions)
        if raw:
            return out
        return tuple(np.asarray(keras.ops.convert_to_numpy(x)).astype("float64") for x in out)

    return layer, call, weights


def _as_sequence(query, positions):
    """Rank-3 query and `[B, T]` positions (or None) for the reference."""
    if query.ndim == 2:
        query = query[:, None, :]
        if positions is not None:
            positions = np.asarray(positions).reshape(-1, 1)
    return query, positions


def _reference(options, weights, query, value, key, mask, positions):
    query, positions = _as_sequence(query, positions)
    out, alpha = reference.attention(
        query,
        value,
        key,
        mode=options["mode"],
        weights=weights,
        normalize=options["normalize"],
        use_scale=options["use_scale"],
        value_mask=mask,
        alignment=options["alignment"],
        window_radius=options["radius"],
        query_positions=positions,
    )
    return out, alpha


def _centres(options, weights, query, mask, positions):
    """Window centres `round(p_t)` `[B, T]` and `p_t` by docs/design.md §2.3 (`None` if global)."""
    query, positions = _as_sequence(query, positions)
    batch, steps = query.shape[:2]
    if positions is None:
        positions = np.tile(np.arange(steps), (batch, 1))
    valid_length = mask.sum(-1)
    p = np.zeros((batch, steps))
    for b in range(batch):
        for t in range(steps):
            if options["alignment"] == "local_monotonic":
                p[b, t] = np.clip(positions[b, t], 0, max(valid_length[b] - 1, 0))
            else:
                p[b, t] = reference.predictive_position(query[b, t], valid_length[b], weights)
    return np.floor(p + 0.5).astype(int), p


def _window_masks(options, weights, query, mask, positions):
    """Boolean `[B, T, S]`: the positions inside each query's window (all True when global)."""
    query3, _ = _as_sequence(query, positions)
    batch, steps = query3.shape[:2]
    length = mask.shape[1]
    if options["alignment"] == "global":
        return np.ones((batch, steps, length), dtype=bool)
    centres, _ = _centres(options, weights, query, mask, positions)
    index = np.arange(length)
    return np.abs(index[None, None, :] - centres[:, :, None]) <= options["radius"]


def _gaussian(options, p, length):
    """local_predictive's factor `exp(-(i - p_t)² / (2σ²))`, σ = D/2, `[B, T, S]`."""
    sigma = options["radius"] / 2.0
    index = np.arange(length)[None, None, :]
    return np.exp(-((index - p[:, :, None]) ** 2) / (2.0 * sigma**2))


def _squeeze_like(query, array):
    """Drop the time axis of a `[B, 1, ...]` array when the query was a single step."""
    return array[:, 0] if query.ndim == 2 else array


def _weights_3d(query, weights):
    return weights[:, None, :] if query.ndim == 2 else weights


# ----------------------------------------------------------------------------- layers
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=_examples(12, 3), **_PROFILE)
@given(data=st.data())
def test_weights_match_reference_and_design_invariants(case, data):
    """Reference values; non-negative; zero on padding and off-window; sums; empty rows."""
    _, mode, alignment = case
    options, (query, value, key, mask, positions), _ = data.draw(problems(mode, alignment))
    _, call, weights = _attention(options)
    out, alpha = call(query, value, key, mask, positions)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(alpha))

    ref_out, ref_alpha = _reference(options, weights, query, value, key, mask, positions)
    np.testing.assert_allclose(alpha, _squeeze_like(query, ref_alpha), **TOL)
    np.testing.assert_allclose(out, _squeeze_like(query, ref_out), **TOL)

    alpha3 = _weights_3d(query, alpha)
    valid = np.broadcast_to(mask[:, None, :], alpha3.shape)
    window = _window_masks(options, weights, query, mask, positions)
    assert np.all(alpha3 >= 0.0)
    assert np.all(alpha3[~valid] == 0.0), "padding must get exactly zero weight"
    assert np.all(alpha3[~window] == 0.0), "positions outside the window must get exactly zero"

    totals = alpha3.sum(-1)
    reachable = (valid & window).any(-1)  # [B, T]: the query has a usable position
    if alignment == "local_predictive":
        assert np.all(totals <= 1.0 + 1e-6)
    else:
        np.testing.assert_allclose(totals[reachable], 1.0, rtol=0, atol=1e-5)
    assert np.all(totals[~reachable] == 0.0)
    out3 = _weights_3d(query, out)
    assert np.all(out3[~reachable] == 0.0), "a query with no usable position gets a zero context"
    empty_rows = ~mask.any(-1)
    assert np.all(alpha3[empty_rows] == 0.0) and np.all(out3[empty_rows] == 0.0)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=_examples(8, 2), **_PROFILE)
@given(data=st.data())
def test_padding_invariance(case, data):
    """New values at padded positions, and extra padding appended, change nothing."""
    _, mode, alignment = case
    options, (query, value, key, mask, positions), seed = data.draw(problems(mode, alignment))
    extra = data.draw(st.integers(1, 3), label="appended padding")
    _, call, _ = _attention(options)
    out, alpha = call(query, value, key, mask, positions)

    rng = np.random.default_rng(seed + 1)
    value2, key2 = _with_garbage(rng, mask, value, key, scale=-3 * GARBAGE)
    out2, alpha2 = call(query, value2, key2, mask, positions)
    np.testing.assert_array_equal(alpha2, alpha)
    np.testing.assert_array_equal(out2, out)

    def pad(x):
        if x is None:
            return None
        tail = GARBAGE * rng.normal(size=(x.shape[0], extra, x.shape[2])).astype(x.dtype)
        return np.concatenate([x, tail], axis=1)

    mask3 = np.concatenate([mask, np.zeros((mask.shape[0], extra), bool)], axis=1)
    out3, alpha3 = call(query, pad(value2), pad(key2), mask3, positions)
    np.testing.assert_allclose(alpha3[..., : mask.shape[1]], alpha, **SAME)
    assert np.all(alpha3[..., mask.shape[1] :] == 0.0)
    np.testing.assert_allclose(out3, out, **SAME)

    if mask.all():  # no mask at all means every position is valid
        out4, alpha4 = call(query, value, key, None, positions)
        np.testing.assert_allclose(alpha4, alpha, **SAME)
        np.testing.assert_allclose(out4, out, **SAME)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=_examples(6, 2), **_PROFILE)
@given(data=st.data())
def test_batch_permutation(case, data):
    """Permuting the batch rows (queries, memories, masks, positions) permutes the outputs."""
    _, mode, alignment = case
    options, (query, value, key, mask, positions), _ = data.draw(problems(mode, alignment))
    order = np.array(data.draw(st.permutations(range(query.shape[0])), label="batch order"))
    _, call, _ = _attention(options)
    out, alpha = call(query, value, key, mask, positions)

    def take(x):
        return None if x is None else x[order]

    out_p, alpha_p = call(take(query), take(value), take(key), take(mask), take(positions))
    np.testing.assert_allclose(alpha_p, alpha[order], **SAME)
    np.testing.assert_allclose(out_p, out[order], **SAME)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=_examples(8, 2), **_PROFILE)
@given(data=st.data())
def test_memory_permutation(case, data):
    """Permuting memory positions (values, keys and mask together, per batch row).

    - global: the weights are permuted the same way and the context is unchanged;
    - local_monotonic: windows are positional, so the statement holds for permutations inside
      a query's window (one query step per row, the window fixed by p_t = clip(t, 0, S_b − 1),
      which a permutation does not change): weights permuted, context unchanged;
    - local_predictive: p_t depends on the query and S_b only, so the window is kept, but the
      Gaussian ties each weight to its absolute position: it is the *window softmax*
      (weight / Gaussian) that is permuted; the context changes.
    """
    _, mode, alignment = case
    options, (query, value, key, mask, positions), _ = data.draw(problems(mode, alignment))
    _, call, weights = _attention(options)
    batch, length = mask.shape
    if alignment != "global":
        # One query step per row, so each row has a single window to permute within.
        query = query if query.ndim == 2 else query[:, 0]
        positions = None if positions is None else np.asarray(positions).reshape(batch, -1)[:, 0]
        if alignment == "local_monotonic" and positions is None:
            positions = np.zeros((batch,), "int32")
    out, alpha = call(query, value, key, mask, positions)

    orders = []
    if alignment == "global":
        inside = np.ones((batch, length), dtype=bool)
    else:
        inside = _window_masks(options, weights, query, mask, positions)[:, 0]
    for b in range(batch):
        movable = np.flatnonzero(inside[b])
        order = np.arange(length)
        if movable.size:
            shuffled = data.draw(st.permutations(movable.tolist()), label=f"row {b} order")
            order[movable] = shuffled
        orders.append(order)
    orders = np.array(orders)  # new position j of row b holds old position orders[b, j]
    rows = np.arange(batch)[:, None]

    def take(x):
        return None if x is None else x[rows, orders]

    out_p, alpha_p = call(query, take(value), take(key), take(mask), positions)
    if alignment != "local_predictive":  # there the Gaussian reweights moved positions
        np.testing.assert_allclose(out_p, out, **TOL)
    index = orders if alpha.ndim == 2 else orders[:, None, :]
    moved = np.take_along_axis(alpha, np.broadcast_to(index, alpha.shape), axis=-1)
    if alignment == "local_predictive":
        _, p = _centres(options, weights, query, mask, positions)
        gauss = _gaussian(options, p, length)[:, 0]  # [B, S]
        np.testing.assert_allclose(alpha_p * gauss[rows, orders], moved * gauss, **TOL)
    else:
        np.testing.assert_allclose(alpha_p, moved, **TOL)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=_examples(4, 1), **_PROFILE)
@given(data=st.data())
def test_all_padding_rows_are_zero_not_nan(case, data):
    """Rows with no valid memory position: zero weights, zero context, no NaN, others intact."""
    _, mode, alignment = case
    options, (query, value, key, mask, positions), _ = data.draw(problems(mode, alignment))
    empty = np.array(data.draw(st.lists(st.booleans(), min_size=len(mask), max_size=len(mask))))
    mask = mask & ~empty[:, None]
    value, key = _with_garbage(np.random.default_rng(0), mask, value, key)
    _, call, weights = _attention(options)
    out, alpha = call(query, value, key, mask, positions)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(alpha))
    assert np.all(alpha[empty] == 0.0) and np.all(out[empty] == 0.0)
    ref_out, ref_alpha = _reference(options, weights, query, value, key, mask, positions)
    np.testing.assert_allclose(alpha, _squeeze_like(query, ref_alpha), **TOL)
    np.testing.assert_allclose(out, _squeeze_like(query, ref_out), **TOL)


# Mixed precision: compute in bfloat16 / float16, softmax in float32, weights returned in the
# compute dtype. Tolerances against the float64 reference: inputs, projections and scores carry
# a relative rounding of 2^-8 (bfloat16) or 2^-11 (float16), amplified by the score magnitudes.
MIXED = {
    "mixed_bfloat16": {"rtol": 0.0, "atol": 0.06, "sum": 2e-2},
    "mixed_float16": {"rtol": 0.0, "atol": 1e-2, "sum": 3e-3},
}


@pytest.mark.parametrize("policy", list(MIXED))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
@settings(max_examples=_examples(3, 1), **_PROFILE)
@given(data=st.data())
def test_mixed_precision_invariants(policy, case, data):
    _, mode, alignment = case
    options, (query, value, key, mask, positions), _ = data.draw(problems(mode, alignment))
    layer, call, weights = _attention(options, dtype=policy)
    assert all(w.dtype == "float32" for w in layer.weights)
    out, alpha = call(query, value, key, mask, positions)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(alpha))
    tol = MIXED[policy]
    ref_out, ref_alpha = _reference(options, weights, query, value, key, mask, positions)
    np.testing.assert_allclose(alpha, _squeeze_like(query, ref_alpha), rtol=0, atol=tol["atol"])
    scale = 1.0 + np.abs(_squeeze_like(query, ref_out))
    np.testing.assert_array_less(np.abs(out - _squeeze_like(query, ref_out)), tol["atol"] * scale)

    alpha3 = _weights_3d(query, alpha)
    valid = np.broadcast_to(mask[:, None, :], alpha3.shape)
    window = _window_masks(options, weights, query, mask, positions)
    assert np.all(alpha3 >= 0.0)
    assert np.all(alpha3[~(valid & window)] == 0.0)
    reachable = (valid & window).any(-1)
    totals = alpha3.sum(-1)
    if alignment == "local_predictive":
        assert np.all(totals <= 1.0 + tol["sum"])
    else:
        np.testing.assert_allclose(totals[reachable], 1.0, rtol=0, atol=tol["sum"])
    assert np.all(totals[~reachable] == 0.0)


@pytest.mark.parametrize("policy", list(MIXED))
def test_mixed_precision_output_dtypes(policy):
    options = {
        "mode": "general",
        "alignment": "global",
        "radius": 0,
        "use_scale": False,
        "normalize": False,
        "d_query": 3,
        "d_value": 3,
        "d_key": None,
    }
    _, call, _ = _attention(options, dtype=policy)
    mask = np.array([[True] * 4, [False] * 4])
    query, value = np.ones((2, 3, 3), "float32"), np.ones((2, 4, 3), "float32")
    out, alpha = call(query, value, None, mask, None, raw=True)
    compute = keras.mixed_precision.Policy(policy).compute_dtype
    assert keras.backend.standardize_dtype(out.dtype) == compute
    assert keras.backend.standardize_dtype(alpha.dtype) == compute


# ----------------------------------------------------------------------------- AttentionRNN
_D_Y, _D_MEMORY, _UNITS = 2, 3, 4


def _rnn_cases():
    return {
        "luong-lstm-general-global-feed": lambda: LuongAttentionCell(
            keras.layers.LSTMCell(_UNITS), LuongAttention("general"), attention_units=3
        ),
        "luong-gru-concat-local_predictive": lambda: LuongAttentionCell(
            keras.layers.GRUCell(_UNITS),
            LuongAttention("concat", "local_predictive", window_radius=1),
            input_feeding=False,
        ),
        "luong-gru-general-local_monotonic": lambda: LuongAttentionCell(
            keras.layers.GRUCell(_UNITS), LuongAttention("general", "local_monotonic", 1)
        ),
        "bahdanau-gru-additive": lambda: BahdanauAttentionCell(
            keras.layers.GRUCell(_UNITS), AdditiveAttention(score_units=3, normalize=True)
        ),
    }


RNN_CASES = _rnn_cases()
_RNNS: dict = {}


def _rnn(name):
    """A built `AttentionRNN` with random weights, cached; `call` returns NumPy arrays."""
    if name not in _RNNS:
        rnn = AttentionRNN(RNN_CASES[name](), return_attention_scores=True, return_state=True)
        rnn.build((None, None, _D_Y), (None, None, _D_MEMORY))
        randomize_weights(rnn, np.random.default_rng(_seed_of(name)))
        run = _compiled(lambda y, memory, memory_mask, mask: rnn(y, memory, memory_mask, mask=mask))
        _RNNS[name] = run
    run = _RNNS[name]

    def call(y, memory, memory_mask, mask):
        return [
            np.asarray(keras.ops.convert_to_numpy(x)) for x in run(y, memory, memory_mask, mask)
        ]

    return call


@pytest.mark.parametrize("name", list(RNN_CASES))
@settings(max_examples=_examples(4, 2), **_PROFILE)
@given(data=st.data())
def test_attention_rnn_ignores_padded_memory(name, data):
    """Outputs, alignments and final states do not depend on padded memory values or length."""
    batch = data.draw(_sizes(3), label="batch")
    steps = data.draw(_sizes(4, first=3), label="steps")
    length = data.draw(_sizes(5), label="memory steps")
    mask = data.draw(memory_masks(batch, length), label="memory mask")
    target_mask = np.array(
        data.draw(
            st.lists(
                st.lists(st.booleans().map(operator.not_), min_size=steps, max_size=steps),
                min_size=batch,
                max_size=batch,
            ),
            label="target mask",
        )
    )
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    y = rng.normal(size=(batch, steps, _D_Y)).astype("float32")
    memory, _ = _with_garbage(rng, mask, rng.normal(size=(batch, length, _D_MEMORY)))
    memory = memory.astype("float32")
    call = _rnn(name)
    outputs, alignments, *states = call(y, memory, mask, target_mask)
    for x in [outputs, alignments, *states]:
        assert np.all(np.isfinite(x))
    assert np.all(alignments[np.broadcast_to(~mask[:, None, :], alignments.shape)] == 0.0)
    assert np.all(outputs[~target_mask] == 0.0) and np.all(alignments[~target_mask] == 0.0)

    other, _ = _with_garbage(rng, mask, memory, scale=-3 * GARBAGE)
    tail = GARBAGE * rng.normal(size=(batch, 2, _D_MEMORY))
    longer = np.concatenate([other, tail], axis=1).astype("float32")
    longer_mask = np.concatenate([mask, np.zeros((batch, 2), bool)], axis=1)
    outputs2, alignments2, *states2 = call(y, longer, longer_mask, target_mask)
    np.testing.assert_allclose(outputs2, outputs, **SAME)
    np.testing.assert_allclose(alignments2[..., :length], alignments, **SAME)
    assert np.all(alignments2[..., length:] == 0.0)
    for s2, s in zip(states2, states):
        np.testing.assert_allclose(s2, s, **SAME)
