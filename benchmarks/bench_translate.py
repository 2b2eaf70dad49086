"""Decoding throughput of a `Seq2Seq`: greedy and beam search, Python loops, XLA, SavedModel.

The model (defaults): `Seq2Seq(source_vocabulary_size=8000, target_vocabulary_size=8000,
embedding_dim=256, units=256, rnn="lstm", attention="luong", score_mode="general")`, i.e. a
bidirectional LSTM(256) encoder, a Luong input-feeding LSTMCell(256) decoder and a Dense(8000)
output projection, float32, untrained (random weights). Input: B=64 random source sentences of
length S=50 (ids in [4, V), an end token 3 at the end, 0 = padding after it; valid lengths drawn
in [S/2, S], row 0 full). `max_length=50` target tokens.

Untrained weights can emit the end token early, which would stop greedy search (and beams)
early and flatter it. So the projection bias of the end token is set to -1e4: every method
then decodes exactly `max_length` steps for every row. The mean generated length is reported
as a check (it must equal `max_length`).

Methods (each decodes one batch of B sentences into NumPy arrays, encoder included):

- `python loop, eager step`: a Python `for t in range(max_length)` loop that calls one greedy
  step eagerly per token. The step is the body of `Seq2SeqDecoder.make_step_fn`'s step function
  (`cell.step(embedding(tokens), states, prepared, position=t)` → `projection`) followed by
  the bookkeeping of `greedy_search` (pad/start logits masked, log-softmax, argmax, scores,
  lengths, finished flags, alignments zeroed after the end). `model.encode` and
  `cell.prepare_memory` run once per batch; the prepared memory is passed to the step as an
  argument (a `make_step_fn` closure would capture one batch's memory, and a compiled step
  would then be retraced for every batch). The loop stops early when every row has finished,
  as the searches do.
- `python loop, tf.function step` / `python loop, XLA step`: the same loop, with the step and
  the encoder (+ memory preparation) each wrapped in `tf.function(jit_compile=False|True)`.
- `Translator greedy` / `Translator beam K`: `keras_attention.models.Translator(model,
  GreedySearch(max_length) | BeamSearch(K, max_length=max_length, length_penalty=0.6),
  jit_compile=False|True, pad_to_multiple=16)`, which runs `model.generate` (one
  `ops.while_loop`) in a `tf.function`.
  Note: it pads the source to a multiple of 16 (S=50 → 64; the padding is masked).
- `SavedModel greedy` / `SavedModel beam K`: `keras_attention.export.export_saved_model(model,
  path, GreedySearch(max_length) | BeamSearch(K, ...), jit_compile=False|True)`, reloaded with
  `tf.saved_model.load(path).signatures["serving_default"](source_ids=...)` (no padding).
- `encode only` (a component, not a method): `model.encode` + `prepare_memory`, eager /
  tf.function / XLA, to show how much of a batch is the encoder.
- `decoder dense matmuls only` (a floor, not a method): `max_length` dependent steps of the
  decoder's three dense matmuls per token (LSTM `[B, 3d] x [3d, 4d]`, attentional output
  `[B, 2d] x [2d, d]`, projection `[B, d] x [d, V]`) + argmax in one XLA while loop; what any
  greedy decoder of this model must spend per batch on this machine, the encoder aside.
  The script prints each greedy method's decoder time per step, (ms/batch − encoder) /
  max_length, against it.

Method: every method is built, traced/compiled and called twice before timing (the first
call's time is reported as "first call s"). Then `--repeats` rounds; a round decodes one batch
with every method, in an order rotated every round, so that load from other processes hits all
methods alike. Reported: the median ms/batch over rounds, sentences/s = B / median, and ratios
as the median over rounds of the per-round ratio. Targets (from the issue): the jitted greedy
`while_loop` (Translator, XLA) at least 3× faster than the Python-level step loop; beam width 4
costs at most 5× greedy (same runtime, same XLA setting).

Usage:
    python benchmarks/bench_translate.py                 # full size, ~3 min on 2 cores
    python benchmarks/bench_translate.py --quick         # tiny sizes (< 60 s): smoke test
    python benchmarks/bench_translate.py --repeats 7 --json out.json
    python benchmarks/bench_translate.py --search-options   # sampling / coverage, ~4 min

`--search-options` times only `Translator` (XLA and graph) with: greedy; sampling (T = 1; top-k
50; top-p 0.9; T 0.8 + top-k 50 + top-p 0.9); beam K; beam K with coverage penalty 0.2. Goals
(issue 13): sampling within 1.2x greedy's time per batch under XLA; beam with coverage within
1.1x beam without. With the end token suppressed no beam finishes, so the coverage term is
computed every step but never added (its cost is the same either way).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import _common as C  # first: sets the TF/Keras environment before they are imported
import numpy as np
import tensorflow as tf
from keras import ops

from keras_attention.decoding import BeamSearch, GreedySearch, SampleSearch
from keras_attention.export import export_saved_model
from keras_attention.models import Seq2Seq, Translator

PAD, START, END = 0, 2, 3


@dataclass
class Case:
    name: str
    kind: str  # "loop", "translator", "savedmodel", "component", "floor"
    search: str  # "greedy", "beam K" or "—"
    jit: bool | None  # None: eager
    run: Callable[[], dict]
    first_call_s: float = float("nan")
    times: list = field(default_factory=list)
    result: dict | None = None
    error: str | None = None


def make_source(B, S, vocab, seed=0) -> np.ndarray:
    """Random source ids `[B, S]`: ids in [4, V), end token at the end, 0 after it."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(max(2, S // 2), S + 1, size=(B,))
    lengths[0] = S
    ids = rng.integers(4, vocab, size=(B, S)).astype("int32")
    positions = np.arange(S)[None, :]
    ids = np.where(positions == lengths[:, None] - 1, END, ids)
    return np.where(positions < lengths[:, None], ids, PAD).astype("int32")


