"""One worker of a 2-worker `tf.distribute.MultiWorkerMirroredStrategy` training run with
`BackupAndRestore`, on 127.0.0.1.

Run by tests/resilience/test_kill_and_resume.py; not a test itself. The worker follows
TensorFlow's multi-worker recipe (the strategy first, the model built and compiled in its
scope, `model.fit(dataset)` of the *global* batch, which the strategy shards by data) with a
`Seq2Seq` (Luong, input feeding on, dropout on), Adam and `keras.callbacks.BackupAndRestore`
(with the dropout streams: random_state_backup.py) in a directory of each worker's own. Each
epoch is `save_freq` steps over the same data (no shuffle), so the backup at every epoch's end
is a backup every `save_freq` steps and a step's data depends on the step only. Worker 1
SIGKILLs itself after step `--kill-at-step`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

os.environ["KERAS_BACKEND"] = "tensorflow"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, not an install
sys.path.insert(0, str(Path(__file__).resolve().parent))  # random_state_backup

parser = argparse.ArgumentParser()
parser.add_argument("--ports", required=True, help="the workers' ports, comma-separated")
parser.add_argument("--process-id", type=int, required=True)
parser.add_argument("--backup", required=True)
parser.add_argument("--out", required=True)
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--save-freq", type=int, default=3)
parser.add_argument("--kill-at-step", type=int, default=-1)
args = parser.parse_args()

ports = args.ports.split(",")
os.environ["TF_CONFIG"] = json.dumps(
    {
        "cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
        "task": {"type": "worker", "index": args.process_id},
    }
)

import tensorflow as tf  # noqa: E402

strategy = tf.distribute.MultiWorkerMirroredStrategy()  # before any other TensorFlow op

import keras  # noqa: E402
import numpy as np  # noqa: E402
from random_state_backup import BackupAndRestoreWithRandomState  # noqa: E402

from keras_attention.models import Seq2Seq  # noqa: E402
from tests.distributed.train_worker import GLOBAL_BATCH, make_data  # noqa: E402

keras.utils.set_random_seed(0)
inputs, labels = make_data()
rows = args.save_freq * GLOBAL_BATCH
inputs = {k: v[:rows] for k, v in inputs.items()}
dataset = tf.data.Dataset.from_tensor_slices((inputs, labels[:rows])).batch(GLOBAL_BATCH)

with strategy.scope():
    model = Seq2Seq(
        source_vocabulary_size=13, target_vocabulary_size=11, embedding_dim=8, units=16,
        encoder_units=8, dropout=0.2, input_feeding=True, attention="luong",
        score_mode="general",
    )  # fmt: skip
    model.compile(
        optimizer=keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )

steps = {"done": 0, "ran": 0, "losses": []}


class Steps(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        steps["done"] = epoch * args.save_freq

    def on_train_batch_end(self, batch, logs=None):
        steps["done"] += 1
        steps["ran"] += 1
        steps["losses"].append(float(logs["loss"]))
        if steps["done"] == args.kill_at_step and args.process_id == 1:
            os.kill(os.getpid(), signal.SIGKILL)  # a preempted worker: no clean-up at all


backup = BackupAndRestoreWithRandomState(
    os.path.join(args.backup, f"worker-{args.process_id}"),
    save_freq="epoch",
    double_checkpoint=True,
)
model.fit(dataset, epochs=args.epochs, verbose=0, callbacks=[backup, Steps()])
weights = [np.asarray(w, "float64").ravel().tolist() for w in model.get_weights()]
seed_states = [np.asarray(v.value).tolist() for v in model.variables if "seed_generator" in v.path]
with open(f"{args.out}.{args.process_id}.json", "w") as f:
    json.dump({"weights": weights, "steps_ran": steps["ran"], "seed_states": seed_states}, f)
