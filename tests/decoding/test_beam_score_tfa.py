"""The beam ranking score against tfa 0.23's own `_get_scores` (numbers made by
`tests/compat/tfa/make_beam_score_reference.py` in a TF 2.15 + tensorflow-addons venv):
`log p / lp(len) + cp(coverage)` on finished beams, for length weights 0 / 0.6 / 1 and
coverage weights 0 / 0.2 / 1, with zero (padding), tiny and above-one coverage."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from keras import ops

from keras_attention.decoding import gnmt_coverage_penalty, gnmt_length_penalty
from tests.backend_utils import to_numpy

REFERENCE = Path(__file__).parents[1] / "compat" / "tfa" / "beam_score_reference.npz"


def test_length_and_coverage_penalties_match_tfa():
    ref = np.load(REFERENCE)
    finished = ref["finished"][..., None]
    for i, alpha in enumerate(ref["alphas"]):
        for j, beta in enumerate(ref["betas"]):
            lp = to_numpy(gnmt_length_penalty(ops.convert_to_tensor(ref["lengths"]), float(alpha)))
            cp = to_numpy(gnmt_coverage_penalty(ref["coverage"], float(beta)))[..., None]
            ours = ref["log_probs"] / lp + np.where(finished, cp, 0.0)
            np.testing.assert_allclose(
                ours, ref["scores"][i, j], rtol=1e-6, atol=1e-6, err_msg=f"{alpha=} {beta=}"
            )
    # The reference is not trivial: both penalties move the scores.
    assert np.abs(ref["scores"][1, 0] - ref["scores"][0, 0]).max() > 0.1
    assert np.abs(ref["scores"][0, 2] - ref["scores"][0, 0]).max() > 0.1
