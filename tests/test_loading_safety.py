"""Every public object loads from `.keras` with `safe_mode=True`; hostile files fail safely.

- Each layer in each mode, each cell inside an `AttentionRNN` in a functional model, and a
  `Seq2Seq` with its tokenizers (TensorFlow only: tf-text) round-trip through `.keras` with
  `keras.saving.load_model(path, safe_mode=True)` and give identical outputs.
- A file whose config names an unknown `score_mode` fails with an error naming it and the value.
- A config naming a class or function outside the registered ones (`os.system`, a
  `keras_attention>...` name that does not exist) or a `Lambda` layer fails with a clear error
  and runs no code: each payload would create a marker file, and the file is never created.
"""

from __future__ import annotations

import json
import zipfile

import keras
import numpy as np
import pytest

from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttentionCell,
    LuongAttention,
    LuongAttentionCell,
)
from tests.conftest import LAYER_CASES, LAYER_IDS, random_batch


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def _round_trip(model, path, inputs):
    """Save, load with safe_mode=True, and check the outputs are identical."""
    expected = model.predict(inputs, verbose=0)
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    got = loaded.predict(inputs, verbose=0)
    for a, b in zip(keras.tree.flatten(expected), keras.tree.flatten(got)):
        np.testing.assert_array_equal(_np(b), _np(a))
    return loaded


# ---------------------------------------------------------------- public objects round-trip
@pytest.mark.parametrize("case_id, cls, kwargs, _", LAYER_CASES, ids=LAYER_IDS)
def test_layer_round_trips_in_safe_mode(tmp_path, case_id, cls, kwargs, _):
    query, value, mask = random_batch(np.random.default_rng(0))
    q = keras.Input((None, query.shape[-1]))
    v = keras.Input((None, value.shape[-1]))
    m = keras.Input((None,), dtype="bool")
    out, weights = cls(**kwargs)(q, v, value_mask=m, return_attention_scores=True)
    model = keras.Model([q, v, m], [out, weights])
    _round_trip(model, tmp_path / "layer.keras", [query, value, mask])


@pytest.mark.parametrize("cls", [LuongAttention, AdditiveAttention])
def test_pooling_layer_round_trips_in_safe_mode(tmp_path, cls):
    x = np.random.default_rng(1).normal(size=(3, 6, 4)).astype("float32")
    model = keras.Sequential(
        [keras.Input((None, 4)), keras.layers.LSTM(5, return_sequences=True), cls()]
    )
    _round_trip(model, tmp_path / "pooling.keras", x)


CELLS = {
    "luong-lstm-general-local_p": lambda: LuongAttentionCell(
        keras.layers.LSTMCell(6),
        LuongAttention("general", "local_predictive", window_radius=2),
        attention_units=5,
    ),
    "luong-stacked-additive-no_feeding": lambda: LuongAttentionCell(
        keras.layers.StackedRNNCells([keras.layers.GRUCell(6), keras.layers.GRUCell(6)]),
        AdditiveAttention(score_units=4, normalize=True),
        input_feeding=False,
        attention_activation=None,
    ),
    "bahdanau-gru-additive": lambda: BahdanauAttentionCell(
        keras.layers.GRUCell(6), AdditiveAttention(score_units=4)
    ),
    "bahdanau-lstm-luong_concat": lambda: BahdanauAttentionCell(
        keras.layers.LSTMCell(6), LuongAttention("concat", score_units=3, use_scale=True)
    ),
}


@pytest.mark.parametrize("name", CELLS)
def test_cell_in_attention_rnn_round_trips_in_safe_mode(tmp_path, name):
    rng = np.random.default_rng(2)
    sequences = rng.normal(size=(3, 4, 5)).astype("float32")
    memory = rng.normal(size=(3, 7, 6)).astype("float32")
    memory_mask = np.arange(7) < np.array([[7], [3], [1]])
    s = keras.Input((None, 5))
    mem = keras.Input((None, 6))
    mm = keras.Input((None,), dtype="bool")
    rnn = AttentionRNN(CELLS[name](), return_attention_scores=True, return_state=True)
    model = keras.Model([s, mem, mm], rnn(s, mem, memory_mask=mm))
    _round_trip(model, tmp_path / "rnn.keras", [sequences, memory, memory_mask])


