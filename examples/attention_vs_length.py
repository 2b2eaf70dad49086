"""Accuracy by source length with and without attention (Bahdanau et al. 2014, Figure 2, small).

Bahdanau et al. showed that an encoder-decoder which squeezes the whole source into one
fixed-size vector ("RNNencdec") degrades as sentences get longer, while the same model with
attention ("RNNsearch") does not. This example reproduces the finding on a synthetic task in a
few minutes on a CPU.

The task ("copy with a twist"): the source is a random sequence of 5-40 tokens over a
20-letter alphabet (`a` … `t`), the target is the same sequence read through a fixed
substitution cipher (a random permutation of the alphabet, drawn once from the task seed):
every target token depends on exactly one source token, at the same position, and must be
looked up, not copied. Both sides end with END. Training pairs have lengths uniform in
[5, 40]; test pairs are drawn per length bucket (never seen in training) and scored by
bucket. The data come from a NumPy seed; nothing is downloaded.

Four models, the same sizes (embeddings 32, a bidirectional LSTM encoder of 64 units per
direction, an LSTM decoder of 64 units whose initial state is `tanh(W [h_fw; h_bw])` of the
encoder's final states), trained on the same pairs with the same optimizer (Adam, gradients
clipped to norm 1: without clipping the attention models' training spikes and can collapse),
batch size and number of epochs:

- `no attention`: the decoder sees only the handed-over state (plain Keras layers, below);
- `bahdanau`: `Seq2Seq(attention="bahdanau")`, additive attention before each step;
- `luong global`: `Seq2Seq(attention="luong", alignment="global")`, general score, input
  feeding;
- `luong local-p`: `Seq2Seq(attention="luong", alignment="local_predictive",
  window_radius=8)`: a predicted window of 17 positions.

The attention models are decoded greedily with `keras_attention.models.Translator` (one XLA
program); the model without attention with `keras_attention.decoding.greedy_search` over a step
function of its own decoder cell. Metrics per source-length bucket: exact match (the whole
output, END included, equals the target) and token accuracy (the fraction of target positions,
END included, where the output has the right token).

The script prints both as markdown tables (rows = length buckets, columns = models) and writes
`accuracy_vs_length.png` (accuracy against source length, one line per model) and, when
`keras_attention.plot` is available, `alignments.png` (the attention models' alignments of one
long test sequence) to the output directory.

Expected (and measured with the defaults): the model without attention does best on the
shortest sources (about 60% token accuracy at 5-9 tokens) and falls off with length towards
chance (5%); the attention models stay near 100% and above 85% token accuracy at every length.

Run it (about five minutes on 2 CPU cores)::

    python examples/attention_vs_length.py
    python examples/attention_vs_length.py --smoke       # tiny and fast, what the tests run
    python examples/attention_vs_length.py --epochs 12 --output-dir out/

`main(argv)` runs it and returns the tables and figures as a dict.
"""

from __future__ import annotations

import argparse
import os
import string
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from keras_attention.decoding import GreedySearch, greedy_search  # noqa: E402
from keras_attention.models import Seq2Seq, Translator  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import (  # noqa: E402
    add_output_dir,
    add_seed,
    add_smoke,
    apply_smoke,
    compile_for_training,
    make_parser,
    output_folder,
)

PAD, UNK, START, END = 0, 1, 2, 3  # the ids keras_attention.text tokenizers use
FIRST_TOKEN = 4  # letters are FIRST_TOKEN ... FIRST_TOKEN + alphabet - 1
MODELS = ("no attention", "bahdanau", "luong global", "luong local-p")

DEFAULTS = {
    "alphabet": 20,
    "min_length": 5,
    "max_length": 40,
    "bucket_width": 5,
    "samples": 8000,
    "test_per_bucket": 100,
    "epochs": 8,
    "batch_size": 64,
    "units": 64,
    "embedding_dim": 32,
    "window_radius": 8,
    "learning_rate": 3e-3,
}
SMOKE = {
    "min_length": 3,
    "max_length": 12,
    "bucket_width": 3,
    "samples": 128,
    "test_per_bucket": 4,
    "epochs": 1,
    "batch_size": 32,
    "units": 8,
    "embedding_dim": 8,
    "window_radius": 2,
}


