"""Serving under load and hostile input: the exported `translate` signature from several threads.

The SavedModel that `examples/export_for_serving.py` writes (trained here with its `--smoke`
sizes unless `--model-dir` names an export) is loaded once with `tf.saved_model.load`, as a
Python server would, and `--threads` threads send it a fixed count of requests (`--requests`),
one string each, mixing good and hostile inputs in a fixed, seeded order:

- good: a date in one of the example's renderings; an empty string; a date with a NUL byte in
  it (answered, the NUL an unknown character); a date of exactly `max_source_length`
  characters (the longest source the export accepts);
- hostile: 100,000 characters (refused by the source-length limit: before it, one such request
  held a core for 7.4 s), 1,000,000 characters (refused before tokenizing), a 2-D string tensor
  (refused by the rank check), an int32 tensor (refused by TensorFlow's dtype check).

Every request's outcome is checked: a good one must be answered, a hostile one refused with its
own error (`InvalidArgumentError` and the message of that check). Anything else is an
unexpected failure, and the script exits with status 1. Reported: throughput over the whole
run, p50/p99 latency of the good and of the hostile requests, and the process's resident
memory (RSS, sampled every 50 ms) after warm-up, at the end and its peak, so a leak shows as
growth from the first figure to the last.

Usage::

    python benchmarks/bench_serving.py                      # 2,000 requests, 4 threads
    python benchmarks/bench_serving.py --threads 8 --requests 4000
    python benchmarks/bench_serving.py --model-dir OUT/serving/translator/1
    python benchmarks/bench_serving.py --quick              # what the tests run
"""

from __future__ import annotations

import argparse
import os
import queue
import sys
import tempfile
import threading
import time
from pathlib import Path

import _common  # first: sets the TF/Keras environment before they are imported
import numpy as np

KINDS = {
    # name: (share of the requests, expected outcome: None = answered, else a message part)
    "date": (0.70, None),
    "empty": (0.04, None),
    "nul": (0.04, None),
    "at_limit": (0.04, None),
    "chars_100k": (0.06, "is longer than the export allows"),  # by bytes or by tokens
    "chars_1m": (0.04, "bytes (more than"),
    "rank_2": (0.04, "is not compatible with expected shape"),
    "int32": (0.04, "expected to be a string tensor"),
}


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", default=None, help="An export (default: train one).")
    parser.add_argument(
        "--max-source-length", type=int, default=None, help="The --model-dir export's limit."
    )
    parser.add_argument("--threads", type=int, default=4, help="Client threads.")
    parser.add_argument("--requests", type=int, default=2000, help="Requests in all.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the request order.")
    parser.add_argument("--quick", action="store_true", help="Few requests (the tests).")
    parser.add_argument("--json", default=None, help="Also write the results here.")
    return parser.parse_args(argv)


def _rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _export(model_dir: str | None, limit: int | None) -> tuple[Path, int]:
    """The export to serve and its `max_source_length`."""
    sys.path.insert(0, str(_common.REPO_ROOT / "examples"))
    import export_for_serving as example

    if model_dir is None:
        output = Path(tempfile.mkdtemp(prefix="bench_serving_"))
        results = example.main(["--smoke", "--output-dir", str(output)])
        return Path(results["model_dir"]), int(results["max_source_length"])
    if limit is None:
        raise SystemExit("--model-dir needs --max-source-length (the export's limit)")
    return Path(model_dir), limit


def _requests(count: int, seed: int, limit: int) -> list:
    """`(kind, value)` pairs in a seeded order with the shares of `KINDS`."""
    import tensorflow as tf

    sys.path.insert(0, str(_common.REPO_ROOT / "examples"))
    import export_for_serving as example

    rng = np.random.default_rng(seed)
    dates, _, _ = example.make_pairs(count, seed + 7)
    names = list(KINDS)
    shares = np.array([KINDS[k][0] for k in names])
    kinds = rng.choice(names, size=count, p=shares / shares.sum())
    values = {
        "empty": "",
        "chars_100k": "a" * 100_000,
        "chars_1m": "a" * 1_000_000,
        "at_limit": ("1999/12/25 " * limit)[: limit - 1] + "5",  # exactly `limit` tokens
    }
    made = []
    for i, kind in enumerate(kinds):
        if kind == "date":
            value = tf.constant([dates[i]])
        elif kind == "nul":
            text = dates[i]
            value = tf.constant([(text[:3] + "\x00" + text[3:]).encode()])
        elif kind == "rank_2":
            value = tf.constant([[dates[i]]])
        elif kind == "int32":
            value = tf.constant([i], tf.int32)
        else:
            value = tf.constant([values[kind]])
        made.append((str(kind), value))
    return made


