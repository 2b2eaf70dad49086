"""Helpers shared by the benchmark scripts: environment, timing statistics, markdown tables."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Quiet TensorFlow and pin the backend before anything imports Keras.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

# Run from a checkout without installing: put the repository root first on the path.
REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def load_pronounce():
    """`examples/pronounce.py` as a module (its data rules and split, not a copy): the G2P
    benchmarks' one loader."""
    import importlib.util

    path = REPO_ROOT / "examples" / "pronounce.py"
    spec = importlib.util.spec_from_file_location("_pronounce_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (falls back to `platform.processor()`)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def gpu_model() -> str | None:
    """The GPU names `nvidia-smi` lists (comma-separated), or `None` without an NVIDIA GPU."""
    try:
        names = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return None
    return ", ".join(n.strip() for n in names if n.strip()) or None


# The code these benchmarks time: uncommitted changes elsewhere do not affect the figures.
MEASURED_PATHS = ("keras_attention",)


def code_version() -> str:
    """The commit of the checkout, flagged if the measured code has uncommitted changes."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", *MEASURED_PATHS],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + (" + uncommitted changes under keras_attention/" if dirty else "")


def machine_info() -> dict:
    """CPU, core count, library versions and code version, for a benchmark report's header."""
    import keras
    import tensorflow as tf

    return {
        "code": code_version(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "backend": keras.backend.backend(),
    }


def median(values) -> float:
    return float(statistics.median(values))


def spread(values) -> str:
    """`min–max` of a list of per-repeat figures, as a percentage of the median."""
    m = median(values)
    if m == 0 or len(values) < 2:
        return "n/a"
    return f"±{100 * (max(values) - min(values)) / (2 * m):.0f}%"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if i else "---" for i in range(len(header))) + "|")
    lines.extend("| " + " | ".join(str(c) for c in row) + " |" for row in rows)
    return "\n".join(lines)


def machine_line(info: dict) -> str:
    """`CPU, N cores; TF x, Keras y; keras_attention z`, the machine part of a table's header."""
    return (
        f"{info['cpu']}, {info['cores']} cores; TF {info['tensorflow']}, Keras {info['keras']}; "
        f"keras_attention {info['code']}"
    )


def print_table(header: list[str], rows: list[list[str]]) -> None:
    """The markdown table between two blank lines."""
    print()
    print(markdown_table(header, rows))
    print()


def timed_rounds(cases: list, repeats: int, time_one: Callable[[Any], None]) -> float:
    """`repeats` rounds of `time_one(case)` over every case, the order rotated every round (so
    every contender takes every position in turn); the seconds it took."""
    start = time.perf_counter()
    for r in range(repeats):
        for case in rotated(cases, r):
            time_one(case)
    return time.perf_counter() - start


def rotated(items: list, shift: int) -> list:
    """`items` rotated left by `shift`, so every contender takes every position in turn."""
    shift %= len(items)
    return items[shift:] + items[:shift]


def write_json(path: str | None, result: dict) -> dict:
    """Write `result` to `path` (when given, for `--json`) and return it."""
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return result
