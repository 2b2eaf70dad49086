"""Luong et al. (2015) attentional decoder step with input feeding."""

from __future__ import annotations

import copy
from typing import Any

import keras
from keras import ops

from keras_attention._deprecation import take_renamed
from keras_attention._validation import check_flag, is_integer
from keras_attention.cells.base_attention_cell import BaseAttentionCell
from keras_attention.functional.scores import matmul
from keras_attention.layers.base_attention import get_identifier


def _check_sizes(sizes: Any, count: int, name: str) -> Any:
    """The size(s) of h̃: None, a positive int (one attention), or one positive int per
    attention. `name` is the argument the user passed (`attention_units`, or an old name)."""

    def positive(value: Any) -> bool:
        return is_integer(value) and value >= 1

    if sizes is None:
        return None
    if isinstance(sizes, (list, tuple)):
        if len(sizes) != count or not all(positive(u) for u in sizes):
            raise ValueError(
                f"`{name}` as a list must hold one positive integer per attention layer "
                f"({count}). Received: {name}={sizes!r}"
            )
        return [int(u) for u in sizes]
    if not positive(sizes):
        raise ValueError(f"`{name}` must be a positive integer or None. Received: {name}={sizes!r}")
    if count > 1:
        raise ValueError(
            f"With {count} attention layers `{name}` must be a list of {count} sizes (one "
            f"`W_c` each) or None. Received: {name}={sizes!r}"
        )
    return int(sizes)


#: The cell's old names of h̃'s size: `units` (0.1.0), `attention_layer_size` (0.2).
_OLD_SIZE_NAMES = ("units", "attention_layer_size")


