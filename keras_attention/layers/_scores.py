"""The scores the attention layers are composed from. Private.

An attention layer is a *form* and a *score*. The form is its class: global attention
(`BaseAttention`), Luong's global or local alignment (`_local_attention.LocalAttentionBase`), or
a recurrent alignment (`RecurrentAttention`: monotonic, location-sensitive). The score is one of
the objects here, made by the layer's constructor from its options. It owns everything between
a query and its energies:

- the weights of its family: none (dot), `W_g` (general), `W_a`, `U_a`, `v` and the
  weight-normalisation `g`, `b` (additive, which is also Luong's concat), plus the location
  filters (location-sensitive);
- the key and query projections (`project_keys` once per memory, `project_query` per call);
- the energy `e = g · score(s, h) + r`, with the learned scale `g` (`use_scale`) and the
  monotonic score bias `r` where the layer has them.

A score is plain Python, not a `keras.layers.Layer`. `build(layer, query_dim, key_dim)` creates
its weights on the layer that holds it, with the names and in the order saved files have (the
family's weights, then `score_bias`, then `scale`), and sets them as that layer's attributes
(`layer.query_kernel`, ...). Checkpoints, `.keras` files and tfa migration therefore see the
same layer as before the layers were composed.
"""

from __future__ import annotations

import math
from typing import Any

import keras
from keras import ops

from keras_attention import functional as F
from keras_attention.functional.monotonic import location_features


def default_norm_scale(units: int) -> float:
    """The initial value of the weight-normalisation scale g: sqrt(1 / U)."""
    return math.sqrt(1.0 / units)


class Score:
    """A score family: its weights, its projections and its energies.

    Args:
        use_scale: Multiply the energies by the learned scalar `scale` (initially 1).
        bias_init: Add the learned scalar `score_bias`, initially this value (monotonic
            attention); `None`: no bias.
    """

    #: Whether the energy is the dot product `features · keys` (dot, general). Global attention
    #: then keeps the keys transposed (`[B, d, S]`, once per memory), and local attention may
    #: use its blocked, tiled and fused window paths.
    dot_type: bool = False

    def __init__(self, *, use_scale: bool = False, bias_init: float | None = None) -> None:
        self.use_scale = use_scale
        self.bias_init = bias_init

    def build(self, layer, query_dim: int, key_dim: int) -> None:
        """Create the weights on `layer`: the family's, then `score_bias`, then `scale`."""
        self.build_family(layer, query_dim, key_dim)
        if self.bias_init is not None:
            initializer = keras.initializers.Constant(self.bias_init)
            self.bias = layer.score_bias = layer.add_weight(
                name="score_bias", shape=(), initializer=initializer
            )
        if self.use_scale:
            self.scale = layer.scale = layer.add_weight(name="scale", shape=(), initializer="ones")

    def build_family(self, layer, query_dim: int, key_dim: int) -> None:
        """The family's own weights (none for dot)."""

    def project_keys(self, key):
        """Keys as the energy reads them, computed once per memory (`h W_g`, `h U_a` or `h`)."""
        return key

    def project_query(self, query):
        """Query features as the energy reads them (`s W_a` for additive, `s` otherwise)."""
        return query

    def energies(self, features, keys, keys_transposed: bool = False):
        """The family's scores `[B, T, S]` (keys `[B, S, .]`, or `[B, ., S]` when
        `keys_transposed`) or `[B, T, W]` (keys `[B, T, W, .]`), in float32 at least."""
        raise NotImplementedError

    def finish(self, scores):
        """`g · scores + r`, in the scores' dtype (float32: never scaled in float16)."""
        if self.use_scale:
            scores = scores * ops.cast(self.scale, scores.dtype)
        if self.bias_init is not None:
            scores = scores + ops.cast(self.bias, scores.dtype)
        return scores

    def __call__(self, features, keys, keys_transposed: bool = False):
        """The energies: `finish(energies(features, keys))`."""
        return self.finish(self.energies(features, keys, keys_transposed))


class DotScore(Score):
    """Luong's dot score `e_i = s · h_i` (queries and keys of the same size)."""

    dot_type = True

    def build_family(self, layer, query_dim: int, key_dim: int) -> None:
        if query_dim != key_dim:
            raise ValueError(
                f"score_mode='dot' needs queries and keys of the same size, but layer "
                f"{layer.name} received query size {query_dim} and key size {key_dim}. Use "
                "score_mode='general' (a learned [key, query] kernel) or AdditiveAttention."
            )

    def energies(self, features, keys, keys_transposed: bool = False):
        return F.dot_scores(features, keys, keys_transposed=keys_transposed)


