"""Hand-computable checks of the float64 reference in tests/reference.py (pure NumPy)."""

import math

import numpy as np
import pytest

try:  # repository root on sys.path (python -m pytest, or tests/ is a package)
    from tests.reference import attention, masked_softmax, round_half_up, scores
except ImportError:  # plain `pytest` with rootdir-relative imports of tests/
    from reference import attention, masked_softmax, round_half_up, scores

E = math.e


def _zeros_query(b, t, d):
    return np.zeros((b, t, d))


# --- masked_softmax ---------------------------------------------------------------------------


def test_masked_softmax_equal_scores_is_uniform():
    out = masked_softmax(np.full((2, 5), 3.7), None)
    np.testing.assert_allclose(out, np.full((2, 5), 1 / 5))


def test_masked_softmax_masked_positions_are_exactly_zero():
    out = masked_softmax(np.array([1.0, 2.0, 100.0, 0.0]), np.array([True, True, False, False]))
    np.testing.assert_allclose(out, [1 / (1 + E), E / (1 + E), 0.0, 0.0])
    assert out[2] == 0.0 and out[3] == 0.0


def test_masked_softmax_fully_masked_row_is_zero_not_nan():
    s = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    m = np.array([[False, False, False], [True, True, True]])
    out = masked_softmax(s, m)
    assert not np.isnan(out).any()
    np.testing.assert_array_equal(out[0], 0.0)
    np.testing.assert_allclose(out[1].sum(), 1.0)


def test_masked_softmax_broadcasts_mask():
    s = np.zeros((2, 3, 4))
    out = masked_softmax(s, np.array([True, True, False, False]))
    np.testing.assert_allclose(out, np.broadcast_to([0.5, 0.5, 0.0, 0.0], (2, 3, 4)))


def test_masked_softmax_is_stable_for_large_scores():
    out = masked_softmax(np.array([1000.0, 1000.0]), None)
    np.testing.assert_allclose(out, [0.5, 0.5])


def test_round_half_up():
    assert [round_half_up(x) for x in (0.5, 1.5, 2.5, 2.49, -0.5)] == [1, 2, 3, 2, 0]


# --- scores ------------------------------------------------------------------------------------


def test_dot_scores_2x2_by_hand():
    q = np.array([[[1.0, 2.0], [3.0, -1.0]]])
    k = np.array([[[1.0, 0.0], [2.0, 1.0]]])
    # [1*1+2*0, 1*2+2*1], [3*1-1*0, 3*2-1*1]
    np.testing.assert_allclose(scores(q, k, "dot", {}), [[[1.0, 4.0], [3.0, 5.0]]])


def test_dot_size_mismatch_raises():
    with pytest.raises(ValueError, match="d_s"):
        scores(np.zeros((1, 1, 2)), np.zeros((1, 1, 3)), "dot", {})


def test_general_scores_by_hand():
    q = np.array([[[1.0, 2.0]]])
    k = np.array([[[1.0, 1.0, 1.0]]])
    w_g = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])  # [d_k=3, d_s=2]; h W_g = [2, 3]
    np.testing.assert_allclose(scores(q, k, "general", {"score_kernel": w_g}), [[[8.0]]])


@pytest.mark.parametrize("mode", ["concat", "additive"])
def test_concat_additive_scores_by_hand(mode):
    q = np.array([[[1.0]]])
    k = np.array([[[0.5], [-2.0]]])
    w = {
        "query_kernel": np.array([[1.0, 0.0]]),  # s W_q = [s, 0]
        "key_kernel": np.array([[0.0, 1.0]]),  # h W_k = [0, h]
        "score_vector": np.array([2.0, 3.0]),
    }
    expected = [
        [[2 * math.tanh(1.0) + 3 * math.tanh(0.5), 2 * math.tanh(1.0) + 3 * math.tanh(-2.0)]]
    ]
    np.testing.assert_allclose(scores(q, k, mode, w), expected)


def test_additive_normalized_by_hand():
    q = np.array([[[1.0]]])
    k = np.array([[[0.5]]])
    w = {
        "query_kernel": np.array([[1.0, 0.0]]),
        "key_kernel": np.array([[0.0, 1.0]]),
        "score_vector": np.array([3.0, 4.0]),  # v/||v|| = [0.6, 0.8]
        "norm_scale": 2.0,
        "norm_bias": np.array([0.25, -0.5]),
    }
    expected = 2.0 * (0.6 * math.tanh(1.25) + 0.8 * math.tanh(0.0))
    np.testing.assert_allclose(scores(q, k, "additive", w, normalize=True), [[[expected]]])


