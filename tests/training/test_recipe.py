"""The training recipe of `keras_attention.training` (moved from `examples/pronounce.py`):
`SmoothedSparseCrossentropy` against a float64 NumPy transcription, `TrainingControl`'s
budget, schedule, weight selection, averaging and moving average, `cpu_seconds`,
`BucketedBatches`, and `TrainingControl`'s state through a `ResumableTraining` backup."""

from __future__ import annotations

import json
import time

import keras
import numpy as np
import pytest

from keras_attention.training import (
    BucketedBatches,
    SmoothedSparseCrossentropy,
    TrainingControl,
    cpu_seconds,
    length_buckets,
)
from keras_attention.training.control import EMA_EVERY


def test_batches_are_bucketed_and_cover_each_pair_at_most_once():
    sources = [[4], [4, 5], [4, 5, 6], [4] * 10, [5] * 21] * 9
    targets = [[4], [4, 5], [4, 5, 6], [4] * 10, [4] * 22] * 9
    bounds = (7, 9, 11, 14, 18)
    batches = BucketedBatches(sources, targets, batch_size=4, bounds=bounds, seed=0)
    seen = []
    for inputs, labels in batches:
        source = inputs["source_ids"]
        assert source.shape[1] in (*bounds, 23) and labels.shape == source.shape
        assert inputs["target_ids"].shape == labels.shape
        assert np.all((inputs["target_ids"] == 0) == (labels == 0))
        assert np.all(inputs["target_ids"][:, 0] == 2)  # [START] + target
        seen += [tuple(row) for row in source]
    assert len(seen) <= len(sources) and len(seen) >= len(sources) - 4 * 4
    again = sum(len(labels) for _, labels in batches)  # the next epoch: a new order
    assert again == len(seen)
    ordered = BucketedBatches(sources, targets, batch_size=4, shuffle=False)
    assert sum(len(labels) for _, labels in ordered) == len(sources)  # nothing dropped
    source, inputs, labels = ordered.buckets[0]
    assert source[0].tolist()[:2] == [4, 3] and labels[0].tolist()[:2] == [4, 3]
    assert length_buckets([3, 4, 4, 5, 6, 7, 8, 9, 12, 20], buckets=3) == (5, 8, 20)
    with pytest.raises(ValueError, match="Received: 2 sources, 1 targets"):
        BucketedBatches([[4], [5]], [[4]], batch_size=2)


def test_smoothed_crossentropy_matches_numpy_float64():

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 5))
    labels = np.array([[1, 4, 0], [2, 0, 0]])
    smoothing = 0.1

    def expected_steps(eps):  # -sum_v q_v log p_v, q = (1 - eps) onehot + eps / V
        shifted = logits - logits.max(-1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
        target = (1 - eps) * np.eye(5)[labels] + eps / 5
        return -(target * log_p).sum(-1)

    tensor = keras.ops.convert_to_tensor(logits.astype("float32"))
    for eps in (0.0, smoothing):
        loss = SmoothedSparseCrossentropy(5, eps, reduction=None)
        per_step = keras.ops.convert_to_numpy(loss(labels, tensor))
        np.testing.assert_allclose(per_step, expected_steps(eps), rtol=1e-5, atol=1e-6)
    plain = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(
        float(SmoothedSparseCrossentropy(5, 0.0)(labels, tensor)),
        float(plain(labels, tensor)),
        rtol=1e-6,
    )
    with pytest.raises(ValueError, match="Received: smoothing=1.0"):
        SmoothedSparseCrossentropy(5, 1.0)


def test_training_control_stops_mid_epoch_at_the_time_limit():

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(1e-3), loss="mse")
    calls = []
    control = TrainingControl(
        1e-3, epochs=5, seconds=1e-6, verbose=False, monitor=lambda: calls.append(1) or {"wer": 1}
    )
    x = np.zeros((400, 3), "float32")
    history = model.fit(
        x, x[:, :1], batch_size=10, epochs=5, validation_data=(x[:20], x[:20, :1]),
        callbacks=[control], verbose=0,
    )  # fmt: skip
    assert len(history.history["loss"]) == 1 and control.steps_done == 1
    assert control.stopped_by == "time budget" and calls == [1]
    (point,) = control.curve
    assert point["epoch"] == 1 and point["epochs"] == pytest.approx(1 / 40)
    assert point["wer"] == 1 and np.isfinite(point["val_loss"])


