"""Search the attention seq2seq builder's hyperparameters with keras-tuner.

The task is the English date normaliser of `examples/export_for_serving.py` ("march 3,
2021", "the 3rd of march 2021", "2021/3/3" … → "2021-03-03"), character level, generated
from a seed (nothing is downloaded): training, validation and test pairs have disjoint dates.

`keras_attention.tuning.Seq2SeqHyperModel` builds a compiled `Seq2Seq` from
`keras_attention.tuning.search_space` (Luong or Bahdanau attention; Luong's score, global or
local alignment, window radius and input feeding, in conditional scopes; units, embedding
size, dropout, learning rate) and `keras_tuner.RandomSearch` tries `--trials` of them for
`--epochs` each on validation token accuracy (padding masked). The script then

1. prints the trials table (trial id, the active hyperparameters, validation accuracy,
   seconds), best first;
2. saves the best model (the tuner's best-epoch checkpoint, weights and optimizer state,
   with its tokenizers) as `OUTPUT/best_model.keras`;
3. reloads it from disk with `keras.saving.load_model` (safe mode), checks that its outputs
   are identical to the tuner's model, and evaluates greedy translations
   (`keras_attention.models.Translator`) on the held-out test dates: exact match of the
   whole ISO string.

Run it (about 5 minutes on 2 CPU cores; the tuner's files go to `OUTPUT/tuner/`)::

    python examples/tune.py
    python examples/tune.py --smoke                   # tiny and fast, what the tests run
    python examples/tune.py --trials 12 --epochs 4 --output-dir out/

`main(argv)` runs it and returns the results as a dict.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_tuner  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention.decoding import GreedySearch  # noqa: E402
from keras_attention.models import Translator  # noqa: E402
from keras_attention.text import pairs_dataset  # noqa: E402
from keras_attention.tuning import Seq2SeqHyperModel  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import (  # noqa: E402
    add_output_dir,
    add_seed,
    add_smoke,
    char_tokenizers,
    make_parser,
    output_folder,
    positive_int,
    settings,
)

MAX_LENGTH = 12  # "yyyy-mm-dd", the end token and room to spare
HYPERPARAMETERS = (
    "attention", "score_mode", "alignment", "window_radius", "input_feeding", "units",
    "embedding_dim", "dropout", "learning_rate",
)  # fmt: skip
DEFAULTS = {"samples": 3000, "trials": 6, "epochs": 3, "batch_size": 64, "jit_compile": True}
# Smoke: small fixed sizes, and no XLA (compiling each trial would cost more than it saves).
SMOKE = {"samples": 160, "trials": 2, "epochs": 1, "batch_size": 32, "jit_compile": False}
SMOKE_FIXED = {"units": 16, "embedding_dim": 8}


def _load_dates():
    # The date generator of the export example, loaded by path (`examples/` is no package).
    path = Path(__file__).resolve().with_name("export_for_serving.py")
    spec = importlib.util.spec_from_file_location("_export_for_serving_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


dates = _load_dates()


class ReportingRandomSearch(keras_tuner.RandomSearch):
    """`RandomSearch` that times each trial (`seconds`, by trial id) and prints one line when
    it ends."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds: dict[str, float] = {}

    def on_trial_begin(self, trial) -> None:
        super().on_trial_begin(trial)
        self.seconds[trial.trial_id] = time.perf_counter()

    def on_trial_end(self, trial) -> None:
        super().on_trial_end(trial)
        seconds = self.seconds[trial.trial_id] = time.perf_counter() - self.seconds[trial.trial_id]
        score = "failed" if trial.score is None else f"{trial.score:.3f}"
        settings = ", ".join(f"{k}={_format(v)}" for k, v in active_values(trial).items())
        print(f"trial {trial.trial_id}: val_accuracy {score} ({seconds:.0f} s) {settings}")


def active_values(trial) -> dict[str, Any]:
    """The trial's hyperparameters that applied (Luong-only ones are inactive for Bahdanau)."""
    hp = trial.hyperparameters
    return {name: hp.get(name) for name in HYPERPARAMETERS if name in hp and hp.is_active(name)}


