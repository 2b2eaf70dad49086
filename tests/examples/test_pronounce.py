"""The G2P example: CMUdict data rules, the split by word written as TSV, a smoke run end to end
(trained by `keras_attention.pairs`), a killed and resumed run, and (marker `figures`) the
default run whose numbers BENCHMARKS.md records. The training recipe's own tests are in
`tests/training/`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from _example_loader import load_example

from keras_attention.pairs import PairModel, read_pairs

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
    first = example.write_splits(splits, lexicon, tmp_path / "a")
    second = example.write_splits(example.split_words(lexicon, seed=0), lexicon, tmp_path / "b")
    for name in ("train", "valid", "test"):
        text = Path(first[name]).read_text()
        assert text == Path(second[name]).read_text()
        pairs = read_pairs(first[name])  # what keras-attention reads: every pronunciation
        assert pairs.sources == splits[name]
        assert pairs.references == [lexicon[w] for w in splits[name]]


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_smoke_run_trains_scores_draws_and_exports(tmp_path):
    import tensorflow as tf

    results = example.main(["--smoke", "--no-litert", "--output-dir", str(tmp_path),
                            "--word", "knife", "Ghoti"])  # fmt: skip
    test = read_pairs(results["splits"]["test"])
    assert len(test) == 40 and len(read_pairs(results["splits"]["train"])) == 400
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert set(metrics["test"]) == {"wer", "per", "words"} and metrics["test"]["words"] == 40
    assert 0 <= metrics["test"]["wer"] <= 100 and metrics["test"]["per"] >= 0
    assert metrics["n_best"]["n"] == 4 and metrics["n_best"]["words"] == sum(
        len(refs) > 1 for refs in test.references
    )
    rows = (tmp_path / "test_predictions.tsv").read_text().splitlines()
    assert rows[0] == "word\tprediction\treferences" and len(rows) == 41
    word, _, references = rows[1].split("\t")
    assert references == " | ".join(" ".join(r) for r in example.load_lexicon()[word])
    assert [Path(p).name for p in results["heatmaps"]] == [f"{w}.png" for w in example.HARD_WORDS]
    for path in results["heatmaps"]:
        assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(results["answers"]) == ["knife", "ghoti"]
    # The model folder answers as the run did, and so does the SavedModel.
    model = PairModel(tmp_path / "model")
    said = [best[0][0] for best in model.predict(["knife", "ghoti"])]
    assert said == list(results["answers"].values())
    loaded = tf.saved_model.load(results["saved_model"])
    out = loaded.signatures["translate"](inputs=tf.constant(["knife", "ghoti"]))
    assert [s.decode() for s in out["outputs"].numpy()] == said
    training = metrics["training"]
    assert training["members"][0]["budget_clock"] == "wall" and training["epochs"] == 1
    assert training["train_pairs"] == sum(
        len(r) for r in read_pairs(results["splits"]["train"]).references
    )
    assert 0 < training["cpu_seconds"] <= metrics["cpu_seconds"]
    assert 0 < training["seconds"] <= metrics["wall_seconds"]
    assert metrics["config"]["units"] == 16 and metrics["litert"] == {}
    with pytest.raises(FileExistsError, match="--resume"):  # a second run does not overwrite
        example.main(["--smoke", "--no-litert", "--output-dir", str(tmp_path)])


@pytest.mark.slow
def test_smoke_run_exports_and_checks_litert(tmp_path):
    results = example.main(["--smoke", "--output-dir", str(tmp_path), "--set", "members=2"])
    litert = results["litert"]
    assert (tmp_path / "pronounce.tflite").stat().st_size == litert["bytes"]
    assert litert["runner_imported_keras_attention"] is False
    assert litert["agreement_with_keras"] == {"greedy": 1.0, "beam": 1.0}
    assert set(litert["latency_ms"]) == {"greedy", "beam"}
    assert len(results["training"]["members"]) == 2  # an ensemble in one .tflite file


def test_flags_reach_the_library_and_bad_ones_exit_with_a_message(capsys):
    args = example.parse(["--set", "units=128", "--set", "attention=luong", "--cpu-budget"])
    assert args.set == [("units", 128), ("attention", "luong")] and args.cpu_budget == 60.0
    with pytest.raises(SystemExit):
        example.parse(["--set", "unit=128"])
    assert "Received: 'unit=128'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        example.parse(["--resume"])  # no --output-dir: nothing to resume from
    assert "--output-dir" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        example.parse(["--word", "a.m."])
    assert "Received: ['a.m.']" in capsys.readouterr().err
    with pytest.raises(ValueError, match="Received: members=0"):  # the library's check
        example.main(["--smoke", "--members", "0"])


@pytest.mark.figures
def test_default_run_reaches_the_recorded_numbers(tmp_path):
    """The default run of BENCHMARKS.md §7 (about 30 minutes on 2 CPU cores): two models of
    two seeds, each with half of the 28.5 training minutes, searched as one ensemble (the
    settings `keras_attention.pairs` chooses for CMUdict's size).

    Recorded there (2026-12-06, a quiet 2-core Intel machine, 170% CPU, 27.3 minutes): test
    WER 23.50%, PER 5.55% on 12,410 words (15.8 and 15.0 epochs); the same recipe by CPU
    budget, two other seeds: 23.91% / 5.62%. The bounds are the issue's goal (24.5% / 5.9%),
    which a loaded machine training fewer epochs may miss."""
    results = example.main(["--output-dir", str(tmp_path)])
    assert results["training"]["wall_seconds"] < 30 * 60  # 28.5 training minutes, then scoring
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
    args = ["--smoke", "--no-litert", "--set", "epochs=3", "--set", "patience=5",
            "--set", "dropout=0.3", "--time-budget", "1000000", "--output-dir", str(output),
            *extra]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    manifest = output / "model" / "backup" / "manifest.json"
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
    (resumed_member,), (whole_member,) = (
        resumed["training"]["members"],
        whole["training"]["members"],
    )
    assert resumed_member["resumed_from_epoch"] in (1, 2)  # 2: killed while saving 2
    assert whole_member["resumed_from_epoch"] == 0
    keys = ("epoch", "epochs", "val_loss", "wer", "per")
    curve = lambda run: [{k: p[k] for k in keys} for p in run["curve"]]  # noqa: E731
    assert len(curve(whole_member)) == 3 and curve(resumed_member) == curve(whole_member)
    for key in ("best_score", "selection", "steps"):
        assert resumed_member[key] == whole_member[key]
    assert resumed["test"] == whole["test"]
    assert resumed["n_best"] == whole["n_best"]
