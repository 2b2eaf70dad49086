"""Renamed arguments keep working under their old names (docs/design.md §8 and §9).

`LuongAttentionCell(units=...)` became `attention_layer_size=` (the size of h̃, tfa's
`AttentionWrapper` name; `units` is the score's hidden size in the layers): the old keyword
gives the same cell with a `DeprecationWarning` naming the new one, old configs load silently,
`get_config` emits the new name, and the committed 0.1.0 fixture, saved with `units`, loads
through that path. Also the state that moved off `BaseAttention`: `AdditiveAttention` carries
no Luong-only option (the recurrent layers' refusals are in tests/layers/test_monotonic.py).
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
from tests.backend_utils import to_numpy

FIXTURE = Path(__file__).parent / "compat" / "fixtures" / "rnn_luong_lstm_input_feeding.keras"


def _two_cells(old: dict, new: dict):
    """The same cell made with the old and with the new keyword, built, equal weights."""
    rng = np.random.default_rng(0)
    y, memory = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 6))

    def make(kwargs):
        attention = (
            [LuongAttention("general"), AdditiveAttention(units=3)]
            if isinstance(next(iter(kwargs.values())), list)
            else LuongAttention("general")
        )
        rnn = AttentionRNN(LuongAttentionCell(keras.layers.LSTMCell(4), attention, **kwargs))
        rnn(y, memory)
        return rnn

    with pytest.warns(DeprecationWarning, match=r"attention_layer_size="):
        old_rnn = make(old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new name warns about nothing
        new_rnn = make(new)
    old_rnn.set_weights(new_rnn.get_weights())  # same shapes, or this raises
    return to_numpy(old_rnn(y, memory)), to_numpy(new_rnn(y, memory)), old_rnn.cell


@pytest.mark.parametrize("size", [3, [2, 5]], ids=["int", "list"])
def test_old_units_keyword_is_attention_layer_size(size):
    old, new, cell = _two_cells({"units": size}, {"attention_layer_size": size})
    np.testing.assert_array_equal(old, new)
    assert cell.attention_layer_size == size
    config = cell.get_config()
    assert config["attention_layer_size"] == size and "units" not in config


def test_old_config_loads_silently_and_saves_the_new_name():
    cell = LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention(), attention_layer_size=3)
    config = cell.get_config()
    config["units"] = config.pop("attention_layer_size")  # what 0.1.0 wrote
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = LuongAttentionCell.from_config(config)
    assert loaded.attention_layer_size == 3
    assert loaded.get_config()["attention_layer_size"] == 3
    assert "units" not in loaded.get_config()


def test_deprecation_names_its_removal_version():
    """The warning says when the keyword goes (CHANGELOG 0.2.0: removed in 0.4.0)."""
    with pytest.warns(DeprecationWarning, match=r"removed in keras_attention 0\.4\.0"):
        LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention(), units=3)


def test_both_names_at_once_are_refused():
    with pytest.raises(ValueError, match=r"Received: units=3, attention_layer_size=4"):
        LuongAttentionCell(
            keras.layers.LSTMCell(4), LuongAttention(), units=3, attention_layer_size=4
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
    assert rnn.cell.attention_layer_size == 3
    assert rnn.cell.attention_kernel.shape[-1] == 3


def test_additive_attention_has_no_luong_only_state():
    layer = AdditiveAttention(units=3)
    layer(np.ones((1, 2, 4)), np.ones((1, 3, 4)))
    for name in ("alignment", "window_radius", "attention_units", "attention_activation"):
        assert not hasattr(layer, name), name
    assert {"alignment", "window_radius", "attention_units"}.isdisjoint(layer.get_config())
    with pytest.raises(ValueError, match="alignment"):  # Keras' own unknown-argument error
        AdditiveAttention(alignment="local_monotonic")
