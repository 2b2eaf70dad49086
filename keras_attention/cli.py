"""The `keras-attention` command (also `python -m keras_attention`): train, predict, evaluate
and export a seq2seq model on a TSV of string pairs, over `keras_attention.pairs`.

    keras-attention train --train train.tsv --valid dev.tsv --output-dir model/
    keras-attention predict --model model/ words.txt        # source<TAB>prediction
    keras-attention evaluate --model model/ test.tsv        # WER / PER table and JSON
    keras-attention export --model model/ --saved-model serving/1 --litert model.tflite

Bad input (a file that is not UTF-8, a line without a tab, an empty target, a folder that is
not a model) ends the command with `keras-attention CMD: error: ...` naming the file and line,
exit status 2, and nothing half-written in the model folder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

PROG = "keras-attention"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Seq2seq with attention on TSV pairs (source<TAB>target): train, predict, "
        "evaluate, export.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    train = commands.add_parser(
        "train",
        help="Train a model folder on TSV pairs.",
        description="Train on --train's pairs, keep the weights of the best WER on --valid's, "
        "and write the model folder (config.json, model.keras, training.json). Settings not "
        "given are chosen from the data's size and written to config.json.",
    )
    train.add_argument("--train", required=True, help="Training pairs (TSV, UTF-8).")
    train.add_argument("--valid", required=True, help="Validation pairs: choose the weights.")
    train.add_argument("--output-dir", required=True, help="The model folder to write.")
    budget = train.add_mutually_exclusive_group()
    budget.add_argument(
        "--time-budget",
        type=_positive_float,
        metavar="MIN",
        help="Wall minutes of training, all members together.",
    )
    budget.add_argument(
        "--cpu-budget",
        type=_positive_float,
        metavar="MIN",
        help="CPU minutes of training instead (reproducible under load).",
    )
    train.add_argument(
        "--members", type=_positive_int, help="Models of several seeds, decoded as one ensemble."
    )
    train.add_argument(
        "--workers",
        type=_positive_int,
        help="Members trained at once, each in its own process (default: as many as there "
        "are members and CPU cores).",
    )
    train.add_argument(
        "--resume",
        action="store_true",
        help="Go on from the backups of a stopped run in --output-dir.",
    )
    train.add_argument("--seed", type=int, default=0, help="Seed of the first member.")
    train.add_argument(
        "--target-chars",
        action="store_true",
        help="Targets are characters, not space-separated symbols.",
    )
    model = train.add_argument_group("model and training (default: chosen from the data)")
    model.add_argument("--rnn", choices=("gru", "lstm"))
    model.add_argument("--attention", choices=("bahdanau", "luong", "location_sensitive"))
    model.add_argument("--units", type=_positive_int)
    model.add_argument("--embedding-dim", type=_positive_int)
    model.add_argument("--dropout", type=_fraction)
    model.add_argument("--batch-size", type=_positive_int)
    model.add_argument("--learning-rate", type=_positive_float)
    model.add_argument("--epochs", type=_positive_int, help="Most epochs per member.")
    model.add_argument("--patience", type=_positive_int)
    model.add_argument("--beam-width", type=_positive_int)
    model.add_argument("--no-xla", action="store_true", help="Train and decode without XLA.")
    train.add_argument("--quiet", action="store_true", help="Print nothing but errors.")

    predict = commands.add_parser(
        "predict",
        help="Decode sources, one a line.",
        description="Read sources, one a line (a line with a tab: what precedes it), and "
        "print `source<TAB>prediction` (with --n-best N: N lines a source, each "
        "`source<TAB>prediction<TAB>score`, best first).",
    )
    _model_argument(predict)
    predict.add_argument(
        "input", nargs="?", default="-", metavar="FILE", help="Sources (default: standard input)."
    )
    predict.add_argument("--beam-width", type=_positive_int)
    predict.add_argument("--n-best", type=_positive_int, default=1)
    predict.add_argument("--output", help="Write here instead of standard output.")

    evaluate = commands.add_parser(
        "evaluate",
        help="WER and PER on TSV pairs.",
        description="Score the model on TSV pairs: WER (%% of sources whose prediction equals "
        "none of their references) and PER (edit distance to the closest reference over its "
        "length), printed as a table and written as JSON.",
    )
    _model_argument(evaluate)
    evaluate.add_argument("test", metavar="TEST.tsv", help="Pairs to score.")
    evaluate.add_argument("--beam-width", type=_positive_int)
    evaluate.add_argument("--output", help="The JSON file (default MODEL/evaluation.json).")
    evaluate.add_argument("--predictions", help="Also write source<TAB>prediction<TAB>references.")

    export = commands.add_parser(
        "export",
        help="Write a SavedModel (TF Serving) and/or a .tflite file (LiteRT).",
    )
    _model_argument(export)
    export.add_argument("--saved-model", metavar="DIR", help="SavedModel directory to write.")
    export.add_argument("--litert", metavar="FILE", help=".tflite file to write.")
    export.add_argument("--overwrite", action="store_true", help="Replace existing outputs.")
    return parser


def _model_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="A folder written by `train`.")


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv` (default `sys.argv[1:]`); the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "export" and not (args.saved_model or args.litert):
        parser.error("export: give --saved-model DIR, --litert FILE, or both")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from keras_attention.pairs import PairsFileError

    try:
        return {"train": _train, "predict": _predict, "evaluate": _evaluate, "export": _export}[
            args.command
        ](args)
    except (PairsFileError, FileExistsError, FileNotFoundError, ValueError) as error:
        print(f"{PROG} {args.command}: error: {error}", file=sys.stderr)
        return 2


def _train(args: argparse.Namespace) -> int:
    from keras_attention.pairs import train

    settings: dict[str, Any] = {
        name: getattr(args, name)
        for name in (
            "rnn",
            "attention",
            "units",
            "embedding_dim",
            "dropout",
            "batch_size",
            "learning_rate",
            "epochs",
            "patience",
            "beam_width",
            "workers",
        )
        if getattr(args, name) is not None
    }
    if args.no_xla:
        settings["jit_compile"] = False
    train(
        args.train,
        args.valid,
        args.output_dir,
        time_budget=args.time_budget,
        cpu_budget=args.cpu_budget,
        members=args.members,
        seed=args.seed,
        resume=args.resume,
        target_chars=args.target_chars,
        verbose=0 if args.quiet else None,
        **settings,
    )
    return 0


def _predict(args: argparse.Namespace) -> int:
    from keras_attention.pairs import PairModel, read_sources

    sources = read_sources(args.input, argument="FILE")
    model = PairModel(args.model)
    results = model.predict(sources, _search(model, args), n_best=args.n_best)
    lines = []
    for source, hypotheses in zip(sources, results):
        for prediction, score in hypotheses:
            lines.append(f"{source}\t{prediction}" + (f"\t{score:.4f}" if args.n_best > 1 else ""))
    text = "".join(f"{line}\n" for line in lines)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _search(model, args: argparse.Namespace):
    """The search of `--beam-width` (beam search past 1, greedy at 1), else the model's."""
    return model.settings.search(args.beam_width)


