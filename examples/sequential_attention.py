"""Attention pooling in a `keras.Sequential` model: recall a token seen far back.

The task: each sequence holds 20-60 random tokens (padded with 0 to length 60) with one marker
token somewhere in its first six steps. The label is the token right after the marker, so the
answer depends on a single position 14 to 59 steps before the end of the sequence. The data are
generated from a NumPy seed; nothing is downloaded.

Two models are trained on the same data for the same number of epochs:

- with attention: `Embedding(mask_zero=True) -> LSTM(return_sequences=True) ->
  LuongAttention(score_mode="general") -> Dense(softmax)`. Given one sequence, `LuongAttention`
  pools it: the query is the LSTM output at the last valid (non-padding) step, and the weights
  can go straight back to the step after the marker (or the one after it: both LSTM states
  hold the answer);
- without attention: `Embedding(mask_zero=True) -> LSTM() -> Dense(softmax)` (the last state),
  which has to carry the token through every later step. Given many more epochs an LSTM can
  learn this too; in the same short budget it stays near chance.

The script prints a table of test accuracy and training time of both models, saves the attention
model to a `.keras` file and checks that the model reloaded with `safe_mode=True` predicts exactly
the same, and prints the attention weights of one test sequence around its marker (calling the
trained layers directly with `return_attention_scores=True`), with how often the largest weight
falls on one of the two steps after the marker, and draws the pooled weights of a few test
sequences with `keras_attention.plot.plot_alignment` (one strip per sequence, its tokens on the
x axis, the marker in red and the answer in bold) to `attention_weights.png` in the output
directory (needs matplotlib).

Run it (about a minute on 2 CPU cores; `make demo` runs the default)::

    python examples/sequential_attention.py
    python examples/sequential_attention.py --smoke      # tiny and fast, what the tests run
    python examples/sequential_attention.py --epochs 4 --samples 3000 --output-dir out/

`main(argv)` runs it and returns the metrics as a dict.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention import LuongAttention  # noqa: E402
from keras_attention.plot import plot_alignment  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import (  # noqa: E402
    add_output_dir,
    add_seed,
    add_smoke,
    make_parser,
    output_folder,
    positive_int,
    settings,
)

PAD = 0
MARKER = 1
FIRST_TOKEN = 2  # ordinary tokens are FIRST_TOKEN ... FIRST_TOKEN + n_classes - 1

DEFAULTS = {
    "epochs": 8,
    "batch_size": 64,
    "samples": 6000,
    "n_classes": 20,
    "min_length": 20,
    "max_length": 60,
    "max_marker_position": 5,
    "embedding_dim": 32,
    "units": 64,
}
SMOKE = {
    "epochs": 1,
    "batch_size": 32,
    "samples": 256,
    "n_classes": 8,
    "min_length": 8,
    "max_length": 16,
    "max_marker_position": 3,
    "embedding_dim": 8,
    "units": 8,
}


def make_data(
    samples: int,
    n_classes: int,
    min_length: int,
    max_length: int,
    max_marker_position: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Padded token sequences `[N, max_length]`, labels `[N]` and marker positions `[N]`.

    Row `i` has a length drawn from `[min_length, max_length]`, ordinary tokens everywhere, a
    marker at a position drawn from `[0, max_marker_position]`; its label is the class of the
    token right after the marker.
    """
    if not 0 <= max_marker_position < min_length - 1 or min_length > max_length:
        raise ValueError(
            "Need 0 <= max_marker_position < min_length - 1 and min_length <= max_length. "
            f"Received: max_marker_position={max_marker_position}, min_length={min_length}, "
            f"max_length={max_length}"
        )
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_length, max_length + 1, size=samples)
    markers = rng.integers(0, max_marker_position + 1, size=samples)
    tokens = rng.integers(FIRST_TOKEN, FIRST_TOKEN + n_classes, size=(samples, max_length))
    steps = np.arange(max_length)
    tokens = np.where(steps < lengths[:, None], tokens, PAD)
    rows = np.arange(samples)
    tokens[rows, markers] = MARKER
    labels = tokens[rows, markers + 1] - FIRST_TOKEN
    return tokens.astype("int32"), labels.astype("int32"), markers.astype("int32")


def build_model(vocab: int, n_classes: int, embedding_dim: int, units: int, attention: bool):
    """The Sequential model of the task, with or without attention pooling."""
    if attention:
        recurrent = [
            keras.layers.LSTM(units, return_sequences=True, name="lstm"),
            LuongAttention(score_mode="general", name="attention"),
        ]
    else:
        recurrent = [keras.layers.LSTM(units, name="lstm")]
    model = keras.Sequential(
        [
            keras.Input((None,), dtype="int32"),
            keras.layers.Embedding(vocab, embedding_dim, mask_zero=True, name="embedding"),
            *recurrent,
            keras.layers.Dense(n_classes, activation="softmax", name="classifier"),
        ],
        name="with_attention" if attention else "without_attention",
    )
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    return model


