"""`SearchConfig` (issue 34, item 1): one validated, serialisable search value, taken whole by
`Seq2Seq.generate` and `Translator` (the exports: tests/export/test_search_export.py)."""

from __future__ import annotations

import copy
import pickle

import keras
import numpy as np
import pytest

from keras_attention.decoding import SearchConfig
from keras_attention.models import Seq2Seq, Translator
from tests.backend_utils import to_numpy

SOURCE = np.array([[5, 6, 7, 3], [4, 8, 3, 0]], "int32")


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    model = Seq2Seq(12, 9, embedding_dim=6, units=8)
    model({"source_ids": SOURCE, "target_ids": np.array([[2, 4], [2, 5]], "int32")})
    return model


# ---------------------------------------------------------------- the value
def test_defaults_are_those_of_generate_and_translator():
    config = SearchConfig()
    assert config.get_config() == {
        "max_length": 50,
        "beam_width": 1,
        "length_penalty": 0.6,
        "coverage_penalty": 0.0,
        "return_beams": False,
        "sample": False,
        "temperature": 1.0,
        "top_k": None,
        "top_p": None,
        "seed": None,
    }
    assert config.kind == "greedy"
    assert repr(config) == "SearchConfig(max_length=50)"


@pytest.mark.parametrize(
    "config, kind, text",
    [
        (SearchConfig(max_length=9), "greedy", "SearchConfig(max_length=9)"),
        (
            SearchConfig(beam_width=4, coverage_penalty=0.2, return_beams=True),
            "beam",
            "SearchConfig(max_length=50, beam_width=4, coverage_penalty=0.2, return_beams=True)",
        ),
        (
            SearchConfig(sample=True, top_k=5, top_p=0.9, seed=3),
            "sample",
            "SearchConfig(max_length=50, sample=True, top_k=5, top_p=0.9, seed=3)",
        ),
    ],
)
def test_kind_repr_and_round_trips(config, kind, text):
    assert config.kind == kind
    assert repr(config) == text
    assert eval(text, {"SearchConfig": SearchConfig}) == config  # the repr reads back
    assert SearchConfig.from_config(config.get_config()) == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(config))
    assert isinstance(restored, SearchConfig) and restored == config
    assert pickle.loads(pickle.dumps(config)) == config
    assert copy.deepcopy(config) == config
    assert hash(copy.deepcopy(config)) == hash(config)
    assert config != config.replace(max_length=config.max_length + 1)


def test_values_are_normalised_python_values():
    config = SearchConfig(max_length=np.int64(7), sample=np.bool_(True), top_k=np.int32(3))
    assert config.get_config()["max_length"] == 7 and type(config.max_length) is int
    assert type(config.sample) is bool and type(config.top_k) is int
    assert type(SearchConfig(length_penalty=1).length_penalty) is float


def test_immutable_and_replace_checks_its_names():
    config = SearchConfig(beam_width=3)
    with pytest.raises(AttributeError, match="immutable.*replace"):
        config.beam_width = 5
    assert config.replace(beam_width=5).beam_width == 5 and config.beam_width == 3
    with pytest.raises(TypeError, match="no option 'beams'.*Received: beams=2"):
        config.replace(beams=2)
    with pytest.raises(TypeError):
        SearchConfig(20)  # keyword-only: a bare number would be ambiguous


def test_loading_an_unknown_option_fails():
    with pytest.raises(TypeError):
        SearchConfig.from_config({"max_length": 5, "beams": 2})


# ---------------------------------------------------------------- validation: one place
BAD = [
    ({"max_length": 0}, "max_length=0"),
    ({"max_length": None}, "max_length=None"),
    ({"beam_width": "2"}, "beam_width='2'"),
    ({"length_penalty": float("nan")}, "length_penalty=nan"),
    ({"beam_width": 2, "coverage_penalty": -1.0}, "coverage_penalty=-1.0"),
    ({"sample": "yes"}, "sample='yes'"),
    ({"sample": True, "temperature": 0}, "temperature=0"),
    ({"sample": True, "top_k": 0}, "top_k=0"),
    ({"sample": True, "top_p": 1.5}, "top_p=1.5"),
    ({"top_k": 5}, "top_k=5 with sample=False"),
    ({"temperature": 0.8}, "pass sample=True.*temperature=0.8"),
    ({"sample": True, "seed": -1}, "seed=-1"),
    # Combinations no search can honour, refused by name.
    ({"sample": True, "beam_width": 2}, "sample=True.*beam_width=1. Received: beam_width=2"),
    ({"coverage_penalty": 0.3}, "coverage_penalty=0.3 with beam_width=1"),
]


