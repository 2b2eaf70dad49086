"""`keras_attention.pairs.check_litert`: the `.tflite` export of a model folder, run where only
LiteRT is imported, decodes as the Keras model."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.tensorflow_only  # training reads tf.data; the export is TensorFlow's


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from keras_attention.pairs import PairModel, train

    work = tmp_path_factory.mktemp("litert_check")
    words = ["knife", "box", "tough", "though", "through", "night", "knight", "kit"] * 4
    pairs = "".join(f"{w}\t{' '.join(w.upper())}\n" for w in words)
    (work / "train.tsv").write_text(pairs, encoding="utf-8")
    train(work / "train.tsv", work / "train.tsv", work / "model", verbose=0, units=8,
          embedding_dim=4, epochs=1, members=1, beam_width=2, jit_compile=False)  # fmt: skip
    return PairModel(work / "model")


def test_the_tflite_file_decodes_as_keras(model, tmp_path):
    pytest.importorskip("ai_edge_litert")
    from keras_attention.pairs import check_litert

    path = tmp_path / "model.tflite"
    info = model.export_litert(path)
    too_long = "k" * 40  # longer than the file's input: left out
    report = check_litert(model, path, ["knife", "box", "kitten", too_long], timed=2)
    assert report["bytes"] == info["bytes"] == path.stat().st_size
    assert report["sources"] == 3
    assert report["agreement_with_keras"] == {"greedy": 1.0, "beam": 1.0}
    assert set(report["latency_ms"]) == {"greedy", "beam"}
    assert report["runner_imported_keras_attention"] is False


def test_without_ai_edge_litert_it_says_how_to_install_it(model, tmp_path, monkeypatch):
    from keras_attention.pairs import check_litert

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec",
        lambda name, *a: None if name == "ai_edge_litert" else find_spec(name, *a),
    )  # fmt: skip
    with pytest.raises(ModuleNotFoundError, match=r"keras-recurrent-attention\[litert\]"):
        check_litert(model, tmp_path / "missing.tflite", ["knife"])