def _take_old_sizes(kwargs: dict, attention_units: Any) -> tuple:
    """`(size, name)`: an old keyword for h̃'s size (popped from `kwargs`, with a
    `DeprecationWarning`) or `attention_units`, and the name the user passed."""
    given = [old for old in _OLD_SIZE_NAMES if old in kwargs]
    if len(given) > 1:
        raise ValueError(
            "`units` and `attention_layer_size` are both old names of `attention_units`: pass "
            f"only attention_units. Received: units={kwargs['units']!r}, "
            f"attention_layer_size={kwargs['attention_layer_size']!r}"
        )
    if not given:
        return attention_units, "attention_units"
    size = take_renamed(
        kwargs,
        "LuongAttentionCell",
        given[0],
        "attention_units",
        attention_units,
        note="the size of h̃ is now called `attention_units`, as on LuongAttention",
        stacklevel=3,
    )
    return size, given[0]


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongAttentionCell(BaseAttentionCell):
    """One step of Luong's attentional decoder (attention *after* the recurrent step).

    - `s_t = cell(x_t, s_{t-1})` with `x_t = [y_{t-1}; h̃_{t-1}]` (input feeding, `h̃_0 = 0`) or
      `x_t = y_{t-1}` without;
    - `c_t` = attention from `s_t` over the memory;
    - the attentional vector `h̃_t = act(W_c [s_t; c_t])`, `W_c`
      `[d_s + d_h, attention_units]` (`attention_kernel`), with `use_attention_bias=True`
      `h̃_t = act(W_c [s_t; c_t] + b_c)` (`attention_bias`, initially 0; one per attention
      layer, `attention_bias_0`, … with several), or with `attention_layer=False` the context
      itself, `h̃_t = c_t`;
    - output `h̃_t`, or with `output_attention=False` the cell output `s_t` (`h̃_t` is still
      fed to the next step).

    Several attention layers `attention=[a_1, …, a_n]` all attend from `s_t` over the same
    memory, each with its own `W_c^k` (`attention_kernel_0`, `attention_kernel_1`, …, sizes
    `attention_units=[n_1, …, n_n]`):
    `h̃_t = [act(W_c^1 [s_t; c^1_t]); …; act(W_c^n [s_t; c^n_t])]`, or `[c^1_t; …; c^n_t]`
    without attention layer. The attention weights the step returns are then the mean of the n
    layers' weights (a distribution over the memory, `[B, S]`, so that `AttentionRNN`, the
    searches and the plots work unchanged).

    These are the options of TensorFlow Addons' `AttentionWrapper`: its
    `attention_layer_size` is `attention_units` here (the name `LuongAttention` gives h̃'s size;
    an int or a list; tfa's `attention_layer_size=None` is `attention_layer=False` here, while
    `None` here means the default size),
    `output_attention`, a list of mechanisms ↔ a list of layers; its `attention_layer` has no
    activation (`attention_activation=None`) and it always feeds the attention
    (`input_feeding=True`). See docs/migrating-from-tfa.md.

    State layout (flat list): the wrapped cell's states (`[h, c]` for `LSTMCell`), then `h̃_{t-1}`
    `[B, attention_size]` when `input_feeding=True`, then, for monotonic or location-sensitive
    attention layers, their previous weights `[B, S]` (see `BaseAttentionCell`).

    Args:
        cell: A Keras RNN cell (`LSTMCell`, `GRUCell`, `SimpleRNNCell`, `StackedRNNCells`, ...).
        attention: A `LuongAttention` or `AdditiveAttention` layer without `attention_units`
            (any score mode and alignment; local_monotonic uses the step index as `p_t`), or a
            list of them.
        attention_units: Size of `h̃`: an int (one attention layer) or a list with one
            size per attention layer. Not with `attention_layer=False`. Defaults to `None` (the
            wrapped cell's output size, for each attention layer). Its old names `units=`
            (0.1.0) and `attention_layer_size=` (0.2) are still accepted, with a
            `DeprecationWarning`, until 0.4.0 (and silently in old configs, also after that).
        input_feeding: Feed `h̃_{t-1}` to the next step. Defaults to `True`.
        attention_activation: Activation of `h̃`; `None` reproduces tfa's `AttentionWrapper`
            (no activation), for migrating trained weights. Unused without attention layer.
            Defaults to `"tanh"`.
        kernel_initializer: Initializer of `W_c`. Defaults to `"glorot_uniform"`.
        attention_layer: Whether `h̃` is `act(W_c [s; c])` (`True`) or the context `c` itself.
            Defaults to `True`.
        output_attention: Whether the cell outputs `h̃_t` (`True`) or `s_t`; needs
            `input_feeding=True` when `False` (the attention would reach nothing).
            Defaults to `True`.
        use_attention_bias: Learn a bias `b_c` in `h̃ = act(W_c [s; c] + b_c)` (OpenNMT-py's
            `linear_out` has one; tfa's attention layer has none). Needs
            `attention_layer=True`. Defaults to `False`.
        **kwargs: Base layer arguments.

    Example:

    >>> import numpy as np, keras
    >>> from keras_attention import AdditiveAttention, AttentionRNN, LuongAttention
    >>> cell = LuongAttentionCell(keras.layers.LSTMCell(16), LuongAttention("general"))
    >>> outputs = AttentionRNN(cell)(np.ones((2, 5, 8)), np.ones((2, 7, 12)))
    >>> tuple(outputs.shape)
    (2, 5, 16)
    >>> two = LuongAttentionCell(keras.layers.LSTMCell(16),
    ...     [LuongAttention("general"), AdditiveAttention(score_units=4)],
    ...     attention_units=[6, 10])
    >>> tuple(AttentionRNN(two)(np.ones((2, 5, 8)), np.ones((2, 7, 12))).shape)
    (2, 5, 16)

    References:
        Luong, Pham, Manning. Effective Approaches to Attention-based Neural Machine
        Translation. EMNLP 2015, §3.3 (input feeding).
    """

    def __init__(
        self,
        cell: Any,
        attention: Any,
        attention_units: int | list[int] | None = None,
        input_feeding: bool = True,
        attention_activation: str | None = "tanh",
        kernel_initializer: Any = "glorot_uniform",
        attention_layer: bool = True,
        output_attention: bool = True,
        use_attention_bias: bool = False,
        **kwargs: Any,
    ) -> None:
        sizes, name = _take_old_sizes(kwargs, attention_units)
        super().__init__(cell, attention, **kwargs)
        self.attention_units = _check_sizes(sizes, len(self.attentions), name)
        self.input_feeding = check_flag("input_feeding", input_feeding)
        self.attention_layer = check_flag("attention_layer", attention_layer)
        self.output_attention = check_flag("output_attention", output_attention)
        self.use_attention_bias = check_flag("use_attention_bias", use_attention_bias)
        if self.use_attention_bias and not self.attention_layer:
            raise ValueError(
                "`use_attention_bias` is a bias of the attention layer W_c: without it "
                "(attention_layer=False) h̃ is the context. Received: use_attention_bias=True, "
                "attention_layer=False"
            )
        if not self.attention_layer and self.attention_units is not None:
            raise ValueError(
                "Without attention layer (attention_layer=False) h̃ is the context, whose "
                f"size is the memory's: give no `{name}`. Received: {name}={sizes!r}"
            )
        if not self.output_attention and not self.input_feeding:
            raise ValueError(
                "output_attention=False outputs s_t, so the attention only reaches the next "
                "step through input feeding: it needs input_feeding=True. Received: "
                "output_attention=False, input_feeding=False"
            )
        self.attention_activation = get_identifier(
            keras.activations.get, "attention_activation", attention_activation
        )
        self.kernel_initializer = get_identifier(
            keras.initializers.get, "kernel_initializer", kernel_initializer
        )

    # ---------------------------------------------------------------- sizes
    def _layer_sizes(self) -> list:
        """The output size of each `W_c`."""
        if isinstance(self.attention_units, list):
            return list(self.attention_units)
        return [self.attention_units or self.cell_output_size] * len(self.attentions)

    @property
    def attention_size(self) -> int:
        """Size of `h̃` (what input feeding feeds): the sum of `attention_units` (each
        defaulting to the cell's output size), or without attention layer the number of
        attention layers times the memory size."""
        if self.attention_layer:
            return sum(self._layer_sizes())
        if self._memory_dim is None:
            raise ValueError(
                f"{self.name}: with attention_layer=False the size of h̃ is the memory's, "
                "unknown until the cell is built or a memory prepared (`prepare_memory`). "
                "Received: an unbuilt cell"
            )
        return len(self.attentions) * self._memory_dim

    @property
    def output_size(self) -> int:
        return self.attention_size if self.output_attention else self.cell_output_size

    def _extra_state_sizes(self) -> list:
        return [self.attention_size] if self.input_feeding else []

    def _query_dim(self) -> int:
        return self.cell_output_size

    def _cell_input_dim(self, inputs_dim: int, memory_dim: int) -> int:
        return inputs_dim + (self.attention_size if self.input_feeding else 0)

    def _build_own(self, inputs_shape, memory_shape) -> None:
        if not self.attention_layer:
            return
        rows = self.cell_output_size + memory_shape[-1]
        sizes = self._layer_sizes()
        if len(sizes) == 1:  # the name of a single kernel is that of checkpoints before lists
            self.attention_kernel = self.add_weight(
                name="attention_kernel", shape=(rows, sizes[0]), initializer=self.kernel_initializer
            )
        else:
            self.attention_kernels = [
                self.add_weight(
                    name=f"attention_kernel_{i}",
                    shape=(rows, size),
                    initializer=self.kernel_initializer,
                )
                for i, size in enumerate(sizes)
            ]
        if self.use_attention_bias:  # after the kernels: older checkpoints are unchanged
            names = (
                ["attention_bias"]
                if len(sizes) == 1
                else [f"attention_bias_{i}" for i in range(len(sizes))]
            )
            self.attention_biases = [
                self.add_weight(name=name, shape=(size,), initializer="zeros")
                for name, size in zip(names, sizes)
            ]
            if len(sizes) == 1:
                self.attention_bias = self.attention_biases[0]

    @property
    def attention_layer_kernels(self) -> list:
        """The `W_c` of each attention layer, in order (tfa's `_attention_layers/{i}/kernel`);
        empty without an attention layer (`attention_layer=False`) or before the cell is built.
        Read-only: the variables themselves, to read or `assign`."""
        if not self.attention_layer or not self.built:
            return []
        return self._kernels()

    def _kernels(self) -> list:
        """The `W_c` of each attention layer, in order."""
        if len(self.attentions) == 1:
            return [self.attention_kernel]
        return list(self.attention_kernels)

    # ---------------------------------------------------------------- stepping
    def step_projected(self, inputs, states, memory, position=None, training=None):
        n = len(self._cell_state_sizes)
        states, attention_states = self._split_states(states)
        feed = states[n] if self.input_feeding else None
        hidden, new_states = self._cell_step(inputs, feed, states[:n], memory, training)
        results, attention_states = self._attend_each(
            hidden, memory, position, training, attention_states
        )
        if self.attention_layer:
            parts = [
                matmul(ops.concatenate([hidden, context], axis=-1), kernel)
                for (context, _), kernel in zip(results, self._kernels())
            ]
            if self.use_attention_bias:
                parts = [
                    part + ops.cast(bias, part.dtype)
                    for part, bias in zip(parts, self.attention_biases)
                ]
        else:
            parts = [context for context, _ in results]
        attentional = parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=-1)
        if self.attention_layer and self.attention_activation is not None:
            attentional = self.attention_activation(attentional)
        # float64 tanh is float32 on JAX/PyTorch; contexts come in the memory's dtype.
        attentional = ops.cast(attentional, self.compute_dtype)
        if self.input_feeding:
            new_states = new_states + [attentional]
        new_states = new_states + attention_states
        output = attentional if self.output_attention else hidden
        return output, new_states, self._combine_weights([w for _, w in results])

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "attention_units": self.attention_units,
                "input_feeding": self.input_feeding,
                "attention_activation": None
                if self.attention_activation is None
                else keras.activations.serialize(self.attention_activation),
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "attention_layer": self.attention_layer,
                "output_attention": self.output_attention,
                "use_attention_bias": self.use_attention_bias,
            }
        )
        return config

    @classmethod
    def from_config(cls, config: dict):
        # Configs saved by 0.1.0 say `units`, by 0.2 `attention_layer_size`: the same size,
        # loaded silently. A config edited under an old name beside the new one (a saved
        # config updated by hand, as tests/compat/tfa do) means the old name's value.
        config = copy.copy(config)
        for old in _OLD_SIZE_NAMES:
            if old in config:
                config["attention_units"] = config.pop(old)
        return super().from_config(config)
