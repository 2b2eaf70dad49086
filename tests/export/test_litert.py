"""LiteRT export: a model trained for seconds gives, in `ai_edge_litert`'s interpreter in a
process that never imports keras_attention (nor TensorFlow), the ids, scores and lengths of the
Python model's greedy and beam searches; unconvertible graphs fail naming their ops."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from keras_attention.decoding import BeamSearch, GreedySearch, SampleSearch
from keras_attention.export import LiteRTConversionError, export_litert
from keras_attention.models import Seq2Seq, Translator

pytestmark = [pytest.mark.tensorflow_only, pytest.mark.slow]

SOURCE_LENGTH, MAX_LENGTH, BEAM = 8, 9, 3

RUNNER = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=sys.argv[1])
    source = np.load(sys.argv[2])
    out = {}
    for name in interpreter.get_signature_list():
        run = interpreter.get_signature_runner(name)
        rows = [run(source_ids=source[i : i + 2]) for i in range(0, len(source), 2)]
        for key in rows[0]:
            out[f"{name}/{key}"] = np.concatenate([r[key] for r in rows])
    np.savez(sys.argv[3], **out)
    print(json.dumps({
        "signatures": sorted(interpreter.get_signature_list()),
        "keras_attention": any(m.startswith("keras_attention") for m in sys.modules),
        "tensorflow": "tensorflow" in sys.modules,
    }))
    """
)


def _sources(rng, n):
    """Rows of 1-6 ids in [4, 10) then the end token 3, right-padded to SOURCE_LENGTH."""
    ids = np.zeros((n, SOURCE_LENGTH), "int32")
    for row in ids:
        length = rng.integers(1, 7)
        row[:length] = rng.integers(4, 10, length)
        row[length] = 3
    return ids


