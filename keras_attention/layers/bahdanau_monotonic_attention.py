"""Monotonic attention with the Bahdanau (additive) score (Raffel et al., 2017)."""

from __future__ import annotations

from typing import Any

import keras

from keras_attention._deprecation import take_renamed
from keras_attention._validation import check_flag
from keras_attention.layers._monotonic import MonotonicAttention
from keras_attention.layers._scores import AdditiveScore


@keras.saving.register_keras_serializable(package="keras_attention")
class BahdanauMonotonicAttention(MonotonicAttention):
    """Monotonic attention with an additive energy: tfa's `BahdanauMonotonicAttention`.

    Energies `e_i = v · tanh(s W_a + h_i U_a) + r` (`query_kernel` `[d_s, U]`, `key_kernel`
    `[d_h, U]`, `score_vector` `[U]`; with `normalize=True` the weight-normalised
    `(g · v / ‖v‖) · tanh(s W_a + h_i U_a + b) + r`, `norm_scale` g and `norm_bias` b as in
    `AdditiveAttention`), `r` the learned scalar `score_bias`. Choosing probabilities
    `p_i = sigmoid(e_i + σ ε_i)` (`ε ~ N(0, 1)` in training only; `p_i = [e_i + σ ε_i > 0]` in
    `"hard"` mode), zero on padding; the alignment is the expected stopping position of a reader
    moving left to right from where it stopped at the previous step:

        q_i = (1 − p_{i−1}) q_{i−1} + α_{t−1,i},   α_{t,i} = p_i q_i

    starting from `α_0 = one_hot(0)`; the context is `c_t = Σ_i α_{t,i} v_i`. The weights need
    not sum to 1. See `keras_attention.functional.monotonic_alignment` for the modes and
    `docs/monotonic-attention.md` for the derivation.

    The previous alignment is the layer's state. Called on a sequence of queries `[B, T, d_s]`
    the layer runs the recurrence over the T steps; inside `BahdanauAttentionCell` or
    `LuongAttentionCell` the cell carries `α_{t−1}` `[B, S]` in its state list.

    Args:
        score_units: U, the hidden size of the score. Defaults to `None` (the query size).
            Called `units` up to 0.2 (still accepted, with a
            `DeprecationWarning`, until 0.4.0).
        normalize: Use the weight-normalised score. Defaults to `False`.
        sigmoid_noise: σ, the standard deviation of the pre-sigmoid noise, added in training
            only (Raffel et al. use 1). Defaults to `0.0`.
        score_bias_init: Initial value of `r`; a negative value (e.g. −4, the paper's) for long
            memories. Defaults to `0.0`.
        mode: `"parallel"`, `"recursive"` or `"hard"`. Defaults to `"parallel"`.
        seed: Seed of the noise. Defaults to `None`.
        kernel_initializer: Initializer of the kernels and of `v`. Defaults to
            `"glorot_uniform"`.
        kernel_regularizer: Regularizer of the kernels and of `v`. Defaults to `None`.
        kernel_constraint: Constraint of the kernels and of `v`. Defaults to `None`.
        **kwargs: Base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `[B, T, d_s]` or one step `[B, d_s]`, or a list `[query, value(, key)]`.
        value: `[B, S, d_v]`. Defaults to `None`.
        key: `[B, S, d_h]`. Defaults to `None` (the value).
        mask: List of masks `[query_mask, value_mask(, key_mask)]` (Keras fills it in).
        query_mask: Boolean `[B, T]`; masked steps keep the state and give zeros.
        value_mask: Boolean `[B, S]`; padding is never chosen (zero weight).
        key_mask: Boolean `[B, S]`, combined with `value_mask`.
        initial_state: `[α_{t−1}]`, a list of one `[B, S]` tensor. Defaults to `None`
            (one-hot on position 0).
        training: Whether the noise is added. Defaults to `None`.
        return_attention_scores: Also return the weights `[B, T, S]`. Defaults to `False`.
        return_state: Also return the final state `[α_T]`. Defaults to `False`.

    Returns:
        The context `[B, T, d_v]` (`[B, d_v]` for one step), then the weights if asked, then
        the state tensor if asked.

    Example:

    >>> import numpy as np
    >>> layer = BahdanauMonotonicAttention(score_units=8, score_bias_init=-1.0)
    >>> context, weights = layer(np.ones((2, 3, 4)), np.ones((2, 5, 6)),
    ...                          return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 6), (2, 3, 5))

    References:
        Raffel, Luong, Liu, Weiss, Eck. Online and Linear-Time Attention by Enforcing Monotonic
        Alignments. ICML 2017. https://arxiv.org/abs/1704.00784
    """

    # `AdditiveAttention`'s options that this layer does not take (refused by name).
    _not_options = ("dropout", "probability_fn", "use_scale")

    def __init__(
        self,
        score_units: int | None = None,
        normalize: bool = False,
        sigmoid_noise: float = 0.0,
        score_bias_init: float = 0.0,
        mode: str = "parallel",
        seed: int | None = None,
        kernel_initializer: Any = "glorot_uniform",
        kernel_regularizer: Any = None,
        kernel_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        score_units = take_renamed(kwargs, type(self).__name__, "units", "score_units", score_units)
        self._refuse(kwargs)
        super().__init__(
            score_units=score_units,
            sigmoid_noise=sigmoid_noise,
            score_bias_init=score_bias_init,
            mode=mode,
            seed=seed,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            **kwargs,
        )
        self.normalize = check_flag("normalize", normalize)
        self.score = AdditiveScore(
            units=self.score_units, normalize=self.normalize, bias_init=self.score_bias_init
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"score_units": self.score_units, "normalize": self.normalize})
        return config
