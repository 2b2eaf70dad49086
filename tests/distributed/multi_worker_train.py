"""One worker of a 2-worker `tf.distribute.MultiWorkerMirroredStrategy` run on 127.0.0.1.

Run as a subprocess by `test_multi_worker.py`, which picks the ports and gives each worker its
`TF_CONFIG` (`{"cluster": {"worker": [...]}, "task": {"type": "worker", "index": i}}`). The
worker follows TensorFlow's multi-worker tutorial as a new user would: create the strategy,
build and compile the model in `strategy.scope()`, `model.fit(dataset)` on a `tf.data`
pipeline of the *global* batch (the strategy shards it: auto-shard policy, here by data).

    --model seq2seq   Seq2Seq (Luong "general" and Bahdanau, input feeding on) on the data of
                      train_worker.py, 5 steps of a global batch of 8 with SGD; the initial
                      weights are read from --weights-dir (written by train_worker.py's
                      one-process run) in `on_train_begin`, after `fit` has built the model
                      (there is no other call), then `evaluate`s the trained model on the same
                      data. Writes per-step losses, the evaluated loss and final weights; the
                      chief also saves `<variant>.keras` and the outputs of the trained model.
    --model functional
                      A functional `keras.Model` around an `AttentionRNN` (Keras' own class,
                      without this package's fix): records whether `fit` runs or the error it
                      raises (keras-team/keras#20585).
    --model functional-fixed
                      The same model built with `class Model(MultiWorkerMixin, keras.Model)`
                      (the package's workaround): records whether `fit` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, not an install

import keras  # noqa: E402
import numpy as np  # noqa: E402

from tests.distributed.train_worker import (  # noqa: E402
    GLOBAL_BATCH,
    TARGET_VOCABULARY,
    VARIANTS,
    StepLosses,
    make_data,
)

STRATEGY = None  # created first (before any other TensorFlow op), in main()


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", choices=("seq2seq", "functional", "functional-fixed"), required=True
    )
    parser.add_argument("--attention", nargs="+", choices=sorted(VARIANTS), default=[])
    parser.add_argument("--weights-dir", help="initial weights (<variant>.npz) to start from")
    parser.add_argument("--out-dir", required=True, help="results (and the chief's models)")
    return parser.parse_args(argv)


class LoadInitialWeights(keras.callbacks.Callback):
    """Set the weights saved by the one-process run when training begins (the model is built
    by then: by `fit` itself, from the first batch)."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path
        self.built_at_train_begin = None

    def on_train_begin(self, logs=None):
        self.built_at_train_begin = bool(self.model.built)
        with np.load(self.path) as saved:
            self.model.set_weights([saved[f"w{i}"] for i in range(len(saved.files))])


def dataset():
    import tensorflow as tf

    inputs, labels = make_data()
    return tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(GLOBAL_BATCH)


def train_seq2seq(attention: str, args: argparse.Namespace, chief: bool) -> dict:
    from keras_attention.models import Seq2Seq

    with STRATEGY.scope():  # the tutorial's recipe: no call on data before fit
        model = Seq2Seq(
            source_vocabulary_size=13, target_vocabulary_size=TARGET_VOCABULARY,
            embedding_dim=8, units=16, encoder_units=8, dropout=0.0, input_feeding=True,
            **VARIANTS[attention],
        )  # fmt: skip
        model.compile(
            optimizer=keras.optimizers.SGD(learning_rate=0.5),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    loader = LoadInitialWeights(Path(args.weights_dir) / f"{attention}.npz")
    recorder = StepLosses()
    model.fit(dataset(), epochs=1, verbose=0, callbacks=[loader, recorder])
    evaluated = model.evaluate(dataset(), verbose=0)  # the trained model, every batch once
    result = {
        "built_at_train_begin": loader.built_at_train_begin,
        "losses": recorder.losses(),
        "evaluate_loss": float(evaluated),
        "weights": [np.asarray(w, "float64").ravel().tolist() for w in model.get_weights()],
    }
    # Every worker saves (the variables are read collectively); only the chief's file is kept,
    # the others write to a scratch path (TensorFlow's multi-worker saving recipe).
    out_dir = Path(args.out_dir)
    path = out_dir / (f"{attention}.keras" if chief else f"scratch-{os.getpid()}-{attention}.keras")
    model.save(path)
    if chief:
        inputs, _ = make_data()
        probe = {k: v[:4] for k, v in inputs.items()}
        result["probe_outputs"] = np.asarray(model(probe), "float64").tolist()
    else:
        path.unlink()
    return result


def train_functional(model_class) -> dict:
    from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell

    with STRATEGY.scope():
        source = keras.Input((None,), dtype="int32", name="source_ids")
        target = keras.Input((None,), dtype="int32", name="target_ids")
        memory = keras.layers.Embedding(13, 16, mask_zero=True)(source)
        queries = keras.layers.Embedding(TARGET_VOCABULARY, 8, mask_zero=True)(target)
        cell = LuongAttentionCell(keras.layers.LSTMCell(16), LuongAttention())
        outputs = AttentionRNN(cell)(queries, memory)
        logits = keras.layers.Dense(TARGET_VOCABULARY)(outputs)
        model = model_class({"source_ids": source, "target_ids": target}, logits)
        model.compile(
            optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        )
    keras.config.disable_traceback_filtering()  # keep Keras' frames in the traceback
    try:
        model.fit(dataset(), epochs=1, verbose=0)
    except Exception as error:  # the result the test checks
        frames = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
        return {"trained": False, "error": f"{type(error).__name__}: {error}", "frames": frames}
    return {"trained": True}


def main(args: argparse.Namespace) -> None:
    import tensorflow as tf

    global STRATEGY
    STRATEGY = tf.distribute.MultiWorkerMirroredStrategy()
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    chief = task["index"] == 0
    result = {"replicas": STRATEGY.num_replicas_in_sync, "task": task}
    if args.model == "functional":
        result["functional"] = train_functional(keras.Model)
    if args.model == "functional-fixed":
        from keras_attention.models._distribute import MultiWorkerMixin

        class Model(MultiWorkerMixin, keras.Model):
            pass

        result["functional"] = train_functional(Model)
    for attention in args.attention:
        result[attention] = train_seq2seq(attention, args, chief)
    out = Path(args.out_dir) / f"worker{task['index']}.json"
    out.write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(parse_args())