def build_model(S, d, vocab, seed=0) -> Seq2Seq:
    import keras

    keras.utils.set_random_seed(seed)
    model = Seq2Seq(
        source_vocabulary_size=vocab,
        target_vocabulary_size=vocab,
        embedding_dim=d,
        units=d,
        rnn="lstm",
        attention="luong",
        score_mode="general",
    )
    model(
        {
            "source_ids": np.ones((2, S), "int32"),
            "target_ids": np.ones((2, 3), "int32"),
        }
    )
    # Never predict the end token: every method decodes exactly max_length steps.
    bias = model.decoder.projection.bias
    value = ops.convert_to_numpy(bias).copy()
    value[END] = -1e4
    bias.assign(value)
    return model


def python_loop(model: Seq2Seq, max_length: int, jit: bool | None) -> Callable:
    """Greedy decoding as a Python loop over a step function (eager, tf.function or XLA)."""
    decoder = model.decoder
    cell, embedding, projection = decoder.cell, decoder.embedding, decoder.projection
    allowed = np.ones((decoder.vocabulary_size,), bool)
    allowed[[PAD, START]] = False  # as Seq2Seq.generate: never generate padding or start

    def prepare(source_ids):
        memory, mask, states = model.encode(source_ids)
        return cell.prepare_memory(memory, mask), list(states)

    def step(tokens, states, t, prepared, finished, scores, lengths):
        output, states, alignment = cell.step(embedding(tokens), list(states), prepared, t)
        logits = ops.where(allowed, ops.cast(projection(output), "float32"), -1e9)
        log_probs = ops.log_softmax(logits, axis=-1)
        token = ops.cast(ops.argmax(log_probs, axis=-1), "int32")
        token_log_prob = ops.take_along_axis(log_probs, token[:, None], axis=-1)[:, 0]
        token = ops.where(finished, PAD, token)
        scores = scores + ops.where(finished, 0.0, token_log_prob)
        lengths = lengths + ops.where(finished, 0, 1)
        alignment = ops.where(finished[:, None], 0.0, ops.cast(alignment, "float32"))
        finished = ops.logical_or(finished, ops.equal(token, END))
        return token, list(states), alignment, finished, scores, lengths

    if jit is not None:
        prepare = tf.function(prepare, jit_compile=jit)
        step = tf.function(step, jit_compile=jit)

    def decode(source_ids) -> dict:
        prepared, states = prepare(tf.constant(source_ids))
        batch = source_ids.shape[0]
        tokens = ops.full((batch,), START, "int32")
        finished = ops.zeros((batch,), "bool")
        scores = ops.zeros((batch,), "float32")
        lengths = ops.zeros((batch,), "int32")
        ids, alignments = [], []
        for t in range(max_length):
            t = ops.convert_to_tensor(t, "int32")
            tokens, states, alignment, finished, scores, lengths = step(
                tokens, states, t, prepared, finished, scores, lengths
            )
            ids.append(tokens)
            alignments.append(alignment)
            if bool(ops.all(finished)):
                break
        return {
            "ids": ops.convert_to_numpy(ops.stack(ids, axis=1)),
            "scores": ops.convert_to_numpy(scores),
            "lengths": ops.convert_to_numpy(lengths),
            "alignments": ops.convert_to_numpy(ops.stack(alignments, axis=1)),
        }

    return decode


