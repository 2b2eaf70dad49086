"""The decoder of the seq2seq builder: embedding, attentional RNN, output projection."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_attention._deprecation import rename_config_key, take_renamed
from keras_attention._validation import (
    check_choice,
    check_flag,
    check_int,
    check_probability,
)
from keras_attention.cells import AttentionRNN, BahdanauAttentionCell, LuongAttentionCell
from keras_attention.cells.attention_rnn import embed_ids as embed
from keras_attention.decoding import make_step_fn
from keras_attention.layers import (
    AdditiveAttention,
    BahdanauMonotonicAttention,
    LocationSensitiveAttention,
    LuongAttention,
    LuongMonotonicAttention,
)
from keras_attention.models._dropout import HashedDropout
from keras_attention.models._options import ATTENTION_TYPES, HANDOVERS, ConfigLayer

_DEFAULTS = {
    "score_units": None,
    "sampling_probability": None,
    "sampling_mode": "sample",
    "sampling_excluded_tokens": None,
}


@keras.saving.register_keras_serializable(package="keras_attention")
class Seq2SeqDecoder(ConfigLayer):
    """Target ids (teacher forcing) + encoder memory → logits `[B, T, V]`.

    `Embedding(mask_zero=True)` → `AttentionRNN` over a `LuongAttentionCell` (global or local
    Luong attention, `dot`/`general`/`concat`, optional input feeding) or a
    `BahdanauAttentionCell` (additive attention before the step) wrapping `num_layers`
    LSTM/GRU cells → `Dense(V)`. The encoder's final states are handed over to every decoder
    layer: through a `Dense(units, tanh)` per state (`state_handover="dense"`, Bahdanau's
    `s_0 = tanh(W_s h_1)`), copied (`"copy"`, needs the encoder's state size to equal
    `units`), or not at all (`"none"`, zeros). Under a mixed dtype policy (`mixed_float16`,
    `mixed_bfloat16`) the projection `Dense(V)` computes in float32, so the logits are float32.

    Args:
        vocabulary_size: Target vocabulary size V (0 = padding).
        embedding_dim: Size of the target embeddings.
        units: Units of each decoder cell.
        rnn: `"lstm"` or `"gru"`. Defaults to `"lstm"`.
        num_layers: Number of stacked decoder cells. Defaults to `1`.
        attention: `"luong"`, `"bahdanau"`, `"monotonic"` (a `LuongAttentionCell` over
            `LuongMonotonicAttention` for `score_mode="general"` or `BahdanauMonotonicAttention`
            for `"concat"`, mode `"parallel"`, as tfa's monotonic mechanisms inside an
            `AttentionWrapper`) or `"location_sensitive"` (a `BahdanauAttentionCell` over a
            cumulative `LocationSensitiveAttention`, Tacotron 2's). Defaults to `"luong"`.
        score_mode: Luong score, `"dot"`, `"general"` or `"concat"` (ignored for Bahdanau).
            Defaults to `"general"`.
        alignment: Luong alignment, `"global"`, `"local_monotonic"` or `"local_predictive"`
            (ignored for Bahdanau). Defaults to `"global"`.
        window_radius: D of the local window. Defaults to `8`.
        score_units: Units of the additive / concat score (and of local-p's position
            network): the attention layer's `score_units`, U. Defaults to `None` (the query size).
            Called `attention_dim` up to 0.2.0: that keyword still works, with a
            `DeprecationWarning`, until 0.4.0, and configs saved with it load silently.
        input_feeding: Luong's input feeding of `h̃_{t-1}`. Defaults to `True`.
        state_handover: `"dense"`, `"copy"` or `"none"`. Defaults to `"dense"`.
        dropout: Dropout on the embeddings and before the projection. Defaults to `0`.
        sampling_probability: Scheduled sampling's initial probability in [0, 1], as
            `AttentionRNN(sampling_probability=...)` (the embedding and the projection feed
            the model's own tokens back in training). Defaults to `None` (off). Called
            `scheduled_sampling` up to 0.2.
        sampling_mode: `"sample"` or `"argmax"`, as `AttentionRNN`'s. Defaults to `"sample"`.
            Called `scheduled_sampling_mode` up to 0.2.
        sampling_excluded_tokens: Target ids scheduled sampling never feeds back, as
            `AttentionRNN`'s. Defaults to `None`; a `Seq2Seq` holding the decoder adds its
            padding id 0 and its `start_id` (a target never holds them). Called
            `scheduled_sampling_excluded_tokens` up to 0.2.
        **kwargs: Base layer arguments.

    The keywords of 0.2 (`attention_dim`, `scheduled_sampling`, `scheduled_sampling_mode`,
    `scheduled_sampling_excluded_tokens`) still work, with a `DeprecationWarning`, until 0.4.0;
    configs saved with them load silently.

    Example:

    >>> from keras_attention.models import Seq2Seq, Seq2SeqEncoder
    >>> encoder = Seq2SeqEncoder(12, embedding_dim=8, units=8)  # bidirectional: 16 wide
    >>> decoder = Seq2SeqDecoder(9, embedding_dim=8, units=16, score_mode="dot")
    >>> model = Seq2Seq(encoder=encoder, decoder=decoder, start_id=2, end_id=3)
    >>> model.target_vocabulary_size, model.decoder is decoder
    (9, True)
    """

    CONFIG_KEYS = (
        "vocabulary_size", "embedding_dim", "units", "rnn", "num_layers", "attention",
        "score_mode", "alignment", "window_radius", "score_units", "input_feeding",
        "state_handover", "dropout", "sampling_probability", "sampling_mode",
        "sampling_excluded_tokens",
    )  # fmt: skip

    #: The keywords (and config keys) of 0.2 and their names since (docs/design.md §9, Names).
    RENAMED = {
        "attention_dim": "score_units",
        "scheduled_sampling": "sampling_probability",
        "scheduled_sampling_mode": "sampling_mode",
        "scheduled_sampling_excluded_tokens": "sampling_excluded_tokens",
    }

    def __init__(
        self,
        vocabulary_size: int,
        embedding_dim: int,
        units: int,
        rnn: str = "lstm",
        num_layers: int = 1,
        attention: str = "luong",
        score_mode: str = "general",
        alignment: str = "global",
        window_radius: int = 8,
        score_units: int | None = None,
        input_feeding: bool = True,
        state_handover: str = "dense",
        dropout: float = 0.0,
        sampling_probability: float | None = None,
        sampling_mode: str = "sample",
        sampling_excluded_tokens: Any = None,
        **kwargs: Any,
    ) -> None:
        new = {
            "score_units": score_units,
            "sampling_probability": sampling_probability,
            "sampling_mode": sampling_mode,
            "sampling_excluded_tokens": sampling_excluded_tokens,
        }
        for old, name in self.RENAMED.items():
            new[name] = take_renamed(
                kwargs, "Seq2SeqDecoder", old, name, new[name], default=_DEFAULTS[name]
            )
        score_units, sampling_probability = new["score_units"], new["sampling_probability"]
        sampling_mode, sampling_excluded_tokens = (
            new["sampling_mode"],
            new["sampling_excluded_tokens"],
        )
        super().__init__(**kwargs)
        self._set_common(vocabulary_size, embedding_dim, units, rnn, num_layers, dropout)
        self.attention = check_choice("attention", attention, ATTENTION_TYPES)
        self.score_mode = score_mode
        self.alignment = alignment
        self.window_radius = check_int("window_radius", window_radius, minimum=0)
        self.score_units = (
            None if score_units is None else check_int("score_units", score_units, minimum=1)
        )
        self.input_feeding = check_flag("input_feeding", input_feeding)
        self.state_handover = check_choice("state_handover", state_handover, HANDOVERS)

        self.embedding = keras.layers.Embedding(
            self.vocabulary_size, self.embedding_dim, mask_zero=True, name="embedding"
        )
        self.dropout_layer = HashedDropout(self.dropout, name="dropout")
        cell_class = keras.layers.LSTMCell if self.rnn == "lstm" else keras.layers.GRUCell
        cells = [
            cell_class(self.units, name=f"{self.rnn}_cell_{i}") for i in range(self.num_layers)
        ]
        cell = cells[0] if len(cells) == 1 else keras.layers.StackedRNNCells(cells)
        self.cell = self._attention_cell(cell, score_mode, alignment)
        self.sampling_mode = check_choice("sampling_mode", sampling_mode, ("sample", "argmax"))
        # The initial value (the variable is `sampling_probability`, made at build).
        self._sampling_probability = check_probability(
            "sampling_probability", sampling_probability, allow_none=True
        )
        self.rnn_layer = AttentionRNN(
            self.cell,
            return_attention_scores=True,
            sampling_probability=self._sampling_probability,
            sampling_mode=self.sampling_mode,
            sampling_excluded_tokens=sampling_excluded_tokens,
            name="attention_rnn",
        )
        states_per_layer = 2 if self.rnn == "lstm" else 1
        self.bridges = []
        if self.state_handover == "dense":
            self.bridges = [
                keras.layers.Dense(self.units, activation="tanh", name=f"bridge_{i}")
                for i in range(self.num_layers * states_per_layer)
            ]
        # Under a mixed policy the vocabulary projection computes in float32 (its inputs are
        # cast), so logits, the loss's softmax and the searches' scores are float32
        # (docs/design.md §6); otherwise it follows the policy like every other layer.
        mixed = self.dtype_policy.compute_dtype in ("float16", "bfloat16")
        self.projection = keras.layers.Dense(
            self.vocabulary_size, dtype="float32" if mixed else None, name="projection"
        )

    def _attention_cell(self, cell, score_mode: str, alignment: str):
        """The attention layer of `attention` (and `score_mode`) around `cell`, in its cell:
        `LuongAttentionCell` (Luong, monotonic) or `BahdanauAttentionCell` (additive,
        location-sensitive)."""
        if self.attention == "luong":
            attention_layer = LuongAttention(
                score_mode=score_mode,
                alignment=alignment,
                window_radius=self.window_radius,
                score_units=self.score_units,
                name="luong_attention",
            )
            return LuongAttentionCell(
                cell, attention_layer, input_feeding=self.input_feeding, name="attention_cell"
            )
        if self.attention == "monotonic":
            if score_mode == "general":
                attention_layer = LuongMonotonicAttention(name="monotonic_attention")
            elif score_mode == "concat":
                attention_layer = BahdanauMonotonicAttention(
                    score_units=self.score_units, name="monotonic_attention"
                )
            else:
                raise ValueError(
                    "attention='monotonic' takes score_mode='general' (LuongMonotonicAttention) "
                    f"or 'concat' (BahdanauMonotonicAttention). Received: score_mode={score_mode!r}"
                )
            return LuongAttentionCell(
                cell, attention_layer, input_feeding=self.input_feeding, name="attention_cell"
            )
        if self.attention == "location_sensitive":
            attention_layer = LocationSensitiveAttention(
                score_units=self.score_units, cumulative=True, name="location_sensitive_attention"
            )
            return BahdanauAttentionCell(cell, attention_layer, name="attention_cell")
        attention_layer = AdditiveAttention(score_units=self.score_units, name="additive_attention")
        return BahdanauAttentionCell(cell, attention_layer, name="attention_cell")

    @property
    def sampling_probability(self):
        """The scheduled-sampling probability (a non-trainable scalar variable, made when the
        decoder is built), or `None` when scheduled sampling is off."""
        return self.rnn_layer.sampling_probability

    @property
    def sampling_excluded_tokens(self) -> list:
        return list(self.rnn_layer.sampling_excluded_tokens)

    def _exclude_from_sampling(self, tokens) -> None:
        """Add `tokens` to the ids scheduled sampling never feeds back (`Seq2Seq` adds its
        padding id and `start_id`, which only it knows)."""
        excluded = sorted(set(self.rnn_layer.sampling_excluded_tokens) | set(tokens))
        self.rnn_layer.sampling_excluded_tokens = tuple(excluded)

    def get_config(self) -> dict:
        config = super().get_config()
        config["sampling_probability"] = self._sampling_probability
        return config

    @classmethod
    def from_config(cls, config: dict):
        # Configs saved up to 0.2 say `attention_dim`, `scheduled_sampling`, ...: the same
        # options, loaded silently.
        for old, new in cls.RENAMED.items():
            config = rename_config_key(config, old, new)
        return super().from_config(config)

    def build(self, target_ids_shape, memory_shape) -> None:
        target_shape, memory_shape = tuple(target_ids_shape), tuple(memory_shape)
        self.embedding.build(target_shape)
        self.rnn_layer.build((*target_shape, self.embedding_dim), memory_shape)
        for bridge in self.bridges:  # the encoder's final states have the memory's size
            bridge.build((None, memory_shape[-1]))
        self.projection.build((None, None, self.cell.output_size))

    def initial_state(self, encoder_states, batch_size):
        """The wrapped cells' initial states (flat) from the encoder's final states."""
        if self.state_handover == "none" or not encoder_states:
            dtype = self.cell.compute_dtype
            return [ops.zeros((batch_size, n), dtype) for n in self.cell.cell_state_sizes]
        n = len(encoder_states)
        if self.state_handover == "copy":
            size = encoder_states[0].shape[-1]
            if size is not None and size != self.units:
                raise ValueError(
                    "`state_handover='copy'` needs the encoder's final state size to equal the "
                    f"decoder's `units`. Received: encoder state size {size}, units={self.units} "
                    "(use state_handover='dense')"
                )
            return [encoder_states[i % n] for i in range(self.num_layers * n)]
        return [bridge(encoder_states[i % n]) for i, bridge in enumerate(self.bridges)]

    def call(
        self,
        target_ids,
        memory,
        memory_mask=None,
        encoder_states=None,
        training=None,
        return_attention_scores=False,
    ):
        mask = ops.not_equal(target_ids, 0)
        states = self.initial_state(encoder_states or [], ops.shape(target_ids)[0])
        feed_back = {"embedding": self.embedding}
        if self.dropout and training:
            x = self.dropout_layer(embed(self.embedding, target_ids), training=training)
        else:  # the ids themselves: the fused decoder may fold its input kernel into the table
            x = ops.cast(target_ids, "int32")
        if self._sampling_probability is not None:
            feed_back["output_layer"] = self.projection
        outputs, alignments = self.rnn_layer(
            x,
            memory,
            memory_mask=memory_mask,
            initial_state=states,
            mask=mask,
            training=training,
            **feed_back,
        )
        logits = self.projection(self.dropout_layer(outputs, training=training))
        return (logits, alignments) if return_attention_scores else logits

    def make_step_fn(self, memory, memory_mask=None, beam_width: int = 1):
        """A `keras_attention.decoding` step function over this decoder (inference mode)."""
        return make_step_fn(
            self.cell, self.embedding, self.projection, memory, memory_mask, beam_width
        )
