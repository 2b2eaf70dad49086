"""Validation of the builder's hyperparameters (shared by the encoder, decoder and model)."""

from __future__ import annotations

import numbers
from typing import Any

import keras

from keras_attention.layers.base_attention import check_flag

RNN_TYPES = ("lstm", "gru")
ATTENTION_TYPES = ("luong", "bahdanau", "monotonic", "location_sensitive")
HANDOVERS = ("dense", "copy", "none")


def positive_int(name: str, value: Any) -> int:
    """`value` as an int >= 1 (keras-tuner's numpy ints accepted), else a `ValueError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value!r}")
    return int(value)


def non_negative_int(name: str, value: Any) -> int:
    """`value` as an int >= 0 (numpy ints accepted), else a `ValueError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"`{name}` must be a non-negative integer. Received: {name}={value!r}")
    return int(value)


def rate(name: str, value: Any) -> float:
    """`value` as a float in [0, 1), else a `ValueError`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < 1:
        raise ValueError(f"`{name}` must be a number in [0, 1). Received: {name}={value!r}")
    return float(value)


def choice(name: str, value: Any, options: tuple) -> str:
    """`value` lower-cased if it is one of `options`, else a `ValueError` listing them."""
    if not isinstance(value, str) or value.lower() not in options:
        raise ValueError(f"`{name}` must be one of {options}. Received: {name}={value!r}")
    return value.lower()


def flag(name: str, value: Any) -> bool:
    """A boolean hyperparameter; keras-tuner's `hp.Choice([True, False])` gives 0/1."""
    return check_flag(name, value)


class ConfigLayer(keras.layers.Layer):
    """A layer whose config is its `CONFIG_KEYS` attributes, with the options the encoder and
    decoder share validated in one place."""

    CONFIG_KEYS: tuple = ()

    def _set_common(self, vocabulary_size, embedding_dim, units, rnn, num_layers, dropout):
        self.vocabulary_size = positive_int("vocabulary_size", vocabulary_size)
        self.embedding_dim = positive_int("embedding_dim", embedding_dim)
        self.units = positive_int("units", units)
        self.rnn = choice("rnn", rnn, RNN_TYPES)
        self.num_layers = positive_int("num_layers", num_layers)
        self.dropout = rate("dropout", dropout)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({key: getattr(self, key) for key in self.CONFIG_KEYS})
        return config
