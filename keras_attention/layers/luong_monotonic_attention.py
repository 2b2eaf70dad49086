"""Monotonic attention with the Luong "general" score (Raffel et al., 2017)."""

from __future__ import annotations

from typing import Any

import keras

from keras_attention.layers._monotonic import MonotonicAttention
from keras_attention.layers._scores import GeneralScore


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongMonotonicAttention(MonotonicAttention):
    """Monotonic attention with a multiplicative energy: tfa's `LuongMonotonicAttention`.

    Energies `e_i = g · s · (h_i W_g) + r` with `W_g` `[d_h, d_s]` (`score_kernel`, tfa's
    `memory_layer`), `g` the learned scalar `scale` when `use_scale=True` (tfa's `scale=True`,
    initially 1) and `r` the learned scalar `score_bias`. Then, as in
    `BahdanauMonotonicAttention`: `p_i = sigmoid(e_i + σ ε_i)` (noise in training only;
    `[e_i + σ ε_i > 0]` in `"hard"` mode), zero on padding,
    `q_i = (1 − p_{i−1}) q_{i−1} + α_{t−1,i}`, `α_{t,i} = p_i q_i`, `α_0 = one_hot(0)`,
    `c_t = Σ_i α_{t,i} v_i`.

    Args:
        use_scale: Learn the scalar `g`. Defaults to `False`.
        sigmoid_noise: σ, the standard deviation of the pre-sigmoid noise (training only).
            Defaults to `0.0`.
        score_bias_init: Initial value of `r`. Defaults to `0.0`.
        mode: `"parallel"`, `"recursive"` or `"hard"`. Defaults to `"parallel"`.
        seed: Seed of the noise. Defaults to `None`.
        kernel_initializer: Initializer of `W_g`. Defaults to `"glorot_uniform"`.
        kernel_regularizer: Regularizer of `W_g`. Defaults to `None`.
        kernel_constraint: Constraint of `W_g`. Defaults to `None`.
        **kwargs: Base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        As `BahdanauMonotonicAttention`'s.

    Returns:
        As `BahdanauMonotonicAttention`: the context, then the weights if asked, then the state
        tensor if asked.

    Example:

    >>> import numpy as np
    >>> layer = LuongMonotonicAttention(mode="hard", score_bias_init=1.0)
    >>> memory = np.zeros((2, 5, 6))  # every energy is the bias, 1 > 0: stop at once
    >>> weights = layer(np.ones((2, 6)), memory, return_attention_scores=True)[1]
    >>> np.asarray(weights).tolist()[0]  # hard: a one-hot row, from the start position
    [1.0, 0.0, 0.0, 0.0, 0.0]

    References:
        Raffel, Luong, Liu, Weiss, Eck. Online and Linear-Time Attention by Enforcing Monotonic
        Alignments. ICML 2017. https://arxiv.org/abs/1704.00784
    """

    # `LuongAttention`'s options that this layer does not take (refused by name): always the
    # general score, global (the monotonic recurrence is its alignment), no h̃.
    _not_options = (
        "dropout",
        "probability_fn",
        "score_mode",
        "alignment",
        "window_radius",
        "window_implementation",
        "score_units",
        "units",
        "attention_units",
        "attention_activation",
    )

    def __init__(
        self,
        use_scale: bool = False,
        sigmoid_noise: float = 0.0,
        score_bias_init: float = 0.0,
        mode: str = "parallel",
        seed: int | None = None,
        kernel_initializer: Any = "glorot_uniform",
        kernel_regularizer: Any = None,
        kernel_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        self._refuse(kwargs)
        super().__init__(
            use_scale=use_scale,
            sigmoid_noise=sigmoid_noise,
            score_bias_init=score_bias_init,
            mode=mode,
            seed=seed,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            **kwargs,
        )
        self.score = GeneralScore(use_scale=self.use_scale, bias_init=self.score_bias_init)
