"""Luong et al. (2015) attention: dot / general / concat scores, global and local alignment."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from keras_attention import functional as F
from keras_attention._deprecation import take_renamed
from keras_attention._validation import check_flag, check_int
from keras_attention.layers._local_attention import LocalAttentionBase
from keras_attention.layers._scores import AdditiveScore, DotScore, GeneralScore, Score
from keras_attention.layers.base_attention import get_identifier

_SCORE_MODES = ("dot", "general", "concat")


@keras.saving.register_keras_serializable(package="keras_attention")
class LuongAttention(LocalAttentionBase):
    """Luong attention (multiplicative or concat), global or local.

    Scores of a query `s` (size d_s) against each memory key `h_i` (size d_h):

    - `"dot"`: `e = s · h_i` (needs d_s == d_h);
    - `"general"`: `e = s · (h_i W_g)`, `W_g` `[d_h, d_s]` (`score_kernel`), the keys `h W_g` made
      once per memory (with local alignment, the equal `(s W_gᵀ) · h_i`, so that one window
      tensor serves as keys and values);
    - `"concat"`: `e = v · tanh(s W_q + h_i W_k)` (`query_kernel`, `key_kernel`, `score_vector`);
      with `use_query_bias=True`, `e = v · tanh(s W_q + b_q + h_i W_k)` (`query_bias`).

    With `use_scale=True` the score is multiplied by a learned scalar `scale` (initially 1).
    `α = softmax(e)` over the valid memory positions (float32, padding gets exactly 0) and the
    context is `c = Σ α_i v_i`.

    Local attention (Luong §3.2) only looks at the 2D+1 positions `round(p_t) − D … round(p_t) + D`
    (D = `window_radius`), gathered, so each query costs O(2D+1) whatever the memory length:

    - `"local_monotonic"`: `p_t = t`, the query's step index, clipped into the valid memory:
      `p_t = min(t, S_b − 1)` with S_b the row's number of valid positions. Any query length is
      accepted; steps past the memory attend to its end. Single-step queries pass `t` as
      `query_positions`.
    - `"local_predictive"`: `p_t = S_b · sigmoid(v_p · tanh(s_t W_p))` (`position_kernel`,
      `position_vector`), and the window softmax is multiplied by
      `exp(−(i − p_t)² / (2σ²))`, σ = D/2, without renormalising (as in the paper).

    Rounding is half-up. With `attention_units` set, the layer returns Luong's attentional vector
    `h̃ = act(W_c [s; c])`, `W_c` `[d_s + d_v, attention_units]` (`attention_kernel`), instead of
    the context; with `use_attention_bias=True`, `h̃ = act(W_c [s; c] + b_c)` (`attention_bias`
    `[attention_units]`, initially 0).

    Args:
        score_mode: `"dot"`, `"general"` or `"concat"`. Defaults to `"dot"`.
        alignment: `"global"`, `"local_monotonic"` or `"local_predictive"`. Defaults to
            `"global"`.
        window_radius: D, the half-width of the local window (non-negative int; at least 1 for
            `"local_predictive"`). Defaults to `10`.
        score_units: U, the hidden size of the concat score and of the local-p position network.
            Defaults to `None` (the query size d_s). Called `units` up to 0.2 (still accepted,
            with a `DeprecationWarning`, until 0.4.0).
        use_scale: Whether to learn a scalar multiplying the scores. Defaults to `False`.
        attention_units: Size of the attentional output h̃; `None` returns the context.
            Defaults to `None`.
        attention_activation: Activation of h̃; `None` for none (tfa's AttentionWrapper).
            Defaults to `"tanh"`.
        dropout: Dropout rate on the attention weights during training. Defaults to `0.0`.
        seed: Seed of the dropout. Defaults to `None`.
        kernel_initializer: Initializer of every kernel and vector. Defaults to
            `"glorot_uniform"`.
        kernel_regularizer: Regularizer of every kernel and vector. Defaults to `None`.
        kernel_constraint: Constraint of every kernel and vector. Defaults to `None`.
        probability_fn: `"softmax"`, `"hardmax"` (tfa's: all the weight on the highest
            valid score, ties to the first; no gradient reaches the scores) or `"sparsemax"`
            (OpenNMT-py's; Martins & Astudillo 2016: the projection of the scores onto the
            simplex, exact zeros below a threshold); the last two not with
            `"local_predictive"`. Defaults to `"softmax"`.
        window_implementation: How local windows are computed, with the same results:
            `"auto"` (by measured speed, see `window_plan`), `"blocks"` or `"tiles"` (that
            implementation wherever it can run, the gathered windows elsewhere) or
            `"windows"` (always the gathered windows). Local alignment only. Defaults to
            `"auto"`.
        use_query_bias: Learn a bias `b_q` `[U]` on the concat score's query projection
            (OpenNMT-py's `mlp` score). `score_mode="concat"` only. Defaults to `False`.
        use_attention_bias: Learn a bias `b_c` on h̃ (OpenNMT-py's `linear_out`). Needs
            `attention_units`. Defaults to `False`.
        **kwargs: Base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `[B, T, d_s]` or one step `[B, d_s]`; or a list `[query, value]` /
            `[query, value, key]` (as `keras.layers.Attention`); or, alone, one sequence `x`
            `[B, S, d]`: attention pooling, the query is the last valid step of `x`.
        value: `[B, S, d_v]`. Defaults to `None`.
        key: `[B, S, d_h]`. Defaults to `None` (the value).
        query_positions: Integer step indices of the queries, `[B, T]`, `[B]` or scalar, for
            local attention and the causal mask. Defaults to `None` (`0 … T−1`).
        mask: List of masks `[query_mask, value_mask(, key_mask)]`, or the mask of `x`.
            Filled in by Keras from `mask_zero` embeddings.
        query_mask: Boolean `[B, T]`; masked query steps give zero outputs. Defaults to `None`.
        value_mask: Boolean `[B, S]`; `False` positions get zero weight. Defaults to `None`.
        key_mask: Boolean `[B, S]`, combined with `value_mask`. Defaults to `None`.
        training: Whether dropout is active. Defaults to `None`.
        return_attention_scores: Also return the weights. Defaults to `False`.
        use_causal_mask: Queries attend only to positions `<= query_positions` (self-attention).
            Defaults to `False`.

    Returns:
        The context (or h̃) `[B, T, d]` (`[B, d]` for single-step queries and pooling), and with
        `return_attention_scores=True` also the weights `[B, T, S]` (`[B, S]`). Rows with no
        valid memory position get zero weights and a zero context. Under a mixed precision
        policy both come in the compute dtype; scores, masking and softmax run in float32.

    Example:

    >>> import numpy as np, keras
    >>> query, memory = np.ones((2, 3, 8)), np.ones((2, 5, 8))
    >>> layer = LuongAttention(score_mode="general")
    >>> context, weights = layer([query, memory], return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 3, 8), (2, 3, 5))
    >>> model = keras.Sequential([keras.Input((None, 4)), keras.layers.LSTM(8,
    ...     return_sequences=True), LuongAttention(), keras.layers.Dense(2)])
    >>> tuple(model(np.ones((2, 6, 4))).shape)
    (2, 2)

    References:
        Luong, Pham, Manning. Effective Approaches to Attention-based Neural Machine
        Translation. EMNLP 2015. https://arxiv.org/abs/1508.04025
    """

    def __init__(
        self,
        score_mode: str = "dot",
        alignment: str = "global",
        window_radius: int = 10,
        score_units: int | None = None,
        use_scale: bool = False,
        attention_units: int | None = None,
        attention_activation: str | None = "tanh",
        dropout: float = 0.0,
        seed: int | None = None,
        kernel_initializer: Any = "glorot_uniform",
        kernel_regularizer: Any = None,
        kernel_constraint: Any = None,
        probability_fn: str = "softmax",
        window_implementation: str = "auto",
        use_query_bias: bool = False,
        use_attention_bias: bool = False,
        **kwargs: Any,
    ) -> None:
        score_units = take_renamed(kwargs, type(self).__name__, "units", "score_units", score_units)
        if score_mode not in _SCORE_MODES:
            raise ValueError(
                f"`score_mode` must be one of {', '.join(map(repr, _SCORE_MODES))}. "
                f"Received: score_mode={score_mode!r}"
            )
        super().__init__(
            alignment=alignment,
            window_radius=window_radius,
            score_units=score_units,
            use_scale=use_scale,
            dropout=dropout,
            seed=seed,
            kernel_initializer=kernel_initializer,
            kernel_regularizer=kernel_regularizer,
            kernel_constraint=kernel_constraint,
            probability_fn=probability_fn,
            window_implementation=window_implementation,
            **kwargs,
        )
        check_int("attention_units", attention_units, 1, allow_none=True)
        self.score_mode = score_mode
        self.attention_units = None if attention_units is None else int(attention_units)
        self.attention_activation = get_identifier(
            keras.activations.get, "attention_activation", attention_activation
        )
        self.use_query_bias = check_flag("use_query_bias", use_query_bias)
        self.use_attention_bias = check_flag("use_attention_bias", use_attention_bias)
        if self.use_query_bias and score_mode != "concat":
            raise ValueError(
                "`use_query_bias` is a bias on the concat score's query projection: it needs "
                f"score_mode='concat' (dot and general project no query). Received: "
                f"use_query_bias=True, score_mode={score_mode!r}"
            )
        if self.use_attention_bias and not self.attention_units:
            raise ValueError(
                "`use_attention_bias` is a bias on the attentional vector h̃: it needs "
                "`attention_units` (without it the layer returns the context). Received: "
                f"use_attention_bias=True, attention_units={attention_units!r}"
            )
        self.score = _make_score(
            score_mode, self.score_units, self.use_scale, self.alignment, self.use_query_bias
        )

    # ---------------------------------------------------------- the attentional output h̃
    def _build_extra(self, query_dim: int, value_dim: int) -> None:
        super()._build_extra(query_dim, value_dim)  # local-p's position network first
        if self.attention_units:
            self.attention_kernel = self._add_kernel(
                "attention_kernel", (query_dim + value_dim, self.attention_units)
            )
            if self.use_attention_bias:
                self.attention_bias = self.add_weight(
                    name="attention_bias", shape=(self.attention_units,), initializer="zeros"
                )

    def _output_size(self, value_dim):
        return self.attention_units or value_dim

    def _attentional_output(self, query, context):
        if not self.attention_units:
            return context
        output = F.project(ops.concatenate([query, context], axis=-1), self.attention_kernel)
        if self.use_attention_bias:
            output = output + ops.cast(self.attention_bias, output.dtype)
        if self.attention_activation is not None:
            output = self.attention_activation(output)
        return output

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "score_mode": self.score_mode,
                "score_units": self.score_units,
                "attention_units": self.attention_units,
                "attention_activation": keras.activations.serialize(self.attention_activation)
                if self.attention_activation is not None
                else None,
                "use_query_bias": self.use_query_bias,
                "use_attention_bias": self.use_attention_bias,
            }
        )
        return config


def _make_score(
    score_mode: str, units: int | None, use_scale: bool, alignment: str, query_bias: bool = False
) -> Score:
    """The score object of a `score_mode`: concat is the additive score (`v · tanh(W[s; h])`
    with `W` split into its query and key halves)."""
    if score_mode == "concat":
        return AdditiveScore(units=units, use_scale=use_scale, query_bias=query_bias)
    if score_mode == "general":
        # s · (h W_g) = (s W_gᵀ) · h: local windows project the query (see `GeneralScore`).
        return GeneralScore(project_query=alignment != "global", use_scale=use_scale)
    return DotScore(use_scale=use_scale)
