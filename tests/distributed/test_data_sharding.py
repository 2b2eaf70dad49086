"""Across 2 workers on 127.0.0.1, every `pairs_dataset` example is seen once per epoch.

Each worker (`shard_worker.py`, a subprocess) iterates what Keras' `fit` iterates on its
backend, for 2 epochs of a shuffled `pairs_dataset` of 24 distinct pairs, and records the
sources it got:

- TensorFlow, `MultiWorkerMirroredStrategy`: `strategy.experimental_distribute_dataset`;
- JAX, 2 processes (`jax.distributed.initialize`): `DataParallel.distribute_dataset`.

On JAX only the `explicit` pipeline runs: Keras' auto-sharding (`DataParallel(
auto_shard_dataset=True)`) reads the global batch size from the pipeline's graph
(`tf.data.experimental` `compute_batch_size`), which a `map` after `batch` hides (pairs_dataset
tokenizes whole batches), and refuses the dataset; a test records that refusal.

Pipelines: `auto` (every pair, global batch 4, `seed=7` on both workers; the distribution
shards it) and `explicit` (`num_shards=2, shard_index=i`, batch 2 per worker, unseeded
shuffles). In every epoch the two workers' examples together are the 24 pairs, each once.
`unseeded` (every pair, auto-sharded, each worker shuffling in its own random order) shows
why `auto` needs the same seed everywhere: examples are then seen twice and others never
(the chance that two independent shuffles split exactly is below 1e-6).
"""

from __future__ import annotations

import collections
import importlib.util
import json
import sys
from pathlib import Path

import keras
import pytest

from tests.distributed.cluster import HOST, ProcessGroup, free_ports, worker_env
from tests.distributed.shard_worker import EPOCHS, SOURCES

HERE = Path(__file__).resolve().parent
TIMEOUT = 600  # seconds for one cluster run (about 20 s on an idle 2-core machine)

pytestmark = [pytest.mark.slow, pytest.mark.tensorflow_only]  # the pipeline is tf.data


def run(directory: Path, distribution: str, pipelines: list[str]) -> list[dict]:
    ports = free_ports(2)
    command = [sys.executable, str(HERE / "shard_worker.py"), "--distribution", distribution]
    command += ["--pipeline", *pipelines, "--out-dir", str(directory)]
    with ProcessGroup(directory, timeout=TIMEOUT) as group:
        for index in range(2):
            if distribution == "tensorflow":
                cluster = {"worker": [f"{HOST}:{port}" for port in ports]}
                task = {"type": "worker", "index": index}
                env = worker_env(
                    "tensorflow", TF_CONFIG=json.dumps({"cluster": cluster, "task": task})
                )
                extra = []
            else:
                env = worker_env("jax")
                extra = ["--coordinator", f"{HOST}:{ports[0]}", "--process-id", str(index)]
            group.start(f"worker{index}", [*command, *extra], env)
        group.wait_all()
    return [json.loads((directory / f"worker{i}.json").read_text()) for i in range(2)]


@pytest.fixture(scope="module")
def tensorflow_workers(tmp_path_factory):
    return run(tmp_path_factory.mktemp("tf"), "tensorflow", ["auto", "explicit", "unseeded"])


@pytest.fixture(scope="module")
def jax_workers(tmp_path_factory):
    if importlib.util.find_spec("jax") is None:
        pytest.skip("needs jax")
    return run(tmp_path_factory.mktemp("jax"), "jax", ["auto", "explicit"])


def assert_each_example_once(workers: list[dict], pipeline: str) -> None:
    for epoch in range(EPOCHS):
        seen = [source for worker in workers for source in worker[pipeline][epoch]]
        counts = collections.Counter(seen)
        assert sorted(counts) == sorted(SOURCES), f"epoch {epoch}: missing or unknown examples"
        assert max(counts.values()) == 1, f"epoch {epoch}: seen twice: {counts.most_common(3)}"
        assert all(worker[pipeline][epoch] for worker in workers)  # both workers got some
    # The shuffle is on: the order changes between epochs.
    assert workers[0][pipeline][0] != workers[0][pipeline][1]


@pytest.mark.parametrize("pipeline", ["auto", "explicit"])
def test_tensorflow_workers_see_each_example_once(tensorflow_workers, pipeline):
    assert_each_example_once(tensorflow_workers, pipeline)


def test_unseeded_auto_sharding_repeats_examples(tensorflow_workers):
    for epoch in range(EPOCHS):
        seen = [source for worker in tensorflow_workers for source in worker["unseeded"][epoch]]
        assert len(seen) == len(SOURCES)
        assert len(set(seen)) < len(SOURCES)


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="runs its JAX processes from the TensorFlow suite; on other backends it repeats",
)
def test_jax_processes_see_each_example_once(jax_workers):
    assert_each_example_once(jax_workers, "explicit")


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="runs its JAX processes from the TensorFlow suite; on other backends it repeats",
)
def test_jax_auto_sharding_refuses_pairs_dataset(jax_workers):
    """When this fails, Keras can auto-shard the pipeline on JAX: test it like `auto` on
    TensorFlow and update docs/backends.md's "Data across workers"."""
    for worker in jax_workers:
        assert "batch size of the input dataset is unknown" in worker["auto"]["error"]
