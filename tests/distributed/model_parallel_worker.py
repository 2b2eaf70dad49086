"""Train a `Seq2Seq` on one device, then under `ModelParallel` with `Seq2Seq.get_layout_map`.

Run as a subprocess by `test_model_parallel.py` with `KERAS_BACKEND=jax` and
`XLA_FLAGS=--xla_force_host_platform_device_count=4` (the devices exist only if set before JAX
starts). The mesh is `--mesh BATCH MODEL` over the 4 host devices (axes "batch", "model"):
vocabulary-sized weights split over "model", the batch over "batch". Both runs start from the
same weights (the one-device run's initial weights, set in `on_train_begin`) and fit 5 steps
of the data of train_worker.py with SGD; vocabularies of 16 and 12 (multiples of the model
axis). Writes per-step losses, final weights and each weight's sharding spec as JSON.

    python tests/distributed/model_parallel_worker.py --mesh 2 2 --out result.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, not an install

SOURCE_VOCABULARY, TARGET_VOCABULARY = 16, 12  # the data's ids are below 13 and 11


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mesh", nargs=2, type=int, required=True, metavar=("BATCH", "MODEL"))
    parser.add_argument("--attention", nargs="+", default=["luong", "bahdanau"])
    parser.add_argument("--out", required=True)
    return parser.parse_args(argv)


def train(attention: str, initial=None, distribution=None) -> tuple[dict, list]:
    """Fit (in `distribution`'s scope if given) from `initial` (or the model's own initial
    weights); `(result, initial weights)`."""
    import contextlib

    import keras
    import numpy as np

    from keras_attention.models import Seq2Seq
    from tests.distributed.train_worker import GLOBAL_BATCH, VARIANTS, StepLosses, make_data

    class SetWeights(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):  # fit has built the model by now
            if initial is not None:
                self.model.set_weights(initial)
            self.initial = [np.asarray(w) for w in self.model.get_weights()]

    scope = distribution.scope() if distribution else contextlib.nullcontext()
    with scope:
        keras.utils.set_random_seed(0)
        model = Seq2Seq(
            source_vocabulary_size=SOURCE_VOCABULARY, target_vocabulary_size=TARGET_VOCABULARY,
            embedding_dim=8, units=16, encoder_units=8, dropout=0.0, input_feeding=True,
            **VARIANTS[attention],
        )  # fmt: skip
        model.compile(
            optimizer=keras.optimizers.SGD(learning_rate=0.5),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        inputs, labels = make_data()
        recorder, setter = StepLosses(), SetWeights()
        model.fit(
            inputs, labels, batch_size=GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0,
            callbacks=[setter, recorder],
        )  # fmt: skip
        final = model.get_weights()
        largest = max(float(np.max(np.abs(w - w0))) for w, w0 in zip(final, setter.initial))
        return {
            "losses": recorder.losses(),
            "weights": [np.asarray(w, "float64").ravel().tolist() for w in final],
            "largest_update": largest,
            "specs": {
                w.path.split("/", 1)[1]: str(getattr(w.value.sharding, "spec", None))
                for w in model.weights
            },
        }, setter.initial


def main(args: argparse.Namespace) -> None:
    import jax
    import keras

    from keras_attention.models import Seq2Seq

    devices = jax.devices()
    batch, model_axis = args.mesh
    mesh = keras.distribution.DeviceMesh(
        (batch, model_axis), ["batch", "model"], devices[: batch * model_axis]
    )
    distribution = keras.distribution.ModelParallel(
        layout_map=Seq2Seq.get_layout_map(mesh), batch_dim_name="batch"
    )
    result = {"devices": [str(d) for d in devices]}
    for attention in args.attention:
        one_device, initial = train(attention)
        sharded, _ = train(attention, initial, distribution)
        result[attention] = {"one_device": one_device, "sharded": sharded}
    Path(args.out).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(parse_args())