def encode_only(model: Seq2Seq, jit: bool | None) -> Callable:
    def prepare(source_ids):
        memory, mask, states = model.encode(source_ids)
        return model.decoder.cell.prepare_memory(memory, mask), list(states)

    if jit is not None:
        prepare = tf.function(prepare, jit_compile=jit)

    def run(source_ids) -> dict:
        prepared, states = prepare(tf.constant(source_ids))
        return {
            "state": ops.convert_to_numpy(states[0]),
            "keys": ops.convert_to_numpy(prepared[0][0]),
        }

    return run


def matmul_floor(model: Seq2Seq, batch: int, max_length: int) -> tuple[Callable, float]:
    """The decoder's dense matmuls alone, `max_length` dependent steps in one XLA while loop.

    Per step: LSTM `[B, 3d] x [3d, 4d]` (inputs [y; h~] and recurrent kernels together),
    attentional output `[B, 2d] x [2d, d]` and the output projection `[B, d] x [d, V]`, then
    argmax. Returns the function and its FLOPs per batch.
    """
    d, V = model.decoder.units, model.decoder.vocabulary_size
    rng = np.random.default_rng(2)
    lstm = tf.constant(rng.standard_normal((3 * d, 4 * d)) / math.sqrt(3 * d), tf.float32)
    w_c = tf.constant(rng.standard_normal((2 * d, d)) / math.sqrt(2 * d), tf.float32)
    projection = tf.constant(ops.convert_to_numpy(model.decoder.projection.kernel))
    x0 = tf.constant(rng.standard_normal((batch, d)), tf.float32)

    @tf.function(jit_compile=True)
    def loop(x):
        def body(i, x):
            h = tf.tanh(tf.matmul(tf.concat([x, x, x], 1), lstm)[:, :d])
            o = tf.tanh(tf.matmul(tf.concat([h, x], 1), w_c))
            token = tf.argmax(tf.matmul(o, projection), -1, output_type=tf.int32)
            return i + 1, o + 1e-6 * tf.cast(token[:, None], tf.float32)

        return tf.while_loop(lambda i, x: i < max_length, body, (0, x))[1]

    flops = 2.0 * batch * (3 * d * 4 * d + 2 * d * d + d * V) * max_length
    return (lambda: {"x": loop(x0).numpy()}), flops


