"""Shared machinery of the attention layers: call forms, masks, global attention.

A layer is a form and a score (`layers/_scores.py`). This class is the global form: it
parses the call forms (`layers/_call_inputs.py`), masks (and the causal mask),
applies dropout and the probability function, lays out the output, and asks its score object
(`self.score`, made by the subclass' constructor) for the weights, the key and query projections
and the energies. Luong's local alignment (`layers/_local_attention.py`) and the recurrent
alignments (`layers/recurrent_attention.py`) are the other forms; what only they or
`LuongAttention` have comes in through the hooks `_build_extra`, `_check_query_positions`,
`_attend_memory`, `_keys_transposed`, `_dropout_mask_width`, `_attentional_output` and
`_output_size`.
"""

from __future__ import annotations

import contextvars
import warnings
from typing import Any, NamedTuple

import keras
from keras import ops

from keras_attention import functional as F
from keras_attention._deprecation import REMOVAL, rename_config_key
from keras_attention._validation import check_flag, check_int, is_number
from keras_attention.layers._call_inputs import (
    check_list_length,
    check_positions,
    check_ranks,
    flatten_batch,
    parse_call_inputs,
    raise_list_and_tensors,
    unflatten_batch,
)
from keras_attention.layers._scores import Score

_PROBABILITY_FNS = ("softmax", "hardmax", "sparsemax")


def get_identifier(getter: Any, name: str, value: Any) -> Any:
    """`keras.<kind>.get(value)` with an error that names the argument."""
    try:
        return getter(value)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"`{name}` could not be interpreted ({error}). Received: {name}={value!r}"
        ) from error