def _evaluate(args: argparse.Namespace) -> int:
    from keras_attention.pairs import PairModel, read_pairs

    model = PairModel(args.model)
    pairs = read_pairs(args.test, model.settings.target_chars, argument="TEST.tsv")
    result = model.evaluate(pairs, _search(model, args))
    predictions = result.pop("predictions")
    result["file"] = str(args.test)
    output = Path(args.output) if args.output else model.directory / "evaluation.json"
    output.write_text(json.dumps(result, indent=1), encoding="utf-8")
    if args.predictions:
        joiner = "" if model.settings.target_chars else " "
        rows = ["source\tprediction\treferences"] + [
            f"{s}\t{joiner.join(p)}\t{' | '.join(joiner.join(r) for r in refs)}"
            for s, p, refs in zip(pairs.sources, predictions, pairs.references)
        ]
        Path(args.predictions).write_text("\n".join(rows) + "\n", encoding="utf-8")
    name = Path(args.test).name
    width = max(len(name), 4)
    print(f"{'file':{width}}  {'words':>6}  {'WER':>7}  {'PER':>7}  beam")
    print(
        f"{name:{width}}  {result['words']:>6}  {result['wer']:>6.2f}%  "
        f"{result['per']:>6.2f}%  {result['beam_width']}"
    )
    print(f"written to {output}")
    return 0


def _export(args: argparse.Namespace) -> int:
    from keras_attention.pairs import PairModel

    model = PairModel(args.model)
    if args.saved_model:
        signatures = model.export_saved_model(args.saved_model, overwrite=args.overwrite)
        print(f"SavedModel: {args.saved_model} (signatures: {', '.join(signatures)})")
        if "translate" not in signatures:
            print(
                "  no `translate` (strings) signature: it is built with tensorflow-text "
                '(pip install "keras-recurrent-attention[text]")'
            )
    if args.litert:
        info = model.export_litert(args.litert, overwrite=args.overwrite)
        print(f"LiteRT: {args.litert} ({info['bytes'] / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
