"""Train-step throughput of a Luong input-feeding decoder: ours (Keras 3) against tfa.seq2seq.

The model (B=64, S=T=50, LSTM 256, "general" score, attentional output 256, target vocab 500,
float32; the encoder outputs are a given random memory `[B, S, 256]` with valid lengths drawn in
[S/2, S]):

    ids [B, T] → AttentionRNN(LuongAttentionCell(LSTMCell(256), LuongAttention("general"),
        units=256), embedding=Embedding(500, 256))(ids, memory, memory_mask=mask)
        → Dense(500) logits → SparseCategoricalCrossentropy(from_logits=True) → Adam(1e-3)

(the layer embeds the ids itself, so its fused decoder folds the LSTM kernel's input rows into
the embedding table: V + 1 = 501 table rows instead of B·T = 3,200 embedded rows; the same
function as embedding first, with less arithmetic, see below).

One train step = forward, loss, backward, Adam update. Our contenders (jit_compile off and on):

- `ours fit`: a functional `keras.Model` compiled with `jit_compile=False|True`, stepped with
  `model.train_on_batch` (the path a Keras user takes);
- `ours tf.function`: the same model in a hand-written `tf.function(jit_compile=False|True)`
  (`GradientTape`, `optimizer.apply_gradients`), exactly the step the tfa script runs.
- `ours tf.function, embedding first` (`--embedded-first`): the same model with the
  `Embedding` layer before `AttentionRNN` (vectors in: no fold), what the fold gains.
- `ours tf.function, stepped cell` (`--stepped`): the same with the fused decoder turned off
  (`AttentionRNN` steps the cell and differentiates the loop automatically, as for any other
  cell): what the fused forward/backward of `cells/_fused_luong.py` gains.
- `ours tf.function, 1-position memory` (`--attention-free`): the same model and step over a
  memory of one position (S = 1): the attention's mat-vecs and softmax shrink to nothing and
  everything else (LSTM, W_c, projections, output layer, loss, Adam) stays. Its time is what
  our decoder costs without the attention's S-dependent work; the script prints how much of
  2× tfa's time that leaves for the attention over S positions, and what ours spends on it.
- `plain keras LSTM, no attention (floor)`: the same embedding, `keras.layers.LSTM(256)` and
  output layer without attention, in the same hand-written step: what the decoder costs
  without attention. The script prints ours / plain (the attention's cost; the goal is
  <= 1.5x) and fastest ours / fastest tfa (jit or not, whichever is faster for each).

The reference (benchmarks/tfa_decoder_step.py, in its own TF 2.15 + tensorflow-addons 0.23
environment): `tfa.seq2seq.AttentionWrapper(LSTMCell(256), LuongAttention(256),
attention_layer_size=256)` in a `BasicDecoder` with a `TrainingSampler`, in the same
hand-written `tf.function` step. It runs as a persistent subprocess (`--serve`), so that its
blocks are timed interleaved with ours, round by round, sharing the machine's noise.
The two models do the same work except that tfa's attentional output has no tanh
(`attention_activation=None` in ours would match it; the tanh is B·T·256 elementwise ops, noise).

FLOPs of one step, counted analytically (d_y = 256 embedding, d_s = 256 LSTM, d_h = 256 memory,
u = 256 attentional output, V = 500). Forward:

    LSTM gates      2·B·T·(d_y + u + d_s)·4·d_s     (input [y; h̃_{t-1}] and recurrent kernels)
    keys h W_g      2·B·S·d_h·d_s                   (once per sequence)
    scores, context 2·B·T·S·d_s + 2·B·T·S·d_h
    W_c [s; c]      2·B·T·(d_s + d_h)·u
    output Dense    2·B·T·u·V

and the step counts 3× the forward (forward + the two products of the backward pass per
matmul; the gradients that are not needed, e.g. of the memory, make this a slight overcount).
Elementwise work (gates, softmax, loss, Adam) is left out. At the default sizes that is
7.27 GFLOP forward, 21.8 GFLOP per step. The count is that of embedding first, for every
contender (GFLOP/s is "this work per second"): with the table folded ours does
3·2·(B·T − V − 1)·d_y·4·d_s = 4.25 GFLOP less (17.6 GFLOP a step). The yardstick is an
N×N×N float32 matmul (N=2048, 2·N³ FLOPs) timed in the same rounds in this process (TF 2.21);
"% of matmul" is the step's GFLOP/s over it.

Method: every contender is built, traced/compiled and warmed up (`--warmup` steps) first;
`inner` (steps per timed block) is calibrated so a block lasts about `--block-seconds`. Then
`--repeats` rounds; a round times one block of every contender, in an order that alternates
ours and tfa and is rotated every round. Reported: the median over rounds of ms/step, and the
median over rounds of the per-round speed ratio against tfa without jit (tfa's ms / our ms in
the same round; > 1 means faster than tfa).

`--profile` also traces a few steps of `ours tf.function` without jit under the TensorFlow
profiler and prints where the op time goes: buckets by op type (in the loop: dense matmuls =
LSTM and W_c, batch matmuls = attention, elementwise, AddN gradient accumulation, data
movement, bookkeeping; outside the loop; Adam), forward / backward, and the top ops by name.

Usage:
    python benchmarks/bench_decoder.py                         # full size, ~4 min on 2 cores
    python benchmarks/bench_decoder.py --quick                 # tiny sizes, no tfa (< 60 s)
    python benchmarks/bench_decoder.py --repeats 9 --json out.json --profile
    python benchmarks/bench_decoder.py --tfa-python none       # ours only
    KERAS_ATTENTION_TFA_PYTHON=/path/to/tfa-venv/bin/python python benchmarks/bench_decoder.py
    python benchmarks/bench_decoder.py --attention-free        # + ours over a 1-position memory
    python benchmarks/bench_decoder.py --scan-lengths 25,50,100,200   # ours vs T, S=50
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import _common as C  # first: sets the TF/Keras environment before they are imported
import keras
import numpy as np
import tensorflow as tf

from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell

# The python of the tfa environment (see tfa_decoder_step.py): `--tfa-python`, else this
# environment variable; with neither, the tfa contender is skipped with a note.
TFA_PYTHON_ENV = "KERAS_ATTENTION_TFA_PYTHON"
TFA_SCRIPT = Path(__file__).resolve().parent / "tfa_decoder_step.py"


def step_flops(B, T, S, d_y, d_s, d_h, u, V) -> float:
    """FLOPs of one train step (see the module docstring): 3 × the forward matmuls."""
    lstm = 2 * B * T * (d_y + u + d_s) * 4 * d_s
    keys = 2 * B * S * d_h * d_s
    attention = 2 * B * T * S * d_s + 2 * B * T * S * d_h
    w_c = 2 * B * T * (d_s + d_h) * u
    output = 2 * B * T * u * V
    return 3.0 * (lstm + keys + attention + w_c + output)


def make_data(B, T, S, d, vocab, seed=0):
    """The same data as tfa_decoder_step.make_data: ids, targets, memory, lengths."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(B, T)).astype("int32")
    targets = rng.integers(1, vocab, size=(B, T)).astype("int32")
    memory = rng.standard_normal((B, S, d)).astype("float32")
    lengths = rng.integers(max(1, S // 2), S + 1, size=(B,))
    lengths[0] = S
    mask = np.arange(S)[None, :] < lengths[:, None]
    return ids, targets, memory, mask


def build_model(T, S, d, vocab, embedded_first=False) -> keras.Model:
    ids = keras.Input((T,), dtype="int32", name="ids")
    memory = keras.Input((S, d), name="memory")
    memory_mask = keras.Input((S,), dtype="bool", name="memory_mask")
    embedding = keras.layers.Embedding(vocab, d, name="embedding")
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(d), LuongAttention("general"), attention_units=d
    )
    if embedded_first:  # vectors in: the fused decoder cannot fold the table
        rnn = AttentionRNN(cell, name="decoder")
        states = rnn(embedding(ids), memory, memory_mask=memory_mask)
    else:  # ids in: the layer embeds them (and folds W_y into the table)
        rnn = AttentionRNN(cell, embedding=embedding, name="decoder")
        states = rnn(ids, memory, memory_mask=memory_mask)
    logits = keras.layers.Dense(vocab, name="logits")(states)
    return keras.Model([ids, memory, memory_mask], logits, name="luong_decoder")


def build_plain_model(T, S, d, vocab) -> keras.Model:
    """The floor: the same embedding, LSTM size and output layer, no attention (a plain
    `keras.layers.LSTM`); it takes the memory inputs too, and ignores them."""
    ids = keras.Input((T,), dtype="int32", name="ids")
    memory = keras.Input((S, d), name="memory")
    memory_mask = keras.Input((S,), dtype="bool", name="memory_mask")
    embedded = keras.layers.Embedding(vocab, d, name="embedding")(ids)
    states = keras.layers.LSTM(d, return_sequences=True, name="decoder")(embedded)
    logits = keras.layers.Dense(vocab, name="logits")(states)
    return keras.Model([ids, memory, memory_mask], logits, name="plain_lstm_decoder")


def build_embedded_first_model(T, S, d, vocab) -> keras.Model:
    """Ours with the `Embedding` before `AttentionRNN` (`--embedded-first`): no fold."""
    return build_model(T, S, d, vocab, embedded_first=True)


def build_stepped_model(T, S, d, vocab) -> keras.Model:
    """Ours with the fused decoder turned off: the cell stepped in the time loop and
    differentiated automatically (what every other cell gets; `--stepped`)."""
    model = build_model(T, S, d, vocab)
    model.get_layer("decoder").implementation = "stepped"
    return model


def fit_step(T, S, d, vocab, jit, data) -> Callable:
    """`model.train_on_batch` of a model compiled with `jit_compile=jit`."""
    keras.utils.set_random_seed(0)
    model = build_model(T, S, d, vocab)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit,
    )
    ids, targets, memory, mask = (tf.constant(x) for x in data)

    def run():
        return model.train_on_batch([ids, memory, mask], targets)

    return run


