"""One vocabulary of names and a composed Seq2Seq (issue 43, items 2-3; docs/design.md §9.1).

Each old keyword warns (naming the new one and the removal version) and gives the same config
and output as the new one; the old and the new name at once are a `ValueError`; configs that
hold an old key load silently. A `Seq2Seq` composed from a `Seq2SeqEncoder` and a
`Seq2SeqDecoder` equals the options-built one (same weights, same logits), round-trips through
a `.keras` file, and refuses parts that do not fit with errors naming argument and value.
"""

from __future__ import annotations

import warnings

import keras
import numpy as np
import pytest

from keras_attention import (
    AdditiveAttention,
    BahdanauMonotonicAttention,
    LocationSensitiveAttention,
    LuongAttention,
)
from keras_attention.models import Seq2Seq, Seq2SeqDecoder, Seq2SeqEncoder
from tests.backend_utils import to_numpy

IDS = {
    "source_ids": np.array([[5, 6, 3, 0], [4, 3, 0, 0]], "int32"),
    "target_ids": np.array([[2, 7, 8], [2, 5, 0]], "int32"),
}
ANY = {"source_ids": (None, None), "target_ids": (None, None)}


def _new(make):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names warn about nothing
        return make()


# ---------------------------------------------------------------- layers: units → score_units
LAYERS = [
    (AdditiveAttention, {}),
    (LuongAttention, {"score_mode": "concat"}),
    (BahdanauMonotonicAttention, {}),
    (LocationSensitiveAttention, {"filters": 2, "kernel_size": 3}),
]


def _layer_output(layer, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    query, memory = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 6))
    if isinstance(layer, (BahdanauMonotonicAttention, LocationSensitiveAttention)):
        return layer([query, memory])
    return layer(query, memory)


@pytest.mark.parametrize("cls,options", LAYERS, ids=lambda x: getattr(x, "__name__", ""))
def test_layer_units_is_score_units(cls, options):
    with pytest.warns(DeprecationWarning, match=r"`score_units`.*removed in keras_attention 0\.4"):
        old = cls(units=5, **options)
    new = _new(lambda: cls(score_units=5, **options))
    assert old.get_config() | {"name": ""} == new.get_config() | {"name": ""}
    assert new.get_config()["score_units"] == 5 and "units" not in new.get_config()
    _layer_output(old), _layer_output(new)
    old.set_weights(new.get_weights())
    np.testing.assert_array_equal(to_numpy(_layer_output(old)), to_numpy(_layer_output(new)))
    with pytest.warns(DeprecationWarning, match="score_units"):
        assert new.units == 5  # the attribute's old name still reads
    assert "units" not in dir(new)  # Keras' saving walks dir(layer): no warning on each save
    with pytest.raises(ValueError, match=r"Received: units=5, score_units=4"):
        cls(units=5, score_units=4, **options)
    config = new.get_config()
    config["units"] = config.pop("score_units")  # what 0.1.0 and 0.2 wrote
    loaded = _new(lambda: cls.from_config(config))
    assert loaded.score_units == 5


def test_additive_positional_size_is_score_units():
    assert _new(lambda: AdditiveAttention(7)).score_units == 7


# ---------------------------------------------------------------- Seq2Seq / decoder renames
SEQ2SEQ = {"embedding_dim": 4, "units": 6, "attention": "bahdanau"}
SEQ2SEQ_RENAMES = [
    ("encoder_layers", "encoder_num_layers", 2),
    ("decoder_layers", "decoder_num_layers", 2),
    ("scheduled_sampling", "sampling_probability", 0.25),
]


@pytest.mark.parametrize("old_name,new_name,value", SEQ2SEQ_RENAMES, ids=lambda x: str(x))
def test_seq2seq_old_keywords(old_name, new_name, value):
    with pytest.warns(DeprecationWarning, match=f"`{new_name}`") as record:
        old = Seq2Seq(12, 9, **{old_name: value}, **SEQ2SEQ)
    assert record[0].filename == __file__
    new = _new(lambda: Seq2Seq(12, 9, **{new_name: value}, **SEQ2SEQ))
    assert old.get_config() | {"name": ""} == new.get_config() | {"name": ""}
    assert new.get_config()[new_name] == value and old_name not in new.get_config()
    old(IDS), new(IDS)
    old.set_weights(new.get_weights())
    np.testing.assert_array_equal(to_numpy(old(IDS)), to_numpy(new(IDS)))
    with pytest.raises(ValueError, match=f"Received: {old_name}="):
        Seq2Seq(12, 9, **{old_name: value, new_name: value + 1}, **SEQ2SEQ)
    config = new.get_config()
    config[old_name] = config.pop(new_name)  # what 0.1.0 and 0.2 wrote
    assert _new(lambda: Seq2Seq.from_config(config)).get_config()[new_name] == value


def test_seq2seq_old_sampling_mode():
    with pytest.warns(DeprecationWarning, match="`sampling_mode`"):
        old = Seq2Seq(12, 9, sampling_probability=0.5, scheduled_sampling_mode="argmax", **SEQ2SEQ)
    assert old.get_config()["sampling_mode"] == "argmax"
    assert old.decoder.rnn_layer.sampling_mode == "argmax"


