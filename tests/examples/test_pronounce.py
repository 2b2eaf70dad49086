"""The G2P example: CMUdict data rules, the split by word, ids and batches, a smoke run end to
end, and (marker `figures`) the default run whose numbers BENCHMARKS.md records."""

from __future__ import annotations

import json
import time
from pathlib import Path

import keras
import numpy as np
import pytest
from _example_loader import load_example

from keras_attention.models import Translator

pytestmark = pytest.mark.tensorflow_only  # tf.data pipeline, tf-text tokenizer, SavedModel

example = load_example("pronounce")


@pytest.fixture(scope="module")
def lexicon():
    return example.load_lexicon()


def test_data_rules_and_stress_stripping(lexicon):
    assert example.strip_stress(("N", "AY1", "F")) == ("N", "AY", "F")
    assert example.strip_stress(("AH0", "B", "AW2", "T")) == ("AH", "B", "AW", "T")
    assert lexicon["knife"] == [("N", "AY", "F")]
    assert lexicon["exit"] == [("EH", "G", "Z", "IH", "T"), ("EH", "K", "S", "AH", "T")]
    assert "don't" in lexicon and "o'clock" in lexicon  # inner apostrophes are kept
    for left_out in ("'bout", "adams'", "a.", "ad-hoc", "a.m."):
        assert left_out not in lexicon
    assert all(example.WORD_RULE.fullmatch(w) for w in lexicon)
    phones = {p for refs in lexicon.values() for ref in refs for p in ref}
    assert len(phones) == 39 and not any(c.isdigit() for p in phones for c in p)
    for refs in lexicon.values():
        assert len(set(refs)) == len(refs)  # each pronunciation once
    assert 120_000 < len(lexicon) < 126_052
    stressed = example.load_lexicon(keep_stress=True)
    assert stressed["knife"] == [("N", "AY1", "F")]
    assert stressed.keys() == lexicon.keys()


def test_split_is_by_word_deterministic_and_written(lexicon, tmp_path):
    splits = example.split_words(lexicon, seed=0)
    assert splits == example.split_words(list(lexicon)[::-1], seed=0)  # order-free
    assert splits != example.split_words(lexicon, seed=1)
    sets = {k: set(v) for k, v in splits.items()}
    assert not sets["train"] & sets["test"] and not sets["train"] & sets["valid"]
    assert not sets["valid"] & sets["test"]
    assert set().union(*sets.values()) == set(lexicon)
    assert abs(len(sets["test"]) / len(lexicon) - 0.10) < 0.001
    first = example.write_splits(splits, tmp_path / "a")
    second = example.write_splits(example.split_words(lexicon, seed=0), tmp_path / "b")
    for name in ("train", "valid", "test"):
        text = Path(first[name]).read_text()
        assert text == Path(second[name]).read_text()
        assert text.splitlines() == splits[name]


def test_ids_match_the_char_tokenizer_and_the_phone_vocabulary_round_trips():
    from keras_attention.text import CharTokenizer

    words = ["knife", "don't", "x"]
    tokenizer = CharTokenizer(vocabulary=list(example.LETTERS), lowercase=True)
    expected = tokenizer.tokenize(["Knife", "don't", "x"], add_end=True).numpy()
    np.testing.assert_array_equal(example.encode_words(words), expected)
    vocabulary = example.PhoneVocabulary(["N", "AY", "F", "K", "S"])
    inputs, labels = vocabulary.encode([("N", "AY", "F"), ("K", "S")], 5)
    assert vocabulary.decode(labels[0]) == ("N", "AY", "F")
    assert inputs[1].tolist() == [2, vocabulary.index["K"], vocabulary.index["S"], 0, 0]
    assert labels[1].tolist() == [vocabulary.index["K"], vocabulary.index["S"], 3, 0, 0]


