"""benchmarks/bench_g2p_decode.py (issue 41, item 3): its smoke mode prints every system's row
from one run (Phonetisaurus' where `make peers` installed it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.tensorflow_only
def test_smoke_mode_prints_every_system(tmp_path):
    out = tmp_path / "decode.json"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_g2p_decode.py"), "--smoke",
         "--json", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    expected = {"keras-beam4", "keras-greedy", "keras-beam4-ens", "keras-greedy-ens", "floor"}
    if importlib.util.find_spec("ai_edge_litert") is not None:
        expected |= {"litert-greedy", "litert-beam"}
    if (ROOT / ".venv-peers" / "bin" / "phonetisaurus-train").exists():
        expected |= {"phonetisaurus", "phonetisaurus-apply"}
    assert expected <= set(rows)
    assert all(row["ms_per_word"] > 0 for row in rows.values())
    assert "| system | ms/word |" in run.stdout
