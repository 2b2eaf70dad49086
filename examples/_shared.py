"""What the example scripts share: their command line's common pieces, the output folder,
the settings a smoke run overrides, the character tokenizers and the Seq2Seq training set-up,
and running a fresh process that must not import `keras_attention`.

Each example imports it after putting `examples/` on `sys.path` ::

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _shared import add_output_dir, add_seed, output_folder, positive_int  # noqa: E402

Every flag keeps its own name, default and help text in the script that declares it; these
functions only stop the scripts from copying the same lines. (Not `_common`: that is
`benchmarks/_common.py`, and `benchmarks/bench_serving.py` imports an example after it.)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

import keras

TEMP_DIR_HELP = "Where to write (default: a temp dir)."


# ---------------------------------------------------------------- command line
def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: an integer >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def unit_fraction(text: str) -> float:
    """An argparse type: a number in [0, 1) (label smoothing, an EMA's momentum)."""
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def make_parser(doc: str) -> argparse.ArgumentParser:
    """An example's parser, described by the first paragraph of its module docstring."""
    return argparse.ArgumentParser(description=doc.split("\n\n")[0])


def add_output_dir(parser: argparse.ArgumentParser, help: str = TEMP_DIR_HELP) -> None:
    """Add `--output-dir` (default: None, a new temporary folder; see `output_folder`)."""
    parser.add_argument("--output-dir", default=None, help=help)


def add_seed(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """Add `--seed` (an int, default 0)."""
    parser.add_argument("--seed", type=int, default=0, help=help)


def add_smoke(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """Add `--smoke` (tiny sizes for the tests)."""
    parser.add_argument("--smoke", action="store_true", help=help)


def apply_smoke(args: argparse.Namespace, smoke: dict[str, Any]) -> None:
    """Set the smoke run's sizes on `args`, whatever the flags said."""
    for key, value in smoke.items():
        setattr(args, key, value)


def settings(
    args: argparse.Namespace, defaults: dict, smoke: dict, names: tuple[str, ...]
) -> dict[str, Any]:
    """The run's settings: the smoke or default ones, with the flags in `names` that were given
    (not None) on top."""
    config = dict(smoke if args.smoke else defaults)
    for name in names:
        if getattr(args, name) is not None:
            config[name] = getattr(args, name)
    return config


def output_folder(args: argparse.Namespace, prefix: str) -> Path:
    """`--output-dir`, or a new temporary folder named `prefix...`; created if missing."""
    output = Path(args.output_dir or tempfile.mkdtemp(prefix=prefix))
    output.mkdir(parents=True, exist_ok=True)
    return output


# ---------------------------------------------------------------- model set-up
def char_tokenizers(sources, targets, *, lowercase_source: bool = False) -> tuple:
    """A source and a target `CharTokenizer`, adapted to the training pairs."""
    from keras_attention.text import CharTokenizer

    source_tokenizer, target_tokenizer = CharTokenizer(lowercase=lowercase_source), CharTokenizer()
    source_tokenizer.adapt(sources)
    target_tokenizer.adapt(targets)
    return source_tokenizer, target_tokenizer


def compile_for_training(
    model: keras.Model, optimizer: keras.optimizers.Optimizer, **kwargs: Any
) -> None:
    """Compile a model that outputs logits over target ids: sparse cross-entropy on the logits,
    token accuracy, XLA unless `jit_compile=False` is given."""
    kwargs.setdefault("jit_compile", True)
    model.compile(
        optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        **kwargs,
    )


# ---------------------------------------------------------------- fresh processes
def run_checked(command: list[str], failure: str, timeout: float = 600) -> str:
    """Run `command` (a fresh process); its stdout, or a RuntimeError with the end of its
    stderr, `failure` naming what failed."""
    import subprocess

    run = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if run.returncode:
        raise RuntimeError(f"{failure} failed:\n{run.stderr[-3000:]}")
    return run.stdout


def last_json_line(stdout: str) -> Any:
    """The JSON a runner printed last (what it printed before, warnings, is skipped)."""
    return json.loads(stdout.strip().splitlines()[-1])


def resume_arguments(parser) -> None:
    """Add `--resume` to an example's argument parser (`keras_attention.training`'s
    `ResumableTraining` backs up every epoch)."""
    parser.add_argument(
        "--resume",
        action="store_true",
        help="Resume from the backup in --output-dir (written at every epoch's end).",
    )