# --------------------------------------------------------------------------- data
def cipher(alphabet: int, task_seed: int = 0) -> np.ndarray:
    """The substitution: target id of each source id (a permutation of the letter ids; the
    special ids 0-3 map to themselves)."""
    permutation = np.random.default_rng(task_seed).permutation(alphabet)
    return np.concatenate([np.arange(FIRST_TOKEN), FIRST_TOKEN + permutation]).astype("int32")


def make_pairs(
    lengths: np.ndarray,
    alphabet: int,
    max_length: int,
    seed: int,
    task_seed: int = 0,
    exclude: set | None = None,
) -> dict[str, Any]:
    """One (source, target) pair per entry of `lengths`, as padded id arrays.

    Returns a dict of int32 arrays of width `max_length + 1`: `source_ids` (the letters, then
    END, then 0), `target_ids` (the decoder inputs: START, then the target without its END)
    and `labels` (the ciphered letters, then END, then 0); plus `lengths` (letters per
    source). Sources in `exclude` (tuples of ids) are redrawn; `"keys"` holds the set of the
    sources drawn, to exclude them from another split.
    """
    rng = np.random.default_rng(seed)
    table = cipher(alphabet, task_seed)
    width = max_length + 1
    count = len(lengths)
    source = np.zeros((count, width), "int32")
    decoder_in = np.zeros((count, width), "int32")
    labels = np.zeros((count, width), "int32")
    exclude = exclude or set()
    keys = set()
    for i, length in enumerate(lengths):
        for _ in range(1000):
            letters = FIRST_TOKEN + rng.integers(0, alphabet, size=int(length))
            key = tuple(letters.tolist())
            if key not in exclude:
                break
        else:
            raise ValueError(
                f"Cannot draw a source of length {length} outside `exclude`: too few distinct "
                f"sequences. Received: alphabet={alphabet}"
            )
        keys.add(key)
        target = table[letters]
        source[i, :length], source[i, length] = letters, END
        decoder_in[i, 0], decoder_in[i, 1 : length + 1] = START, target
        labels[i, :length], labels[i, length] = target, END
    return {
        "source_ids": source,
        "target_ids": decoder_in,
        "labels": labels,
        "lengths": np.asarray(lengths, "int32"),
        "keys": keys,
    }


def buckets(min_length: int, max_length: int, width: int) -> list[tuple[int, int]]:
    """Inclusive length ranges of `width` lengths from `min_length`; a short remainder joins
    the last bucket."""
    edges = list(range(min_length, max_length + 1, width))
    ranges = [(lo, min(lo + width - 1, max_length)) for lo in edges]
    if len(ranges) > 1 and ranges[-1][1] - ranges[-1][0] + 1 < width:
        ranges[-2:] = [(ranges[-2][0], max_length)]
    return ranges


def make_datasets(config: dict, seed: int) -> tuple[dict, dict]:
    """Training pairs (lengths uniform over the range) and test pairs (`test_per_bucket` per
    bucket, lengths uniform within it), disjoint."""
    rng = np.random.default_rng(seed)
    lo, hi = config["min_length"], config["max_length"]
    train_lengths = rng.integers(lo, hi + 1, size=config["samples"])
    train = make_pairs(train_lengths, config["alphabet"], hi, seed=seed + 1)
    test_lengths = np.concatenate(
        [
            rng.integers(a, b + 1, size=config["test_per_bucket"])
            for a, b in buckets(lo, hi, config["bucket_width"])
        ]
    )
    test = make_pairs(test_lengths, config["alphabet"], hi, seed=seed + 2, exclude=train["keys"])
    return train, test


