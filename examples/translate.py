"""The flagship: train an attention translator, show where it looks, export it, serve it.

Default data: a date-normalisation corpus made at run time from real CLDR locale data with
`babel` ("jeudi 3 mars 2022", "3. März 2022", "March 3, 2022", "3 марта 2022 г.",
"2022年3月3日木曜日" … → "2022-03-03"): 10 locales (Latin, Cyrillic, Greek and Japanese
scripts), the full / long / medium / short CLDR formats of each, about 24,000 pairs of 6,000
distinct dates split 80/10/10 *by date*, so no test date is seen in training. Formats that
would make a source string ambiguous are left out: two-digit years (`yy`) and month-first
numeric dates (`M/d/y`, which clash with the day-first `dd/MM/y` of other locales); the
generator checks that every source string has one target. Nothing is downloaded.

`--data pairs.tsv` trains on your own parallel corpus instead: one `source<TAB>target` pair
per line (the Anki / Tatoeba export format; further tab-separated columns, such as Tatoeba's
attribution, are ignored), split 80/10/10 at random.

What it does: character-level tokenizers (`keras_attention.text`, in the graph), a
`keras_attention.models.Seq2Seq` (bidirectional LSTM encoder, Luong or Bahdanau attention,
global / local-m / local-p, input feeding) trained with XLA, progress bars and early
stopping; a results table (exact match and character accuracy on the test split, overall and
per locale); alignment heatmaps (PNG) of a few test inputs; a SavedModel export
(`OUTPUT/serving/translator/1`), reloaded in a fresh process that imports only TensorFlow and
tensorflow-text to translate a few raw strings (given on the command line, or defaults).

Run it (`make demo` runs the defaults: about four minutes on 2 CPU cores)::

    python examples/translate.py
    python examples/translate.py "5. Mai 1999" "14 juillet 1989"     # your own queries
    python examples/translate.py --attention bahdanau --output-dir out/
    python examples/translate.py --alignment local_predictive --window 4 --score concat
    python examples/translate.py --data fra.tsv --epochs 20     # an Anki / Tatoeba corpus
    python examples/translate.py --smoke                        # tiny and fast (the tests)
    python examples/translate.py --output-dir out/ --resume     # continue a stopped run

`main(argv)` runs it and returns the results as a dict.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import re
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention.export import export_saved_model  # noqa: E402
from keras_attention.models import Seq2Seq, Translator  # noqa: E402
from keras_attention.text import normalize_text, pairs_dataset  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import (  # noqa: E402
    add_output_dir,
    add_seed,
    add_smoke,
    char_tokenizers,
    compile_for_training,
    last_json_line,
    make_parser,
    output_folder,
    positive_int,
    resume_arguments,
    run_checked,
)

from keras_attention.training import ResumableTraining  # noqa: E402

LOCALES = (
    "en_US", "en_GB", "fr_FR", "de_DE", "es_ES", "it_IT", "pt_BR", "ru_RU", "el_GR", "ja_JP",
)  # fmt: skip
FORMATS = ("full", "long", "medium", "short")
FIRST_DATE, LAST_DATE = datetime.date(1900, 1, 1), datetime.date(2099, 12, 31)
DEFAULT_QUERIES = (
    "jeudi 3 mars 2022",
    "3. März 2022",
    "March 3, 2022",
    "3 марта 2022 г.",
    "2022年3月3日",
    "14 juillet 1989",
)
MAX_LENGTH = 12  # "yyyy-mm-dd", the end token, one spare


# ---------------------------------------------------------------- the date corpus
def usable_formats(locales=LOCALES) -> list[tuple[str, str]]:
    """The `(locale, format)` pairs whose renderings determine the date (see the module doc)."""
    from babel.dates import get_date_format

    usable = []
    for locale in locales:
        for name in FORMATS:
            pattern = re.sub(r"'[^']*'", "", get_date_format(name, locale=locale).pattern)
            if any(len(run) == 2 for run in re.findall(r"y+", pattern)):
                continue  # two-digit year
            numeric_month = re.search(r"(?<!M)M{1,2}(?!M)", pattern) is not None
            if numeric_month and pattern.index("M") < min(pattern.index("d"), pattern.index("y")):
                continue  # month-first numeric: clashes with day-first numeric elsewhere
            usable.append((locale, name))
    return usable


def make_corpus(dates: int = 6000, per_date: int = 4, seed: int = 0) -> dict[str, list]:
    """Pairs `(source, target, locale, format)` of `dates` distinct dates, `per_date` renderings
    each, split 80/10/10 by date. Deterministic for a seed."""
    from babel.dates import format_date

    formats = usable_formats()
    rng = np.random.default_rng(seed)
    span = (LAST_DATE - FIRST_DATE).days + 1
    offsets = rng.choice(span, size=dates, replace=False)
    chosen = [FIRST_DATE + datetime.timedelta(days=int(o)) for o in offsets]
    n_test = n_val = max(1, dates // 10)
    splits = {
        "test": chosen[:n_test],
        "validation": chosen[n_test : n_test + n_val],
        "train": chosen[n_test + n_val :],
    }
    corpus: dict[str, list] = {}
    seen: dict[str, str] = {}
    for split, split_dates in splits.items():
        rows = []
        for date in split_dates:
            for k in rng.choice(len(formats), size=min(per_date, len(formats)), replace=False):
                locale, name = formats[int(k)]
                source = " ".join(format_date(date, format=name, locale=locale).split())
                target = date.isoformat()
                if seen.setdefault(source, target) != target:
                    raise AssertionError(f"ambiguous source {source!r}: {seen[source]} / {target}")
                rows.append((source, target, locale, name))
        corpus[split] = [rows[i] for i in rng.permutation(len(rows))]
    return corpus


def read_pairs(path: str | os.PathLike, seed: int = 0) -> dict[str, list]:
    """A `source<TAB>target[<TAB>…]` file, split 80/10/10 at random; clear errors for
    malformed lines (the file and line number, and what is wrong)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) < 2:
                raise ValueError(
                    f"{path}:{number}: expected 'source<TAB>target', found no tab: {line[:80]!r}"
                )
            source, target = fields[0].strip(), fields[1].strip()
            if not source or not target:
                side = "source" if not source else "target"
                raise ValueError(f"{path}:{number}: empty {side}: {line[:80]!r}")
            rows.append((source, target, "-", "-"))
    if len(rows) < 10:
        raise ValueError(f"{path}: need at least 10 pairs to split; found {len(rows)}")
    order = np.random.default_rng(seed).permutation(len(rows))
    rows = [rows[i] for i in order]
    n = max(1, len(rows) // 10)
    return {"test": rows[:n], "validation": rows[n : 2 * n], "train": rows[2 * n :]}


# ---------------------------------------------------------------- evaluation
def char_accuracy(prediction: str, target: str) -> float:
    """Positions where the characters agree over the longer of the two strings."""
    length = max(len(prediction), len(target), 1)
    return sum(a == b for a, b in zip(prediction, target)) / length


def results_table(rows, predictions) -> tuple[list[dict], str]:
    """Exact match and character accuracy, overall and per locale, as dicts and markdown."""
    groups: dict[str, list] = collections.defaultdict(list)
    for (_, target, locale, _), prediction in zip(rows, predictions):
        scores = (prediction == target, char_accuracy(prediction, normalize(target)))
        groups["all"].append(scores)
        if locale != "-":
            groups[locale].append(scores)
    table = []
    lines = ["| locale | pairs | exact match | character accuracy |", "|---|---:|---:|---:|"]
    for name in ["all", *sorted(k for k in groups if k != "all")]:
        exact, chars = np.mean(groups[name], axis=0)
        table.append({"locale": name, "pairs": len(groups[name]), "exact": exact, "chars": chars})
        lines.append(f"| {name} | {len(groups[name])} | {exact:.1%} | {chars:.1%} |")
    return table, "\n".join(lines)


def normalize(text: str) -> str:
    return normalize_text([text]).numpy()[0].decode("utf-8")


def write_heatmaps(translator, rows, directory: Path, count: int) -> list[str]:
    """Alignment heatmaps (PNG) of `count` test inputs: source characters × output."""
    from keras_attention.plot import plot_alignment

    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = translator.source_tokenizer
    sources = [row[0] for row in rows[:count]]
    ids = tokenizer.tokenize(sources, add_end=True).numpy()
    result = translator(ids)
    outputs = translator.target_tokenizer.detokenize(result["ids"]).numpy()
    paths = []
    for i, source in enumerate(sources):
        source_tokens = [*normalize(source), "[END]"]
        output = outputs[i].decode("utf-8")
        target_tokens = [*output, "[END]"][: int(result["lengths"][i])]
        weights = result["alignments"][i, : len(target_tokens), : len(source_tokens)]
        figure = plot_alignment(weights, source_tokens, target_tokens, title=f"{source} → {output}")
        path = directory / f"alignment_{i}.png"
        figure.savefig(path, dpi=110, bbox_inches="tight")
        paths.append(str(path))
    return paths


def translate_in_fresh_process(model_dir: Path, queries: list[str]) -> dict:
    """Load the SavedModel where only TensorFlow and tensorflow-text are imported."""
    code = textwrap.dedent(
        f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (a char-level export does not need it)
        loaded = tf.saved_model.load({str(model_dir)!r})
        out = loaded.signatures["translate"](inputs=tf.constant({list(queries)!r}))
        print(json.dumps({{
            "outputs": [s.decode() for s in out["outputs"].numpy()],
            "keras_attention_imported": any(m.startswith("keras_attention") for m in sys.modules),
        }}))
        """
    )
    return last_json_line(run_checked([sys.executable, "-c", code], "reloading the SavedModel"))


# ---------------------------------------------------------------- command line
def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__)
    parser.add_argument("queries", nargs="*", help="Raw strings to translate at the end.")
    parser.add_argument("--data", help="A source<TAB>target file instead of the date corpus.")
    parser.add_argument("--attention", choices=("luong", "bahdanau"), default="luong")
    parser.add_argument("--score", choices=("dot", "general", "concat"), default="general")
    parser.add_argument(
        "--alignment",
        choices=("global", "local_monotonic", "local_predictive"),
        default="global",
    )
    parser.add_argument("--window", type=positive_int, default=4, help="Local window radius D.")
    parser.add_argument(
        "--no-input-feeding", action="store_true", help="Luong without input feeding."
    )
    parser.add_argument("--units", type=positive_int, default=128)
    parser.add_argument("--epochs", type=positive_int, default=4, help="At most (early stop).")
    parser.add_argument("--batch-size", type=positive_int, default=128)
    parser.add_argument("--dates", type=positive_int, default=6000, help="Distinct dates.")
    parser.add_argument("--beam-width", type=positive_int, default=1)
    parser.add_argument("--heatmaps", type=int, default=4, help="Alignment PNGs to write.")
    add_output_dir(parser, "Where to write (default: a temporary folder).")
    add_seed(parser)
    add_smoke(parser, "Tiny sizes, one epoch (tests).")
    resume_arguments(parser)
    args = parser.parse_args(argv)
    if args.smoke:
        args.units, args.epochs, args.dates, args.batch_size = 16, 1, 60, 32
        args.heatmaps = min(args.heatmaps, 2)
    return args


def _resume_settings(args: argparse.Namespace) -> dict:
    """The settings a backup must have been made with (the queries and folders may differ)."""
    ignored = ("resume", "queries", "output_dir", "heatmaps")
    return {k: v for k, v in vars(args).items() if k not in ignored}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, evaluate, draw, export and reload; returns what it measured and wrote."""
    args = _parse(argv)
    started = time.perf_counter()
    keras.utils.set_random_seed(args.seed)
    output = output_folder(args, "translate_")
    queries = list(args.queries or ([] if args.data else DEFAULT_QUERIES))

    corpus = (
        read_pairs(args.data, args.seed) if args.data else make_corpus(args.dates, seed=args.seed)
    )
    train, validation, test = corpus["train"], corpus["validation"], corpus["test"]
    print(f"data: {len(train)} train, {len(validation)} validation, {len(test)} test pairs"
          + ("" if args.data else f" ({len(usable_formats())} locale formats)"))  # fmt: skip
    for source, target, locale, _ in train[:5]:
        print(f"  {locale:6} {source!r} → {target!r}")

    model = build_model(args, train)
    resume, initial_epoch, train_seconds = _train(model, args, output, train, validation)

    translator = Translator(model, max_length=MAX_LENGTH, beam_width=args.beam_width)
    predictions = translator.translate([row[0] for row in test])
    table, markdown = results_table(test, predictions)
    print(f"\ntest split ({len(test)} pairs of dates never seen in training):\n{markdown}")
    misses = [(r[0], p, r[1]) for r, p in zip(test, predictions) if p != r[1]][:5]
    for source, prediction, target in misses:
        print(f"  miss: {source!r} → {prediction!r} (expected {target!r})")

    heatmaps = write_heatmaps(translator, test, output / "alignments", args.heatmaps)
    model_path = output / "translator.keras"
    model.save(model_path)
    model_dir = output / "serving" / "translator" / "1"
    export_saved_model(
        model, model_dir, max_length=MAX_LENGTH, beam_width=args.beam_width, overwrite=True
    )
    reloaded = _reload(model_dir, queries)
    wall_seconds = time.perf_counter() - started
    _print_summary(len(resume.history["loss"]), train_seconds, wall_seconds, output, heatmaps)
    return {
        "config": vars(args),
        "pairs": {k: len(v) for k, v in corpus.items()},
        "epochs_run": len(resume.history["loss"]),
        "history": resume.history,
        "resumed_from_epoch": initial_epoch,
        "train_seconds": train_seconds,
        "wall_seconds": wall_seconds,
        "table": table,
        "test_exact_match": table[0]["exact"],
        "heatmaps": heatmaps,
        "keras_model": str(model_path),
        "saved_model": str(model_dir),
        "queries": queries,
        "reloaded_outputs": reloaded["outputs"],
        "reload_imported_keras_attention": reloaded.get("keras_attention_imported", False),
    }


def build_model(args: argparse.Namespace, train: list) -> Seq2Seq:
    """The compiled `Seq2Seq` of the flags, with character tokenizers adapted to the
    training pairs."""
    source_tokenizer, target_tokenizer = char_tokenizers(
        [row[0] for row in train], [row[1] for row in train]
    )
    model = Seq2Seq(
        embedding_dim=64,
        units=args.units,
        attention=args.attention,
        score_mode=args.score,
        alignment=args.alignment,
        window_radius=args.window,
        input_feeding=not args.no_input_feeding,
        source_tokenizer=source_tokenizer,
        target_tokenizer=target_tokenizer,
    )
    compile_for_training(model, keras.optimizers.Adam(3e-3))
    return model


def _train(model: Seq2Seq, args: argparse.Namespace, output: Path, train, validation) -> tuple:
    """`(resume, initial_epoch, seconds)`: train with early stopping and a backup at every
    epoch's end (`--resume` goes on from the last one); the `ResumableTraining` callback
    (its `history`), the epoch training started from, the seconds it took."""

    def dataset(rows, shuffle):
        sources, targets = [r[0] for r in rows], [r[1] for r in rows]
        return pairs_dataset(
            sources, targets, model.source_tokenizer, model.target_tokenizer,
            batch_size=args.batch_size, shuffle=shuffle, seed=args.seed,
        )  # fmt: skip

    # Backups at every epoch's end in OUTPUT/backup: `--resume` continues a stopped run from
    # the last one, with the same result as an uninterrupted run (`ResumableTraining`).
    early_stopping = keras.callbacks.EarlyStopping(
        monitor="val_loss", patience=2, restore_best_weights=True
    )
    resume = ResumableTraining(output / "backup", settings=_resume_settings(args))
    resume.set_callbacks([early_stopping])
    initial_epoch = 0
    if args.resume:
        model.build_from_config(None)
        initial_epoch = resume.restore(model, [early_stopping])
        print(f"resumed from {output / 'backup'} after epoch {initial_epoch}")
    # One stream of passes over the training pairs, each reshuffled (pairs_dataset shuffles
    # anew on every pass), from the first batch of the epoch to start from.
    train_data, steps = resume.epoch_stream(dataset(train, True), initial_epoch)
    train_started = time.perf_counter()
    model.fit(
        train_data,
        steps_per_epoch=steps,
        validation_data=dataset(validation, False),
        epochs=args.epochs,
        initial_epoch=initial_epoch,
        shuffle=False,  # pairs_dataset shuffles, anew each epoch
        callbacks=[early_stopping, resume],  # (resume after: it restores EarlyStopping's state)
        verbose=0 if args.smoke else 1,
    )
    return resume, initial_epoch, time.perf_counter() - train_started


def _reload(model_dir: Path, queries: list[str]) -> dict:
    """Translate `queries` with the SavedModel reloaded in a fresh process, and print them."""
    reloaded = translate_in_fresh_process(model_dir, queries) if queries else {"outputs": []}
    if queries:
        print("\nthe SavedModel, reloaded in a fresh process (TensorFlow + tensorflow-text only):")
        for query, answer in zip(queries, reloaded["outputs"]):
            print(f"  {query!r} → {answer!r}")
    return reloaded


def _print_summary(epochs: int, train_seconds, wall_seconds, output: Path, heatmaps) -> None:
    """Print the times, what was written and how to serve it."""
    model_path = output / "translator.keras"
    model_dir = output / "serving" / "translator" / "1"
    print(
        textwrap.dedent(
            f"""
            trained {epochs} epochs in {train_seconds:.0f} s; """
            f"""total {wall_seconds:.0f} s
            written:
              {model_path}  (Keras model with its tokenizers)
              {model_dir}  (SavedModel: serving_default on ids, translate on strings)
              {output / "alignments"}/  ({len(heatmaps)} alignment heatmaps)
            serve: docker run -p 8501:8501 -v {model_dir.parent.resolve()}:/models/translator \\
                       -e MODEL_NAME=translator tensorflow/serving"""
        )
    )


if __name__ == "__main__":
    main()
