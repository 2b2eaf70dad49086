"""Train a small attention translator, export it for TF Serving, and query the export.

The task: normalise English dates ("march 3, 2021", "3 mar 2021", "the 3rd of march 2021",
"2021/3/3" …) to ISO 8601 ("2021-03-03"), character level. The pairs are generated from a
seed with the standard library (nothing is downloaded); the test dates never occur in
training.

Steps:

1. tokenizers (`keras_attention.text.CharTokenizer`, in-graph) and a `Seq2Seq` model with
   Luong attention, trained for a few epochs with XLA;
2. `export_saved_model` writes `OUTPUT/serving/translator/1` (TF Serving's layout:
   `<model base path>/<version>/`) with two signatures: `serving_default` (token ids in;
   `ids`, `scores`, `lengths`, `alignments` out) and `translate` (strings in, strings out),
   refusing sources longer than twice the longest training source (`max_source_length`);
3. the export is queried the way TF Serving runs it, in fresh processes that never import
   `keras_attention`: `saved_model_cli run` (the session-based loader TF Serving uses) on
   `serving_default`, and a REST-style `{"signature_name": "translate", "instances": […]}`
   request answered through `tf.saved_model.load` (`request.json` and `response.json` are
   written next to the model: post the request to a real server unchanged);
4. prints the `docker run tensorflow/serving` and `curl` commands that serve it.

Run it (about a minute on 2 CPU cores)::

    python examples/export_for_serving.py
    python examples/export_for_serving.py --smoke    # tiny and fast, what the tests run
    python examples/export_for_serving.py --output-dir out/ "july 4, 1976" "1 jan 2000"

`main(argv)` runs it and returns the results as a dict.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention.decoding import GreedySearch  # noqa: E402
from keras_attention.export import export_saved_model  # noqa: E402
from keras_attention.models import Seq2Seq, Translator  # noqa: E402
from keras_attention.text import pairs_dataset  # noqa: E402

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
    run_checked,
)

MONTHS = [
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
]  # fmt: skip
DEFAULT_QUERIES = ["july 4, 1976", "the 1st of january 2000", "25 dec 1999", "2021/3/9"]
MAX_LENGTH = 12  # "yyyy-mm-dd" and the end token, with room to spare


def _ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def render(date: datetime.date, style: int) -> str:
    """One of eight English renderings of `date` (each determines the date: four-digit
    years, month names or year-first numbers only)."""
    month, short = MONTHS[date.month - 1], MONTHS[date.month - 1][:3]
    d, y = date.day, date.year
    return [
        f"{month} {d}, {y}",
        f"{d} {month} {y}",
        f"{short} {d} {y}",
        f"{d} {short} {y}",
        f"the {_ordinal(d)} of {month} {y}",
        f"{month} {_ordinal(d)} {y}",
        f"{y}/{date.month}/{d}",
        f"{y}.{date.month:02d}.{d:02d}",
    ][style]


def make_pairs(count: int, seed: int, exclude: set | None = None) -> tuple[list, list, set]:
    """`count` (source, ISO target) pairs of distinct dates 1950-2049 not in `exclude`."""
    rng = np.random.default_rng(seed)
    start, days = datetime.date(1950, 1, 1), 365 * 100 + 25
    exclude = exclude or set()
    dates: set = set()
    while len(dates) < count:
        date = start + datetime.timedelta(days=int(rng.integers(days)))
        if date not in exclude:
            dates.add(date)
    ordered = sorted(dates)
    sources = [render(date, int(rng.integers(8))) for date in ordered]
    order = rng.permutation(len(ordered))
    return [sources[i] for i in order], [ordered[i].isoformat() for i in order], dates


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__)
    parser.add_argument("queries", nargs="*", help="Dates to translate through the export.")
    parser.add_argument("--samples", type=positive_int, default=6000, help="Training pairs.")
    parser.add_argument("--epochs", type=positive_int, default=6, help="Training epochs.")
    parser.add_argument("--units", type=positive_int, default=96, help="Decoder LSTM units.")
    add_output_dir(parser)
    add_smoke(parser, "Tiny sizes, one epoch (tests).")
    add_seed(parser, "Seed of data and weights.")
    args = parser.parse_args(argv)
    if args.smoke:
        args.samples, args.epochs, args.units = 200, 1, 16
    return args


def query_like_tf_serving(model_dir: Path, request: dict, source_ids: np.ndarray) -> dict:
    """Answer `request` (TF Serving's REST `:predict` body) and run `saved_model_cli` on
    `serving_default`, each in a fresh process that imports only TensorFlow (+ tf-text)."""
    code = textwrap.dedent(
        f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (TF Serving's image ships the tf-text ops)
        request = json.loads({json.dumps(request)!r})
        loaded = tf.saved_model.load({str(model_dir)!r})
        signature = loaded.signatures[request["signature_name"]]
        outputs = signature(inputs=tf.constant(request["instances"]))
        predictions = [
            {{"outputs": o.decode(), "scores": float(s)}}
            for o, s in zip(outputs["outputs"].numpy(), outputs["scores"].numpy())
        ]
        loaded_modules = sorted(m for m in sys.modules if m.startswith("keras_attention"))
        print(json.dumps({{"predictions": predictions, "keras_attention": loaded_modules}}))
        """
    )
    response = last_json_line(run_checked([sys.executable, "-c", code], sys.executable))
    cli = Path(sys.executable).with_name("saved_model_cli")
    with tempfile.TemporaryDirectory() as outdir:
        run_checked(
            [
                str(cli), "run", "--dir", str(model_dir), "--tag_set", "serve",
                "--signature_def", "serving_default",
                "--input_exprs", f"source_ids={source_ids.tolist()}", "--outdir", outdir,
            ],
            str(cli),
        )  # fmt: skip
        cli_ids = np.load(Path(outdir) / "ids.npy")
    return {"response": response, "saved_model_cli_ids": cli_ids}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Train, export, query the export; return what was measured and written."""
    args = _parse(argv)
    keras.utils.set_random_seed(args.seed)
    output = output_folder(args, "export_for_serving_")
    queries = args.queries or DEFAULT_QUERIES

    train_src, train_tgt, train_dates = make_pairs(args.samples, args.seed)
    test_src, test_tgt, _ = make_pairs(max(20, args.samples // 20), args.seed + 1, train_dates)
    model, train_seconds = _train(args, train_src, train_tgt)
    translator = Translator(model, GreedySearch(max_length=MAX_LENGTH))
    predictions = translator.translate(test_src)
    exact = float(np.mean([p == t for p, t in zip(predictions, test_tgt)]))
    print(f"\ntrained {args.epochs} epochs in {train_seconds:.1f} s; test exact match "
          f"{exact:.1%} on {len(test_src)} unseen dates")  # fmt: skip

    model_dir = output / "serving" / "translator" / "1"
    # The source-length limit from the training data: twice its longest source, in tokens
    # (a longer request is refused with a clear error instead of holding a core for seconds).
    longest = int(model.source_tokenizer.tokenize(train_src).shape[1])
    max_source_length = 2 * longest
    export_saved_model(
        model,
        model_dir,
        translator.search,
        max_source_length=max_source_length,
        overwrite=True,
    )
    request = {"signature_name": "translate", "instances": queries}
    served = _serve(model_dir, output, request, translator)
    response = served["response"]
    _print_report(queries, served, model_dir, output)
    return {
        "config": vars(args),
        "train_seconds": train_seconds,
        "test_exact_match": exact,
        "model_dir": str(model_dir),
        "max_source_length": max_source_length,
        "request": request,
        "predictions": response["predictions"],
        "python_outputs": served["python_outputs"],
        "served_equals_python": served["served_outputs"] == served["python_outputs"],
        "saved_model_cli_equals_python": served["same_ids"],
        "serving_process_keras_attention_modules": response["keras_attention"],
    }


def _train(args: argparse.Namespace, train_src: list, train_tgt: list) -> tuple:
    """`(model, seconds)`: a Luong `Seq2Seq` with character tokenizers, trained on the
    pairs."""
    source_tokenizer, target_tokenizer = char_tokenizers(
        train_src, train_tgt, lowercase_source=True
    )
    model = Seq2Seq(
        embedding_dim=32,
        units=args.units,
        attention="luong",
        score_mode="general",
        source_tokenizer=source_tokenizer,
        target_tokenizer=target_tokenizer,
    )
    compile_for_training(model, keras.optimizers.Adam(5e-3))
    data = pairs_dataset(
        train_src, train_tgt, source_tokenizer, target_tokenizer, shuffle=True, seed=args.seed
    )
    started = time.perf_counter()
    # pairs_dataset shuffles (anew each epoch); Keras cannot shuffle a tf.data pipeline.
    model.fit(data, epochs=args.epochs, shuffle=False, verbose=2 if not args.smoke else 0)
    return model, time.perf_counter() - started


def _serve(model_dir: Path, output: Path, request: dict, translator: Translator) -> dict:
    """Send `request` (written to `request.json`) to the export as TF Serving would (its
    response written to `response.json`), run `saved_model_cli` on its ids, and translate
    the same queries in Python: the answers of each."""
    queries = request["instances"]
    (output / "request.json").write_text(json.dumps(request, ensure_ascii=False, indent=1))
    source_ids = translator.source_tokenizer.tokenize(queries, add_end=True).numpy()
    served = query_like_tf_serving(model_dir, request, source_ids)
    response = served["response"]
    (output / "response.json").write_text(
        json.dumps({"predictions": response["predictions"]}, ensure_ascii=False, indent=1)
    )
    python_outputs = translator.translate(queries)
    same_ids = bool(np.array_equal(served["saved_model_cli_ids"], translator(source_ids)["ids"]))
    return {
        "response": response,
        "served_outputs": [p["outputs"] for p in response["predictions"]],
        "python_outputs": python_outputs,
        "same_ids": same_ids,
    }


def _print_report(queries: list[str], served: dict, model_dir: Path, output: Path) -> None:
    """Print the export's answers next to Python's, and how to serve and query it."""
    print("\n| query | exported model (translate) | Python translator |")
    print("|---|---|---|")
    for query, served_out, python_out in zip(
        queries, served["served_outputs"], served["python_outputs"]
    ):
        print(f"| {query} | {served_out} | {python_out} |")
    print(f"\nsaved_model_cli run serving_default: same ids as Python: {served['same_ids']}")
    print(
        f"keras_attention modules in the serving process: {served['response']['keras_attention']}"
    )
    print(
        textwrap.dedent(
            f"""
            Written:
              {model_dir}  (SavedModel, signatures serving_default and translate)
              {output / "request.json"}  {output / "response.json"}
            Serve it:
              docker run -p 8501:8501 -v {model_dir.parent.resolve()}:/models/translator \\
                  -e MODEL_NAME=translator tensorflow/serving
              curl -d @{output / "request.json"} \\
                  http://localhost:8501/v1/models/translator:predict"""
        )
    )


if __name__ == "__main__":
    main()
