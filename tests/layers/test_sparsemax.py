"""`probability_fn="sparsemax"` (OpenNMT-py's `attn_func="sparsemax"`) and
`functional.masked_sparsemax`, against a float64 NumPy transcription of OpenNMT-py's own
sparsemax (`tests/reference_peers.py`: `threshold_and_support`, `SparsemaxFunction.forward`
and `.backward`).

OpenNMT masks padding with −inf before its sparsemax; ours takes a mask. Both give masked
positions exactly 0. A row with no valid position is where they part: OpenNMT computes NaN
(−inf − −inf), ours gives all-zero weights and a zero context, as its softmax does
(docs/design.md §2.2).
"""

from __future__ import annotations

import numpy as np
import pytest
from keras import ops

from keras_attention import AdditiveAttention, LuongAttention
from keras_attention import functional as F
from tests.backend_utils import to_numpy, value_and_grad, variable
from tests.reference_peers import opennmt_sparsemax, opennmt_sparsemax_backward


def _opennmt_masked(scores, mask):
    """OpenNMT's masking (`align.masked_fill_(~mask, -inf)`), then its sparsemax."""
    return opennmt_sparsemax(np.where(mask, scores, -np.inf), -1)


def _cases(rng):
    scores = rng.normal(scale=1.5, size=(4, 3, 7))
    scores[0, 0] = [0.5, 0.5, 0.5, 0.2, -1.0, 0.5, 3.0]  # ties on the support
    scores[0, 1] = 0.0  # all equal: uniform
    scores[0, 2, :] = [10.0, -10.0, 0, 0, 0, 0, 0]  # one position takes it all
    mask = rng.random((4, 3, 7)) > 0.3
    mask[..., 0] = True
    mask[1, 0] = False
    mask[1, 0, 3] = True  # one valid position: weight 1
    return scores, mask


def test_functional_sparsemax_matches_opennmt():
    scores, mask = _cases(np.random.default_rng(0))
    ours = to_numpy(F.masked_sparsemax(scores, mask))
    # float64 where the backend keeps it; JAX (x64 off by default) computes in float32.
    atol = 1e-12 if ours.dtype == np.float64 else 1e-6
    np.testing.assert_allclose(ours, _opennmt_masked(scores, mask), atol=atol)
    assert np.all(ours[~mask] == 0.0)
    np.testing.assert_allclose(ours.sum(-1), 1.0, atol=atol)
    # Without a mask, and over another axis.
    np.testing.assert_allclose(
        to_numpy(F.masked_sparsemax(scores)), opennmt_sparsemax(scores, -1), atol=atol
    )
    np.testing.assert_allclose(
        to_numpy(F.masked_sparsemax(scores, axis=1)), opennmt_sparsemax(scores, 1), atol=atol
    )
    # float32 in, float32 out (the wide dtype), still a distribution.
    ours32 = to_numpy(F.masked_sparsemax(scores.astype("float32"), mask))
    assert ours32.dtype == np.float32
    np.testing.assert_allclose(ours32, _opennmt_masked(scores, mask), atol=1e-6)


def test_fully_masked_row_is_zero_not_nan():
    scores = np.array([[1.0, 2.0, np.nan], [3.0, 1.0, 0.0]])
    mask = np.array([[False, False, False], [True, False, True]])
    ours = to_numpy(F.masked_sparsemax(scores, mask))
    np.testing.assert_array_equal(ours[0], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(ours[1], [1.0, 0.0, 0.0])
    assert np.isnan(_opennmt_masked(scores, mask)[0]).all()  # OpenNMT's, for the record


def test_gradient_is_opennmt_backward():
    rng = np.random.default_rng(1)
    scores, mask = _cases(rng)
    upstream = rng.normal(size=scores.shape)
    z = variable(scores.astype("float64"))
    upstream_tensor = ops.convert_to_tensor(upstream)

    def loss():
        return ops.sum(F.masked_sparsemax(z, mask) * upstream_tensor)

    _, (grad,) = value_and_grad(loss, [z])
    output = _opennmt_masked(scores, mask)
    expected = opennmt_sparsemax_backward(output, upstream, -1)
    np.testing.assert_allclose(to_numpy(grad), expected, atol=1e-6)
    assert np.all(np.isfinite(to_numpy(grad)))


@pytest.mark.parametrize("alignment", ["global", "local_monotonic"])
def test_layer_weights_and_context_are_opennmt_sparsemax(alignment):
    rng = np.random.default_rng(2)
    query = rng.normal(size=(3, 40, 4)).astype("float32")
    memory = rng.normal(size=(3, 9, 4)).astype("float32")
    mask = np.arange(9)[None, :] < np.array([9, 5, 0])[:, None]  # the last row: no memory
    memory[~mask] = np.nan  # padding is never read
    layer = LuongAttention(
        "dot",
        alignment=alignment,
        window_radius=2,
        probability_fn="sparsemax",
        window_implementation="auto" if alignment == "global" else "blocks",
    )
    context, weights = layer(query, memory, value_mask=mask, return_attention_scores=True)
    context, weights = to_numpy(context), to_numpy(weights)
    assert np.all(np.isfinite(context)) and np.all(np.isfinite(weights))
    clean = np.where(mask[..., None], memory, 0.0).astype(np.float64)
    valid = np.broadcast_to(mask[:, None, :], weights.shape).copy()
    if alignment == "local_monotonic":  # the window around p_t = min(t, S_b − 1)
        lengths = mask.sum(-1)
        for b in range(3):
            for t in range(40):
                centre = min(t, max(lengths[b] - 1, 0))
                window = np.abs(np.arange(9) - centre) <= 2
                valid[b, t] &= window
    scores = np.einsum("btd,bsd->bts", query.astype(np.float64), clean)
    expected = np.nan_to_num(_opennmt_masked(scores, valid))  # the empty row: zeros here
    np.testing.assert_allclose(weights, expected, atol=1e-5)
    np.testing.assert_allclose(context, expected @ clean, atol=1e-5)
    np.testing.assert_array_equal(weights[2], 0.0)
    assert (weights[:2] == 0).sum() > (~valid[:2]).sum()  # sparse: zeros beyond the padding


def test_blocks_and_tiles_leave_other_probability_fns_to_the_windows():
    # Blocks and tiles normalise with a softmax: hardmax and sparsemax take the windows (before,
    # a compiled local_monotonic hardmax of >= 32 queries got softmax weights from the blocks).
    query, keys = np.ones((1, 40, 4), "float32"), np.ones((1, 50, 4), "float32")
    for probability_fn, path in (
        ("softmax", "blocks"),
        ("hardmax", "windows"),
        ("sparsemax", "windows"),
    ):
        layer = LuongAttention(
            alignment="local_monotonic",
            window_radius=2,
            probability_fn=probability_fn,
            window_implementation="blocks",
        )
        assert layer.window_plan(query, keys).path == path, probability_fn


def test_additive_sparsemax_round_trips_and_local_p_is_refused():
    layer = AdditiveAttention(score_units=3, probability_fn="sparsemax")
    assert AdditiveAttention.from_config(layer.get_config()).probability_fn == "sparsemax"
    with pytest.raises(ValueError, match=r"probability_fn='sparsemax'.*local_predictive"):
        LuongAttention(alignment="local_predictive", probability_fn="sparsemax")
    with pytest.raises(ValueError, match=r"probability_fn='sparse'"):
        AdditiveAttention(probability_fn="sparse")
