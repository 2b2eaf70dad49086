"""Issue 31, item 1: a stopped run resumes from its last backup with the same result, and a
corrupt or half-written backup is refused (`keras_attention.training.ResumableTraining`; the
examples' killed-and-resumed runs are in `tests/examples/`)."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

from keras_attention.training import resume as _resume
from tests.backend_utils import to_numpy

EPOCHS = 4


class _Stop(keras.callbacks.Callback):
    """Stands for a kill at the start of epoch `epoch` (after the previous epoch's backup)."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise KeyboardInterrupt


def _data(tf_data: bool):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 5)).astype("float32")
    y = (x @ rng.normal(size=(5, 1))).astype("float32")
    if not tf_data:
        return (x, y), {}
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    return (dataset.shuffle(64, seed=3, reshuffle_each_iteration=True).batch(16),), {}


def _model():
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [
            keras.Input((5,)),
            keras.layers.Dense(8),
            keras.layers.Dropout(0.3, seed=5),  # its random stream must resume too
            keras.layers.Dense(1),
        ]
    )
    model.compile(keras.optimizers.Adam(1e-2), loss="mse")
    return model


def _train(directory, tf_data, stop_at=None, resume=False):
    """A fresh model, data pipeline and callbacks, as a new process would make them."""
    model = _model()
    early = keras.callbacks.EarlyStopping(monitor="loss", patience=10, restore_best_weights=True)
    backup = _resume.ResumableTraining(directory, settings={"lr": 1e-2})
    backup.set_callbacks([early])
    data, kwargs = _data(tf_data)
    initial = backup.restore(model, [early]) if resume else 0
    if tf_data:
        stream, steps = backup.epoch_stream(data[0], initial)
        data, kwargs = (stream,), {"steps_per_epoch": steps}
    callbacks = [early, backup] + ([_Stop(stop_at)] if stop_at is not None else [])
    fit_kwargs = {"batch_size": 16} if not tf_data else {}
    model.fit(
        *data, epochs=EPOCHS, initial_epoch=initial, callbacks=callbacks, verbose=0,
        shuffle=False, **fit_kwargs, **kwargs,
    )  # fmt: skip
    return model, backup, initial


@pytest.mark.parametrize(
    "tf_data",
    [False, pytest.param(True, marks=pytest.mark.tensorflow_only)],
    ids=["arrays", "tf.data-reshuffled"],
)
def test_stopped_and_resumed_equals_uninterrupted(tmp_path, tf_data):
    """Weights (optimizer state included), dropout's random stream, EarlyStopping's best weights
    and the history of a run
    stopped after epoch 2 and resumed equal those of an uninterrupted run, exactly; with a
    tf.data pipeline that reshuffles every epoch, `epoch_stream` restores each epoch's order."""
    whole, whole_backup, _ = _train(tmp_path / "whole", tf_data)
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "cut", tf_data, stop_at=2)
    manifest = json.loads((tmp_path / "cut" / _resume.MANIFEST).read_text())
    assert manifest["epoch"] == 2
    resumed, resumed_backup, initial = _train(tmp_path / "cut", tf_data, resume=True)
    assert initial == 2
    for a, b in zip(whole.weights, resumed.weights):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    for a, b in zip(whole.optimizer.variables, resumed.optimizer.variables):
        np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    assert resumed_backup.history == whole_backup.history
    assert len(resumed_backup.history["loss"]) == EPOCHS


@pytest.fixture
def backup(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "b", False, stop_at=2)
    return tmp_path / "b"


def _weights_file(directory):
    return next(directory.glob("epoch-*.weights.h5"))


def _truncate(directory):
    path = _weights_file(directory)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_a_bit(directory):
    path = _weights_file(directory)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _delete_weights(directory):
    _weights_file(directory).unlink()


def _garble_manifest(directory):
    path = directory / _resume.MANIFEST
    path.write_text(path.read_text()[:40])


@pytest.mark.parametrize(
    "damage, message",
    [
        (_truncate, "is corrupt"),
        (_flip_a_bit, "is corrupt"),
        (_delete_weights, "is incomplete"),
        (_garble_manifest, "not a valid manifest"),
    ],
    ids=["truncated", "bit-flipped", "missing", "half-written-manifest"],
)
def test_corrupt_or_half_written_backup_is_refused(backup, damage, message):
    damage(backup)
    model = _model()
    before = [to_numpy(w).copy() for w in model.weights]
    checker = _resume.ResumableTraining(backup, settings={"lr": 1e-2})
    with pytest.raises(ValueError, match=message) as error:
        checker.restore(model)
    assert isinstance(error.value, _resume.CorruptBackupError)
    assert f"backup={backup}" in str(error.value)
    for weight, old in zip(model.weights, before):  # nothing was loaded
        np.testing.assert_array_equal(to_numpy(weight), old)


def test_backup_of_other_settings_is_refused(backup):
    with pytest.raises(ValueError, match="other settings.*lr"):
        _resume.ResumableTraining(backup, settings={"lr": 1e-3}).restore(_model())


def test_a_kill_while_writing_leaves_the_previous_backup(backup):
    """The manifest is replaced last and atomically: a temporary left by a kill mid-write is
    ignored, and the previous epoch's backup still loads."""
    (backup / (_resume.MANIFEST + ".tmp")).write_text('{"format": 1, "epo')
    (backup / "epoch-0003.weights.h5").write_bytes(b"half")
    model = _model()
    assert _resume.ResumableTraining(backup, settings={"lr": 1e-2}).restore(model) == 2
