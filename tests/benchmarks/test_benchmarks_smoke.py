"""The benchmark scripts still run (tiny sizes): figures in BENCHMARKS.md stay reproducible."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("bench_*.py"))
# bench_backends.py times every backend; its own test below runs it on the suite's backend.
TENSORFLOW_SCRIPTS = [s for s in SCRIPTS if s != "bench_backends.py"]


def run_quick(script: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick", *args],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env,
    )  # fmt: skip


# Options whose contenders the default run leaves out, and a line each prints: the same quick
# run checks them (no second run of the script).
EXTRA = {
    "bench_local.py": (
        ["--alignments", "global", "local_predictive", "local_monotonic", "floor", "sorted_bound"],
        "sorted bound at S=",
    ),
    "bench_decoder.py": (["--attention-free"], "attention-free (jit "),
}


@pytest.mark.slow
@pytest.mark.tensorflow_only
@pytest.mark.parametrize("script", TENSORFLOW_SCRIPTS)
def test_benchmark_quick_mode_runs(script):
    args, line = EXTRA.get(script, ([], "|"))
    run = run_quick(script, *args)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "|" in run.stdout  # printed its table
    assert line in run.stdout


@pytest.mark.slow
def test_bench_backends_quick_mode_times_every_case(tmp_path):
    """On the suite's backend every case gets a time, none an error (float32: mixed precision
    is covered by the layer contract tests)."""
    import json

    backend = keras.backend.backend()
    out = tmp_path / "backends.json"
    run = run_quick(
        "bench_backends.py", "--backends", backend, "--policies", "float32",
        "--json", str(out),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    table = [line for line in run.stdout.splitlines() if line.startswith("| ")]
    assert len(table) == 1 + 12  # header + 12 cases
    results = json.loads(out.read_text(encoding="utf-8"))["results"][backend]
    assert results["problem"] is None and "unavailable" not in results
    errors = {k: v["error"] for k, v in results["results"].items() if "error" in v}
    assert not errors
    assert all(v["ms"] > 0 for v in results["results"].values())
