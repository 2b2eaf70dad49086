"""The same attention layers and decoder, timed on the TensorFlow, JAX and PyTorch backends.

Cases (default sizes B=64, T=S=50, d=256; the memory has valid lengths in [S/2, S]):

- layer cases, a functional model `[query [B, T, d], memory [B, S, d], memory_mask [B, S]] →
  layer(query, memory, value_mask=memory_mask)`, timed for one train step (forward, MSE loss,
  backward, SGD update: `model.train_on_batch`) and one forward pass (`predict_on_batch`):
  `LuongAttention` "general" global, "concat" global, "general" local_monotonic and
  local_predictive (D = 10), and `AdditiveAttention(score_units=d)`;
- `decoder train`: `Embedding(V, d) → AttentionRNN(LuongAttentionCell(LSTMCell(d),
  LuongAttention("general"), units=d))` (input feeding) `→ Dense(V)`, sparse cross-entropy
  from logits, Adam: one `train_on_batch` of target length T over the memory;
- `greedy decode`: `keras_attention.decoding.greedy_search` over the same (untrained) decoder,
  `T` tokens per row (the end token's logit is pushed down, so every row decodes all T), in a
  `keras.Model` timed with `predict_on_batch`.

Every backend runs in its own subprocess with `KERAS_BACKEND` set, through Keras' own compiled
steps (`compile(jit_compile=True)`): TensorFlow `tf.function(jit_compile=True)` (XLA); JAX
`jax.jit` (XLA); PyTorch eager (`torch`) or `torch.compile` (`torch-compile`, Keras'
`jit_compile=True` on that backend). Times include Keras' per-call work (converting the
outputs to NumPy, which also waits for the device). Inputs are backend tensors made once.

Method: every case is built, compiled and run twice first (the compile time of the first
call is kept in the JSON); then the number of calls per timed block is calibrated to last
about `--block-seconds`, and `--repeats` blocks are timed (a warm-up call longer than a block
counts as one, and no block starts after `--max-case-seconds`, so a slow case, such as the
eager PyTorch decoder on CPU, is timed over fewer calls; the JSON lists every block).
Reported: the median ms per call (± half the min–max range over blocks, as a percentage of
the median). A case that fails
prints `error: <reason>` in its cell; a backend that cannot be imported is marked as such.

Usage:
    python benchmarks/bench_backends.py                      # CPU, ~8 min on 2 cores
    python benchmarks/bench_backends.py --quick              # tiny sizes (smoke test)
    python benchmarks/bench_backends.py --device gpu --repeats 9 --json out.json
    python benchmarks/bench_backends.py --backends jax,torch,torch-compile \\
        --policies float32,mixed_bfloat16,mixed_float16

Needs only the backends it runs (TensorFlow is never imported for another backend) and runs
from a checkout without installing the package.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import _common as C  # first: puts the checkout on sys.path (imports no backend)

# Backend name → (KERAS_BACKEND, jit_compile, column label).
BACKENDS = {
    "tensorflow": ("tensorflow", True, "TF (XLA)"),
    "jax": ("jax", True, "JAX (jit)"),
    "torch": ("torch", False, "torch (eager)"),
    "torch-compile": ("torch", True, "torch.compile"),
}
POLICIES = ("float32", "mixed_bfloat16", "mixed_float16")

# Layer cases: name → (class name, constructor kwargs; "d" stands for the model size).
LAYER_CASES = {
    "Luong general global": ("LuongAttention", {"score_mode": "general"}),
    "Luong concat global": ("LuongAttention", {"score_mode": "concat", "units": "d"}),
    "Luong general local_monotonic": (
        "LuongAttention",
        {"score_mode": "general", "alignment": "local_monotonic", "window_radius": 10},
    ),
    "Luong general local_predictive": (
        "LuongAttention",
        {"score_mode": "general", "alignment": "local_predictive", "window_radius": 10},
    ),
    "Additive (Bahdanau)": ("AdditiveAttention", {"units": "d"}),
}
CASES = [f"{name}: {what}" for name in LAYER_CASES for what in ("train", "forward")] + [
    "Luong decoder: train",
    "Luong decoder: greedy decode",
]


@dataclass
class Sizes:
    batch: int = 64
    steps: int = 50  # T: query steps, target length and decoded tokens
    memory: int = 50  # S
    dim: int = 256  # d: query, memory, LSTM and attention sizes
    vocabulary: int = 1000  # V of the decoder

    @classmethod
    def quick(cls) -> Sizes:
        return cls(batch=4, steps=5, memory=6, dim=8, vocabulary=16)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backends", default="tensorflow,jax,torch", help=", ".join(BACKENDS))
    parser.add_argument("--policies", default="float32,mixed_bfloat16", help=", ".join(POLICIES))
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    parser.add_argument("--repeats", type=int, default=3, help="timed blocks per case")
    parser.add_argument("--block-seconds", type=float, default=0.3, help="length of a block")
    parser.add_argument(
        "--max-case-seconds", type=float, default=20, help="no new block after this long"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one short block")
    parser.add_argument("--cases", default=None, help="only the cases containing this text")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per backend")
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # backend name
    parser.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.backends = _names(args.backends, BACKENDS, "--backends")
    args.policies = _names(args.policies, POLICIES, "--policies")
    if args.quick:
        args.repeats, args.block_seconds = 1, 0.0
    return args


def _names(text: str, known, flag: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise SystemExit(f"{flag}: unknown {unknown or text!r}; choose from {', '.join(known)}")
    return names


def short_error(error: BaseException, limit: int = 90) -> str:
    """`error: <type>: <first line>`, shortened and safe inside a markdown table cell."""
    lines = str(error).strip().splitlines()
    text = f"{type(error).__name__}: {lines[0] if lines else ''}".replace("|", "/")
    return "error: " + (text if len(text) <= limit else text[: limit - 1] + "…")


# ---------------------------------------------------------------- the worker (one backend)
def backend_info(keras_backend: str, device: str) -> dict:
    """Versions, and the device the backend computes on; raises if `device` is not seen."""
    import keras

    info = {"keras": keras.__version__}
    if keras_backend == "tensorflow":
        import tensorflow as tf

        info["tensorflow"] = tf.__version__
        gpus = tf.config.list_physical_devices("GPU")
        info["device"] = f"GPU ×{len(gpus)}" if gpus else "CPU"
    elif keras_backend == "jax":
        import jax

        info["jax"] = jax.__version__
        info["device"] = str(jax.devices()[0])
        gpus = [d for d in jax.devices() if d.platform == "gpu"]
    else:
        import torch

        info["torch"] = torch.__version__
        gpus = [torch.cuda.get_device_name(0)] if torch.cuda.is_available() else []
        info["device"] = gpus[0] if gpus else "CPU"
    if device == "gpu" and not gpus:
        raise RuntimeError(f"no GPU visible to {keras_backend}")
    return info


def make_data(sizes: Sizes, seed: int = 0) -> dict:
    """Random inputs as NumPy arrays (converted to backend tensors by the caller)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    b, t, s, d, v = sizes.batch, sizes.steps, sizes.memory, sizes.dim, sizes.vocabulary
    lengths = rng.integers(max(1, s // 2), s + 1, size=b)
    lengths[0] = s
    return {
        "query": rng.standard_normal((b, t, d)).astype("float32"),
        "memory": rng.standard_normal((b, s, d)).astype("float32"),
        "memory_mask": np.arange(s)[None, :] < lengths[:, None],
        "layer_target": rng.standard_normal((b, t, d)).astype("float32"),
        "ids": rng.integers(1, v, size=(b, t)).astype("int32"),
        "labels": rng.integers(1, v, size=(b, t)).astype("int32"),
    }


def layer_model(case: str, sizes: Sizes):
    import keras

    import keras_attention

    class_name, kwargs = LAYER_CASES[case]
    kwargs = {k: sizes.dim if v == "d" else v for k, v in kwargs.items()}
    layer = getattr(keras_attention, class_name)(**kwargs)
    query = keras.Input((sizes.steps, sizes.dim), name="query")
    memory = keras.Input((sizes.memory, sizes.dim), name="memory")
    mask = keras.Input((sizes.memory,), dtype="bool", name="memory_mask")
    return keras.Model([query, memory, mask], layer(query, memory, value_mask=mask))


def decoder_model(sizes: Sizes):
    import keras

    from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell

    d, v = sizes.dim, sizes.vocabulary
    ids = keras.Input((sizes.steps,), dtype="int32", name="ids")
    memory = keras.Input((sizes.memory, d), name="memory")
    mask = keras.Input((sizes.memory,), dtype="bool", name="memory_mask")
    embedding = keras.layers.Embedding(v, d, name="embedding")
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(d), LuongAttention("general"), attention_units=d
    )
    projection = keras.layers.Dense(v, name="logits")
    states = AttentionRNN(cell, name="decoder")(embedding(ids), memory, memory_mask=mask)
    model = keras.Model([ids, memory, mask], projection(states))
    return model, (embedding, cell, projection)


def greedy_model(layers, sizes: Sizes):
    """A `keras.Model` whose call greedily decodes `sizes.steps` tokens over a memory."""
    import keras
    from keras import ops

    from keras_attention.decoding import greedy_search, make_step_fn

    embedding, cell, projection = layers
    end_id = 2
    bias = ops.convert_to_numpy(projection.bias).copy()
    bias[end_id] = -1e4  # never chosen: every row decodes all steps
    projection.bias.assign(bias)

    class GreedyDecoder(keras.Model):
        def __init__(self):
            super().__init__(name="greedy_decoder")
            self.embedding, self.cell, self.projection = embedding, cell, projection

        def call(self, inputs):
            memory, mask = inputs
            batch = ops.shape(memory)[0]
            step_fn = make_step_fn(self.cell, self.embedding, self.projection, memory, mask)
            result = greedy_search(
                step_fn, self.cell.get_initial_state(batch), batch_size=batch,
                start_id=1, end_id=end_id, max_length=sizes.steps,
            )  # fmt: skip
            return result["ids"]

    model = GreedyDecoder()
    model.built = True
    return model


def build_case(case: str, sizes: Sizes, data: dict, jit_compile: bool):
    """A zero-argument callable that runs one call of `case` and waits for its result."""
    import keras
    from keras import ops

    t = {k: ops.convert_to_tensor(v) for k, v in data.items()}
    name, what = case.split(": ")
    if name in LAYER_CASES:
        model = layer_model(name, sizes)
        model.compile(optimizer="sgd", loss="mse", jit_compile=jit_compile)
        x = [t["query"], t["memory"], t["memory_mask"]]
        if what == "train":
            return lambda: model.train_on_batch(x, t["layer_target"])
        return lambda: model.predict_on_batch(x)
    model, layers = decoder_model(sizes)
    x = [t["ids"], t["memory"], t["memory_mask"]]
    if what == "train":
        model.compile(
            optimizer="adam",
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=jit_compile,
        )
        return lambda: model.train_on_batch(x, t["labels"])
    model(x)  # builds the layers the decoder shares
    greedy = greedy_model(layers, sizes)
    greedy.compile(jit_compile=jit_compile)
    return lambda: greedy.predict_on_batch([t["memory"], t["memory_mask"]])


def time_case(run, repeats: int, block_seconds: float, max_seconds: float) -> dict:
    """Compile + warm up, calibrate the block, time up to `repeats` blocks: ms per call.

    A warm-up call longer than a block counts as the first block, and no new block starts
    after `max_seconds` (at least one is timed): slow cases cost a few calls, not minutes.
    """
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    start = time.perf_counter()
    run()
    once = time.perf_counter() - start
    deadline = time.perf_counter() + max_seconds
    inner = max(1, round(block_seconds / max(once, 1e-6)))
    per_call = [1000 * once] if once >= block_seconds else []
    while len(per_call) < repeats and (not per_call or time.perf_counter() < deadline):
        start = time.perf_counter()
        for _ in range(inner):
            run()
        per_call.append(1000 * (time.perf_counter() - start) / inner)
    return {"ms": C.median(per_call), "spread": C.spread(per_call), "first_call_s": first,
            "calls_per_block": inner, "blocks_ms": per_call}  # fmt: skip


def run_worker(args: argparse.Namespace) -> None:
    """Time every case × policy on this process's backend; results go to `--worker-out`."""
    keras_backend, jit_compile, _ = BACKENDS[args.worker]
    out = Path(args.worker_out)
    result = {"backend": args.worker, "results": {}}

    def save():
        out.write_text(json.dumps(result, indent=1), encoding="utf-8")

    try:
        result["info"] = backend_info(keras_backend, args.device)
    except ImportError as error:
        result["unavailable"] = f"not installed ({error.name or error})"
        return save()
    except Exception as error:  # e.g. no GPU visible
        result["unavailable"] = short_error(error)
        return save()
    import keras

    sizes = Sizes.quick() if args.quick else Sizes()
    result["sizes"] = asdict(sizes)
    data = make_data(sizes)
    for policy in args.policies:
        for case in selected_cases(args):
            key = f"{case} | {policy}"
            print(f"[{args.worker}] {key}", file=sys.stderr, flush=True)
            keras.config.set_dtype_policy(policy)
            keras.utils.set_random_seed(0)
            try:
                run = build_case(case, sizes, data, jit_compile)
                timing = time_case(run, args.repeats, args.block_seconds, args.max_case_seconds)
                result["results"][key] = timing
            except Exception as error:
                result["results"][key] = {"error": short_error(error)}
            finally:
                keras.config.set_dtype_policy("float32")
                keras.backend.clear_session()
            save()
    save()


def selected_cases(args: argparse.Namespace) -> list[str]:
    return [c for c in CASES if args.cases is None or args.cases.lower() in c.lower()]


# ---------------------------------------------------------------- the parent
def backend_env(name: str, device: str) -> dict:
    env = {**os.environ, "KERAS_BACKEND": BACKENDS[name][0], "TF_CPP_MIN_LOG_LEVEL": "2"}
    if device == "cpu":  # hide GPUs from every backend
        env.update({"CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"})
    return env


def run_backend(name: str, args: argparse.Namespace, directory: Path) -> dict:
    """Run the worker of backend `name` in a subprocess; its (possibly partial) results."""
    out = directory / f"{name}.json"
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", name,
               "--worker-out", str(out), "--device", args.device,
               "--repeats", str(args.repeats), "--block-seconds", str(args.block_seconds),
               "--max-case-seconds", str(args.max_case_seconds),
               "--policies", ",".join(args.policies)]  # fmt: skip
    command += ["--quick"] if args.quick else []
    command += ["--cases", args.cases] if args.cases else []
    print(f"== {name}", file=sys.stderr, flush=True)
    problem = None
    try:
        run = subprocess.run(
            command, env=backend_env(name, args.device), timeout=args.timeout,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        if run.returncode != 0:
            tail = run.stderr.strip().splitlines()[-1:] or [""]
            problem = f"error: worker exited with code {run.returncode}: {tail[0][:60]}"
    except subprocess.TimeoutExpired:
        problem = f"error: timed out after {args.timeout:.0f} s"
    result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"results": {}}
    result["problem"] = problem
    return result


