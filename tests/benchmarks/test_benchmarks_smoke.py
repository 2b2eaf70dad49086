"""The benchmark scripts still run (tiny sizes): figures in BENCHMARKS.md stay reproducible."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_benchmark_quick_mode_runs(script):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick"],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "|" in run.stdout  # printed its table
