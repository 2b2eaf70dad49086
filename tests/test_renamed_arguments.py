"""Renamed arguments keep working under their old names (docs/design.md §8 and §9, "Names").

`LuongAttentionCell(units=...)` became `attention_layer_size=` in 0.2 and `attention_units=`
since (the size of h̃, as `LuongAttention` names it; issue 43): each old keyword
gives the same cell with a `DeprecationWarning` naming the new one, old configs load silently,
`get_config` emits the new name, and the committed 0.1.0 fixture, saved with `units`, loads
through that path. Also the state that moved off `BaseAttention`: `AdditiveAttention` carries
no Luong-only option (the recurrent layers' refusals are in tests/layers/test_monotonic.py).

One vocabulary of names (issue 34): the searches' `start_token`, `end_token`, `pad_token` and
`vocab_size` (and `check_sampling`'s `vocab_size`) are `start_id`, `end_id`, `pad_id` and
`vocabulary_size`, as in the models and `text`; `Seq2Seq(attention_dim=)` (and
`Seq2SeqDecoder`'s, and the tuning module's `fixed`) is `score_units=`. Each old keyword
warns, naming both names and the removal version, and gives what the new one gives; both at
once are a `ValueError` naming both; saved configs holding `attention_dim` (the 0.1.0 and
0.2.0 fixtures) load silently; the package's own paths warn about nothing.
"""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    LuongAttention,
    LuongAttentionCell,
)
from keras_attention.decoding import (
    BeamSearch,
    GreedySearch,
    SampleSearch,
    beam_search,
    greedy_search,
    sample_search,
)
from keras_attention.functional.sampling import check_sampling
from keras_attention.models import Seq2Seq, Seq2SeqDecoder
from tests.backend_utils import to_numpy

COMPAT = Path(__file__).parent / "compat"
FIXTURE = COMPAT / "fixtures" / "rnn_luong_lstm_input_feeding.keras"


def _two_cells(old: dict, new: dict):
    """The same cell made with the old and with the new keyword, built, equal weights."""
    rng = np.random.default_rng(0)
    y, memory = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 6))

    def make(kwargs):
        attention = (
            [LuongAttention("general"), AdditiveAttention(score_units=3)]
            if isinstance(next(iter(kwargs.values())), list)
            else LuongAttention("general")
        )
        rnn = AttentionRNN(LuongAttentionCell(keras.layers.LSTMCell(4), attention, **kwargs))
        rnn(y, memory)
        return rnn

    with pytest.warns(DeprecationWarning, match=r"attention_units="):
        old_rnn = make(old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns about nothing
        new_rnn = make(new)
    old_rnn.set_weights(new_rnn.get_weights())  # same shapes, or this raises
    return to_numpy(old_rnn(y, memory)), to_numpy(new_rnn(y, memory)), old_rnn.cell


@pytest.mark.parametrize("old_name", ["units", "attention_layer_size"])
@pytest.mark.parametrize("size", [3, [2, 5]], ids=["int", "list"])
def test_old_size_keywords_are_attention_units(size, old_name):
    old, new, cell = _two_cells({old_name: size}, {"attention_units": size})
    np.testing.assert_array_equal(old, new)
    assert cell.attention_units == size
    config = cell.get_config()
    assert config["attention_units"] == size
    assert "units" not in config and "attention_layer_size" not in config


@pytest.mark.parametrize("old_name", ["units", "attention_layer_size"])  # 0.1.0, 0.2
def test_old_config_loads_silently_and_saves_the_new_name(old_name):
    cell = LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention(), attention_units=3)
    config = cell.get_config()
    config[old_name] = config.pop("attention_units")  # what 0.1.0 / 0.2 wrote
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = LuongAttentionCell.from_config(config)
    assert loaded.attention_units == 3
    assert loaded.get_config()["attention_units"] == 3
    assert old_name not in loaded.get_config()