def savedmodel(model, path, max_length, beam_width, jit) -> tuple[Callable, float]:
    t0 = time.perf_counter()
    search = beam_or_greedy(beam_width, max_length)
    export_saved_model(model, path, search, overwrite=True, jit_compile=jit)
    export_s = time.perf_counter() - t0
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]

    def run(source_ids) -> dict:
        out = serve(source_ids=tf.constant(source_ids, tf.int32))
        return {k: v.numpy() for k, v in out.items()}

    run.loaded = loaded  # keep the trackable object alive
    return run, export_s


def make_cases(model, source, max_length, beam_width, tmpdir) -> tuple[list[Case], dict, float]:
    """All methods, in table order; the export times (s) of the SavedModels; the FLOPs of the
    matmul floor."""
    cases = []
    for jit, label in ((None, "eager step"), (False, "tf.function step"), (True, "XLA step")):
        decode = python_loop(model, max_length, jit)
        cases.append(
            Case(f"python loop, {label}", "loop", "greedy", jit, lambda f=decode: f(source))
        )
    exports = {}
    for jit in (False, True):
        for k in (1, beam_width):
            search = "greedy" if k == 1 else f"beam {k}"
            translator = Translator(
                model, beam_or_greedy(k, max_length), jit_compile=jit, pad_to_multiple=16
            )
            cases.append(
                Case(
                    f"Translator {search}",
                    "translator",
                    search,
                    jit,
                    lambda f=translator: f(source),
                )
            )
    for jit in (False, True):
        for k in (1, beam_width):
            search = "greedy" if k == 1 else f"beam {k}"
            name = f"SavedModel {search}"
            path = f"{tmpdir}/{'xla' if jit else 'graph'}_beam{k}"
            try:
                run, export_s = savedmodel(model, path, max_length, k, jit)
            except Exception as e:  # noqa: BLE001
                case = Case(name, "savedmodel", search, jit, lambda: {})
                case.error = f"export: {type(e).__name__}: {e}"
                cases.append(case)
                continue
            exports[(search, jit)] = export_s
            cases.append(Case(name, "savedmodel", search, jit, lambda f=run: f(source)))
    for jit in (None, False, True):
        run = encode_only(model, jit)
        cases.append(Case("encode only", "component", "—", jit, lambda f=run: f(source)))
    floor, flops = matmul_floor(model, source.shape[0], max_length)
    cases.append(Case("decoder dense matmuls only", "floor", "—", True, floor))
    return cases, exports, flops


# Decoding options (issue 13): sampling vs greedy, beam with vs without the coverage penalty.
SEARCH_OPTIONS = {
    "greedy": (GreedySearch, {}),
    "sample": (SampleSearch, {}),
    "sample top-k 50": (SampleSearch, {"top_k": 50}),
    "sample top-p 0.9": (SampleSearch, {"top_p": 0.9}),
    "sample T 0.8, top-k 50, top-p 0.9": (
        SampleSearch, {"temperature": 0.8, "top_k": 50, "top_p": 0.9},
    ),
    "beam K": (BeamSearch, {}),
    "beam K, coverage 0.2": (BeamSearch, {"coverage_penalty": 0.2}),
}  # fmt: skip


def beam_or_greedy(beam_width: int, max_length: int):
    """Beam search of `beam_width` beams (GNMT alpha 0.6), or greedy search for one."""
    if beam_width == 1:
        return GreedySearch(max_length)
    return BeamSearch(beam_width, max_length=max_length, length_penalty=0.6)


def search_option_cases(model, source, max_length, beam_width, jits) -> list[Case]:
    """`Translator` cases (XLA and/or graph) for every entry of `SEARCH_OPTIONS`."""
    cases = []
    for jit in jits:
        for search, (kind, options) in SEARCH_OPTIONS.items():
            search = search.replace("beam K", f"beam {beam_width}")
            if kind is BeamSearch:
                options = {"beam_width": beam_width, "length_penalty": 0.6, **options}
            elif kind is SampleSearch:
                options = {"seed": 0, **options}
            translator = Translator(
                model, kind(max_length=max_length, **options), jit_compile=jit, pad_to_multiple=16
            )
            cases.append(
                Case(
                    f"Translator {search}",
                    "translator",
                    search,
                    jit,
                    lambda f=translator: f(source),
                )
            )
    return cases