def cell(result: dict, key: str) -> str:
    if result.get("unavailable"):
        return result["unavailable"]
    entry = result["results"].get(key)
    if entry is None:
        return result.get("problem") or "error: not run"
    if "error" in entry:
        return entry["error"]
    return f"{entry['ms']:.3g} ms {entry['spread']}".replace(" n/a", "")


def report(args: argparse.Namespace, results: dict) -> str:
    header = ["case", "policy"] + [BACKENDS[name][2] for name in args.backends]
    rows = [
        [case, policy] + [cell(results[name], f"{case} | {policy}") for name in args.backends]
        for case in selected_cases(args)
        for policy in args.policies
    ]
    lines = [
        f"date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"code: {C.code_version()}",
        f"machine: {C.cpu_model()}, {os.cpu_count()} cores; GPU: {C.gpu_model() or 'none'}; "
        f"--device {args.device}; python {sys.version.split()[0]}",
        f"sizes: {json.dumps(asdict(Sizes.quick() if args.quick else Sizes()))}; "
        f"ms per call, median of up to {args.repeats} blocks (± half their range)",
    ]
    for name in args.backends:
        info = results[name].get("info") or {}
        described = ", ".join(f"{k} {v}" for k, v in info.items()) or results[name].get(
            "unavailable", "no information"
        )
        lines.append(f"{BACKENDS[name][2]}: {described}")
    return "\n".join(lines) + "\n\n" + C.markdown_table(header, rows)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        return run_worker(args)
    with tempfile.TemporaryDirectory() as directory:
        results = {name: run_backend(name, args, Path(directory)) for name in args.backends}
    print(report(args, results))
    C.write_json(args.json, {"args": vars(args), "results": results})


if __name__ == "__main__":
    main()