@pytest.fixture(scope="module")
def trained():
    """Learns to reverse its input for a few seconds (outputs that are not all alike)."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    model = Seq2Seq(10, 10, embedding_dim=8, units=16, rnn="gru")
    source = _sources(rng, 512)
    target_in, labels = np.zeros((512, 8), "int32"), np.zeros((512, 8), "int32")
    for i, row in enumerate(source):
        tokens = list(row[: int(np.argmax(row == 3))][::-1])
        target_in[i, : len(tokens) + 1] = [2, *tokens]
        labels[i, : len(tokens) + 1] = [*tokens, 3]
    model.compile(
        keras.optimizers.Adam(1e-2),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit(
        {"source_ids": source, "target_ids": target_in}, labels, batch_size=32, epochs=4, verbose=0
    )
    return model


def _run_litert(path, source, tmp_path) -> tuple:
    """`(report, outputs)` of the `.tflite` file on `source`, in a process of its own."""
    np.save(tmp_path / "source.npy", source)
    run = subprocess.run(
        [sys.executable, "-c", RUNNER, str(path), str(tmp_path / "source.npy"),
         str(tmp_path / "out.npz")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1]), dict(np.load(tmp_path / "out.npz"))


def test_litert_matches_the_python_model(trained, tmp_path):
    path = tmp_path / "model.tflite"
    search = BeamSearch(BEAM, max_length=MAX_LENGTH)
    info = export_litert(trained, path, search, source_length=SOURCE_LENGTH, batch_size=2)
    assert info["signatures"] == ["greedy", "beam"] and info["bytes"] == path.stat().st_size
    source = _sources(np.random.default_rng(1), 16)
    report, out = _run_litert(path, source, tmp_path)
    assert report == {
        "signatures": ["beam", "greedy"],
        "keras_attention": False,
        "tensorflow": False,
    }
    for name, width in (("greedy", 1), ("beam", BEAM)):
        search = BeamSearch(width, max_length=MAX_LENGTH) if width > 1 else GreedySearch(MAX_LENGTH)
        expected = Translator(trained, search, jit_compile=False)(source)
        np.testing.assert_array_equal(out[f"{name}/ids"], expected["ids"])
        np.testing.assert_array_equal(out[f"{name}/lengths"], expected["lengths"])
        np.testing.assert_allclose(out[f"{name}/scores"], expected["scores"], rtol=1e-4, atol=1e-4)
    assert len({tuple(r) for r in out["beam/ids"]}) > 4  # a real model, not one repeated output


def test_litert_takes_a_translators_whole_search(trained, tmp_path):
    """Issue 34: `export_litert` read 3 fields of a Translator and had no coverage penalty.
    Now the Translator's search reaches the `.tflite` file whole: coverage penalty and n-best
    list included, the same numbers as the Translator."""
    search = BeamSearch(BEAM, max_length=MAX_LENGTH, coverage_penalty=0.4, return_beams=True)
    translator = Translator(trained, search=search, jit_compile=False)
    path = tmp_path / "coverage.tflite"
    info = export_litert(translator, path, source_length=SOURCE_LENGTH, batch_size=2, greedy=False)
    assert info["signatures"] == ["beam"]
    source = _sources(np.random.default_rng(2), 16)
    expected = translator(source)
    plain = Translator(trained, search=search.replace(coverage_penalty=0.0), jit_compile=False)
    # The premise: the penalty changes the ranking of these inputs.
    assert not np.allclose(
        plain(source)["beam_normalized_scores"], expected["beam_normalized_scores"]
    )
    _, out = _run_litert(path, source, tmp_path)
    for key in ("ids", "lengths", "beam_ids", "beam_lengths"):
        np.testing.assert_array_equal(out[f"beam/{key}"], expected[key], err_msg=key)
    for key in ("scores", "beam_scores", "beam_normalized_scores"):
        np.testing.assert_allclose(out[f"beam/{key}"], expected[key], 1e-4, 1e-4, err_msg=key)


def test_litert_refuses_what_it_cannot_honour_by_name(trained, tmp_path):
    sampler = Translator(trained, SampleSearch(max_length=4, top_k=3), jit_compile=False)
    with pytest.raises(ValueError, match=r"sampling is not exported to LiteRT.*SampleSearch\("):
        export_litert(sampler, tmp_path / "s.tflite")
    beam = Translator(trained, BeamSearch(2, max_length=4), jit_compile=False)
    with pytest.raises(ValueError, match="`beam_width` is a search option.*beam_width=3"):
        export_litert(beam, tmp_path / "b.tflite", beam_width=3)
    with pytest.raises(ValueError, match="coverage_penalty=-1"):  # 0.2's keywords: still checked
        export_litert(trained, tmp_path / "c.tflite", coverage_penalty=-1)
    assert not list(tmp_path.iterdir())


def test_unconvertible_graph_names_its_ops(tmp_path):
    from keras_attention.text import CharTokenizer

    tokenizer = CharTokenizer(vocabulary=list("abcdef"))
    model = Seq2Seq(source_tokenizer=tokenizer, target_tokenizer=tokenizer, units=8)
    model.generate(np.array([[4, 5, 3]]), GreedySearch(3))
    with pytest.raises(LiteRTConversionError, match="could not lower .*UnicodeDecode") as info:
        export_litert(model, tmp_path / "s.tflite", BeamSearch(4, max_length=5), source_length=8,
                      strings=True)  # fmt: skip
    assert "UnicodeDecodeWithOffsets" in info.value.ops
    assert not (tmp_path / "s.tflite").exists()


def test_bad_arguments(trained, tmp_path):
    with pytest.raises(ValueError, match="source_length"):
        export_litert(trained, tmp_path / "a.tflite", source_length=0)
    with pytest.raises(ValueError, match="Nothing to export"):
        export_litert(trained, tmp_path / "a.tflite", GreedySearch(), greedy=False)
    with pytest.raises(ValueError, match="strings=True needs"):
        export_litert(trained, tmp_path / "a.tflite", strings=True)
    with pytest.raises(ValueError, match="no weights yet"):
        export_litert(Seq2Seq(10, 10, units=4), tmp_path / "a.tflite")
    with pytest.raises(TypeError, match="Seq2Seq, Seq2SeqEnsemble or Translator"):
        export_litert("model", tmp_path / "a.tflite")
    (tmp_path / "b.tflite").write_bytes(b"")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        export_litert(trained, tmp_path / "b.tflite")