def find(cases, kind, search, jit) -> Case | None:
    for case in cases:
        if case.kind == kind and case.search == search and case.jit is jit and not case.error:
            return case
    return None


def per_round(numerator: Case | None, denominator: Case | None) -> list[float]:
    """numerator ms / denominator ms, round by round."""
    if numerator is None or denominator is None:
        return [float("nan")]
    return [a / b for a, b in zip(numerator.times, denominator.times, strict=True)]


def ratio(numerator: Case | None, denominator: Case | None) -> float:
    """Median over rounds of numerator ms / denominator ms (same round)."""
    return C.median(per_round(numerator, denominator))


def span(values: list[float]) -> str:
    return f"(rounds {min(values):.2f}–{max(values):.2f})"


def jit_label(jit) -> str:
    return "eager" if jit is None else ("yes" if jit else "no")


def search_option_ratios(cases, K, args, records, info, B, S, L, d, V, repeats) -> dict:
    """Print (and return) sampling / greedy and coverage / plain beam, per XLA setting."""
    ratios = {}
    print()
    for jit in (True, False):
        greedy = find(cases, "translator", "greedy", jit)
        for search in SEARCH_OPTIONS:
            if not search.startswith("sample"):
                continue
            rounds = per_round(find(cases, "translator", search, jit), greedy)
            value = C.median(rounds)
            ratios[f"{search}_vs_greedy_xla_{jit_label(jit)}"] = value
            verdict = (
                (" -> " + ("met" if value <= 1.2 else "NOT MET") + " (goal <= 1.2×)") if jit else ""
            )
            print(f"{search} / greedy, XLA {jit_label(jit)}: {value:.2f}× {span(rounds)}{verdict}")
        beam = find(cases, "translator", f"beam {K}", jit)
        rounds = per_round(find(cases, "translator", f"beam {K}, coverage 0.2", jit), beam)
        value = C.median(rounds)
        ratios[f"beam{K}_coverage_vs_beam{K}_xla_{jit_label(jit)}"] = value
        verdict = " -> " + ("met" if value <= 1.1 else "NOT MET") + " (goal <= 1.1×)"
        print(
            f"beam {K} + coverage 0.2 / beam {K}, XLA {jit_label(jit)}: {value:.2f}× "
            f"{span(rounds)}{verdict}"
        )
    report = {
        "benchmark": "bench_translate --search-options",
        "machine": info,
        "config": {
            "B": B,
            "S": S,
            "max_length": L,
            "d": d,
            "V": V,
            "beam_width": K,
            "repeats": repeats,
        },
        "results": records,
        "ratios": ratios,
    }
    if args.json:
        C.write_json(args.json, report)
    return report


# ---------------------------------------------------------------------------- main
def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: smoke test")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds (default 7)")
    parser.add_argument("--json", metavar="PATH", default=None, help="also write results here")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--length", type=int, default=None, help="source length S")
    parser.add_argument("--max-length", type=int, default=None, help="target tokens")
    parser.add_argument("--units", type=int, default=None, help="LSTM = embedding size")
    parser.add_argument("--vocab", type=int, default=None, help="source = target vocabulary")
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="TF intra- and inter-op threads (default: TF's choice, all cores)",
    )
    parser.add_argument(
        "--search-options",
        action="store_true",
        help="only the Translator with sampling (temperature/top-k/top-p) vs greedy and beam "
        "with vs without the coverage penalty, XLA and graph",
    )
    return parser.parse_args(argv)