def test_batches_are_bucketed_and_cover_each_pair_at_most_once():
    words = ["a", "ab", "abc", "abcdefghij", "abcdefghijklmnopqrstu"] * 9
    phones = [("AH",), ("AE", "B"), ("AE", "B", "K"), ("AH",) * 10, ("AH",) * 22] * 9
    vocabulary = example.PhoneVocabulary(["AH", "AE", "B", "K"])
    batches = example.BucketedBatches(words, phones, vocabulary, batch_size=4, seed=0)
    seen = []
    for inputs, labels in batches:
        source = inputs["source_ids"]
        assert source.shape[1] in (*example.BUCKETS, 23) and labels.shape == source.shape
        assert inputs["target_ids"].shape == labels.shape
        assert np.all((inputs["target_ids"] == 0) == (labels == 0))
        seen += [tuple(row) for row in source]
    assert len(seen) <= len(words) and len(seen) >= len(words) - 4 * 4
    again = sum(len(labels) for _, labels in batches)  # the next epoch: a new order
    assert again == len(seen)


def test_smoke_run_trains_scores_draws_and_exports(tmp_path):
    import tensorflow as tf

    output = tmp_path / "out"
    results = example.main(
        ["--smoke", "--no-litert", "--output-dir", str(output), "--word", "knife", "Ghoti"]
    )
    for name in ("train", "valid", "test"):
        assert Path(results["splits"][name]).exists()
    metrics = json.loads(Path(results["metrics_path"]).read_text())
    assert set(metrics["test"]) == {"wer", "per", "words"} and metrics["test"]["words"] == 40
    assert 0 <= metrics["test"]["wer"] <= 100 and metrics["test"]["per"] >= 0
    rows = Path(results["predictions"]).read_text().splitlines()
    assert rows[0] == "word\tprediction\treferences" and len(rows) == 41
    word, _, references = rows[1].split("\t")
    assert references == " | ".join(" ".join(r) for r in example.load_lexicon()[word])
    assert [Path(p).name for p in results["heatmaps"]] == [f"{w}.png" for w in example.HARD_WORDS]
    for path in results["heatmaps"]:
        assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(results["answers"]) == ["knife", "ghoti"]
    loaded = tf.saved_model.load(results["saved_model"])
    out = loaded.signatures["pronounce"](words=tf.constant(["knife", "ghoti"]))
    said = [s.decode() for s in out["pronunciations"].numpy()]
    assert said == list(results["answers"].values())
    empty = loaded.signatures["pronounce"](words=tf.constant([], tf.string))
    assert empty["pronunciations"].shape == (0,)
    # pronounce.keras opens without the script's classes, and pronounces as the run did
    reloaded = keras.saving.load_model(results["keras_model"])
    assert reloaded.built and len(reloaded.weights) > 0
    vocabulary = example.PhoneVocabulary([])
    vocabulary.tokens = json.loads((output / "phones.json").read_text())
    translator = Translator(reloaded, max_length=metrics["config"]["max_length"],
                            beam_width=metrics["config"]["beam_width"])  # fmt: skip
    said = example.predict(translator, ["knife", "ghoti"], vocabulary)
    assert [" ".join(p) for p in said] == list(results["answers"].values())
    training = metrics["training"]
    assert training["budget_clock"] == "wall" and training["stopped_by"] == "epochs"
    assert 0 < training["cpu_seconds"] <= metrics["cpu_seconds"]
    assert 0 < training["seconds"] <= metrics["wall_seconds"]
    assert metrics["cpu_share"] == pytest.approx(metrics["cpu_seconds"] / metrics["wall_seconds"])


