"""The `keras-attention` command: each subcommand on a tiny model folder trained once, and each
kind of bad input (a clear error naming file and line or argument, exit status 2, nothing
half-written in the model folder)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from keras_attention.cli import main
from keras_attention.pairs import PairModel, read_pairs

# Lower-case words -> their letters upper-cased, spaced: a mapping a tiny model partly learns.
WORDS = ["aba", "bad", "cab", "dab", "abc", "bcd", "cda", "dcb", "aab", "bba", "cca", "ddb"]
TINY = ["--units", "8", "--embedding-dim", "4", "--epochs", "2", "--members", "1", "--no-xla",
        "--batch-size", "4", "--beam-width", "2", "--quiet"]  # fmt: skip


def _pairs_text(words):
    return "".join(f"{w}\t{' '.join(w.upper())}\n" for w in words)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A model folder trained on 12 pairs (validated on 4) by `keras-attention train`."""
    root = tmp_path_factory.mktemp("cli")
    (root / "train.tsv").write_text(_pairs_text(WORDS), encoding="utf-8")
    (root / "dev.tsv").write_text(_pairs_text(WORDS[:3]) + "aba\tA B A A\n", encoding="utf-8")
    argv = ["train", "--train", str(root / "train.tsv"), "--valid", str(root / "dev.tsv"),
            "--output-dir", str(root / "model"), *TINY]  # fmt: skip
    assert main(argv) == 0
    return root


def test_train_writes_the_model_folder_with_its_settings(folder):
    model = folder / "model"
    assert {p.name for p in model.iterdir()} >= {"config.json", "model.keras", "training.json"}
    assert not [p.name for p in model.iterdir() if "partial" in p.name]
    config = json.loads((model / "config.json").read_text())
    assert config["source_vocabulary"] == ["a", "b", "c", "d"]
    assert config["target_vocabulary"] == ["A", "B", "C", "D"]
    assert config["settings"]["units"] == 8 and config["settings"]["members"] == 1
    assert config["settings"]["dropout"] == 0.3  # the rule's, for a few hundred pairs
    training = json.loads((model / "training.json").read_text())
    assert training["members"][0]["epochs"] == 2 and len(training["curve"]) == 2
    assert set(training["valid"]) == {"wer", "per", "words"} and training["valid"]["words"] == 3