def _format(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2g}"
    return str(value)


def trials_table(tuner: ReportingRandomSearch) -> list[dict[str, Any]]:
    """One row per trial, best first: id, active hyperparameters, score, seconds."""
    rows = [
        {
            "trial_id": trial.trial_id,
            "hyperparameters": active_values(trial),
            "val_accuracy": trial.score,
            "seconds": tuner.seconds.get(trial.trial_id),
            "status": trial.status,
        }
        for trial in tuner.oracle.trials.values()
    ]
    rows.sort(key=lambda row: -1.0 if row["val_accuracy"] is None else -row["val_accuracy"])
    return rows


def print_table(rows: list[dict[str, Any]], fixed: dict[str, Any]) -> None:
    """The trials as a Markdown table; fixed values in every row, `–` where inactive."""
    print("\n| trial | " + " | ".join(HYPERPARAMETERS) + " | val_accuracy | seconds |")
    print("|---" * (len(HYPERPARAMETERS) + 3) + "|")
    for row in rows:
        values = {**fixed, **row["hyperparameters"]}
        cells = [_format(values.get(name, "–")) for name in HYPERPARAMETERS]
        score = "failed" if row["val_accuracy"] is None else f"{row['val_accuracy']:.3f}"
        seconds = "" if row["seconds"] is None else f"{row['seconds']:.0f}"
        print(f"| {row['trial_id']} | " + " | ".join(cells) + f" | {score} | {seconds} |")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__)
    parser.add_argument(
        "--trials", type=positive_int, help=f"Trials. Default {DEFAULTS['trials']}."
    )
    parser.add_argument(
        "--epochs", type=positive_int, help=f"Epochs per trial. Default {DEFAULTS['epochs']}."
    )
    parser.add_argument(
        "--samples", type=positive_int, help=f"Training pairs. Default {DEFAULTS['samples']}."
    )
    add_output_dir(parser)
    add_smoke(parser, "2 tiny trials of 1 epoch, no XLA (the tests).")
    add_seed(parser, "Seed of data, search and weights.")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Search, save and reload the best model, evaluate it; return what was measured."""
    wall_start = time.perf_counter()
    args = _parse(argv)
    config = settings(args, DEFAULTS, SMOKE, ("trials", "epochs", "samples"))
    fixed = dict(SMOKE_FIXED) if args.smoke else {}
    output = output_folder(args, "tune_")
    keras.utils.set_random_seed(args.seed)

    data = _data(config, args.seed)
    print(
        f"Searching {config['trials']} trials x {config['epochs']} epochs on "
        f"{config['samples']} date pairs ({len(data['val_src'])} validation, "
        f"{len(data['test_src'])} test)"
    )
    search_start = time.perf_counter()
    tuner = _search(data, config, fixed, args.seed, output)
    search_seconds = time.perf_counter() - search_start
    rows = trials_table(tuner)
    if fixed:
        print("fixed: " + ", ".join(f"{k}={v}" for k, v in fixed.items()))
    print_table(rows, fixed)

    model_path = output / "best_model.keras"
    best_trial, best_values, checked = _check_best(tuner, model_path, data, config)
    wall_seconds = time.perf_counter() - wall_start
    print(f"\nsearch {search_seconds:.0f} s, total wall time {wall_seconds:.0f} s")
    return {
        "config": {**config, "fixed": fixed, "seed": args.seed},
        "trials": rows,
        "best": {
            "trial_id": best_trial.trial_id,
            "hyperparameters": best_values,
            "val_accuracy": best_trial.score,
        },
        "model_path": str(model_path),
        "tuner_dir": str(output / "tuner"),
        **checked,
        "search_seconds": search_seconds,
        "wall_seconds": wall_seconds,
    }


def _data(config: dict, seed: int) -> dict:
    """Disjoint training, validation and test dates; the tokenizers adapted to the training
    pairs; the training and validation datasets."""
    held_out = max(40, config["samples"] // 10)
    train_src, train_tgt, train_dates = dates.make_pairs(config["samples"], seed)
    val_src, val_tgt, val_dates = dates.make_pairs(held_out, seed + 1, train_dates)
    test_src, test_tgt, _ = dates.make_pairs(held_out, seed + 2, train_dates | val_dates)
    source_tokenizer, target_tokenizer = char_tokenizers(
        train_src, train_tgt, lowercase_source=True
    )
    train = pairs_dataset(
        train_src, train_tgt, source_tokenizer, target_tokenizer,
        batch_size=config["batch_size"], shuffle=True, seed=seed,
    )  # fmt: skip
    validation = pairs_dataset(
        val_src, val_tgt, source_tokenizer, target_tokenizer, batch_size=config["batch_size"]
    )
    return {
        "source_tokenizer": source_tokenizer,
        "target_tokenizer": target_tokenizer,
        "train": train,
        "validation": validation,
        "val_src": val_src,
        "test_src": test_src,
        "test_tgt": test_tgt,
    }


def _search(data: dict, config: dict, fixed: dict, seed: int, output: Path):
    """Run the random search (its trials in `output/tuner`); the tuner."""
    hypermodel = Seq2SeqHyperModel(
        source_tokenizer=data["source_tokenizer"],
        target_tokenizer=data["target_tokenizer"],
        fixed=fixed,
        jit_compile=config["jit_compile"],
    )
    tuner = ReportingRandomSearch(
        hypermodel,
        objective="val_accuracy",
        max_trials=config["trials"],
        seed=seed,
        directory=str(output),
        project_name="tuner",
        overwrite=True,
    )
    # pairs_dataset shuffles (anew each epoch); Keras cannot shuffle a tf.data pipeline.
    tuner.search(
        data["train"], validation_data=data["validation"], epochs=config["epochs"],
        shuffle=False, verbose=0,
    )  # fmt: skip
    return tuner


def _check_best(tuner, model_path: Path, data: dict, config: dict) -> tuple:
    """`(best_trial, its values, findings)`: save the best model to `model_path`, reload it,
    check that its outputs are the same, translate the test dates with it, and print it all."""
    best_trial = tuner.oracle.get_best_trials(1)[0]
    best = tuner.get_best_models(1)[0]  # rebuilt, with the best epoch's checkpoint
    best.save(model_path)
    reloaded = keras.saving.load_model(model_path)
    batch = next(iter(data["validation"]))[0]
    identical = bool(
        np.array_equal(
            keras.ops.convert_to_numpy(best(batch)), keras.ops.convert_to_numpy(reloaded(batch))
        )
    )
    test_src, test_tgt = data["test_src"], data["test_tgt"]
    translator = Translator(
        reloaded, GreedySearch(max_length=MAX_LENGTH), jit_compile=config["jit_compile"]
    )
    predictions = translator.translate(test_src)
    exact = float(np.mean([p == t for p, t in zip(predictions, test_tgt)]))
    examples = [
        {"source": s, "target": t, "prediction": p}
        for s, t, p in list(zip(test_src, test_tgt, predictions))[:4]
    ]
    best_values = active_values(best_trial)
    print(
        f"\nbest trial {best_trial.trial_id} (val_accuracy {best_trial.score:.3f}): "
        + ", ".join(f"{k}={_format(v)}" for k, v in best_values.items())
    )
    print(
        f"saved to {model_path}; reloaded with keras.saving.load_model: outputs identical: "
        f"{identical}"
    )
    print(
        f"reloaded best model, greedy translations of {len(test_src)} unseen dates: exact "
        f"match {exact:.1%}"
    )
    for example in examples:
        print(
            f"  {example['source']!r} -> {example['prediction']!r} (expected {example['target']!r})"
        )
    findings = {"reloaded_outputs_identical": identical, "test_exact_match": exact}
    return best_trial, best_values, {**findings, "examples": examples}


if __name__ == "__main__":
    main()