def test_smoke_run_under_a_cpu_budget_stops_by_it(tmp_path):
    """`--cpu-budget` budgets training by CPU seconds: 1.05 CPU minutes less the 1-minute
    reserve leaves 3 s minus the set-up's CPU time, which a smoke epoch outlasts."""
    results = example.main(
        ["--smoke", "--no-litert", "--epochs", "50", "--cpu-budget", "1.05",
         "--output-dir", str(tmp_path)]
    )  # fmt: skip
    training = results["training"]
    assert training["budget_clock"] == "cpu" and training["stopped_by"] == "CPU budget"
    assert training["budget_seconds"] <= 3.0 and training["epochs"] < 50
    assert training["curve"][-1]["cpu_minutes"] * 60 >= training["budget_seconds"]
    assert example._parse(["--cpu-budget"]).cpu_budget == 60.0  # 2 cores × 30 minutes


@pytest.mark.slow
def test_smoke_run_exports_and_checks_litert(tmp_path):
    results = example.main(["--smoke", "--output-dir", str(tmp_path)])
    litert = results["litert"]
    assert (tmp_path / "pronounce.tflite").stat().st_size == litert["bytes"]
    assert litert["runner_imported_keras_attention"] is False
    assert litert["agreement_with_keras"] == {"greedy": 1.0, "beam": 1.0}
    assert set(litert["latency_ms"]) == {"greedy", "beam"}


