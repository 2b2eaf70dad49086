"""`check_litert`: run a model folder's `.tflite` export where only LiteRT is installed, and
compare it with the Keras model it came from."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["check_litert"]

RUNNER = """
import json, sys, time
import numpy as np
from ai_edge_litert.interpreter import Interpreter

interpreter = Interpreter(model_path=sys.argv[1])
source, timed = np.load(sys.argv[2]), int(sys.argv[3])
ids, latency = {}, {}
for name in interpreter.get_signature_list():
    run, seconds, ids[name] = interpreter.get_signature_runner(name), [], []
    run(source_ids=source[:1])  # warm up
    for row in source:
        started = time.perf_counter()
        ids[name].append(run(source_ids=row[None])["ids"][0].tolist())
        seconds.append(time.perf_counter() - started)
    latency[name] = 1000 * float(np.median(seconds[:timed]))
imported = any(m.startswith("keras_attention") for m in sys.modules)
print(json.dumps({"ids": ids, "latency_ms": latency, "imported_keras_attention": imported}))
"""


def check_litert(
    model: Any, path: str | os.PathLike, sources: list[str], timed: int = 200
) -> dict[str, Any]:
    """Run `path` (written by `model.export_litert`) on `sources`, one at a time, in a fresh
    Python process that imports only `ai_edge_litert` and NumPy, and compare its outputs with
    the Keras model's (the same beam width: greedy, and the export's beam search).

    Sources longer than the file's input (the longest training source plus 8 characters) are
    left out.

    Args:
        model: The `PairModel` exported.
        path: Its `.tflite` file.
        sources: Sources to decode (NFC, as `PairModel.predict` reads them).
        timed: The latency is the median over the first `timed` sources. Defaults to `200`.

    Returns:
        `{"bytes", "sources", "latency_ms": {"greedy", "beam"}, "agreement_with_keras":
        {"greedy", "beam"}` (the share of sources with the same output),
        `"runner_imported_keras_attention"}`.

    Raises:
        ModuleNotFoundError: `ai_edge_litert` is not installed (the message says how to).
        RuntimeError: the runner failed (its error output is in the message).
    """
    if importlib.util.find_spec("ai_edge_litert") is None:
        raise ModuleNotFoundError(
            'ai_edge_litert is not installed (pip install "keras-recurrent-attention[litert]"): '
            f"{os.fspath(path)} cannot be run here"
        )
    length = int(model.config["longest_source"]) + 9  # as PairModel.export_litert
    sources = [s for s in sources if len(s) < length]
    source = model.source_vocabulary.encode_batch(sources, length)
    with tempfile.TemporaryDirectory() as work:
        np.save(Path(work) / "source.npy", source)
        command = [sys.executable, "-c", RUNNER, os.fspath(path), f"{work}/source.npy", str(timed)]
        run = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    if run.returncode:
        raise RuntimeError(f"running {os.fspath(path)} failed:\n{run.stderr[-3000:]}")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    decode, agreement = model.target_vocabulary.decode, {}
    for name, width in (("greedy", 1), ("beam", max(2, model.settings.beam_width))):
        translator = model.translator(model.settings.search(width))
        expected = [
            row
            for i in range(0, len(source), 1024)
            for row in translator(source[i : i + 1024])["ids"]
        ]
        same = [decode(a) == decode(b) for a, b in zip(expected, report["ids"][name])]
        agreement[name] = float(np.mean(same)) if same else 1.0
    return {
        "bytes": os.path.getsize(path),
        "sources": len(sources),
        "latency_ms": report["latency_ms"],
        "agreement_with_keras": agreement,
        "runner_imported_keras_attention": report["imported_keras_attention"],
    }
