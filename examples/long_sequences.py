"""Local vs global attention on long inputs: accuracy, training time and memory side by side.

Luong et al. (2015, §3.2) proposed local attention for long sources: each query looks at a
window of 2D+1 positions instead of all S, so a step costs O(2D+1) rather than O(S). This
example trains the same small model with `LuongAttention(alignment="global")`,
`"local_monotonic"` and `"local_predictive"` on sequences of hundreds to thousands of steps and
puts accuracy, time per training step and peak memory side by side.

The task ("delayed copy", sequence labelling): the input is a sequence of L random tokens over
an alphabet of 16; the label at step t is the input token `lag` = 4 steps earlier (`x_{t-4}`;
the first 4 steps have no label and are not scored). Each output depends on one nearby input
position, which is where local attention applies: `local_monotonic` centres its window on the
query's own step t, and `t - 4` is inside it for any window radius D >= 4. The data come from a
NumPy seed; nothing is downloaded.

The model (identical but for `alignment`): token embeddings (32) concatenated with fixed
sinusoidal position features (32; content alone cannot say *where* `t - 4` is) →
`LuongAttention(score_mode="general", attention_units=64)` used as self-attention `[x, x]`
(query positions = steps; the output is Luong's `h̃_t = tanh(W_c [x_t; c_t])`) → `Dense(17)`
(the 16 tokens and "no label").
Every length gets the same number of tokens per step (`--tokens-per-step`, so the batch is
`tokens / L`), the same steps and the same optimizer; training uses `jit_compile=True` (XLA
halves local attention's step time on CPU, BENCHMARKS.md §2; `--no-jit` turns it off).

Measured per configuration, each in a fresh subprocess (`--worker`) so that no configuration's
allocations hide or inflate another's:

- accuracy: token accuracy on fresh test sequences of the same length after training;
- ms/step: the median over epochs 2… of (epoch time / steps); epoch 1 includes the tracing
  and XLA compilation and is reported separately (`first epoch s`);
- peak MiB: as `benchmarks/bench_local.py` measures it. The worker first trains a copy of
  the model on a 16-step input for one step, which starts the runtime (thread pools, oneDNN,
  the XLA compiler: one-off costs of about 250 MiB that would otherwise swamp the figure).
  It then reads its resident set size (VmRSS in /proc/self/status) as the baseline, trains,
  and reports peak = the high-water mark of the resident set (VmHWM, the figure
  `getrusage(RUSAGE_SELF).ru_maxrss` also gives) − baseline: what training needs at its worst
  moment (activations kept for the backward pass, gradients, temporaries), plus tracing and
  compiling this model (tens of MiB, the floor at the smallest length). It cannot be measured
  after a warm-up of the model itself: TensorFlow keeps most of a step's freed memory, so
  the baseline would already hold it. For `--in-process` runs the high-water mark is reset
  first (writing 5 to /proc/self/clear_refs); where that is not allowed and an earlier
  configuration's peak was never exceeded, the figure is an upper bound, printed with "≤".

Expected: global attention's time and memory grow with L² per sequence (with the tokens per
step fixed: linearly in L per step), local attention's stay flat. local_monotonic learns the
task at every length. Global attention starts out spreading each query's weight over all L
positions, so the one that matters gets a 1/L share of the gradient: within the budget it
learns the task at L = 256, is on the edge at L = 1024 (three times the steps are enough
there) and stays at chance beyond. local_predictive must learn the window's centre
`p_t = S·sigmoid(…)` from the query itself and only receives gradient when the right position
already lies inside its Gaussian-weighted window: it stays at chance here. Where the alignment
is known, local_monotonic is the tool.

Run it (about four minutes on 2 CPU cores)::

    python examples/long_sequences.py
    python examples/long_sequences.py --smoke                 # tiny, in-process: the tests
    python examples/long_sequences.py --lengths 1024 4096 --alignments global local_monotonic

`main(argv)` runs it, writes `results.json` to `--output-dir` and returns the table and the
figures as a dict.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from keras_attention import LuongAttention  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import (  # noqa: E402
    add_output_dir,
    add_seed,
    add_smoke,
    apply_smoke,
    make_parser,
    output_folder,
)

ALIGNMENTS = ("global", "local_monotonic", "local_predictive")
NO_LABEL = 0  # tokens are 1 … alphabet; the first `lag` steps get label 0 and weight 0

DEFAULTS = {
    "lengths": [256, 1024, 2048, 4096],
    "alignments": list(ALIGNMENTS),
    "alphabet": 16,
    "lag": 4,
    "window_radius": 8,
    "tokens_per_step": 8192,
    "steps_per_epoch": 30,
    "epochs": 5,
    "test_sequences_tokens": 16384,
    "embedding_dim": 32,
    "position_dim": 32,
    "attention_units": 64,
    "learning_rate": 1e-2,
}
SMOKE = {
    "lengths": [32, 64],
    "window_radius": 4,
    "tokens_per_step": 256,
    "steps_per_epoch": 2,
    "epochs": 2,
    "test_sequences_tokens": 256,
    "embedding_dim": 8,
    "position_dim": 8,
    "attention_units": 8,
}


# --------------------------------------------------------------------------- data
def make_data(
    count: int, length: int, alphabet: int, lag: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`count` sequences of `length` random tokens in `1 … alphabet` and their labels.

    Returns `(tokens, labels, weights)`, each `[count, length]`: `labels[:, t] = tokens[:, t -
    lag]` for `t >= lag`, `NO_LABEL` before; `weights` is 1 where there is a label, else 0.
    """
    rng = np.random.default_rng(seed)
    tokens = rng.integers(1, alphabet + 1, size=(count, length)).astype("int32")
    labels = np.full_like(tokens, NO_LABEL)
    labels[:, lag:] = tokens[:, : length - lag]
    weights = np.zeros((count, length), "float32")
    weights[:, lag:] = 1.0
    return tokens, labels, weights


