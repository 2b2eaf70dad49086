"""`benchmarks/device_suite.sh --quick` runs every step on CPU and collects their figures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEPS = ["layers", "local_forward", "local_train", "decoder", "decoding", "backends", "g2p_epoch"]


@pytest.mark.slow
@pytest.mark.tensorflow_only
def test_device_suite_quick_runs_every_step(tmp_path):
    out = tmp_path / "suite"
    env = {**os.environ, "PYTHON": sys.executable, "TF_CPP_MIN_LOG_LEVEL": "2"}
    process = subprocess.Popen(
        [str(ROOT / "benchmarks" / "device_suite.sh"), "--quick", "--out", str(out),
         "--backends", "tensorflow", "--budget", "2400"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env,
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, _ = process.communicate(timeout=2700)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, stdout[-3000:]
    result = json.loads((out / "device_suite.json").read_text(encoding="utf-8"))
    assert result["machine"]["quick"] is True
    records = {r["step"]: r for r in result["steps"]}
    assert list(records) == STEPS
    for name, record in records.items():
        assert record["status"] == "ok", (name, record["status"])
        assert record["figures"], name  # the step's JSON was read into table rows
        assert (out / f"{name}.log").exists()
    # The table holds the headline figures the suite is for.
    assert "faster than global" in stdout
    assert "the built-in's time" in stdout
    assert "ours / plain LSTM decoder" in stdout
    assert "beam 4 / greedy time" in stdout
    assert "Luong decoder: train, float32 (tensorflow)" in stdout
    assert "G2P: one epoch, training" in stdout


def test_device_suite_refuses_an_unknown_step(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "device_suite.py"), "--steps", "nope",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert run.returncode != 0
    assert "unknown steps ['nope']" in run.stderr
