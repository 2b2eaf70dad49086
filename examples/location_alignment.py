"""Location-sensitive attention keeps a monotonic alignment where additive attention wanders.

The task: copy a sequence of 8-14 tokens drawn from only 3 symbols (padded with 0). The
encoder is one `Conv1D` (kernel 3) over the embeddings, so an encoder output knows its token and
its two neighbours but not its position: the same three-token context recurs all over the
sequence, and content alone cannot say which occurrence to copy next. The decoder is a
`BahdanauAttentionCell(GRUCell(32), attention)` with teacher forcing; the right alignment is the
diagonal (target step t reads source position t).

Two decoders are trained on the same data for the same number of epochs:

- `AdditiveAttention(16)`: the query (the decoder state) has to carry the position;
- `LocationSensitiveAttention(16, filters=8, kernel_size=5)`: the score also sees the
  convolved previous alignment, so "one step to the right of where I was" is a feature.

The script prints, for both, the token accuracy on unseen sequences and how monotonic the
alignments are: the mean weight on the diagonal position, the fraction of steps whose largest
weight is on the diagonal, and (whatever the offset) the fraction of steps whose largest weight
sits exactly one position right of the previous step's.

Run it (a few minutes on 2 CPU cores)::

    python examples/location_alignment.py
    python examples/location_alignment.py --smoke    # tiny and fast, what the tests run

`main(argv)` runs it and returns the metrics as a dict.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention import (  # noqa: E402
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttentionCell,
    LocationSensitiveAttention,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _shared import add_smoke  # noqa: E402

SYMBOLS, START = 3, 4  # tokens 1..3, start token 4, padding 0
VOCAB = 5
DEFAULTS = {
    "samples": 2000, "epochs": 12, "min_length": 8, "max_length": 14, "seed": 0, "jit": "auto",
}  # fmt: skip
# The smoke run skips XLA (compiling the decoder loop costs more than the whole smoke run).
SMOKE = {"samples": 32, "epochs": 1, "min_length": 4, "max_length": 6, "seed": 0, "jit": False}


def make_data(samples: int, min_length: int, max_length: int, seed: int) -> dict:
    """Random sequences over 3 symbols; the target copies the source."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_length, max_length + 1, size=samples)
    source = rng.integers(1, SYMBOLS + 1, size=(samples, max_length)).astype("int32")
    source[np.arange(max_length)[None, :] >= lengths[:, None]] = 0
    decoder_in = np.concatenate([np.full((samples, 1), START, "int32"), source[:, :-1]], 1)
    decoder_in[source == 0] = 0
    return {"source": source, "decoder_in": decoder_in, "labels": source, "lengths": lengths}


def build(kind: str) -> keras.Model:
    source = keras.Input((None,), dtype="int32", name="source")
    decoder_in = keras.Input((None,), dtype="int32", name="decoder_in")
    embedded = keras.layers.Embedding(VOCAB, 16, mask_zero=True)(source)
    memory = keras.layers.Conv1D(32, 3, padding="same", activation="tanh")(embedded)
    if kind == "location":
        attention = LocationSensitiveAttention(16, filters=8, kernel_size=5)
    else:
        attention = AdditiveAttention(16)
    cell = BahdanauAttentionCell(keras.layers.GRUCell(32), attention)
    y = keras.layers.Embedding(VOCAB, 8, mask_zero=True)(decoder_in)
    outputs, alignments = AttentionRNN(cell, return_attention_scores=True)(
        y, memory, memory_mask=keras.ops.not_equal(source, 0)
    )
    logits = keras.layers.Dense(VOCAB, name="logits")(outputs)
    return keras.Model([source, decoder_in], {"logits": logits, "alignments": alignments})


def evaluate(model: keras.Model, data: dict) -> dict:
    out = model({"source": data["source"], "decoder_in": data["decoder_in"]})
    out = {key: keras.ops.convert_to_numpy(value) for key, value in out.items()}
    valid = data["labels"] != 0
    accuracy = float((out["logits"].argmax(-1) == data["labels"])[valid].mean())
    steps = np.arange(data["labels"].shape[1])
    diagonal = out["alignments"][:, steps, steps]  # weight of target step t on source t
    peaks = out["alignments"].argmax(-1)
    on_diagonal = peaks == steps[None, :]
    # Offset-free monotonicity: the peak moves exactly one position right from step to step.
    one_step = (np.diff(peaks, axis=1) == 1)[valid[:, 1:]]
    return {
        "accuracy": accuracy,
        "diagonal_weight": float(diagonal[valid].mean()),
        "argmax_on_diagonal": float(on_diagonal[valid].mean()),
        "peak_moves_one_right": float(one_step.mean()),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_smoke(parser)
    parser.add_argument("--epochs", type=int)
    args = parser.parse_args(argv)
    config = dict(SMOKE if args.smoke else DEFAULTS)
    if args.epochs:
        config["epochs"] = args.epochs
    train = make_data(config["samples"], config["min_length"], config["max_length"], 1)
    test = make_data(256 if not args.smoke else 16, config["min_length"], config["max_length"], 2)
    results = {}
    for kind in ("additive", "location"):
        keras.utils.set_random_seed(config["seed"])
        model = build(kind)
        model.compile(
            keras.optimizers.Adam(3e-3),
            loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
            jit_compile=config["jit"],
            run_eagerly=args.smoke,  # tracing the loop costs more than the smoke run itself
        )
        start = time.perf_counter()
        model.fit(
            {"source": train["source"], "decoder_in": train["decoder_in"]},
            {"logits": train["labels"]},
            epochs=config["epochs"],
            batch_size=64,
            verbose=0,
        )
        results[kind] = dict(evaluate(model, test), seconds=time.perf_counter() - start)
    print(
        f"{'attention':<10} {'accuracy':>9} {'diag. weight':>13} {'argmax=diag.':>13} "
        f"{'peak +1':>8} {'time':>7}"
    )
    for kind, r in results.items():
        print(
            f"{kind:<10} {r['accuracy']:>9.3f} {r['diagonal_weight']:>13.3f} "
            f"{r['argmax_on_diagonal']:>13.3f} {r['peak_moves_one_right']:>8.3f} "
            f"{r['seconds']:>6.0f}s"
        )
    return results


if __name__ == "__main__":
    main()
