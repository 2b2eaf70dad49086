"""The searches as values (issue 43, item 1): `GreedySearch`, `BeamSearch`, `SampleSearch`,
each with its own options only, passed whole as `search=` to `Seq2Seq.generate` and
`Translator` (the exports: tests/export/test_search_export.py); the 0.2 keywords kept as a
deprecation shim that builds the same search."""

from __future__ import annotations

import copy
import pickle

import keras
import numpy as np
import pytest

from keras_attention.decoding import (
    BeamSearch,
    GreedySearch,
    SampleSearch,
    Search,
    beam_search,
    greedy_search,
    sample_search,
)
from keras_attention.models import Seq2Seq, Translator
from tests.backend_utils import to_numpy

SOURCE = np.array([[5, 6, 7, 3], [4, 8, 3, 0]], "int32")
NAMESPACE = {"GreedySearch": GreedySearch, "BeamSearch": BeamSearch, "SampleSearch": SampleSearch}


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(0)
    model = Seq2Seq(12, 9, embedding_dim=6, units=8)
    model({"source_ids": SOURCE, "target_ids": np.array([[2, 4], [2, 5]], "int32")})
    return model


# ---------------------------------------------------------------- the values
def test_each_kind_has_its_own_options_and_defaults():
    assert GreedySearch().get_config() == {"max_length": 50}
    assert BeamSearch().get_config() == {
        "beam_width": 4,
        "max_length": 50,
        "length_penalty": 0.6,
        "coverage_penalty": 0.0,
        "return_beams": False,
    }
    assert SampleSearch().get_config() == {
        "max_length": 50,
        "temperature": 1.0,
        "top_k": None,
        "top_p": None,
        "seed": None,
    }
    assert [s.kind for s in (GreedySearch(), BeamSearch(), SampleSearch())] == [
        "greedy",
        "beam",
        "sample",
    ]
    assert GreedySearch().beam_width == 1 and SampleSearch().beam_width == 1
    # An option of another kind cannot be written down: no cross-option checks are needed.
    with pytest.raises(TypeError):
        GreedySearch(beam_width=4)
    with pytest.raises(TypeError):
        SampleSearch(coverage_penalty=0.2)
    with pytest.raises(TypeError):
        BeamSearch(4, temperature=0.5)
    with pytest.raises(TypeError, match="base class.*GreedySearch"):
        Search()


@pytest.mark.parametrize(
    "search, text",
    [
        (GreedySearch(max_length=9), "GreedySearch(max_length=9)"),
        (
            BeamSearch(4, coverage_penalty=0.2, return_beams=True),
            "BeamSearch(beam_width=4, max_length=50, coverage_penalty=0.2, return_beams=True)",
        ),
        (
            SampleSearch(top_k=5, top_p=0.9, seed=3),
            "SampleSearch(max_length=50, top_k=5, top_p=0.9, seed=3)",
        ),
    ],
)
def test_repr_and_round_trips(search, text):
    assert repr(search) == text
    assert eval(text, NAMESPACE) == search  # the repr reads back
    assert type(search).from_config(search.get_config()) == search
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(search))
    assert type(restored) is type(search) and restored == search
    assert pickle.loads(pickle.dumps(search)) == search
    assert copy.deepcopy(search) == search
    assert hash(copy.deepcopy(search)) == hash(search)
    assert search != search.replace(max_length=search.max_length + 1)


def test_kinds_are_not_equal_even_with_the_same_tokens():
    assert GreedySearch(5) != BeamSearch(1, max_length=5)  # other code, other outputs
    assert len({GreedySearch(5), GreedySearch(5), SampleSearch(max_length=5)}) == 2


def test_values_are_normalised_python_values():
    search = SampleSearch(max_length=np.int64(7), top_k=np.int32(3), temperature=1)
    assert type(search.max_length) is int and type(search.top_k) is int
    assert type(search.temperature) is float
    beam = BeamSearch(np.int64(2), length_penalty=1, return_beams=np.bool_(True))
    assert type(beam.beam_width) is int and type(beam.length_penalty) is float
    assert beam.return_beams is True


