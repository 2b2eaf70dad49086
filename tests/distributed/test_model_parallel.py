"""`ModelParallel` with `Seq2Seq.get_layout_map` on 4 host devices trains as one device does.

`model_parallel_worker.py` (a subprocess with `KERAS_BACKEND=jax` and 4 host devices) fits a
Luong and a Bahdanau `Seq2Seq` for 5 steps on one device, then from the same initial weights
under `keras.distribution.ModelParallel` on a 2 × 2 mesh ("batch" × "model"): the embedding
tables and the vocabulary projection split along the vocabulary over "model", the batch over
"batch". Per-step losses and every final weight agree to TOLERANCE (measured: 7e-7 on the
losses, 3e-8 on the weights), and the weights are laid out as the map says.
`keras.distribution`'s `ModelParallel` runs on JAX only (Keras 3.15), so this test does too.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.distributed.cluster import ProcessGroup, worker_env

HERE = Path(__file__).resolve().parent
VARIANTS = ("luong", "bahdanau")
TOLERANCE = 1e-5
TIMEOUT = 600  # seconds (40 s on an idle 2-core machine; minutes when it is shared)
SHARDED = {
    "encoder/embedding/embeddings": "P('model', None)",
    "decoder/embedding/embeddings": "P('model', None)",
    "decoder/projection/kernel": "P(None, 'model')",
    "decoder/projection/bias": "P('model',)",
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        keras.backend.backend() != "tensorflow",
        reason="runs its JAX process from the TensorFlow suite; on other backends it repeats",
    ),
    pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax"),
]


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> dict:
    directory = tmp_path_factory.mktemp("model_parallel")
    env = worker_env("jax", XLA_FLAGS="--xla_force_host_platform_device_count=4")
    command = [sys.executable, str(HERE / "model_parallel_worker.py"), "--mesh", "2", "2"]
    with ProcessGroup(directory, timeout=TIMEOUT) as group:
        group.start("worker", [*command, "--out", str(directory / "result.json")], env)
        group.wait_all()
    return json.loads((directory / "result.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("attention", VARIANTS)
def test_sharded_vocabularies_match_one_device(result, attention):
    assert len(result["devices"]) == 4
    one, sharded = result[attention]["one_device"], result[attention]["sharded"]
    assert np.all(np.isfinite(one["losses"])) and len(one["losses"]) == 5
    assert one["largest_update"] > 1e-2  # the steps did move the weights
    np.testing.assert_allclose(sharded["losses"], one["losses"], rtol=0, atol=TOLERANCE)
    for got, want in zip(sharded["weights"], one["weights"]):
        np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("attention", VARIANTS)
def test_only_the_vocabulary_weights_are_sharded(result, attention):
    specs = result[attention]["sharded"]["specs"]
    assert {path: specs[path] for path in SHARDED} == SHARDED
    others = {path: spec for path, spec in specs.items() if path not in SHARDED}
    assert others and all("model" not in spec for spec in others.values()), others