def letters(ids: np.ndarray) -> list[str]:
    """Display strings of ids (letters; END as "</s>"), for the alignment plot."""
    names = {END: "</s>", START: "<s>", PAD: "", UNK: "?"}
    alphabet = string.ascii_lowercase + string.ascii_uppercase
    return [names.get(int(i), alphabet[(int(i) - FIRST_TOKEN) % len(alphabet)]) for i in ids]


# --------------------------------------------------------------------------- models
def build_no_attention(vocabulary: int, embedding_dim: int, units: int) -> keras.Model:
    """The attention models' encoder and decoder without the attention: the decoder starts
    from `tanh(W [h_fw; h_bw])`, `tanh(W' [c_fw; c_bw])` and sees nothing else of the source."""
    source = keras.Input((None,), dtype="int32", name="source_ids")
    target = keras.Input((None,), dtype="int32", name="target_ids")
    embedded = keras.layers.Embedding(vocabulary, embedding_dim, mask_zero=True, name="src_emb")(
        source
    )
    encoder = keras.layers.Bidirectional(
        keras.layers.LSTM(units, return_state=True), name="encoder"
    )
    _, h_fw, c_fw, h_bw, c_bw = encoder(embedded)
    h = keras.layers.Dense(units, "tanh", name="bridge_h")(keras.layers.Concatenate()([h_fw, h_bw]))
    c = keras.layers.Dense(units, "tanh", name="bridge_c")(keras.layers.Concatenate()([c_fw, c_bw]))
    decoder_embedding = keras.layers.Embedding(
        vocabulary, embedding_dim, mask_zero=True, name="tgt_emb"
    )
    decoder = keras.layers.LSTM(units, return_sequences=True, name="decoder")
    outputs = decoder(decoder_embedding(target), initial_state=[h, c])
    logits = keras.layers.Dense(vocabulary, name="projection")(outputs)
    return keras.Model({"source_ids": source, "target_ids": target}, logits, name="no_attention")


def decode_no_attention(model: keras.Model, source_ids: np.ndarray, max_length: int) -> np.ndarray:
    """Greedy decoding of `build_no_attention`'s model with `greedy_search` over its cell."""
    encoder = keras.Model(
        model.get_layer("src_emb").input,
        [model.get_layer("bridge_h").output, model.get_layer("bridge_c").output],
    )
    embedding = model.get_layer("tgt_emb")
    cell = model.get_layer("decoder").cell
    projection = model.get_layer("projection")
    vocabulary = projection.units
    never = np.zeros((vocabulary,), "float32")
    never[[PAD, START]] = -1e9  # as Seq2Seq.generate: padding and START are never generated

    def step_fn(tokens, state, t):
        inputs = ops.take(embedding.embeddings, tokens, axis=0)  # (no mask: a cell takes none)
        output, new_state = cell(inputs, list(state))
        return ops.cast(projection(output), "float32") + never, tuple(new_state), None

    h, c = encoder(source_ids)
    result = greedy_search(
        step_fn,
        (h, c),
        batch_size=source_ids.shape[0],
        start_id=START,
        end_id=END,
        max_length=max_length,
        vocabulary_size=vocabulary,
    )
    return ops.convert_to_numpy(result["ids"])


def build(name: str, config: dict) -> keras.Model:
    vocabulary = FIRST_TOKEN + config["alphabet"]
    sizes = {"embedding_dim": config["embedding_dim"], "units": config["units"]}
    if name == "no attention":
        return build_no_attention(vocabulary, **sizes)
    attention = {
        "bahdanau": {"attention": "bahdanau"},
        "luong global": {"attention": "luong", "alignment": "global"},
        "luong local-p": {
            "attention": "luong",
            "alignment": "local_predictive",
            "window_radius": config["window_radius"],
        },
    }[name]
    return Seq2Seq(vocabulary, vocabulary, start_id=START, end_id=END, **sizes, **attention)


