"""Reference numbers for the beam-search ranking score, from real TensorFlow Addons 0.23.

Runs tfa's `seq2seq.beam_search_decoder._get_scores` (the GNMT length penalty
`((5 + len) / 6) ** alpha` dividing the log-probability, plus `coverage_penalty_weight *
sum_i log(min(c_i, 1))` on finished beams, zero coverage counted as covered) on fixed
log-probabilities `[B, K, V]`, lengths, finished masks and accumulated attentions `[B, K, S]`
(with zeros, values above 1 and tiny values) for several `length_penalty_weight` and
`coverage_penalty_weight`, and writes inputs and outputs to `beam_score_reference.npz` next to
this file. `tests/decoding/test_beam_score_tfa.py` compares `gnmt_length_penalty` and
`gnmt_coverage_penalty` against it. The environment (tfa does not import under Keras 3):

    python3 -m venv /work/tfa-venv
    /work/tfa-venv/bin/pip install tensorflow==2.15.1 tensorflow-addons==0.23.0
    /work/tfa-venv/bin/python tests/compat/tfa/make_beam_score_reference.py

Keys: `log_probs` `[B, K, V]`, `lengths` `[B, K, V]` int32 (each candidate's), `finished`
`[B, K]` bool, `coverage` `[B, K, S]`, `alphas` `[A]`, `betas` `[C]`, `scores`
`[A, C, B, K, V]` (tfa's).
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
from tensorflow_addons.seq2seq import beam_search_decoder  # noqa: E402

B, K, V, S = 3, 4, 5, 6
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "beam_score_reference.npz")


def main() -> None:
    rng = np.random.default_rng(13)
    log_probs = np.log(rng.dirichlet(np.ones(V), size=(B, K))).astype("float32") * 3.0
    lengths = rng.integers(1, 12, size=(B, K, V)).astype("int32")  # per candidate, as tfa
    finished = rng.random((B, K)) < 0.5
    finished[0, 0], finished[0, 1] = True, False
    coverage = (rng.random((B, K, S)) * 1.6).astype("float32")
    coverage[:, :, -1] = 0.0  # padding: never attended
    coverage[1, 2, :2] = [1e-6, 1.0]
    alphas = np.array([0.0, 0.6, 1.0], "float32")
    betas = np.array([0.0, 0.2, 1.0], "float32")
    scores = np.stack([
        np.stack([
            beam_search_decoder._get_scores(
                log_probs=tf.constant(log_probs), sequence_lengths=tf.constant(lengths),
                length_penalty_weight=float(a), coverage_penalty_weight=float(c),
                finished=tf.constant(finished), accumulated_attention_probs=tf.constant(coverage),
            ).numpy()
            for c in betas
        ])
        for a in alphas
    ])  # fmt: skip
    np.savez(
        OUT, log_probs=log_probs, lengths=lengths, finished=finished, coverage=coverage,
        alphas=alphas, betas=betas, scores=scores,
    )  # fmt: skip
    print(f"wrote {OUT}: scores {scores.shape}, tensorflow {tf.__version__}")


if __name__ == "__main__":
    main()
