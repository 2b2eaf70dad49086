"""The encoder of the seq2seq builder: embedding, (bi)directional RNN stack, final states."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_attention._validation import check_flag
from keras_attention.cells.attention_rnn import embed_ids as embed
from keras_attention.models._dropout import HashedDropout
from keras_attention.models._options import ConfigLayer


@keras.saving.register_keras_serializable(package="keras_attention")
class Seq2SeqEncoder(ConfigLayer):
    """Source ids → memory `[B, S, d_h]`, its mask and the final RNN states.

    `Embedding(mask_zero=True)` (id 0 is padding), then `num_layers` recurrent layers
    (`Bidirectional` when `bidirectional`), each returning its whole sequence; the last one
    also returns its final states, which `Seq2SeqDecoder` hands over to the decoder. For a
    bidirectional layer the forward and backward final states are concatenated (`[h_f; h_b]`,
    and `[c_f; c_b]` for LSTM), so `d_h = 2 * units`.

    Args:
        vocabulary_size: Source vocabulary size (ids `0 … vocabulary_size − 1`, 0 = padding).
        embedding_dim: Size of the token embeddings.
        units: Units of each recurrent layer (per direction).
        rnn: `"lstm"` or `"gru"`. Defaults to `"lstm"`.
        num_layers: Number of stacked recurrent layers. Defaults to `1`.
        bidirectional: Read the source in both directions. Defaults to `True`.
        dropout: Dropout rate on the embeddings and between recurrent layers. Defaults to `0`.
        **kwargs: Base layer arguments.

    Call arguments:
        source_ids: Int `[B, S]`, 0 for padding.
        training: Whether dropout is active.

    Returns:
        `(memory [B, S, d_h], mask [B, S] bool, states)`, `states` a list of `[B, d_h]`
        (`[h, c]` for LSTM, `[h]` for GRU).
    """

    CONFIG_KEYS = (
        "vocabulary_size", "embedding_dim", "units", "rnn", "num_layers", "bidirectional",
        "dropout",
    )  # fmt: skip

    def __init__(
        self,
        vocabulary_size: int,
        embedding_dim: int,
        units: int,
        rnn: str = "lstm",
        num_layers: int = 1,
        bidirectional: bool = True,
        dropout: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._set_common(vocabulary_size, embedding_dim, units, rnn, num_layers, dropout)
        self.bidirectional = check_flag("bidirectional", bidirectional)
        self.embedding = keras.layers.Embedding(
            self.vocabulary_size, self.embedding_dim, mask_zero=True, name="embedding"
        )
        self.dropout_layer = HashedDropout(self.dropout, name="dropout")
        self.rnn_layers = []
        for i in range(self.num_layers):
            last = i == self.num_layers - 1
            rnn_class = keras.layers.LSTM if self.rnn == "lstm" else keras.layers.GRU
            layer = rnn_class(
                self.units, return_sequences=True, return_state=last, name=f"{self.rnn}_{i}"
            )
            if self.bidirectional:
                layer = keras.layers.Bidirectional(layer, name=f"bidirectional_{i}")
            self.rnn_layers.append(layer)

    @property
    def output_dim(self) -> int:
        """`d_h`, the size of the memory and of each final state."""
        return self.units * (2 if self.bidirectional else 1)

    @property
    def num_states(self) -> int:
        return 2 if self.rnn == "lstm" else 1

    def build(self, source_shape) -> None:
        self.embedding.build(source_shape)
        shape = (*tuple(source_shape), self.embedding_dim)
        for layer in self.rnn_layers:
            layer.build(shape)
            shape = (*shape[:-1], self.output_dim)

    def call(self, source_ids, training=None):
        mask = ops.not_equal(source_ids, 0)
        x = self.dropout_layer(embed(self.embedding, source_ids), training=training)
        states = []
        for i, layer in enumerate(self.rnn_layers):
            if i:
                x = self.dropout_layer(x, training=training)
            result = layer(x, mask=mask, training=training)
            if i == len(self.rnn_layers) - 1:
                x, states = result[0], list(result[1:])
            else:
                x = result
        if self.bidirectional:  # [fw states..., bw states...] -> [fw; bw] per state
            n = self.num_states
            states = [ops.concatenate([f, b], axis=-1) for f, b in zip(states[:n], states[n:])]
        return x, mask, states

    def compute_mask(self, source_ids, mask=None):
        return None
