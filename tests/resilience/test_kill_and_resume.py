"""Issue 31, item 1: a killed worker loses nothing (JAX's multi-process runtime, 2 processes on
127.0.0.1, `keras.distribution.DataParallel`, `keras.callbacks.BackupAndRestore`).

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

WORKER = Path(__file__).with_name("jax_worker.py")
EPOCHS, SAVE_FREQ = 6, 3
TIMEOUT = 240  # seconds per cluster run, on a loaded 2-core machine


def _run(tmp_path, name, kill_at_step=-1, backup=None):
    out = tmp_path / name
    args = [
        "--port", str(free_port()), "--backup", str(backup or tmp_path / f"{name}-backup"),
        "--out", str(out), "--epochs", str(EPOCHS), "--save-freq", str(SAVE_FREQ),
        "--kill-at-step", str(kill_at_step),
    ]  # fmt: skip
    with Cluster(WORKER, 2, args, env={"TF_CPP_MIN_LOG_LEVEL": "2"}) as cluster:
        codes = cluster.wait(TIMEOUT, until_one_dies=kill_at_step >= 0)
        if kill_at_step >= 0:
            assert codes[1] == -9, cluster.output()  # worker 1 was SIGKILLed
            return None
        assert codes == [0, 0], cluster.output()
    return [json.loads(Path(f"{out}.{i}.json").read_text()) for i in range(2)]


@pytest.mark.slow
def test_killed_worker_loses_nothing(tmp_path):
    pytest.importorskip("jax")
    if keras.backend.backend() != "jax":  # the workers run JAX whatever the suite's backend:
        pytest.skip("runs once, in the JAX suite (make test-jax-slow)")  # not twice in CI
    total = EPOCHS * SAVE_FREQ
    # A step inside an epoch (not its last, after which the epoch's backup is written).
    candidates = [s for s in range(SAVE_FREQ + 1, total) if s % SAVE_FREQ]
    kill_at = int(np.random.default_rng(31).choice(candidates))
    whole = _run(tmp_path, "whole")
    backup = tmp_path / "killed-backup"
    assert _run(tmp_path, "killed", kill_at_step=kill_at, backup=backup) is None
    resumed = _run(tmp_path, "resumed", backup=backup)
    for worker in range(2):
        for a, b in zip(whole[worker]["weights"], resumed[worker]["weights"]):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # The restart ran the steps after the last backup again: at most save_freq of them.
    last_backup = (kill_at // SAVE_FREQ) * SAVE_FREQ
    repeated = kill_at - last_backup
    assert resumed[0]["steps_ran"] == total - last_backup
    assert 0 < repeated <= SAVE_FREQ
