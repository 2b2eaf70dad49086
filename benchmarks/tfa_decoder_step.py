"""The reference for bench_decoder.py: a tfa.seq2seq Luong decoder train step (TF 2.15, tf.keras 2).

Runs under a separate environment with TensorFlow Addons, which never supported Keras 3:

    python3 -m venv ../tfa-venv
    ../tfa-venv/bin/pip install tensorflow==2.15.1 tensorflow-addons==0.23.0
    ../tfa-venv/bin/python benchmarks/tfa_decoder_step.py            # prints JSON

bench_decoder.py finds that python through `--tfa-python` or `KERAS_ATTENTION_TFA_PYTHON`.

The model, at the sizes of bench_decoder.py (B=64, S=T=50, LSTM 256, vocab 500, float32):

    embedded = Embedding(500, 256)(target_ids)                              # [B, T, 256]
    mechanism = tfa.seq2seq.LuongAttention(256)        # keys = memory W (Dense, no bias)
    mechanism.setup_memory(memory, memory_sequence_length=lengths)          # every step
    cell = tfa.seq2seq.AttentionWrapper(LSTMCell(256), mechanism, attention_layer_size=256)
    decoder = tfa.seq2seq.BasicDecoder(cell, TrainingSampler(), output_layer=Dense(500),
                                       maximum_iterations=T)
    logits = decoder(embedded, initial_state=..., sequence_length=[T] * B).rnn_output

tfa's `LuongAttention` is Luong's "general" score (keys `h W`, score `s · k`);
`AttentionWrapper` feeds the attention back into the cell input (input feeding) and returns
`W_c [s_t; c_t]` (no tanh). The train step is a `tf.function(jit_compile=False|True)`: forward,
`SparseCategoricalCrossentropy(from_logits=True)` averaged over B·T, `GradientTape` gradients of
every trainable weight, `Adam(1e-3).apply_gradients`. If XLA compilation fails, the failure is
reported (`"error"`) instead of a time.

Modes:
    (default)   calibrate, time `--repeats` blocks of each jit setting, print one JSON object.
    --serve     for bench_decoder.py: build and warm up both settings, print one JSON line
                ({"ready": ...}), then for every stdin line `{"jit": bool, "inner": int}` run
                `inner` steps back to back and print `{"seconds_per_step": float}`; also
                `{"matmul": N, "inner": int}` (an N×N×N float32 matmul, for information).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.pop("TF_USE_LEGACY_KERAS", None)  # on 2.15 tf.keras is Keras 2 already

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # tfa's end-of-life and version-range warnings
    import tensorflow_addons as tfa  # noqa: E402


def make_data(B, T, S, d, vocab, seed=0):
    """Random target ids, memory and memory lengths in [S/2, S] (the first row is full)."""
    rng = np.random.default_rng(seed)
    ids = tf.constant(rng.integers(1, vocab, size=(B, T)), "int32")
    targets = tf.constant(rng.integers(1, vocab, size=(B, T)), "int32")
    memory = tf.constant(rng.standard_normal((B, S, d)), "float32")
    lengths = rng.integers(max(1, S // 2), S + 1, size=(B,))
    lengths[0] = S
    return ids, targets, memory, tf.constant(lengths, "int32")


class TfaDecoder:
    """Embedding → tfa AttentionWrapper(LSTMCell, LuongAttention) BasicDecoder → Dense logits."""

    def __init__(self, B, T, units, vocab):
        self.B, self.T = B, T
        self.embedding = tf.keras.layers.Embedding(vocab, units)
        self.mechanism = tfa.seq2seq.LuongAttention(units)  # memory set in every step
        self.cell = tfa.seq2seq.AttentionWrapper(
            tf.keras.layers.LSTMCell(units), self.mechanism, attention_layer_size=units
        )
        self.decoder = tfa.seq2seq.BasicDecoder(
            self.cell,
            tfa.seq2seq.TrainingSampler(),
            output_layer=tf.keras.layers.Dense(vocab),
            maximum_iterations=T,
        )

    def __call__(self, ids, memory, lengths):
        self.mechanism.setup_memory(memory, memory_sequence_length=lengths)
        embedded = self.embedding(ids)
        state = self.cell.get_initial_state(batch_size=self.B, dtype=tf.float32)
        outputs, _, _ = self.decoder(
            embedded,
            initial_state=state,
            sequence_length=tf.fill([self.B], self.T),
            training=True,
        )
        return outputs.rnn_output

    @property
    def trainable_variables(self):
        return (
            self.embedding.trainable_variables
            + self.mechanism.trainable_variables
            + self.cell.trainable_variables
            + self.decoder.output_layer.trainable_variables
        )


def build_steps(B, T, S, d, vocab):
    """Build the model eagerly; return `(steps {jit: fn}, args, info)`."""
    tf.keras.utils.set_random_seed(0)
    data = make_data(B, T, S, d, vocab)
    ids, targets, memory, lengths = data
    model = TfaDecoder(B, T, d, vocab)
    logits = model(ids, memory, lengths)  # builds every weight
    variables = model.trainable_variables
    # Unique by identity: the mechanism's memory layer may be reachable from the cell too.
    seen, unique = set(), []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            unique.append(v)
    variables = unique
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    info = {
        "weights": int(sum(np.prod(v.shape) for v in variables)),
        "weight_shapes": {v.name: list(v.shape) for v in variables},
        "initial_loss": float(loss_fn(targets, logits)),
        "logits_shape": list(logits.shape),
    }
    steps = {}
    for jit in (False, True):
        optimizer = tf.keras.optimizers.Adam(1e-3)
        optimizer.build(variables)  # slots made eagerly, not inside the traced function

        def train_step(ids, targets, memory, lengths, optimizer=optimizer):
            with tf.GradientTape() as tape:
                logits = model(ids, memory, lengths)
                loss = loss_fn(targets, logits)
            grads = tape.gradient(loss, variables)
            optimizer.apply_gradients(zip(grads, variables))
            return loss

        steps[jit] = tf.function(train_step, jit_compile=jit)
    return steps, data, info


def time_block(step, args, inner) -> float:
    start = time.perf_counter()
    for _ in range(inner):
        loss = step(*args)
    float(loss)
    return (time.perf_counter() - start) / inner


def warm_up(steps, args, warmup) -> dict:
    """Trace/compile and warm up each setting; `{jit: None or error string}`."""
    errors = {}
    for jit, step in steps.items():
        try:
            t0 = time.perf_counter()
            loss = float(step(*args))
            errors[jit] = None
            compile_s = time.perf_counter() - t0
            for _ in range(max(warmup - 1, 0)):
                time_block(step, args, 1)
            if not math.isfinite(loss):
                errors[jit] = f"non-finite loss {loss}"
            print(
                f"# tfa jit={jit}: first call {compile_s:.1f} s, loss {loss:.4f}",
                file=sys.stderr,
                flush=True,
            )
        except Exception as e:  # noqa: BLE001 - report any XLA failure honestly
            errors[jit] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:500]}"
            traceback.print_exc(file=sys.stderr)
    return errors


def matmul_fn(n):
    rng = np.random.default_rng(1)
    a = tf.constant(rng.standard_normal((n, n)), "float32")
    b = tf.constant(rng.standard_normal((n, n)), "float32")
    fn = tf.function(lambda x, y: tf.reduce_sum(tf.matmul(x, y)))
    return fn, (a, b)


def _keras_version() -> str:
    try:
        import keras  # Keras 2.15, what tf.keras is on TF 2.15

        return keras.__version__
    except ImportError:
        return "n/a"


def versions() -> dict:
    return {
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "tf_keras": _keras_version(),
        "tensorflow_addons": tfa.__version__,
    }


def serve(steps, args, errors, info) -> None:
    matmuls = {}
    print(json.dumps({"ready": True, "errors": errors, "info": info, **versions()}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = json.loads(line)
        if cmd.get("quit"):
            break
        if "matmul" in cmd:
            n = int(cmd["matmul"])
            if n not in matmuls:
                matmuls[n] = matmul_fn(n)
                time_block(*matmuls[n], 1)
            out = {"seconds_per_step": time_block(*matmuls[n], int(cmd["inner"]))}
        else:
            jit = bool(cmd["jit"])
            if errors[jit]:
                out = {"error": errors[jit]}
            else:
                out = {"seconds_per_step": time_block(steps[jit], args, int(cmd["inner"]))}
        print(json.dumps(out), flush=True)


def main(argv=None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--serve", action="store_true", help="line protocol for bench_decoder")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--length", type=int, default=None, help="T = S")
    parser.add_argument("--units", type=int, default=None, help="LSTM = attention = embedding")
    parser.add_argument("--vocab", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--block-seconds", type=float, default=None)
    args = parser.parse_args(argv)
    tf.get_logger().setLevel("ERROR")
    if args.quick:
        B, L, d, V, repeats, block = 4, 6, 16, 20, 2, 0.05
    else:
        B, L, d, V, repeats, block = 64, 50, 256, 500, 7, 3.0
    B, L, d, V = args.batch or B, args.length or L, args.units or d, args.vocab or V
    repeats, block = args.repeats or repeats, args.block_seconds or block

    steps, data, info = build_steps(B, L, L, d, V)
    errors = warm_up(steps, data, args.warmup)
    if args.serve:
        serve(steps, data, errors, info)
        return None

    results = []
    for jit, step in steps.items():
        if errors[jit]:
            results.append({"jit_compile": jit, "error": errors[jit]})
            continue
        one = min(time_block(step, data, 1) for _ in range(2))
        inner = max(1, math.ceil(block / one))
        times = [time_block(step, data, inner) for _ in range(repeats)]
        med = float(np.median(times))
        results.append(
            {
                "jit_compile": jit,
                "ms_per_step": 1e3 * med,
                "ms_per_step_all": [1e3 * t for t in times],
                "steps_per_s": 1 / med,
                "inner_steps": inner,
            }
        )
    out = {
        "benchmark": "tfa_decoder_step",
        "config": {"B": B, "T": L, "S": L, "units": d, "vocab": V, "repeats": repeats},
        "versions": versions(),
        "info": info,
        "results": results,
    }
    print(json.dumps(out, indent=2))
    return out


if __name__ == "__main__":
    main()
