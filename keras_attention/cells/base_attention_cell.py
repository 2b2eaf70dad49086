"""What the attentional cells share: the wrapped cell, the attention, the state layout."""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

import keras
from keras import ops

from keras_attention._validation import check_rank
from keras_attention.functional.scores import matmul
from keras_attention.layers.base_attention import BaseAttention, PreparedMemory
from keras_attention.layers.recurrent_attention import RecurrentAttention


class CellMemory(NamedTuple):
    """The memory as a cell's `step` takes it (`BaseAttentionCell.prepare_memory`).

    Attributes:
        attentions: One `PreparedMemory` per attention layer, in the order of `attentions`.
        feed_kernel: The rows of a fused `LSTMCell`'s kernel that see the fed-back vector,
            sliced once per sequence, or `None` (another cell, or not built yet).
        noises: Empty, or one entry per attention layer: the random inputs of every step drawn
            before the time loop (`BaseAttentionCell.draw_step_noise`): monotonic noise
            `[T, B, S]`, the weights' dropout masks `[T, B, 1, S or 2D + 1]`, or `None` for a
            layer that draws none. Step t reads row `position`.
    """

    attentions: tuple[PreparedMemory, ...]
    feed_kernel: Any
    noises: tuple = ()

    @property
    def value(self):
        """The encoder outputs `[B, S, d_h]` (the first attention's values)."""
        return self.attentions[0].value


