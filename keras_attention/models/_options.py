"""The builder's option names and the config layer the encoder and decoder share (the checks
themselves are the validation floor's, `keras_attention._validation`)."""

from __future__ import annotations

import keras

from keras_attention._validation import check_choice, check_int, check_rate

RNN_TYPES = ("lstm", "gru")
ATTENTION_TYPES = ("luong", "bahdanau", "monotonic", "location_sensitive")
HANDOVERS = ("dense", "copy", "none")


class ConfigLayer(keras.layers.Layer):
    """A layer whose config is its `CONFIG_KEYS` attributes, with the options the encoder and
    decoder share validated in one place."""

    CONFIG_KEYS: tuple = ()

    def _set_common(self, vocabulary_size, embedding_dim, units, rnn, num_layers, dropout):
        self.vocabulary_size = check_int("vocabulary_size", vocabulary_size, minimum=1)
        self.embedding_dim = check_int("embedding_dim", embedding_dim, minimum=1)
        self.units = check_int("units", units, minimum=1)
        self.rnn = check_choice("rnn", rnn, RNN_TYPES)
        self.num_layers = check_int("num_layers", num_layers, minimum=1)
        self.dropout = check_rate("dropout", dropout)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({key: getattr(self, key) for key in self.CONFIG_KEYS})
        return config