def test_decoder_old_sampling_keywords():
    options = {"vocabulary_size": 9, "embedding_dim": 4, "units": 6}
    with pytest.warns(DeprecationWarning, match="sampling_probability"):
        old = Seq2SeqDecoder(
            scheduled_sampling=0.5,
            scheduled_sampling_mode="argmax",
            scheduled_sampling_excluded_tokens=[0, 2],
            **options,
        )
    new = _new(
        lambda: Seq2SeqDecoder(
            sampling_probability=0.5,
            sampling_mode="argmax",
            sampling_excluded_tokens=[0, 2],
            **options,
        )
    )
    assert old.get_config() | {"name": ""} == new.get_config() | {"name": ""}
    config = new.get_config()
    for key in ("sampling_probability", "sampling_mode", "sampling_excluded_tokens"):
        old_key = "scheduled_sampling" + key.removeprefix("sampling").replace("_probability", "")
        config[old_key] = config.pop(key)  # what 0.2 wrote
    loaded = _new(lambda: Seq2SeqDecoder.from_config(config))
    assert loaded.get_config() | {"name": ""} == new.get_config() | {"name": ""}
    with pytest.raises(ValueError, match=r"Received: scheduled_sampling=0.5"):
        Seq2SeqDecoder(scheduled_sampling=0.5, sampling_probability=0.2, **options)


# ---------------------------------------------------------------- a composed Seq2Seq
def _parts(**decoder_options):
    encoder = Seq2SeqEncoder(12, embedding_dim=4, units=3)  # bidirectional: 6 wide
    decoder = Seq2SeqDecoder(9, embedding_dim=4, units=6, **decoder_options)
    return encoder, decoder


def test_composed_equals_the_options_form_and_round_trips(tmp_path):
    options = Seq2Seq(12, 9, embedding_dim=4, units=6, encoder_units=3, oov_id=1)
    encoder, decoder = _parts()
    composed = _new(lambda: Seq2Seq(encoder=encoder, decoder=decoder, oov_id=1))
    assert composed.encoder is encoder and composed.decoder is decoder
    assert (composed.source_vocabulary_size, composed.target_vocabulary_size) == (12, 9)
    options.build(ANY), composed.build(ANY)
    composed.set_weights(options.get_weights())
    want = to_numpy(options(IDS))
    np.testing.assert_allclose(to_numpy(composed(IDS)), want, atol=1e-6)
    config = composed.get_config()
    assert {"encoder", "decoder", "start_id", "end_id", "oov_id"} <= set(config)
    assert "units" not in config  # the options are the parts'
    path = tmp_path / "composed.keras"
    composed.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(loaded.encoder, Seq2SeqEncoder) and loaded.oov_id == 1
    np.testing.assert_allclose(to_numpy(loaded(IDS)), want, atol=1e-6)
    result = loaded.generate(IDS["source_ids"])
    assert result["ids"].shape[0] == 2


def test_composed_excludes_its_ids_from_scheduled_sampling():
    encoder, decoder = _parts(sampling_probability=0.5)
    assert decoder.sampling_excluded_tokens == []
    Seq2Seq(encoder=encoder, decoder=decoder, start_id=4, end_id=5)
    assert decoder.sampling_excluded_tokens == [0, 4]
    options = Seq2Seq(12, 9, start_id=4, end_id=5, sampling_probability=0.5, **SEQ2SEQ)
    assert options.decoder.sampling_excluded_tokens == [0, 4]


@pytest.mark.parametrize(
    "make,error,match",
    [
        (lambda e, d: Seq2Seq(encoder=e), ValueError, r"give `decoder`.*decoder=None"),
        (lambda e, d: Seq2Seq(encoder=e, decoder="decoder"), TypeError, "decoder='decoder'"),
        (lambda e, d: Seq2Seq(encoder=e, decoder=d, units=8), ValueError, r"`units`.*units=8"),
        (
            lambda e, d: Seq2Seq(12, 10, encoder=e, decoder=d),
            ValueError,
            r"target_vocabulary_size=10, decoder.vocabulary_size=9",
        ),
        (
            lambda e, d: Seq2Seq(encoder=e, decoder=d, start_id=9),
            ValueError,
            "start_id",
        ),
        (
            lambda e, d: Seq2Seq(encoder=Seq2SeqEncoder(12, 4, 4), decoder=d),
            ValueError,
            r"decoder.units=6, encoder.units=4",
        ),
        (
            lambda e, d: Seq2Seq(
                encoder=Seq2SeqEncoder(12, 4, 6, rnn="gru", bidirectional=False),
                decoder=Seq2SeqDecoder(9, 4, 6, state_handover="copy"),
            ),
            ValueError,
            r"encoder.rnn='gru', decoder.rnn='lstm'",
        ),
    ],
    ids=["one-part", "not-a-part", "part-option", "vocabulary", "ids", "dot", "copy"],
)
def test_composed_refuses_parts_that_do_not_fit(make, error, match):
    encoder, decoder = _parts(score_mode="dot")
    with pytest.raises(error, match=match):
        make(encoder, decoder)
