"""One worker of a 2-process JAX data-parallel training run with `BackupAndRestore`.

Run by tests/resilience/test_kill_and_resume.py; not a test itself. Each epoch is `save_freq`
steps over the same per-process data (no shuffle), so the backup at every epoch's end is a
backup every `save_freq` steps, and the data of a step depends on the step only. Dropout is
seeded; its generator's state is a variable saved with the weights.
"""

from __future__ import annotations

import argparse
import json
import os
import signal

os.environ["KERAS_BACKEND"] = "jax"
os.environ["JAX_PLATFORMS"] = "cpu"

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--processes", type=int, default=2)
parser.add_argument("--process-id", type=int, required=True)
parser.add_argument("--backup", required=True)
parser.add_argument("--out", required=True)
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--save-freq", type=int, default=3)
parser.add_argument("--kill-at-step", type=int, default=-1)
args = parser.parse_args()

import jax  # noqa: E402

jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(
    f"127.0.0.1:{args.port}", num_processes=args.processes, process_id=args.process_id
)

import keras  # noqa: E402
import numpy as np  # noqa: E402
from random_state_backup import BackupAndRestoreWithRandomState  # noqa: E402

keras.distribution.set_distribution(keras.distribution.DataParallel(auto_shard_dataset=False))
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
local_batch = 4
x = rng.normal(size=(args.processes, args.save_freq * local_batch, 6)).astype("float32")
y = (x.sum(-1, keepdims=True) > 0).astype("float32")
x, y = x[args.process_id], y[args.process_id]

model = keras.Sequential(
    [
        keras.Input((6,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dropout(0.3, seed=7),
        keras.layers.Dense(1),
    ]
)
model.compile(keras.optimizers.Adam(1e-2), loss="mse")
model.build((None, 6))

steps = {"done": 0, "ran": 0}


class Steps(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        steps["done"] = epoch * args.save_freq

    def on_train_batch_end(self, batch, logs=None):
        steps["done"] += 1
        steps["ran"] += 1
        if steps["done"] == args.kill_at_step and args.process_id == 1:
            os.kill(os.getpid(), signal.SIGKILL)  # a preempted worker: no clean-up at all


# double_checkpoint: when the other worker dies, this one's next collective fails, and the
# error surfaces (JAX dispatches asynchronously) while `save_weights` reads the variables at
# the epoch's end, leaving a truncated `latest.weights.h5` ("truncated file: eof = 96" on the
# restart). The previous backup, kept as `.bkp`, is then restored instead.
backup = BackupAndRestoreWithRandomState(
    os.path.join(args.backup, f"worker-{args.process_id}"),
    save_freq="epoch",
    double_checkpoint=True,
)
model.fit(
    x, y, batch_size=local_batch, epochs=args.epochs, shuffle=False, verbose=0,
    callbacks=[backup, Steps()],
)  # fmt: skip
weights = [np.asarray(w).tolist() for w in model.get_weights()]
with open(f"{args.out}.{args.process_id}.json", "w") as f:
    json.dump({"weights": weights, "steps_ran": steps["ran"]}, f)
jax.distributed.shutdown()