def test_deprecation_names_its_removal_version():
    """The warning says when the keyword goes (CHANGELOG 0.2.0: removed in 0.4.0)."""
    with pytest.warns(DeprecationWarning, match=r"removed in keras_attention 0\.4\.0"):
        LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention(), units=3)


def test_both_names_at_once_are_refused():
    with pytest.raises(ValueError, match=r"Received: units=3, attention_units=4"):
        LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention(), units=3, attention_units=4)
    with pytest.raises(ValueError, match=r"Received: attention_layer_size=3, attention_units=4"):
        LuongAttentionCell(
            keras.layers.LSTMCell(4), LuongAttention(), attention_layer_size=3, attention_units=4
        )


def test_fixture_saved_with_the_old_name_loads():
    """The 0.1.0 fixture's config holds `units` (checked here, so the alias path is what the
    compat tests exercise); it loads with the size it was saved with."""
    with zipfile.ZipFile(FIXTURE) as archive:
        text = archive.read("config.json").decode()
    stored = [
        layer["config"]["cell"]["config"]
        for layer in json.loads(text)["config"]["layers"]
        if layer["class_name"] == "AttentionRNN"
    ]
    assert stored and stored[0]["units"] == 3 and "attention_layer_size" not in stored[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        model = keras.saving.load_model(FIXTURE, safe_mode=True)
    (rnn,) = [layer for layer in model.layers if isinstance(layer, AttentionRNN)]
    assert rnn.cell.attention_units == 3
    assert rnn.cell.attention_kernel.shape[-1] == 3


def test_additive_attention_has_no_luong_only_state():
    layer = AdditiveAttention(score_units=3)
    layer(np.ones((1, 2, 4)), np.ones((1, 3, 4)))
    for name in ("alignment", "window_radius", "attention_units", "attention_activation"):
        assert not hasattr(layer, name), name
    assert {"alignment", "window_radius", "attention_units"}.isdisjoint(layer.get_config())
    with pytest.raises(ValueError, match="alignment"):  # Keras' own unknown-argument error
        AdditiveAttention(alignment="local_monotonic")


# ------------------------------------------------------------ one vocabulary of names (issue 34)
SEARCH_RENAMES = {
    "start_token": "start_id",
    "end_token": "end_id",
    "pad_token": "pad_id",
    "vocab_size": "vocabulary_size",
}
# From the start token 1: token 3 (p=0.6) then 5, 6 or 7, or token 4 (p=0.4) then the end 2.
_TABLE = np.full((8, 8), 1e-9, "float32")
_TABLE[1, 3], _TABLE[1, 4], _TABLE[3, 5:], _TABLE[4, 2], _TABLE[5:, 2] = 0.6, 0.4, 1 / 3, 1, 1
_SEARCH_IDS = {"start_id": 1, "end_id": 2, "pad_id": 7, "vocabulary_size": 8}
_SEARCHES = {
    "greedy": (greedy_search, {}),
    "beam": (beam_search, {"beam_width": 2, "length_penalty": 0.0}),
    "sample": (sample_search, {"seed": 3, "temperature": 2.0}),
}


def _step_fn(tokens, state, t):
    return keras.ops.log(keras.ops.take(_TABLE, tokens, axis=0)), state, None


def _search(name: str, **ids):
    search, options = _SEARCHES[name]
    result = search(_step_fn, (), batch_size=3, max_length=4, **options, **ids)
    return {key: to_numpy(value) for key, value in result.items()}


@pytest.mark.parametrize("old", sorted(SEARCH_RENAMES))
@pytest.mark.parametrize("name", sorted(_SEARCHES))
def test_old_search_keyword_warns_and_gives_the_same_result(name, old):
    new = SEARCH_RENAMES[old]
    ids = dict(_SEARCH_IDS)
    old_ids = dict(ids)
    old_ids[old] = old_ids.pop(new)
    with pytest.warns(DeprecationWarning, match=old) as record:
        old_result = _search(name, **old_ids)
    # (only ours: PyTorch's own deprecation warnings may come along)
    (warning,) = [w for w in record if f"{old}=..." in str(w.message)]
    message = str(warning.message)
    assert f"`{new}`" in message and "removed in keras_attention 0.4.0" in message, message
    assert warning.filename == __file__  # it points at the caller's line
    with warnings.catch_warnings(record=True) as new_record:
        warnings.simplefilter("always")
        new_result = _search(name, **ids)
    assert not [w for w in new_record if "keras_attention" in str(w.message)]  # new: none
    assert old_result.keys() == new_result.keys()
    for key in new_result:
        np.testing.assert_array_equal(old_result[key], new_result[key], err_msg=key)


@pytest.mark.parametrize("old", sorted(SEARCH_RENAMES))
@pytest.mark.parametrize("name", sorted(_SEARCHES))
def test_old_and_new_search_keyword_together_are_refused(name, old):
    new = SEARCH_RENAMES[old]
    with pytest.raises(ValueError, match=rf"`{old}` is the old name of `{new}`.*Received: {old}="):
        _search(name, **_SEARCH_IDS, **{old: _SEARCH_IDS[new]})


def test_positional_new_and_old_keyword_are_refused():
    with pytest.raises(ValueError, match=r"Received: start_token=1, start_id=1"):
        greedy_search(_step_fn, (), 3, 1, 2, 4, start_token=1)


def test_searches_show_the_new_names():
    import inspect

    for search, _ in _SEARCHES.values():
        parameters = inspect.signature(search).parameters
        assert {"start_id", "end_id", "pad_id", "vocabulary_size"} <= set(parameters)
        assert not set(SEARCH_RENAMES) & set(parameters), search.__name__


def test_check_sampling_old_vocab_size():
    with pytest.warns(DeprecationWarning, match=r"vocab_size.*vocabulary_size"):
        assert check_sampling(1.0, 5, None, vocab_size=9) == (1.0, 5, None)
    with pytest.warns(DeprecationWarning, match="vocab_size"):
        with pytest.raises(ValueError, match=r"at most the vocabulary size \(9\)"):
            check_sampling(1.0, 10, None, vocab_size=9)
    with pytest.raises(ValueError, match=r"Received: vocab_size=9, vocabulary_size=9"):
        check_sampling(1.0, 5, None, vocabulary_size=9, vocab_size=9)


_SEQ2SEQ = {"embedding_dim": 4, "units": 6, "attention": "bahdanau"}
_IDS = {
    "source_ids": np.array([[5, 6, 3, 0], [4, 3, 0, 0]], "int32"),
    "target_ids": np.array([[2, 7, 8], [2, 5, 0]], "int32"),
}


def test_seq2seq_old_attention_dim_warns_and_gives_the_same_model():
    with pytest.warns(DeprecationWarning, match="attention_dim") as record:
        old = Seq2Seq(12, 9, attention_dim=5, **_SEQ2SEQ)
    message = str(record[0].message)
    assert "`score_units`" in message and "removed in keras_attention 0.4.0" in message
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = Seq2Seq(12, 9, score_units=5, **_SEQ2SEQ)
    old(_IDS), new(_IDS)
    old.set_weights(new.get_weights())  # same shapes, or this raises
    np.testing.assert_array_equal(to_numpy(old(_IDS)), to_numpy(new(_IDS)))
    assert old.decoder.cell.attention.score_units == 5
    assert dict(old.get_config(), name="") == dict(new.get_config(), name="")
    assert old.get_config()["score_units"] == 5 and "attention_dim" not in old.get_config()


def test_seq2seq_both_attention_names_are_refused():
    with pytest.raises(ValueError, match=r"Received: attention_dim=5, score_units=4"):
        Seq2Seq(12, 9, attention_dim=5, score_units=4, **_SEQ2SEQ)


def test_attention_units_is_only_the_size_of_h_tilde():
    """One word, one meaning: `attention_units` is h̃'s size (`LuongAttention`'s and
    `LuongAttentionCell`'s), never the models' score size (`score_units`; `attention_units`
    there was never released, so no alias)."""
    with pytest.raises((TypeError, ValueError), match="attention_units"):
        Seq2Seq(12, 9, attention_units=5, **_SEQ2SEQ)
    with pytest.raises((TypeError, ValueError), match="attention_units"):
        Seq2SeqDecoder(vocabulary_size=9, embedding_dim=4, units=6, attention_units=5)
    layer = LuongAttention("general", attention_units=3)
    assert layer.attention_units == 3 and layer.get_config()["attention_units"] == 3
    assert layer.score_units is None and layer.get_config()["score_units"] is None


def test_seq2seq_config_with_attention_dim_loads_silently():
    config = Seq2Seq(12, 9, score_units=5, **_SEQ2SEQ).get_config()
    config["attention_dim"] = config.pop("score_units")  # what 0.1.0 and 0.2.0 wrote
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = Seq2Seq.from_config(config)
    assert loaded.get_config()["score_units"] == 5
    assert "attention_dim" not in loaded.get_config()


def test_seq2seq_decoder_old_attention_dim():
    options = {"vocabulary_size": 9, "embedding_dim": 4, "units": 6, "attention": "bahdanau"}
    with pytest.warns(DeprecationWarning, match="attention_dim"):
        old = Seq2SeqDecoder(attention_dim=5, **options)
    assert old.score_units == 5 and old.get_config()["score_units"] == 5
    assert "attention_dim" not in old.get_config()
    with pytest.raises(ValueError, match=r"Received: attention_dim=5, score_units=4"):
        Seq2SeqDecoder(attention_dim=5, score_units=4, **options)
    config = old.get_config()
    config["attention_dim"] = config.pop("score_units")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Seq2SeqDecoder.from_config(config).score_units == 5


@pytest.mark.parametrize(
    "path",
    sorted(COMPAT.glob("fixtures*/seq2seq*.keras")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_fixtures_saved_with_attention_dim_load_silently(path):
    """Every Seq2Seq file of 0.1.0 and 0.2.0 says `attention_dim` (checked, so that the compat
    tests run the silent rename); it loads without a warning (their outputs: tests/compat)."""
    text = zipfile.ZipFile(path).read("config.json").decode()
    assert '"attention_dim"' in text and '"score_units"' not in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        model = keras.saving.load_model(path, safe_mode=True)
    (seq2seq,) = [layer for layer in model.layers if isinstance(layer, Seq2Seq)]
    assert "score_units" in seq2seq.get_config()


@pytest.mark.parametrize(
    "search",
    [GreedySearch(3), BeamSearch(2, max_length=3), SampleSearch(max_length=3, seed=1)],
    ids=["greedy", "beam", "sample"],
)
def test_package_paths_warn_about_nothing(search):
    """`generate` (and through it `Translator` and the exports) calls the searches with the new
    names: no DeprecationWarning from the package's own code."""
    model = Seq2Seq(12, 9, score_units=5, **_SEQ2SEQ)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        result = model.generate(_IDS["source_ids"], search)
    assert tuple(result["ids"].shape) == (2, 3)


def test_tuning_fixed_attention_dim():
    keras_tuner = pytest.importorskip("keras_tuner")
    from keras_attention.tuning import Seq2SeqHyperModel, search_space

    hp = keras_tuner.HyperParameters()
    with pytest.warns(DeprecationWarning, match="attention_dim"):
        old = search_space(hp, attention="bahdanau", attention_dim=5)
    assert old["score_units"] == 5 and "attention_dim" not in old
    with pytest.raises(ValueError, match=r"Received: attention_dim=5, score_units=4"):
        search_space(hp, attention_dim=5, score_units=4)
    with pytest.warns(DeprecationWarning, match="attention_dim"):
        hypermodel = Seq2SeqHyperModel(
            12, 9, fixed={"attention": "bahdanau", "attention_dim": 5, "units": 6}
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # warned once, not in every trial
        model = hypermodel.build(keras_tuner.HyperParameters())
    assert model.get_config()["score_units"] == 5