def test_training_control_lines_carry_their_label(capsys):
    """Members trained side by side print interleaved lines: each starts with its label."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(1e-3), loss="mse")
    control = TrainingControl(1e-3, 2, 1e9, monitor=lambda: {"wer": 1.0}, select="wer",
                              average_last=2, label="model 2: ")  # fmt: skip
    x = np.zeros((20, 3), "float32")
    model.fit(x, x[:, :1], epochs=2, validation_data=(x, x[:, :1]), callbacks=[control], verbose=0)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[1].split()[0] for line in lines] == ["epoch", "epoch", "kept"]
    assert all(line.startswith("  model 2: ") for line in lines), lines


def test_cpu_seconds_counts_this_process_and_its_children():
    import subprocess
    import sys

    before = cpu_seconds()
    start = time.process_time()
    while time.process_time() - start < 0.2:  # busy in this process
        pass
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                    "while time.process_time() - t < 0.3: pass"], check=True)  # fmt: skip
    spent = cpu_seconds() - before
    assert spent >= 0.2 + 0.3 - 0.02  # the child's 0.3 s counted once it has ended


def test_training_control_stops_at_the_cpu_budget_not_the_wall_clock():
    """With `clock="cpu"` the budget counts CPU seconds: a sleep (wall time, no CPU) does not
    use it up, a busy loop does; the curve records both clocks."""

    class Sleep(keras.callbacks.Callback):  # 0.4 s of wall time a batch, ~no CPU
        def on_train_batch_end(self, batch, logs=None):
            time.sleep(0.4)

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(1e-3), loss="mse")
    x = np.zeros((80, 3), "float32")
    model.fit(x, x[:, :1], batch_size=10, epochs=1, verbose=0)  # compiled before the timing

    def run(clock, seconds):
        control = TrainingControl(1e-3, 1, seconds, verbose=False, clock=clock)
        model.fit(x, x[:, :1], batch_size=10, epochs=1, callbacks=[Sleep(), control], verbose=0)
        return control

    wall = run("wall", 1.0)  # 0.4 s a batch: stopped after at most 3 of 8 batches
    assert wall.stopped_by == "time budget" and wall.steps_done <= 3
    cpu = run("cpu", 1.0)  # 8 compiled steps of a tiny model use far less than 1 CPU s
    assert cpu.stopped_by == "epochs" and cpu.steps_done == 8
    (point,) = cpu.curve
    assert point["minutes"] * 60 >= 3.2 > 1.0 > point["cpu_minutes"] * 60 >= 0
    with pytest.raises(ValueError, match="Received: clock='gpu'"):
        TrainingControl(1e-3, 1, 1.0, clock="gpu")


def test_training_control_averages_the_weights_as_numpy_float64():
    """`ema`: the moving average of the trainable weights after every EMA_EVERY steps, with
    the warm-up decay (1 + n) / (10 + n), against a float64 NumPy transcription; validation
    scores the average, training goes on from the raw weights, the average is kept as best."""

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(keras.optimizers.SGD(0.1), loss="mse")
    seen = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append([keras.ops.convert_to_numpy(v).astype("float64")
                         for v in self.model.trainable_variables])  # fmt: skip

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(120, 3)).astype("float32"), rng.normal(size=(120, 2)).astype("float32")
    momentum = 0.9
    control = TrainingControl(0.1, 1, 1e9, verbose=False, ema=momentum, validation=(x[:20], y[:20]))
    model.fit(x, y, batch_size=5, epochs=1, callbacks=[Record(), control], verbose=0, shuffle=False)
    every = EMA_EVERY
    expected = None
    for n, weights in enumerate(seen[every - 1 :: every]):
        if expected is None:
            expected = [w.copy() for w in weights]
            continue
        decay = min(momentum**every, (1 + n) / (10 + n))  # n updates made before this one
        expected = [decay * e + (1 - decay) * w for e, w in zip(expected, weights)]
    assert control.ema_updates == len(seen) // every == 4
    for average, value in zip(control.averages, expected):
        np.testing.assert_allclose(average, value, rtol=1e-12)
    for variable, raw, average in zip(model.trainable_variables, seen[-1], expected):
        # the raw weights were put back after validation; on_train_end then put in the best,
        # the average
        np.testing.assert_allclose(keras.ops.convert_to_numpy(variable), average, rtol=1e-6)
        assert not np.allclose(raw, average)
    (point,) = control.curve
    kernel, bias = expected
    np.testing.assert_allclose(
        point["val_loss"], np.mean((x[:20] @ kernel + bias - y[:20]) ** 2), rtol=1e-5
    )
    assert point["val_loss_raw"] != point["val_loss"]
    with pytest.raises(ValueError, match="Received: ema=0.5, validation=None"):
        TrainingControl(1e-3, 1, 1.0, ema=0.5)


def _fit_with_scripted_scores(scores, **control_kwargs):
    """A tiny model fitted one epoch per entry of `scores` (dicts the monitor returns in
    turn; the last one, if there is one more than epochs, scores the averaged weights),
    with the weights after each epoch recorded as float64."""

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(keras.optimizers.SGD(0.1), loss="mse")
    recorded, calls = [], iter(scores)

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            recorded.append([w.astype("float64") for w in self.model.get_weights()])

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 3)).astype("float32"), rng.normal(size=(40, 2)).astype("float32")
    epochs = control_kwargs.pop("epochs")
    control = TrainingControl(
        0.1, epochs, 1e9, verbose=False, monitor=lambda: next(calls), **control_kwargs
    )
    history = model.fit(x, y, batch_size=10, epochs=epochs, validation_data=(x, y), verbose=0,
                        callbacks=[Record(), control])  # fmt: skip
    control.history = history.history
    return model, control, recorded


def test_training_control_keeps_the_weights_of_the_best_monitored_score():
    """`select=("wer", "per")`: the epoch of the lowest WER is kept, ties broken by the PER
    (epochs 2 and 3 tie on WER; 3 has the lower PER), whatever the validation loss; a worse
    score counts towards `patience` (2 here: epochs 4 and 5 stop training)."""
    scores = [{"wer": 5, "per": 1}, {"wer": 3, "per": 2}, {"wer": 3, "per": 1},
              {"wer": 4, "per": 0}, {"wer": 3, "per": 1}, {"wer": 1, "per": 1}]  # fmt: skip
    model, control, recorded = _fit_with_scripted_scores(
        scores, epochs=6, select=("wer", "per"), patience=2
    )
    assert control.stopped_by == "early stopping" and len(recorded) == 5
    # The monitor's scores are in the epochs' logs (History, the progress bar) as val_<name>.
    assert control.history["val_wer"] == [5.0, 3.0, 3.0, 4.0, 3.0]
    assert control.history["val_per"] == [1.0, 2.0, 1.0, 0.0, 1.0]
    assert control.best_epoch == 3 and control.best == [3.0, 1.0] and control.selection is None
    for kept, expected in zip(model.get_weights(), recorded[2]):
        np.testing.assert_array_equal(kept, expected.astype("float32"))
    with pytest.raises(ValueError, match="Received: select='wer', monitor=None"):
        TrainingControl(1e-3, 1, 1.0, select="wer")
    with pytest.raises(ValueError, match="Received: average_last=-1"):
        TrainingControl(1e-3, 1, 1.0, average_last=-1)


@pytest.mark.parametrize("average_wer, kept", [(1.5, "mean"), (2.0, "epoch"), (2.5, "epoch")])
def test_training_control_keeps_the_mean_of_the_last_epochs_where_it_wins(average_wer, kept):
    """`average_last=3`: at the end the mean of the last 3 epochs' weights (a float64 NumPy
    mean of the recorded weights) is scored by the monitor and kept where its score is lower
    than the best epoch's (2.0, epoch 4); a tie keeps the epoch."""
    scores = [{"wer": 9}, {"wer": 8}, {"wer": 3}, {"wer": 2}, {"wer": 4}, {"wer": average_wer}]
    model, control, recorded = _fit_with_scripted_scores(
        scores, epochs=5, select="wer", average_last=3
    )
    mean = [np.mean(ws, axis=0) for ws in zip(*recorded[2:5])]
    expected = mean if kept == "mean" else recorded[3]
    for value, reference in zip(model.get_weights(), expected):
        np.testing.assert_allclose(value, reference, rtol=1e-6, atol=1e-7)
    assert not np.allclose(mean[0], recorded[3][0])  # the two candidates differ
    assert control.selection == {
        "kept": "mean of epochs 3-5" if kept == "mean" else "epoch 4",
        "best_epoch": {"epoch": 4, "wer": 2.0},
        "average": {"epochs": 3, "wer": average_wer},
    }


