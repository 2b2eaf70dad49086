"""SavedModel export: a model trained for seconds translates the same through the Python
translator, the reloaded .keras model, a fresh process that imports only TensorFlow (+ tf-text),
and TF Serving's session-based loader (`saved_model_cli`)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.export import FORBIDDEN_OPS, export_saved_model, exported_ops
from keras_attention.models import Seq2Seq, Translator
from keras_attention.text import CharTokenizer, WordpieceTokenizer, pairs_dataset

LETTERS = "abcdefgh"
MAX_LENGTH = 10
SAVED_MODEL_CLI = Path(sys.executable).with_name("saved_model_cli")


def _words(seed, n):
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list(LETTERS), rng.integers(2, 7))) for _ in range(n)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Reverse a word, character level: 2,000 pairs, 8 epochs, about 20 s on 2 cores."""
    keras.utils.set_random_seed(0)
    train = _words(0, 2000)
    tokenizer = CharTokenizer()
    tokenizer.adapt(train)
    model = Seq2Seq(
        embedding_dim=16, units=64, source_tokenizer=tokenizer, target_tokenizer=tokenizer
    )
    model.compile(
        keras.optimizers.Adam(1e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=True,
    )
    data = pairs_dataset(train, [w[::-1] for w in train], tokenizer, tokenizer, batch_size=64)
    model.fit(data, epochs=8, shuffle=False, verbose=0)
    directory = tmp_path_factory.mktemp("export")
    translator = Translator(model, max_length=MAX_LENGTH)
    export_saved_model(model, directory / "greedy", max_length=MAX_LENGTH)
    export_saved_model(model, directory / "beam", max_length=MAX_LENGTH, beam_width=3)
    return model, translator, directory


TEST_WORDS = _words(1, 40)


def _run_isolated(code: str) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON line last."""
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_python_translator_learned_the_task(trained):
    _, translator, _ = trained
    outputs = translator.translate(TEST_WORDS)
    exact = np.mean([o == w[::-1] for o, w in zip(outputs, TEST_WORDS)])
    assert exact >= 0.9, list(zip(TEST_WORDS, outputs))


def test_reloaded_keras_model_translates_the_same(trained, tmp_path):
    model, translator, _ = trained
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras", safe_mode=True)
    assert isinstance(loaded.source_tokenizer, CharTokenizer)
    reloaded = Translator(loaded, max_length=MAX_LENGTH)
    assert reloaded.translate(TEST_WORDS) == translator.translate(TEST_WORDS)
    np.testing.assert_array_equal(
        reloaded(np.array([[4, 5, 6, 3]]))["ids"], translator(np.array([[4, 5, 6, 3]]))["ids"]
    )


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_saved_model_in_a_process_without_keras_attention(trained):
    model, translator, directory = trained
    source_ids = model.source_tokenizer.tokenize(TEST_WORDS, add_end=True).numpy()
    beam = Translator(model, max_length=MAX_LENGTH, beam_width=3)
    result = _run_isolated(
        f"""
        import json, sys
        import numpy as np
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (what a wordpiece export needs; harmless here)
        out = {{}}
        for name in ("greedy", "beam"):
            loaded = tf.saved_model.load({str(directory)!r} + "/" + name)
            strings = loaded.signatures["translate"](inputs=tf.constant({TEST_WORDS!r}))
            ids = loaded.signatures["serving_default"](
                source_ids=tf.constant(np.array({source_ids.tolist()!r}, "int32")))
            out[name] = {{
                "strings": [s.decode() for s in strings["outputs"].numpy()],
                "ids": ids["ids"].numpy().tolist(),
                "alignments_shape": list(ids["alignments"].shape),
            }}
        out["modules"] = sorted(m for m in sys.modules if m.startswith("keras_attention"))
        print(json.dumps(out))
        """
    )
    assert result["modules"] == []
    assert result["greedy"]["strings"] == translator.translate(TEST_WORDS)
    assert result["greedy"]["ids"] == translator(source_ids)["ids"].tolist()
    assert result["greedy"]["alignments_shape"] == [
        len(TEST_WORDS),
        MAX_LENGTH,
        source_ids.shape[1],
    ]
    assert result["beam"]["strings"] == beam.translate(TEST_WORDS)
    assert result["beam"]["ids"] == beam(source_ids)["ids"].tolist()


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_saved_model_cli_shows_and_runs_serving_default(trained, tmp_path):
    model, translator, directory = trained
    path = str(directory / "greedy")
    show = subprocess.run(
        [str(SAVED_MODEL_CLI), "show", "--dir", path, "--all"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert show.returncode == 0, show.stderr[-3000:]
    text = show.stdout
    for expected in (
        "signature_def['serving_default']",
        "signature_def['translate']",
        "inputs['source_ids']",
        "inputs['inputs']",
        "outputs['ids']",
        "outputs['scores']",
        "outputs['alignments']",
        "outputs['outputs']",
        "tensorflow/serving/predict",
    ):
        assert expected in text, expected
    source_ids = model.source_tokenizer.tokenize(TEST_WORDS[:5], add_end=True).numpy()
    run = subprocess.run(
        [
            str(SAVED_MODEL_CLI), "run", "--dir", path, "--tag_set", "serve",
            "--signature_def", "serving_default",
            "--input_exprs", f"source_ids={source_ids.tolist()}",
            "--outdir", str(tmp_path),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    ids = np.load(tmp_path / "ids.npy")
    np.testing.assert_array_equal(ids, translator(source_ids)["ids"])
    scores = np.load(tmp_path / "scores.npy")
    np.testing.assert_allclose(scores, translator(source_ids)["scores"], rtol=1e-4, atol=1e-4)


def test_no_forbidden_ops_in_the_exported_graph(trained):
    _, _, directory = trained
    for name in ("greedy", "beam"):
        ops = exported_ops(directory / name)
        assert "While" in ops or "StatelessWhile" in ops  # the search loop is in the graph
        assert not FORBIDDEN_OPS & ops
        assert "XlaDynamicUpdateSlice" not in ops and "PyFunc" not in ops


def test_translate_signature_handles_odd_strings(trained):
    """Empty strings, unseen characters (→ the unknown token), an empty batch: no crash."""
    _, translator, directory = trained
    loaded = tf.saved_model.load(str(directory / "greedy"))
    odd = ["", "xyz", "ab€🙂", "  abc  ", "ABC"]
    out = loaded.signatures["translate"](inputs=tf.constant(odd))
    strings = [s.decode() for s in out["outputs"].numpy()]
    assert strings == translator.translate(odd)
    assert np.all(np.isfinite(out["scores"].numpy()))
    assert strings[3] == "cba"  # whitespace is normalised away
    empty = loaded.signatures["translate"](inputs=tf.constant([], tf.string))
    assert empty["outputs"].shape == (0,)


def test_existing_path_needs_overwrite(trained, tmp_path):
    model, _, _ = trained
    target = tmp_path / "export"
    target.mkdir()
    with pytest.raises(FileExistsError, match="overwrite=True"):
        export_saved_model(model, target)
    export_saved_model(model, target, overwrite=True, max_length=4)
    assert (target / "saved_model.pb").exists()


def test_unbuilt_model_and_bad_settings_are_refused(tmp_path):
    with pytest.raises(ValueError, match="train it"):
        export_saved_model(Seq2Seq(10, 10, units=8), tmp_path / "a")
    with pytest.raises(ValueError, match="max_length"):
        export_saved_model(Seq2Seq(10, 10, units=8), tmp_path / "b", max_length=0)


def test_ids_only_export_without_tokenizers(tmp_path):
    model = Seq2Seq(12, 9, units=8, embedding_dim=4)
    source = np.array([[5, 6, 3], [4, 3, 0]], "int32")
    model({"source_ids": source, "target_ids": source})
    export_saved_model(model, tmp_path / "ids", max_length=4)
    loaded = tf.saved_model.load(str(tmp_path / "ids"))
    assert sorted(loaded.signatures) == ["serving_default"]
    ids = loaded.signatures["serving_default"](source_ids=tf.constant(source))["ids"]
    expected = Translator(model, max_length=4, jit_compile=False)(source)["ids"]
    np.testing.assert_array_equal(ids.numpy(), expected)


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_wordpiece_export_loads_with_tensorflow_text(tmp_path):
    sentences = ["the cat sat", "a dog ran", "the dog sat on the mat", "cats and dogs"]
    tokenizer = WordpieceTokenizer(max_vocabulary=60)
    tokenizer.adapt(sentences)
    model = Seq2Seq(
        units=8, embedding_dim=4, source_tokenizer=tokenizer, target_tokenizer=tokenizer
    )
    ids = tokenizer.tokenize(sentences, add_end=True)
    model({"source_ids": ids, "target_ids": ids})
    export_saved_model(model, tmp_path / "wp", max_length=5)
    assert "FastWordpieceTokenizeWithOffsets" in exported_ops(tmp_path / "wp")
    expected = Translator(model, max_length=5).translate(sentences)
    result = _run_isolated(
        f"""
        import json
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the wordpiece ops)
        loaded = tf.saved_model.load({str(tmp_path / "wp")!r})
        out = loaded.signatures["translate"](inputs=tf.constant({sentences!r}))["outputs"]
        print(json.dumps([s.decode() for s in out.numpy()]))
        """
    )
    assert result == expected


# ---------------------------------------------------------------- n-best and sampling exports
@pytest.fixture(scope="module")
def nbest_export(trained):
    """Beam 3 with coverage, the n-best list in serving_default, and the sample signatures."""
    model, _, directory = trained
    path = directory / "nbest"
    export_saved_model(
        model, path, max_length=MAX_LENGTH, beam_width=3, coverage_penalty=0.2,
        return_beams=True, sample=True, top_k=4, temperature=0.8,
    )  # fmt: skip
    return tf.saved_model.load(str(path)), path


def test_translate_n_best(trained):
    model, _, _ = trained
    beam = Translator(model, max_length=MAX_LENGTH, beam_width=3)
    words = TEST_WORDS[:12]
    n_best = beam.translate(words, n_best=3)
    assert [len(options) for options in n_best] == [3] * len(words)
    assert [options[0] for options in n_best] == beam.translate(words)
    result = beam(model.source_tokenizer.tokenize(words, add_end=True).numpy())
    assert np.all(np.diff(result["beam_normalized_scores"], axis=1) <= 1e-6)
    assert model.translate(words[:2], max_length=MAX_LENGTH, beam_width=3, n_best=2) == [
        options[:2] for options in n_best[:2]
    ]


def test_exported_n_best_and_sampling_match_the_translator(trained, nbest_export):
    model, _, _ = trained
    loaded, path = nbest_export
    assert set(loaded.signatures) == {"serving_default", "translate", "sample", "sample_translate"}
    assert not FORBIDDEN_OPS & exported_ops(path)
    words = TEST_WORDS[:12]
    source_ids = model.source_tokenizer.tokenize(words, add_end=True).numpy().astype("int32")
    beam = Translator(model, max_length=MAX_LENGTH, beam_width=3, coverage_penalty=0.2)
    expected = beam(source_ids)
    served = loaded.signatures["serving_default"](source_ids=tf.constant(source_ids))
    for key in ("ids", "beam_ids", "beam_lengths"):
        np.testing.assert_array_equal(served[key].numpy(), expected[key], err_msg=key)
    for key in ("scores", "beam_scores", "beam_normalized_scores"):
        np.testing.assert_allclose(served[key].numpy(), expected[key], 1e-5, 1e-5, err_msg=key)
    strings = loaded.signatures["translate"](inputs=tf.constant(words))
    beam_outputs = [[s.decode() for s in row] for row in strings["beam_outputs"].numpy()]
    assert beam_outputs == beam.translate(words, n_best=3)

    sampler = Translator(
        model, max_length=MAX_LENGTH, sample=True, top_k=4, temperature=0.8, jit_compile=False
    )
    seed = tf.constant(17, tf.int32)
    drawn = loaded.signatures["sample"](source_ids=tf.constant(source_ids), seed=seed)
    np.testing.assert_array_equal(drawn["ids"].numpy(), sampler(source_ids, seed=17)["ids"])
    again = loaded.signatures["sample_translate"](inputs=tf.constant(words), seed=seed)
    assert again["outputs"].shape == (len(words),)
    # (The trained model is nearly deterministic at T = 0.8: other seeds may draw the same ids;
    # that seeds change the draws is tested in tests/decoding/test_sampling.py.)


def test_bad_export_options(trained, tmp_path):
    model, _, _ = trained
    with pytest.raises(ValueError, match="beam_width=1"):
        export_saved_model(model, tmp_path / "x", return_beams=True)
    with pytest.raises(ValueError, match="top_p=2"):
        export_saved_model(model, tmp_path / "y", sample=True, top_p=2)
    with pytest.raises(ValueError, match="top_k=5 with sample=False"):
        export_saved_model(model, tmp_path / "z", top_k=5)