def function_step(T, S, d, vocab, jit, data, build=None) -> tuple[Callable, keras.Model]:
    """A hand-written `tf.function(jit_compile=jit)` train step (the same as the tfa script's)."""
    keras.utils.set_random_seed(0)
    model = (build or build_model)(T, S, d, vocab)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(model.trainable_variables)
    ids, targets, memory, mask = (tf.constant(x) for x in data)

    @tf.function(jit_compile=jit)
    def train_step(ids, targets, memory, mask):
        with tf.GradientTape() as tape:
            logits = model([ids, memory, mask], training=True)
            loss = loss_fn(targets, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def run():
        return train_step(ids, targets, memory, mask)

    return run, model


@dataclass
class Case:
    name: str
    contender: str  # "ours" | "unfolded" | "stepped" | "free" | "plain" | "tfa" | "matmul"
    jit: bool | None
    flops: float
    run: Callable | None = field(default=None, repr=False)  # one step; returns loss
    inner: int = 1
    times: list = field(default_factory=list)
    error: str | None = None


class TfaWorker:
    """tfa_decoder_step.py --serve as a subprocess: times blocks of tfa steps on request."""

    def __init__(self, python: str, sizes: list[str]):
        self.proc = subprocess.Popen(
            [python, str(TFA_SCRIPT), "--serve", *sizes],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None,  # its progress lines go to our stderr
            text=True,
            bufsize=1,
        )
        self.ready = self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the tfa worker exited (code {self.proc.wait()})")
        return json.loads(line)

    def request(self, **cmd) -> dict:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            self.request(quit=True)
        except (OSError, RuntimeError, json.JSONDecodeError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def time_local(case: Case, inner: int) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        loss = case.run()
    float(np.asarray(loss))  # the work is finished
    return (time.perf_counter() - start) / inner


def time_case(case: Case, inner: int, worker: TfaWorker | None) -> float:
    if case.contender != "tfa":
        return time_local(case, inner)
    reply = worker.request(jit=case.jit, inner=inner)
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply["seconds_per_step"]


def warm_and_calibrate(case, worker, warmup, block_seconds) -> None:
    try:
        if case.contender != "tfa":  # tfa warms itself up before it says it is ready
            t0 = time.perf_counter()
            time_local(case, 1)
            print(
                f"# {case.name} jit={case.jit}: first call {time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
                flush=True,
            )
            for _ in range(max(warmup - 1, 0)):
                time_local(case, 1)
        one = min(time_case(case, 1, worker) for _ in range(2))
        case.inner = max(1, min(1000, math.ceil(block_seconds / max(one, 1e-6))))
    except Exception as e:  # noqa: BLE001 - a contender that fails is reported, not fatal
        case.error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
        print(f"# {case.name} jit={case.jit} FAILED: {case.error}", file=sys.stderr, flush=True)


def interleaved(cases: list[Case]) -> list[Case]:
    """Ours (and the plain-LSTM floor) and tfa alternating (ours, tfa, ours, ...), then the rest."""
    ours = [c for c in cases if c.contender in ("ours", "unfolded", "stepped", "free", "plain")]
    tfa = [c for c in cases if c.contender == "tfa"]
    order = []
    while ours or tfa:
        if ours:
            order.append(ours.pop(0))
        if tfa:
            order.append(tfa.pop(0))
    return order + [c for c in cases if c.contender == "matmul"]


# ---------------------------------------------------------------------------- profile
# Inside the AttentionRNN while loop the op names carry no layer scope ("…/while/MatMul"), so
# ops are bucketed by type: in the loop, dense MatMuls are the LSTM recurrent/fed-back kernels
# and W_c, batch matmuls are the attention scores and context; AddN in the backward loop sums
# the per-step gradients of loop-invariant tensors (kernels, keys, memory, inputs).
_CONTAINERS = {"While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall", "If"}
_MOVEMENT = (
    "Concat",
    "Split",
    "Slice",
    "StridedSlice",
    "Gather",
    "Scatter",
    "TensorScatter",
    "UnsortedSegment",
    "Transpose",
    "Pack",
    "Unpack",
    "Tile",
    "BroadcastTo",
    "Pad",
)
_BOOKKEEPING = (
    "TensorList",
    "Enter",
    "Exit",
    "Merge",
    "Switch",
    "NextIteration",
    "LoopCond",
    "Less",
    "LogicalAnd",
    "ReadVariableOp",
    "VariableShape",
    "Shape",
    "Cast",
    "Reshape",
    "ExpandDims",
    "Squeeze",
    "Identity",
    "Fill",
    "ZerosLike",
    "OnesLike",
    "Const",
    "Range",
    "StopGradient",
    "NoOp",
    "_Recv",
    "_Send",
    "Assign",
    "TemporaryVariable",
    "DestroyTemporaryVariable",
)
PROFILE_BUCKETS = (
    "loop: dense matmuls (LSTM recurrent + fed-back kernels, W_c)",
    "loop: attention batch matmuls (scores, context)",
    "loop: elementwise (gates, softmax, tanh, where)",
    "loop: gradient accumulation of loop invariants (AddN)",
    "loop: data movement (transpose, slice, gather/scatter, concat/split and their grads)",
    "loop: bookkeeping (TensorList stacks, control flow, reads, casts, reshapes)",
    "outside loop: embedding, input projection, keys, output Dense, loss",
    "Adam update",
)


def _bucket(name: str, op_type: str) -> str:
    bare = op_type.lstrip("_").removeprefix("Mkl").removeprefix("Fused")
    if re.match(r"(.*/)?adam(_\d+)?/", name, re.IGNORECASE):
        return PROFILE_BUCKETS[7]
    if "/while/" not in name:
        return PROFILE_BUCKETS[6]
    if bare.startswith("BatchMatMul"):
        return PROFILE_BUCKETS[1]
    if bare.startswith("MatMul"):
        return PROFILE_BUCKETS[0]
    if bare in ("AddN", "AccumulateNV2"):
        return PROFILE_BUCKETS[3]
    if bare.startswith(_MOVEMENT):
        return PROFILE_BUCKETS[4]
    if bare.startswith(_BOOKKEEPING):
        return PROFILE_BUCKETS[5]
    return PROFILE_BUCKETS[2]


def _short_op_name(name: str, op_type: str) -> str:
    """`…/while_grad/body//gradient_tape/…/gradients/…/while/MatMul_1_grad/MatMul` → readable."""
    loop = "/while" in name
    name = re.split(r"/body/_\d+/", name)[-1]  # drop the lowered-loop prefix
    name = re.sub(r"(luong_decoder|decoder)(_\d+)?/", "", name)
    name = name.replace("gradient_tape/while/gradients/", "grad of ")
    name = re.sub(r"_\d+(?=/|$)", "", name)
    return ("" if loop else "outside loop: ") + f"{name} ({op_type})"


def profile(T, S, d, vocab, data, steps=3) -> dict:
    """Trace `steps` runs of `ours tf.function` without jit; CPU op time by bucket (ms/step).

    Durations are of the executor's op events on its compute threads (an op's event covers
    its Eigen/oneDNN work on the other core), summed, split forward / backward by the
    `gradient_tape/` prefix. Their sum can exceed the wall time (two cores) or fall short of
    it (executor scheduling between ops is not in any op).
    """
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    run, _ = function_step(T, S, d, vocab, False, data)
    for _ in range(2):
        run()
    logdir = tempfile.mkdtemp(prefix="bench_decoder_profile_")
    tf.profiler.experimental.start(logdir)
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = run()
    float(loss)
    wall = (time.perf_counter() - t0) / steps
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    space.ParseFromString(sorted(Path(logdir).rglob("*.xplane.pb"))[-1].read_bytes())
    table = {b: [0.0, 0.0, 0] for b in PROFILE_BUCKETS}  # fwd ms, bwd ms, ops
    by_name: dict[str, list] = {}
    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        names = {k: v.name for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            for ev in line.events:
                name, _, op_type = names.get(ev.metadata_id, "").rpartition(":")
                if op_type in _CONTAINERS or not re.fullmatch(
                    r"[\w./-]+:\w+", name + ":" + op_type
                ):
                    continue  # not an op ("ExecutorState::Process", "EagerExecute: …", ...)
                ms = ev.duration_ps / 1e9 / steps
                row = table[_bucket(name, op_type)]
                row[1 if "gradient_tape/" in name else 0] += ms
                row[2] += 1
                entry = by_name.setdefault(_short_op_name(name, op_type), [0.0, 0])
                entry[0] += ms
                entry[1] += 1
    shutil.rmtree(logdir, ignore_errors=True)
    top = sorted(by_name.items(), key=lambda kv: -kv[1][0])[:25]
    return {
        "wall_ms_per_step": 1e3 * wall,
        "buckets": {
            b: {"forward_ms": f, "backward_ms": g, "ops": n // steps}
            for b, (f, g, n) in table.items()
        },
        "top_ops": {k: {"ms": ms, "calls": n // steps} for k, (ms, n) in top},
    }


def print_profile(prof: dict) -> None:
    buckets = prof["buckets"]
    total = sum(v["forward_ms"] + v["backward_ms"] for v in buckets.values())
    n_ops = sum(v["ops"] for v in buckets.values())
    print()
    print(
        f"Profile of ours tf.function, jit off: wall {prof['wall_ms_per_step']:.0f} ms/step "
        f"under the profiler; op time summed over threads {total:.0f} ms/step; {n_ops} op "
        f"executions/step ({1e3 * total / max(n_ops, 1):.0f} µs each on average)"
    )
    rows = []
    for b, v in buckets.items():
        both = v["forward_ms"] + v["backward_ms"]
        rows.append(
            [
                b,
                f"{v['forward_ms']:.1f}",
                f"{v['backward_ms']:.1f}",
                f"{both:.1f}",
                f"{100 * both / total:.0f}%",
                str(v["ops"]),
            ]
        )
    print(C.markdown_table(["bucket", "fwd ms", "bwd ms", "ms/step", "share", "ops/step"], rows))
    print()
    rows = [[k, f"{v['ms']:.1f}", str(v["calls"])] for k, v in prof["top_ops"].items()]
    print(C.markdown_table(["op (name in the graph, type)", "ms/step", "calls/step"], rows))


def scan_lengths(lengths, B, S, d, vocab, repeats=5) -> list[dict]:
    """`ours tf.function` (jit off, then on) at several target lengths T, memory length S fixed.

    A per-target-step cost that grows with T exposes work that is O(T) per step (O(T²) in all).
    """
    records = []
    for jit in (False, True):
        for T in lengths:
            run, _ = function_step(T, S, d, vocab, jit, make_data(B, T, S, d, vocab))
            for _ in range(3):
                float(run())
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                float(run())
                times.append(time.perf_counter() - t0)
            ms = 1e3 * C.median(times)
            records.append({"jit_compile": jit, "T": T, "S": S, "ms_per_step": ms})
            print(
                f"jit={'yes' if jit else 'no'} T={T} S={S}: {ms:.1f} ms/step, "
                f"{ms / T:.2f} ms per target step",
                flush=True,
            )
    return records


# ---------------------------------------------------------------------------- main
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, no tfa: smoke test")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 7)")
    parser.add_argument("--json", metavar="PATH", default=None, help="also write results here")
    parser.add_argument("--block-seconds", type=float, default=None, help="time per block")
    parser.add_argument("--warmup", type=int, default=None, help="untimed steps after tracing")
    parser.add_argument(
        "--tfa-python",
        default=os.environ.get(TFA_PYTHON_ENV) or None,
        help=f"python of the tfa environment ('none' to skip; default: ${TFA_PYTHON_ENV}, "
        "else none)",
    )
    parser.add_argument("--profile", action="store_true", help="profile ours (no jit) too")
    parser.add_argument(
        "--no-plain", action="store_true", help="leave out the plain keras LSTM decoder (floor)"
    )
    parser.add_argument(
        "--stepped",
        action="store_true",
        help="also time ours with the fused decoder off (the cell stepped, autodiff)",
    )
    parser.add_argument(
        "--embedded-first",
        action="store_true",
        help="also time ours with the Embedding before AttentionRNN (no table fold)",
    )
    parser.add_argument(
        "--attention-free",
        action="store_true",
        help="also time ours over a 1-position memory (the attention's S-dependent work gone)",
    )
    parser.add_argument("--matmul-n", type=int, default=None)
    parser.add_argument(
        "--scan-lengths",
        metavar="T,T,...",
        default=None,
        help="only time ours tf.function (jit off/on) at these target lengths, S fixed",
    )
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--length", type=int, default=None, help="T = S")
    parser.add_argument("--units", type=int, default=None, help="LSTM = attention = embedding")
    parser.add_argument("--vocab", type=int, default=None)
    return parser.parse_args(argv)


def settings(args: argparse.Namespace) -> dict:
    """Sizes, timing settings and the tfa python: `--quick`'s (no tfa) or the full run's, then
    the explicit options."""
    if args.quick:
        B, L, d, V, N = 4, 6, 16, 20, 256
        repeats, block, warmup = args.repeats or 2, args.block_seconds or 0.05, args.warmup or 1
        tfa_python = None
    else:
        B, L, d, V, N = 64, 50, 256, 500, 2048
        repeats, block, warmup = args.repeats or 7, args.block_seconds or 3.0, args.warmup or 3
        tfa_python = args.tfa_python
    if tfa_python in ("none", ""):
        tfa_python = None
    B, L, d, V = args.batch or B, args.length or L, args.units or d, args.vocab or V
    N = args.matmul_n or N
    return {"B": B, "T": L, "S": L, "d": d, "V": V, "N": N, "repeats": repeats,
            "block": block, "warmup": warmup, "tfa_python": tfa_python}  # fmt: skip


def run_scan_lengths(args: argparse.Namespace, cfg: dict) -> dict:
    """`--scan-lengths`: ours tf.function at several target lengths only."""
    lengths = [int(x) for x in args.scan_lengths.split(",")]
    records = scan_lengths(lengths, cfg["B"], cfg["S"], cfg["d"], cfg["V"])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"benchmark": "bench_decoder --scan-lengths", "results": records}, f)
    return {"results": records}


def start_tfa_worker(cfg: dict) -> tuple:
    """The tfa reference process and what it reported when ready, or `(None, None)` (no tfa
    python, or it failed to start: a warning)."""
    tfa_python = cfg["tfa_python"]
    if not tfa_python:
        print(
            f"# note: no tfa contender (no tfa python: pass --tfa-python or set "
            f"{TFA_PYTHON_ENV}; benchmarks/tfa_decoder_step.py says how to make one)",
            file=sys.stderr,
            flush=True,
        )
        return None, None
    sizes = ["--batch", str(cfg["B"]), "--length", str(cfg["T"]), "--units", str(cfg["d"]),
             "--vocab", str(cfg["V"]), "--warmup", str(cfg["warmup"])]  # fmt: skip
    t0 = time.perf_counter()
    try:
        worker = TfaWorker(tfa_python, sizes)
    except (OSError, RuntimeError, json.JSONDecodeError) as e:
        print(f"# WARNING: no tfa reference ({tfa_python}): {e}", file=sys.stderr, flush=True)
        return None, None
    tfa_info = worker.ready
    print(
        f"# tfa worker ready in {time.perf_counter() - t0:.0f} s; errors: "
        f"{json.dumps(tfa_info['errors'])}",
        file=sys.stderr,
        flush=True,
    )
    return worker, tfa_info


def build_cases(
    cfg: dict,
    data,
    flops: float,
    worker,
    no_plain: bool,
    stepped: bool = False,
    embedded_first: bool = False,
    attention_free: bool = False,
) -> tuple:
    """Ours (fit and tf.function), tfa's (in its worker), the plain LSTM floor, each without
    and with XLA, then the matmul reference; ours' weight count and initial losses."""
    T, S, d, V, N = (cfg[k] for k in ("T", "S", "d", "V", "N"))
    cases: list[Case] = []
    initial_losses = {}
    for jit in (False, True):
        run = fit_step(T, S, d, V, jit, data)
        cases.append(Case("ours fit (train_on_batch)", "ours", jit, flops, run))
        run, model = function_step(T, S, d, V, jit, data)
        cases.append(Case("ours tf.function", "ours", jit, flops, run))
        if not jit:
            n_weights = int(sum(np.prod(v.shape) for v in model.trainable_variables))
            logits = model([tf.constant(x) for x in (data[0], data[2], data[3])])
            initial_losses["ours"] = float(
                keras.losses.SparseCategoricalCrossentropy(from_logits=True)(data[1], logits)
            )
        if embedded_first:
            run, _ = function_step(T, S, d, V, jit, data, build=build_embedded_first_model)
            cases.append(Case("ours tf.function, embedding first", "unfolded", jit, flops, run))
        if stepped:
            run, _ = function_step(T, S, d, V, jit, data, build=build_stepped_model)
            cases.append(Case("ours tf.function, stepped cell", "stepped", jit, flops, run))
        if attention_free:
            # Keras warns on a softmax over one position: here that is the point.
            warnings.filterwarnings("ignore", message="You are using a softmax over axis")
            run, _ = function_step(T, 1, d, V, jit, make_data(cfg["B"], T, 1, d, V))
            free_flops = step_flops(cfg["B"], T, 1, d, d, d, d, V)
            cases.append(Case("ours tf.function, 1-position memory", "free", jit, free_flops, run))
        if worker:
            cases.append(Case("tfa 0.23 AttentionWrapper", "tfa", jit, flops))
        if not no_plain:
            run, _ = function_step(T, S, d, V, jit, data, build=build_plain_model)
            cases.append(Case("plain keras LSTM, no attention (floor)", "plain", jit, flops, run))
    rng = np.random.default_rng(1)
    a = tf.constant(rng.standard_normal((N, N)), "float32")
    b = tf.constant(rng.standard_normal((N, N)), "float32")
    mm = tf.function(lambda x, y: tf.reduce_sum(tf.matmul(x, y)))
    cases.append(
        Case(f"matmul {N}³ (TF {tf.__version__})", "matmul", None, 2.0 * N**3, lambda: mm(a, b))
    )
    return cases, n_weights, initial_losses


def print_preamble(cfg, info, flops, tfa_info, n_weights, initial_losses) -> None:
    print(
        f"# bench_decoder: B={cfg['B']} T=S={cfg['T']} LSTM/attention/embedding {cfg['d']}, "
        f"vocab {cfg['V']}, float32; train step = forward + loss + backward + Adam; "
        f"{flops / 1e9:.2f} GFLOP/step"
    )
    print(f"# {C.machine_line(info)}; repeats={cfg['repeats']}")
    if tfa_info:
        print(
            f"# tfa: TF {tfa_info['tensorflow']}, tf.keras {tfa_info['tf_keras']}, "
            f"tensorflow-addons {tfa_info['tensorflow_addons']}; weights "
            f"{tfa_info['info']['weights']}, initial loss {tfa_info['info']['initial_loss']:.4f}"
        )
    print(
        f"# ours: weights {n_weights}, initial loss {initial_losses['ours']:.4f} "
        f"(ln V = {math.log(cfg['V']):.4f})",
        flush=True,
    )


def time_cases(cases: list[Case], worker, cfg: dict) -> tuple[float, float]:
    """Warm up and calibrate every case, then the timed rounds over the live ones
    (interleaved, rotated each round); a case that fails is marked and timed as NaN."""
    t0 = time.perf_counter()
    for case in cases:
        warm_and_calibrate(case, worker, cfg["warmup"], cfg["block"])
    warm_s = time.perf_counter() - t0

    def time_one(case):
        try:
            case.times.append(time_case(case, case.inner, worker))
        except Exception as e:  # noqa: BLE001
            case.error = case.error or f"{type(e).__name__}: {e}"
            case.times.append(float("nan"))

    live = [c for c in cases if c.error is None]
    timed_s = C.timed_rounds(interleaved(live), cfg["repeats"], time_one)
    return warm_s, timed_s


def tfa_matmul_rate(cases: list[Case], worker, N: int) -> float | None:
    """The matmul reference's GFLOP/s in the tfa process (then the worker is closed)."""
    if not worker:
        return None
    m = next(c for c in cases if c.contender == "matmul")
    rate = 2.0 * N**3 / worker.request(matmul=N, inner=m.inner)["seconds_per_step"] / 1e9
    worker.close()
    return rate


def summarize(cases: list[Case]) -> tuple[list[list[str]], list[dict], float]:
    """Table rows and JSON records of every case, and the matmul reference's GFLOP/s."""
    matmul = cases[-1]
    matmul_gflops = matmul.flops / C.median(matmul.times) / 1e9
    ref = next((c for c in cases if c.contender == "tfa" and c.jit is False and c.times), None)
    rows, records = [], []
    for case in cases:
        if case.error and not any(math.isfinite(t) for t in case.times):
            jit_s = "yes" if case.jit else "no"
            rows.append([case.name, jit_s, "failed", "—", "—", "—", "—", "—"])
            records.append({"name": case.name, "jit_compile": case.jit, "error": case.error})
            continue
        med = C.median(case.times)
        gflops = case.flops / med / 1e9
        ratio = None
        if ref is not None and case.contender != "matmul":
            ratio = C.median([r / t for t, r in zip(case.times, ref.times, strict=True)])
        rows.append(
            [
                case.name,
                "—" if case.jit is None else ("yes" if case.jit else "no"),
                f"{1e3 * med:.1f}",
                C.spread(case.times),
                f"{1 / med:.2f}",
                f"{gflops:.1f}",
                f"{100 * gflops / matmul_gflops:.0f}%",
                "—" if ratio is None else f"{ratio:.2f}×",
            ]
        )
        records.append(
            {
                "name": case.name,
                "contender": case.contender,
                "jit_compile": case.jit,
                "ms_per_step": 1e3 * med,
                "ms_per_step_all": [1e3 * t for t in case.times],
                "steps_per_s": 1 / med,
                "gflop_per_step": case.flops / 1e9,
                "gflop_per_s": gflops,
                "fraction_of_matmul": gflops / matmul_gflops,
                "speed_ratio_vs_tfa_nojit": ratio,
                "inner_steps": case.inner,
                "error": case.error,
            }
        )
    return rows, records, matmul_gflops


HEADER = [
    "contender",
    "jit",
    "ms/step",
    "spread",
    "steps/s",
    "GFLOP/s",
    "% of matmul",
    "ratio vs tfa (no jit)",
]


def print_report(rows: list[list[str]], tfa_matmul, tfa_info, N: int) -> None:
    C.print_table(HEADER, rows)
    print(
        "ratio vs tfa (no jit): median over rounds of (tfa no-jit ms / this ms) in the same "
        "round; > 1 is faster than tfa. spread: (max − min) / 2 over rounds, relative to the "
        "median. GFLOP/s: the analytic count of the docstring / median time."
    )
    if tfa_matmul:
        print(
            f"matmul {N}³ in the tfa process (TF {tfa_info['tensorflow']}): "
            f"{tfa_matmul:.1f} GFLOP/s (for information; the % column uses ours)"
        )


def _per_round_ratio(cases: list[Case], numerator: str, denominator: str, jit: bool):
    """The median over rounds of `numerator`'s time / `denominator`'s (contenders; "ours" is
    `ours tf.function`) at this jit setting, or `None` when either was not timed."""

    def find(contender):
        if contender == "ours":
            return next((c for c in cases if c.name == "ours tf.function" and c.jit is jit), None)
        return next((c for c in cases if c.contender == contender and c.jit is jit), None)

    top, bottom = find(numerator), find(denominator)
    if not (top and bottom and top.times and bottom.times):
        return None
    return C.median([t / b for t, b in zip(top.times, bottom.times, strict=True)])


def time_ratios(cases: list[Case]) -> dict:
    """Printed and returned: ours / the plain LSTM floor and embedding first / ours per jit
    setting, and the fastest ours / the fastest tfa."""
    floor_ratios = {}
    for jit in (False, True):
        ratio = _per_round_ratio(cases, "ours", "plain", jit)
        if ratio is not None:
            floor_ratios[f"jit={jit}"] = ratio
            print(
                f"ours tf.function / plain LSTM (jit {'on' if jit else 'off'}): {ratio:.2f}× "
                "the time (median of per-round ratios; the attention's cost; goal <= 1.5×)"
            )
    for jit in (False, True):
        ratio = _per_round_ratio(cases, "unfolded", "ours", jit)
        if ratio is not None:
            floor_ratios[f"fold_gain_jit={jit}"] = ratio
            print(
                f"embedding first / ids in (jit {'on' if jit else 'off'}): {ratio:.2f}× "
                "(what folding W_y into the table gains; median of per-round ratios)"
            )
    best = {}
    for contender in ("ours", "tfa"):
        timed = [c for c in cases if c.contender == contender and c.times]
        if timed:
            best[contender] = min(timed, key=lambda c: C.median(c.times))
    if len(best) == 2:
        ratio = C.median(best["ours"].times) / C.median(best["tfa"].times)
        floor_ratios["ours_best/tfa_best"] = ratio
        print(
            f"fastest ours ({best['ours'].name}, jit {best['ours'].jit}) / fastest tfa "
            f"(jit {best['tfa'].jit}): {ratio:.2f}× the time ({1 / ratio:.2f}× tfa's speed; "
            "goal >= 2×)"
        )
    floor_ratios.update(attention_budget(cases, best))
    return floor_ratios


def attention_budget(cases: list[Case], best: dict) -> dict:
    """With `--attention-free`: ours over a 1-position memory (the attention's S-dependent work
    gone), at the fastest ours' jit setting, against half the fastest tfa's time: what the
    2× goal leaves for the attention, and what ours spends on it (printed and returned)."""
    if "ours" not in best:
        return {}
    ours = best["ours"]
    free = next((c for c in cases if c.contender == "free" and c.jit is ours.jit), None)
    if not (free and free.times and ours.times):
        return {}
    spent = C.median([t - f for t, f in zip(ours.times, free.times, strict=True)])
    out = {"attention_free_ms": 1e3 * C.median(free.times), "attention_ms": 1e3 * spent}
    line = (
        f"attention-free (jit {ours.jit}): ours over a 1-position memory "
        f"{out['attention_free_ms']:.1f} ms; the attention over S positions costs "
        f"{out['attention_ms']:.1f} ms of ours (median of per-round differences)"
    )
    if "tfa" in best:
        half = 1e3 * C.median(best["tfa"].times) / 2
        out["two_x_tfa_ms"] = half
        line += (
            f"; 2× the fastest tfa is {half:.1f} ms, which leaves "
            f"{half - out['attention_free_ms']:.1f} ms for the attention"
        )
    print(line)
    return out


def main(argv=None) -> dict:
    args = parse_args(argv)
    tf.get_logger().setLevel("ERROR")
    cfg = settings(args)
    if args.scan_lengths:
        return run_scan_lengths(args, cfg)
    B, T, S, d, V, N = (cfg[k] for k in ("B", "T", "S", "d", "V", "N"))
    flops = step_flops(B, T, S, d, d, d, d, V)
    data = make_data(B, T, S, d, V)
    worker, tfa_info = start_tfa_worker(cfg)
    cases, n_weights, initial_losses = build_cases(
        cfg, data, flops, worker, args.no_plain, args.stepped, args.embedded_first,
        args.attention_free,
    )  # fmt: skip

    info = C.machine_info()
    info["code"] = C.code_version()
    print_preamble(cfg, info, flops, tfa_info, n_weights, initial_losses)
    warm_s, timed_s = time_cases(cases, worker, cfg)
    tfa_matmul = tfa_matmul_rate(cases, worker, N)
    rows, records, matmul_gflops = summarize(cases)
    print_report(rows, tfa_matmul, tfa_info, N)
    floor_ratios = time_ratios(cases)
    print(f"warm-up {warm_s:.0f} s, timed rounds {timed_s:.0f} s")

    result = {
        "benchmark": "bench_decoder",
        "config": {
            "B": B,
            "T": T,
            "S": S,
            "units": d,
            "vocab": V,
            "matmul_N": N,
            "repeats": cfg["repeats"],
            "block_seconds": cfg["block"],
            "warmup": cfg["warmup"],
        },
        "machine": info,
        "tfa": tfa_info,
        "gflop_per_step": flops / 1e9,
        "matmul_gflop_per_s": matmul_gflops,
        "tfa_process_matmul_gflop_per_s": tfa_matmul,
        "initial_loss": initial_losses,
        "results": records,
        "time_ratios": floor_ratios,
    }
    if args.profile:
        result["profile"] = profile(T, S, d, V, data)
        print_profile(result["profile"])
    return C.write_json(args.json, result)


if __name__ == "__main__":
    main()