def test_predict_writes_one_line_a_source_and_n_best_lines_with_scores(folder, tmp_path, capsys):
    sources = tmp_path / "sources.txt"
    sources.write_text("abc\ncafe\u0301\n\ndab\tignored\n", encoding="utf-8")
    assert main(["predict", "--model", str(folder / "model"), str(sources)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["abc", "caf\u00e9", "dab"]
    assert all(len(line.split("\t")) == 2 for line in lines)
    assert main(["predict", "--model", str(folder / "model"), "--n-best", "2",
                 "--output", str(tmp_path / "out.tsv"), str(sources)]) == 0  # fmt: skip
    rows = [r.split("\t") for r in (tmp_path / "out.tsv").read_text().splitlines()]
    assert [r[0] for r in rows] == ["abc", "abc", "caf\u00e9", "caf\u00e9", "dab", "dab"]
    for best, second in zip(rows[::2], rows[1::2]):
        assert float(best[2]) >= float(second[2])
    # The first of the 2-best list is the beam search's answer.
    model = PairModel(folder / "model")
    firsts = [r[1] for r in rows[::2]]
    assert firsts == [
        h[0][0] for h in model.predict(["abc", "cafe\u0301", "dab"], model.settings.search(2))
    ]


def _edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def test_evaluate_scores_against_any_reference_as_an_independent_count(folder, tmp_path, capsys):
    """WER and PER recomputed from the predictions written (plain Python edit distance)."""
    output, table = tmp_path / "eval.json", tmp_path / "predictions.tsv"
    argv = ["evaluate", "--model", str(folder / "model"), str(folder / "dev.tsv"),
            "--output", str(output), "--predictions", str(table)]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "WER" in printed and "dev.tsv" in printed
    result = json.loads(output.read_text())
    rows = [r.split("\t") for r in table.read_text().splitlines()[1:]]
    assert [r[0] for r in rows] == ["aba", "bad", "cab"]
    wrong = edits = length = 0
    for _, prediction, references in rows:
        refs = [r.split() for r in references.split(" | ")]
        distances = [_edit_distance(prediction.split(), r) for r in refs]
        closest = int(np.argmin(distances))
        wrong += min(distances) > 0
        edits, length = edits + distances[closest], length + len(refs[closest])
    assert result["words"] == 3 and result["beam_width"] == 2
    np.testing.assert_allclose(result["wer"], 100 * wrong / 3)
    np.testing.assert_allclose(result["per"], 100 * edits / length)
    assert len(read_pairs(folder / "dev.tsv").references[0]) == 2  # "aba" has two references


@pytest.mark.slow
def test_export_writes_a_saved_model_and_a_tflite_file_that_decode_as_predict(folder, tmp_path):
    import tensorflow as tf

    saved, tflite = tmp_path / "serving" / "1", tmp_path / "model.tflite"
    argv = ["export", "--model", str(folder / "model"), "--saved-model", str(saved),
            "--litert", str(tflite)]  # fmt: skip
    assert main(argv) == 0
    assert tflite.stat().st_size > 0
    loaded = tf.saved_model.load(str(saved))
    out = loaded.signatures["translate"](inputs=tf.constant(["abc", "dab"]))
    expected = [h[0][0] for h in PairModel(folder / "model").predict(["abc", "dab"])]
    assert [s.decode() for s in out["outputs"].numpy()] == expected
    assert main(argv) == 2  # exists: refused without --overwrite
    assert main([*argv, "--overwrite"]) == 0


def test_export_saved_model_translates_strings(folder, tmp_path):
    import tensorflow as tf

    saved = tmp_path / "serving"
    assert main(["export", "--model", str(folder / "model"), "--saved-model", str(saved)]) == 0
    out = tf.saved_model.load(str(saved)).signatures["translate"](inputs=tf.constant(["abc"]))
    expected = PairModel(folder / "model").predict(["abc"])[0][0]
    assert out["outputs"].numpy()[0].decode() == expected[0]
    np.testing.assert_allclose(out["scores"].numpy()[0], expected[1], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "content, message",
    [
        ("abc\tA B C\nabc A B C\n", r"train\.tsv:2: the line has no tab"),
        ("abc\tA B C\nabd\t\n", r"train\.tsv:2: the target is empty"),
        (b"abc\tA B C\n\xff\tX\n", r"train\.tsv:2: not UTF-8"),
    ],
)
def test_train_refuses_bad_lines_and_writes_nothing(tmp_path, capsys, content, message):
    train = tmp_path / "train.tsv"
    train.write_bytes(content if isinstance(content, bytes) else content.encode())
    (tmp_path / "dev.tsv").write_text("abc\tA B C\n", encoding="utf-8")
    argv = ["train", "--train", str(train), "--valid", str(tmp_path / "dev.tsv"),
            "--output-dir", str(tmp_path / "model"), *TINY]  # fmt: skip
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith("keras-attention train: error: ")
    assert __import__("re").search(message, error), error
    assert not (tmp_path / "model").exists()


def test_train_takes_location_sensitive_attention(folder, tmp_path):
    argv = ["train", "--train", str(folder / "train.tsv"), "--valid", str(folder / "dev.tsv"),
            "--output-dir", str(tmp_path / "model"), "--attention", "location_sensitive",
            *TINY]  # fmt: skip
    assert main(argv) == 0
    model = PairModel(tmp_path / "model")
    assert model.settings.attention == "location_sensitive"
    attention = model.model.decoder.rnn_layer.cell.attention
    assert type(attention).__name__ == "LocationSensitiveAttention"
    [[(prediction, _)]] = model.predict(["abc"])
    assert set(prediction.split()) <= {"A", "B", "C", "D"}


def test_train_refuses_a_folder_that_holds_a_model(folder, capsys):
    argv = ["train", "--train", str(folder / "train.tsv"), "--valid", str(folder / "dev.tsv"),
            "--output-dir", str(folder / "model"), *TINY]  # fmt: skip
    assert main(argv) == 2
    assert "already holds a model" in capsys.readouterr().err


def test_commands_refuse_a_folder_that_is_not_a_model_and_bad_options(tmp_path, folder, capsys):
    assert main(["predict", "--model", str(tmp_path), str(folder / "dev.tsv")]) == 2
    assert "`--model` must be a folder written by `keras-attention train`" in (
        capsys.readouterr().err
    )
    assert main(["predict", "--model", str(folder / "model"), "--n-best", "3",
                 str(folder / "dev.tsv")]) == 2  # fmt: skip
    assert "n_best=3, search=BeamSearch(beam_width=2," in capsys.readouterr().err
    assert main(["evaluate", "--model", str(folder / "model"), str(tmp_path / "no.tsv")]) == 2
    assert "`TEST.tsv` must be a readable file" in capsys.readouterr().err
    base = ["train", "--train", "a", "--valid", "b", "--output-dir", "c"]
    for argv in (
        ["export", "--model", str(folder / "model")],
        [*base, "--time-budget", "1", "--cpu-budget", "1"],
        [*base, "--units", "0"],
    ):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2


@pytest.mark.parametrize("option, names", [("--rnn", "RNNS"), ("--attention", "ATTENTIONS")])
def test_model_options_offer_what_settings_accept(option, names, capsys):
    """The command lists its choices without importing the package's model code; they must
    stay those `Settings` validates."""
    from keras_attention.pairs import settings

    with pytest.raises(SystemExit):
        main(["train", "--train", "a", "--valid", "b", "--output-dir", "c", option, "?"])
    error = capsys.readouterr().err
    offered = error.split("choose from ")[1].split(")")[0].replace("'", "").split(", ")
    assert offered == list(getattr(settings, names))


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_python_dash_m_runs_the_command():
    result = subprocess.run(
        [sys.executable, "-m", "keras_attention", "--help"], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "train" in result.stdout and "export" in result.stdout


def test_export_without_tensorflow_text_writes_the_ids_signature_and_says_so(
    folder, tmp_path, monkeypatch, capsys
):
    import importlib.util

    import tensorflow as tf

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "tensorflow_text" else
        find_spec(name, *a),
    )  # fmt: skip
    saved = tmp_path / "ids-only"
    assert main(["export", "--model", str(folder / "model"), "--saved-model", str(saved)]) == 0
    assert "no `translate` (strings) signature" in capsys.readouterr().out
    assert list(tf.saved_model.load(str(saved)).signatures) == ["serving_default"]
    with pytest.raises(ImportError, match=r"keras-recurrent-attention\[text\].*strings=True"):
        PairModel(folder / "model").export_saved_model(tmp_path / "x", strings=True)
