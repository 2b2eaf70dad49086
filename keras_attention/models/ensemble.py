"""Several trained `Seq2Seq` models decoding as one: their next-token distributions averaged
at every step of one search."""

from __future__ import annotations

import math
from typing import Any

import keras
from keras import ops

from keras_attention.decoding.searches import Search
from keras_attention.decoding.step_fn import StepFunction
from keras_attention.models.seq2seq import Seq2Seq, _split_inputs

#: What the members of an ensemble must agree on: the ids they read and write.
SHARED = ("source_vocabulary_size", "target_vocabulary_size", "start_id", "end_id", "oov_id")


@keras.saving.register_keras_serializable(package="keras_attention")
class Seq2SeqEnsemble(keras.Model):
    """Trained `Seq2Seq` models (e.g. of several seeds) searched as one model.

    At every step of a search each member takes its own step (its own state, memory and
    attention) and the ensemble's next-token distribution is the mean of the members'
    probabilities, `p(y | ...) = (1 / M) * sum_m softmax(logits_m)` (an ensemble of `M`
    members, as in Sutskever et al., 2014, and fairseq's ensembles); the logits the search
    gets are `log p` (log-probabilities, so the search's own log-softmax leaves them as they
    are). The attention weights are the members' mean (a distribution over the source), which
    the coverage penalty reads. Called teacher-forced on `{"source_ids", "target_ids"}` it
    returns those log-probabilities `[B, T, V]` (so `compile(loss=
    SparseCategoricalCrossentropy(from_logits=True))` and `evaluate` score the ensemble).

    `generate`, `translate` and `keras_attention.models.Translator` work as for one
    `Seq2Seq` (the same search code runs), with the first member's tokenizers. A step costs
    the sum of the members' steps. The members are layers of the ensemble: `.keras` files
    hold them all, and `keras.saving.load_model` reloads the ensemble.

    Args:
        members: A list of at least one `Seq2Seq`, agreeing on the source and target
            vocabulary sizes, `start_id`, `end_id` and `oov_id` (their architectures may
            differ: Luong and Bahdanau, GRU and LSTM, other sizes).
        name: The model's name. Defaults to `None`.

    Example:

    >>> import numpy as np
    >>> from keras_attention.decoding import BeamSearch
    >>> from keras_attention.models import Seq2Seq, Translator
    >>> members = [Seq2Seq(12, 9, units=8, rnn="gru"), Seq2Seq(12, 9, units=16)]
    >>> ensemble = Seq2SeqEnsemble(members)
    >>> result = Translator(ensemble, BeamSearch(2, max_length=4), jit_compile=False)(
    ...     np.array([[5, 6, 3]]))
    >>> result["ids"].shape
    (1, 4)
    """

    def __init__(self, members: list, name: str | None = None, **kwargs) -> None:
        super().__init__(name=name, **kwargs)
        if isinstance(members, Seq2Seq) or not isinstance(members, (list, tuple)) or not members:
            raise ValueError(
                "`members` must be a non-empty list of Seq2Seq models. "
                f"Received: members={members!r}"
            )
        for i, member in enumerate(members):
            if not isinstance(member, Seq2Seq):
                raise TypeError(
                    f"`members` must hold Seq2Seq models. Received: members[{i}]={member!r}"
                )
            for key in SHARED:
                if getattr(member, key) != getattr(members[0], key):
                    raise ValueError(
                        f"The members of an ensemble must share `{key}` (they read and write "
                        f"the same ids). Received: members[0].{key}="
                        f"{getattr(members[0], key)!r}, members[{i}].{key}="
                        f"{getattr(member, key)!r}"
                    )
        self.members = list(members)
        first = self.members[0]
        for key in SHARED:  # the ids the members share, as every member has them
            setattr(self, key, getattr(first, key))
        self.source_tokenizer, self.target_tokenizer = (
            first.source_tokenizer,
            first.target_tokenizer,
        )

    # ---------------------------------------------------------------- teacher-forced
    def build(self, inputs_shape) -> None:
        for member in self.members:
            if not member.built:
                member.build(inputs_shape)
        self.built = True

    def call(self, inputs, training=None):
        source_ids, target_ids = _split_inputs(inputs, "inputs")
        logits = [member([source_ids, target_ids], training=training) for member in self.members]
        return _mean_probabilities(logits)

    def compute_output_shape(self, input_shape=None, **kwargs):
        return self.members[0].compute_output_shape(input_shape, **kwargs)

    # ---------------------------------------------------------------- inference
    def encode(self, source_ids, training=False):
        """`(memories, memory_masks, states)`: each member's `encode`, as tuples."""
        encoded = [member.encode(source_ids, training=training) for member in self.members]
        return tuple(tuple(parts) for parts in zip(*encoded))

    def make_step_fn(self, memory, memory_mask=None, beam_width: int = 1) -> StepFunction:
        """The ensemble's `StepFunction` over `encode`'s tuples: each member's step
        (`Seq2Seq.make_step_fn`, padding and `start_id` never generated), the mean of their
        probabilities as log-probabilities, the mean of their attention weights."""
        memory_mask = memory_mask if memory_mask is not None else (None,) * len(memory)
        steps = [
            member.make_step_fn(m, mask, beam_width)
            for member, m, mask in zip(self.members, memory, memory_mask)
        ]

        def step_fn(tokens, states, t):
            outputs = [step(tokens, state, t) for step, state in zip(steps, states)]
            logits = _mean_probabilities([logits for logits, _, _ in outputs])
            weights = [w for _, _, w in outputs]
            if any(w is None for w in weights):
                weights = None
            else:
                weights = sum(ops.cast(w, "float32") for w in weights) / len(weights)
            return logits, tuple(state for _, state, _ in outputs), weights

        def complete_state(initial_state, batch_size):
            return tuple(
                step.complete_state(state, batch_size) if step.complete_state else state
                for step, state in zip(steps, initial_state)
            )

        return StepFunction(
            step_fn,
            beam_width=beam_width,
            batch_size=steps[0].batch_size,
            input_vocabulary_size=steps[0].input_vocabulary_size,
            complete_state=complete_state,
        )

    def generate(self, source_ids, search: Search | None = None, **kwargs) -> dict:
        """`Seq2Seq.generate` (the same arguments and search code) over the ensemble's steps."""
        return Seq2Seq.generate(self, source_ids, search, **kwargs)

    def _search(self, source_ids, search: Search, seed: Any, top_k_method: str) -> dict:
        return Seq2Seq._search(self, source_ids, search, seed, top_k_method)

    def translate(self, texts, search: Search | None = None, n_best=None, **kwargs):
        """`Seq2Seq.translate`: strings to strings with the first member's tokenizers."""
        return Seq2Seq.translate(self, texts, search, n_best, **kwargs)

    # ---------------------------------------------------------------- serialization
    def get_config(self) -> dict:
        return {
            "name": self.name,
            "members": [keras.saving.serialize_keras_object(m) for m in self.members],
        }

    @classmethod
    def from_config(cls, config: dict):
        config = dict(config)
        members = [keras.saving.deserialize_keras_object(m) for m in config.pop("members")]
        model = cls(members, **config)
        model.build_from_config(None)
        return model

    def build_from_config(self, config: Any) -> None:
        for member in self.members:
            member.build_from_config(None)
        self.built = True


def _mean_probabilities(logits: list):
    """`log(mean_m softmax(logits_m))` over the last axis, in float32."""
    log_probabilities = [ops.log_softmax(ops.cast(x, "float32"), axis=-1) for x in logits]
    if len(log_probabilities) == 1:
        return log_probabilities[0]
    stacked = ops.stack(log_probabilities, axis=0)
    return ops.logsumexp(stacked, axis=0) - math.log(len(log_probabilities))
