"""Luong et al. (2015) attentional decoder step with input feeding."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_attention.cells.base_attention_cell import BaseAttentionCell
from keras_attention.functional.scores import matmul
from keras_attention.layers.base_attention import check_flag, get_identifier


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongAttentionCell(BaseAttentionCell):
    """One step of Luong's attentional decoder (attention *after* the recurrent step).

    - `s_t = cell(x_t, s_{t-1})` with `x_t = [y_{t-1}; h̃_{t-1}]` (input feeding, `h̃_0 = 0`) or
      `x_t = y_{t-1}` without;
    - `c_t` = attention from `s_t` over the memory;
    - output `h̃_t = act(W_c [s_t; c_t])`, `W_c` `[d_s + d_h, units]` (`attention_kernel`).

    State layout (flat list): the wrapped cell's states (`[h, c]` for `LSTMCell`), then `h̃_{t-1}`
    `[B, units]` when `input_feeding=True`.

    Args:
        cell: A Keras RNN cell (`LSTMCell`, `GRUCell`, `SimpleRNNCell`, `StackedRNNCells`, ...).
        attention: A `LuongAttention` or `AdditiveAttention` layer without `attention_units`;
            any score mode and alignment (local_monotonic uses the step index as `p_t`).
        units: Size of `h̃`. Defaults to `None` (the wrapped cell's output size).
        input_feeding: Feed `h̃_{t-1}` to the next step. Defaults to `True`.
        attention_activation: Activation of `h̃`; `None` reproduces tfa's `AttentionWrapper`
            (no activation), for migrating trained weights. Defaults to `"tanh"`.
        kernel_initializer: Initializer of `W_c`. Defaults to `"glorot_uniform"`.
        **kwargs: Base layer arguments.

    Example:

    >>> import numpy as np, keras
    >>> from keras_attention import AttentionRNN, LuongAttention
    >>> cell = LuongAttentionCell(keras.layers.LSTMCell(16), LuongAttention("general"))
    >>> outputs = AttentionRNN(cell)(np.ones((2, 5, 8)), np.ones((2, 7, 12)))
    >>> tuple(outputs.shape)
    (2, 5, 16)

    References:
        Luong, Pham, Manning. Effective Approaches to Attention-based Neural Machine
        Translation. EMNLP 2015, §3.3 (input feeding).
    """

    def __init__(
        self,
        cell: Any,
        attention: Any,
        units: int | None = None,
        input_feeding: bool = True,
        attention_activation: str | None = "tanh",
        kernel_initializer: Any = "glorot_uniform",
        **kwargs: Any,
    ) -> None:
        super().__init__(cell, attention, **kwargs)
        if units is not None and (
            isinstance(units, bool) or not isinstance(units, int) or units < 1
        ):
            raise ValueError(
                f"`units` must be a positive integer or None. Received: units={units!r}"
            )
        self.units = units
        self.input_feeding = check_flag("input_feeding", input_feeding)
        self.attention_activation = get_identifier(
            keras.activations.get, "attention_activation", attention_activation
        )
        self.kernel_initializer = get_identifier(
            keras.initializers.get, "kernel_initializer", kernel_initializer
        )

    @property
    def output_size(self) -> int:
        return self.units or self.cell_output_size

    def _extra_state_sizes(self) -> list:
        return [self.output_size] if self.input_feeding else []

    def _query_dim(self) -> int:
        return self.cell_output_size

    def _cell_input_dim(self, inputs_dim: int, memory_dim: int) -> int:
        return inputs_dim + (self.output_size if self.input_feeding else 0)

    def _build_own(self, inputs_shape, memory_shape) -> None:
        self.attention_kernel = self.add_weight(
            name="attention_kernel",
            shape=(self.cell_output_size + memory_shape[-1], self.output_size),
            initializer=self.kernel_initializer,
        )

    def step_projected(self, inputs, states, memory, position=None, training=None):
        n = len(self._cell_state_sizes)
        feed = states[n] if self.input_feeding else None
        hidden, new_states = self._cell_step(inputs, feed, states[:n], memory, training)
        context, alignment = self._attend(hidden, memory, position, training)
        output = matmul(ops.concatenate([hidden, context], axis=-1), self.attention_kernel)
        if self.attention_activation is not None:
            output = self.attention_activation(output)
        output = ops.cast(output, self.compute_dtype)  # float64 tanh is float32 on JAX/PyTorch
        if self.input_feeding:
            new_states = new_states + [output]
        return output, new_states, alignment

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "input_feeding": self.input_feeding,
                "attention_activation": None
                if self.attention_activation is None
                else keras.activations.serialize(self.attention_activation),
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config