# --------------------------------------------------------------------------- metrics
def score(predicted: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sequence exact match and token accuracy of `predicted` ids against `labels`.

    Both are `[N, W]` with END and 0 after it. Exact match: the outputs agree up to and
    including the labels' END, and the output ends there. Token accuracy: the fraction of label
    positions (END included) holding the right token.
    """
    width = labels.shape[1]
    predicted = np.pad(predicted, ((0, 0), (0, max(0, width - predicted.shape[1]))))
    extra = predicted[:, width:]
    predicted = predicted[:, :width]
    valid = labels != PAD
    correct = (predicted == labels) & valid
    token = correct.sum(1) / valid.sum(1)
    exact = correct.sum(1) == valid.sum(1)  # END in place: nothing is generated after it
    if extra.size:
        exact &= (extra == PAD).all(1)
    return exact.astype("float64"), token.astype("float64")


def by_bucket(values: np.ndarray, lengths: np.ndarray, ranges: list) -> list[float]:
    return [float(values[(lengths >= lo) & (lengths <= hi)].mean()) for lo, hi in ranges]


def markdown_table(title: str, ranges: list, columns: dict, counts: list) -> str:
    names = list(columns)
    lines = [
        "| " + " | ".join([title, "n", *names]) + " |",
        "|---|---:|" + "---:|" * len(names),
    ]
    for i, (lo, hi) in enumerate(ranges):
        cells = [f"{100 * columns[name][i]:.1f}%" for name in names]
        lines.append("| " + " | ".join([f"{lo}-{hi}", str(counts[i]), *cells]) + " |")
    return "\n".join(lines)


def plot_accuracy(ranges: list, exact: dict, token: dict, path: Path, note: str) -> None:
    """Accuracy against source length (bucket midpoints), one line per model."""
    from matplotlib.figure import Figure  # lazily: only the example needs matplotlib

    centres = [(lo + hi) / 2 for lo, hi in ranges]
    figure = Figure(figsize=(10, 4), layout="constrained")
    for ax, values, label in zip(
        figure.subplots(1, 2), (exact, token), ("exact match", "token accuracy")
    ):
        for (name, series), marker in zip(values.items(), "osD^"):
            ax.plot(centres, [100 * v for v in series], marker=marker, label=name)
        ax.set_xlabel("source length (tokens)")
        ax.set_ylabel(f"{label} (%)")
        ax.set_ylim(-2, 102)
        ax.grid(alpha=0.3)
    figure.axes[1].legend(loc="center right")
    figure.suptitle(f"Accuracy by source length ({note})")
    figure.savefig(path, dpi=100)


def plot_alignments(translators: dict, test: dict, path: Path) -> bool:
    """The alignments of the longest test sequence, one panel per attention model."""
    try:
        from keras_attention.plot import plot_alignment
    except ImportError:  # keras_attention.plot or matplotlib is missing
        return False
    from matplotlib.figure import Figure

    index = int(np.argmax(test["lengths"]))
    length = int(test["lengths"][index])
    source = test["source_ids"][index : index + 1, : length + 1]
    figure = Figure(figsize=(6 * len(translators), 5.5), layout="constrained")
    for ax, (name, translator) in zip(figure.subplots(1, len(translators)), translators.items()):
        result = translator(source)
        steps = int(result["lengths"][0])
        plot_alignment(
            result["alignments"][0, :steps],
            letters(source[0]),
            letters(result["ids"][0, :steps]),
            ax=ax,
            title=name,
        )
    figure.savefig(path, dpi=80)
    return True


# --------------------------------------------------------------------------- main
def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__)
    for key, value in DEFAULTS.items():
        parser.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=value)
    add_output_dir(parser)
    parser.add_argument(
        "--no-jit", dest="jit", action="store_false", help="Train and decode without XLA."
    )
    add_smoke(parser, "Tiny sizes, one epoch, trained eagerly (tests).")
    add_seed(parser, "Seed of data, weights and order.")
    args = parser.parse_args(argv)
    if args.smoke:
        apply_smoke(args, SMOKE)
        args.jit = False  # compiling would cost more than the smoke run itself
    if not 1 <= args.min_length <= args.max_length:
        parser.error(f"need 1 <= --min-length <= --max-length, got {args.min_length}, "
                     f"{args.max_length}")  # fmt: skip
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train the four models, score them by source length; return tables and paths."""
    args = _parse(argv)
    config = {key: getattr(args, key) for key in DEFAULTS}
    output = output_folder(args, "attention_vs_length_")
    started = time.perf_counter()

    train, test = make_datasets(config, args.seed)
    ranges = buckets(config["min_length"], config["max_length"], config["bucket_width"])
    counts = [int(((test["lengths"] >= a) & (test["lengths"] <= b)).sum()) for a, b in ranges]
    exact, token, train_seconds, translators = {}, {}, {}, {}
    for name in MODELS:
        model, train_seconds[name] = _train(name, config, args, train)
        translator, seq, tok = _test(name, model, config, args, test)
        if translator is not None:
            translators[name] = translator
        exact[name] = by_bucket(seq, test["lengths"], ranges)
        token[name] = by_bucket(tok, test["lengths"], ranges)
        print(
            f"{name}: {model.count_params()} weights, trained in {train_seconds[name]:.1f} s; "
            f"test exact match {seq.mean():.1%}, token accuracy {tok.mean():.1%}",
            flush=True,
        )

    exact_table = markdown_table("source length", ranges, exact, counts)
    token_table = markdown_table("source length", ranges, token, counts)
    print("\nExact match (whole output equals the target) by source length:\n")
    print(exact_table)
    print("\nToken accuracy by source length:\n")
    print(token_table)

    note = f"{config['epochs']} epochs of {config['samples']} pairs"
    plot_path = output / "accuracy_vs_length.png"
    plot_accuracy(ranges, exact, token, plot_path, note)
    alignment_path = output / "alignments.png"
    if not plot_alignments(translators, test, alignment_path):
        alignment_path = None
    wall = time.perf_counter() - started
    print(f"\nWritten: {plot_path}" + (f", {alignment_path}" if alignment_path else ""))
    print(f"wall time {wall:.0f} s")
    return {
        "config": {**config, "seed": args.seed, "smoke": args.smoke, "jit_compile": args.jit},
        "buckets": [f"{lo}-{hi}" for lo, hi in ranges],
        "bucket_counts": counts,
        "exact_match": exact,
        "token_accuracy": token,
        "exact_match_table": exact_table,
        "token_accuracy_table": token_table,
        "train_seconds": train_seconds,
        "plot": str(plot_path),
        "alignment_plot": None if alignment_path is None else str(alignment_path),
        "wall_seconds": wall,
    }


def _train(name: str, config: dict, args: argparse.Namespace, train: dict) -> tuple:
    """`(model, seconds)`: model `name` built from the seed and trained on `train`."""
    keras.utils.set_random_seed(args.seed)
    model = build(name, config)
    compile_for_training(
        model,
        keras.optimizers.Adam(config["learning_rate"], clipnorm=1.0),
        jit_compile=args.jit,
        run_eagerly=args.smoke,  # tracing the training step would take most of the smoke run
    )
    print(f"\n== {name}", flush=True)
    t0 = time.perf_counter()
    model.fit(
        {key: train[key] for key in ("source_ids", "target_ids")},
        train["labels"],
        batch_size=config["batch_size"],
        epochs=config["epochs"],
        shuffle=True,
        verbose=0 if args.smoke else 2,
    )
    return model, time.perf_counter() - t0


def _test(name: str, model, config: dict, args: argparse.Namespace, test: dict) -> tuple:
    """`(translator, exact, token)`: greedy outputs on the test sources (the `Translator`
    of an attention model, `None` without attention), scored per pair and per token."""
    max_decode = config["max_length"] + 1
    translator = None
    if name == "no attention":
        predicted = decode_no_attention(model, test["source_ids"], max_decode)
    else:
        translator = Translator(model, GreedySearch(max_decode), jit_compile=args.jit)
        predicted = translator(test["source_ids"])["ids"]
    seq, tok = score(predicted, test["labels"])
    return translator, seq, tok


if __name__ == "__main__":
    main()
