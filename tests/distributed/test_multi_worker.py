"""`MultiWorkerMirroredStrategy` over 2 worker processes on 127.0.0.1 trains as one process does.

Each worker (`multi_worker_train.py`, a subprocess on the TensorFlow backend whatever the
suite's backend) gets its `TF_CONFIG` from the test, builds and compiles a `Seq2Seq` in
`strategy.scope()` with no call on data, and runs `model.fit(dataset)` on the global batch of
8 (the strategy shards it: 4 examples per worker per step). The reference is one process
without a strategy (`train_worker.py --devices 1`), from the same initial weights and on the
same data in the same order: per-step losses and every final weight agree to TOLERANCE
(measured: 5e-7 on the losses, 2e-8 on the weights), the chief's saved `.keras` reloads with
the outputs it had. A functional `keras.Model` (around an `AttentionRNN`) fails under the
same recipe: Keras' bugs keras-team/keras#20585 and tensorflow/tensorflow#72388, which
`Seq2Seq` works around (keras_attention/models/_distribute.py), and which the same overrides
fix for a functional model; `test_keras_functional_model_still_fails` fails the day Keras
fixes them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.distributed.cluster import HOST, ProcessGroup, free_ports, worker_env

HERE = Path(__file__).resolve().parent
VARIANTS = ("luong", "bahdanau")
TOLERANCE = 1e-5  # absolute, on per-step losses and on every final weight
TIMEOUT = 600  # seconds for one cluster run: ~30 s on an idle 2-core machine, minutes on a
# loaded one (niced workers on a shared machine have been starved for 2 minutes at start-up)

pytestmark = [pytest.mark.slow, pytest.mark.tensorflow_only]


def tf_config(ports: list[int], index: int) -> str:
    cluster = {"worker": [f"{HOST}:{port}" for port in ports]}
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})


def run_cluster(directory: Path, *worker_args: str, workers: int = 2) -> list[dict]:
    """Run `workers` multi-worker processes to completion; their JSON results."""
    directory.mkdir(parents=True, exist_ok=True)
    ports = free_ports(workers)
    with ProcessGroup(directory, timeout=TIMEOUT) as group:
        for index in range(workers):
            env = worker_env("tensorflow", TF_CONFIG=tf_config(ports, index))
            command = [sys.executable, str(HERE / "multi_worker_train.py"), *worker_args]
            group.start(f"worker{index}", [*command, "--out-dir", str(directory)], env)
        group.wait_all()
    return [
        json.loads((directory / f"worker{i}.json").read_text(encoding="utf-8"))
        for i in range(workers)
    ]


@pytest.fixture(scope="module")
def one_process(tmp_path_factory) -> tuple[dict, Path]:
    """The reference run (one process, no strategy); it saves the initial weights."""
    directory = tmp_path_factory.mktemp("one_process")
    with ProcessGroup(directory, timeout=TIMEOUT) as group:
        command = [sys.executable, str(HERE / "train_worker.py"), "--devices", "1"]
        command += ["--attention", *VARIANTS, "--weights-dir", str(directory / "weights")]
        group.start(
            "one", [*command, "--out", str(directory / "one.json")], worker_env("tensorflow")
        )
        group.wait_all()
    return json.loads((directory / "one.json").read_text(encoding="utf-8")), directory


@pytest.fixture(scope="module")
def two_workers(one_process, tmp_path_factory) -> tuple[list[dict], Path]:
    _, reference = one_process
    directory = tmp_path_factory.mktemp("two_workers")
    args = ["--model", "seq2seq", "--attention", *VARIANTS]
    results = run_cluster(directory, *args, "--weights-dir", str(reference / "weights"))
    return results, directory


@pytest.mark.parametrize("attention", VARIANTS)
def test_seq2seq_two_workers_match_one_process(one_process, two_workers, attention):
    reference = one_process[0][attention]
    assert np.all(np.isfinite(reference["losses"])) and len(reference["losses"]) == 5
    assert reference["largest_update"] > 1e-2  # the steps did move the weights
    results, _ = two_workers
    for worker in results:
        assert worker["replicas"] == 2
        run = worker[attention]
        assert run["built_at_train_begin"]  # fit built the model itself
        np.testing.assert_allclose(run["losses"], reference["losses"], rtol=0, atol=TOLERANCE)
        # `evaluate` of the trained model (the mixin's `test_step`) as on one process
        assert abs(run["evaluate_loss"] - reference["evaluate_loss"]) <= TOLERANCE
        assert len(run["weights"]) == len(reference["weights"])
        for got, want in zip(run["weights"], reference["weights"]):
            np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)


@pytest.mark.parametrize("attention", VARIANTS)
def test_chief_saved_model_reloads_with_its_outputs(one_process, two_workers, attention):
    import tests.distributed.train_worker as data

    results, directory = two_workers
    assert sorted(p.name for p in directory.glob("*.keras")) == [
        f"{v}.keras" for v in sorted(VARIANTS)
    ]
    model = keras.saving.load_model(directory / f"{attention}.keras")
    inputs, _ = data.make_data()
    outputs = np.asarray(model({k: v[:4] for k, v in inputs.items()}), "float64")
    np.testing.assert_allclose(outputs, results[0][attention]["probe_outputs"], atol=1e-6)
    for got, want in zip(model.get_weights(), one_process[0][attention]["weights"]):
        np.testing.assert_allclose(np.ravel(got), want, rtol=0, atol=TOLERANCE)


def test_keras_functional_model_still_fails(tmp_path):
    """The tutorial's recipe with Keras' own `keras.Model` (a functional `AttentionRNN`
    model) still fails before the first step. When this test fails because `trained` is
    True, Keras has fixed keras-team/keras#20585 (and tensorflow/tensorflow#72388): remove
    `MultiWorkerMixin` (keras_attention/models/_distribute.py) and this test."""
    results = run_cluster(tmp_path, "--model", "functional")
    for worker in results:
        assert not worker["functional"]["trained"], "Keras fixed #20585: drop the workaround"
        assert "Attempt to convert a value" in worker["functional"]["error"]
        assert "_maybe_symbolic_build" in worker["functional"]["frames"]


def test_functional_model_trains_with_the_same_overrides(tmp_path):
    """The workaround is not specific to `Seq2Seq`: a functional model built with a
    `keras.Model` subclass carrying `MultiWorkerMixin` trains under the same recipe
    (docs/multi-worker-keras-bug.md shows it)."""
    results = run_cluster(tmp_path, "--model", "functional-fixed")
    for worker in results:
        assert worker["functional"] == {"trained": True}
