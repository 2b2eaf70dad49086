"""What `BahdanauMonotonicAttention` and `LuongMonotonicAttention` share. Private."""

from __future__ import annotations

import math
from typing import Any

import keras
from keras import ops

from keras_attention._validation import is_number
from keras_attention.functional.monotonic import MONOTONIC_MODES, monotonic_probabilities
from keras_attention.layers.recurrent_attention import RecurrentAttention, one_hot_start


def _check_real(name: str, value: Any, minimum: float | None = None) -> float:
    if (
        not is_number(value)
        or not math.isfinite(float(value))
        or (minimum is not None and value < minimum)
    ):
        bound = "" if minimum is None else f" >= {minimum}"
        raise ValueError(f"`{name}` must be a finite number{bound}. Received: {name}={value!r}")
    return float(value)


class MonotonicAttention(RecurrentAttention):
    """The monotonic form, over any score object (`layers/_scores.py`).

    `e_i = score(s, h_i) + r` with the learned scalar score bias `r` (`score_bias`, initially
    `score_bias_init`: the subclass makes its score with `bias_init=self.score_bias_init`),
    then `p_i = sigmoid(e_i + σ ε_i)` (`ε ~ N(0, 1)`, σ = `sigmoid_noise`, in training only),
    `p = 0` on padding, and
    `α_t = keras_attention.functional.monotonic_alignment(p, α_{t−1}, mode)`. The state is
    `[α_{t−1}]`, a one-hot on the first memory position before the first step.
    """

    def __init__(
        self,
        *,
        sigmoid_noise: float = 0.0,
        score_bias_init: float = 0.0,
        mode: str = "parallel",
        seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(seed=seed, **kwargs)
        if mode not in MONOTONIC_MODES:
            raise ValueError(
                f"`mode` must be one of {', '.join(map(repr, MONOTONIC_MODES))}. "
                f"Received: mode={mode!r}"
            )
        self.mode = mode
        self.sigmoid_noise = _check_real("sigmoid_noise", sigmoid_noise, minimum=0.0)
        self.score_bias_init = _check_real("score_bias_init", score_bias_init)
        if self.sigmoid_noise > 0:
            self.noise_generator = keras.random.SeedGenerator(seed)

    def initial_attention_state(self, batch_size, memory_steps) -> list:
        return one_hot_start(batch_size, memory_steps, self.compute_dtype)

    def _noise(self, shape, training):
        if not training or self.sigmoid_noise <= 0:
            return None
        return self.sigmoid_noise * keras.random.normal(shape, seed=self.noise_generator)

    def step_noise(self, shape, training=None):
        """The sigmoid noise of every step `[T, B, S]` (`sigmoid_noise` times a standard normal
        draw) in training with `sigmoid_noise > 0`, else `None`."""
        return self._noise(shape, training)

    def attend_step(self, query, memory, states, training=None, noise=None):
        keys, value, mask = memory
        scores = self._query_scores(query, keys)  # the score object adds r (`bias_init`)
        if noise is None:  # a cell's step: drawn here (a layer call draws all steps at once)
            noise = self._noise(ops.shape(scores), training)
        weights = monotonic_probabilities(scores, states[0], self.mode, noise=noise, mask=mask)
        return self._context(weights, value), weights, [weights]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "sigmoid_noise": self.sigmoid_noise,
                "score_bias_init": self.score_bias_init,
                "mode": self.mode,
            }
        )
        return config