class GeneralScore(DotScore):
    """Luong's general score `e_i = s · (h_i W_g)`, `W_g` `[d_h, d_s]` (`score_kernel`).

    Args:
        project_query: Compute `(s W_gᵀ) · h_i` instead: the query is projected and the raw
            memory serves as keys. Local windows use it: the keys and the values are then the
            same tensor and one window is gathered (and scattered back in the gradient) in
            place of two, for the same FLOPs. Globally the keys `h W_g` are made once per
            memory, so the keys are projected there.
        **kwargs: `use_scale`, `bias_init` (see `Score`).
    """

    def __init__(self, *, project_query: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.query_side = project_query

    def build_family(self, layer, query_dim: int, key_dim: int) -> None:
        self.kernel = layer.score_kernel = layer._add_kernel("score_kernel", (key_dim, query_dim))

    def project_keys(self, key):
        return key if self.query_side else F.project(key, self.kernel)

    def project_query(self, query):
        return F.project(query, ops.transpose(self.kernel)) if self.query_side else query


class AdditiveScore(Score):
    """Bahdanau's score `e_i = v · tanh(s W_a + h_i U_a)` (also Luong's concat).

    `W_a` `[d_s, U]` (`query_kernel`), `U_a` `[d_h, U]` (`key_kernel`), `v` `[U]`
    (`score_vector`). With `normalize`: `v` replaced by `g v / ‖v‖` and a bias `b` inside the
    `tanh` (`norm_scale` g, initially `sqrt(1 / U)`; `norm_bias` b, initially 0). With
    `query_bias`: the query projection has a bias, `s W_a + b_q` (`query_bias` `[U]`, initially
    0; OpenNMT-py's `mlp` score, whose `linear_query` has one).

    Args:
        units: U. `None`: the query size.
        normalize: The weight-normalised form.
        query_bias: A learned bias `b_q` on the query projection.
        **kwargs: `use_scale`, `bias_init` (see `Score`).
    """

    def __init__(
        self,
        *,
        units: int | None = None,
        normalize: bool = False,
        query_bias: bool = False,
        **kwargs: Any,
    ):
        super().__init__(**kwargs)
        self.units = units
        self.normalize = normalize
        self.query_bias = query_bias

    def build_family(self, layer, query_dim: int, key_dim: int) -> None:
        units = self.units or query_dim
        add = layer._add_kernel
        self.query_kernel = layer.query_kernel = add("query_kernel", (query_dim, units))
        self.key_kernel = layer.key_kernel = add("key_kernel", (key_dim, units))
        self.vector = layer.score_vector = add("score_vector", (units,))
        if self.normalize:
            initializer = keras.initializers.Constant(default_norm_scale(units))
            self.norm_scale = layer.norm_scale = layer.add_weight(
                name="norm_scale", shape=(), initializer=initializer
            )
            self.norm_bias = layer.norm_bias = layer.add_weight(
                name="norm_bias", shape=(units,), initializer="zeros"
            )
        if self.query_bias:  # after the weights of every older configuration
            self.bias_q = layer.query_bias = layer.add_weight(
                name="query_bias", shape=(units,), initializer="zeros"
            )
        self.dtype = F.wide_float_dtype(layer.compute_dtype)

    def project_keys(self, key):
        return F.project(key, self.key_kernel)

    def project_query(self, query):
        features = F.project(query, self.query_kernel)
        if self.query_bias:
            features = features + ops.cast(self.bias_q, features.dtype)
        return features

    def energies(self, features, keys, keys_transposed: bool = False):
        if not self.normalize:
            return F.additive_scores(features, keys, self.vector)
        # g · v / ‖v‖ in float32: in float16 ‖v‖² overflows once ‖v‖ passes 256 (zero scores)
        # and underflows for tiny v (0 / 0 = NaN).
        vector = ops.cast(self.vector, self.dtype)
        norm = ops.sqrt(ops.sum(ops.square(vector)))
        vector = ops.cast(self.norm_scale, self.dtype) * vector / norm
        return F.additive_scores(features, keys, vector, bias=self.norm_bias)


class LocationScore(AdditiveScore):
    """The additive score with location features: `e_i = v · tanh(s W_a + h_i U_a + f_i P)`.

    `f = F * α`: a 1-D convolution over the memory axis of the previous alignment (and the
    cumulative one as a second channel), `F` `[K, C, filters]` (`location_kernel`), `P`
    `[filters, U]` (`location_projection`); `locate(states, dtype)` gives `f P` `[B, S, U]`,
    which the layer adds to the keys.

    Args:
        filters: Number of location filters.
        kernel_size: K.
        channels: C, the number of alignment states convolved (1, or 2 cumulative).
        **kwargs: `units`, `normalize`, `use_scale` (see `AdditiveScore`).
    """

    def __init__(self, *, filters: int, kernel_size: int, channels: int, **kwargs: Any):
        super().__init__(**kwargs)
        self.filters, self.kernel_size, self.channels = filters, kernel_size, channels

    def build_family(self, layer, query_dim: int, key_dim: int) -> None:
        super().build_family(layer, query_dim, key_dim)
        units = self.units or query_dim
        self.location_kernel = layer.location_kernel = layer._add_kernel(
            "location_kernel", (self.kernel_size, self.channels, self.filters)
        )
        self.location_projection = layer.location_projection = layer._add_kernel(
            "location_projection", (self.filters, units)
        )

    def locate(self, states, dtype):
        """`f P` `[B, S, U]` from the alignment states (each `[B, S]`), in `dtype`."""
        previous = ops.stack([ops.cast(s, dtype) for s in states], axis=-1)  # [B, S, C]
        kernel = ops.cast(self.location_kernel, dtype)
        features = location_features(previous, kernel)
        return F.project(features, ops.cast(self.location_projection, dtype))