def _serve(translate, requests: list, threads: int) -> tuple:
    """`(results, seconds, memory)`: answer `requests` from `threads` client threads at once;
    each request's `(kind, seconds, error or None)`, the wall time, and the process's RSS (MB)
    sampled every 50 ms from just before the clients start."""
    import tensorflow as tf

    work: queue.Queue = queue.Queue()
    for index, request in enumerate(requests):
        work.put((index, *request))
    results: list = [None] * len(requests)
    memory: list = []
    done = threading.Event()

    def sample_memory():
        while not done.is_set():
            memory.append(_rss_mb())
            time.sleep(0.05)

    def client():
        while True:
            try:
                index, kind, value = work.get_nowait()
            except queue.Empty:
                return
            started = time.perf_counter()
            try:
                translate(inputs=value)
                outcome = None
            except (tf.errors.InvalidArgumentError, TypeError, ValueError) as error:
                outcome = str(error)
            results[index] = (kind, time.perf_counter() - started, outcome)

    sampler = threading.Thread(target=sample_memory, daemon=True)
    sampler.start()
    time.sleep(0.1)
    started = time.perf_counter()
    clients = [threading.Thread(target=client) for _ in range(threads)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join()
    elapsed = time.perf_counter() - started
    done.set()
    sampler.join()
    return results, elapsed, memory


def _check_outcomes(results: list) -> tuple[list[str], int]:
    """`(unexpected, refused)`: the requests that did not get what their kind expects (an
    answer, or a refusal naming the reason), and how many were refused as expected."""
    unexpected, refused = [], 0
    for kind, _, outcome in results:
        expected = KINDS[kind][1]
        if expected is None and outcome is not None:
            unexpected.append(f"{kind}: failed: {outcome[:200]}")
        elif expected is not None and (outcome is None or expected not in outcome):
            unexpected.append(f"{kind}: {'answered' if outcome is None else outcome[:200]}")
        elif expected is not None:
            refused += 1
    return unexpected, refused


def main(argv=None) -> dict:
    args = _parse(argv)
    if args.quick:
        args.requests, args.threads = 120, 2
    import tensorflow as tf

    model_dir, limit = _export(args.model_dir, args.max_source_length)
    translate = tf.saved_model.load(str(model_dir)).signatures["translate"]
    requests = _requests(args.requests, args.seed, limit)

    for kind in ("date", "nul", "empty", "at_limit"):  # warm-up: one of each good kind
        value = next(v for k, v in requests if k == kind)
        translate(inputs=value)
    results, elapsed, memory = _serve(translate, requests, args.threads)
    unexpected, refused = _check_outcomes(results)
    good = [t for k, t, _ in results if KINDS[k][1] is None]
    hostile = [t for k, t, _ in results if KINDS[k][1] is not None]
    counts = {k: sum(1 for r in results if r[0] == k) for k in KINDS}

    def ms(values, q):
        return f"{1000 * np.percentile(values, q):.1f}" if values else "n/a"

    info = _common.machine_info()
    print(f"\nServing `translate` ({model_dir}), max_source_length={limit}")
    print(_common.machine_line(info))
    print("requests by kind: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
    header = [
        "threads", "requests", "answered", "refused as expected", "unexpected", "req/s",
        "good p50 ms", "good p99 ms", "hostile p50 ms", "hostile p99 ms",
        "RSS after warm-up MB", "RSS end MB", "RSS peak MB",
    ]  # fmt: skip
    answered = sum(1 for _, _, o in results if o is None)
    row = [
        args.threads, len(results), answered, refused, len(unexpected),
        f"{len(results) / elapsed:.1f}", ms(good, 50), ms(good, 99),
        ms(hostile, 50), ms(hostile, 99), f"{memory[0]:.0f}", f"{memory[-1]:.0f}",
        f"{max(memory):.0f}",
    ]  # fmt: skip
    _common.print_table(header, [row])
    for line in unexpected[:20]:
        print("UNEXPECTED", line)
    result = {
        "machine": info,
        "config": vars(args),
        "max_source_length": limit,
        "counts": counts,
        "seconds": elapsed,
        "throughput": len(results) / elapsed,
        "good_ms": {"p50": float(ms(good, 50)), "p99": float(ms(good, 99))},
        "hostile_ms": {"p50": float(ms(hostile, 50)), "p99": float(ms(hostile, 99))},
        "rss_mb": {"after_warm_up": memory[0], "end": memory[-1], "peak": max(memory)},
        "unexpected": unexpected,
    }
    _common.write_json(args.json, result)
    if unexpected:
        raise SystemExit(1)
    return result


if __name__ == "__main__":
    main()