def settings(args: argparse.Namespace) -> dict:
    """Sizes and repeats: `--quick`'s or the full run's, then the explicit options."""
    if args.quick:
        B, S, L, d, V, repeats = 4, 8, 6, 16, 40, args.repeats or 2
    else:
        B, S, L, d, V, repeats = 64, 50, 50, 256, 8000, args.repeats or 7
    B, S, L = args.batch or B, args.length or S, args.max_length or L
    d, V, K = args.units or d, args.vocab or V, args.beam_width
    return {"B": B, "S": S, "L": L, "d": d, "V": V, "K": K, "repeats": repeats}


def print_preamble(cfg: dict, args: argparse.Namespace, info: dict) -> None:
    B, S, L, d, V, K = (cfg[k] for k in ("B", "S", "L", "d", "V", "K"))
    print(
        f"# bench_translate: B={B}, S={S} (valid lengths in [{max(2, S // 2)}, {S}]), "
        f"max_length={L}, vocab {V} (source = target), embedding {d}, bidirectional LSTM {d} "
        f"encoder, Luong general LSTMCell {d} decoder, beam width {K} (length penalty 0.6), "
        f"float32; end token suppressed (bias -1e4)"
    )
    print(
        f"# {C.machine_line(info)}; repeats={cfg['repeats']}; "
        f"TF threads {args.threads or 'default'}",
        flush=True,
    )


def warm_up(cases: list) -> None:
    """First call (tracing + compilation + one decode, timed) and a second call whose result
    is kept; a case that fails is marked."""
    for case in cases:
        if case.error:
            continue
        try:
            t0 = time.perf_counter()
            case.run()
            case.first_call_s = time.perf_counter() - t0
            case.result = case.run()
        except Exception as e:  # noqa: BLE001
            case.error = f"{type(e).__name__}: {e}"


def time_live_cases(live: list, repeats: int) -> tuple[float, list[float]]:
    """`repeats` rounds over the live cases (rotated each round): the seconds it took and the
    1-minute load average at the start of each round."""
    t0 = time.perf_counter()
    loads = []
    for r in range(repeats):
        loads.append(os.getloadavg()[0])
        for case in C.rotated(live, r):
            t1 = time.perf_counter()
            case.run()
            case.times.append(time.perf_counter() - t1)
    return time.perf_counter() - t0, loads


def run_cases(cfg: dict, args: argparse.Namespace) -> dict:
    """Build the model and the cases (with their SavedModel exports, in a temporary folder),
    warm them up and time them."""
    source = make_source(cfg["B"], cfg["S"], cfg["V"])
    model = build_model(cfg["S"], cfg["d"], cfg["V"])
    L, K = cfg["L"], cfg["K"]
    tmpdir = tempfile.mkdtemp(prefix="bench_translate_")
    t_start = time.perf_counter()
    try:
        if args.search_options:
            cases, exports, floor_flops = (
                search_option_cases(model, source, L, K, (True, False)),
                {},
                0,
            )
        else:
            cases, exports, floor_flops = make_cases(model, source, L, K, tmpdir)
        warm_up(cases)
        warm_s = time.perf_counter() - t_start
        timed_s, loads = time_live_cases([c for c in cases if not c.error], cfg["repeats"])
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return {"cases": cases, "exports": exports, "floor_flops": floor_flops, "warm_s": warm_s,
            "timed_s": timed_s, "loads": loads}  # fmt: skip


