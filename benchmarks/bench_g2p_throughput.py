"""Training throughput of `examples/pronounce.py`'s model and candidate changes, per CPU-second.

The default run is under-trained in its budget (BENCHMARKS.md §7: the validation WER still
falls at the end), so pairs trained per CPU-second is one of the two levers (the other is what
an epoch teaches). Each variant is the model `pronounce.py` trains
(`keras_attention.pairs.trainer.build_model` of the `Settings` chosen for CMUdict, with a few
fields changed) trained with XLA on `keras_attention.training.BucketedBatches` of the seed-0
training split (`pronounce.py`'s data rules and split). Every variant first compiles one
program per bucket (not timed); then the variants take turns (round 1: A, B, C, ...; round 2:
A, B, C, ...), each turn training `--pairs` pairs from its own shuffled epoch order, so the
machine's load falls on all of them alike. Reported per variant: the median over rounds of
training pairs per CPU-second (this process's CPU time, every thread) and per wall-second,
and the ratio to the default. Training pairs per second counts source/target pairs, not
padded tokens: a larger batch pads no more (the batches are bucketed by length).

    python benchmarks/bench_g2p_throughput.py                       # every variant
    python benchmarks/bench_g2p_throughput.py --variants default,bf16 --rounds 3
    python benchmarks/bench_g2p_throughput.py --smoke               # minutes, no XLA
    python benchmarks/bench_g2p_throughput.py --variants default --side-by-side

`--side-by-side` then runs the same variants again in as many processes at once as there are
CPU cores, each limited to one thread (`TF_NUM_INTRAOP_THREADS=1`, as `keras-attention train`
runs an ensemble's members), and prints the pairs trained per wall second of all of them
together beside the one process's: what training members side by side buys over training them
in turn.

Variants (`--variants`, comma-separated): `default` (GRU, Bahdanau, batch 128, float32),
`bf16` (Keras dtype policy `mixed_bfloat16`: bfloat16 matmuls, float32 weights
and logits), `batch256`, `batch512`, `bf16-batch512`, `lstm`, `luong` (Luong's general
score), `dropout02`, `encoder2`, `units384`, `units512`, `embed128`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks._common import load_pronounce  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# name: (Settings fields changed, Keras dtype policy)
VARIANTS = {
    "default": ({}, "float32"),
    "bf16": ({}, "mixed_bfloat16"),
    "batch256": ({"batch_size": 256}, "float32"),
    "batch512": ({"batch_size": 512}, "float32"),
    "bf16-batch512": ({"batch_size": 512}, "mixed_bfloat16"),
    "lstm": ({"rnn": "lstm"}, "float32"),
    "luong": ({"attention": "luong"}, "float32"),
    "dropout02": ({"dropout": 0.2}, "float32"),
    "encoder2": ({"encoder_layers": 2}, "float32"),
    "units384": ({"units": 384}, "float32"),
    "units512": ({"units": 512}, "float32"),
    "embed128": ({"embedding_dim": 128}, "float32"),
}
SMOKE = {"units": 16, "embedding_dim": 8, "batch_size": 64, "jit_compile": False}


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def _parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=4096, help="Pairs a variant trains a turn.")
    parser.add_argument("--json", help="Write the results here.")
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="Also run the variants in one single-threaded process per core at once.",
    )
    parser.add_argument(
        "--smoke", "--quick", action="store_true", help="Tiny model and data, no XLA."
    )
    args = parser.parse_args(argv)
    args.names = args.variants.split(",")
    unknown = [n for n in args.names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    return args


def main(argv=None) -> dict:
    args = _parse(argv)
    names = args.names
    pronounce = load_pronounce()

    lexicon = pronounce.load_lexicon()
    splits = pronounce.split_words(lexicon, seed=0)
    words = splits["train"]
    smoke = SMOKE if args.smoke else {}
    if args.smoke:
        words, args.pairs, args.rounds = words[:600], 128, min(args.rounds, 2)
    pairs = [(w, p) for w in words for p in lexicon[w]]
    runs = {name: _compiled(name, smoke, pairs) for name in names}
    for round_ in range(args.rounds):
        for name in names:
            _turn(runs[name], args.pairs)
        scores = ", ".join(f"{n} {runs[n]['cpu'][-1]:.0f}" for n in names)
        print(f"round {round_ + 1}: {scores} pairs/CPU-s", flush=True)
    rows = _rows(runs, names)
    print()
    print(f"| variant | flags | pairs/CPU-s | pairs/s (wall) | CPU share | vs {names[0]} |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['variant']} | `{r['settings']}` | {r['pairs_per_cpu_second']:.0f} | "
            f"{r['pairs_per_second']:.0f} | {r['cpu_share']:.0%} | {r['ratio']:.2f}× |"
        )
    result = {
        "rows": rows,
        "rounds": args.rounds,
        "pairs_per_turn": args.pairs,
        "load_average_at_end": list(os.getloadavg()),
        "cpus": os.cpu_count(),
    }
    if args.side_by_side:
        result["side_by_side"] = _side_by_side(args, rows)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return result


def _side_by_side(args: argparse.Namespace, alone: list[dict]) -> list[dict]:
    """This script once per core at once, one thread each; the table against `alone`."""
    import subprocess
    import tempfile

    count = os.cpu_count() or 1
    command = [sys.executable, __file__, "--variants", args.variants, "--rounds",
               str(args.rounds), "--pairs", str(args.pairs)]  # fmt: skip
    command += ["--smoke"] if args.smoke else []
    env = {**os.environ, "TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"}
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / f"{i}.json" for i in range(count)]
        processes = [
            subprocess.Popen([*command, "--json", str(path)], env=env, stdout=subprocess.DEVNULL)
            for path in paths
        ]
        for process in processes:
            if process.wait() != 0:
                raise RuntimeError(f"a side-by-side run failed: exit code {process.returncode}")
        runs = [json.loads(path.read_text())["rows"] for path in paths]
    rows = []
    print(f"\n| variant | 1 process, {count} threads: pairs/s | {count} processes of 1 thread: "
          "pairs/s (sum) | ratio | pairs/CPU-s each |\n|---|---:|---:|---:|---|")  # fmt: skip
    for i, row in enumerate(alone):
        together = sum(run[i]["pairs_per_second"] for run in runs)
        each = [run[i]["pairs_per_cpu_second"] for run in runs]
        rows.append({"variant": row["variant"], "alone": row["pairs_per_second"],
                     "side_by_side": together, "ratio": together / row["pairs_per_second"],
                     "pairs_per_cpu_second_each": each})  # fmt: skip
        print(f"| {row['variant']} | {row['pairs_per_second']:.0f} | {together:.0f} | "
              f"{together / row['pairs_per_second']:.2f}× | "
              f"{' / '.join(f'{x:.0f}' for x in each)} |")  # fmt: skip
    return rows


def _compiled(name: str, smoke: dict, pairs: list) -> dict:
    """Variant `name`'s model and batches, every bucket's training program compiled (one
    batch each, timed): the state its turns go on from."""
    import keras

    from keras_attention.pairs import Settings, Vocabulary
    from keras_attention.pairs.trainer import build_model
    from keras_attention.training import BucketedBatches

    changes, policy = VARIANTS[name]
    sources, targets = (
        Vocabulary(c for w, _ in pairs for c in w),
        Vocabulary(p for _, phones in pairs for p in phones),
    )
    settings = Settings(**{**changes, **smoke})  # the defaults: CMUdict's settings
    keras.utils.set_random_seed(0)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(policy)
    try:
        model = build_model(settings, len(sources), len(targets))
    finally:
        keras.config.set_dtype_policy(previous)
    batches = BucketedBatches(
        [sources.encode(w) for w, _ in pairs],
        [targets.encode(p) for _, p in pairs],
        settings.batch_size,
        seed=0,
    )  # buckets: the quantiles of the pairs' lengths, as keras_attention.pairs.train
    started, cpu_started = time.perf_counter(), cpu_seconds()
    for bucket in range(len(batches.buckets)):  # compile every bucket's program
        source, inputs, labels = batches.buckets[bucket]
        rows = slice(0, settings.batch_size)
        model.train_on_batch({"source_ids": source[rows], "target_ids": inputs[rows]}, labels[rows])
    run = {
        "model": model,
        "batches": batches,
        "iterator": iter(batches),
        "compile_seconds": time.perf_counter() - started,
        "compile_cpu_seconds": cpu_seconds() - cpu_started,
        "cpu": [],
        "wall": [],
        "settings": changes,
        "batch_size": settings.batch_size,
        "policy": policy,
    }
    print(f"{name}: compiled {len(batches.buckets)} bucket programs in "
          f"{run['compile_seconds']:.0f} s", flush=True)  # fmt: skip
    return run


def _turn(run: dict, pairs: int) -> None:
    """Train `run`'s model on at least `pairs` pairs, going on from its last batch; record
    the pairs per CPU second and per second."""
    done = 0
    started, cpu_started = time.perf_counter(), cpu_seconds()
    while done < pairs:
        try:
            x, y = next(run["iterator"])
        except StopIteration:
            run["iterator"] = iter(run["batches"])
            continue
        run["model"].train_on_batch(x, y)
        done += len(y)
    run["cpu"].append(done / (cpu_seconds() - cpu_started))
    run["wall"].append(done / (time.perf_counter() - started))


def _rows(runs: dict, names: list[str]) -> list[dict]:
    """The table's rows: each variant's median rates, against the first variant's."""
    base = statistics.median(runs[names[0]]["cpu"])
    rows = []
    for name in names:
        run = runs[name]
        cpu, wall = statistics.median(run["cpu"]), statistics.median(run["wall"])
        rows.append({
            "variant": name,
            "settings": " ".join(
                [f"{k}={v}" for k, v in run["settings"].items()]
                + ([] if run["policy"] == "float32" else [f"policy={run['policy']}"])
            )
            or "(pronounce.py's)",
            "pairs_per_cpu_second": cpu, "pairs_per_second": wall,
            "cpu_share": wall / cpu, "ratio": cpu / base,
            "compile_seconds": run["compile_seconds"],
            "rounds_pairs_per_cpu_second": run["cpu"],
        })  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
