"""One of 2 workers on 127.0.0.1 recording which `pairs_dataset` examples it gets, per epoch.

Run as a subprocess by `test_data_sharding.py`. `--distribution tensorflow` (the worker's
`TF_CONFIG` comes from the test) creates a `tf.distribute.MultiWorkerMirroredStrategy` and
iterates `strategy.experimental_distribute_dataset(dataset)`, what Keras' `fit` iterates;
`--distribution jax` joins 2 JAX processes (`jax.distributed.initialize`, coordinator on
127.0.0.1) and iterates `keras.distribution.DataParallel(...).distribute_dataset(dataset)`,
what Keras' JAX `fit` iterates (`auto_shard_dataset=False` for the explicit shards). A
`ValueError` raised by the distribution is recorded instead of the examples.

Pipelines (`--pipeline`):

    auto        pairs_dataset(batch_size=4, shuffle=True, seed=7): every pair, sharded by the
                distribution (TensorFlow's auto-shard policy; DataParallel's auto-sharding)
    explicit    pairs_dataset(batch_size=2, shuffle=True, num_shards=2, shard_index=<worker>):
                each worker its own pairs, each shuffled unseeded
    unseeded    pairs_dataset(batch_size=4, shuffle=True): every pair, sharded by the
                distribution, each worker shuffling with its own random order (the mistake
                docs/scaling.md warns about)

Writes `{pipeline: [[source, ...] per epoch]}` (the sources this worker saw) to
`<out-dir>/worker<i>.json`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, not an install

LETTERS = "abcdef"
SOURCES = ["".join(p) for p in itertools.permutations(LETTERS, 3)][:24]  # 24 distinct
EPOCHS = 2


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--distribution", choices=("tensorflow", "jax"), required=True)
    parser.add_argument("--pipeline", nargs="+", choices=("auto", "explicit", "unseeded"))
    parser.add_argument("--coordinator", help="JAX: host:port of process 0")
    parser.add_argument("--process-id", type=int, help="JAX: this process's index")
    parser.add_argument("--out-dir", required=True)
    return parser.parse_args(argv)


def make_pipeline(name: str, index: int):
    from keras_attention.text import CharTokenizer, pairs_dataset

    tokenizer = CharTokenizer(vocabulary=list(LETTERS))
    targets = [source[::-1] for source in SOURCES]
    if name == "auto":
        kwargs = {"batch_size": 4, "seed": 7}
    elif name == "explicit":
        kwargs = {"batch_size": 2, "num_shards": 2, "shard_index": index}
    else:
        kwargs = {"batch_size": 4}
    return pairs_dataset(
        SOURCES, targets, tokenizer, tokenizer, shuffle=True, pad_to_multiple=1, **kwargs
    )


def decode(source_ids) -> list[str]:
    """The source strings of a batch of ids (ids 4.. are LETTERS, 3 is END, 0 padding)."""
    return ["".join(LETTERS[i - 4] for i in row if i >= 4) for row in source_ids.tolist()]


def main(args: argparse.Namespace) -> None:
    if args.distribution == "tensorflow":
        import tensorflow as tf

        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]

        def batches(dataset, name):
            for inputs, _ in strategy.experimental_distribute_dataset(dataset):
                for ids in strategy.experimental_local_results(inputs["source_ids"]):
                    yield ids.numpy()

    else:
        import jax

        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(args.coordinator, 2, args.process_id, local_device_ids=[0])
        import keras

        index = jax.process_index()

        def batches(dataset, name):
            # The explicit shards are this process's already: Keras must not shard them.
            distribution = keras.distribution.DataParallel(
                devices=jax.devices(), auto_shard_dataset=name != "explicit"
            )
            for inputs, _ in distribution.distribute_dataset(dataset):
                yield inputs["source_ids"].numpy()

    result = {"index": index}
    for name in args.pipeline:
        dataset = make_pipeline(name, index)
        try:
            result[name] = [
                [source for ids in batches(dataset, name) for source in decode(ids)]
                for _ in range(EPOCHS)
            ]
        except ValueError as error:  # recorded for the test (Keras' JAX auto-sharding)
            result[name] = {"error": str(error)}
    (Path(args.out_dir) / f"worker{index}.json").write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    main(parse_args())
