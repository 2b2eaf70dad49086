"""Let `fit` / `evaluate` run under `tf.distribute.MultiWorkerMirroredStrategy` (Keras 3).

Keras 3's TensorFlow trainer fails twice before the first step when a
`MultiWorkerMirroredStrategy` spans more than one worker, for every model (measured with
Keras 3.15.1 and TensorFlow 2.21; docs/multi-worker-keras-bug.md has the reproducer):

1. **Build** (keras-team/keras#20585). A model that a strategy owns is built from the first
   batch before training (`TensorFlowTrainer._maybe_symbolic_build`): Keras takes that batch
   from the distributed iterator, a structure (`(x, y)`, `x` a dict) of
   `tf.distribute.DistributedValues`, and all-reduces it, `strategy.reduce("MEAN", batch,
   axis=None)`. With several workers `CollectiveAllReduceExtended._reduce_to` hands the whole
   structure to the cross-device ops, which take a single value, and `ValueError: Attempt to
   convert a value (PerReplica:{...}) ... to a Tensor` is raised. (A lone `PerReplica` does
   reduce, but the mean of int32 token ids comes back as float64: the build would see the
   wrong dtype.) The build needs only one replica's shapes and dtypes (`_symbolic_build` turns
   every value into a `KerasTensor`), which `strategy.experimental_local_results(value)[0]`
   gives with no communication: `_maybe_symbolic_build` below takes the first batch as Keras
   does, keeps the first local replica's values and calls Keras' own `_symbolic_build` in the
   strategy's scope. The model, loss, metrics and optimizer are built as on one worker.
2. **Logs** (tensorflow/tensorflow#72388). Each step's logs (the metrics' results, scalars)
   are averaged over the replicas by `reduce_per_replica(..., reduction="auto")`, which on
   several workers calls `strategy.reduce("MEAN", value, axis=0)`, written for batched values:
   a scalar has no axis 0 (`ValueError: Invalid reduction dimension 0 for input with 0
   dimensions`). `train_step` and `test_step` below give each logged scalar a leading axis of
   length 1 on several workers only; the mean over that axis and the replicas is the scalar
   mean over the replicas that one worker with several devices logs (`tf.reduce_mean` of the
   local results), and the logs come out as scalars again.

Nothing changes without a multi-worker strategy, nor on JAX and PyTorch (their trainers
never call `_maybe_symbolic_build`, and `_distribute_strategy` is `None`), nor in the step's
math: gradients and their all-reduce are Keras' own. tests/distributed/test_multi_worker.py
shows the equality with one process, and tells when Keras itself is fixed.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops


def _multi_worker(strategy: Any) -> bool:
    """Whether `strategy` spans several workers (more replicas than this worker's devices)."""
    if strategy is None:
        return False
    return strategy.num_replicas_in_sync > len(strategy.extended.worker_devices)


class MultiWorkerMixin:
    """The two overrides above; put it before `keras.Model` in a model's bases."""

    def _maybe_symbolic_build(self, iterator: Any = None, data_batch: Any = None) -> None:
        strategy = getattr(self, "_distribute_strategy", None)
        if strategy is None or iterator is None:  # Keras' own path is right here
            return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
        for _, _, batches in iterator:  # TFEpochIterator yields (begin, end, iterator)
            data_batch = next(batches)
            break

        def one_replica(value):
            if value is None:
                return None
            return strategy.experimental_local_results(value)[0]

        data_batch = keras.tree.map_structure(one_replica, data_batch)
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    def _per_replica_logs(self, logs: Any) -> Any:
        if not _multi_worker(getattr(self, "_distribute_strategy", None)):
            return logs
        return keras.tree.map_structure(
            lambda v: ops.expand_dims(v, 0) if len(ops.shape(v)) == 0 else v, logs
        )

    # (`*args`: JAX's steps take `(state, data)`; there `_distribute_strategy` is None.)
    def train_step(self, *args: Any, **kwargs: Any) -> Any:
        return self._per_replica_logs(super().train_step(*args, **kwargs))

    def test_step(self, *args: Any, **kwargs: Any) -> Any:
        return self._per_replica_logs(super().test_step(*args, **kwargs))
