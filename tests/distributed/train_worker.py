"""Train a small attention `Seq2Seq` for a few steps on one or two devices; print the results.

Run as a subprocess by `test_distributed.py`: the devices must be configured before TensorFlow
or JAX initialise, which a running test process has already done. The Keras backend comes from
`KERAS_BACKEND`; for JAX the caller sets `XLA_FLAGS=--xla_force_host_platform_device_count=2`.

    python tests/distributed/train_worker.py --devices 2 --attention luong bahdanau \
        --weights-dir weights/ --out result.json

`--devices 1` trains on the default device with no distribution; `--devices 2` splits the CPU
into two devices and trains data-parallel: `tf.distribute.MirroredStrategy(["/cpu:0",
"/cpu:1"])` on TensorFlow, `keras.distribution.DataParallel` on JAX. The initial weights of
each variant are read from `--weights-dir` when saved there, otherwise written to it, so two
runs start from the same weights. The data and its order are fixed. The results (per variant:
per-step losses, final weights) go to `--out` as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, not an install
BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")

GLOBAL_BATCH = 8
STEPS = 5
SOURCE_VOCABULARY, TARGET_VOCABULARY = 13, 11
SOURCE_LENGTH, TARGET_LENGTH = 9, 6

# Model variants: Seq2Seq keyword arguments (dropout 0, so runs are deterministic).
VARIANTS = {
    "luong": {"attention": "luong", "score_mode": "general", "alignment": "global"},
    "bahdanau": {"attention": "bahdanau", "score_units": 12},
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, choices=(1, 2), required=True)
    parser.add_argument("--attention", nargs="+", choices=sorted(VARIANTS), required=True)
    parser.add_argument(
        "--weights-dir", required=True, help="initial weights (<variant>.npz), read or written"
    )
    parser.add_argument("--out", required=True, help="where to write the result (JSON)")
    return parser.parse_args(argv)


def split_tensorflow_cpu(devices: int) -> None:
    """Split the physical CPU into `devices` logical devices (before TensorFlow initialises)."""
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(devices)]
    )


# Devices are configured from the command line before TensorFlow initialises (keras imports
# it). Imported as a module (pytest's doctest collection), the script does nothing.
if __name__ == "__main__":
    ARGS = parse_args()
    if BACKEND == "tensorflow" and ARGS.devices == 2:
        split_tensorflow_cpu(2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention.models import Seq2Seq  # noqa: E402


def make_data():
    """Fixed token ids with padding (id 0) on both sides; returns `(inputs, labels)`.

    Target padding is the same in each half of every batch (lengths repeat with period 4), so
    the two replicas of a batch hold the same number of valid target tokens. Then the mean of
    the per-replica mean losses that `MirroredStrategy` optimises equals the global mean
    (with unequal halves it does not, and its losses differ from one device's by ~1e-2;
    JAX's `DataParallel` computes the global mean either way).
    """
    rng = np.random.default_rng(1234)
    n = GLOBAL_BATCH * STEPS
    source = rng.integers(4, SOURCE_VOCABULARY, size=(n, SOURCE_LENGTH)).astype("int32")
    source_lengths = rng.integers(3, SOURCE_LENGTH + 1, size=n)
    source[np.arange(SOURCE_LENGTH)[None, :] >= source_lengths[:, None]] = 0
    target_lengths = np.resize([TARGET_LENGTH, 4, 5, 3], n)
    labels = rng.integers(4, TARGET_VOCABULARY, size=(n, TARGET_LENGTH)).astype("int32")
    labels[np.arange(n), target_lengths - 1] = 3  # the end token
    labels[np.arange(TARGET_LENGTH)[None, :] >= target_lengths[:, None]] = 0
    target_in = np.concatenate([np.full((n, 1), 2, "int32"), labels[:, :-1]], axis=1)
    target_in[labels == 0] = 0
    return {"source_ids": source, "target_ids": target_in}, labels


def build_model(attention: str, inputs: dict):
    """A small Seq2Seq, built by calling it once on the first batch."""
    model = Seq2Seq(
        source_vocabulary_size=SOURCE_VOCABULARY,
        target_vocabulary_size=TARGET_VOCABULARY,
        embedding_dim=8,
        units=16,
        encoder_units=8,
        dropout=0.0,
        **VARIANTS[attention],
    )
    model({k: v[:GLOBAL_BATCH] for k, v in inputs.items()})
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=0.5),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def load_or_save_weights(model, path: Path) -> None:
    if path.exists():
        with np.load(path) as saved:
            model.set_weights([saved[f"w{i}"] for i in range(len(saved.files))])
    else:
        np.savez(path, **{f"w{i}": w for i, w in enumerate(model.get_weights())})


class StepLosses(keras.callbacks.Callback):
    """Per-step losses, recovered from the running epoch mean that `fit` reports."""

    def __init__(self):
        super().__init__()
        self.means = []

    def on_train_batch_end(self, batch, logs=None):
        self.means.append(float(logs["loss"]))

    def losses(self) -> list:
        sums = [(i + 1) * m for i, m in enumerate(self.means)]
        return [sums[0]] + [b - a for a, b in zip(sums, sums[1:])]


def distribution_scope(devices: int):
    """`(scope, device names)`: the distribution for `devices` on this backend.

    `scope()` gives a fresh context manager to build a model in (a `tf.distribute` strategy's
    scope; a no-op elsewhere: the JAX distribution is set globally here).
    """
    if devices == 1:
        return contextlib.nullcontext, ["default"]
    if BACKEND == "tensorflow":
        import tensorflow as tf

        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        return strategy.scope, list(strategy.extended.worker_devices)
    if BACKEND == "jax":
        import jax

        found = jax.devices()
        if len(found) != devices:
            raise SystemExit(f"expected {devices} JAX devices (set XLA_FLAGS), found {found}")
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=found))
        return contextlib.nullcontext, [str(d) for d in found]
    raise SystemExit(f"--devices {devices} is not supported on KERAS_BACKEND={BACKEND}")


def train(attention: str, scope, weights: Path) -> dict:
    """Build (inside `scope`), load or save the initial weights, fit; the variant's result."""
    keras.utils.set_random_seed(0)
    inputs, labels = make_data()
    with scope():
        model = build_model(attention, inputs)
    load_or_save_weights(model, weights)
    initial = [np.asarray(w) for w in model.get_weights()]
    recorder = StepLosses()
    model.fit(
        inputs, labels, batch_size=GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0,
        callbacks=[recorder],
    )  # fmt: skip
    final = model.get_weights()
    evaluated = model.evaluate(inputs, labels, batch_size=GLOBAL_BATCH, verbose=0)
    return {
        "losses": recorder.losses(),
        "evaluate_loss": float(evaluated),
        "weights": [np.asarray(w, "float64").ravel().tolist() for w in final],
        "largest_update": max(float(np.max(np.abs(w - w0))) for w, w0 in zip(final, initial)),
    }


def main(args: argparse.Namespace) -> None:
    scope, devices = distribution_scope(args.devices)
    weights_dir = Path(args.weights_dir)
    weights_dir.mkdir(parents=True, exist_ok=True)
    result = {"backend": BACKEND, "devices": devices}
    for attention in args.attention:
        result[attention] = train(attention, scope, weights_dir / f"{attention}.npz")
    Path(args.out).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(ARGS)