# --------------------------------------------------------------------------- model
@keras.saving.register_keras_serializable(package="keras_attention_examples")
class SinusoidalPositions(keras.layers.Layer):
    """Fixed position features of each step: `[sin(t ω_k); cos(t ω_k)]`, `ω_k =
    max_wavelength^(−2k/dim)` (Vaswani et al., 2017); `[B, L] → [B, L, dim]`."""

    def __init__(self, dim: int, max_wavelength: float = 10000.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if dim < 2 or dim % 2:
            raise ValueError(f"`dim` must be an even integer >= 2. Received: dim={dim}")
        self.dim, self.max_wavelength = int(dim), float(max_wavelength)

    def call(self, tokens):
        shape = ops.shape(tokens)
        positions = ops.cast(ops.arange(shape[1]), "float32")
        exponents = ops.cast(ops.arange(0, self.dim, 2), "float32") / self.dim
        frequencies = ops.power(self.max_wavelength, -exponents)
        angles = positions[:, None] * frequencies[None, :]
        features = ops.concatenate([ops.sin(angles), ops.cos(angles)], axis=-1)
        return ops.broadcast_to(features[None], (shape[0], shape[1], self.dim))

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape), self.dim)

    def get_config(self) -> dict:
        return {**super().get_config(), "dim": self.dim, "max_wavelength": self.max_wavelength}


def build_model(config: dict, alignment: str, length: int) -> keras.Model:
    """Embeddings + position features → Luong self-attention → per-step classifier."""
    tokens = keras.Input((length,), dtype="int32", name="tokens")
    embedded = keras.layers.Embedding(config["alphabet"] + 1, config["embedding_dim"])(tokens)
    positions = SinusoidalPositions(config["position_dim"])(tokens)
    features = keras.layers.Concatenate()([embedded, positions])
    attended = LuongAttention(
        score_mode="general",
        alignment=alignment,
        window_radius=config["window_radius"],
        attention_units=config["attention_units"],
        name="attention",
    )([features, features])
    logits = keras.layers.Dense(config["alphabet"] + 1, name="classifier")(attended)
    return keras.Model(tokens, logits, name=f"delayed_copy_{alignment}")


