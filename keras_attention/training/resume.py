"""`ResumableTraining`: epoch backups that a killed run resumes exactly from.

`ResumableTraining` is a Keras callback. At the end of every epoch it writes a backup into
`directory`: the model's weights with the optimizer's state (`model.save_weights`), the seed
generators' states (dropout's random streams, which `save_weights` leaves out), the state
of the callbacks that carry some (`EarlyStopping`: its counters and best weights; a callback
of its own kind through two methods, `get_resume_state() -> (JSON-able dict, list of arrays or
None)` and `set_resume_state(dict, arrays)`, as `keras_attention.training.TrainingControl`:
its budget's progress, early-stopping state, best weights and curve), the history so far, and
a manifest naming each file with its SHA-256 and a fingerprint of the run's
settings. The manifest is written last and put in place with an atomic rename, so a run killed
at any moment (SIGKILL, SIGTERM, a closed laptop) leaves the previous complete backup. `restore`
loads it before `fit` and returns the epoch to start from; `epoch_stream` feeds `fit` a
`tf.data` pipeline that reshuffles on every pass as one repeated stream, from the epoch to
start from, so a resumed run trains on exactly the batches the uninterrupted run would have,
and ends with the same weights and metrics. What is lost is the epoch in progress.

A backup that does not check out (a file missing, truncated or changed, a manifest that is not
JSON, settings that differ from the run's) raises `CorruptBackupError` (a `ValueError`) naming
the file: it is never loaded, and it is never silently replaced by a fresh start.

Example (what `keras-attention train --resume` and `examples/translate.py --resume` do)::

    resume = ResumableTraining(output / "backup", settings=vars(args))
    initial_epoch = resume.restore(model, [early_stopping]) if args.resume else 0
    stream, steps = resume.epoch_stream(train_dataset, initial_epoch)
    model.fit(stream, steps_per_epoch=steps, epochs=..., initial_epoch=initial_epoch,
              callbacks=[early_stopping, resume])
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import keras
import numpy as np

__all__ = ["CorruptBackupError", "ResumableTraining"]

MANIFEST = "manifest.json"
FORMAT = 1


class CorruptBackupError(ValueError):
    """A backup that must not be loaded: incomplete, changed, or from other settings."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _replace_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


