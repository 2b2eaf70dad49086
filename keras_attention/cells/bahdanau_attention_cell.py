"""Bahdanau et al. (2014) attentional decoder step: attention *before* the recurrent step."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_attention.cells.base_attention_cell import BaseAttentionCell


@keras.saving.register_keras_serializable(package="keras_attention")
class BahdanauAttentionCell(BaseAttentionCell):
    """One step of Bahdanau's decoder.

    - `c_t` = attention from the previous state `s_{t-1}` over the memory;
    - `s_t = cell([y_{t-1}; c_t], s_{t-1})`;
    - output `[s_t; c_t]` (put a `Dense` on top as the readout).

    The query `s_{t-1}` is the wrapped cell's hidden state `h` (the first state; for
    `StackedRNNCells` the top cell's). State layout (flat list): the wrapped cell's states,
    then, for monotonic or location-sensitive attention, its previous weights `[B, S]`.

    Args:
        cell: A Keras RNN cell (`GRUCell` as in the paper, `LSTMCell`, `StackedRNNCells`, ...).
        attention: An `AdditiveAttention` (the paper's) or `LuongAttention` layer without
            `attention_units`.
        **kwargs: Base layer arguments.

    Example:

    >>> import numpy as np, keras
    >>> from keras_attention import AdditiveAttention, AttentionRNN
    >>> cell = BahdanauAttentionCell(keras.layers.GRUCell(16), AdditiveAttention(score_units=10))
    >>> outputs = AttentionRNN(cell)(np.ones((2, 5, 8)), np.ones((2, 7, 12)))
    >>> tuple(outputs.shape)  # [s_t; c_t]
    (2, 5, 28)

    References:
        Bahdanau, Cho, Bengio. Neural Machine Translation by Jointly Learning to Align and
        Translate. ICLR 2015, appendix A.
    """

    def __init__(self, cell: Any, attention: Any, **kwargs: Any) -> None:
        if isinstance(attention, (list, tuple)):
            raise ValueError(
                "BahdanauAttentionCell takes one attention layer (LuongAttentionCell takes a "
                f"list). Received: attention={attention!r}"
            )
        super().__init__(cell, attention, **kwargs)

    @property
    def output_size(self) -> int:
        return self.cell_output_size + self._memory_dim

    def _query_dim(self) -> int:
        return self._cell_state_sizes[self._hidden_index]

    def _cell_input_dim(self, inputs_dim: int, memory_dim: int) -> int:
        return inputs_dim + memory_dim

    def _build_own(self, inputs_shape, memory_shape) -> None:
        self._memory_dim = int(memory_shape[-1])

    def step_projected(self, inputs, states, memory, position=None, training=None):
        states, attention_states = self._split_states(states)
        context, weights, attention_states = self._attend(
            states[self._hidden_index], memory, position, training, attention_states
        )
        hidden, new_states = self._cell_step(inputs, context, states, memory, training)
        return ops.concatenate([hidden, context], axis=-1), new_states + attention_states, weights