def test_training_control_state_survives_a_backup(tmp_path):
    """TrainingControl's state goes through `_resume`'s backup and comes back: the budget spent
    on both clocks (the schedule's progress), early stopping's best score, epoch, counter and
    best weights, the last epochs' weights (`average_last`), the curve, the moving average;
    and whether training had stopped."""

    from keras_attention.training import resume as _resume

    def model():
        keras.utils.set_random_seed(0)
        m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        m.compile(keras.optimizers.Adam(1e-2), loss="mse")
        return m

    x = np.random.default_rng(0).normal(size=(40, 3)).astype("float32")
    data = (x, x[:, :1] * 2)
    wers = iter([3.0, 2.0, 5.0])  # (5.0: the mean of the two, scored at the end, loses)
    first = TrainingControl(1e-2, 2, 1e9, patience=1, verbose=False, ema=0.9,
                                    validation=data, monitor=lambda: {"wer": next(wers)},
                                    select="wer", average_last=2)  # fmt: skip
    backup = _resume.ResumableTraining(tmp_path, settings={"a": 1})
    backup.set_callbacks([first])
    trained = model()
    trained.fit(*data, batch_size=5, epochs=2, validation_data=data, verbose=0,
                callbacks=[first, backup])  # fmt: skip
    state, arrays = first.get_resume_state()
    assert not state["stopped"] and len(first.curve) == 2 and first.ema_updates == 3
    second = TrainingControl(1e-2, 2, 1.0, patience=1, verbose=False, ema=0.9,
                                     validation=data, monitor=dict, select="wer",
                                     average_last=2)  # fmt: skip
    assert _resume.ResumableTraining(tmp_path, settings={"a": 1}).restore(model(), [second]) == 2
    assert second.curve == first.curve and second.best == first.best
    assert (second.wait, second.steps_done, second.seconds) == (first.wait, 16, 1e9)
    saved = json.loads((tmp_path / _resume.MANIFEST).read_text())["callbacks"][0]["custom"]
    assert second.spent_before == saved["spent"] and 0 < saved["spent"]["cpu"]
    for a, b in zip(second.best_weights, first.best_weights):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(second.averages, first.averages):
        np.testing.assert_array_equal(a, b)
    assert second.ema_updates == first.ema_updates and not second.resumed_stopped
    assert second.best_epoch == first.best_epoch == 2 and len(second.recent) == 2
    for restored, saved in zip(second.recent, first.recent):
        for a, b in zip(restored, saved):
            np.testing.assert_array_equal(a, b)
    second.set_resume_state({**state, "stopped": True}, arrays)
    assert second.resumed_stopped  # main() then trains no further epoch
