"""Local vs global attention: time and peak memory of forward+backward as the memory grows.

`LuongAttention(score_mode="general", window_radius=D)` with alignment "global",
"local_predictive" and "local_monotonic", B=4, T=S in {512, 2048, 8192}, d=128, D=10 (a window
of 2D+1 = 21 positions), float32. One step: `loss = sum(layer(..., training=True))` (as `fit`
calls it), gradients w.r.t. the query, the memory and every trainable weight, in `tf.function`
(graph mode; `--jit-compile` for XLA). `--forward`: the output alone, `training` unset.

Expectation (docs/design.md §2, the issue's target): with T = S, global attention does O(T·S) =
O(S²) work and holds [B, T, S] score/weight tensors (and their gradients), so time and memory
grow 16× per 4× step in S; local attention gathers a static window, O(T·(2D+1)) = O(S), so they
grow 4×. Targets (issue 15): local_predictive at least 30× faster than global for a training
step at S=8192 (B=4, d=128), at least 10× for the forward pass at S=4096 (B=2, d=64).

Method:

- Every (size, alignment) runs in a fresh subprocess (`--worker`), so one configuration's
  allocations cannot hide or inflate another's peak.
- Peak memory: in the worker, after the imports, the inputs, building the layer and *tracing*
  the step function (`get_concrete_function`: the graph exists but nothing has run), we read the
  current resident set size (VmRSS from /proc/self/status) as the baseline. After the warm-up
  and timed steps we read `resource.getrusage(RUSAGE_SELF).ru_maxrss`, the high-water mark of
  the resident set over the whole process. Peak = high-water mark − baseline: the extra memory
  the step needs at its worst moment (activations kept for the backward pass, gradients,
  temporaries). We subtract the current RSS rather than `ru_maxrss` at the baseline because the
  imports can leave a transient high-water mark above the steady state; if the steps never
  exceed that earlier mark, the figure is an upper bound and is printed with "≤". Memory freed
  and reused by the allocator is counted once, which is what a peak should do; the first run's
  one-off graph optimisation (Grappler) is included and is a few MB. With `--jit-compile` the
  XLA compilation also happens at the first run, so its memory (about 60 MiB here, visible at
  the smallest size) is included too.
- Time: the median of `--repeats` timed steps after `--warmup` untimed ones, per worker. The
  whole sweep is done `--rounds` times, each round running the alignments of a size in a
  rotated order; reported are the medians over rounds, and the speed-up global / local is the
  median of the per-round ratios (the two ran seconds apart on the same shared machine).
- Growth factors: figure at S divided by figure at the previous size (4× in S by default):
  linear ≈ 4×, quadratic ≈ 16×.

Contenders besides the three alignments: `local_predictive/windows`, `local_monotonic/windows`
(the layer forced onto the window path, the formulation before blocks: under XLA outside
training its windows are fused; `window_implementation="windows"`, see
`LuongAttention.window_plan`) and
`local_predictive/tiles` (the exact tiled formulation, forced: the layers choose it in training
and without XLA), and
`floor`: the dense work every local_predictive formulation must do (query projection, position
network, one read of the inputs, one write of the output); the script multiplies it by
1 + (2D+1)/d for the window arithmetic and prints local / floor; and `sorted_bound` (not run by
default): a floor for exact formulations that sort the queries by centre, timed rather than
estimated — the same dense part, the argsort of the centres, the projected queries permuted
into sorted order and the contexts back, and local_monotonic's blocks (Q queries against one
contiguous span of Q + 2D keys: no gather, no scatter) over the sorted queries, as if every
block of sorted queries fitted one such span: nothing is spent on blocks whose centres spread
wider, which an exact formulation must handle (the tiles do). It computes no local-p attention
(the blocks take the centres to be 0, 1, 2, …): it prices the layout. The script prints
local_predictive / sorted_bound. `--forward` times the forward pass only; `--clock cpu` reports
the process CPU time (all threads) instead of wall time, for a machine shared with other jobs;
`--global-max-size` skips global attention above a size.

Usage:
    python benchmarks/bench_local.py                       # full sweep, 4–5 min on 2 cores
    python benchmarks/bench_local.py --jit-compile --forward --batch 2 --dim 64 \
        --sizes 1024 4096 16384 --global-max-size 4096 --alignments global local_predictive \
        local_monotonic local_monotonic/windows floor --clock cpu     # issue 15's forward goal
    python benchmarks/bench_local.py --jit-compile --batch 4 --dim 128 --sizes 8192 \
        --alignments global local_predictive local_monotonic floor sorted_bound \
        --rounds 2 --repeats 3 --clock cpu                 # issue 15's training goal, its bound
    python benchmarks/bench_local.py --quick               # tiny sizes, a smoke test
    python benchmarks/bench_local.py --sizes 512 2048 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import _common as C  # first: sets the TF/Keras environment before they are imported

ALIGNMENTS = ("global", "local_predictive", "local_monotonic", "floor")
# The same layers forced onto the gathered-window path (the formulation before blocks and tiles).
WINDOW_PATHS = ("local_predictive/windows", "local_monotonic/windows", "local_predictive/tiles")
# Timed lower bounds that are not layers (see the docstring).
BOUNDS = ("sorted_bound",)
# Issue 15's goals: (speed-up of local_predictive over global, at T = S).
TARGETS = {"training": (30.0, 8192), "forward": (10.0, 4096)}


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("VmRSS not found in /proc/self/status")


def worker(cfg: dict) -> dict:
    """Run one configuration in this (fresh) process; return time and memory figures."""

    import numpy as np
    import tensorflow as tf

    from keras_attention import LuongAttention

    B, L, d = cfg["batch"], cfg["size"], cfg["dim"]
    rng = np.random.default_rng(0)
    query = tf.constant(rng.standard_normal((B, L, d)), "float32")
    memory = tf.constant(rng.standard_normal((B, L, d)), "float32")
    floor = cfg["alignment"] in ("floor", "sorted_bound")
    alignment = cfg["alignment"].split("/")[0]
    forced = cfg["alignment"].partition("/")[2]  # "windows", "tiles" or "" (auto)
    layer = LuongAttention(
        score_mode="general",
        alignment="local_predictive" if floor else alignment,
        window_radius=cfg["radius"],
        window_implementation=forced or "auto",
    )
    layer.build([query.shape, memory.shape])
    variables = layer.trainable_variables

    def forward(q, m, training=None):
        if not floor:
            return layer([q, m], training=training)
        return _floor_work(layer, q, m, cfg)

    @tf.function(jit_compile=cfg["jit"])
    def step(q, m):
        if cfg["forward"]:
            out = forward(q, m)
            return tf.reduce_sum(out), out
        with tf.GradientTape() as tape:
            tape.watch([q, m])
            loss = tf.reduce_sum(forward(q, m, training=True))
        return loss, tape.gradient(loss, [q, m, *variables])

    step.get_concrete_function(query, memory)  # trace now so the graph is in the baseline
    return _measure(step, query, memory, cfg)


def _floor_work(layer, q, m, cfg: dict):
    """The `floor` and `sorted_bound` contenders: the least work of `local_predictive`."""
    import tensorflow as tf

    from keras_attention.functional import blocked_window_attention

    B, L, d = cfg["batch"], cfg["size"], cfg["dim"]
    sorted_bound = cfg["alignment"] == "sorted_bound"
    # The dense work every local_predictive formulation must do, O(T·d²): the query
    # projection s W_gᵀ and the position network v_p · tanh(s W_p); plus one read of the
    # memory. No window is scored (that work is added analytically, see `floor_ms`).
    flat = tf.reshape(q, (-1, d))
    projected = tf.matmul(flat, layer.score_kernel, transpose_b=True)
    logit = tf.linalg.matvec(tf.tanh(tf.matmul(flat, layer.position_kernel)), layer.position_vector)
    gate = tf.reshape(tf.sigmoid(logit), tf.shape(q)[:2])  # p_t / S
    projected = tf.reshape(projected, tf.shape(q))
    if not sorted_bound:
        return projected * gate[..., None] + m
    # The sorted layout's least work (see the docstring): sort by centre, permute the
    # queries, blocks over contiguous spans, permute the contexts back.
    center = tf.cast(tf.floor(gate * L + 0.5), "int32")
    order = tf.argsort(center, axis=-1, stable=True)
    rows = tf.broadcast_to(tf.range(B)[:, None], tf.shape(order))
    inverse = tf.scatter_nd(
        tf.stack([rows, order], -1), tf.broadcast_to(tf.range(L)[None], tf.shape(order)),
        tf.shape(order),
    )  # fmt: skip
    ordered = tf.gather(projected, order, batch_dims=1)
    context, _ = blocked_window_attention(ordered, m, m, cfg["radius"])
    return tf.gather(context, inverse, batch_dims=1) * gate[..., None]


def _measure(step, query, memory, cfg: dict) -> dict:
    """Time `step` (traced) after its warm-up steps, and the memory it adds to the process's
    resident set; the worker's figures."""
    import resource

    import numpy as np

    L = cfg["size"]
    baseline_kib = _rss_kib()
    maxrss_before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    times, cpu_times = [], []
    for i in range(cfg["warmup"] + cfg["repeats"]):
        start, cpu_start = time.perf_counter(), time.process_time()
        loss, _ = step(query, memory)
        float(loss)
        if i >= cfg["warmup"]:
            times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu_start)
    maxrss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "alignment": cfg["alignment"],
        "size": L,
        "step_s": C.median(cpu_times if cfg["clock"] == "cpu" else times),
        "wall_s": C.median(times),
        "cpu_s": C.median(cpu_times),
        "step_s_all": times,
        "peak_mib": (maxrss_kib - baseline_kib) / 1024,
        "peak_is_bound": maxrss_kib <= maxrss_before_kib,
        "baseline_rss_mib": baseline_kib / 1024,
        "finite": bool(np.isfinite(float(loss))),
    }