def attend(model: keras.Model, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pooled context `[B, d]` and attention weights `[B, S]` of `model` on `tokens`.

    Calls the layers of the trained model directly (the Sequential model only returns class
    probabilities), passing the `mask_zero` mask by hand.
    """
    embedding = model.get_layer("embedding")
    mask = embedding.compute_mask(tokens)
    states = model.get_layer("lstm")(embedding(tokens), mask=mask)
    context, weights = model.get_layer("attention")(states, mask=mask, return_attention_scores=True)
    return keras.ops.convert_to_numpy(context), keras.ops.convert_to_numpy(weights)


def attention_figure(
    tokens: np.ndarray,
    weights: np.ndarray,
    markers: np.ndarray,
    labels: np.ndarray,
    rows: Iterable[int],
) -> Any:
    """A figure of the pooled attention weights of `tokens[rows]`: one strip per sequence
    (padding cut off, steps aligned across strips), its tokens on the x axis with the marker
    in red and the answer (the token after it) in bold."""
    from matplotlib.figure import Figure

    rows = list(rows)
    longest = int(max(np.sum(tokens[row] != PAD) for row in rows))
    width = min(max(8.0, 0.22 * longest + 2.0), 16.0)
    figure = Figure(figsize=(width, 1.7 * len(rows)), layout="constrained")
    axes = np.atleast_1d(figure.subplots(len(rows), 1))
    for ax, row in zip(axes, rows):
        length, marker = int(np.sum(tokens[row] != PAD)), int(markers[row])
        names = ["MARK" if t == MARKER else str(t) for t in tokens[row, :length]]
        plot_alignment(
            weights[row : row + 1, :length],
            names,
            [f"#{row}"],
            ax=ax,
            title=f"test sequence {row}: marker at step {marker}, answer "
            f"{labels[row] + FIRST_TOKEN} at step {marker + 1}, query at step {length - 1}",
        )
        ax.set_xlim(-0.5, longest - 0.5)  # the same step under the same x in every strip
        ax.set_xlabel("")
        ax.set_ylabel("")
        ticks = ax.get_xticklabels()
        ticks[marker].set_color("tab:red")
        ticks[marker + 1].set_fontweight("bold")
    axes[-1].set_xlabel("token at each step (padding cut off)")
    return figure


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__)
    parser.add_argument(
        "--epochs", type=positive_int, help=f"Epochs per model. Default {DEFAULTS['epochs']}."
    )
    parser.add_argument(
        "--batch-size", type=positive_int, help=f"Batch size. Default {DEFAULTS['batch_size']}."
    )
    parser.add_argument(
        "--samples",
        type=positive_int,
        help=f"Training sequences (the test set is a fifth of it). Default {DEFAULTS['samples']}.",
    )
    add_output_dir(
        parser, "Where the .keras file and the PNG are written. Default: a new temporary directory."
    )
    add_smoke(parser, "Tiny sizes and 1 epoch: a quick check that it runs.")
    add_seed(parser, "Seed of data and weights.")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train both models, compare them, round-trip the attention model; return the metrics."""
    wall_start = time.perf_counter()
    args = _parse(argv)
    config = settings(args, DEFAULTS, SMOKE, ("epochs", "batch_size", "samples"))
    task = {k: config[k] for k in ("n_classes", "min_length", "max_length", "max_marker_position")}
    x_train, y_train, _ = make_data(config["samples"], seed=args.seed, **task)
    test_samples = max(config["samples"] // 5, 64)
    x_test, y_test, marker_test = make_data(test_samples, seed=args.seed + 1, **task)

    results: dict[str, Any] = {"config": config}
    models = {}
    for attention in (True, False):
        key = "attention" if attention else "no_attention"
        models[key], results[key] = _train(config, args.seed, attention, (x_train, y_train))
        _, accuracy = models[key].evaluate(x_test, y_test, batch_size=256, verbose=0)
        results[key] = {"test_accuracy": float(accuracy), **results[key]}
    _print_comparison(config, results)

    model = models["attention"]
    output_dir = str(output_folder(args, "sequential_attention_"))
    results["saved_model"], before = _round_trip(model, x_test, output_dir)
    # Where does the attention look? Call the trained layers directly to get the weights.
    results["attention_weights"], weights = _attention_weights(
        model, x_test, y_test, marker_test, before
    )

    plot_path = os.path.join(output_dir, "attention_weights.png")
    shown = range(min(4, len(x_test)))
    attention_figure(x_test, weights, marker_test, y_test, shown).savefig(plot_path, dpi=100)
    results["attention_plot"] = plot_path
    print(f"Pooled attention weights of {len(shown)} test sequences drawn to {plot_path}")

    results["wall_seconds"] = time.perf_counter() - wall_start
    print(f"\nTotal wall time {results['wall_seconds']:.1f}s")
    return results


def _train(config: dict, seed: int, attention: bool, train: tuple) -> tuple:
    """`(model, {"train_seconds"})`: a model with or without attention, trained from `seed`."""
    keras.utils.set_random_seed(seed)
    vocab = FIRST_TOKEN + config["n_classes"]
    model = build_model(
        vocab, config["n_classes"], config["embedding_dim"], config["units"], attention
    )
    start = time.perf_counter()
    model.fit(*train, epochs=config["epochs"], batch_size=config["batch_size"], verbose=0)
    return model, {"train_seconds": time.perf_counter() - start}


def _print_comparison(config: dict, results: dict) -> None:
    """Print the task and both models' test accuracy and training time."""
    print(
        f"\nRecall the token after a marker ({config['samples']} sequences of length "
        f"{config['min_length']}-{config['max_length']}, {config['n_classes']} classes, "
        f"{config['epochs']} epochs, chance {1 / config['n_classes']:.0%})"
    )
    print(f"{'model':<26}{'test accuracy':>14}{'train time':>12}")
    for key, label in (("attention", "LSTM + LuongAttention"), ("no_attention", "LSTM only")):
        r = results[key]
        print(f"{label:<26}{r['test_accuracy']:>14.1%}{r['train_seconds']:>11.1f}s")


def _round_trip(model: keras.Model, x_test: np.ndarray, output_dir: str) -> tuple:
    """`(findings, predictions)`: save `model` to `output_dir`, reload it in safe mode and
    compare its test predictions with the model's."""
    path = os.path.join(output_dir, "sequential_attention.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path, safe_mode=True)
    before = model.predict(x_test, batch_size=256, verbose=0)
    after = reloaded.predict(x_test, batch_size=256, verbose=0)
    identical = bool(np.array_equal(before, after))
    print(f"\nSaved to {path}; reloaded with safe_mode=True: predictions identical: {identical}")
    findings = {
        "path": path,
        "predictions_identical": identical,
        "max_abs_difference": float(np.max(np.abs(before - after))),
    }
    return findings, before


def _attention_weights(model, x_test, y_test, marker_test, predictions) -> tuple:
    """`(stats, weights)`: where the pooled attention looks on the test set (the trained
    layers called directly, checked against the model's `predictions`), printed with one
    example's weights around its marker."""
    context, weights = attend(model, x_test)
    direct = keras.ops.convert_to_numpy(model.get_layer("classifier")(context))
    rows = np.arange(len(x_test))
    lengths = np.sum(x_test != PAD, axis=1)
    # The LSTM state at the step after the marker is the first that has read the answer; the
    # one after it still holds it. Training settles on either, so both count as "on target".
    near = (marker_test + 1, marker_test + 2)
    argmax = np.argmax(weights, axis=1)
    stats = {
        "direct_call_matches_model": bool(np.allclose(direct, predictions, atol=1e-5)),
        "max_weight_on_padding": float(np.max(np.where(x_test == PAD, weights, 0.0))),
        "mean_weight_after_marker": float(np.mean(sum(weights[rows, p] for p in near))),
        "argmax_after_marker": float(np.mean((argmax == near[0]) | (argmax == near[1]))),
    }
    row = 0
    marker, length = int(marker_test[row]), int(lengths[row])
    lo, hi = max(marker - 2, 0), min(marker + 6, length)
    tokens = ["MARK" if t == MARKER else str(t) for t in x_test[row, lo:hi]]
    print(
        f"\nAttention weights, test example {row} (length {length}, marker at step {marker}, "
        f"label {y_test[row] + FIRST_TOKEN}):"
    )
    print("step   " + "".join(f"{i:>7}" for i in range(lo, hi)) + "   rest")
    print("token  " + "".join(f"{t:>7}" for t in tokens))
    print(
        "weight "
        + "".join(f"{w:>7.3f}" for w in weights[row, lo:hi])
        + f"{1 - weights[row, lo:hi].sum():>7.3f}"
    )
    print(
        f"Over the test set: mean weight on the two steps after the marker "
        f"{stats['mean_weight_after_marker']:.3f}; one of them gets the largest weight in "
        f"{stats['argmax_after_marker']:.1%} of the sequences; padding gets "
        f"{stats['max_weight_on_padding']:.1g} at most."
    )
    return stats, weights


if __name__ == "__main__":
    main()
