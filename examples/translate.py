"""
Title: Multilingual date normalisation with an attention translator
Author: keras_attention maintainers
Date created: 2026/11/30
Last modified: 2026/12/06
Description: Train a character-level Seq2Seq, see where it looks, export it and serve it.
"""

"""
## Introduction

Dates as people write them in ten languages in, ISO dates out ("jeudi 3 mars 2022",
"3 марта 2022 г.", "2022年3月3日木曜日" → "2022-03-03"), learnt character by character by a
`keras_attention.models.Seq2Seq`; scored per locale, its alignments drawn, exported as a
SavedModel that translates raw strings in a process without `keras_attention`.

    python examples/translate.py             # what `make demo` runs: ~4 min on 2 CPU cores
    python examples/translate.py "5. Mai 1999" "14 juillet 1989"     # your own queries
    python examples/translate.py --attention bahdanau --alignment local_predictive --window 4
    python examples/translate.py --data fra.tsv --epochs 20     # an Anki / Tatoeba corpus
    python examples/translate.py --output-dir out/ --resume     # continue a stopped run
    python examples/translate.py --smoke                        # seconds: what the tests run
"""

"""
## Setup
"""

import argparse
import datetime
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np

from keras_attention.decoding import BeamSearch, GreedySearch
from keras_attention.export import export_saved_model
from keras_attention.models import Seq2Seq, Translator
from keras_attention.pairs import read_raw_pairs
from keras_attention.text import normalize_text, pairs_dataset
from keras_attention.training import ResumableTraining

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _shared  # the examples' command-line and process helpers

LOCALES = tuple("en_US en_GB fr_FR de_DE es_ES it_IT pt_BR ru_RU el_GR ja_JP".split())
FORMATS = ("full", "long", "medium", "short")
FIRST_DATE, LAST_DATE = datetime.date(1900, 1, 1), datetime.date(2099, 12, 31)
DEFAULT_QUERIES = ("jeudi 3 mars 2022", "3. März 2022", "March 3, 2022", "3 марта 2022 г.",
                   "2022年3月3日", "14 juillet 1989")  # fmt: skip
MAX_LENGTH = 12  # "yyyy-mm-dd", the end token, one spare
SMOKE = {"units": 16, "epochs": 1, "dates": 60, "batch_size": 32}

"""
## The data

From `babel`'s CLDR data (nothing is downloaded): 10 locales in four scripts, their full /
long / medium / short formats, ~24,000 pairs of 6,000 dates split 80/10/10 **by date**;
ambiguous formats (two-digit years; month-first numeric dates, `M/d/y`, against other
locales' `dd/MM/y`) left out. Or `--data pairs.tsv`: your own `source<TAB>target` lines (as
Anki and Tatoeba export them; further columns ignored), split at random.
"""


