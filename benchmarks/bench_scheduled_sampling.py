"""Exposure bias: teacher-forced vs free-running accuracy, with and without scheduled sampling.

Task: reverse a random sequence of 3-9 tokens drawn from 10 symbols (ids 4-13; 2 = start,
3 = end, 0 = padding), ids to ids, no tokenizer. Model: `Seq2Seq(16, 16, embedding_dim=16,
units=32)` (bidirectional LSTM encoder, Luong general attention, input feeding), Adam 3e-3,
batch 64, XLA (`jit_compile=True`; `--no-jit`: graph mode), the same initial weights and data
order for every run.

Runs (same epochs): teacher forcing; scheduled sampling with the inverse-sigmoid schedule
(`ScheduledSampling("inverse_sigmoid", k)`) feeding sampled tokens; the same feeding argmax
tokens; a linear schedule. Measured on held-out pairs after training:

- teacher-forced token accuracy: `model.evaluate` (labels given, padding masked);
- free-running token accuracy: greedy decoding (`Translator`, no labels), the fraction of target
  positions (end token included) where the decoded token equals the label;
- exact match: the fraction of sequences decoded entirely right;
- gap = teacher-forced − free-running token accuracy (what exposure bias costs).

Usage:
    python benchmarks/bench_scheduled_sampling.py            # ~5 min on 2 cores
    python benchmarks/bench_scheduled_sampling.py --quick    # smoke test (2 runs, no XLA)
"""

from __future__ import annotations

import argparse
import time

import _common as C  # first: sets the TF/Keras environment before they are imported
import keras
import numpy as np

from keras_attention.decoding import GreedySearch
from keras_attention.models import ScheduledSampling, Seq2Seq, Translator

START, END, FIRST, SYMBOLS = 2, 3, 4, 10


def make_pairs(n, seed, low=3, high=9):
    """Source `[n, high + 1]` (end token, padding), decoder input and labels `[n, high + 1]`."""
    rng = np.random.default_rng(seed)
    width = high + 1
    src = np.zeros((n, width), "int32")
    dec = np.zeros((n, width), "int32")
    lab = np.zeros((n, width), "int32")
    for i in range(n):
        m = rng.integers(low, high + 1)
        seq = rng.integers(FIRST, FIRST + SYMBOLS, m)
        src[i, :m], src[i, m] = seq, END
        target = seq[::-1]
        dec[i, 0], dec[i, 1 : m + 1] = START, target
        lab[i, :m], lab[i, m] = target, END
    return {"source_ids": src, "target_ids": dec}, lab


def run(name, scheduled_sampling, mode, callback, data, test, epochs, initial, jit=True):
    keras.utils.set_random_seed(0)
    model = Seq2Seq(
        16,
        16,
        embedding_dim=16,
        units=32,
        sampling_probability=scheduled_sampling,
        sampling_mode=mode,
    )
    model.build({"source_ids": (None, None), "target_ids": (None, None)})
    for mine, theirs in zip(model.trainable_weights, initial, strict=True):
        mine.assign(theirs)
    model.compile(
        keras.optimizers.Adam(3e-3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        jit_compile=jit,
    )
    t0 = time.perf_counter()
    x, y = data
    history = model.fit(
        x,
        y,
        epochs=epochs,
        batch_size=64,
        shuffle=False,
        verbose=0,
        callbacks=[callback] if callback else [],
    )
    train_s = time.perf_counter() - t0
    (tx, ty) = test
    _, tf_accuracy = model.evaluate(tx, ty, batch_size=256, verbose=0)
    ids = Translator(model, GreedySearch(ty.shape[1]), jit_compile=jit)(tx["source_ids"])["ids"]
    valid = tx["target_ids"] != 0  # target positions (labels incl. the end token)
    free_running = float((ids[:, : ty.shape[1]] == ty)[valid].mean())
    exact = float(np.mean([np.array_equal(a[v], b[v]) for a, b, v in zip(ids, ty, valid)]))
    return {
        "run": name,
        "teacher_forced_token_accuracy": float(tf_accuracy),
        "free_running_token_accuracy": free_running,
        "gap": float(tf_accuracy) - free_running,
        "exact_match": exact,
        "final_p": history.history.get("sampling_probability", [0.0])[-1],
        "train_s": train_s,
    }


def _contenders(epochs: int) -> list[tuple]:
    """`(name, initial sampling probability, token mode, callback)` of each run: teacher
    forcing, then scheduled sampling on the inverse-sigmoid schedule (sampled and argmax
    tokens) and on the linear one."""
    k = max(1.0, epochs / 4)
    return [
        ("teacher forcing", None, "sample", None),
        (
            f"scheduled sampling, inverse sigmoid k={k:g}, sampled tokens",
            0.0,
            "sample",
            ScheduledSampling("inverse_sigmoid", k=k, max_probability=0.5),
        ),
        (
            f"scheduled sampling, inverse sigmoid k={k:g}, argmax tokens",
            0.0,
            "argmax",
            ScheduledSampling("inverse_sigmoid", k=k, max_probability=0.5),
        ),
        (
            f"scheduled sampling, linear slope {0.5 / epochs:.3g}, sampled tokens",
            0.0,
            "sample",
            ScheduledSampling("linear", slope=0.5 / epochs, max_probability=0.5),
        ),
    ]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--train", type=int, default=None, help="training pairs")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--no-jit", action="store_true", help="tf.function without XLA (compiles faster)"
    )
    args = parser.parse_args(argv)
    epochs = args.epochs or (2 if args.quick else 12)
    n_train = args.train or (256 if args.quick else 4000)
    data, test = make_pairs(n_train, 0), make_pairs(1000 if not args.quick else 128, 1)
    keras.utils.set_random_seed(0)
    reference = Seq2Seq(16, 16, embedding_dim=16, units=32)
    reference.build({"source_ids": (None, None), "target_ids": (None, None)})
    initial = [keras.ops.convert_to_numpy(w) for w in reference.trainable_weights]
    runs = _contenders(epochs)
    if args.quick:  # a smoke test: two runs, graph mode (XLA compilation dominates tiny runs)
        runs, args.no_jit = runs[:2], True
    info = C.machine_info()
    print(
        f"# bench_scheduled_sampling: reverse 3-9 of {SYMBOLS} symbols, {n_train} training pairs,"
        f" {epochs} epochs; {info['cpu']}, {info['cores']} cores; TF {info['tensorflow']}, "
        f"Keras {info['keras']}; keras_attention {info['code']}",
        flush=True,
    )
    results = [
        run(name, p, mode, cb, data, test, epochs, initial, jit=not args.no_jit)
        for name, p, mode, cb in runs
    ]
    header = ["run", "teacher-forced acc", "free-running acc", "gap", "exact match", "final p"]
    rows = [
        [
            r["run"],
            f"{r['teacher_forced_token_accuracy']:.3f}",
            f"{r['free_running_token_accuracy']:.3f}",
            f"{r['gap']:+.3f}",
            f"{r['exact_match']:.3f}",
            f"{r['final_p']:.2f}",
        ]
        for r in results
    ]
    print()
    print(C.markdown_table(header, rows))
    return C.write_json(args.json, {"benchmark": "bench_scheduled_sampling", "results": results})


if __name__ == "__main__":
    main()
