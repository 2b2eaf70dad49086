"""Attention that carries a state from one query step to the next (its previous alignments).

Monotonic attention (Raffel et al., 2017) and location-sensitive attention (Chorowski et al.,
2015) compute the alignment of step `t` from that of step `t − 1`. Such a layer adds three things
to the `BaseAttention` contract:

- `state_count`: how many `[B, S]` state tensors it carries (S the memory length);
- `initial_attention_state(batch_size, memory_steps)`: their values before the first step;
- `attend_step(query [B, d_s], memory, states, training)`: one step,
  `(context [B, d_v], weights [B, S], new_states)`.

Called as a layer on a sequence of queries `[B, T, d_s]` it runs the recurrence over the T steps
(`functional.time_loop`: XLA-trainable); the attentional cells call `attend_step` once per
decoder step and keep the states in their own state list.
"""

from __future__ import annotations

from keras import ops

from keras_attention.functional.loops import time_loop
from keras_attention.layers._call_inputs import parse_call_inputs
from keras_attention.layers.base_attention import BaseAttention


class RecurrentAttention(BaseAttention):
    """Base of the attention layers whose alignment depends on the previous one.

    Not meant to be used directly; see `BahdanauMonotonicAttention`, `LuongMonotonicAttention`
    and `LocationSensitiveAttention` for the call contract.
    """

    state_count: int = 1

    #: The recurrence runs over `[B, T, d_s]` queries: no N-D batch axes (rank 2 or 3 only).
    _accepts_nd: bool = False

    #: Options of the plain layer of the same score (`AdditiveAttention`, `LuongAttention`)
    #: that a recurrent layer does not have (its weights are no softmax that dropout or hardmax
    #: could act on; its alignment is its own): refused by name by the constructor (`_refuse`,
    #: a clearer error than Keras' unknown keyword) and left out of the config (`get_config`).
    _not_options: tuple = ("dropout", "probability_fn")

    def _refuse(self, kwargs: dict) -> None:
        """An error naming the first of `_not_options` in `kwargs`, rather than ignoring it."""
        for name in self._not_options:
            if name in kwargs:
                raise ValueError(
                    f"`{name}` is not an option of {type(self).__name__} (monotonic and "
                    f"location-sensitive attention). Received: {name}={kwargs[name]!r}"
                )

    def get_config(self) -> dict:
        config = super().get_config()
        for name in self._not_options:
            config.pop(name, None)
        return config

    # ---------------------------------------------------------------- subclass hooks
    def initial_attention_state(self, batch_size, memory_steps) -> list:
        """The `state_count` tensors `[B, S]` (compute dtype) before the first step."""
        raise NotImplementedError

    def attend_step(self, query, memory, states, training=None, noise=None):
        """One query step `[B, d_s]` against a memory from `prepare_memory`.

        Returns:
            `(context [B, d_v], weights [B, S], new_states)`, the weights in float32.
        """
        raise NotImplementedError

    def step_noise(self, shape, training=None):
        """Random inputs of every step `[T, B, S]` drawn at once (outside the time loop), or
        `None` (see `BaseAttention.step_noise`)."""
        return None

    # ---------------------------------------------------------------- call
    def call(
        self,
        query,
        value=None,
        key=None,
        mask=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        initial_state=None,
        training=None,
        return_attention_scores: bool = False,
        return_state: bool = False,
    ):
        if value is None and not isinstance(query, (list, tuple)):
            raise ValueError(
                f"Layer {self.name} attends from queries to a memory: call it as "
                "layer([query, value]) or layer(query, value). Received: value=None"
            )
        query, value, key, query_mask, value_mask, _ = parse_call_inputs(
            self.name,
            query,
            value,
            key,
            mask=mask,
            query_mask=query_mask,
            value_mask=value_mask,
            key_mask=key_mask,
            use_causal_mask=False,
        )
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)
            if query_mask is not None:
                query_mask = ops.expand_dims(query_mask, -1)
        memory = self.prepare_memory(value, key, value_mask)
        batch, length = ops.shape(query)[0], ops.shape(value)[1]
        states = self.check_attention_state(initial_state, batch, length)
        output, weights, states = self.attend_sequence(
            query, memory, states, query_mask=query_mask, training=training
        )
        self._output_keeps_query_mask = not single_step
        if single_step:
            output, weights = output[:, 0], weights[:, 0]
        result = [output]
        if return_attention_scores:
            result.append(weights)
        if return_state:
            result.extend(states)
        return result[0] if len(result) == 1 else tuple(result)

    def check_attention_state(self, initial_state, batch, length) -> list:
        """The user's initial state as a list of `state_count` tensors, or the default one."""
        if initial_state is None:
            return self.initial_attention_state(batch, length)
        states = (
            list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
        )
        if len(states) != self.state_count:
            raise ValueError(
                f"Layer {self.name} carries {self.state_count} state tensor(s) [batch, "
                f"memory_steps]. Received: initial_state with {len(states)} tensor(s)"
            )
        for i, state in enumerate(states):
            shape = tuple(state.shape)
            if len(shape) != 2:
                raise ValueError(
                    f"`initial_state[{i}]` of layer {self.name} must be [batch, memory_steps]. "
                    f"Received: initial_state[{i}].shape={shape}"
                )
        return [ops.cast(s, self.compute_dtype) for s in states]

    def attend_sequence(self, query, memory, states, query_mask=None, training=None):
        """Run `attend_step` over queries `[B, T, d_s]`.

        Padded query steps (`query_mask` false) keep the state and give zero outputs and
        weights.

        Returns:
            `(outputs [B, T, d_v], weights [B, T, S], final states)`.
        """
        keys, value, mask = memory
        dtype = self.compute_dtype
        batch, length = ops.shape(query)[0], ops.shape(value)[1]
        steps = query.shape[1]
        if 0 in (query.shape[0], steps, value.shape[1]):  # nothing to attend from or to
            steps = ops.shape(query)[1]
            output = ops.zeros((batch, steps, value.shape[-1]), dtype)
            return output, ops.zeros((batch, steps, length), dtype), states
        noise = self.step_noise((ops.shape(query)[1], batch, length), training)
        step_mask = None
        if query_mask is not None:
            step_mask = ops.transpose(ops.cast(query_mask, "bool"), (1, 0))  # [T, B]

        def step(t, q_t, states):
            noise_t = None if noise is None else ops.take(noise, t, axis=0)
            context, weights, new_states = self.attend_step(
                q_t, memory, states, training=training, noise=noise_t
            )
            new_states = [ops.cast(n, o.dtype) for n, o in zip(new_states, states)]
            context, weights = ops.cast(context, dtype), ops.cast(weights, dtype)
            if step_mask is not None:
                valid = ops.expand_dims(ops.take(step_mask, t, axis=0), -1)
                new_states = [ops.where(valid, n, o) for n, o in zip(new_states, states)]
                context = ops.where(valid, context, ops.zeros_like(context))
                weights = ops.where(valid, weights, ops.zeros_like(weights))
            return new_states, [context, weights]

        if steps == 1:  # one step (the cells' case, and single-step queries): no loop
            zero = ops.convert_to_tensor(0, "int32")
            states, (context, weights) = step(zero, query[:, 0], states)
            return ops.expand_dims(context, 1), ops.expand_dims(weights, 1), states
        shapes = [(batch, value.shape[-1]), (batch, length)]
        states, (contexts, weights) = time_loop(
            step, ops.transpose(query, (1, 0, 2)), states, shapes, dtype
        )
        return (
            ops.transpose(contexts, (1, 0, 2)),
            ops.transpose(weights, (1, 0, 2)),
            states,
        )

    def attend(
        self,
        query,
        memory,
        query_positions=None,
        use_causal_mask: bool = False,
        training=None,
        return_attention_scores: bool = True,
    ):
        """`BaseAttention.attend` from the initial state (every sequence starts afresh)."""
        if use_causal_mask:
            raise ValueError(
                f"Layer {self.name} is monotonic or location-sensitive, not self-attention. "
                "Received: use_causal_mask=True"
            )
        value = memory.value
        states = self.initial_attention_state(ops.shape(query)[0], ops.shape(value)[1])
        output, weights, _ = self.attend_sequence(query, memory, states, training=training)
        return output, weights

    # ---------------------------------------------------------------- shared pieces
    def _context(self, weights, value):
        """`c = Σ_i α_i v_i` for one step: weights `[B, S]`, values `[B, S, d_v]`."""
        weights = ops.cast(weights, value.dtype)
        return ops.einsum("bs,bsd->bd", weights, value)

    def _query_scores(self, query, keys):
        """The layer's energies `[B, S]` (float32) for one query step `[B, d_s]`."""
        features = self.score.project_query(ops.expand_dims(query, 1))
        return self.score(features, keys, self._keys_transposed())[:, 0]


def one_hot_start(batch_size, memory_steps, dtype) -> list:
    """`[one_hot(0, S)]` for every row: the monotonic reader starts at the first position."""
    first = ops.expand_dims(ops.arange(memory_steps) == 0, 0)
    return [ops.cast(first, dtype) + ops.zeros((batch_size, memory_steps), dtype)]
