"""Issue 34: a `Translator` exported as a SavedModel decodes exactly as the Translator did, for
every search kind, also when the export is given tokenizers (before, that path rebuilt the
Translator from 5 of its options and dropped sampling); `search=` reaches the export whole.

One small untrained model serves every test: these compare the export with the Translator it
came from in the same process, and an untrained model's near-uniform logits make every search
option change the outputs (asserted where a test relies on it)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_attention.decoding import BeamSearch, GreedySearch, SampleSearch
from keras_attention.export import export_saved_model
from keras_attention.models import Seq2Seq, Translator
from keras_attention.text import CharTokenizer

pytestmark = pytest.mark.tensorflow_only

WORDS = ["abcdefg", "gfedcba", "aabbccdd", "face", "bad", "cabbage"]
MAX_LENGTH = 5  # shorter than the sources: coverage stays below 1, so its penalty counts


@pytest.fixture(scope="module")
def setup():
    keras.utils.set_random_seed(0)
    tokenizer = CharTokenizer(vocabulary=list("abcdefg"))
    model = Seq2Seq(tokenizer.vocabulary_size, tokenizer.vocabulary_size, embedding_dim=8, units=8)
    source_ids = tokenizer.tokenize(WORDS, add_end=True).numpy().astype("int32")
    model({"source_ids": source_ids, "target_ids": source_ids})
    return model, tokenizer, source_ids


def _translator(setup, **options):
    model, tokenizer, _ = setup
    return Translator(
        model, jit_compile=False, source_tokenizer=tokenizer, target_tokenizer=tokenizer, **options
    )


def _export(setup, translator, path):
    """The export path of the bug: a Translator, with tokenizers given to the export."""
    _, tokenizer, _ = setup
    export_saved_model(translator, path, source_tokenizer=tokenizer, target_tokenizer=tokenizer)
    return tf.saved_model.load(str(path)).signatures


def _strings(tokenizer, ids) -> list:
    return [s.decode() for s in tokenizer.detokenize(ids).numpy()]


SEARCHES = {
    "greedy": GreedySearch(max_length=MAX_LENGTH),
    "beam": BeamSearch(3, max_length=MAX_LENGTH, length_penalty=1.0),
    "beam_coverage": BeamSearch(3, max_length=MAX_LENGTH, coverage_penalty=0.5, return_beams=True),
}


@pytest.mark.slow  # ~10 s each (tracing, a Translator's own graph); greedy serving_default is
# also checked, cheaper, by the sampling test below
@pytest.mark.parametrize("kind", ["greedy", "beam"])
def test_exported_translator_decodes_as_before(setup, tmp_path, kind):
    _, tokenizer, source_ids = setup
    translator = _translator(setup, search=SEARCHES[kind])
    signatures = _export(setup, translator, tmp_path / kind)
    assert sorted(signatures) == ["serving_default", "translate"]
    expected = translator(source_ids)
    served = signatures["serving_default"](source_ids=tf.constant(source_ids))
    np.testing.assert_array_equal(served["ids"].numpy(), expected["ids"])
    np.testing.assert_allclose(served["scores"].numpy(), expected["scores"], 1e-5, 1e-5)
    strings = signatures["translate"](inputs=tf.constant(WORDS))["outputs"].numpy()
    assert [s.decode() for s in strings] == translator.translate(WORDS)


@pytest.mark.slow  # beam search with coverage: the largest graph to trace (~10 s)
def test_exported_coverage_penalty_and_n_best_as_before(setup, tmp_path):
    _, tokenizer, source_ids = setup
    translator = _translator(setup, search=SEARCHES["beam_coverage"])
    signatures = _export(setup, translator, tmp_path / "coverage")
    expected = translator(source_ids)
    # The premise: the coverage penalty changes the ranking scores of these inputs.
    plain = _translator(setup, search=SEARCHES["beam_coverage"].replace(coverage_penalty=0.0))
    assert not np.allclose(
        plain(source_ids)["beam_normalized_scores"], expected["beam_normalized_scores"]
    )
    served = signatures["serving_default"](source_ids=tf.constant(source_ids))
    for key in ("ids", "beam_ids", "beam_lengths"):
        np.testing.assert_array_equal(served[key].numpy(), expected[key], err_msg=key)
    for key in ("scores", "beam_scores", "beam_normalized_scores"):
        np.testing.assert_allclose(served[key].numpy(), expected[key], 1e-5, 1e-5, err_msg=key)
    beams = signatures["translate"](inputs=tf.constant(WORDS))["beam_outputs"].numpy()
    assert [[s.decode() for s in row] for row in beams] == translator.translate(WORDS, n_best=3)


def test_exported_sampling_translator_draws_as_before(setup, tmp_path):
    """Before: `sample`, `temperature`, `top_k` and `top_p` were dropped (the export was
    greedy). Now the `sample` signatures draw what the Translator draws for the same seed."""
    _, tokenizer, source_ids = setup
    search = SampleSearch(max_length=MAX_LENGTH, temperature=1.5, top_k=6, top_p=0.9, seed=5)
    translator = _translator(setup, search=search)
    signatures = _export(setup, translator, tmp_path / "sample")
    assert sorted(signatures) == ["sample", "sample_translate", "serving_default", "translate"]
    greedy = _translator(setup, search=GreedySearch(MAX_LENGTH))(source_ids)["ids"]
    for seed in (0, 17):
        expected = translator(source_ids, seed=seed)
        assert not np.array_equal(expected["ids"], greedy)  # the premise: it samples
        drawn = signatures["sample"](source_ids=tf.constant(source_ids), seed=tf.constant(seed))
        np.testing.assert_array_equal(drawn["ids"].numpy(), expected["ids"])
        np.testing.assert_allclose(drawn["scores"].numpy(), expected["scores"], 1e-5, 1e-5)
        strings = signatures["sample_translate"](inputs=tf.constant(WORDS), seed=tf.constant(seed))
        assert [s.decode() for s in strings["outputs"].numpy()] == _strings(
            tokenizer, expected["ids"]
        )
    # serving_default stays the deterministic search: greedy, of the same max_length.
    served = signatures["serving_default"](source_ids=tf.constant(source_ids))
    np.testing.assert_array_equal(served["ids"].numpy(), greedy)


def test_search_reaches_the_export_and_conflicts_are_named(setup, tmp_path):
    model, tokenizer, source_ids = setup
    search = GreedySearch(max_length=4)
    export_saved_model(model, tmp_path / "config", search)
    with pytest.warns(DeprecationWarning, match=r"search=GreedySearch\(max_length=4\)"):
        export_saved_model(model, tmp_path / "keywords", max_length=4)  # 0.2's keywords
    by_config = tf.saved_model.load(str(tmp_path / "config")).signatures["serving_default"]
    by_keywords = tf.saved_model.load(str(tmp_path / "keywords")).signatures["serving_default"]
    ids = tf.constant(source_ids)
    np.testing.assert_array_equal(
        by_config(source_ids=ids)["ids"], by_keywords(source_ids=ids)["ids"]
    )
    assert by_config(source_ids=ids)["ids"].shape == (len(WORDS), 4)
    translator = _translator(setup, search=search)
    # Before: keywords beside a Translator were ignored without a word.
    with pytest.raises(ValueError, match=r"`beam_width` is a search option.*beam_width=3"):
        export_saved_model(translator, tmp_path / "x", beam_width=3)
    with pytest.raises(ValueError, match=r"`max_length` is a search option.*max_length=9"):
        export_saved_model(model, tmp_path / "y", max_length=9, search=search)
    with pytest.raises(ValueError, match="one search of each kind"):
        export_saved_model(model, tmp_path / "z", [search, search.replace(max_length=6)])
    with pytest.raises(ValueError, match="given beside a list.*max_length=9"):
        export_saved_model(model, tmp_path / "w", [search], max_length=9)
    with pytest.raises(TypeError, match="unexpected keyword argument 'beams'"):
        export_saved_model(model, tmp_path / "v", beams=2)


@pytest.mark.slow  # a beam and a sampling search in one export
def test_a_list_of_searches_gives_beam_serving_and_sample_signatures(setup, tmp_path):
    """What `export_saved_model(beam_width=3, sample=True, ...)` did with keywords, said with
    two searches: the same signatures, the same outputs."""
    model, _, source_ids = setup
    beam = BeamSearch(3, max_length=MAX_LENGTH)
    sampler = SampleSearch(max_length=MAX_LENGTH, top_k=4)
    export_saved_model(model, tmp_path / "list", [sampler, beam])
    export_saved_model(
        model, tmp_path / "kw", max_length=MAX_LENGTH, beam_width=3, sample=True, top_k=4
    )
    ids = tf.constant(source_ids)
    seed = tf.constant(3)
    for path in ("list", "kw"):
        signatures = tf.saved_model.load(str(tmp_path / path)).signatures
        assert sorted(signatures) == ["sample", "serving_default"]
        np.testing.assert_array_equal(
            signatures["serving_default"](source_ids=ids)["ids"],
            Translator(model, search=beam, jit_compile=False)(source_ids)["ids"],
        )
        np.testing.assert_array_equal(
            signatures["sample"](source_ids=ids, seed=seed)["ids"],
            Translator(model, search=sampler, jit_compile=False)(source_ids, seed=3)["ids"],
        )