class ResumableTraining(keras.callbacks.Callback):
    """Epoch backups in `directory` (see the module docstring).

    Args:
        directory: Where the backups go (created if missing).
        settings: The run's settings (JSON-serialisable); a backup made with other settings is
            refused on `restore`. Keys in `ignore` (e.g. `resume` itself) are left out.
        ignore: Settings that may differ between the killed run and its resumption.
    """

    def __init__(self, directory, settings: dict | None = None, ignore=("resume",)) -> None:
        super().__init__()
        self.directory = Path(directory)
        self.settings = {k: v for k, v in sorted((settings or {}).items()) if k not in ignore}
        self._callbacks: list = []
        self.history: dict = {}

    # ---------------------------------------------------------------- restore
    def exists(self) -> bool:
        return (self.directory / MANIFEST).exists()

    def _checked(self, manifest: dict, key: str) -> Path:
        name = manifest["files"][key]["name"]
        path = self.directory / name
        if not path.exists():
            raise CorruptBackupError(
                f"The backup is incomplete: {path} is missing (the run was stopped while "
                "writing it?); it was not loaded. Delete the backup folder to start again. "
                f"Received: backup={self.directory}"
            )
        if _sha256(path) != manifest["files"][key]["sha256"]:
            raise CorruptBackupError(
                f"The backup file {path} is corrupt (truncated or changed: its SHA-256 does "
                "not match the manifest); it was not loaded. Delete the backup folder to start "
                f"again. Received: backup={self.directory}"
            )
        return path

    def restore(self, model: keras.Model, callbacks=()) -> int:
        """Load the backup into `model` (built, compiled) and `callbacks`; the epoch to resume
        from (`0` when there is no backup). Raises `CorruptBackupError` on a bad backup."""
        path = self.directory / MANIFEST
        if not path.exists():
            return 0
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            if manifest.get("format") != FORMAT or not isinstance(manifest.get("files"), dict):
                raise ValueError(f"format {manifest.get('format')!r}")
        except (ValueError, AttributeError) as error:
            raise CorruptBackupError(
                f"The backup manifest {path} is not a valid manifest ({error}); nothing was "
                f"loaded. Received: backup={self.directory}"
            ) from error
        if manifest["settings"] != self.settings:
            changed = sorted(
                k
                for k in set(manifest["settings"]) | set(self.settings)
                if manifest["settings"].get(k) != self.settings.get(k)
            )
            raise CorruptBackupError(
                f"The backup in {self.directory} was made with other settings ({', '.join(changed)}"
                " differ): resuming it would not give the run asked for. Use the same settings, "
                f"or another output folder. Received: backup={self.directory}"
            )
        weights = self._checked(manifest, "weights")
        extra = {key: self._checked(manifest, key) for key in manifest["files"] if key != "weights"}
        if model.optimizer is not None and not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        model.load_weights(weights)
        if "random" in extra:  # `save_weights` leaves out the seed generators' states
            with np.load(extra["random"]) as data:
                for i, variable in enumerate(_random_states(model)):
                    variable.assign(data[f"s{i}"])
        for index, callback in enumerate(callbacks):
            state = dict(manifest["callbacks"][index])
            key = f"best_weights_{index}"
            arrays = None
            if key in extra:
                with np.load(extra[key]) as data:
                    arrays = [data[f"w{i}"] for i in range(len(data.files))]
            if hasattr(callback, "set_resume_state"):  # a callback that keeps its own state
                callback.set_resume_state(state.get("custom", {}), arrays)
                continue
            if arrays is not None:
                state["best_weights"] = arrays
            callback._resumed_state = state  # put back in `on_train_begin`, after its reset
        self._callbacks = list(callbacks)
        self.history = manifest["history"]
        return int(manifest["epoch"])

    @staticmethod
    def epoch_stream(dataset, initial_epoch: int = 0) -> tuple:
        """`(stream, steps_per_epoch)` for `fit`: a finite `tf.data` pipeline that reshuffles
        on every pass, repeated, from the first batch of epoch `initial_epoch` on. Keras keeps
        one iterator over it across epochs, so epoch k trains on the k-th pass, in an
        uninterrupted run and in a resumed one alike (the skipped passes are drawn, not
        trained on: their order is what puts the resumed epochs at theirs). Use it in both."""
        steps = int(dataset.cardinality())
        if steps < 0:
            raise ValueError(
                "`dataset` must have a known number of batches (`cardinality()`); use "
                "`dataset.apply(tf.data.experimental.assert_cardinality(n))`. Received: "
                f"cardinality={steps}"
            )
        return dataset.repeat().skip(initial_epoch * steps), steps

    # ---------------------------------------------------------------- backup
    def set_callbacks(self, callbacks) -> None:
        """The callbacks whose state goes into each backup (in this order on `restore`)."""
        self._callbacks = list(callbacks)

    def on_train_begin(self, logs=None):
        # EarlyStopping resets its counters and best weights in its own `on_train_begin`:
        # this callback comes after it in `fit`'s list, and puts back the restored ones.
        for callback in self._callbacks:
            state = getattr(callback, "_resumed_state", None)
            if state is not None and isinstance(callback, keras.callbacks.EarlyStopping):
                callback.wait, callback.best = state["wait"], state["best"]
                callback.best_epoch = state["best_epoch"]
                callback.best_weights = state.get("best_weights")

    def on_epoch_end(self, epoch, logs=None):
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(float(value))
        self.directory.mkdir(parents=True, exist_ok=True)
        files = {}
        weights = self.directory / f"epoch-{epoch + 1:04d}.weights.h5"
        self.model.save_weights(weights, overwrite=True)
        files["weights"] = weights
        random_states = _random_states(self.model)
        if random_states:  # dropout's random streams: variables, but not weights
            path = self.directory / f"epoch-{epoch + 1:04d}.random.npz"
            arrays = {f"s{i}": np.asarray(v.value) for i, v in enumerate(random_states)}
            with open(path, "wb") as f:
                np.savez(f, **arrays)
            files["random"] = path
        states = []
        for index, callback in enumerate(self._callbacks):
            state = {}
            if hasattr(callback, "get_resume_state"):  # (JSON state, arrays or None)
                custom, arrays = callback.get_resume_state()
                state = {"custom": custom}
                if arrays is not None:
                    path = self.directory / f"epoch-{epoch + 1:04d}.best_{index}.npz"
                    with open(path, "wb") as f:
                        np.savez(f, **{f"w{i}": w for i, w in enumerate(arrays)})
                    files[f"best_weights_{index}"] = path
            elif isinstance(callback, keras.callbacks.EarlyStopping):
                best = callback.best
                state = {
                    "wait": int(callback.wait),
                    "best": None if best is None else float(best),
                    "best_epoch": int(callback.best_epoch),
                }
                if callback.best_weights is not None:
                    path = self.directory / f"epoch-{epoch + 1:04d}.best_{index}.npz"
                    with open(path, "wb") as f:
                        np.savez(f, **{f"w{i}": w for i, w in enumerate(callback.best_weights)})
                    files[f"best_weights_{index}"] = path
            states.append(state)
        for path in files.values():
            with open(path, "rb") as f:
                os.fsync(f.fileno())
        manifest = {
            "format": FORMAT,
            "epoch": epoch + 1,
            "settings": self.settings,
            "history": self.history,
            "callbacks": states,
            "files": {k: {"name": p.name, "sha256": _sha256(p)} for k, p in files.items()},
        }
        _replace_atomically(self.directory / MANIFEST, json.dumps(manifest).encode())
        keep = {p.name for p in files.values()} | {MANIFEST}
        for path in self.directory.iterdir():  # the previous epoch's files
            if path.name not in keep and path.name.startswith("epoch-"):
                path.unlink()


def _random_states(model: keras.Model) -> list:
    """The seed generators' state variables (dropout's random streams): `save_weights` leaves
    them out, and a resumed run would draw other dropout masks than the uninterrupted one."""
    return [v for v in model.variables if v.path.endswith("seed_generator_state")]