class BaseAttentionCell(keras.layers.Layer):
    """Base of `BahdanauAttentionCell` and `LuongAttentionCell`; not meant to be used directly.

    The state is a flat list: the wrapped cell's states, flattened (`[h, c]` for `LSTMCell`,
    `[h]` for `GRUCell`, all layers in order for `StackedRNNCells`), then the cell's own extra
    states (`_extra_state_sizes`), then the states of the attention layers that carry one
    (monotonic and location-sensitive attention: their previous weights `[B, S]`, S the memory
    length, in the order of the layers; `None` in `state_size`, made from the memory by
    `get_initial_state(batch_size, memory)`). One decoder step is
    `step(inputs, states, memory, position)` with `memory` made once per sequence by
    `prepare_memory`.
    """

    def __init__(self, cell: Any, attention: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(cell, keras.layers.Layer) or not hasattr(cell, "state_size"):
            raise TypeError(
                "`cell` must be a Keras RNN cell: a layer with `state_size`, such as "
                f"keras.layers.LSTMCell or GRUCell. Received: cell={cell!r}"
            )
        layers = list(attention) if isinstance(attention, (list, tuple)) else [attention]
        if not layers:
            raise ValueError(
                "`attention` must be an attention layer or a non-empty list of them. "
                f"Received: attention={attention!r}"
            )
        for i, layer in enumerate(layers):
            name = "attention" if not isinstance(attention, (list, tuple)) else f"attention[{i}]"
            if not isinstance(layer, BaseAttention):
                raise TypeError(
                    f"`{name}` must be a keras_attention AdditiveAttention or LuongAttention "
                    f"layer. Received: {name}={layer!r}"
                )
            attention_units = getattr(layer, "attention_units", None)  # LuongAttention's h̃
            if attention_units:
                raise ValueError(
                    f"{type(self).__name__} computes the attentional output itself; give the "
                    f"attention layer no `attention_units`. Received: "
                    f"{name}.attention_units={attention_units}"
                )
        if len(set(map(id, layers))) != len(layers):
            raise ValueError(
                "`attention` lists the same layer more than once; give each entry its own "
                f"layer. Received: attention={attention!r}"
            )
        self.cell = cell
        # A list stays a list (also in the config): several attention layers over one memory.
        self.attention = list(attention) if isinstance(attention, (list, tuple)) else attention
        self._memory_dim = None  # d_h, known once the cell is built or a memory prepared
        template = cell.state_size
        self._state_template = list(template) if isinstance(template, (list, tuple)) else [template]
        self._cell_state_sizes = [int(s) for s in keras.tree.flatten(self._state_template)]
        # The wrapped cell's hidden state h (the top cell's for StackedRNNCells): Bahdanau's query.
        last = self._state_template[-1] if isinstance(cell, keras.layers.StackedRNNCells) else None
        self._hidden_index = (
            len(self._cell_state_sizes) - len(keras.tree.flatten(last)) if last is not None else 0
        )

    @property
    def attentions(self) -> list:
        """The attention layers as a list (one entry unless `attention` was a list)."""
        return list(self.attention) if isinstance(self.attention, list) else [self.attention]

    # ---------------------------------------------------------------- state layout
    @property
    def cell_state_sizes(self) -> list:
        """The sizes of the wrapped cell's states, flat (`[h, c]` of an `LSTMCell`, `[h]` of a
        `GRUCell`, every layer in order for `StackedRNNCells`): the first entries of
        `state_size`, and what an initial state for the wrapped cell alone must hold."""
        return list(self._cell_state_sizes)

    @property
    def cell_output_size(self) -> int:
        return int(self.cell.output_size)

    def _extra_state_sizes(self) -> list:
        return []

    @property
    def state_size(self) -> list:
        """Sizes of the flat state: the wrapped cell's states, the extra ones, then `None` for
        each `[B, S]` attention state (its size is the memory length)."""
        attention = [None] * self._attention_state_count()
        return self._cell_state_sizes + self._extra_state_sizes() + attention

    def _attention_state_count(self) -> int:
        """How many `[B, S]` states the attention layers carry (monotonic, location-sensitive)."""
        return sum(a.state_count for a in self.attentions if isinstance(a, RecurrentAttention))

    def _initial_attention_states(self, batch_size, memory) -> list:
        """The attention layers' states before the first step (their weights `[B, S]`)."""
        if not self._attention_state_count():
            return []
        if memory is None:
            raise ValueError(
                f"{self.name}: its attention carries the previous weights [batch, "
                "memory_steps] in the state, so the initial state needs the memory: "
                "get_initial_state(batch_size, memory) / complete_initial_state(state, "
                "batch_size, memory) with the encoder outputs. Received: memory=None"
            )
        if isinstance(memory, CellMemory):  # a memory from `prepare_memory`
            memory = memory.value
        steps = ops.shape(memory)[1]
        states = []
        for layer in self.attentions:
            if isinstance(layer, RecurrentAttention):
                states.extend(layer.initial_attention_state(batch_size, steps))
        return [ops.cast(s, self.compute_dtype) for s in states]

    def get_initial_state(self, batch_size: int, memory: Any = None) -> list:
        """The state before the first step: zeros `[B, size]` for every sized state, then the
        attention layers' initial weights `[B, S]` (a one-hot on position 0 for monotonic
        attention, zeros for location-sensitive attention), made from `memory` (the encoder
        outputs `[B, S, d_h]`, or a memory from `prepare_memory`; needed only then)."""
        sized = [
            ops.zeros((batch_size, size), self.compute_dtype)
            for size in self.state_size
            if size is not None
        ]
        return sized + self._initial_attention_states(batch_size, memory)

    def complete_initial_state(self, initial_state, batch_size, memory: Any = None) -> list:
        """Check a user's initial state; the wrapped cell's states alone get zero extras (and
        the attention layers' initial weights, made from `memory`, when they carry any)."""
        states = (
            list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
        )
        sizes = self.state_size
        if len(states) not in (len(self._cell_state_sizes), len(sizes)):
            raise ValueError(
                f"`initial_state` must be a list of {len(self._cell_state_sizes)} tensors (the "
                f"wrapped cell's states, sizes {self._cell_state_sizes}) or {len(sizes)} "
                f"(the full state, sizes {sizes}). Received: a list of {len(states)}"
            )
        static_batch = batch_size if isinstance(batch_size, int) else None
        for i, (state, size) in enumerate(zip(states, sizes)):
            shape = tuple(state.shape)
            batch_ok = static_batch is None or not shape or shape[0] in (None, static_batch)
            size_ok = size is None or shape[-1:] in ((None,), (size,))
            if len(shape) != 2 or not size_ok or not batch_ok:
                raise ValueError(
                    f"`initial_state[{i}]` must have shape [batch, "
                    f"{'memory_steps' if size is None else size}] (batch "
                    f"{'?' if static_batch is None else static_batch}, that of the inputs). "
                    f"Received: initial_state[{i}].shape={shape}"
                )
        if len(states) == len(sizes):
            return [ops.cast(s, self.compute_dtype) for s in states]
        extra = [size for size in sizes[len(states) :] if size is not None]
        return (
            [ops.cast(s, self.compute_dtype) for s in states]
            + [ops.zeros((batch_size, size), self.compute_dtype) for size in extra]
            + self._initial_attention_states(batch_size, memory)
        )

    # ---------------------------------------------------------------- building
    def _query_dim(self) -> int:
        raise NotImplementedError

    def _cell_input_dim(self, inputs_dim: int, memory_dim: int) -> int:
        raise NotImplementedError

    def _build_attentions(self, memory_shape) -> None:
        self._memory_dim = None if memory_shape[-1] is None else int(memory_shape[-1])
        for layer in self.attentions:
            if not layer.built:
                layer.build((None, self._query_dim()), tuple(memory_shape))

    def build(self, inputs_shape, memory_shape) -> None:
        check_rank(self.name, "memory", memory_shape, (3,))
        self._build_attentions(memory_shape)
        if not self.cell.built:
            self.cell.build((None, self._cell_input_dim(inputs_shape[-1], memory_shape[-1])))
        self._build_own(inputs_shape, memory_shape)

    def _build_own(self, inputs_shape, memory_shape) -> None:
        pass

    # ---------------------------------------------------------------- stepping
    def prepare_memory(self, memory, mask=None):
        """Project the attention keys once per sequence; pass the result to every `step`.

        Args:
            memory: Encoder outputs `[B, S, d_h]`.
            mask: Optional boolean `[B, S]`. Defaults to `None`.

        Returns:
            A `CellMemory`: each attention layer's `PreparedMemory` and the fused LSTM's
            feed kernel.
        """
        self._build_attentions(tuple(memory.shape))
        feed_kernel = None
        if self.built and self._fused_kind():
            # Rows of the cell's kernel that see the fed-back vector, sliced once per sequence:
            # sliced inside the loop, every step's gradient would be a full-kernel tensor.
            extra = self._cell_input_dim(0, memory.shape[-1])
            feed_kernel = self._weight(self.cell.kernel)[self.cell.kernel.shape[0] - extra :]
        prepared = tuple(layer.prepare_memory(memory, None, mask) for layer in self.attentions)
        return CellMemory(prepared, feed_kernel)

    def draw_step_noise(self, memory, steps, training=None):
        """`memory` with the random inputs of `steps` steps drawn at once, for each attention
        layer that draws some in training: the noise of monotonic attention, the dropout masks
        of the attention weights.

        `AttentionRNN` calls this before its time loop, so that no random state changes inside
        it: a JAX loop cannot carry a `SeedGenerator`'s update out (the traced key would leak),
        and one draw of `[T, B, S]` replaces T small ones. Steps then read row `position`;
        a memory without them draws inside `step`, as a hand-written loop needs.

        Args:
            memory: A `CellMemory` from `prepare_memory`.
            steps: The number of steps T (int or scalar tensor).
            training: Whether the noise is active. Defaults to `None` (inactive).

        Returns:
            A `CellMemory`; `memory` itself when no layer draws anything.
        """
        noises = []
        for layer, prepared in zip(self.attentions, memory.attentions):
            value = prepared.value
            shape = (steps, ops.shape(value)[0], ops.shape(value)[1])
            noises.append(layer.step_noise(shape, training))  # (each layer's own kind)
        if all(noise is None for noise in noises):
            return memory
        return memory._replace(noises=tuple(noises))

    def _fused_kind(self) -> str | None:
        """`"lstm"` or `"gru"` for a plain Keras `LSTMCell` / `GRUCell` (with biases, the GRU's
        reset gate after its matmul as Keras' default, no dropout), whose input projection
        can leave the time loop and whose step this cell computes itself; else `None`."""
        cell = self.cell
        kind = {keras.layers.LSTMCell: "lstm", keras.layers.GRUCell: "gru"}.get(type(cell))
        if kind is None or not cell.use_bias or cell.dropout or cell.recurrent_dropout:
            return None
        if kind == "gru" and not cell.reset_after:
            return None
        return kind

    def project_inputs(self, inputs):
        """The part of the step that depends on `y` only, for all steps at once.

        For a plain `LSTMCell` or `GRUCell` this is `y W_y + b` (W_y the rows of the cell's
        kernel that see `y`, b its input bias): `AttentionRNN` computes it once, outside the
        time loop, as one large matmul. For other cells it is `y` itself. `step` accepts raw
        `y` and calls this.
        """
        kind = self._fused_kind()
        if kind is None:
            return inputs
        rows = inputs.shape[-1]
        bias = self._weight(self.cell.bias)
        if kind == "gru":
            bias = bias[0]  # [input bias; recurrent bias] (reset_after)
        return matmul(inputs, self._weight(self.cell.kernel)[:rows]) + bias

    def projected_table(self, embedding, rows):
        """`project_inputs` of every row of `embedding`'s table, `[V, G]`, or `None`.

        Where this cell projects its inputs (a plain `LSTMCell` / `GRUCell`: `y W_y + b`), a
        search's step may look the token's projection up instead of embedding and projecting
        it (`decoding.make_step_fn`): the same numbers, one gather instead of a gather and a
        matmul per step. Made once per search, so only where the table (V rows) costs no more
        than a few steps of the search's `rows` (V <= 16 rows), from an embedding the fused
        decoder could read the same way (`foldable`: a plain, unquantized, built
        `keras.layers.Embedding` in this cell's dtype).
        """
        if (
            not self.built
            or self._fused_kind() is None
            or not foldable(embedding, self)
            or rows is None
            or embedding.input_dim > 16 * rows
        ):
            return None
        return self.project_inputs(ops.cast(embedding.embeddings, self.compute_dtype))

    def _weight(self, variable):
        """A variable of the wrapped cell read in the compute dtype: `step` and
        `prepare_memory` also run outside `__call__` (the searches), where Keras does not
        autocast under a mixed policy."""
        return ops.cast(variable, self.compute_dtype)

    def _cell_step(self, inputs, extra, cell_states, memory, training):
        """Step the wrapped cell on `[inputs; extra]` (inputs already through `project_inputs`)."""
        cell = self.cell
        kind = self._fused_kind()
        if kind is not None and extra is not None:
            feed_kernel = memory.feed_kernel
            if feed_kernel is None:  # memory prepared before the cell was built
                feed_kernel = self._weight(cell.kernel)[cell.kernel.shape[0] - extra.shape[-1] :]
            inputs = inputs + matmul(extra, feed_kernel)
        if kind == "gru":
            # Keras' GRUCell (reset_after): inputs is x W + b_x, the whole input projection.
            (h,) = cell_states
            inner = matmul(h, self._weight(cell.recurrent_kernel)) + self._weight(cell.bias)[1]
            x_z, x_r, x_h = ops.split(inputs, 3, axis=-1)
            r_z, r_r, r_h = ops.split(inner, 3, axis=-1)
            z = cell.recurrent_activation(x_z + r_z)
            r = cell.recurrent_activation(x_r + r_r)
            h = z * h + (1 - z) * cell.activation(x_h + r * r_h)
            h = ops.cast(h, self.compute_dtype)
            return h, [h]
        if kind == "lstm":
            h, c = cell_states
            z = inputs + matmul(h, self._weight(cell.recurrent_kernel))
            i, f, g, o = ops.split(z, 4, axis=-1)
            act, gate = cell.activation, cell.recurrent_activation
            c = gate(f) * c + gate(i) * act(g)
            h = gate(o) * act(c)
            # Keras 3.15 computes some float64 activations (tanh) in float32 on JAX and PyTorch.
            h, c = (ops.cast(x, self.compute_dtype) for x in (h, c))
            return h, [h, c]
        if extra is not None:
            inputs = ops.concatenate([inputs, extra], axis=-1)
        packed = keras.tree.pack_sequence_as(self._state_template, list(cell_states))
        output, new_states = cell(inputs, packed, training=training)
        states = [ops.cast(s, self.compute_dtype) for s in keras.tree.flatten(new_states)]
        return ops.cast(output, self.compute_dtype), states

    def _split_states(self, states) -> tuple:
        """`(the sized states, the attention layers' states)` of a flat state list."""
        count = self._attention_state_count()
        states = list(states)
        if not count:
            return states, []
        return states[:-count], states[-count:]

    def _attend_each(self, query, memory, position, training, attention_states=()):
        """Each attention layer for one query step `[B, d_s]`: a list of
        `(context [B, d_v], weights [B, S])`, in the order of `attentions`, and the new
        states of the layers that carry one (from `attention_states`, in the same order)."""
        positions = None if position is None else ops.reshape(ops.cast(position, "int32"), (-1, 1))
        noises = memory.noises or (None,) * len(self.attentions)
        results, new_states, offset = [], [], 0
        for layer, prepared, noise in zip(self.attentions, memory.attentions, noises):
            if noise is not None:
                noise = self._noise_at(noise, position)
            if isinstance(layer, RecurrentAttention):
                own = list(attention_states[offset : offset + layer.state_count])
                offset += layer.state_count
                context, weights, own = layer.attend_step(
                    query, prepared, own, training=training, noise=noise
                )
                results.append((context, weights))
                new_states.extend(ops.cast(s, self.compute_dtype) for s in own)
                continue
            context, weights = layer.attend(
                ops.expand_dims(query, 1),
                prepared,
                query_positions=positions,
                training=training,
                dropout_mask=noise,
            )
            results.append((context[:, 0], weights[:, 0]))
        return results, new_states

    @staticmethod
    def _noise_at(noise, position):
        """Row `position` (the step index, a scalar) of pre-drawn noise `[T, B, S]`."""
        if position is None or len(getattr(position, "shape", ())) != 0:
            raise ValueError(
                "A memory with pre-drawn step noise (`draw_step_noise`) needs the step index "
                f"as a scalar `position`. Received: position={position!r}"
            )
        return ops.take(noise, ops.cast(position, "int32"), axis=0)

    @staticmethod
    def _combine_weights(weights):
        """The attention weights a step reports: the only layer's, or the mean over several
        (still a distribution over the memory, `[B, S]`, what the searches and plots expect)."""
        if len(weights) == 1:
            return weights[0]
        return ops.mean(ops.stack(weights, axis=0), axis=0)

    def _attend(self, query, memory, position, training, attention_states=()):
        """Attention for one query step `[B, d_s]`: `(context [B, n d_v], weights [B, S],
        new attention states)`, the contexts of several attentions concatenated, their
        weights averaged."""
        results, new_states = self._attend_each(query, memory, position, training, attention_states)
        contexts = [context for context, _ in results]
        context = contexts[0] if len(contexts) == 1 else ops.concatenate(contexts, axis=-1)
        weights = self._combine_weights([weights for _, weights in results])
        return context, weights, new_states

    def step(self, inputs, states, memory, position=None, training=None):
        """One decoder step.

        `inputs` is the raw `y_{t-1}`; `AttentionRNN` instead projects the whole sequence once
        (`project_inputs`) and calls `step_projected`.

        Args:
            inputs: `y_{t-1}`, `[B, d_y]` (e.g. the embedded previous token).
            states: The flat state list (see `state_size`).
            memory: The `CellMemory` from `prepare_memory`.
            position: The step index t (scalar or `[B]`), used by local_monotonic attention.
                Defaults to `None`.
            training: Whether dropout is active. Defaults to `None`.

        Returns:
            `(output [B, output_size], new_states, weights [B, S])`: the attention weights
            (the alignment, in tfa's words) of this step.
        """
        self._check_states(states)
        if not self.built:
            self.build(tuple(inputs.shape), tuple(memory.value.shape))
        return self.step_projected(self.project_inputs(inputs), states, memory, position, training)

    def _check_states(self, states) -> None:
        count, expected = len(states), len(self.state_size)
        if count != expected:
            # Without this, a short state fails deep in `step_projected` (an IndexError).
            raise ValueError(
                f"{self.name}: `states` must be the cell's full state, {expected} tensors "
                f"(sizes {self.state_size}). The wrapped cell's states alone "
                f"({len(self._cell_state_sizes)} tensors, e.g. an encoder's [h, c]) are "
                "completed by cell.complete_initial_state(states, batch_size, memory); the "
                f"searches do this themselves. Received: a list of {count}"
            )

    def step_projected(self, inputs, states, memory, position=None, training=None):
        """`step` on inputs that already went through `project_inputs`."""
        raise NotImplementedError

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "cell": keras.saving.serialize_keras_object(self.cell),
                "attention": [keras.saving.serialize_keras_object(a) for a in self.attention]
                if isinstance(self.attention, list)
                else keras.saving.serialize_keras_object(self.attention),
            }
        )
        return config

    @classmethod
    def from_config(cls, config: dict):
        config = copy.deepcopy(config)  # deserializers may pop keys (StackedRNNCells does)
        config["cell"] = keras.saving.deserialize_keras_object(config["cell"])
        attention = config["attention"]
        if isinstance(attention, list):
            config["attention"] = [keras.saving.deserialize_keras_object(a) for a in attention]
        else:
            config["attention"] = keras.saving.deserialize_keras_object(attention)
        return cls(**config)


def foldable(embedding, cell) -> bool:
    """Whether the fused decoder may read `embedding`'s table itself (and fold the LSTM's
    input kernel into it): a plain, unquantized `keras.layers.Embedding` in the cell's dtype,
    small enough for its ids to travel as exact floats."""
    if type(embedding) is not keras.layers.Embedding or not embedding.built:
        return False
    if getattr(embedding, "quantization_mode", None) or getattr(embedding, "lora_enabled", False):
        return False
    dtype = keras.backend.standardize_dtype(cell.compute_dtype)
    exact = 2**24 if dtype == "float32" else 2**53
    return (
        keras.backend.standardize_dtype(embedding.compute_dtype) == dtype
        and embedding.input_dim + 1 < exact
    )
