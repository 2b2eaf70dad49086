"""Luong's local alignment (§3.2): the alignment mode, the window and the position network. Private.

`LocalAttentionBase` sits between `BaseAttention` and `LuongAttention`: it owns the options
`alignment`, `window_radius` and `window_implementation`, local-p's position network
(`position_kernel`, `position_vector`) and the three ways a local window is computed ("blocks",
"tiles", "windows"), chosen once per call by `window_plan`. `AdditiveAttention` and the
recurrent layers do not derive from it: their alignment is always global.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import keras
from keras import ops

from keras_attention import functional as F
from keras_attention._validation import check_int
from keras_attention.layers.base_attention import BaseAttention

ALIGNMENT_MODES = ("global", "local_monotonic", "local_predictive")
WINDOW_IMPLEMENTATIONS = ("auto", "blocks", "tiles", "windows")


class WindowPlan(NamedTuple):
    """How one call of a local attention layer computes its windows (`window_plan`).

    Attributes:
        path: `"blocks"`, `"tiles"` or `"windows"`.
        reason: Why this path (for `"windows"` in place of another: what ruled it out).
    """

    path: str
    reason: str


class _LocalCall(NamedTuple):
    """One local-attention call, as the three window paths read it."""

    query: Any  # [B, T, d_s]
    features: Any  # the score's query features
    memory: Any  # a `PreparedMemory`
    positions: Any  # the queries' positions [B, T]
    default_positions: bool  # whether they are 0 … T−1 (no `query_positions` given)
    causal: bool  # `use_causal_mask`
    return_weights: bool  # `return_attention_scores`


class LocalAttentionBase(BaseAttention):
    """`BaseAttention` with Luong's global or local alignment; not meant to be used directly.

    `alignment` is the alignment *mode* (which memory positions a query may attend to); the
    attention weights themselves are called weights throughout the layers.
    """

    def __init__(
        self,
        *,
        alignment: str = "global",
        window_radius: int = 10,
        window_implementation: str = "auto",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if self.probability_fn != "softmax" and alignment == "local_predictive":
            # The window is re-weighted by a Gaussian around p_t: one-hot (or sparse) weights
            # times that Gaussian are no distribution, and p_t would be learned from the few
            # positions with weight only.
            raise ValueError(
                f"probability_fn={self.probability_fn!r} works with alignment='global' or "
                "'local_monotonic', not with 'local_predictive' (whose Gaussian re-weighting "
                f"needs softmax weights). Received: probability_fn={self.probability_fn!r}, "
                f"alignment={alignment!r}"
            )
        if alignment not in ALIGNMENT_MODES:
            raise ValueError(
                f"`alignment` must be one of {', '.join(map(repr, ALIGNMENT_MODES))}. "
                f"Received: alignment={alignment!r}"
            )
        check_int("window_radius", window_radius, 0)
        if alignment == "local_predictive" and window_radius < 1:
            raise ValueError(
                "alignment='local_predictive' needs `window_radius` >= 1 (the Gaussian has "
                f"sigma = window_radius / 2). Received: window_radius={window_radius!r}"
            )
        if window_implementation not in WINDOW_IMPLEMENTATIONS:
            raise ValueError(
                "`window_implementation` must be one of "
                f"{', '.join(map(repr, WINDOW_IMPLEMENTATIONS))}. "
                f"Received: window_implementation={window_implementation!r}"
            )
        if alignment == "global" and window_implementation != "auto":
            raise ValueError(
                "`window_implementation` chooses how local windows are computed; "
                "alignment='global' has none. Received: "
                f"window_implementation={window_implementation!r}, alignment={alignment!r}"
            )
        self.alignment = alignment
        self.window_radius = int(window_radius)
        self.window_implementation = window_implementation

    # ------------------------------------------------------------------ BaseAttention hooks
    def _build_extra(self, query_dim: int, value_dim: int) -> None:
        if self.alignment == "local_predictive":
            units = self.score_units or query_dim
            self.position_kernel = self._add_kernel("position_kernel", (query_dim, units))
            self.position_vector = self._add_kernel("position_vector", (units,))
        super()._build_extra(query_dim, value_dim)

    def _check_query_positions(self, single_step: bool, query_positions) -> None:
        if single_step and self.alignment == "local_monotonic" and query_positions is None:
            raise ValueError(
                f"Layer {self.name}: alignment='local_monotonic' with a single-step query "
                "[batch, dim] needs the step index: pass `query_positions`. "
                "Received: query_positions=None"
            )

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
        if self.alignment == "global":
            return super()._attend_memory(
                query,
                features,
                memory,
                query_positions,
                default_positions,
                use_causal_mask,
                training,
                return_attention_scores,
                dropout_mask=dropout_mask,
            )
        call = _LocalCall(
            query, features, memory, query_positions, default_positions, use_causal_mask,
            return_attention_scores,
        )  # fmt: skip
        path = self.window_plan(query, memory.keys, training, default_positions).path
        if path == "blocks":
            return self._attend_blocks(call)
        if path == "tiles":
            return self._attend_tiles(call)
        return self._attend_windows(call, training, dropout_mask)

    def _attend_blocks(self, call):
        """Local-m at the default positions: blocks of consecutive queries against one
        contiguous key span (`functional.blocked_window_attention`)."""
        keys, value, mask = call.memory
        context, weights = F.blocked_window_attention(
            call.features,
            keys,
            value,
            self.window_radius,
            mask=mask,
            causal=call.causal,
            score_fn=self.score.finish,
            return_window_weights=call.return_weights,
        )
        if not call.return_weights:
            return context, None
        length = ops.shape(value)[1]
        center, _ = self._local_centers(call.query, mask, length, call.positions)
        return context, F.expand_window_weights(weights, center - self.window_radius, length)

    def _attend_tiles(self, call):
        """Any centres: queries sorted by centre, one matmul a tile
        (`functional.tiled_window_attention`)."""
        keys, value, mask = call.memory
        length = ops.shape(value)[1]
        center, predicted = self._local_centers(call.query, mask, length, call.positions)
        context, weights = F.tiled_window_attention(
            call.features,
            keys,
            value,
            center,
            self.window_radius,
            mask=mask,
            query_positions=call.positions if call.causal else None,
            predicted=predicted,
            score_fn=self.score.finish,
            # local-m with the default positions: centres min(t, S_b - 1) never decrease.
            centers_sorted=predicted is None and call.default_positions,
            return_window_weights=call.return_weights,
        )
        if not call.return_weights:
            return context, None
        return context, F.expand_window_weights(weights, center - self.window_radius, length)

    def _attend_windows(self, call, training, dropout_mask):
        """One gathered window per query (fused into the reductions under TensorFlow's XLA,
        `_fused_windows`); the one path with dropout."""
        keys, value, mask = call.memory
        length = ops.shape(value)[1]
        fused = self._fused_windows(call.features, training)
        weights, positions, start, key_windows = self._local_weights(
            call.query, call.features, keys, mask, length, call.positions, call.causal, fused
        )
        weights = self._dropout(weights, training, dropout_mask)
        if fused:
            context = F.window_weighted_sum(weights, value, positions)
        else:
            # dot, and general with local windows, score the raw memory: one gather serves both.
            values = key_windows if keys is value else F.gather_positions(value, positions)
            context = ops.einsum("btw,btwd->btd", ops.cast(weights, value.dtype), values)
        if not call.return_weights:
            return context, None
        return context, F.expand_window_weights(weights, start, length)

    # ------------------------------------------------------------------ local windows
    def window_plan(self, query, keys, training=None, default_positions: bool = True) -> WindowPlan:
        """How a local-attention call computes its windows: `"blocks"`, `"tiles"` or
        `"windows"` (all three exact).

        - "blocks" (`functional.blocked_window_attention`): local-m at the default positions
          (query t at step t), blocks of consecutive queries against one contiguous key span.
        - "tiles" (`functional.tiled_window_attention`): queries sorted by centre and grouped
          by key chunk, each tile one matmul (any centres: local-p, given positions).
        - "windows": one gathered window per query; always possible. Under TensorFlow's XLA
          with a dot-type score and outside training its gathers are fused into the
          reductions, never written out (`_fused_windows`).

        What blocks and tiles need, whatever `window_implementation` asks: a dot-type score
        (dot, general), static T and S, enough queries to fill a block or a tile (a single
        decoder step, T = 1, gathers its one window), no dropout in training (its mask is
        drawn over the `[B, T, 2D+1]` window weights) and `probability_fn="softmax"` (their
        normalisation is a softmax). Where they cannot run, the windows do.

        `window_implementation="auto"` chooses by measured speed (see BENCHMARKS.md §2):
        blocks for local-m at the default positions; for free centres, the fused windows under
        TensorFlow's XLA outside training (the fastest forward there), tiles everywhere else
        (faster than windows, training and forward, in TensorFlow graphs and XLA, PyTorch
        and under `jax.jit`); and the windows in eager JAX, where every op is compiled on its
        own and the blocks' and tiles' extra ops cost compilation time per shape.
        `"blocks"` and `"tiles"` run that implementation wherever it can run;
        `"windows"` always the window path.

        Args:
            query: The call's queries `[B, T, d_s]` (their static shape is read).
            keys: The memory keys `[B, S, d]`.
            training: The call's `training`. Defaults to `None`.
            default_positions: Whether the queries sit at the default positions `0 … T−1`
                (no `query_positions`). Defaults to `True`.

        Returns:
            A `WindowPlan`: `path` and `reason`.
        """
        choice = self.window_implementation
        if choice == "windows":
            return WindowPlan("windows", "window_implementation='windows'")
        steps, length, radius = query.shape[1], keys.shape[1], self.window_radius
        if not self.score.dot_type:
            return WindowPlan("windows", "blocks and tiles need a dot-type score")
        # Plain ints only: None (TF) or a symbolic dimension (JAX shape inference) is not static.
        if not (isinstance(steps, int) and isinstance(length, int)):
            return WindowPlan("windows", "blocks and tiles need static T and S")
        if training and self.dropout > 0:
            return WindowPlan("windows", "dropout in training draws its mask over the windows")
        if self.probability_fn != "softmax":
            return WindowPlan("windows", "blocks and tiles normalise with a softmax")
        monotonic = self.alignment == "local_monotonic" and default_positions
        blocks = monotonic and steps >= F.block_size(radius)
        q_tile, chunk = F.tile_sizes(length, radius, keys.shape[-1])
        tiles = steps >= q_tile and length >= chunk
        if choice != "auto":
            fits = blocks if choice == "blocks" else tiles
            if fits:
                return WindowPlan(choice, f"window_implementation={choice!r}")
            return WindowPlan("windows", f"too few queries or keys for {choice}")
        if not _compiled_or_graph(query):
            return WindowPlan("windows", "eager JAX: blocks and tiles compile op by op")
        if monotonic:
            if blocks:
                return WindowPlan("blocks", "local_monotonic at the default positions")
            return WindowPlan("windows", "too few queries for a block")
        if self._fused_windows(query, training):
            return WindowPlan("windows", "fused windows: TensorFlow's XLA outside training")
        if tiles:
            return WindowPlan("tiles", "free centres")
        return WindowPlan("windows", "too few queries or keys for tiles")

    def _keys_transposed(self) -> bool:
        """Global dot-type scores only: local windows gather keys `[B, S, d]` as they are."""
        return self.alignment == "global" and self.score.dot_type

    def _dropout_mask_width(self, memory_steps):
        """`S` for global attention; the window `2D + 1` for local (dropout keeps windows)."""
        if self.alignment == "global":
            return memory_steps
        return 2 * self.window_radius + 1

    def _fused_windows(self, features, training) -> bool:
        """Whether the window path scores and sums without materialising the windows.

        `functional.window_dot_scores` / `window_weighted_sum` let XLA fuse the gather into the
        reductions (a faster forward on CPU, see BENCHMARKS.md §2); without XLA
        they would write the product out and are slower than the einsums over gathered windows,
        so they are used only for a dot-type score inside TensorFlow's XLA (`jit_compile=True`;
        not JAX's, see `_xla_fuses_gathers`) with a static feature size, and not with
        `training=True`: there the einsum path is faster, because its gradient scatters the one
        shared window tensor into the memory once, where the fused form's two gathers scatter
        twice.
        """
        if training or not self.score.dot_type or features.shape[-1] is None:
            return False
        return _xla_fuses_gathers(features)

    def _local_centers(self, query, mask, length, query_positions):
        """Integer window centres `[B, T]` and, for local-p, the real-valued `p_t` (else None)."""
        if mask is None:
            valid_length = ops.cast(length, "int32") + ops.zeros((ops.shape(query)[0],), "int32")
        else:
            valid_length = F.valid_lengths(mask)
        valid_length = ops.expand_dims(valid_length, -1)  # [B, 1]
        if self.alignment == "local_monotonic":
            return ops.minimum(ops.maximum(query_positions, 0), valid_length - 1), None
        # In float32 at least: p_t must resolve single positions even for long memories.
        dtype = F.wide_float_dtype(query.dtype)
        hidden = ops.tanh(F.project(ops.cast(query, dtype), ops.cast(self.position_kernel, dtype)))
        logit = ops.einsum("btu,u->bt", hidden, ops.cast(self.position_vector, dtype))
        predicted = ops.cast(valid_length, dtype) * ops.sigmoid(logit)
        return ops.cast(ops.floor(predicted + 0.5), "int32"), predicted

    def _local_weights(
        self, query, features, keys, mask, length, query_positions, causal, fused=False
    ):
        radius = self.window_radius
        center, predicted = self._local_centers(query, mask, length, query_positions)
        positions = F.window_positions(center, radius)  # [B, T, 2D+1]
        if fused:
            key_windows = None
            scores = self.score.finish(F.window_dot_scores(features, keys, positions))
        else:
            key_windows = F.gather_positions(keys, positions)  # [B, T, 2D+1, d]
            scores = self.score(features, key_windows)
        valid = F.window_validity(positions, length, mask, query_positions if causal else None)
        weights = self._normalize(scores, valid)
        if predicted is not None:
            weights = weights * F.gaussian_window(positions, predicted, radius)
        return weights, positions, center - radius, key_windows

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"alignment": self.alignment, "window_radius": self.window_radius})
        if self.window_implementation != "auto":  # (absent: older configs stay identical)
            config["window_implementation"] = self.window_implementation
        return config


def _compiled_or_graph(x) -> bool:
    """False only for a concrete (eager) JAX array; True on the other backends."""
    if keras.backend.backend() != "jax":
        return True
    import jax  # the JAX backend is active, so JAX is installed

    return isinstance(x, jax.core.Tracer)


def _xla_fuses_gathers(x) -> bool:
    """Whether `x` is traced inside a TensorFlow `jit_compile=True` function, where XLA fuses
    a gather into the reduction that consumes it (the fused window path).

    JAX under `jit` is XLA too, but there (jax 0.10) the gathers are written out: `jnp.take`
    masks out-of-range indices with a select, and the CPU reductions run as separate YNNPACK
    fusions. Measured there, the fused form is slower than the einsums and the tiles are
    faster than both (see BENCHMARKS.md §2), so JAX is left out.

    The one private TensorFlow module the layers read: TensorFlow has no public way to ask
    whether a trace is inside `tf.function(jit_compile=True)` (the layer cannot see the
    model's `jit_compile`), and only its XLA context flag, read through `tensorflow.python`,
    tells. Should that move, the answer is False and the tiles run (slower under XLA, the same
    numbers), and `tests/layers/test_local_fused.py::test_the_private_xla_probe_answers`
    fails, to say so.
    """
    if keras.backend.backend() != "tensorflow":
        return False
    try:
        import tensorflow as tf
        from tensorflow.python.ops import control_flow_util

        if tf.executing_eagerly():
            return False
        return bool(control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()))
    except Exception:  # pragma: no cover - a TensorFlow without the private helper
        return False