@pytest.mark.slow
def test_run_without_ai_edge_litert_writes_the_file_and_finishes(tmp_path, monkeypatch, capsys):
    """`make demo`'s environment (the `examples` extra) has no `ai_edge_litert`: the run used to
    fail after training, with no metrics.json; it now writes the .tflite file and says why it
    was not run."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec",
        lambda name, *a: None if name == "ai_edge_litert" else find_spec(name, *a),
    )  # fmt: skip
    results = example.main(["--smoke", "--output-dir", str(tmp_path)])
    litert = results["litert"]
    assert (tmp_path / "pronounce.tflite").stat().st_size == litert["bytes"] > 0
    assert "not installed" in litert["skipped"] and "[litert]" in litert["skipped"]
    assert json.loads((tmp_path / "metrics.json").read_text())["litert"] == litert
    assert "written but not run" in capsys.readouterr().out


@pytest.mark.slow
def test_members_train_in_turn_and_decode_as_one_ensemble(tmp_path):
    """`--members 2`: two models of model seeds 0 and 1 (their own backups, shares of the
    budget and curves) searched as one Seq2SeqEnsemble; pronounce.keras reloads the ensemble,
    which pronounces as the run did."""
    results = example.main(["--smoke", "--no-litert", "--members", "2", "--epochs", "2",
                             "--output-dir", str(tmp_path), "--word", "knife"])  # fmt: skip
    training = results["training"]
    first, second = training["members"]
    assert first["curve"] != second["curve"] and training["epochs"] == 4
    assert training["cpu_seconds"] == first["cpu_seconds"] + second["cpu_seconds"]
    # The first member gets half the training budget (--smoke: 5 minutes less the 1-minute
    # reserve and the set-up); its epochs ended sooner, so the second gets all that was left.
    assert first["budget_seconds"] <= 4 * 60 / 2 < second["budget_seconds"]
    assert (tmp_path / "backup-0").is_dir() and (tmp_path / "backup-1").is_dir()
    reloaded = keras.saving.load_model(results["keras_model"])
    assert isinstance(reloaded, example.Seq2SeqEnsemble) and len(reloaded.members) == 2
    vocabulary = example.PhoneVocabulary([])
    vocabulary.tokens = json.loads((tmp_path / "phones.json").read_text())
    translator = Translator(reloaded, max_length=24, beam_width=2)
    said = example.predict(translator, ["knife"], vocabulary)
    assert [" ".join(p) for p in said] == list(results["answers"].values())


def test_settings():
    full = example._parse(["--full"])
    assert (full.units, full.encoder_layers, full.epochs, full.beam_width) == (512, 2, 40, 5)
    default = example._parse([])
    assert default.epochs == 40 and example._parse(["--smoke", "--epochs", "3"]).epochs == 3
    assert (default.select, default.average_last, default.patience) == ("wer", 3, 5)
    assert (default.rnn, default.units, default.beam_width, default.time_budget) == (
        "gru",
        256,
        4,
        28.5,
    )
    assert default.label_smoothing == 0.1  # BENCHMARKS.md §7
    assert default.attention == "bahdanau"  # BENCHMARKS.md §7: it learns this task faster
    assert (default.members, default.reserve) == (2, 4.0)  # an ensemble of two: §7
    assert (example._parse(["--members", "1"]).reserve, example._parse(["--smoke"]).members) == (
        2.5,
        1,
    )
    long = example._parse(["--long"])
    assert (long.members, long.time_budget, long.reserve, long.dropout) == (6, 178.0, 10.0, 0.0)
    assert long.time_budget <= 180 and long.units == default.units
    # A budget given with a setting is the user's, not the setting's.
    assert example._parse(["--long", "--time-budget", "150"]).time_budget == 150.0
    assert example._parse(["--smoke", "--time-budget", "2", "--reserve", "0.5"]).reserve == 0.5
    luong = example._parse(["--attention", "luong", "--alignment", "local_monotonic"])
    assert (luong.attention, luong.alignment) == ("luong", "local_monotonic")


def test_smoothed_crossentropy_matches_numpy_float64():
    import keras

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
        loss = example.SmoothedSparseCrossentropy(5, eps, reduction=None)
        per_step = keras.ops.convert_to_numpy(loss(labels, tensor))
        np.testing.assert_allclose(per_step, expected_steps(eps), rtol=1e-5, atol=1e-6)
    plain = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    np.testing.assert_allclose(
        float(example.SmoothedSparseCrossentropy(5, 0.0)(labels, tensor)),
        float(plain(labels, tensor)),
        rtol=1e-6,
    )
    with pytest.raises(ValueError, match="Received: smoothing=1.0"):
        example.SmoothedSparseCrossentropy(5, 1.0)


def test_n_best_coverage_counts_references_in_the_beams(lexicon):
    vocabulary = example.PhoneVocabulary({p for refs in lexicon.values() for r in refs for p in r})
    words = ["exit", "knife", "either"]  # exit and either have two pronunciations each
    assert len(lexicon["exit"]) == 2 and len(lexicon["knife"]) == 1

    def ids(phones, length=8):
        row = [vocabulary.index[p] for p in phones] + [example.END_ID]
        return row + [0] * (length - len(row))

    class FakeTranslator:  # beams, best first: exit's two references; either's first only
        beam_width = 4

        def __call__(self, source_ids):
            assert source_ids.shape[0] == 2  # knife (one reference) is not decoded
            exit_, either = lexicon["exit"], lexicon["either"]
            other = ("AH",)
            return {"beam_ids": np.array([
                [ids(exit_[1]), ids(other), ids(exit_[0]), ids(other)],
                [ids(other), ids(other), ids(other), ids(either[0])],
            ])}  # fmt: skip

    cover = example.n_best_coverage(FakeTranslator(), words, lexicon, vocabulary, n=4)
    references = len(lexicon["exit"]) + len(lexicon["either"])
    assert cover["words"] == 2 and cover["references"] == references
    assert cover["references_found"] == 3 and cover["words_all_found"] == 1
    assert cover["share_found"] == pytest.approx(3 / references)
    only_three = example.n_best_coverage(FakeTranslator(), words, lexicon, vocabulary, n=3)
    assert only_three["references_found"] == 2  # either's reference is 4th
    with pytest.raises(ValueError, match="Received: n=5"):
        example.n_best_coverage(FakeTranslator(), words, lexicon, vocabulary, n=5)


def test_training_control_stops_mid_epoch_at_the_time_limit():
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(1e-3), loss="mse")
    calls = []
    control = example.TrainingControl(
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


def test_cpu_seconds_counts_this_process_and_its_children():
    import subprocess
    import sys

    before = example.cpu_seconds()
    start = time.process_time()
    while time.process_time() - start < 0.2:  # busy in this process
        pass
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                    "while time.process_time() - t < 0.3: pass"], check=True)  # fmt: skip
    spent = example.cpu_seconds() - before
    assert spent >= 0.2 + 0.3 - 0.02  # the child's 0.3 s counted once it has ended


def test_training_control_stops_at_the_cpu_budget_not_the_wall_clock():
    """With `clock="cpu"` the budget counts CPU seconds: a sleep (wall time, no CPU) does not
    use it up, a busy loop does; the curve records both clocks."""
    import keras

    class Sleep(keras.callbacks.Callback):  # 0.4 s of wall time a batch, ~no CPU
        def on_train_batch_end(self, batch, logs=None):
            time.sleep(0.4)

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.Adam(1e-3), loss="mse")
    x = np.zeros((80, 3), "float32")
    model.fit(x, x[:, :1], batch_size=10, epochs=1, verbose=0)  # compiled before the timing

    def run(clock, seconds):
        control = example.TrainingControl(1e-3, 1, seconds, verbose=False, clock=clock)
        model.fit(x, x[:, :1], batch_size=10, epochs=1, callbacks=[Sleep(), control], verbose=0)
        return control

    wall = run("wall", 1.0)  # 0.4 s a batch: stopped after at most 3 of 8 batches
    assert wall.stopped_by == "time budget" and wall.steps_done <= 3
    cpu = run("cpu", 1.0)  # 8 compiled steps of a tiny model use far less than 1 CPU s
    assert cpu.stopped_by == "epochs" and cpu.steps_done == 8
    (point,) = cpu.curve
    assert point["minutes"] * 60 >= 3.2 > 1.0 > point["cpu_minutes"] * 60 >= 0
    with pytest.raises(ValueError, match="Received: clock='gpu'"):
        example.TrainingControl(1e-3, 1, 1.0, clock="gpu")


def test_training_control_averages_the_weights_as_numpy_float64():
    """`ema`: the moving average of the trainable weights after every EMA_EVERY steps, with
    the warm-up decay (1 + n) / (10 + n), against a float64 NumPy transcription; validation
    scores the average, training goes on from the raw weights, the average is kept as best."""
    import keras

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
    control = example.TrainingControl(
        0.1, 1, 1e9, verbose=False, ema=momentum, validation=(x[:20], y[:20])
    )
    model.fit(x, y, batch_size=5, epochs=1, callbacks=[Record(), control], verbose=0, shuffle=False)
    every = example.EMA_EVERY
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
        example.TrainingControl(1e-3, 1, 1.0, ema=0.5)


def _fit_with_scripted_scores(scores, **control_kwargs):
    """A tiny model fitted one epoch per entry of `scores` (dicts the monitor returns in
    turn; the last one, if there is one more than epochs, scores the averaged weights),
    with the weights after each epoch recorded as float64."""
    import keras

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
    control = example.TrainingControl(
        0.1, epochs, 1e9, verbose=False, monitor=lambda: next(calls), **control_kwargs
    )
    model.fit(x, y, batch_size=10, epochs=epochs, validation_data=(x, y), verbose=0,
              callbacks=[Record(), control])  # fmt: skip
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
    assert control.best_epoch == 3 and control.best == [3.0, 1.0] and control.selection is None
    for kept, expected in zip(model.get_weights(), recorded[2]):
        np.testing.assert_array_equal(kept, expected.astype("float32"))
    with pytest.raises(ValueError, match="Received: select='wer', monitor=None"):
        example.TrainingControl(1e-3, 1, 1.0, select="wer")
    with pytest.raises(ValueError, match="Received: average_last=-1"):
        example.TrainingControl(1e-3, 1, 1.0, average_last=-1)


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


def test_bad_flags_exit_with_a_message(capsys):
    with pytest.raises(SystemExit):
        example.main(["--window", "0"])
    assert "must be a positive integer" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        example.main(["--time-budget", "-1"])
    assert "must be a positive number" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        example.main(["--label-smoothing", "1"])
    assert "must be in [0, 1)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        example.main(["--long", "--full"])
    assert "choose one" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # Luong's options without Luong: never silently ignored
        example.main(["--alignment", "local_predictive"])
    assert "add --attention luong" in capsys.readouterr().err


@pytest.mark.figures
def test_default_run_reaches_the_recorded_numbers(tmp_path):
    """The default run of BENCHMARKS.md §7 (about 28 minutes on 2 CPU cores): two models of
    two seeds, each with half the budget, searched as one ensemble.

    Recorded there (2026-12-06, a quiet 2-core Intel machine, 170% CPU, 27.3 minutes): test
    WER 23.50%, PER 5.55% on 12,410 words (15.8 and 15.0 epochs); the same recipe by CPU
    budget, two other seeds: 23.91% / 5.62%. The bounds are the issue's goal (24.5% / 5.9%),
    which a loaded machine training fewer epochs may miss."""
    results = example.main(["--output-dir", str(tmp_path)])
    assert results["wall_seconds"] < 30 * 60
    assert results["test"]["words"] == 12_410
    assert results["test"]["wer"] <= 24.5
    assert results["test"]["per"] <= 5.9
    assert results["n_best"]["words"] == 802  # test words with several pronunciations
    assert 0.6 < results["n_best"]["share_found"] <= 1.0  # 81.8% recorded
    members = results["training"]["members"]
    assert len(members) == 2
    for member in members:
        curve = member["curve"]
        assert [p["epoch"] for p in curve] == list(range(1, len(curve) + 1)) and len(curve) >= 6
    litert = results["litert"]
    assert litert["agreement_with_keras"]["greedy"] > 0.999
    assert litert["agreement_with_keras"]["beam"] > 0.999


# ---------------------------------------------------------------- --resume (issue 31)
def _run_pronounce(output, *extra, kill_after_epoch=None):
    """`pronounce.py --smoke` in a process group of its own; with `kill_after_epoch`, SIGKILL
    it once the backup of that epoch is written (during the next epoch's training). Returns
    its metrics.json (None when killed)."""
    import os
    import signal
    import subprocess
    import sys

    from _example_loader import EXAMPLES

    code = f"import sys; sys.path.insert(0, {str(EXAMPLES)!r}); import pronounce; " + (
        "pronounce.main(sys.argv[1:])"
    )
    # An epoch-driven schedule: 10^6 minutes of budget make the elapsed-time term of the
    # learning-rate progress (`TrainingControl._progress`) ~1e-9, which rounds away in
    # cos(pi * progress); otherwise the rate would depend on the wall clock of each run.
    args = ["--smoke", "--no-litert", "--epochs", "3", "--patience", "5", "--dropout", "0.3",
            "--time-budget", "1000000", "--output-dir", str(output), *extra]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    manifest = output / "backup" / "manifest.json"
    deadline = time.monotonic() + 600
    try:
        while process.poll() is None:
            if time.monotonic() > deadline:
                pytest.fail("pronounce.py did not finish within 600 s")
            if kill_after_epoch is not None and manifest.exists():
                try:
                    epoch = json.loads(manifest.read_text())["epoch"]
                except ValueError:
                    epoch = 0
                if epoch >= kill_after_epoch:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait(timeout=60)
                    return None
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
    assert process.returncode == 0, process.stderr.read().decode()[-3000:]
    return json.loads((output / "metrics.json").read_text())


@pytest.mark.slow
def test_killed_and_resumed_run_reaches_the_same_metrics(tmp_path):
    """SIGKILL during epoch 2 (after epoch 1's backup), then `--resume`: the same validation
    losses and WER/PER curve, best validation loss and test WER/PER as an uninterrupted run.

    Compared exactly: the resumed run restores the weights, Adam's moments and step, dropout's
    random streams, the batch order, the budget spent and TrainingControl's early-stopping
    state, and the smoke run decodes without XLA on the same CPU, so nothing is left to
    differ (the wall and CPU minutes of the curve do, and are not compared)."""
    whole = _run_pronounce(tmp_path / "whole")
    assert _run_pronounce(tmp_path / "cut", kill_after_epoch=1) is None
    assert not (tmp_path / "cut" / "metrics.json").exists()  # killed mid-training
    resumed = _run_pronounce(tmp_path / "cut", "--resume")
    assert resumed["training"]["resumed_from_epoch"] in (1, 2)  # 2: killed while saving 2
    assert whole["training"]["resumed_from_epoch"] == 0
    keys = ("epoch", "epochs", "val_loss", "wer", "per")
    curve = lambda run: [{k: p[k] for k in keys} for p in run["training"]["curve"]]  # noqa: E731
    assert len(curve(whole)) == 3 and curve(resumed) == curve(whole)
    assert resumed["training"]["best_score"] == whole["training"]["best_score"]
    assert resumed["training"]["selection"] == whole["training"]["selection"]
    assert resumed["training"]["steps"] == whole["training"]["steps"]
    assert resumed["test"] == whole["test"]
    assert resumed["n_best"] == whole["n_best"]


def test_training_control_state_survives_a_backup(tmp_path):
    """TrainingControl's state goes through `_resume`'s backup and comes back: the budget spent
    on both clocks (the schedule's progress), early stopping's best score, epoch, counter and
    best weights, the last epochs' weights (`average_last`), the curve, the moving average;
    and whether training had stopped."""
    import keras

    from keras_attention.training import resume as _resume

    def model():
        keras.utils.set_random_seed(0)
        m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        m.compile(keras.optimizers.Adam(1e-2), loss="mse")
        return m

    x = np.random.default_rng(0).normal(size=(40, 3)).astype("float32")
    data = (x, x[:, :1] * 2)
    wers = iter([3.0, 2.0, 5.0])  # (5.0: the mean of the two, scored at the end, loses)
    first = example.TrainingControl(1e-2, 2, 1e9, patience=1, verbose=False, ema=0.9,
                                    validation=data, monitor=lambda: {"wer": next(wers)},
                                    select="wer", average_last=2)  # fmt: skip
    backup = _resume.ResumableTraining(tmp_path, settings={"a": 1})
    backup.set_callbacks([first])
    trained = model()
    trained.fit(*data, batch_size=5, epochs=2, validation_data=data, verbose=0,
                callbacks=[first, backup])  # fmt: skip
    state, arrays = first.get_resume_state()
    assert not state["stopped"] and len(first.curve) == 2 and first.ema_updates == 3
    second = example.TrainingControl(1e-2, 2, 1.0, patience=1, verbose=False, ema=0.9,
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


def test_resume_refuses_a_corrupt_backup_and_other_settings(tmp_path):
    """A backup whose weights file was changed is refused with CorruptBackupError naming the
    file, before any training; so is a backup made with other settings."""
    from keras_attention.training import resume as _resume

    output = tmp_path / "out"
    example.main(["--smoke", "--no-litert", "--output-dir", str(output)])
    weights = next((output / "backup").glob("epoch-*.weights.h5"))
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01
    weights.write_bytes(bytes(data))
    with pytest.raises(_resume.CorruptBackupError, match=f"{weights.name} is corrupt"):
        example.main(["--smoke", "--no-litert", "--output-dir", str(output), "--resume"])
    with pytest.raises(ValueError, match="other settings.*dropout"):
        example.main(
            ["--smoke", "--no-litert", "--dropout", "0.2", "--output-dir", str(output), "--resume"]
        )
    with pytest.raises(SystemExit):
        example._parse(["--resume"])  # no --output-dir: nothing to resume from
