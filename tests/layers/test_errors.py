"""Bad arguments and inputs give a clear error that names the argument and the received value."""

from __future__ import annotations

import numpy as np
import pytest

from keras_attention import AdditiveAttention, LuongAttention
from tests.backend_utils import to_numpy

Q = np.ones((2, 3, 4), "float32")
V = np.ones((2, 5, 4), "float32")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"score_mode": "cosine"}, "score_mode='cosine'"),
        ({"alignment": "local"}, "alignment='local'"),
        ({"alignment": "local_monotonic", "window_radius": -1}, "window_radius=-1"),
        ({"alignment": "local_monotonic", "window_radius": 2.5}, "window_radius=2.5"),
        ({"window_radius": True}, "window_radius=True"),
        ({"alignment": "local_predictive", "window_radius": 0}, "window_radius=0"),
        ({"score_units": 0}, "score_units=0"),
        ({"attention_units": -3}, "attention_units=-3"),
        ({"dropout": 1.5}, "dropout=1.5"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LuongAttention(**kwargs)


def test_bad_additive_arguments():
    with pytest.raises(ValueError, match="score_units=-1"):
        AdditiveAttention(score_units=-1)
    with pytest.raises(ValueError, match="dropout='a'"):
        AdditiveAttention(dropout="a")


def test_dot_with_different_sizes_suggests_alternatives():
    with pytest.raises(
        ValueError, match=r"query size 4 and key size 6.*general.*AdditiveAttention"
    ):
        LuongAttention()([Q, np.ones((2, 5, 6), "float32")])
    # The same sizes are fine for the modes with learned projections.
    LuongAttention("general")([Q, np.ones((2, 5, 6), "float32")])


@pytest.mark.parametrize(
    "args,match",
    [
        (([Q],), "a list of 1 inputs"),
        (([Q, V, V, V],), "a list of 4 inputs"),
        (
            (np.ones((2, 3, 4, 1), "float32"), V),
            r"`value`.*rank of `query` \(4.*query.shape=\(2, 3, 4, 1\), value.shape",
        ),
        ((Q, np.ones((2, 4), "float32")), r"`value`.*value.shape=\(2, 4\)"),
        ((Q, V, np.ones((2, 6, 4), "float32")), "same number of steps"),
    ],
)
def test_bad_inputs(args, match):
    with pytest.raises(ValueError, match=match):
        LuongAttention("general")(*args)


def test_mask_shape_mismatch():
    with pytest.raises(ValueError, match=r"value_mask.shape=\(2, 4\)"):
        LuongAttention()([Q, V], mask=[None, np.ones((2, 4), bool)])
    with pytest.raises(ValueError, match=r"query_mask.shape=\(2, 5\)"):
        LuongAttention()(Q, V, query_mask=np.ones((2, 5), bool))


def test_list_and_value_together():
    with pytest.raises(ValueError, match="either a list"):
        LuongAttention()([Q, V], V)


def test_local_monotonic_single_step_needs_positions():
    with pytest.raises(ValueError, match="query_positions=None"):
        LuongAttention(alignment="local_monotonic")(Q[:, 0], V)


def test_causal_mask_with_pooling():
    with pytest.raises(ValueError, match="use_causal_mask"):
        LuongAttention()(V, use_causal_mask=True)


def test_local_monotonic_long_queries_are_clipped_into_the_memory():
    # Documented clip: p_t = min(t, S_b - 1); queries longer than the memory attend to its end.
    query = np.ones((1, 12, 4), "float32")
    mask = np.array([[True] * 3 + [False] * 2])
    _, weights = LuongAttention(alignment="local_monotonic", window_radius=1)(
        [query, V[:1]], mask=[None, mask], return_attention_scores=True
    )
    weights = to_numpy(weights)
    np.testing.assert_allclose(weights[0, 5:], np.tile([0, 0.5, 0.5, 0, 0], (7, 1)), atol=1e-7)


def test_recurrent_layers_refuse_nd_queries_by_rank():
    # Their recurrence runs over [B, T, d_s] queries; the N-D form is the global layers'.
    from keras_attention import LocationSensitiveAttention

    query = np.ones((2, 3, 4, 5), "float32")
    with pytest.raises(ValueError, match=r"`query`.*rank 2 or 3.*query.shape=\(2, 3, 4, 5\)"):
        LocationSensitiveAttention(score_units=4, kernel_size=3)([query, query])
