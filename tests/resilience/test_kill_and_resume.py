"""Issue 31, item 1: a killed worker loses nothing, on both multi-process engines with
`keras.callbacks.BackupAndRestore`, 2 processes on 127.0.0.1: JAX's multi-process runtime with
`keras.distribution.DataParallel` (jax_worker.py), and TensorFlow's
`MultiWorkerMirroredStrategy` training a `Seq2Seq` with dropout (tensorflow_worker.py).

Worker 1 SIGKILLs itself after a step drawn from a seed; the test then kills the rest of the
cluster (worker 0 waits in a collective), restarts both, and training resumes from the last
backup. The final weights equal an uninterrupted run's, bit for bit, and at most `save_freq`
steps were run twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import keras
import numpy as np
import pytest

from tests.resilience.launcher import Cluster, free_port

HERE = Path(__file__).parent
EPOCHS, SAVE_FREQ = 6, 3
TIMEOUT = 240  # seconds per cluster run, on a loaded 2-core machine


def _run(tmp_path, name, engine="jax", kill_at_step=-1, backup=None):
    out = tmp_path / name
    if engine == "jax":
        address = ["--port", str(free_port())]
    else:  # each TensorFlow worker listens on a port of its own
        address = ["--ports", f"{free_port()},{free_port()}"]
    args = [
        *address, "--backup", str(backup or tmp_path / f"{name}-backup"),
        "--out", str(out), "--epochs", str(EPOCHS), "--save-freq", str(SAVE_FREQ),
        "--kill-at-step", str(kill_at_step),
    ]  # fmt: skip
    env = {"TF_CPP_MIN_LOG_LEVEL": "2", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
    with Cluster(HERE / f"{engine}_worker.py", 2, args, env=env) as cluster:
        codes = cluster.wait(TIMEOUT, until_one_dies=kill_at_step >= 0)
        if kill_at_step >= 0:
            assert codes[1] == -9, cluster.output()  # worker 1 was SIGKILLed
            return None
        assert codes == [0, 0], cluster.output()
    return [json.loads(Path(f"{out}.{i}.json").read_text()) for i in range(2)]


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["jax", "tensorflow"])
def test_killed_worker_loses_nothing(tmp_path, engine):
    pytest.importorskip(engine)
    if keras.backend.backend() != engine:  # the workers run their engine whatever the
        pytest.skip(f"runs once, in the {engine} suite")  # suite's backend: not twice in CI
    total = EPOCHS * SAVE_FREQ
    # A step inside an epoch (not its last, after which the epoch's backup is written).
    candidates = [s for s in range(SAVE_FREQ + 1, total) if s % SAVE_FREQ]
    kill_at = int(np.random.default_rng(31).choice(candidates))
    whole = _run(tmp_path, "whole", engine)
    backup = tmp_path / "killed-backup"
    assert _run(tmp_path, "killed", engine, kill_at_step=kill_at, backup=backup) is None
    resumed = _run(tmp_path, "resumed", engine, backup=backup)
    for worker in range(2):
        for a, b in zip(whole[worker]["weights"], resumed[worker]["weights"]):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        # (and the dropout streams went on from where the backup left them)
        assert whole[worker].get("seed_states") == resumed[worker].get("seed_states")
    # The restart ran the steps after the last backup again: at most save_freq of them.
    last_backup = (kill_at // SAVE_FREQ) * SAVE_FREQ
    repeated = kill_at - last_backup
    assert resumed[0]["steps_ran"] == total - last_backup
    assert 0 < repeated <= SAVE_FREQ
