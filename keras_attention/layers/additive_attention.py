"""Bahdanau et al. (2014) additive attention with learned projections."""

from __future__ import annotations

from typing import Any

import keras

from keras_attention._deprecation import take_renamed
from keras_attention._validation import check_flag
from keras_attention.layers._scores import AdditiveScore
from keras_attention.layers.base_attention import BaseAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class AdditiveAttention(BaseAttention):
    """Bahdanau (additive) attention: `e = v · tanh(s W_a + h_i U_a)`.

    `W_a` `[d_s, U]` (`query_kernel`), `U_a` `[d_h, U]` (`key_kernel`), `v` `[U]`
    (`score_vector`); the keys `h U_a` are computed once per memory. With
    `use_query_bias=True` the query projection has a bias: `e = v · tanh(s W_a + b_q + h_i U_a)`
    (`query_bias` `[U]`, initially 0; OpenNMT-py's `mlp` score). With `normalize=True` the
    score is the weight-normalised form used by TensorFlow Addons:
    `e = (g · v / ‖v‖) · tanh(s W_a + h_i U_a + b)` with the scalar `g` (`norm_scale`, initially
    `sqrt(1/U)`) and `b` `[U]` (`norm_bias`, initially 0). `use_scale=True` multiplies the score
    by a learned scalar `scale` (initially 1). `α = softmax(e)` over the valid memory positions
    (float32; padding gets exactly 0) and the context is `c = Σ α_i v_i`.

    Unlike `keras.layers.AdditiveAttention`, the projections are learned, so queries and keys may
    have different sizes. `BahdanauAttention` is the same class.

    Args:
        score_units: U, the size of the hidden layer of the score. Defaults to `None` (the
            query size). Called `units` up to 0.2 (still accepted, with a
            `DeprecationWarning`, until 0.4.0).
        normalize: Use the weight-normalised score. Defaults to `False`.
        use_scale: Whether to learn a scalar multiplying the scores. Defaults to `False`.
        dropout: Dropout rate on the attention weights during training. Defaults to `0.0`.
        seed: Seed of the dropout. Defaults to `None`.
        kernel_initializer: Initializer of the kernels and of `v`. Defaults to
            `"glorot_uniform"`.
        kernel_regularizer: Regularizer of the kernels and of `v`. Defaults to `None`.
        kernel_constraint: Constraint of the kernels and of `v`. Defaults to `None`.
        probability_fn: `"softmax"`, `"hardmax"` (tfa's: all the weight on the highest
            valid score, ties to the first; no gradient reaches the scores) or `"sparsemax"`
            (OpenNMT-py's; Martins & Astudillo 2016: the projection of the scores onto the
            simplex, exact zeros below a threshold; `functional.masked_sparsemax`). Defaults
            to `"softmax"`.
        use_query_bias: Learn a bias `b_q` `[U]` on the query projection. Defaults to `False`.
        **kwargs: Base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        As `LuongAttention`'s, where `query_positions` serves the causal mask only:
        query_positions: Integer step indices `[B, T]`, used by the causal mask. Defaults to
            `None` (`0 … T−1`).

    Returns:
        The context `[B, T, d_v]` (`[B, d_v]` for single-step queries and pooling), and with
        `return_attention_scores=True` also the weights `[B, T, S]` (`[B, S]`). Under a mixed
        precision policy both come in the compute dtype; scores, masking and softmax run in
        float32.

    Example:

    >>> import numpy as np
    >>> decoder_state, encoder_outputs = np.ones((2, 16)), np.ones((2, 7, 32))
    >>> context, weights = AdditiveAttention(score_units=10)(
    ...     decoder_state, encoder_outputs, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 32), (2, 7))

    References:
        Bahdanau, Cho, Bengio. Neural Machine Translation by Jointly Learning to Align and
        Translate. ICLR 2015. https://arxiv.org/abs/1409.0473
        Salimans, Kingma. Weight Normalization. NIPS 2016 (the `normalize=True` form).
    """

    def __init__(
        self,
        score_units: int | None = None,
        normalize: bool = False,
        use_scale: bool = False,
        dropout: float = 0.0,
        seed: int | None = None,
        kernel_initializer: Any = "glorot_uniform",
        kernel_regularizer: Any = None,
        kernel_constraint: Any = None,
        probability_fn: str = "softmax",
        use_query_bias: bool = False,
        **kwargs: Any,
    ) -> None:
        score_units = take_renamed(kwargs, type(self).__name__, "units", "score_units", score_units)
        super().__init__(
            score_units=score_units,
            use_scale=use_scale,
            dropout=dropout,
            seed=seed,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            probability_fn=probability_fn,
            **kwargs,
        )
        self.normalize = check_flag("normalize", normalize)
        self.use_query_bias = check_flag("use_query_bias", use_query_bias)
        self.score = AdditiveScore(
            units=self.score_units,
            normalize=self.normalize,
            query_bias=self.use_query_bias,
            use_scale=self.use_scale,
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "score_units": self.score_units,
                "normalize": self.normalize,
                "use_query_bias": self.use_query_bias,
            }
        )
        return config


BahdanauAttention = AdditiveAttention
"""Another name of `AdditiveAttention` (Bahdanau et al., 2015): the same class."""