def test_immutable_and_replace_checks_its_names():
    search = BeamSearch(3)
    with pytest.raises(AttributeError, match="immutable.*replace"):
        search.beam_width = 5
    assert search.replace(beam_width=5).beam_width == 5 and search.beam_width == 3
    with pytest.raises(TypeError, match="no option 'beams'.*Received: beams=2"):
        search.replace(beams=2)
    with pytest.raises(TypeError, match="no option 'top_k'"):
        search.replace(top_k=2)  # another kind is another class
    with pytest.raises(TypeError):
        SampleSearch(20)  # keyword-only: a bare number would be ambiguous


def test_loading_an_unknown_option_fails():
    with pytest.raises(TypeError):
        GreedySearch.from_config({"max_length": 5, "beams": 2})


BAD = [
    (GreedySearch, {"max_length": 0}, "max_length=0"),
    (GreedySearch, {"max_length": None}, "max_length=None"),
    (BeamSearch, {"beam_width": "2"}, "beam_width='2'"),
    (BeamSearch, {"beam_width": 0}, "beam_width=0"),
    (BeamSearch, {"length_penalty": float("nan")}, "length_penalty=nan"),
    (BeamSearch, {"coverage_penalty": -1.0}, "coverage_penalty=-1.0"),
    (BeamSearch, {"return_beams": "yes"}, "return_beams='yes'"),
    (SampleSearch, {"temperature": 0}, "temperature=0"),
    (SampleSearch, {"temperature": float("inf")}, "temperature=inf"),
    (SampleSearch, {"top_k": 0}, "top_k=0"),
    (SampleSearch, {"top_p": 1.5}, "top_p=1.5"),
    (SampleSearch, {"seed": -1}, "seed=-1"),
]


@pytest.mark.parametrize("kind, kwargs, match", BAD, ids=[m for _, _, m in BAD])
def test_bad_options_name_the_argument_and_value(kind, kwargs, match):
    with pytest.raises(ValueError, match=match):
        kind(**kwargs)


def test_top_k_above_the_vocabulary_is_refused_where_the_model_is_known(model):
    search = SampleSearch(top_k=10)  # the value alone cannot know V = 9
    with pytest.raises(ValueError, match="top_k=10"):
        Translator(model, search, jit_compile=False)
    with pytest.raises(ValueError, match="top_k=10"):
        model.generate(SOURCE, search)


def test_search_must_be_a_search(model):
    with pytest.raises(TypeError, match=r"search=GreedySearch\(max_length=20\).*search=20"):
        model.generate(SOURCE, 20)  # 0.2's positional max_length
    with pytest.raises(TypeError, match="search=.*beam"):
        model.generate(SOURCE, search={"beam_width": 3})
    with pytest.raises(TypeError, match="unexpected keyword argument 'beams'"):
        Translator(model, beams=3)


# ---------------------------------------------------------------- taken whole
def _direct(model, search, seed=None):
    """The search run by hand on the model's step function (not through `generate`)."""
    memory, mask, state = model.encode(SOURCE)
    step_fn = model.make_step_fn(memory, mask, search.beam_width)
    common = {
        "batch_size": SOURCE.shape[0],
        "start_id": model.start_id,
        "end_id": model.end_id,
        "max_length": search.max_length,
        "vocabulary_size": model.target_vocabulary_size,
    }
    if isinstance(search, GreedySearch):
        return greedy_search(step_fn, state, **common)
    if isinstance(search, BeamSearch):
        return beam_search(
            step_fn, state, beam_width=search.beam_width, length_penalty=search.length_penalty,
            coverage_penalty=search.coverage_penalty, **common,
        )  # fmt: skip
    return sample_search(
        step_fn, state, temperature=search.temperature, top_k=search.top_k, top_p=search.top_p,
        seed=seed, **common,
    )  # fmt: skip


SEARCHES = {
    "greedy": GreedySearch(max_length=5),
    "beam": BeamSearch(3, max_length=5, length_penalty=1.0, coverage_penalty=0.4),
    "sample": SampleSearch(max_length=5, temperature=1.5, top_k=6, top_p=0.9, seed=4),
}


