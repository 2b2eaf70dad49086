"""Run an attentional cell over a whole (teacher-forced) target sequence."""

from __future__ import annotations

import copy
from typing import Any

import keras
from keras import ops

from keras_attention._validation import check_flag, check_mask, check_rank, is_integer, is_number
from keras_attention.cells._execution_plan import IMPLEMENTATIONS, ExecutionPlan, plan_execution
from keras_attention.cells._fused_luong import luong_lstm_sequence
from keras_attention.cells.base_attention_cell import BaseAttentionCell
from keras_attention.functional.loops import time_loop
from keras_attention.functional.sampling import argmax_tokens, draw_tokens


@keras.saving.register_keras_serializable(package="keras_attention")
class AttentionRNN(keras.layers.Layer):
    """Teacher-forced decoding: steps a `BahdanauAttentionCell`/`LuongAttentionCell` over time.

    The memory comes in through `call`; its keys are projected once per sequence, outside the
    time loop, and so is the part of the wrapped cell's input projection that sees only `y`
    (plain `LSTMCell`). The loop (`functional.time_loop`) costs O(1) per step and O(T) in
    time and memory, forward and backward, and trains under `jit_compile=True`: on TensorFlow
    a `while_loop` with `maximum_iterations=T` over `tf.TensorArray` reads and writes (no
    `XlaDynamicUpdateSlice` in exported graphs), on JAX and PyTorch `ops.scan` (a
    `jax.lax.scan`, which, unlike `lax.while_loop`, has reverse-mode gradients).

    Scheduled sampling (Bengio et al., 2015; tfa's `ScheduledEmbeddingTrainingSampler`): with
    `sampling_probability=p`, in training (`training=True`, as in `fit`) each row at each step
    `t > 0` is fed, with probability p, the embedding of a token drawn from the model's own
    previous prediction `softmax(output_layer(o_{t-1}))` (`sampling_mode="sample"`) or its
    argmax (`"argmax"`) instead of `sequences[:, t]`. The call then needs the `embedding` and
    `output_layer` that surround the layer (`Seq2Seq(sampling_probability=p)` passes them).
    Gradients do not flow through the drawn ids (nor through the logits they were drawn from:
    `stop_gradient`), only into the embedding of the fed tokens, as in tfa. The coin flips and
    draws are two `[T, B]` uniform tensors drawn before the loop (`keras.random` with the
    layer's `SeedGenerator`): the loop stays O(T) and compiles under XLA. `p` lives in a
    non-trainable scalar weight named `sampling_probability`, which a callback
    (`keras_attention.models.ScheduledSampling`) can `assign` between epochs. Outside training
    the layer always teacher-forces, and `p = 0` gives exactly the teacher-forced outputs.

    Token ids in: with an `embedding` (given to the constructor, or to `call` by a model that
    owns one, as `Seq2Seq` does), `sequences` may be the integer target ids `[B, T]` themselves;
    the layer embeds them (an id outside `[0, V)` reads as a zero vector) and takes the mask
    from the embedding (`mask_zero=True`) when none is given. For the common Luong decoder (the
    fused path, see `execution_plan`) over a plain `keras.layers.Embedding` this lets the
    layer fold the LSTM kernel's input rows into the embedding table when the vocabulary is
    smaller than the batch's `B·T` tokens (`(E W_y)[id]`: a `[V, 4 d]` table instead of a
    `[B·T, d_y] × [d_y, 4 d]` product, forward and backward). The results are those of
    embedding first, to float round-off.

    Execution plan: each call first decides how it runs (`execution_plan`), then runs that.
    The fused Luong decoder computes the same outputs and gradients as
    the stepped loop, faster, for the models its contract declares (compared against the
    components' full configs: an option it does not declare runs the stepped loop);
    `implementation` overrides the choice, as `use_cudnn` does for Keras' `LSTM`.

    Args:
        cell: A `BahdanauAttentionCell` or `LuongAttentionCell`.
        return_sequences: Return the output of every step `[B, T, d]` rather than of the last
            valid step `[B, d]`. Defaults to `True`.
        return_state: Also return the final state list. Defaults to `False`.
        return_attention_scores: Also return the attention weights `[B, T, S]`. Defaults to `False`.
        sampling_probability: Scheduled sampling: a float in [0, 1] (the initial value of the
            `sampling_probability` weight) or a scalar float `keras.Variable` to use as it.
            Defaults to `None` (off: no weight, always teacher forcing).
        sampling_mode: `"sample"` or `"argmax"`: how the fed-back token is chosen. Defaults
            to `"sample"`.
        sampling_excluded_tokens: Token ids the scheduled sampler never feeds back (their
            logits are set to `-inf` before the draw or the argmax), e.g. `[PAD]` and
            `[START]`, which a decoder never predicts in a target. `Seq2Seq` excludes its
            padding id 0 and its `start_id`. Defaults to `None` (none excluded).
        seed: Seed of the scheduled-sampling draws. Defaults to `None`.
        embedding: A layer mapping token ids to decoder inputs (e.g.
            `keras.layers.Embedding(V, d_y, mask_zero=True)`), owned by this layer: `sequences`
            are then integer ids `[B, T]`. Defaults to `None` (`sequences` are vectors).
        implementation: `"auto"` (the fused decoder where its contract allows, else the
            stepped loop), `"stepped"` (always the stepped loop, e.g. to time or check the
            fused one against it) or `"fused"` (the fused decoder, and a `ValueError` naming
            the reason on a call it cannot run). The outputs are the same to float round-off.
            Defaults to `"auto"`.
        **kwargs: Base layer arguments.

    Call arguments:
        sequences: Decoder inputs `[B, T, d_y]` (the embedded previous target tokens), or their
            integer ids `[B, T]` when there is an `embedding` (the layer's or the call's).
        memory: Encoder outputs `[B, S, d_h]`.
        memory_mask: Boolean `[B, S]`; filled from the Keras mask of `memory`
            (`Embedding(mask_zero=True)` on the source). Defaults to `None`.
        initial_state: The wrapped cell's states (e.g. the encoder's final `[h, c]`) or the
            full state list of the cell. Defaults to `None` (zeros).
        mask: Boolean `[B, T]` decoder mask; padded steps keep the state and output zeros.
            Filled from the Keras mask of `sequences`. Defaults to `None`.
        training: Whether dropout (and scheduled sampling) is active. Defaults to `None`.
        embedding: Maps token ids to decoder inputs: the layer that made `sequences`, needed
            with scheduled sampling (it embeds the fed-back tokens), or the one that embeds
            `sequences` given as ids. Defaults to `None` (the layer's own `embedding`).
        output_layer: With scheduled sampling: maps outputs `[B, d]` to logits `[B, V]`.
            Defaults to `None`.

    Returns:
        `outputs`, then the attention weights if `return_attention_scores`, then the final states if
        `return_state` (in that order, as a list when there is more than one).

    Example:

    >>> import numpy as np, keras
    >>> from keras_attention import LuongAttention, LuongAttentionCell
    >>> rnn = AttentionRNN(LuongAttentionCell(keras.layers.LSTMCell(8), LuongAttention()),
    ...                    return_attention_scores=True, return_state=True)
    >>> outputs, weights, h, c, attentional = rnn(np.ones((2, 4, 3)), np.ones((2, 6, 8)))
    >>> tuple(outputs.shape), tuple(weights.shape), tuple(attentional.shape)
    ((2, 4, 8), (2, 4, 6), (2, 8))

    Token ids in, with the layer's own embedding:

    >>> rnn = AttentionRNN(LuongAttentionCell(keras.layers.LSTMCell(8), LuongAttention()),
    ...                    embedding=keras.layers.Embedding(20, 3, mask_zero=True))
    >>> tuple(rnn(np.array([[4, 7, 0], [2, 0, 0]]), np.ones((2, 6, 8))).shape)
    (2, 3, 8)
    """

    def __init__(
        self,
        cell: Any,
        return_sequences: bool = True,
        return_state: bool = False,
        return_attention_scores: bool = False,
        sampling_probability: Any = None,
        sampling_mode: str = "sample",
        seed: int | None = None,
        sampling_excluded_tokens: Any = None,
        embedding: Any = None,
        implementation: str = "auto",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if implementation not in IMPLEMENTATIONS:
            raise ValueError(
                f"`implementation` must be one of {', '.join(map(repr, IMPLEMENTATIONS))}. "
                f"Received: implementation={implementation!r}"
            )
        self.implementation = implementation
        if embedding is not None and not isinstance(embedding, keras.layers.Layer):
            raise TypeError(
                "`embedding` must be None or a Keras layer mapping token ids to vectors (e.g. "
                f"keras.layers.Embedding). Received: embedding={embedding!r}"
            )
        self.embedding = embedding
        if not isinstance(cell, BaseAttentionCell):
            raise TypeError(
                "`cell` must be a BahdanauAttentionCell or LuongAttentionCell (wrap your Keras "
                f"cell in one). Received: cell={cell!r}"
            )
        self.cell = cell
        self.return_sequences = check_flag("return_sequences", return_sequences)
        self.return_state = check_flag("return_state", return_state)
        self.return_attention_scores = check_flag(
            "return_attention_scores", return_attention_scores
        )
        self.supports_masking = True
        self._sampling = _check_sampling_probability(sampling_probability)
        if sampling_mode not in ("sample", "argmax"):
            raise ValueError(
                "`sampling_mode` must be 'sample' or 'argmax'. Received: "
                f"sampling_mode={sampling_mode!r}"
            )
        self.sampling_mode = sampling_mode
        self.sampling_excluded_tokens = _check_excluded_tokens(sampling_excluded_tokens)
        self.seed = seed
        self.sampling_probability = None  # the weight (or the variable given), see `build`
        if self._sampling is not None:
            if isinstance(self._sampling, keras.Variable):
                self.sampling_probability = self._sampling
            self.seed_generator = keras.random.SeedGenerator(seed)

    def build(self, sequences_shape=None, memory_shape=None) -> None:
        for name, shape in (("sequences", sequences_shape), ("memory", memory_shape)):
            if shape is None:  # Keras leaves out the shapes of `None` arguments
                raise ValueError(
                    f"Layer {self.name} needs `sequences` [batch, steps, dim] and `memory` "
                    f"[batch, memory_steps, dim] tensors. Received: {name}=None"
                )
        if self.embedding is not None and len(sequences_shape) == 2:  # token ids
            if not self.embedding.built:
                self.embedding.build(tuple(sequences_shape))
            sequences_shape = tuple(self.embedding.compute_output_shape(tuple(sequences_shape)))
        check_rank(self.name, "sequences", sequences_shape, (3,))
        if not self.cell.built:
            self.cell.build(tuple(sequences_shape), tuple(memory_shape))
        if self._sampling is not None and self.sampling_probability is None:
            self.sampling_probability = self.add_weight(
                shape=(),
                initializer=keras.initializers.Constant(self._sampling),
                trainable=False,
                name="sampling_probability",
            )

    def call(
        self,
        sequences,
        memory,
        memory_mask=None,
        initial_state=None,
        mask=None,
        sequences_mask=None,
        training=None,
        embedding=None,
        output_layer=None,
    ):
        check_rank(self.name, "memory", memory.shape, (3,))
        mask = sequences_mask if mask is None else mask
        embedding = self.embedding if embedding is None else embedding
        ids = self._token_ids(sequences, embedding)
        if ids is not None and mask is None and hasattr(embedding, "compute_mask"):
            mask = embedding.compute_mask(ids)
        plan = self.execution_plan(training, token_ids=ids is not None, embedding=embedding)
        # The fused decoder reads the table itself (see `_fused_call`): no lookup first.
        if ids is not None and not plan.reads_table:
            sequences = embed_ids(embedding, ids)
        check_mask(
            "mask", mask, ops.expand_dims(ids, -1) if plan.reads_table else sequences, "sequences"
        )
        check_mask("memory_mask", memory_mask, memory, "memory")
        cell = self.cell
        batch = ops.shape(sequences)[0]
        prepared = cell.prepare_memory(memory, memory_mask)
        if training:  # random inputs drawn here, not inside the loop (see draw_step_noise)
            prepared = cell.draw_step_noise(prepared, ops.shape(sequences)[1], training)
        if initial_state is None:
            states = cell.get_initial_state(batch, memory)
        else:
            states = cell.complete_initial_state(initial_state, batch, memory)
        if sequences.shape[1] == 0:  # no steps: empty outputs, the initial state unchanged
            return self._no_steps(batch, ops.shape(memory)[1], states)
        mask = None if mask is None else ops.cast(mask, "bool")
        step_mask = None if mask is None else ops.transpose(mask, (1, 0))
        if plan.reads_table:
            return self._fused_call(
                ops.transpose(ids, (1, 0)), states, prepared, step_mask, embedding
            )
        if mask is not None:  # padded steps may hold anything (NaN): keep it out of the cell
            sequences = ops.where(ops.expand_dims(mask, -1), sequences, ops.zeros_like(sequences))
        if plan.path == "fused":
            return self._fused_call(
                ops.transpose(sequences, (1, 0, 2)), states, prepared, step_mask
            )
        sampler = self._sampler(sequences, embedding, output_layer) if plan.sampled else None
        return self._stepped_call(sequences, memory, states, prepared, step_mask, sampler, training)

    def execution_plan(
        self, training: bool | None = None, token_ids: bool = False, embedding: Any = None
    ) -> ExecutionPlan:
        """How a call with these arguments runs: the fused decoder or the stepped loop, and why.

        `call` makes this plan first and then runs it; the layer must be built (an unbuilt
        cell plans the stepped loop).

        Args:
            training: The call's `training`. Defaults to `None`.
            token_ids: Whether the call's `sequences` are token ids. Defaults to `False`.
            embedding: The layer embedding them (the call's, else the layer's own). Defaults
                to `None`.

        Returns:
            An `ExecutionPlan`: `path` (`"fused"` or `"stepped"`), `reason`, `reads_table`
            (the fused decoder reads the embedding table itself) and `sampled` (scheduled
            sampling feeds the stepped loop).

        Raises:
            ValueError: With `implementation="fused"`, when the fused decoder cannot run the
                call (the message says why).
        """
        embedding = self.embedding if embedding is None else embedding
        return plan_execution(self, training, token_ids, embedding)

    @property
    def _allow_fused(self) -> bool:
        """`implementation != "stepped"`; settable (older tests and scripts set it)."""
        return self.implementation != "stepped"

    @_allow_fused.setter
    def _allow_fused(self, value: bool) -> None:
        self.implementation = "auto" if value else "stepped"

    def _token_ids(self, sequences, embedding):
        """`sequences` when they are token ids (checked: an embedding, rank 2), else `None`."""
        if not _are_ids(sequences):
            return None
        if embedding is None:
            raise ValueError(
                f"Layer {self.name} got integer `sequences` (token ids) without an "
                "`embedding` to embed them: pass AttentionRNN(..., embedding=...) or "
                f"call(..., embedding=...). Received: sequences with dtype {sequences.dtype} "
                f"and shape {tuple(sequences.shape)}"
            )
        check_rank(self.name, "sequences", sequences.shape, (2,))
        return sequences

    def _stepped_call(self, sequences, memory, states, prepared, step_mask, sampler, training):
        """The cell stepped over time in `functional.time_loop` (`sequences` `[B, T, d_y]`),
        feeding back `sampler`'s tokens when there is one (scheduled sampling)."""
        cell = self.cell
        dtype = self.compute_dtype
        batch, memory_steps = ops.shape(sequences)[0], ops.shape(memory)[1]
        # Whatever depends on the inputs only is computed here, once, not inside the loop.
        inputs = cell.project_inputs(ops.transpose(sequences, (1, 0, 2)))  # [T, B, .]

        def step(t, x_t, carry):
            if sampler is not None:
                states, last, fed_back = carry
                x_t = sampler.choose_input(t, x_t, fed_back)
            else:
                states, last = carry
            output, new_states, weights = cell.step_projected(
                x_t, states, prepared, position=t, training=training
            )
            # The carry keeps its dtypes on every backend (a JAX scan requires it).
            new_states = [ops.cast(n, o.dtype) for n, o in zip(new_states, states)]
            output = ops.cast(output, dtype)
            weights = ops.cast(weights, dtype)
            if step_mask is not None:
                valid = ops.expand_dims(ops.take(step_mask, t, axis=0), -1)
                new_states = [ops.where(valid, n, o) for n, o in zip(new_states, states)]
                output = ops.where(valid, output, ops.zeros_like(output))
                weights = ops.where(valid, weights, ops.zeros_like(weights))
                last = ops.where(valid, output, last)
            else:
                last = output
            outputs = [output] if self.return_sequences else []
            if self.return_attention_scores:
                outputs.append(weights)
            if sampler is not None:
                return (new_states, last, sampler.next_token(t, output)), outputs
            return (new_states, last), outputs

        shapes = [(batch, cell.output_size)] if self.return_sequences else []
        if self.return_attention_scores:
            shapes.append((batch, memory_steps))
        carry = (states, ops.zeros((batch, cell.output_size), dtype))
        if sampler is not None:
            carry += (ops.zeros((batch,), "int32"),)
        dropout_cells = _dropout_cells(cell) if training else []
        _make_dropout_masks(
            dropout_cells, batch, cell._cell_input_dim(inputs.shape[-1], memory.shape[-1]), dtype
        )
        try:
            carry, stacked = time_loop(step, inputs, carry, shapes, dtype)
        finally:  # a fresh mask for the next call, of whatever batch size
            for layer in dropout_cells:
                layer.reset_dropout_mask()
                layer.reset_recurrent_dropout_mask()
        states, last = carry[0], carry[1]
        stacked = [ops.transpose(x, (1, 0, 2)) for x in stacked]
        outputs = stacked.pop(0) if self.return_sequences else last
        return self._pack(outputs, stacked[0] if stacked else None, states)

    def _pack(self, outputs, weights, states):
        """`outputs`, then `weights` if `return_attention_scores`, then the states if
        `return_state`: what `call` returns (a list when there is more than one)."""
        result = [outputs]
        if self.return_attention_scores:
            result.append(weights)
        if self.return_state:
            result.extend(states)
        return result[0] if len(result) == 1 else result

    def _fused_call(self, sequences, states, prepared, step_mask, embedding=None):
        """The whole sequence in one `luong_lstm_sequence` (see `cells._fused_luong`);
        with `embedding`, `sequences` are the token ids `[T, B]` into its table."""
        cell = self.cell
        table = None if embedding is None else cell._weight(embedding.embeddings)
        lstm = cell.cell
        memory = prepared.attentions[0]
        outputs, weights, states = luong_lstm_sequence(
            sequences,
            states[:3],
            cell._weight(lstm.kernel),
            cell._weight(lstm.recurrent_kernel),
            cell._weight(lstm.bias),
            cell._weight(cell.attention_kernel),
            memory.keys,
            memory.value,
            memory.mask,
            step_mask,
            tanh_output=cell.attention_activation is keras.activations.tanh,
            embeddings=table,
        )
        if self.return_attention_scores:
            weights = ops.transpose(weights, (1, 0, 2))
        return self._pack(ops.transpose(outputs, (1, 0, 2)), weights, states)

    def _sampler(self, sequences, embedding, output_layer) -> _ScheduledSampler:
        for name, layer in (("embedding", embedding), ("output_layer", output_layer)):
            if not callable(layer):
                raise ValueError(
                    f"Layer {self.name} has scheduled sampling on (sampling_probability="
                    f"{self._sampling!r}): in training its call needs the `embedding` and "
                    f"`output_layer` layers. Received: {name}={layer!r}"
                )
        steps, batch = ops.shape(sequences)[1], ops.shape(sequences)[0]
        # Uniforms in (0, 1): the coin of each (step, row), and the draw of its token.
        coins = keras.random.uniform((steps, batch), seed=self.seed_generator)
        draws = None
        if self.sampling_mode == "sample":
            draws = keras.random.uniform(
                (steps, batch), minval=2.0**-24, maxval=1.0, seed=self.seed_generator
            )
        return _ScheduledSampler(
            self.cell,
            embedding,
            output_layer,
            coins,
            draws,
            self.sampling_probability,
            self.sampling_excluded_tokens,
        )

    def _no_steps(self, batch, memory_steps, states):
        """The outputs of a zero-step sequence, laid out as `call` returns them."""
        dtype = self.compute_dtype
        size = self.cell.output_size
        outputs = (
            ops.zeros((batch, 0, size), dtype)
            if self.return_sequences
            else ops.zeros((batch, size), dtype)
        )
        weights = (
            ops.zeros((batch, 0, memory_steps), dtype) if self.return_attention_scores else None
        )
        return self._pack(outputs, weights, states)

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        if mask is None and self.embedding is not None and _are_ids(inputs):
            mask = self.embedding.compute_mask(inputs)  # (a Keras layer: the constructor checks)
        out_mask = mask if self.return_sequences else None
        masks = [out_mask] + [out_mask] * self.return_attention_scores
        if self.return_state:
            masks += [None] * len(self.cell.state_size)
        return masks[0] if len(masks) == 1 else masks

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "cell": keras.saving.serialize_keras_object(self.cell),
                "return_sequences": self.return_sequences,
                "return_state": self.return_state,
                "return_attention_scores": self.return_attention_scores,
            }
        )
        if self.embedding is not None:  # (absent: older configs stay identical)
            config["embedding"] = keras.saving.serialize_keras_object(self.embedding)
        if self.implementation != "auto":  # (absent: older configs stay identical)
            config["implementation"] = self.implementation
        if self._sampling is not None:
            probability = self.sampling_probability
            if probability is not None:  # its current value (what a schedule set)
                probability = float(ops.convert_to_numpy(probability))
            else:
                probability = self._sampling
            config.update(
                sampling_probability=probability,
                sampling_mode=self.sampling_mode,
                seed=self.seed,
            )
            if self.sampling_excluded_tokens:  # (absent: older configs stay identical)
                config["sampling_excluded_tokens"] = list(self.sampling_excluded_tokens)
        return config

    @classmethod
    def from_config(cls, config: dict):
        config = copy.deepcopy(config)  # deserializers may pop keys (StackedRNNCells does)
        config["cell"] = keras.saving.deserialize_keras_object(config["cell"])
        if config.get("embedding") is not None:
            config["embedding"] = keras.saving.deserialize_keras_object(config["embedding"])
        return cls(**config)


