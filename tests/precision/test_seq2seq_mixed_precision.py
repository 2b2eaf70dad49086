"""`Seq2Seq` under `mixed_float16` / `mixed_bfloat16`: float32 logits, training, decoding.

The vocabulary projection computes in float32 (as Keras' mixed-precision guide recommends for
the last layer), so the teacher-forced logits are float32 while the encoder and decoder run in
the compute dtype; a few training steps give a finite, falling loss; `generate` (greedy, beam,
sampling) returns valid ids and finite scores, and the greedy score is the float32 model's
log-probability of the same ids, to the mixed rounding.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from keras_attention.models import Seq2Seq
from tests.backend_utils import BACKEND, to_numpy

V, MAX_LENGTH = 13, 5
SRC = np.array([[4, 5, 6, 3, 0], [7, 8, 3, 0, 0], [9, 3, 0, 0, 0]], "int32")
TGT = np.array([[2, 4, 5, 6], [2, 7, 8, 0], [2, 9, 0, 0]], "int32")
LABELS = np.array([[4, 5, 6, 3], [7, 8, 3, 0], [9, 3, 0, 0]], "int32")


def _dtype(x) -> str:
    return keras.backend.standardize_dtype(x.dtype)


# Eager Seq2Seq calls and searches take 5-20 s each on JAX (CPU): there mixed_bfloat16 runs in
# the slow suite, mixed_float16 in the fast one.
POLICIES = [
    "mixed_float16",
    pytest.param("mixed_bfloat16", marks=[pytest.mark.slow] if BACKEND == "jax" else []),
]


@pytest.fixture(scope="module", params=POLICIES)
def models(request):
    """A float32 model and the same weights under the mixed policy."""
    keras.utils.set_random_seed(0)
    x = {"source_ids": SRC, "target_ids": TGT}
    reference = Seq2Seq(V, V, embedding_dim=8, units=8)
    reference(x)
    keras.config.set_dtype_policy(request.param)
    try:
        model = Seq2Seq(V, V, embedding_dim=8, units=8)
        model(x)
    finally:
        keras.config.set_dtype_policy("float32")
    model.set_weights(reference.get_weights())
    return request.param, reference, model


def test_logits_and_projection_are_float32(models):
    policy, reference, model = models
    compute = keras.mixed_precision.Policy(policy).compute_dtype
    assert model.decoder.projection.dtype_policy.name == "float32"
    assert model.decoder.embedding.compute_dtype == compute  # the rest stays mixed
    assert model.decoder.cell.compute_dtype == compute
    memory, _, _ = model.encode(SRC)
    assert _dtype(memory) == compute
    logits = model({"source_ids": SRC, "target_ids": TGT})
    assert _dtype(logits) == "float32"
    expected = to_numpy(reference({"source_ids": SRC, "target_ids": TGT}))
    np.testing.assert_allclose(to_numpy(logits), expected, atol=0.02)
    assert reference.decoder.projection.dtype_policy.name == "float32"  # float32 stays float32


@pytest.mark.slow  # ~10 s: tracing the training step
def test_a_few_training_steps_give_a_finite_falling_loss(models):
    policy, _, model = models
    keras.config.set_dtype_policy(policy)  # layers take the policy when they are made
    try:
        trained = Seq2Seq.from_config(model.get_config())
    finally:
        keras.config.set_dtype_policy("float32")
    trained({"source_ids": SRC, "target_ids": TGT})
    trained.set_weights(model.get_weights())
    trained.compile(
        keras.optimizers.Adam(1e-2),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    x = {"source_ids": SRC, "target_ids": TGT}
    losses = [float(trained.train_on_batch(x, LABELS)) for _ in range(4)]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0], losses


def _check_search(result, rows):
    ids, scores = to_numpy(result["ids"]), to_numpy(result["scores"])
    assert ids.shape[0] == rows and ids.shape[-1] == MAX_LENGTH
    assert np.all((ids >= 0) & (ids < V)) and not np.any(ids == 2)  # START is never generated
    assert np.all(np.isfinite(scores)) and np.all(scores <= 0.0)
    alignments = to_numpy(result["alignments"]).astype(np.float64)
    assert np.all(np.isfinite(alignments))
    return ids


@pytest.mark.parametrize("search", ["greedy", "beam", "sample"])
def test_generate_under_mixed_precision(models, search):
    policy, reference, model = models
    options = {"greedy": {}, "beam": {"beam_width": 3}, "sample": {"sample": True, "seed": 1}}
    result = model.generate(SRC, max_length=MAX_LENGTH, **options[search])
    ids = _check_search(result, len(SRC))
    if search == "greedy":
        # The float32 model scores the mixed search's ids (teacher-forced, PAD and START
        # masked as `generate` masks them): the same sum of log-probabilities, to the mixed
        # rounding. (The ids themselves may differ from float32's at near-ties.)
        lengths = to_numpy(result["lengths"])
        start = np.full((len(SRC), 1), 2, "int32")
        logits = to_numpy(
            reference({"source_ids": SRC, "target_ids": np.concatenate([start, ids[:, :-1]], 1)})
        ).astype(np.float64)
        logits[..., [0, 2]] = -np.inf
        log_probs = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1,
            keepdims=True)) - logits.max(-1, keepdims=True)  # fmt: skip
        picked = np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]
        expected = np.where(np.arange(MAX_LENGTH) < lengths[:, None], picked, 0.0).sum(-1)
        atol = {"mixed_float16": 0.02, "mixed_bfloat16": 0.15}[policy]
        np.testing.assert_allclose(to_numpy(result["scores"]), expected, atol=atol)