def summarize(cases: list, B: int) -> tuple[list[list[str]], list[dict]]:
    """Table rows and JSON records of every case (speed against the eager Python loop)."""
    eager_loop = find(cases, "loop", "greedy", None)
    rows, records = [], []
    for case in cases:
        if case.error or not case.times:
            rows.append([case.name, case.search, jit_label(case.jit), "failed", *["—"] * 5])
            records.append({"name": case.name, "jit_compile": case.jit, "error": case.error})
            continue
        med = C.median(case.times)
        lengths = (case.result or {}).get("lengths")
        mean_length = float(np.mean(lengths)) if lengths is not None else float("nan")
        speedup = 1 / ratio(case, eager_loop)
        rows.append(
            [
                case.name,
                case.search,
                jit_label(case.jit),
                f"{case.first_call_s:.1f}",
                f"{1e3 * med:.1f}",
                C.spread(case.times),
                f"{B / med:.1f}",
                "—" if math.isnan(mean_length) else f"{mean_length:.1f}",
                f"{speedup:.2f}×",
            ]
        )
        records.append(
            {
                "name": case.name,
                "kind": case.kind,
                "search": case.search,
                "jit_compile": case.jit,
                "first_call_s": case.first_call_s,
                "ms_per_batch": 1e3 * med,
                "ms_per_batch_all": [1e3 * t for t in case.times],
                "sentences_per_s": B / med,
                "mean_length": None if math.isnan(mean_length) else mean_length,
                "speedup_vs_eager_python_loop": speedup,
            }
        )
    return rows, records


HEADER = [
    "method",
    "search",
    "XLA",
    "first call s",
    "ms/batch",
    "spread",
    "sentences/s",
    "mean length",
    "speed vs eager loop",
]


def print_report(rows: list[list[str]]) -> None:
    C.print_table(HEADER, rows)
    print(
        "ms/batch: median over rounds (one batch of B sentences, encoder included); spread: "
        "(max − min) / 2 over rounds, relative to the median; speed vs eager loop: median over "
        "rounds of (eager Python loop ms / this ms) in the same round. first call: tracing + "
        "compilation + one decode."
    )


def target_ratios(cases: list, K: int) -> dict:
    """Printed and returned: the XLA greedy search against the Python loops, beam against
    greedy, SavedModel against Translator."""
    jit_greedy = find(cases, "translator", "greedy", True)
    ratios = {}
    print()
    for jit, label in ((None, "eager step"), (False, "tf.function step"), (True, "XLA step")):
        loop = find(cases, "loop", "greedy", jit)
        rounds = [1 / r for r in per_round(jit_greedy, loop)]
        value = C.median(rounds)
        ratios[f"jit_greedy_speedup_vs_python_loop_{jit_label(jit)}"] = value
        verdict = ""
        if jit is None:
            verdict = " -> " + ("met" if value >= 3 else "NOT MET") + " (target >= 3×)"
        print(
            f"XLA greedy while_loop vs python loop, {label}: {value:.2f}× faster "
            f"{span(rounds)}{verdict}"
        )
    for kind in ("translator", "savedmodel"):
        for jit in (False, True):
            rounds = per_round(
                find(cases, kind, f"beam {K}", jit), find(cases, kind, "greedy", jit)
            )
            value = C.median(rounds)
            ratios[f"beam{K}_cost_vs_greedy_{kind}_xla_{jit_label(jit)}"] = value
            verdict = "met" if value <= 5 else "NOT MET"
            print(
                f"beam {K} / greedy time, {kind}, XLA {jit_label(jit)}: {value:.2f}× "
                f"{span(rounds)} -> {verdict} (target <= 5×)"
            )
    for search in ("greedy", f"beam {K}"):
        for jit in (False, True):
            rounds = per_round(
                find(cases, "savedmodel", search, jit), find(cases, "translator", search, jit)
            )
            value = C.median(rounds)
            ratios[f"savedmodel_vs_translator_{search.replace(' ', '')}_xla_{jit_label(jit)}"] = (
                value
            )
            print(
                f"SavedModel / Translator time, {search}, XLA {jit_label(jit)}: {value:.2f}× "
                f"{span(rounds)}"
            )
    return ratios


def greedy_agreement(cases: list) -> float | None:
    """The share of greedy ids equal between the eager Python loop and the XLA Translator."""
    eager_loop = find(cases, "loop", "greedy", None)
    jit_greedy = find(cases, "translator", "greedy", True)
    agree = None
    loop_result, translator_result = (
        eager_loop and eager_loop.result,
        jit_greedy and jit_greedy.result,
    )
    if loop_result and translator_result:
        agree = float(np.mean(loop_result["ids"] == translator_result["ids"]))
        print(f"greedy ids, eager python loop vs XLA Translator: {100 * agree:.1f}% equal")
    return agree