def test_normalize_only_for_additive():
    with pytest.raises(ValueError, match="normalize"):
        scores(np.zeros((1, 1, 2)), np.zeros((1, 1, 2)), "dot", {}, normalize=True)


def test_use_scale_multiplies_score():
    q = np.array([[[1.0, 2.0]]])
    k = np.array([[[3.0, 4.0]]])
    np.testing.assert_allclose(scores(q, k, "dot", {"scale": -0.5}, use_scale=True), [[[-5.5]]])


# --- global attention --------------------------------------------------------------------------


def test_one_memory_step_context_is_h1():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(2, 3, 4))
    v = rng.normal(size=(2, 1, 4))
    out, w = attention(q, v, mode="dot", weights={})
    np.testing.assert_allclose(w, 1.0)
    np.testing.assert_allclose(out, np.broadcast_to(v, (2, 3, 4)))


def test_equal_scores_average_values():
    v = np.arange(12.0).reshape(1, 4, 3)
    out, w = attention(_zeros_query(1, 2, 3), v, mode="dot", weights={})
    np.testing.assert_allclose(w, 0.25)
    np.testing.assert_allclose(out, np.broadcast_to(v.mean(axis=1, keepdims=True), (1, 2, 3)))


def test_dot_attention_2x2_by_hand():
    q = np.array([[[1.0, 0.0]]])
    v = np.array([[[1.0, 0.0], [0.0, 1.0]]])  # scores [1, 0]
    out, w = attention(q, v, mode="dot", weights={})
    a = np.array([E / (E + 1), 1 / (E + 1)])
    np.testing.assert_allclose(w, [[a]])
    np.testing.assert_allclose(out, [[a]])  # c = a_1 [1, 0] + a_2 [0, 1]


def test_explicit_key_scores_value_averages():
    q = np.array([[[1.0]]])
    k = np.array([[[0.0], [1.0]]])  # scores [0, 1]
    v = np.array([[[10.0], [20.0]]])
    out, w = attention(q, v, k, mode="dot", weights={})
    a = np.array([1 / (1 + E), E / (1 + E)])
    np.testing.assert_allclose(w, [[a]])
    np.testing.assert_allclose(out, [[[10 * a[0] + 20 * a[1]]]])


def test_padding_gets_zero_weight_and_is_invariant():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(1, 2, 3))
    v = rng.normal(size=(1, 3, 3))
    padded = np.concatenate([v, rng.normal(size=(1, 2, 3)) * 100], axis=1)
    mask = np.array([[True, True, True, False, False]])
    out_p, w_p = attention(q, padded, mode="dot", weights={}, value_mask=mask)
    out, w = attention(q, v, mode="dot", weights={})
    np.testing.assert_array_equal(w_p[..., 3:], 0.0)
    np.testing.assert_allclose(w_p[..., :3], w)
    np.testing.assert_allclose(out_p, out)


def test_fully_masked_memory_gives_zeros():
    out, w = attention(
        np.ones((1, 2, 2)),
        np.ones((1, 3, 2)),
        mode="dot",
        weights={},
        value_mask=np.zeros((1, 3), dtype=bool),
    )
    assert not np.isnan(out).any() and not np.isnan(w).any()
    np.testing.assert_array_equal(out, 0.0)
    np.testing.assert_array_equal(w, 0.0)


def test_causal_mask_uniform_over_prefix():
    v = np.arange(3.0).reshape(1, 3, 1)
    out, w = attention(_zeros_query(1, 3, 1), v, mode="dot", weights={}, use_causal_mask=True)
    expected_w = [[1, 0, 0], [1 / 2, 1 / 2, 0], [1 / 3, 1 / 3, 1 / 3]]
    np.testing.assert_allclose(w[0], expected_w)
    np.testing.assert_allclose(out[0, :, 0], [0.0, 0.5, 1.0])


def test_query_mask_zeroes_output_rows_only():
    v = np.ones((1, 2, 2))
    out, w = attention(
        _zeros_query(1, 2, 2), v, mode="dot", weights={}, query_mask=np.array([[True, False]])
    )
    np.testing.assert_allclose(out[0, 0], [1.0, 1.0])
    np.testing.assert_array_equal(out[0, 1], 0.0)
    np.testing.assert_allclose(w, 0.5)


def test_attentional_output_by_hand():
    q = np.array([[[0.5]]])
    v = np.array([[[2.0]]])  # one step: c = 2
    w_c = np.array([[1.0, 0.0], [0.0, 1.0]])  # [d_s + d_v, units] -> [s, c]
    out, _ = attention(q, v, mode="dot", weights={"attention_kernel": w_c}, attention_units=2)
    np.testing.assert_allclose(out, [[[math.tanh(0.5), math.tanh(2.0)]]])
    out, _ = attention(
        q,
        v,
        mode="dot",
        weights={"attention_kernel": w_c},
        attention_units=2,
        attention_activation=None,
    )
    np.testing.assert_allclose(out, [[[0.5, 2.0]]])


