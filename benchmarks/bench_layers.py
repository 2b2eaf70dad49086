"""Forward+backward throughput of the attention layers, side by side with Keras built-ins.

One training-style step per call: `loss = sum(output)`, then the gradients of the loss with
respect to the inputs (query and memory) and to every trainable weight, inside
`tf.function(jit_compile=False|True)`. The gradients are returned by the function so that graph
pruning cannot drop the backward pass.

Contenders (B=64, T=S=128, d=256 by default; float32):

- `LuongAttention(score_mode="dot")` vs `keras.layers.Attention()` (the same work: QKᵀ, softmax,
  αV).
- `AdditiveAttention(score_units=256)` vs `Dense(256, use_bias=False)` on the query and on the
  memory followed by `keras.layers.AdditiveAttention()` (use_scale=True, whose `scale` [U] plays the
  role of our `score_vector`; the value is the raw memory in both). Weights are the same:
  `query_kernel` [d, U], `key_kernel` [d, U], `score_vector` [U].
- For information (no built-in equivalent): `LuongAttention` "general" and "concat" (U = d).
- A plain float32 matmul (N×N by N×N, N=2048) measured in the same run: the GFLOP/s this
  machine actually reaches on dense GEMM, the yardstick for the "fraction of matmul" column.

FLOPs of forward+backward, counted analytically (d_s = d_h = d_v = d). A contraction of
2·m·n·k FLOPs costs 3× that over forward+backward (forward, plus one product per gradient of
each operand, all of which are needed here). Softmax, O(B·T·S), is left out (< 0.1%).

- dot:            12·B·T·S·d                      (QKᵀ and αV)
- general:        12·B·T·S·d + 6·B·S·d²           (+ keys h W_g)
- concat/additive: 6·B·T·S·d + 6·B·T·d·U + 6·B·S·d·U + 12·B·T·S·U
  (αV; the projections s W_q and h W_k; the [B, T, S, U] score tensor: forward add, tanh,
  v-contraction = 4 FLOPs per element, backward ≈ 8: tanh counted as one FLOP, so the figure
  understates the real work of the transcendental).
- matmul:         2·N³ (forward only).

Method: every step function is traced and warmed up first; then `--repeats` rounds, each
timing every contender once (a block of `inner` back-to-back steps, `inner` calibrated so that a
block lasts about `--block-seconds`), in an order rotated every round so that no contender is
always first or last. Reported: the median over rounds of ms/step, and the median over rounds of
the per-round time ratio ours / built-in (the two ran seconds apart, so the ratio is robust to the
load of a shared machine; absolute figures are not).

Usage:
    python benchmarks/bench_layers.py                 # full size, 3–4 minutes on 2 cores
    python benchmarks/bench_layers.py --quick         # tiny sizes, a smoke test (seconds)
    python benchmarks/bench_layers.py --repeats 9 --json results.json
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import _common as C  # first: sets the TF/Keras environment before they are imported
import keras
import numpy as np
import tensorflow as tf

from keras_attention import AdditiveAttention, LuongAttention

TRACES: dict[int, int] = {}  # traces per step function; each must be traced exactly once


@dataclass
class Case:
    name: str
    group: str  # cases in the same group are compared; the built-in is the reference
    builtin: bool
    jit: bool
    flops: float
    step: Callable = field(repr=False)
    args: tuple = field(repr=False)
    inner: int = 1
    times: list = field(default_factory=list)


def flops_dot(B, T, S, d):
    return 12 * B * T * S * d


def flops_general(B, T, S, d):
    return flops_dot(B, T, S, d) + 6 * B * S * d * d


def flops_additive(B, T, S, d, U):
    return 6 * B * T * S * d + 6 * B * T * d * U + 6 * B * S * d * U + 12 * B * T * S * U


def make_step(forward: Callable, variables: list, jit: bool) -> Callable:
    """A tf.function doing forward+backward: grads of sum(output) w.r.t. inputs and weights."""
    step_id = len(TRACES)
    TRACES[step_id] = 0

    @tf.function(jit_compile=jit)
    def step(query, memory):
        TRACES[step_id] = TRACES.get(step_id, 0) + 1  # Python side effect: runs once per trace
        with tf.GradientTape() as tape:
            tape.watch([query, memory])
            output = forward(query, memory)
            loss = tf.reduce_sum(tf.cast(output, "float32"))
        grads = tape.gradient(loss, [query, memory, *variables])
        return loss, grads

    return step


def build_contender(kind: str, d: int, units: int, shapes):
    """Build layers eagerly; return `(forward(query, memory), trainable_variables)`."""
    q_shape, m_shape = shapes
    if kind == "luong_dot":
        layer = LuongAttention(score_mode="dot")
        layer.build([q_shape, m_shape])
        return (lambda q, m: layer([q, m])), layer.trainable_variables
    if kind == "keras_dot":
        layer = keras.layers.Attention()
        layer.build([q_shape, m_shape])
        return (lambda q, m: layer([q, m])), layer.trainable_variables
    if kind == "additive":
        layer = AdditiveAttention(score_units=units)
        layer.build([q_shape, m_shape])
        return (lambda q, m: layer([q, m])), layer.trainable_variables
    if kind == "keras_additive":
        q_proj = keras.layers.Dense(units, use_bias=False, name="query_kernel")
        k_proj = keras.layers.Dense(units, use_bias=False, name="key_kernel")
        attention = keras.layers.AdditiveAttention()  # use_scale=True: scale [U] is v
        q_proj.build(q_shape)
        k_proj.build(m_shape)
        attention.build([q_shape[:-1] + (units,), m_shape, m_shape[:-1] + (units,)])

        def forward(q, m):
            return attention([q_proj(q), m, k_proj(m)])

        variables = (
            q_proj.trainable_variables + k_proj.trainable_variables + attention.trainable_variables
        )
        return forward, variables
    if kind in ("luong_general", "luong_concat"):
        layer = LuongAttention(score_mode=kind.split("_")[1], score_units=units)
        layer.build([q_shape, m_shape])
        return (lambda q, m: layer([q, m])), layer.trainable_variables
    raise ValueError(kind)


def count_weights(variables) -> int:
    return int(sum(np.prod(v.shape) for v in variables))


def time_block(case: Case) -> float:
    """Run `case.inner` steps back to back; seconds per step."""
    start = time.perf_counter()
    for _ in range(case.inner):
        loss, _ = case.step(*case.args)
    float(loss)  # make sure the work is finished
    return (time.perf_counter() - start) / case.inner


def calibrate(case: Case, block_seconds: float, warmup: int) -> None:
    """Trace/compile, run `warmup` steps, then choose `inner` so one block ≈ block_seconds."""
    case.inner = 1
    time_block(case)  # trace (and XLA compile)
    for _ in range(max(warmup - 1, 0)):
        time_block(case)
    one = min(time_block(case) for _ in range(2))
    case.inner = max(1, min(1000, math.ceil(block_seconds / max(one, 1e-6))))


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed rounds (default 9; 2 with --quick)"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--json", metavar="PATH", default=None, help="also write results here")
    parser.add_argument("--block-seconds", type=float, default=None, help="time per block")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--length", type=int, default=None, help="T = S")
    parser.add_argument("--dim", type=int, default=None, help="d = U")
    return parser.parse_args(argv)


def settings(args: argparse.Namespace) -> dict:
    """Sizes and timing settings: `--quick`'s or the full run's, then the explicit options."""
    if args.quick:
        B, L, d, N = 2, 8, 16, 128
        repeats, block, warmup = args.repeats or 2, args.block_seconds or 0.01, 1
    else:
        B, L, d, N = 64, 128, 256, 2048
        repeats, block, warmup = args.repeats or 9, args.block_seconds or 1.0, 3
    B, L, d = args.batch or B, args.length or L, args.dim or d
    block = args.block_seconds or block
    return {"B": B, "T": L, "S": L, "d": d, "U": d, "N": N, "repeats": repeats,
            "block": block, "warmup": warmup}  # fmt: skip


def contender_specs(B: int, T: int, S: int, d: int, U: int) -> list[tuple]:
    """`(name, group, builtin, kind, flops)` of every contender."""
    return [
        ("LuongAttention dot", "dot", False, "luong_dot", flops_dot(B, T, S, d)),
        ("keras Attention", "dot", True, "keras_dot", flops_dot(B, T, S, d)),
        ("AdditiveAttention(U=d)", "add", False, "additive", flops_additive(B, T, S, d, U)),
        (
            "2×Dense + keras AdditiveAttention",
            "add",
            True,
            "keras_additive",
            flops_additive(B, T, S, d, U),
        ),
        ("LuongAttention general", "general", False, "luong_general", flops_general(B, T, S, d)),
        (
            "LuongAttention concat(U=d)",
            "concat",
            False,
            "luong_concat",
            flops_additive(B, T, S, d, U),
        ),
    ]


def build_cases(cfg: dict) -> tuple[list[Case], dict, dict]:
    """Every contender without and with XLA, then the matmul reference; the weight counts;
    the largest output gap of ours vs the built-in given the same weights."""
    B, T, S, d, U, N = (cfg[k] for k in ("B", "T", "S", "d", "U", "N"))
    rng = np.random.default_rng(0)
    query = tf.constant(rng.standard_normal((B, T, d)), "float32")
    memory = tf.constant(rng.standard_normal((B, S, d)), "float32")
    shapes = ((B, T, d), (B, S, d))
    keras.utils.set_random_seed(0)

    cases: list[Case] = []
    n_weights, max_diff = {}, {}
    for jit in (False, True):
        built = {}
        for name, group, builtin, kind, flops in contender_specs(B, T, S, d, U):
            forward, variables = build_contender(kind, d, U, shapes)
            built[kind] = forward, variables
            n_weights[name] = count_weights(variables)
            cases.append(
                Case(
                    name,
                    group,
                    builtin,
                    jit,
                    flops,
                    make_step(forward, variables, jit),
                    (query, memory),
                )
            )
        # Same work, checked: give the built-in the same weights (same order: query kernel,
        # key kernel, v) and compare the outputs.
        for ours, theirs in (("luong_dot", "keras_dot"), ("additive", "keras_additive")):
            for v_ours, v_theirs in zip(built[ours][1], built[theirs][1], strict=True):
                v_theirs.assign(v_ours)
            diff = np.max(np.abs(built[ours][0](query, memory) - built[theirs][0](query, memory)))
            max_diff[ours] = max(max_diff.get(ours, 0.0), float(diff))
    a = tf.constant(rng.standard_normal((N, N)), "float32")
    b = tf.constant(rng.standard_normal((N, N)), "float32")
    matmul = tf.function(lambda x, y: (tf.reduce_sum(tf.matmul(x, y)), ()))
    cases.append(Case(f"matmul {N}×{N}×{N}", "matmul", True, False, 2.0 * N**3, matmul, (a, b)))
    return cases, n_weights, max_diff


def print_preamble(cfg: dict, info: dict, n_weights: dict, max_diff: dict) -> None:
    print(f"# bench_layers: B={cfg['B']} T=S={cfg['T']} d=U={cfg['d']}, float32, forward+backward")
    print(f"# {C.machine_line(info)}; repeats={cfg['repeats']}")
    print("# weights: " + ", ".join(f"{k}: {v}" for k, v in n_weights.items()))
    print(
        "# same weights, max |ours − built-in| of the outputs: "
        + ", ".join(f"{k}: {v:.1e}" for k, v in max_diff.items()),
        flush=True,
    )


def time_cases(cases: list[Case], cfg: dict) -> tuple[float, float]:
    """Calibrate every case, then the timed rounds: (warm-up s, timed s)."""
    t0 = time.perf_counter()
    for case in cases:
        calibrate(case, cfg["block"], cfg["warmup"])
    warm_s = time.perf_counter() - t0
    timed_s = C.timed_rounds(
        cases, cfg["repeats"], lambda case: case.times.append(time_block(case))
    )
    return warm_s, timed_s


def summarize(cases: list[Case]) -> tuple[list[list[str]], list[dict], float]:
    """Table rows and JSON records of every case, and the matmul reference's GFLOP/s."""
    matmul_case = cases[-1]
    matmul_gflops = matmul_case.flops / C.median(matmul_case.times) / 1e9
    rows, records = [], []
    for case in cases:
        ref = next(
            (c for c in cases if c.group == case.group and c.jit == case.jit and c.builtin),
            None,
        )
        med = C.median(case.times)
        gflops = case.flops / med / 1e9
        if ref is not None and ref is not case:
            ratio = C.median([t / r for t, r in zip(case.times, ref.times, strict=True)])
            ratio_s = f"{ratio:.2f}×"
        else:
            ratio = None
            ratio_s = "(ref)" if case.builtin and case.group != "matmul" else "—"
        jit_s = "—" if case.group == "matmul" else ("yes" if case.jit else "no")
        rows.append(
            [
                case.name,
                jit_s,
                f"{1e3 * med:.2f}",
                C.spread(case.times),
                f"{1 / med:.1f}",
                ratio_s,
                f"{case.flops / 1e9:.2f}",
                f"{gflops:.1f}",
                f"{100 * gflops / matmul_gflops:.0f}%",
            ]
        )
        records.append(
            {
                "name": case.name,
                "group": case.group,
                "builtin": case.builtin,
                "jit_compile": case.jit,
                "ms_per_step": 1e3 * med,
                "ms_per_step_all": [1e3 * t for t in case.times],
                "steps_per_s": 1 / med,
                "time_ratio_vs_builtin": ratio,
                "gflop_per_step": case.flops / 1e9,
                "gflop_per_s": gflops,
                "fraction_of_matmul": gflops / matmul_gflops,
                "inner_steps": case.inner,
            }
        )
    return rows, records, matmul_gflops


