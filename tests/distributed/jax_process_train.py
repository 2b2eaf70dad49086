"""One of 2 JAX processes on 127.0.0.1 training a `Seq2Seq` with `keras.distribution.DataParallel`.

Run as a subprocess by `test_jax_processes.py` with `KERAS_BACKEND=jax`:

    python tests/distributed/jax_process_train.py --coordinator 127.0.0.1:PORT \
        --process-id 0 --num-processes 2 --attention luong bahdanau \
        --weights-dir weights/ --out-dir results/

Each process owns one CPU device. `jax.distributed.initialize` joins them (the CPU collectives
over gloo: `jax_cpu_collectives_implementation`), `DataParallel` over `jax.devices()` (both
processes' devices) replicates the variables and splits each global batch of 8 over them; each
process passes `fit` its own rows of every global batch (process p: rows 4p..4p+3, the rows
its device holds), and Keras assembles the global batch
(`jax.make_array_from_process_local_data`). The initial weights are the one-process run's,
set in `on_train_begin` (after `fit` built the model). Per-step losses and final weights go
to `<out-dir>/process<p>.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, not an install


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--coordinator", required=True, help="host:port of process 0")
    parser.add_argument("--process-id", type=int, required=True)
    parser.add_argument("--num-processes", type=int, default=2)
    parser.add_argument("--attention", nargs="+", required=True)
    parser.add_argument("--weights-dir", required=True)
    parser.add_argument("--out-dir", required=True)
    return parser.parse_args(argv)


def main(args: argparse.Namespace) -> None:
    import jax

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=args.coordinator,
        num_processes=args.num_processes,
        process_id=args.process_id,
        local_device_ids=[0],
    )
    import keras
    import numpy as np

    from keras_attention.models import Seq2Seq
    from tests.distributed.multi_worker_train import LoadInitialWeights
    from tests.distributed.train_worker import (
        GLOBAL_BATCH,
        SOURCE_VOCABULARY,
        TARGET_VOCABULARY,
        VARIANTS,
        StepLosses,
        make_data,
    )

    devices = jax.devices()
    # Each process passes its own rows (below), so Keras must not shard them again.
    distribution = keras.distribution.DataParallel(devices=devices, auto_shard_dataset=False)
    keras.distribution.set_distribution(distribution)
    local = GLOBAL_BATCH // args.num_processes
    inputs, labels = make_data()
    rows = np.arange(len(labels)).reshape(-1, GLOBAL_BATCH)[:, args.process_id * local :]
    rows = rows[:, :local].ravel()  # this process's rows of every global batch, in order
    result = {"devices": [str(d) for d in devices], "process_index": jax.process_index()}
    for attention in args.attention:
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
        loader = LoadInitialWeights(Path(args.weights_dir) / f"{attention}.npz")
        recorder = StepLosses()
        model.fit(
            {k: v[rows] for k, v in inputs.items()}, labels[rows], batch_size=local,
            epochs=1, shuffle=False, verbose=0, callbacks=[loader, recorder],
        )  # fmt: skip
        result[attention] = {
            "losses": recorder.losses(),
            "weights": [np.asarray(w, "float64").ravel().tolist() for w in model.get_weights()],
        }
    out = Path(args.out_dir) / f"process{args.process_id}.json"
    out.write_text(json.dumps(result), encoding="utf-8")
    jax.distributed.shutdown()


if __name__ == "__main__":
    main(parse_args())
