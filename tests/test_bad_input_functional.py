"""Bad input to `keras_attention.functional` and `keras_attention.plot.plot_alignment`.

The functional ops check static shapes and Python arguments only (free at run time, fine
under XLA); tensor values are not inspected. Documented results: `masked_softmax` gives
all-zero rows where nothing is valid, ignores NaN/Inf at masked positions exactly and
propagates NaN at valid ones; an empty softmax axis gives an empty result; `time_loop` over
zero steps returns the carry and `[0, B, ...]` outputs. `plot_alignment` refuses NaN/Inf
weights (they would be drawn as empty cells); finite weights outside [0, 1] are drawn
clipped to the fixed colour scale.
"""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops

from keras_attention import functional as F

W = np.array([[0.9, 0.1], [0.2, 0.8]])


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda: F.masked_softmax(np.zeros((2, 3)), np.ones((2, 4), bool)),
            ValueError,
            r"`mask` .*\(2, 3\).*mask.shape=\(2, 4\)",
        ),
        (
            lambda: F.dot_scores(np.zeros((1, 2, 3)), np.zeros((1, 4, 5))),
            ValueError,
            r"query.shape=\(1, 2, 3\), keys.shape=\(1, 4, 5\)",
        ),
        (
            lambda: F.dot_scores(np.zeros((1, 2, 3)), np.zeros((1, 5, 4)), keys_transposed=True),
            ValueError,
            r"keys.shape=\(1, 5, 4\)",
        ),
        (
            lambda: F.additive_scores(np.zeros((1, 2, 3)), np.zeros((1, 4, 3)), np.ones(5)),
            ValueError,
            r"score_vector.shape=\(5,\)",
        ),
        (
            lambda: F.additive_scores(np.zeros((1, 2, 3)), np.zeros((1, 4, 6)), np.ones(6)),
            ValueError,
            r"query_features.shape=\(1, 2, 3\), key_features.shape=\(1, 4, 6\)",
        ),
        (
            lambda: F.project(np.zeros((1, 2, 3)), np.zeros((4, 5))),
            ValueError,
            r"x.shape=\(1, 2, 3\), kernel.shape=\(4, 5\)",
        ),
        (
            lambda: F.project(np.zeros((1, 2, 3)), np.zeros((3,))),
            ValueError,
            r"kernel.shape=\(3,\)",
        ),
        (
            lambda: F.gaussian_window(np.zeros((1, 1, 1), "int32"), np.zeros((1, 1)), 0),
            ValueError,
            "radius=0",
        ),
        (
            lambda: F.window_positions(np.zeros((1, 1), "int32"), -1),
            ValueError,
            "radius=-1",
        ),
        (
            lambda: F.window_positions(np.zeros((1, 1), "int32"), 1.5),
            ValueError,
            r"radius=1\.5",
        ),
        (
            lambda: F.gather_positions(np.zeros((3,)), np.zeros((1, 1), "int32")),
            ValueError,
            r"memory.shape=\(3,\)",
        ),
        (lambda: F.wide_float_dtype("banana"), ValueError, "banana"),
        (lambda: F.mask_value("int32"), ValueError, "`dtype` .*Received: dtype='int32'"),
        (lambda: F.mask_value("banana"), ValueError, "Received: dtype='banana'"),
        (lambda: F.hashed_dropout(np.ones(3), 1.0, None), ValueError, r"Received: rate=1\.0"),
        (
            lambda: F.time_loop(None, np.zeros((2, 1, 1)), (), [(1, 1)], "float32"),
            TypeError,
            "step_fn=None",
        ),
    ],
)
def test_bad_functional_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_masked_softmax_padding_and_garbage():
    scores = np.array([[1.0, np.nan, np.inf], [2.0, 3.0, -np.inf], [0.0, 1.0, 2.0]])
    mask = np.array([[True, False, False], [True, True, False], [False, False, False]])
    weights = _np(F.masked_softmax(scores, mask))
    np.testing.assert_allclose(weights[0], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(weights[1], np.exp([2.0, 3.0, -np.inf]) / np.exp([2, 3]).sum())
    np.testing.assert_array_equal(weights[2], 0.0)  # nothing valid: zeros, not NaN
    # NaN at a valid position propagates (garbage in).
    assert np.isnan(_np(F.masked_softmax(np.array([[np.nan, 1.0]]), np.ones((1, 2), bool)))).all()
    assert _np(F.masked_softmax(np.zeros((2, 0)))).shape == (2, 0)


def test_time_loop_over_no_steps():
    carry, (stacked,) = F.time_loop(
        lambda t, x, c: (c, [x]), np.zeros((0, 2, 1), "float32"), (), [(2, 1)], "float32"
    )
    assert tuple(stacked.shape) == (0, 2, 1)


# ---------------------------------------------------------------- plot_alignment
plot = pytest.importorskip("keras_attention.plot")
pytest.importorskip("matplotlib")


@pytest.mark.parametrize(
    "weights, kwargs, error, match",
    [
        (np.array([[np.nan, 1.0], [0.0, 1.0]]), {}, ValueError, r"`weights` .*1 NaN/Inf"),
        (np.array([[np.inf, -np.inf], [0, 1]]), {}, ValueError, r"`weights` .*2 NaN/Inf"),
        (W, {"ax": "axes"}, TypeError, "ax='axes'"),
        (W, {"cmap": "bogus"}, ValueError, "bogus.*cmap"),
    ],
)
def test_bad_plot_argument(weights, kwargs, error, match):
    with pytest.raises(error, match=match):
        plot.plot_alignment(weights, ["a", "b"], ["x", "y"], **kwargs)


def test_plot_weights_outside_the_unit_interval_are_drawn_clipped():
    figure = plot.plot_alignment(np.array([[3.0, -1.0]]), ["a", "b"], ["x"])
    image = figure.axes[0].images[0]
    assert image.get_clim() == (0.0, 1.0)
    np.testing.assert_array_equal(image.get_array(), [[3.0, -1.0]])
