"""Two JAX processes on 127.0.0.1 (`jax.distributed.initialize`, `DataParallel`) train as one.

The reference is one JAX process on one device (`train_worker.py --devices 1`), which saves
the initial weights; then two processes (`jax_process_train.py`), one CPU device each, joined
by `jax.distributed.initialize` with the coordinator on 127.0.0.1 and gloo CPU collectives,
train the same `Seq2Seq` variants (Luong "general", Bahdanau; input feeding on) data-parallel
over both processes' devices, each feeding its half of every global batch of 8. Per-step
losses and every final weight agree to TOLERANCE on both processes (measured: 1e-6 on the
losses, 3e-8 on the weights).

The workers run with `KERAS_BACKEND=jax` whatever the suite's backend, so the test runs once,
in the TensorFlow suite's slow tests (`make test-extended`), as test_distributed.py's JAX check.
"""

from __future__ import annotations

import importlib.util
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
TIMEOUT = 600  # seconds for the whole run (about 2 minutes on a loaded 2-core machine)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        keras.backend.backend() != "tensorflow",
        reason="runs its JAX processes from the TensorFlow suite; on other backends it repeats",
    ),
    pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax"),
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[dict, list[dict]]:
    directory = tmp_path_factory.mktemp("jax_processes")
    weights = str(directory / "weights")
    (port,) = free_ports(1)
    with ProcessGroup(directory, timeout=TIMEOUT) as group:
        command = [sys.executable, str(HERE / "train_worker.py"), "--devices", "1"]
        command += ["--attention", *VARIANTS, "--weights-dir", weights]
        group.start("one", [*command, "--out", str(directory / "one.json")], worker_env("jax"))
        group.wait_all()
        for index in range(2):
            command = [sys.executable, str(HERE / "jax_process_train.py")]
            command += ["--coordinator", f"{HOST}:{port}", "--process-id", str(index)]
            command += ["--attention", *VARIANTS, "--weights-dir", weights]
            group.start(
                f"process{index}", [*command, "--out-dir", str(directory)], worker_env("jax")
            )
        group.wait_all()
    read = lambda name: json.loads((directory / name).read_text(encoding="utf-8"))  # noqa: E731
    return read("one.json"), [read(f"process{i}.json") for i in range(2)]


@pytest.mark.parametrize("attention", VARIANTS)
def test_two_jax_processes_match_one_process(runs, attention):
    one, processes = runs
    reference = one[attention]
    assert np.all(np.isfinite(reference["losses"])) and len(reference["losses"]) == 5
    assert reference["largest_update"] > 1e-2  # the steps did move the weights
    for index, process in enumerate(processes):
        assert process["process_index"] == index
        assert len(process["devices"]) == 2  # both processes' devices, seen from each
        run = process[attention]
        np.testing.assert_allclose(run["losses"], reference["losses"], rtol=0, atol=TOLERANCE)
        assert len(run["weights"]) == len(reference["weights"])
        for got, want in zip(run["weights"], reference["weights"]):
            np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)