# --- local attention ---------------------------------------------------------------------------


def test_local_monotonic_window_support():
    s, d = 8, 1
    v = np.ones((1, s, 1))
    out, w = attention(
        _zeros_query(1, s, 1),
        v,
        mode="dot",
        weights={},
        alignment="local_monotonic",
        window_radius=d,
    )
    for t in range(s):
        support = set(np.flatnonzero(w[0, t]))
        expected = {i for i in range(t - d, t + d + 1) if 0 <= i < s}
        assert support == expected
        np.testing.assert_allclose(w[0, t, sorted(expected)], 1 / len(expected))
    np.testing.assert_allclose(out, 1.0)


def test_local_monotonic_clips_into_valid_memory():
    # S_b = 3 valid of S = 6; query positions 5 and 10 clip to p = 2, window {1, 2} with D = 1.
    mask = np.array([[True, True, True, False, False, False]])
    _, w = attention(
        _zeros_query(1, 2, 1),
        np.ones((1, 6, 1)),
        mode="dot",
        weights={},
        value_mask=mask,
        alignment="local_monotonic",
        window_radius=1,
        query_positions=np.array([[5, 10]]),
    )
    np.testing.assert_allclose(w[0], [[0, 0.5, 0.5, 0, 0, 0]] * 2)


def test_local_window_without_valid_position_is_zero():
    # S_b = 1 -> p = 0, D = 0: window {0}, but position 0 is padding.
    out, w = attention(
        np.ones((1, 1, 1)),
        np.ones((1, 4, 1)),
        mode="dot",
        weights={},
        value_mask=np.array([[False, False, False, True]]),
        alignment="local_monotonic",
        window_radius=0,
    )
    np.testing.assert_array_equal(w, 0.0)
    np.testing.assert_array_equal(out, 0.0)


def test_local_predictive_by_hand_centre():
    # position_kernel = 0 -> sigmoid(0) = 1/2 -> p = S_b / 2. Zero query -> equal scores.
    w = {"position_kernel": np.zeros((1, 2)), "position_vector": np.ones(2)}
    # S_b = 4: p = 2, D = 1, sigma = 1/2, window {1, 2, 3}, softmax 1/3 each.
    _, a = attention(
        _zeros_query(1, 1, 1),
        np.ones((1, 4, 1)),
        mode="dot",
        weights=w,
        alignment="local_predictive",
        window_radius=1,
    )
    g = math.exp(-1 / (2 * 0.25))
    np.testing.assert_allclose(a[0, 0], [0, g / 3, 1 / 3, g / 3])
    # S_b = 5: p = 2.5 rounds half up to 3, window {2, 3, 4}; Gaussian uses p = 2.5.
    _, a = attention(
        _zeros_query(1, 1, 1),
        np.ones((1, 5, 1)),
        mode="dot",
        weights=w,
        alignment="local_predictive",
        window_radius=1,
    )
    g_half = math.exp(-0.25 / 0.5)
    g_far = math.exp(-2.25 / 0.5)
    np.testing.assert_allclose(a[0, 0], [0, 0, g_half / 3, g_half / 3, g_far / 3])


def test_local_predictive_uses_valid_length():
    # Same as above with S_b = 4 valid out of S = 7: the centre is 2, not 3.5.
    w = {"position_kernel": np.zeros((1, 2)), "position_vector": np.ones(2)}
    _, a = attention(
        _zeros_query(1, 1, 1),
        np.ones((1, 7, 1)),
        mode="dot",
        weights=w,
        value_mask=np.array([[True] * 4 + [False] * 3]),
        alignment="local_predictive",
        window_radius=1,
    )
    g = math.exp(-2.0)
    np.testing.assert_allclose(a[0, 0], [0, g / 3, 1 / 3, g / 3, 0, 0, 0])


def test_local_wide_window_equals_global_for_monotonic():
    rng = np.random.default_rng(2)
    q = rng.normal(size=(2, 3, 4))
    v = rng.normal(size=(2, 5, 4))
    mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    glob = attention(q, v, mode="dot", weights={}, value_mask=mask)
    loc = attention(
        q, v, mode="dot", weights={}, value_mask=mask, alignment="local_monotonic", window_radius=10
    )
    np.testing.assert_allclose(loc[0], glob[0])
    np.testing.assert_allclose(loc[1], glob[1])