@pytest.mark.tensorflow_only
def test_seq2seq_with_tokenizers_round_trips_in_safe_mode(tmp_path):
    from keras_attention.models import Seq2Seq
    from keras_attention.text import CharTokenizer

    source = CharTokenizer(vocabulary=list("abcdef "))
    target = CharTokenizer(vocabulary=list("uvwxyz"))
    keras.utils.set_random_seed(0)
    model = Seq2Seq(source_tokenizer=source, target_tokenizer=target, embedding_dim=6, units=8)
    src = np.array([[4, 5, 6, 3, 0], [7, 3, 0, 0, 0]], "int32")
    tgt = np.array([[2, 4, 5], [2, 6, 0]], "int32")
    loaded = _round_trip(model, tmp_path / "seq2seq.keras", {"source_ids": src, "target_ids": tgt})
    assert loaded.source_tokenizer.get_config() == source.get_config()
    texts = ["abc", "fed cab"]
    assert loaded.translate(texts, max_length=4) == model.translate(texts, max_length=4)


# ---------------------------------------------------------------- hostile files
@pytest.fixture
def saved(tmp_path):
    q, v = keras.Input((None, 4)), keras.Input((None, 4))
    model = keras.Model([q, v], LuongAttention("general", name="att")([q, v]))
    path = tmp_path / "model.keras"
    model.save(path)
    return path


def _rewrite(path, mutate, out):
    """Copy the `.keras` zip at `path` to `out` with its config.json changed by `mutate`."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.namelist():
            data = source.read(item)
            if item == "config.json":
                config = json.loads(data)
                mutate(config)
                data = json.dumps(config)
            target.writestr(item, data)
    return out


def _attention_entry(config):
    return next(entry for entry in config["config"]["layers"] if entry["config"]["name"] == "att")


def test_unknown_score_mode_names_the_argument_and_value(saved, tmp_path):
    def mutate(config):
        _attention_entry(config)["config"]["score_mode"] = "cosine"

    path = _rewrite(saved, mutate, tmp_path / "bad.keras")
    with pytest.raises((TypeError, ValueError), match="score_mode='cosine'"):
        keras.saving.load_model(path, safe_mode=True)


def _os_system_class(marker):
    def mutate(config):
        entry = _attention_entry(config)
        entry.update(module="os", class_name="system", registered_name=None)
        entry["config"] = {"command": f"touch {marker}"}

    return mutate


def _os_system_function(marker):
    def mutate(config):
        entry = _attention_entry(config)
        entry["config"]["attention_activation"] = {
            "module": "os",
            "class_name": "function",
            "config": "system",
            "registered_name": "function",
        }
        entry["config"]["attention_units"] = 4  # the activation would run on every call

    return mutate


def _unregistered_name(marker):
    def mutate(config):
        entry = _attention_entry(config)
        entry.update(class_name="DoesNotExist", registered_name="keras_attention>DoesNotExist")

    return mutate


@pytest.mark.parametrize(
    "payload, match",
    [
        (_os_system_class, "Could not locate class 'system'"),
        (_os_system_function, "Could not locate function 'system'"),
        (_unregistered_name, "DoesNotExist"),
    ],
    ids=["os.system-class", "os.system-function", "unregistered-name"],
)
def test_unregistered_objects_fail_without_running_code(saved, tmp_path, payload, match):
    marker = tmp_path / "marker"
    path = _rewrite(saved, payload(marker), tmp_path / "hostile.keras")
    with pytest.raises((TypeError, ValueError), match=match):
        keras.saving.load_model(path, safe_mode=True)
    assert not marker.exists()


def test_lambda_layer_is_refused_in_safe_mode_and_never_runs(tmp_path):
    marker = tmp_path / "marker"

    # A Python lambda (Keras stores its bytecode in the config) with the marker's path as a
    # constant of that bytecode: loading it would create the marker file.
    payload = eval(f"lambda x: (open({str(marker)!r}, 'w').close(), x)[1]")

    x = keras.Input((3,))
    model = keras.Model(x, keras.layers.Lambda(payload)(x))
    marker.unlink()  # building the model ran it once
    path = tmp_path / "lambda.keras"
    model.save(path)
    with pytest.raises(ValueError, match="(?i)lambda.*safe_mode"):
        keras.saving.load_model(path, safe_mode=True)
    assert not marker.exists()
    # The payload is real: an unsafe load does run it.
    keras.saving.load_model(path, safe_mode=False)(np.ones((1, 3), "float32"))
    assert marker.exists()