def _is_shape(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and all(d is None or isinstance(d, int) for d in x)


class PreparedMemory(NamedTuple):
    """A memory prepared for attention (`BaseAttention.prepare_memory`), passed to `attend`.

    Attributes:
        keys: The projected keys `[B, S, U]` (`[B, U, S]` in float32 for global dot-type
            scores, transposed once per memory).
        value: The values `[B, S, d_v]` the context is made from (padding zeroed).
        mask: Boolean `[B, S]` (`True` on valid positions), or `None`.
    """

    keys: Any
    value: Any
    mask: Any


class BaseAttention(keras.layers.Layer):
    """Base class of `AdditiveAttention` and `LuongAttention`; not meant to be used directly.

    See the subclasses for the call contract. Outputs are `output` or `(output, weights)`. The
    options here are those every attention layer has; `score_units` is U, the hidden size of
    the score's `tanh` layer where the score has one (additive, concat, location-sensitive). A
    subclass sets `self.score`, its score object (`layers/_scores.py`), in its constructor.
    """

    #: The score object: weights, projections and energies (set by the subclass).
    score: Score

    #: Whether queries `[*batch, T, d]` of rank > 3 are accepted (with a memory of the same
    #: rank), as by `keras.layers.Attention`: the leading axes are one batch axis inside.
    _accepts_nd: bool = True

    def __init__(
        self,
        *,
        score_units: int | None = None,
        use_scale: bool = False,
        dropout: float = 0.0,
        seed: int | None = None,
        kernel_initializer: Any = "glorot_uniform",
        kernel_regularizer: Any = None,
        kernel_constraint: Any = None,
        probability_fn: str = "softmax",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if probability_fn not in _PROBABILITY_FNS:
            raise ValueError(
                f"`probability_fn` must be one of {', '.join(map(repr, _PROBABILITY_FNS))}. "
                f"Received: probability_fn={probability_fn!r}"
            )
        check_int("score_units", score_units, 1, allow_none=True)
        if not is_number(dropout) or not (0.0 <= float(dropout) < 1.0):
            raise ValueError(f"`dropout` must be a float in [0, 1). Received: dropout={dropout!r}")
        self.probability_fn = probability_fn
        self.score_units = None if score_units is None else int(score_units)
        self.use_scale = check_flag("use_scale", use_scale)
        self.dropout = float(dropout)
        self.seed = seed
        self.kernel_initializer = get_identifier(
            keras.initializers.get, "kernel_initializer", kernel_initializer
        )
        self.kernel_regularizer = get_identifier(
            keras.regularizers.get, "kernel_regularizer", kernel_regularizer
        )
        self.kernel_constraint = get_identifier(
            keras.constraints.get, "kernel_constraint", kernel_constraint
        )
        if self.dropout > 0:
            self.seed_generator = keras.random.SeedGenerator(seed)
        self.supports_masking = True

    def __getattr__(self, name: str):
        # Only reached when normal lookup fails. `units`, the old name of `score_units` (U), is
        # read with a `DeprecationWarning` until 0.4.0; not a property, so that Keras' saving,
        # which walks dir(layer), does not read it (and warn) on every save.
        if name != "units":
            # PyTorch's layers are torch Modules, whose __getattr__ finds submodules.
            parent = getattr(super(), "__getattr__", None)
            if parent is not None:
                return parent(name)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(
            f"{type(self).__name__}.units is deprecated: the score's size is now "
            f"`score_units` (`units` is a recurrent layer's size everywhere else). `units` will "
            f"be removed in keras_attention {REMOVAL}.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.score_units

    @classmethod
    def from_config(cls, config: dict):
        # Configs saved up to 0.2 say `units` for U: the same size, loaded silently.
        return super().from_config(rename_config_key(config, "units", "score_units"))

    # ------------------------------------------------------------------ weights
    def _add_kernel(self, name: str, shape: tuple, initializer: Any = None):
        return self.add_weight(
            name=name,
            shape=shape,
            initializer=initializer or self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )

    def build(self, query_shape=None, value_shape=None, key_shape=None) -> None:
        if query_shape is None:  # Keras leaves out the shapes of `None` arguments
            raise ValueError(
                f"Layer {self.name} needs a `query` tensor (or a list [query, value(, key)]). "
                "Received: query=None"
            )
        if not _is_shape(query_shape) and (value_shape is not None or key_shape is not None):
            raise_list_and_tensors(self.name)
        if not _is_shape(query_shape):
            shapes = list(query_shape)
            check_list_length(self.name, len(shapes))
            query_shape, value_shape = shapes[0], shapes[1]
            key_shape = shapes[2] if len(shapes) == 3 else None
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        check_ranks(self.name, query_shape, value_shape, key_shape, self._accepts_nd)
        query_dim, key_dim, value_dim = query_shape[-1], key_shape[-1], value_shape[-1]
        for name, dim in (("query", query_dim), ("key", key_dim), ("value", value_dim)):
            if dim is None:
                raise ValueError(
                    f"The last dimension of `{name}` must be known. Received: "
                    f"{name}.shape={tuple(locals()[name + '_shape'])}"
                )
        self.score.build(self, query_dim, key_dim)  # the score's weights, `score_bias`, `scale`
        self._build_extra(query_dim, value_dim)

    # Form hooks -----------------------------------------------------------------
    def _build_extra(self, query_dim: int, value_dim: int) -> None:
        """Weights beyond the score's, made after `scale` (the order is the checkpoints')."""

    def _check_query_positions(self, single_step: bool, query_positions) -> None:
        """Refuse a call whose queries need positions it did not get (local-m's single step)."""

    def _output_size(self, value_dim):
        """The size of the output: the context's, `d_v`, unless a subclass projects it."""
        return value_dim

    def _attentional_output(self, query, context):
        """The output made from the queries `[B, T, d_s]` and contexts `[B, T, d_v]`."""
        return context

    # ------------------------------------------------------------------ call
    def call(
        self,
        query,
        value=None,
        key=None,
        query_positions=None,
        mask=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        training=None,
        return_attention_scores: bool = False,
        use_causal_mask: bool = False,
    ):
        query, value, key, query_mask, value_mask, pooling = parse_call_inputs(
            self.name,
            query,
            value,
            key,
            mask=mask,
            query_mask=query_mask,
            value_mask=value_mask,
            key_mask=key_mask,
            use_causal_mask=use_causal_mask,
            nd=self._accepts_nd,
        )
        check_positions(self.name, query_positions, query.shape)
        if query_positions is not None:
            query_positions = ops.convert_to_tensor(query_positions)
        batch_shape = None
        if len(query.shape) > 3:  # [*batch, T, d]: one batch axis inside, restored below
            query, value, key, query_mask, value_mask, query_positions, batch_shape = flatten_batch(
                query, value, key, query_mask, value_mask, query_positions
            )
        single_step = len(query.shape) == 2
        self._check_query_positions(single_step, query_positions)
        if pooling:
            shape = ops.shape(value)
            if value_mask is None:
                last = ops.zeros((shape[0],), "int32") + (shape[1] - 1)
            else:
                last = F.last_valid_positions(value_mask)
                value = _zero_padding(value, value_mask)  # an all-padding row pools zeros
            query_positions = ops.expand_dims(last, -1)
            if _is_empty(value.shape[:2]):  # nothing to gather from: a zero query
                query = ops.zeros((shape[0], 1, value.shape[-1]), value.dtype)
            else:
                query = F.gather_positions(value, query_positions)  # [B, 1, d]
        elif single_step:
            query = ops.expand_dims(query, 1)
            if query_positions is not None and len(ops.shape(query_positions)) == 1:
                query_positions = ops.expand_dims(query_positions, -1)
            if query_mask is not None:
                query_mask = ops.expand_dims(query_mask, -1)

        memory = self.prepare_memory(value, key, value_mask)
        output, weights = self.attend(
            query,
            memory,
            query_positions=query_positions,
            use_causal_mask=use_causal_mask,
            training=training,
            return_attention_scores=return_attention_scores,
        )
        if query_mask is not None:  # `where`, not a product: padded queries may hold NaN
            valid = ops.expand_dims(ops.cast(query_mask, "bool"), -1)
            output = ops.where(valid, output, ops.zeros_like(output))
        squeeze = pooling or single_step
        if squeeze:
            output = output[:, 0]
            weights = None if weights is None else weights[:, 0]
        if batch_shape is not None:
            output = unflatten_batch(output, batch_shape)
            weights = unflatten_batch(weights, batch_shape)
        if return_attention_scores:
            return output, weights
        return output

    def __call__(self, *args, **kwargs):
        # Keras hands `compute_mask` only the first call argument, which cannot tell pooling,
        # `layer(x)`, from `layer(query, value)`: the call form is read from this call's own
        # arguments and seen by `compute_mask` for the duration of this call only.
        token = _CALL_FORM.set(_call_form(args, kwargs))
        try:
            return super().__call__(*args, **kwargs)
        finally:
            _CALL_FORM.reset(token)

    def compute_mask(self, inputs, mask=None):
        """The output mask: the query mask when the output has the query's time axis.

        As `keras.layers.Attention`: a list `[query, value(, key)]` with masks
        `[query_mask, ...]` gives `query_mask`; `layer(query, value)` with a `[B, T, d]` query
        keeps the query's mask. Single-step queries `[B, d]` and attention pooling `layer(x)`
        return `[B, d]`, which has no mask. Called outside a layer call with one tensor,
        `inputs` is read as the pooling form. It depends on its arguments only, never on an
        earlier call.
        """
        if mask is None:
            return None
        form = _CALL_FORM.get()
        if isinstance(inputs, (list, tuple)):
            query = inputs[0] if inputs else None
            query_mask = mask[0] if isinstance(mask, (list, tuple)) else mask
        elif form == "query_value":
            query = inputs
            query_mask = mask[0] if isinstance(mask, (list, tuple)) else mask
        else:  # pooling: one sequence in, one vector out
            return None
        if query_mask is None or (query is not None and len(getattr(query, "shape", ())) == 2):
            return None
        return ops.convert_to_tensor(query_mask)

    def compute_output_shape(
        self, input_shape=None, value_shape=None, key_shape=None, *, query_shape=None
    ):
        """Shape of the output for the call form the shapes describe.

        `[query_shape, value_shape(, key_shape)]` (or the shapes as separate arguments):
        `(*query_shape[:-1], d)`; one sequence's shape alone (pooling): `(B, d)`. `d` is the
        value size, or `LuongAttention`'s `attention_units` when set. The first argument may be
        passed by keyword as `input_shape` (Keras' name on its own layers) or `query_shape`.
        """
        if query_shape is not None and input_shape is not None:
            raise TypeError(
                f"{self.name}: pass the first shape once, as `input_shape` or `query_shape`. "
                f"Received: input_shape={input_shape}, query_shape={query_shape}"
            )
        query_shape = input_shape if query_shape is None else query_shape
        if query_shape is None:
            raise TypeError(
                f"{self.name}: `compute_output_shape` needs the input shape(s). Received: "
                "input_shape=None"
            )
        if not _is_shape(query_shape):
            shapes = list(query_shape)
            check_list_length(self.name, len(shapes))
            query_shape, value_shape = shapes[0], shapes[1]
            key_shape = shapes[2] if len(shapes) == 3 else None
        query_shape = tuple(query_shape)
        pooling = value_shape is None and key_shape is None
        value_shape = query_shape if value_shape is None else tuple(value_shape)
        size = self._output_size(value_shape[-1])
        if pooling:
            return (query_shape[0], size)
        return (*query_shape[:-1], size)

    def compute_output_spec(self, *args, **kwargs):
        # Trace `call` (Keras' default when no `compute_output_shape` exists), so that every
        # argument check of `call` also runs on symbolic inputs, and the optional weights
        # output follows `return_attention_scores` of this call alone.
        return keras.Operation.compute_output_spec(self, *args, **kwargs)

    # ------------------------------------------------------------------ step API
    def prepare_memory(self, value, key=None, mask=None):
        """Project the keys once per memory; reuse the result for every query step.

        Args:
            value: `[B, S, d_v]`, the values the context is made from.
            key: Optional `[B, S, d_k]`. Defaults to `value`.
            mask: Optional boolean `[B, S]`, `True` on valid memory positions.

        Returns:
            A `PreparedMemory` `(keys, value, mask)` to pass to `attend`.
        """
        mask = None if mask is None else ops.cast(mask, "bool")
        if mask is not None:  # padding may hold anything (NaN, Inf): it must not reach outputs
            key = None if key is None else _zero_padding(key, mask)
            value = _zero_padding(value, mask)
        key = value if key is None else key
        keys = self.score.project_keys(key)
        if self._keys_transposed():
            # Once per memory, not once per query step; in the score's float32 (mixed precision).
            keys = ops.cast(ops.transpose(keys, (0, 2, 1)), F.wide_float_dtype(keys.dtype))
        return PreparedMemory(keys, value, mask)

    def _keys_transposed(self) -> bool:
        """Whether `prepare_memory` stores the keys as `[B, d, S]`: a dot-type score, globally."""
        return self.score.dot_type

    def attend(
        self,
        query,
        memory,
        query_positions=None,
        use_causal_mask: bool = False,
        training=None,
        return_attention_scores: bool = True,
        dropout_mask=None,
    ):
        """Attend from queries `[B, T, d_s]` to a memory made by `prepare_memory`.

        `dropout_mask`: in training with `dropout > 0`, the scaled keep-mask to multiply the
        weights by (`[B, T, S]`, or `[B, T, 2D + 1]` over local windows), drawn by the caller
        (`BaseAttentionCell.draw_step_noise`, before a time loop); `None` draws one here.

        Returns:
            `(output [B, T, d], weights [B, T, S] or None)`.
        """
        _, value, _ = memory
        shape = ops.shape(query)
        length = ops.shape(value)[1]
        default_positions = query_positions is None
        if query_positions is None:
            query_positions = ops.expand_dims(ops.arange(shape[1], dtype="int32"), 0)
        query_positions = ops.cast(query_positions, "int32")
        if len(query_positions.shape) == 0:
            query_positions = ops.reshape(query_positions, (1, 1))
        query_positions = query_positions + ops.zeros((shape[0], shape[1]), "int32")

        empty = _is_empty((*query.shape[:2], value.shape[1]))
        if empty:
            # B, T or S is 0: nothing to attend to (S = 0 is a row with no valid position).
            context = ops.zeros((shape[0], shape[1], value.shape[-1]), value.dtype)
            full_weights = ops.zeros((shape[0], shape[1], length), "float32")
        else:
            context, full_weights = self._attend_memory(
                query,
                self.score.project_query(query),
                memory,
                query_positions,
                default_positions,
                use_causal_mask,
                training,
                return_attention_scores,
                dropout_mask=dropout_mask,
            )
        output = self._attentional_output(query, context)
        # Outputs in the compute dtype: Keras' dtype promotion computes some float64 ops
        # (`tanh`, `sigmoid`) in float32 on JAX and PyTorch.
        output = ops.cast(output, self.compute_dtype)
        if full_weights is not None:
            full_weights = ops.cast(full_weights, self.compute_dtype)
        return output, full_weights

    def _attend_memory(
        self,
        query,
        features,
        memory,
        query_positions,
        default_positions: bool,
        use_causal_mask: bool,
        training,
        return_attention_scores: bool,
        dropout_mask=None,
    ):
        """Global attention of the query features over a non-empty memory.

        Returns:
            `(context [B, T, d_v], weights [B, T, S] or None)`.
        """
        keys, value, mask = memory
        length = ops.shape(value)[1]
        scores = self.score(features, keys, self._keys_transposed())
        valid = None if mask is None else ops.expand_dims(mask, 1)
        if use_causal_mask:
            causal = ops.expand_dims(query_positions, -1) >= ops.arange(length, dtype="int32")
            valid = causal if valid is None else ops.logical_and(valid, causal)
        weights = self._normalize(scores, valid)
        weights = self._dropout(weights, training, dropout_mask)
        return F.matmul(ops.cast(weights, value.dtype), value), weights

    # ------------------------------------------------------------------ internals
    def _normalize(self, scores, valid):
        """Scores to weights over the valid positions: softmax, tfa's hardmax (one-hot) or
        sparsemax (OpenNMT-py's `sparsemax`)."""
        if self.probability_fn == "hardmax":
            return F.masked_hardmax(scores, valid)
        if self.probability_fn == "sparsemax":
            return F.masked_sparsemax(scores, valid)
        return F.masked_softmax(scores, valid)

    def _dropout(self, weights, training, mask=None):
        if training and self.dropout > 0:
            if mask is not None:  # drawn before a time loop (see `attend`)
                return weights * ops.cast(mask, weights.dtype)
            weights = keras.random.dropout(weights, self.dropout, seed=self.seed_generator)
        return weights

    def step_noise(self, shape, training=None):
        """The random inputs of `T` query steps of one query each, drawn at once before a time
        loop, or `None` when the layer draws none.

        Here: the attention weights' scaled dropout keep-masks `[T, B, 1, n]` (`n` the width of
        the weights: `S`, or `2D + 1` over local windows) in training with `dropout > 0`; step
        t passes row t to `attend(dropout_mask=...)`. Monotonic attention returns its sigmoid
        noise `[T, B, S]` instead. Cells call this through
        `BaseAttentionCell.draw_step_noise`, so that no random state changes inside their time
        loop; a layer of your own that draws random inputs per step overrides it.

        Args:
            shape: `(T, B, S)`: steps, batch, memory steps (ints or scalar tensors).
            training: Whether the noise is active. Defaults to `None` (inactive).

        Returns:
            A float32 tensor whose first axis is T, or `None`.
        """
        if not training or self.dropout <= 0:
            return None
        steps, batch, length = shape
        ones = ops.ones((steps, batch, 1, self._dropout_mask_width(length)), "float32")
        return keras.random.dropout(ones, self.dropout, seed=self.seed_generator)

    def _dropout_mask_width(self, memory_steps):
        """The last axis of the weights `_dropout` sees for a memory of `memory_steps`."""
        return memory_steps

    # ------------------------------------------------------------------ config
    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "use_scale": self.use_scale,
                "probability_fn": self.probability_fn,
                "dropout": self.dropout,
                "seed": self.seed,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
            }
        )
        return config


_CALL_FORM: contextvars.ContextVar = contextvars.ContextVar("call_form", default=None)


def _call_form(args: tuple, kwargs: dict) -> str:
    """`"list"`, `"query_value"` or `"pooling"`, from the arguments of one layer call."""
    query = args[0] if args else kwargs.get("query")
    if isinstance(query, (list, tuple)):
        return "list"
    value = args[1] if len(args) > 1 else kwargs.get("value")
    key = args[2] if len(args) > 2 else kwargs.get("key")
    return "pooling" if value is None and key is None else "query_value"


def _zero_padding(x, mask):
    """`x` `[B, S, d]` with exact zeros where `mask` `[B, S]` is false."""
    return ops.where(ops.expand_dims(mask, -1), x, ops.zeros_like(x))


def _is_empty(static_dims) -> bool:
    """Whether one of the static dimensions is 0 (an empty batch, no query steps, no memory)."""
    return any(d == 0 for d in static_dims)