def usable_formats(locales=LOCALES) -> list[tuple[str, str]]:
    """The `(locale, format)` pairs whose renderings determine the date."""
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
    """`per_date` renderings of `dates` distinct dates, split by date (deterministic)."""
    from babel.dates import format_date

    formats = usable_formats()
    rng = np.random.default_rng(seed)
    offsets = rng.choice((LAST_DATE - FIRST_DATE).days + 1, size=dates, replace=False)
    chosen = [FIRST_DATE + datetime.timedelta(days=int(o)) for o in offsets]
    n = max(1, dates // 10)
    splits = {"test": chosen[:n], "validation": chosen[n : 2 * n], "train": chosen[2 * n :]}
    corpus, seen = {}, {}
    for split, split_dates in splits.items():
        rows = []
        for date in split_dates:
            for k in rng.choice(len(formats), size=min(per_date, len(formats)), replace=False):
                locale, name = formats[int(k)]
                source = " ".join(format_date(date, format=name, locale=locale).split())
                if seen.setdefault(source, date.isoformat()) != date.isoformat():
                    raise AssertionError(f"ambiguous source {source!r}: {seen[source]} / {date}")
                rows.append((source, date.isoformat(), locale, name))
        corpus[split] = [rows[i] for i in rng.permutation(len(rows))]
    return corpus


def read_corpus(path, seed: int = 0) -> dict[str, list]:
    """A `source<TAB>target[<TAB>…]` file split 80/10/10 at random; errors name the line."""
    pairs = read_raw_pairs(path, extra_columns=True, argument="--data")
    if len(pairs) < 10:
        raise ValueError(f"{path}: need at least 10 pairs to split; found {len(pairs)}")
    rows = [(*pairs[i], "-", "-") for i in np.random.default_rng(seed).permutation(len(pairs))]
    n = max(1, len(rows) // 10)
    return {"test": rows[:n], "validation": rows[n : 2 * n], "train": rows[2 * n :]}


"""
## The model and its training

A bidirectional LSTM encoder, an attention decoder and character tokenizers in the graph (it
reads raw strings), trained with XLA and early stopping. `keras_attention.training`'s
`ResumableTraining` backs it up at every epoch's end (`OUTPUT/backup`): killed and resumed
(`--resume`), a run ends with the same weights and metrics as an uninterrupted one.
"""


def train_model(args: argparse.Namespace, output: Path, train, validation) -> tuple:
    """`(model, resume, initial_epoch, seconds)`: `resume.history` is the whole run's."""
    sources, targets = [row[0] for row in train], [row[1] for row in train]
    source_tokenizer, target_tokenizer = _shared.char_tokenizers(sources, targets)
    model = Seq2Seq(
        embedding_dim=64, units=args.units, attention=args.attention, score_mode=args.score,
        alignment=args.alignment, window_radius=args.window,
        input_feeding=not args.no_input_feeding,
        source_tokenizer=source_tokenizer, target_tokenizer=target_tokenizer,
    )  # fmt: skip
    _shared.compile_for_training(model, keras.optimizers.Adam(3e-3))  # XLA

    def dataset(rows, shuffle):  # teacher-forcing batches, reshuffled on every pass
        texts = ([r[0] for r in rows], [r[1] for r in rows], source_tokenizer, target_tokenizer)
        return pairs_dataset(*texts, batch_size=args.batch_size, shuffle=shuffle, seed=args.seed)

    stopping = keras.callbacks.EarlyStopping("val_loss", patience=2, restore_best_weights=True)
    ignore = ("resume", "queries", "output_dir", "heatmaps")  # may change when resuming
    resume = ResumableTraining(output / "backup", settings=vars(args), ignore=ignore)
    resume.set_callbacks([stopping])
    initial_epoch = 0
    if args.resume:
        model.build_from_config(None)
        initial_epoch = resume.restore(model, [stopping])
        print(f"resumed from {output / 'backup'} after epoch {initial_epoch}")
    # One stream of passes (`epoch_stream`): a resumed run trains on the same batches.
    stream, steps = resume.epoch_stream(dataset(train, True), initial_epoch)
    started = time.perf_counter()
    model.fit(
        stream, steps_per_epoch=steps, validation_data=dataset(validation, False),
        epochs=args.epochs, initial_epoch=initial_epoch, shuffle=False,
        callbacks=[stopping, resume],  # resume after: it restores EarlyStopping's state
        verbose=0 if args.smoke else 1,
    )  # fmt: skip
    return model, resume, initial_epoch, time.perf_counter() - started


"""
## Evaluation and where the model looks

Exact match and character accuracy (positions where the characters agree, over the longer
string), overall and per locale. The `Translator` also returns each output step's attention
over the source characters: the heatmaps.
"""


def char_accuracy(prediction: str, target: str) -> float:
    return sum(a == b for a, b in zip(prediction, target)) / max(len(prediction), len(target), 1)


def results_table(rows, predictions) -> tuple[list[dict], str]:
    """The scores as dicts and as a markdown table."""
    groups = {"all": []}
    normalized = [t.decode("utf-8") for t in normalize_text([r[1] for r in rows]).numpy()]
    for (_, target, locale, _), prediction, text in zip(rows, predictions, normalized):
        scores = (prediction == target, char_accuracy(prediction, text))
        for group in {"all", locale} - {"-"}:
            groups.setdefault(group, []).append(scores)
    table = []
    lines = ["| locale | pairs | exact match | character accuracy |", "|---|---:|---:|---:|"]
    for name in ["all", *sorted(k for k in groups if k != "all")]:
        exact, chars = np.mean(groups[name], axis=0)
        table.append({"locale": name, "pairs": len(groups[name]), "exact": exact, "chars": chars})
        lines.append(f"| {name} | {len(groups[name])} | {exact:.1%} | {chars:.1%} |")
    return table, "\n".join(lines)


def write_heatmaps(translator: Translator, rows, directory: Path, count: int) -> list[str]:
    """Alignment heatmaps (PNG) of the first `count` rows: source characters × output."""
    from keras_attention.plot import plot_alignment

    directory.mkdir(parents=True, exist_ok=True)
    sources = [row[0] for row in rows[:count]]
    result = translator(translator.source_tokenizer.tokenize(sources, add_end=True).numpy())
    outputs = translator.target_tokenizer.detokenize(result["ids"]).numpy()
    paths = []
    for i, (source, text) in enumerate(zip(sources, normalize_text(sources).numpy())):
        source_tokens, output = [*text.decode("utf-8"), "[END]"], outputs[i].decode("utf-8")
        target_tokens = [*output, "[END]"][: int(result["lengths"][i])]
        weights = result["alignments"][i, : len(target_tokens), : len(source_tokens)]
        figure = plot_alignment(weights, source_tokens, target_tokens, title=f"{source} → {output}")
        paths.append(str(directory / f"alignment_{i}.png"))
        figure.savefig(paths[-1], dpi=110, bbox_inches="tight")
    return paths


"""
## Export and serve

A SavedModel (`OUTPUT/serving/translator/1`; signatures `serving_default` on ids, `translate`
on strings) needs only TensorFlow and tensorflow-text: a fresh process here, or TF Serving.
"""

RELOAD = """import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (a char-level export does not need it)
out = tf.saved_model.load(sys.argv[1]).signatures["translate"](inputs=tf.constant(sys.argv[2:]))
print(json.dumps({"outputs": [s.decode() for s in out["outputs"].numpy()],
                  "keras_attention_imported": any("keras_attention" in m for m in sys.modules)}))
"""


"""
## Run it
"""


def parse(argv=None) -> argparse.Namespace:
    parser = _shared.make_parser(__doc__)
    add, count = parser.add_argument, _shared.positive_int
    add("queries", nargs="*", help="Raw strings to translate at the end.")
    add("--data", help="A source<TAB>target file instead of the date corpus.")
    add("--attention", choices=("luong", "bahdanau"), default="luong")
    add("--score", choices=("dot", "general", "concat"), default="general")
    add("--alignment", choices=("global", "local_monotonic", "local_predictive"), default="global")
    add("--window", type=count, default=4, help="Local window radius D.")
    add("--no-input-feeding", action="store_true", help="Luong without input feeding.")
    add("--units", type=count, default=128)
    add("--epochs", type=count, default=4, help="At most (early stop).")
    add("--batch-size", type=count, default=128)
    add("--dates", type=count, default=6000, help="Distinct dates.")
    add("--beam-width", type=count, default=1)
    add("--heatmaps", type=int, default=4, help="Alignment PNGs to write.")
    _shared.add_output_dir(parser), _shared.add_seed(parser), _shared.add_smoke(parser)
    add("--resume", action="store_true", help="Go on from the backup in --output-dir.")
    args = parser.parse_args(argv)
    if args.smoke:
        _shared.apply_smoke(args, SMOKE | {"heatmaps": min(args.heatmaps, 2)})
    return args


def main(argv=None) -> dict:
    """Train, evaluate, draw, export and reload; returns what it measured and wrote."""
    args, started = parse(argv), time.perf_counter()
    keras.utils.set_random_seed(args.seed)
    output = _shared.output_folder(args, "translate_")
    queries = list(args.queries or ([] if args.data else DEFAULT_QUERIES))
    corpus = (
        read_corpus(args.data, args.seed) if args.data else make_corpus(args.dates, 4, args.seed)
    )
    train, validation, test = corpus["train"], corpus["validation"], corpus["test"]
    print(f"data: {len(train)} train, {len(validation)} validation, {len(test)} test pairs"
          + ("" if args.data else f" ({len(usable_formats())} locale formats)"))  # fmt: skip
    for source, target, locale, _ in train[:5]:
        print(f"  {locale:6} {source!r} → {target!r}")

    model, resume, initial_epoch, train_seconds = train_model(args, output, train, validation)
    width = args.beam_width
    search = BeamSearch(width, max_length=MAX_LENGTH) if width > 1 else GreedySearch(MAX_LENGTH)
    translator = Translator(model, search)
    predictions = translator.translate([row[0] for row in test])
    table, markdown = results_table(test, predictions)
    print(f"\ntest split ({len(test)} pairs of dates never seen in training):\n{markdown}")
    misses = [(row[0], p, row[1]) for row, p in zip(test, predictions) if p != row[1]]
    for source, prediction, target in misses[:5]:
        print(f"  miss: {source!r} → {prediction!r} (expected {target!r})")
    heatmaps = write_heatmaps(translator, test, output / "alignments", args.heatmaps)

    model_path, model_dir = output / "translator.keras", output / "serving" / "translator" / "1"
    model.save(model_path)
    export_saved_model(translator, model_dir, overwrite=True)
    reloaded = {"outputs": []}
    if queries:  # a fresh process that imports TensorFlow and tensorflow-text only
        command = [sys.executable, "-c", RELOAD, str(model_dir), *queries]
        reloaded = _shared.last_json_line(_shared.run_checked(command, "reloading the SavedModel"))
    print("\nthe SavedModel, reloaded in a fresh process (TensorFlow + tensorflow-text only):")
    for query, answer in zip(queries, reloaded["outputs"]):
        print(f"  {query!r} → {answer!r}")
    epochs, wall_seconds = len(resume.history["loss"]), time.perf_counter() - started
    print(f"\ntrained {epochs} epochs in {train_seconds:.0f} s; total {wall_seconds:.0f} s; "
          f"wrote {model_path} (Keras), {model_dir} (SavedModel), {len(heatmaps)} heatmaps\n"
          f"serve: docker run -p 8501:8501 -v {model_dir.parent.resolve()}:/models/translator "
          "-e MODEL_NAME=translator tensorflow/serving")  # fmt: skip
    return {
        "config": vars(args), "pairs": {k: len(v) for k, v in corpus.items()},
        "epochs_run": epochs, "history": resume.history, "resumed_from_epoch": initial_epoch,
        "train_seconds": train_seconds, "wall_seconds": wall_seconds,
        "table": table, "test_exact_match": table[0]["exact"], "heatmaps": heatmaps,
        "keras_model": str(model_path), "saved_model": str(model_dir), "queries": queries,
        "reloaded_outputs": reloaded["outputs"],
        "reload_imported_keras_attention": reloaded.get("keras_attention_imported", False),
    }  # fmt: skip


if __name__ == "__main__":
    main()