def time_breakdown(cases: list, floor_flops: float, L: int) -> dict:
    """Where the time goes: encoder vs decoder steps, against the dense-matmul floor."""
    breakdown = {}
    floor = find(cases, "floor", "—", True)
    floor_ms = 1e3 * C.median(floor.times) if floor else float("nan")
    print(
        f"decoder dense matmuls only (XLA): {floor_ms / L:.2f} ms/step, "
        f"{floor_flops / 1e9:.2f} GFLOP/batch, {floor_flops / floor_ms / 1e6:.1f} GFLOP/s"
    )
    for case in cases:
        if case.kind == "component" or case.kind == "floor" or case.error or not case.times:
            continue
        encoder = find(cases, "component", "—", case.jit)
        ms = 1e3 * C.median(case.times)
        encode_ms = 1e3 * C.median(encoder.times) if encoder else float("nan")
        per_step = (ms - encode_ms) / L
        breakdown[f"{case.name}, xla {jit_label(case.jit)}"] = {
            "encode_ms": encode_ms,
            "decoder_ms_per_step": per_step,
        }
        print(
            f"{case.name} (XLA {jit_label(case.jit)}): encoder ~{encode_ms:.0f} ms "
            f"({100 * encode_ms / ms:.0f}%), decoder {per_step:.2f} ms/step "
            f"({per_step / (floor_ms / L):.2f}× the greedy matmul floor)"
        )
    return breakdown


def print_run_notes(run: dict) -> None:
    """Failed cases, export times, the run's durations and load."""
    for case in run["cases"]:
        if case.error:
            print(f"# {case.name} (XLA {jit_label(case.jit)}) failed: {case.error}")
    export_text = ", ".join(
        f"{s} XLA {jit_label(j)} {t:.1f} s" for (s, j), t in sorted(run["exports"].items(), key=str)
    )
    print(f"SavedModel export times: {export_text}")
    print(f"build + export + warm-up {run['warm_s']:.0f} s, timed rounds {run['timed_s']:.0f} s")
    loads = run["loads"]
    print(f"1-min load average at the start of each round: {min(loads):.2f}–{max(loads):.2f}")


def main(argv=None) -> dict:
    args = parse_args(argv)
    tf.get_logger().setLevel("ERROR")
    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    cfg = settings(args)
    B, S, L, d, V, K, repeats = (cfg[k] for k in ("B", "S", "L", "d", "V", "K", "repeats"))
    info = C.machine_info()
    print_preamble(cfg, args, info)
    run = run_cases(cfg, args)
    cases = run["cases"]
    rows, records = summarize(cases, B)
    print_report(rows)
    if args.search_options:
        return search_option_ratios(cases, K, args, records, info, B, S, L, d, V, repeats)

    ratios = target_ratios(cases, K)
    agree = greedy_agreement(cases)
    breakdown = time_breakdown(cases, run["floor_flops"], L)
    print_run_notes(run)
    result = {
        "benchmark": "bench_translate",
        "config": {
            "B": B,
            "S": S,
            "max_length": L,
            "units": d,
            "embedding_dim": d,
            "vocab": V,
            "beam_width": K,
            "length_penalty": 0.6,
            "repeats": repeats,
            "threads": args.threads,
        },
        "load_average_per_round": run["loads"],
        "machine": info,
        "results": records,
        "ratios": ratios,
        "greedy_ids_agreement": agree,
        "matmul_floor_gflop_per_batch": run["floor_flops"] / 1e9,
        "breakdown": breakdown,
        "export_seconds": {f"{s}, xla {jit_label(j)}": t for (s, j), t in run["exports"].items()},
    }
    return C.write_json(args.json, result)


if __name__ == "__main__":
    main()