def embed_ids(embedding, ids):
    """`embedding(ids)`, with an id outside `[0, input_dim)` of a `keras.layers.Embedding`
    read as a zero vector: the same finite result on every backend (Keras' `Embedding`
    raises on TensorFlow and PyTorch and gives NaN on JAX). The step keeps its mask (it is
    not padding). Other layers are called as they are."""
    vocabulary = getattr(embedding, "input_dim", None)
    if not isinstance(embedding, keras.layers.Embedding) or vocabulary is None:
        return embedding(ids)
    valid = ops.logical_and(ops.greater_equal(ids, 0), ops.less(ids, vocabulary))
    vectors = embedding(ops.where(valid, ids, ops.zeros_like(ids)))
    return vectors * ops.cast(ops.expand_dims(valid, -1), vectors.dtype)


def _are_ids(x) -> bool:
    """Whether `x` is an integer tensor (token ids)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        return False
    return keras.backend.standardize_dtype(dtype).startswith(("int", "uint"))


def _dropout_cells(cell) -> list:
    """The Keras cells inside an attention cell that draw dropout masks (`LSTMCell`,
    `GRUCell`, `SimpleRNNCell` with `dropout` or `recurrent_dropout`; each of a
    `StackedRNNCells`), in order."""
    inner = cell.cell
    layers = list(inner.cells) if isinstance(inner, keras.layers.StackedRNNCells) else [inner]
    return [
        layer
        for layer in layers
        if hasattr(layer, "get_dropout_mask")
        and hasattr(layer, "reset_dropout_mask")
        and (getattr(layer, "dropout", 0) or getattr(layer, "recurrent_dropout", 0))
    ]


def _make_dropout_masks(layers, batch, input_dim, dtype) -> None:
    """Draw each cell's dropout masks for this call before the time loop, as `keras.layers.RNN`
    does: a Keras cell draws them on its first step and keeps them until reset, so drawn inside
    the loop they would be traced values kept past it (JAX refuses the escaped seed) and would
    be reused by every later call, whatever its batch size."""
    for layer in layers:
        layer.get_dropout_mask(ops.ones((batch, input_dim), dtype))
        size = layer.state_size
        size = size[0] if isinstance(size, (list, tuple)) else size
        layer.get_recurrent_dropout_mask(ops.ones((batch, size), dtype))
        input_dim = getattr(layer, "output_size", None) or size  # the next cell's input


class _ScheduledSampler:
    """What one scheduled-sampling call of `AttentionRNN` feeds at each step."""

    def __init__(self, cell, embedding, output_layer, coins, draws, probability, excluded=()):
        self.cell, self.embedding, self.output_layer = cell, embedding, output_layer
        self.coins, self.draws = coins, draws
        self.probability = ops.cast(probability, "float32")
        self.excluded = tuple(excluded)

    def choose_input(self, t, x_t, fed_back):
        """`x_t` (the projected ground truth) or, where the coin says so (never at t = 0), the
        projected embedding of the token `fed_back` drawn at step t - 1."""
        sampled = self.cell.project_inputs(self.embedding(fed_back))
        use = ops.logical_and(ops.take(self.coins, t, axis=0) < self.probability, t > 0)
        return ops.where(ops.expand_dims(use, -1), ops.cast(sampled, x_t.dtype), x_t)

    def next_token(self, t, output):
        """The token drawn from this step's prediction (no gradient flows into the draw)."""
        logits = ops.cast(self.output_layer(ops.stop_gradient(output)), "float32")
        if self.excluded:
            vocabulary = ops.shape(logits)[-1]
            ids = ops.arange(vocabulary, dtype="int32")
            excluded = ops.zeros((vocabulary,), "bool")
            for token in self.excluded:
                excluded = ops.logical_or(excluded, ops.equal(ids, token))
            logits = ops.where(excluded, float("-inf"), logits)
        if self.draws is None:
            return argmax_tokens(logits)
        return draw_tokens(logits, ops.take(self.draws, t, axis=0))


def _check_excluded_tokens(value: Any) -> tuple:
    """`None` or a list of distinct non-negative token ids, as a sorted tuple."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple, set, frozenset)) and all(
        is_integer(token) and token >= 0 for token in value
    ):
        return tuple(sorted({int(token) for token in value}))
    raise ValueError(
        "`sampling_excluded_tokens` must be None or a list of non-negative token ids. "
        f"Received: sampling_excluded_tokens={value!r}"
    )


def _check_sampling_probability(value: Any) -> Any:
    """`None`, a float in [0, 1] or a scalar `keras.Variable`, else a `ValueError` naming it."""
    if value is None or isinstance(value, keras.Variable):
        if value is not None and tuple(value.shape) != ():
            raise ValueError(
                "`sampling_probability` must be a scalar variable. Received: "
                f"sampling_probability with shape {tuple(value.shape)}"
            )
        return value
    if not is_number(value) or not 0 <= value <= 1:
        raise ValueError(
            "`sampling_probability` must be None, a number in [0, 1] or a scalar "
            f"keras.Variable. Received: sampling_probability={value!r}"
        )
    return float(value)