@pytest.mark.parametrize("kwargs, match", BAD, ids=[m for _, m in BAD])
def test_bad_options_are_refused_with_the_translators_messages(model, kwargs, match):
    """The same check, and so the same message, for the value, `Translator` and `generate`."""
    with pytest.raises(ValueError, match=match) as config_error:
        SearchConfig(**kwargs)
    with pytest.raises(ValueError) as translator_error:
        Translator(model, jit_compile=False, **kwargs)
    assert str(translator_error.value) == str(config_error.value)
    if "seed" not in kwargs:  # (generate's seed is its call's: checked when it samples)
        with pytest.raises(ValueError) as generate_error:
            model.generate(SOURCE, **kwargs)
        assert str(generate_error.value) == str(config_error.value)


def test_return_beams_needs_beams():
    with pytest.raises(ValueError, match="return_beams=True.*Received: beam_width=1"):
        SearchConfig(return_beams=True)
    assert SearchConfig(beam_width=2, return_beams=1).return_beams is True


def test_top_k_above_the_vocabulary_is_refused_where_the_model_is_known(model):
    config = SearchConfig(sample=True, top_k=10)  # the value alone cannot know V = 9
    with pytest.raises(ValueError, match="top_k=10"):
        Translator(model, search=config, jit_compile=False)
    with pytest.raises(ValueError, match="top_k=10"):
        model.generate(SOURCE, search=config)


# ---------------------------------------------------------------- taken whole
@pytest.mark.parametrize(
    "options",
    [
        {"max_length": 5},
        {"max_length": 5, "beam_width": 3, "length_penalty": 1.0, "coverage_penalty": 0.4},
        {"max_length": 5, "sample": True, "temperature": 1.5, "top_k": 6, "top_p": 0.9, "seed": 4},
    ],
    ids=["greedy", "beam", "sample"],
)
def test_search_decodes_as_its_keywords(model, options):
    search = SearchConfig(**options)
    by_keywords = {k: to_numpy(v) for k, v in model.generate(SOURCE, **options).items()}
    by_config = {k: to_numpy(v) for k, v in model.generate(SOURCE, search=search).items()}
    assert sorted(by_config) == sorted(by_keywords)
    for key in by_keywords:
        np.testing.assert_array_equal(by_config[key], by_keywords[key], err_msg=key)
    translator = Translator(model, search=search, jit_compile=False)
    assert translator.search is search  # (its calls run `generate(search=translator.search)`)
    assert translator.max_length == 5 and translator.beam_width == search.beam_width
    assert Translator(model, jit_compile=False, **options).search == search


def test_a_calls_seed_wins_over_the_configs(model):
    search = SearchConfig(max_length=5, sample=True, seed=4)
    with_own = to_numpy(model.generate(SOURCE, search=search, seed=11)["ids"])
    with_keywords = to_numpy(model.generate(SOURCE, max_length=5, sample=True, seed=11)["ids"])
    np.testing.assert_array_equal(with_own, with_keywords)


def test_a_keyword_that_disagrees_with_search_is_an_error(model):
    search = SearchConfig(max_length=5, beam_width=3)
    with pytest.raises(ValueError, match=r"`beam_width` disagrees with `search`.*beam_width=2"):
        model.generate(SOURCE, beam_width=2, search=search)
    with pytest.raises(ValueError, match=r"`max_length` disagrees.*max_length=7"):
        Translator(model, max_length=7, search=search, jit_compile=False)
    # A keyword at its default, or equal to the config's value, is no conflict.
    assert Translator(model, max_length=5, beam_width=1, search=search).search is search
    with pytest.raises(TypeError, match="search=.*beam"):
        model.generate(SOURCE, search={"beam_width": 3})


def test_translator_search_is_read_only(model):
    translator = Translator(model, max_length=4, jit_compile=False)
    with pytest.raises(AttributeError):
        translator.search = SearchConfig()
    with pytest.raises(AttributeError):
        translator.beam_width = 3