HEADER = [
    "contender",
    "XLA",
    "ms/step",
    "spread",
    "steps/s",
    "time vs built-in",
    "GFLOP/step",
    "GFLOP/s",
    "of matmul",
]


def print_report(rows: list[list[str]], warm_s: float, timed_s: float) -> None:
    C.print_table(HEADER, rows)
    print(
        "time vs built-in: median over rounds of (our ms / built-in ms) in the same round, "
        "same XLA setting; < 1 means ours is faster. spread: (max − min) / 2 over rounds, "
        "relative to the median."
    )
    print(f"warm-up {warm_s:.0f} s, timed rounds {timed_s:.0f} s")
    retraced = {k: v for k, v in TRACES.items() if v != 1}
    if retraced:
        print(f"WARNING: step functions traced more than once: {retraced}")


def main(argv=None) -> dict:
    args = parse_args(argv)
    tf.get_logger().setLevel("ERROR")  # its retracing warning counts all closures of make_step
    cfg = settings(args)
    cases, n_weights, max_diff = build_cases(cfg)
    info = C.machine_info()
    print_preamble(cfg, info, n_weights, max_diff)
    warm_s, timed_s = time_cases(cases, cfg)
    rows, records, matmul_gflops = summarize(cases)
    print_report(rows, warm_s, timed_s)
    result = {
        "benchmark": "bench_layers",
        "config": {k: cfg[k] for k in ("B", "T", "S", "d", "U")}
        | {"matmul_N": cfg["N"], "repeats": cfg["repeats"]},
        "machine": info,
        "matmul_gflop_per_s": matmul_gflops,
        "max_abs_output_diff_vs_builtin": max_diff,
        "results": records,
    }
    return C.write_json(args.json, result)


if __name__ == "__main__":
    main()
