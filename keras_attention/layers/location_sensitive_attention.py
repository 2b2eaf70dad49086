"""Location-sensitive attention (Chorowski et al., 2015; the attention of Tacotron 2)."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_attention import functional as F
from keras_attention._deprecation import take_renamed
from keras_attention._validation import check_flag, check_int
from keras_attention.layers._scores import LocationScore
from keras_attention.layers.recurrent_attention import RecurrentAttention


@keras.saving.register_keras_serializable(package="keras_attention")
class LocationSensitiveAttention(RecurrentAttention):
    """Additive attention that also sees where it attended before.

    `e_i = v · tanh(s W_a + h_i U_a + f_i P)` with the location features
    `f = F * α_{t−1}`, a 1-D convolution over the memory axis ("same" padding, no bias) of the
    previous alignment, and with `cumulative=True` of it and the cumulative alignment
    `Σ_{τ<t} α_τ` as two channels (Tacotron 2). `W_a` `[d_s, U]` (`query_kernel`), `U_a`
    `[d_h, U]` (`key_kernel`), `v` `[U]` (`score_vector`), `F` `[K, C, filters]`
    (`location_kernel`, C = 1, or 2 with `cumulative`), `P` `[filters, U]`
    (`location_projection`). `normalize=True` and `use_scale=True` work as in
    `AdditiveAttention` (`norm_scale`, `norm_bias`, `scale`). `α_t = softmax(e)` over the valid
    positions (float32; padding gets exactly 0), `c_t = Σ_i α_{t,i} v_i`.

    The state is `[α_{t−1}]` (and `[α_{t−1}, Σ_{τ<t} α_τ]` with `cumulative`), all zeros before
    the first step, as in Tacotron 2. Called on queries `[B, T, d_s]` the layer runs the
    recurrence over the T steps; in a cell the cell carries the state.

    Args:
        score_units: U, the hidden size of the score (Tacotron 2's `attention_dim`, 128 there,
            independent of the query size). Defaults to `None` (the query size).
            Called `units` up to 0.2 (still accepted, with a
            `DeprecationWarning`, until 0.4.0).
        filters: Number of location filters. Defaults to `32` (Tacotron 2).
        kernel_size: K, the width of the location filters (odd keeps them centred).
            Defaults to `31` (Tacotron 2).
        cumulative: Also convolve the cumulative alignment. Defaults to `False`
            (Chorowski et al.; Tacotron 2 uses `True`).
        normalize: Use the weight-normalised score. Defaults to `False`.
        use_scale: Learn a scalar multiplying the scores. Defaults to `False`.
        kernel_initializer: Initializer of every kernel and of `v`. Defaults to
            `"glorot_uniform"`.
        kernel_regularizer: Regularizer of every kernel and of `v`. Defaults to `None`.
        kernel_constraint: Constraint of every kernel and of `v`. Defaults to `None`.
        **kwargs: Base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        As `BahdanauMonotonicAttention`'s, with its own state and no noise:
        initial_state: The state list (one or two `[B, S]` tensors). Defaults to `None`
            (zeros).
        training: Unused (no dropout). Defaults to `None`.
        return_state: Also return the final state tensors. Defaults to `False`.

    Returns:
        The context `[B, T, d_v]` (`[B, d_v]` for one step), then the weights if asked, then
        the state tensors if asked.

    Example:

    >>> import numpy as np
    >>> layer = LocationSensitiveAttention(score_units=8, filters=4, kernel_size=5, cumulative=True)
    >>> context, weights, previous, cumulated = layer(
    ...     np.ones((2, 3, 4)), np.ones((2, 7, 6)), return_attention_scores=True,
    ...     return_state=True)
    >>> tuple(context.shape), tuple(weights.shape), tuple(cumulated.shape)
    ((2, 3, 6), (2, 3, 7), (2, 7))
    >>> from keras import ops
    >>> np.allclose(ops.convert_to_numpy(cumulated),
    ...             ops.convert_to_numpy(weights).sum(axis=1), atol=1e-6)
    True

    References:
        Chorowski, Bahdanau, Serdyuk, Cho, Bengio. Attention-Based Models for Speech
        Recognition. NIPS 2015. https://arxiv.org/abs/1506.07503
        Shen et al. Natural TTS Synthesis by Conditioning WaveNet on Mel Spectrogram
        Predictions (Tacotron 2). ICASSP 2018. https://arxiv.org/abs/1712.05884
    """

    def __init__(
        self,
        score_units: int | None = None,
        filters: int = 32,
        kernel_size: int = 31,
        cumulative: bool = False,
        normalize: bool = False,
        use_scale: bool = False,
        kernel_initializer: Any = "glorot_uniform",
        kernel_regularizer: Any = None,
        kernel_constraint: Any = None,
        **kwargs: Any,
    ) -> None:
        score_units = take_renamed(kwargs, type(self).__name__, "units", "score_units", score_units)
        self._refuse(kwargs)
        super().__init__(
            score_units=score_units,
            use_scale=use_scale,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            **kwargs,
        )
        check_int("filters", filters, 1)
        check_int("kernel_size", kernel_size, 1)
        self.filters = int(filters)
        self.kernel_size = int(kernel_size)
        self.cumulative = check_flag("cumulative", cumulative)
        self.state_count = 2 if self.cumulative else 1
        self.normalize = check_flag("normalize", normalize)
        self.score = LocationScore(
            filters=self.filters,
            kernel_size=self.kernel_size,
            channels=self.state_count,
            units=self.score_units,
            normalize=self.normalize,
            use_scale=self.use_scale,
        )

    def initial_attention_state(self, batch_size, memory_steps) -> list:
        zeros = ops.zeros((batch_size, memory_steps), self.compute_dtype)
        return [zeros] * self.state_count

    def attend_step(self, query, memory, states, training=None, noise=None):
        keys, value, mask = memory
        location = self.score.locate(states, keys.dtype)  # f P [B, S, U]
        features = self.score.project_query(ops.expand_dims(query, 1))
        scores = self.score(features, keys + location)[:, 0]
        weights = F.masked_softmax(scores, mask)
        new_states = [weights]
        if self.cumulative:
            new_states.append(ops.cast(states[1], weights.dtype) + weights)
        return self._context(weights, value), weights, new_states

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "score_units": self.score_units,
                "normalize": self.normalize,
                "filters": self.filters,
                "kernel_size": self.kernel_size,
                "cumulative": self.cumulative,
            }
        )
        return config