@pytest.mark.parametrize("name", list(SEARCHES))
def test_generate_and_translator_run_the_search_they_are_given(model, name):
    search = SEARCHES[name]
    expected = {k: to_numpy(v) for k, v in _direct(model, search, seed=4).items()}
    got = {k: to_numpy(v) for k, v in model.generate(SOURCE, search).items()}
    for key in expected:  # (generate adds nothing the search does not return)
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-6, err_msg=key)
    translator = Translator(model, search, jit_compile=False)
    assert translator.search is search
    # What its compiled calls run (traced: tests/models/test_seq2seq.py), called eagerly here.
    called = translator.generate(SOURCE, seed=4)
    np.testing.assert_array_equal(to_numpy(called["ids"]), expected["ids"])


def test_a_calls_seed_wins_over_the_searchs(model):
    search = SampleSearch(max_length=5, seed=4)
    with_own = to_numpy(model.generate(SOURCE, search, seed=11)["ids"])
    np.testing.assert_array_equal(with_own, to_numpy(_direct(model, search, seed=11)["ids"]))


def test_translator_search_is_read_only(model):
    translator = Translator(model, GreedySearch(max_length=4), jit_compile=False)
    with pytest.raises(AttributeError):
        translator.search = GreedySearch()


# ---------------------------------------------------------------- 0.2's keywords: deprecated
KEYWORDS = [
    ({"max_length": 5}, GreedySearch(max_length=5)),
    (
        {"max_length": 5, "beam_width": 3, "length_penalty": 1.0, "coverage_penalty": 0.4},
        BeamSearch(3, max_length=5, length_penalty=1.0, coverage_penalty=0.4),
    ),
    (
        {"max_length": 5, "sample": True, "temperature": 1.5, "top_k": 6, "top_p": 0.9},
        SampleSearch(max_length=5, temperature=1.5, top_k=6, top_p=0.9),
    ),
]


@pytest.mark.parametrize("keywords, search", KEYWORDS, ids=["greedy", "beam", "sample"])
def test_old_keywords_warn_and_build_the_same_search(model, keywords, search):
    with pytest.warns(DeprecationWarning, match=r"search=" + type(search).__name__) as record:
        translator = Translator(model, jit_compile=False, **keywords)
    assert translator.search == search
    assert record[0].filename == __file__  # the warning points at the caller
    with pytest.warns(DeprecationWarning, match=r"generate\(.*0\.4\.0"):
        by_keywords = model.generate(SOURCE, seed=3, **keywords)
    by_search = model.generate(SOURCE, search, seed=3)
    np.testing.assert_array_equal(to_numpy(by_keywords["ids"]), to_numpy(by_search["ids"]))
    with pytest.warns(DeprecationWarning, match="translator.search.max_length"):
        assert translator.max_length == 5  # 0.2's mirror attributes


OLD_BAD = [
    ({"sample": True, "beam_width": 2}, "sample=True.*beam_width=1. Received: beam_width=2"),
    ({"coverage_penalty": 0.3}, "coverage_penalty=0.3 with beam_width=1"),
    ({"return_beams": True}, "return_beams=True.*Received: beam_width=1"),
    ({"top_k": 5}, "top_k=5 with sample=False"),
    ({"sample": True, "top_k": 0}, "top_k=0"),
]


@pytest.mark.parametrize("kwargs, match", OLD_BAD, ids=[m for _, m in OLD_BAD])
def test_old_keywords_that_no_search_can_honour_are_refused(model, kwargs, match):
    with pytest.raises(ValueError, match=match):
        Translator(model, jit_compile=False, **kwargs)
    with pytest.raises(ValueError, match=match):
        model.generate(SOURCE, **kwargs)


def test_old_keywords_beside_a_search_are_an_error(model):
    with pytest.raises(ValueError, match=r"`beam_width` is a search option.*beam_width=2"):
        model.generate(SOURCE, BeamSearch(3), beam_width=2)
    with pytest.raises(ValueError, match=r"`max_length` is a search option"):
        Translator(model, GreedySearch(), max_length=7, jit_compile=False)