def run_worker(cfg: dict) -> dict:
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(cfg)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"worker {cfg} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def fmt_mib(mib: float, bound: bool) -> str:
    return ("≤" if bound else "") + (f"{mib:.0f}" if mib >= 10 else f"{mib:.1f}")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="T = S values")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--repeats", type=int, default=None, help="timed steps per worker")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps per worker")
    parser.add_argument("--rounds", type=int, default=None, help="sweeps of all configurations")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--radius", type=int, default=10, help="D, the window half-width")
    parser.add_argument(
        "--alignments",
        nargs="+",
        default=list(ALIGNMENTS),
        choices=ALIGNMENTS + WINDOW_PATHS + BOUNDS,
    )
    parser.add_argument("--jit-compile", action="store_true", help="tf.function(jit_compile=True)")
    parser.add_argument("--forward", action="store_true", help="time the forward pass only")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time per step: wall clock, or the process's CPU time (all threads; less "
        "sensitive to other jobs on a shared machine)",
    )
    parser.add_argument(
        "--global-max-size", type=int, default=None, help="skip global attention above this S"
    )
    parser.add_argument("--json", metavar="PATH", default=None, help="also write results here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def settings(args: argparse.Namespace) -> dict:
    """Sizes, repeats and rounds: `--quick`'s or the full run's, then the explicit options."""
    if args.quick:
        sizes, repeats, rounds = args.sizes or [32, 128], args.repeats or 2, args.rounds or 1
        batch, dim, radius = 2, 16, min(args.radius, 4)
    else:
        sizes, repeats, rounds = args.sizes or [512, 2048, 8192], args.repeats or 5, args.rounds
        rounds = rounds or 3
        batch, dim, radius = args.batch, args.dim, args.radius
    return {"sizes": sizes, "repeats": repeats, "rounds": rounds, "batch": batch, "dim": dim,
            "radius": radius, "alignments": list(args.alignments)}  # fmt: skip


def print_preamble(cfg: dict, args: argparse.Namespace, info: dict) -> None:
    print(
        f"# bench_local: LuongAttention(score_mode='general'), B={cfg['batch']}, T=S in "
        f"{cfg['sizes']}, d={cfg['dim']}, D={cfg['radius']}, float32, "
        f"{'forward' if args.forward else 'forward+backward'}, "
        f"XLA={'yes' if args.jit_compile else 'no'}, clock={args.clock}"
    )
    print(
        f"# {C.machine_line(info)}; repeats={cfg['repeats']} per worker, rounds={cfg['rounds']}",
        flush=True,
    )


def run_rounds(cfg: dict, args: argparse.Namespace) -> tuple[dict, float]:
    """Every (size, alignment) in a fresh worker, `rounds` times (the alignments rotated):
    `{(size, alignment): [worker result per round]}` and the seconds it took."""
    sizes, alignments, rounds = cfg["sizes"], cfg["alignments"], cfg["rounds"]
    results: dict[tuple, list[dict]] = {}
    t0 = time.perf_counter()
    for r in range(rounds):
        for size in sizes:
            for alignment in C.rotated(alignments, r + sizes.index(size)):
                if alignment == "global" and size > (args.global_max_size or size):
                    continue
                worker_cfg = {
                    "alignment": alignment,
                    "size": size,
                    "batch": cfg["batch"],
                    "dim": cfg["dim"],
                    "radius": cfg["radius"],
                    "repeats": cfg["repeats"],
                    "warmup": args.warmup,
                    "jit": args.jit_compile,
                    "forward": args.forward,
                    "clock": args.clock,
                }
                res = run_worker(worker_cfg)
                results.setdefault((size, alignment), []).append(res)
                print(
                    f"#   round {r + 1}/{rounds} S={size:>6} {alignment:<16} "
                    f"{1e3 * res['step_s']:9.1f} ms  peak {res['peak_mib']:8.1f} MiB",
                    flush=True,
                )
    return results, time.perf_counter() - t0


def _median_of(results: dict, size: int, alignment: str, key: str) -> float:
    return C.median([x[key] for x in results[(size, alignment)]])


def summarize(results: dict, cfg: dict) -> tuple[list[list[str]], list[dict]]:
    """Table rows and JSON records: time and peak memory per (size, alignment), their growth
    from the previous size, and the ratios to global attention at the same size."""
    sizes, alignments = cfg["sizes"], cfg["alignments"]

    def med(size, alignment, key):
        return _median_of(results, size, alignment, key)

    def bound(size, alignment):
        return all(x["peak_is_bound"] for x in results[(size, alignment)])

    rows, records = [], []
    for size in sizes:
        for alignment in alignments:
            if (size, alignment) not in results:  # global above --global-max-size
                continue
            ms = 1e3 * med(size, alignment, "step_s")
            mib = med(size, alignment, "peak_mib")
            t_growth, m_growth = _growth(results, sizes, size, alignment)
            growth = ("—", "—") if t_growth is None else (f"{t_growth:.1f}×", f"{m_growth:.1f}×")
            speedup, mem_ratio = _versus_global(results, size, alignment)
            if speedup is not None:
                speed_s, mem_s = f"{speedup:.1f}×", f"{mem_ratio:.1f}×"
            else:
                speed_s = mem_s = "(ref)" if alignment == "global" else "—"
            rows.append(
                [
                    str(size),
                    alignment,
                    f"{ms:.1f}",
                    C.spread([x["step_s"] for x in results[(size, alignment)]]),
                    growth[0],
                    speed_s,
                    fmt_mib(mib, bound(size, alignment)),
                    growth[1],
                    mem_s,
                ]
            )
            records.append(
                {
                    "size": size,
                    "alignment": alignment,
                    "ms_per_step": ms,
                    "ms_per_step_rounds": [1e3 * x["step_s"] for x in results[(size, alignment)]],
                    "time_growth": t_growth,
                    "speedup_vs_global": speedup,
                    "peak_mib": mib,
                    "peak_mib_rounds": [x["peak_mib"] for x in results[(size, alignment)]],
                    "peak_is_upper_bound": bound(size, alignment),
                    "memory_growth": m_growth,
                    "memory_ratio_global_over_this": mem_ratio,
                }
            )
    return rows, records


def _growth(results: dict, sizes: list[int], size: int, alignment: str) -> tuple:
    """`(time, memory)`: how many times the median step time and peak memory grew from the
    previous size (`(None, None)` at the first size, or without a run there)."""
    prev = sizes[sizes.index(size) - 1] if sizes.index(size) > 0 else None
    if prev is None or (prev, alignment) not in results:
        return None, None
    t_growth = _median_of(results, size, alignment, "step_s") / _median_of(
        results, prev, alignment, "step_s"
    )
    m_growth = _median_of(results, size, alignment, "peak_mib") / _median_of(
        results, prev, alignment, "peak_mib"
    )
    return t_growth, m_growth


def _versus_global(results: dict, size: int, alignment: str) -> tuple:
    """`(speed-up, memory ratio)` of `alignment` over global attention at `size`: the median
    of the rounds' time ratios, and global's median peak memory over this one's (`(None,
    None)` for global itself, or without a global run at `size`)."""
    if alignment == "global" or (size, "global") not in results:
        return None, None
    speedup = C.median(
        [
            g["step_s"] / x["step_s"]
            for g, x in zip(results[(size, "global")], results[(size, alignment)], strict=True)
        ]
    )
    mib = _median_of(results, size, alignment, "peak_mib")
    return speedup, _median_of(results, size, "global", "peak_mib") / mib


HEADER = [
    "T=S",
    "alignment",
    "ms/step",
    "spread",
    "time growth",
    "speed-up vs global",
    "peak MiB",
    "memory growth",
    "global mem / this",
]


def print_growth_note(sizes: list[int]) -> None:
    step = f"{sizes[1] / sizes[0]:g}× in S" if len(sizes) > 1 else "n/a"
    print(
        f"growth: figure at this S / figure at the previous S ({step}: linear = "
        f"{sizes[1] / sizes[0]:g}×, quadratic = {(sizes[1] / sizes[0]) ** 2:g}×)."
        if len(sizes) > 1
        else "growth: needs two sizes."
    )


def check_target(results: dict, records: list[dict], forward: bool) -> bool | None:
    """Print and return whether local_predictive meets issue 15's goal over global: ≥ 30× for
    a training step at S = 8192, ≥ 10× for the forward pass at S = 4096 (`TARGETS`). Checked
    at the goal's size when global ran there, else at the largest size global ran at (said so);
    `None` when global or local_predictive was not run (at any size global ran at)."""
    global_sizes = {size for size, alignment in results if alignment == "global"}
    if not global_sizes:  # not a contender, or skipped at every size (`--global-max-size`)
        return None
    speedup_goal, goal_size = TARGETS["forward" if forward else "training"]
    size = goal_size if goal_size in global_sizes else max(global_sizes)
    speedup = next(
        (
            r["speedup_vs_global"]
            for r in records
            if r["size"] == size and r["alignment"] == "local_predictive"
        ),
        None,
    )
    if speedup is None:
        return None
    verdict = speedup >= speedup_goal
    print(
        f"target ({'forward' if forward else 'training step'}): local_predictive >= "
        f"{speedup_goal:g}× faster than global at S={size}: {speedup:.1f}× -> "
        f"{'MET' if verdict else 'NOT MET'}"
        + ("" if size == goal_size else f" (the goal is stated for S={goal_size})")
    )
    return verdict


def print_floors(results: dict, cfg: dict) -> dict:
    """Each local alignment's time over the floor, per size (printed; empty without the
    `floor` path)."""
    floors: dict = {}
    alignments = cfg["alignments"]
    if "floor" not in alignments:
        return floors
    # floor: the measured dense part (query projection, position network, one read of the
    # inputs, one write of the output) plus the window arithmetic (scores and context,
    # 4·B·T·(2D+1)·d FLOPs forward) at the dense part's FLOP rate: dense FLOPs are
    # 2·B·T·d² + 2·B·T·d·U with U = d, so the window adds (2D+1)/d of them.
    width = 2 * cfg["radius"] + 1
    for size in cfg["sizes"]:
        floor_ms = 1e3 * _median_of(results, size, "floor", "step_s") * (1 + width / cfg["dim"])
        line = f"floor at S={size}: {floor_ms:.1f} ms (dense part × (1 + (2D+1)/d))"
        for alignment in ("local_predictive", "local_monotonic"):
            if alignment in alignments:
                ratio = 1e3 * _median_of(results, size, alignment, "step_s") / floor_ms
                floors[f"{size}/{alignment}"] = ratio
                line += f"; {alignment} = {ratio:.1f}× the floor"
        print(line)
    return floors


def print_sorted_bound(results: dict, cfg: dict) -> dict:
    """local_predictive's time over the sorted layout's least work, per size (printed; empty
    unless both ran)."""
    if not {"sorted_bound", "local_predictive"} <= set(cfg["alignments"]):
        return {}
    ratios = {}
    for size in cfg["sizes"]:
        per_round = [
            x["step_s"] / b["step_s"]
            for x, b in zip(
                results[(size, "local_predictive")], results[(size, "sorted_bound")], strict=True
            )
        ]
        ratios[str(size)] = C.median(per_round)
        print(
            f"sorted bound at S={size}: local_predictive = {ratios[str(size)]:.2f}× the sorted "
            "layout's least work (dense part, sort, permutations, local_monotonic's blocks)"
        )
    return ratios


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(json.loads(args.worker))))
        return {}
    cfg = settings(args)
    info = C.machine_info()
    print_preamble(cfg, args, info)
    results, elapsed = run_rounds(cfg, args)
    rows, records = summarize(results, cfg)
    C.print_table(HEADER, rows)
    print_growth_note(cfg["sizes"])
    verdict = check_target(results, records, args.forward)
    floors = print_floors(results, cfg)
    over_bound = print_sorted_bound(results, cfg)
    print(f"total {elapsed:.0f} s")
    result = {
        "benchmark": "bench_local",
        "config": {
            **{k: cfg[k] for k in ("batch", "dim", "radius", "sizes", "repeats", "rounds")},
            "jit_compile": args.jit_compile,
        },
        "machine": info,
        "results": records,
        "target_met": verdict,
        "local_over_floor": floors,
        "local_predictive_over_sorted_bound": over_bound,
    }
    return C.write_json(args.json, result)


if __name__ == "__main__":
    main()
