"""`BackupAndRestore` with the dropout streams, shared by the kill-and-resume workers.

Imported by tests/resilience/jax_worker.py and tensorflow_worker.py (scripts of this folder).
"""

from __future__ import annotations

import json
import os

import keras
import numpy as np


class BackupAndRestoreWithRandomState(keras.callbacks.BackupAndRestore):
    """`BackupAndRestore` that also backs up the seed generators' states (dropout's random
    stream): they are variables but not weights, so `save_weights` leaves them out, and a
    resumed run drew other dropout masks (its final weights differed from an uninterrupted
    run's). They go into the training metadata, written with (and copied to `.bkp` with) it."""

    def _states(self):
        return [v for v in self.model.variables if v.path.endswith("seed_generator_state")]

    def _save_model(self):
        super()._save_model()
        with open(self._training_metadata_path) as f:
            metadata = json.load(f)
        metadata["seed_states"] = [np.asarray(v.value).tolist() for v in self._states()]
        with open(self._training_metadata_path + ".tmp", "w") as f:
            json.dump(metadata, f)
        os.replace(self._training_metadata_path + ".tmp", self._training_metadata_path)

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)  # (restores the `.bkp` pair if the latest is unreadable)
        if os.path.exists(self._training_metadata_path):
            with open(self._training_metadata_path) as f:
                states = json.load(f).get("seed_states", [])
            for variable, value in zip(self._states(), states):
                variable.assign(np.asarray(value, dtype=variable.dtype))