# --------------------------------------------------------------------------- one configuration
def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0), so that an earlier configuration run in
    this process does not count; False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="utf-8") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_kib() -> int:
    hwm = _status_kib("VmHWM")
    if hwm is not None:
        return hwm
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


class _EpochTimer(keras.callbacks.Callback):
    def __init__(self) -> None:
        super().__init__()
        self.seconds: list[float] = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)


def _compiled(model: keras.Model, config: dict, jit: bool) -> keras.Model:
    model.compile(
        keras.optimizers.Adam(config["learning_rate"], clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit,
    )
    return model


def run_config(config: dict, alignment: str, length: int, seed: int, jit: bool) -> dict:
    """Train and evaluate one (alignment, length); return accuracy, time and memory."""
    batch = max(1, config["tokens_per_step"] // length)
    steps = config["steps_per_epoch"]
    tokens, labels, weights = make_data(
        batch * steps, length, config["alphabet"], config["lag"], seed=seed + length
    )
    test_count = max(1, config["test_sequences_tokens"] // length)
    test_tokens, test_labels, test_weights = make_data(
        test_count, length, config["alphabet"], config["lag"], seed=seed + length + 1
    )
    # Start the runtime (thread pools, oneDNN, the XLA compiler) on a tiny copy of the model
    # first, so that the memory figure does not count these one-off costs.
    warm_tokens, warm_labels, _ = make_data(2, 16, config["alphabet"], config["lag"], seed=seed)
    _compiled(build_model(config, alignment, 16), config, jit).fit(
        warm_tokens, warm_labels, batch_size=2, epochs=1, verbose=0
    )
    keras.utils.set_random_seed(seed)  # the same weights and order with or without a warm-up
    model = _compiled(build_model(config, alignment, length), config, jit)
    timer = _EpochTimer()
    fit = {"batch_size": batch, "shuffle": True, "verbose": 0, "callbacks": [timer]}
    _reset_peak()
    baseline = _status_kib("VmRSS") or 0
    peak_before = _peak_kib()
    history = model.fit(tokens, labels, sample_weight=weights, epochs=config["epochs"], **fit)
    peak_after = _peak_kib()
    peak = max(peak_after - baseline, 0)  # (in-process, the RSS may end a little lower)
    step_seconds = [s / steps for s in timer.seconds[1:]] or [timer.seconds[0] / steps]

    predicted = np.argmax(model.predict(test_tokens, batch_size=batch, verbose=0), axis=-1)
    scored = test_weights > 0
    accuracy = float((predicted == test_labels)[scored].mean())
    return {
        "alignment": alignment,
        "length": length,
        "batch": batch,
        "steps": steps * config["epochs"],
        "accuracy": accuracy,
        "final_loss": float(history.history["loss"][-1]),
        "ms_per_step": 1e3 * statistics.median(step_seconds),
        "ms_per_step_epochs": [1e3 * s for s in step_seconds],
        "first_epoch_s": timer.seconds[0],
        "peak_mib": peak / 1024,
        "peak_is_upper_bound": peak_after <= peak_before,
        "parameters": model.count_params(),
    }


def run_worker(config: dict, alignment: str, length: int, seed: int, jit: bool) -> dict:
    """`run_config` in a fresh Python process (this file with `--worker`)."""
    job = {"config": config, "alignment": alignment, "length": length, "seed": seed, "jit": jit}
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(job)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"worker {alignment} L={length} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- report
HEADER = [
    "L",
    "alignment",
    "batch",
    "accuracy",
    "ms/step",
    "speed-up vs global",
    "first epoch s",
    "peak MiB",
    "global mem / this",
]


def table_rows(results: list[dict]) -> list[list[str]]:
    """One row per configuration; ratios against global at the same length when it ran."""
    glob = {r["length"]: r for r in results if r["alignment"] == "global"}
    rows = []
    for r in results:
        g = glob.get(r["length"])
        if r["alignment"] == "global":
            speed = memory = "(ref)"
        elif g is None:
            speed = memory = "—"
        else:
            speed = f"{g['ms_per_step'] / r['ms_per_step']:.1f}×"
            # Ratios of figures under 1 MiB are noise (the smoke sizes).
            tiny = min(g["peak_mib"], r["peak_mib"]) < 1.0
            memory = "—" if tiny else f"{g['peak_mib'] / r['peak_mib']:.1f}×"
        mib = f"{r['peak_mib']:.0f}"
        rows.append(
            [
                str(r["length"]),
                r["alignment"],
                str(r["batch"]),
                f"{100 * r['accuracy']:.1f}%",
                f"{r['ms_per_step']:.1f}",
                speed,
                f"{r['first_epoch_s']:.1f}",
                "≤" + mib if r["peak_is_upper_bound"] else mib,
                memory,
            ]
        )
    return rows


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if i > 1 else "---" for i in range(len(header))) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__)
    for key, value in DEFAULTS.items():
        flag = f"--{key.replace('_', '-')}"
        if key == "alignments":
            parser.add_argument(flag, nargs="+", choices=ALIGNMENTS, default=value)
        elif isinstance(value, list):
            parser.add_argument(flag, nargs="+", type=int, default=value)
        else:
            parser.add_argument(flag, type=type(value), default=value)
    parser.add_argument("--no-jit", dest="jit", action="store_false", help="Train without XLA.")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="Run every configuration in this process (faster start; memory figures then "
        "include what earlier configurations left allocated).",
    )
    add_output_dir(parser, "Where to write results.json.")
    add_smoke(parser, "Tiny sizes, in-process, no XLA (tests).")
    add_seed(parser, "Seed of data and weights.")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.smoke:
        apply_smoke(args, SMOKE)
        args.in_process, args.jit = True, False  # compiling costs more than the steps
    if args.window_radius < args.lag:
        parser.error(f"--window-radius must be >= --lag ({args.lag}) for the local window to "
                     f"reach x[t - lag]. Received: {args.window_radius}")  # fmt: skip
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every (length, alignment); print and return the side-by-side table."""
    args = _parse(argv)
    if args.worker is not None:
        job = json.loads(args.worker)
        print(json.dumps(run_config(**job)))
        return {}
    config = {key: getattr(args, key) for key in DEFAULTS}
    output = output_folder(args, "long_sequences_")
    started = time.perf_counter()
    print(
        f"# delayed copy (lag {config['lag']}), LuongAttention(general) self-attention, "
        f"D={config['window_radius']}, {config['tokens_per_step']} tokens/step, "
        f"{config['epochs']}×{config['steps_per_epoch']} steps, XLA={'yes' if args.jit else 'no'}, "
        f"{'in-process' if args.in_process else 'one subprocess per configuration'}",
        flush=True,
    )
    run = run_config if args.in_process else run_worker
    results = []
    for length in config["lengths"]:
        for alignment in config["alignments"]:
            result = run(config, alignment, length, args.seed, args.jit)
            results.append(result)
            print(
                f"#   L={length:>5} {alignment:<16} accuracy {result['accuracy']:6.1%}  "
                f"{result['ms_per_step']:8.1f} ms/step  peak {result['peak_mib']:7.1f} MiB",
                flush=True,
            )
    table = markdown_table(HEADER, table_rows(results))
    wall = time.perf_counter() - started
    print()
    print(table)
    print(
        "\naccuracy: test tokens with a label; ms/step: median over epochs 2…; peak MiB: VmHWM "
        "after training − VmRSS before it (tracing and compiling the model included)"
    )
    print(f"wall time {wall:.0f} s")
    summary = {
        "config": {**config, "seed": args.seed, "jit_compile": args.jit,
                   "in_process": args.in_process, "smoke": args.smoke},
        "results": results,
        "table": table,
        "wall_seconds": wall,
    }  # fmt: skip
    path = output / "results.json"
    path.write_text(json.dumps(summary, indent=1))
    summary["results_path"] = str(path)
    return summary


if __name__ == "__main__":
    main()
