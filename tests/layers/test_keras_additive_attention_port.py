"""Keras 3's own tests of `keras.layers.AdditiveAttention`, run against our `AdditiveAttention`.

Ported from keras-team/keras `keras/src/layers/attention/additive_attention_test.py` (Keras
3.15), every test, plus `test_attention_nd_inputs` of `attention_test.py`, which Keras'
`AdditiveAttention` inherits from `keras.layers.Attention` and passes. Where a Keras test
needs a Keras number, our layer is configured to compute Keras' function, and where it can, a
test also compares with `keras.layers.AdditiveAttention` itself.

Two differences are deliberate (docs/attention-layers.md, "Keras' AdditiveAttention"):

- **Learned projections.** Keras' score is `Σ_j scale_j · tanh(q_j + k_j)` on raw queries and
  keys of one size; ours is Bahdanau's `v · tanh(s W_a + h U_a)`, so queries and keys may have
  different sizes. With `W_a = U_a = I` and `v = 1` (or `v = scale`, Keras' `use_scale=True`
  vector) the two are the same function: `test_attention_correctness` and the comparisons with
  Keras set them so. Our weights are therefore `query_kernel`, `key_kernel`, `score_vector` (and
  a scalar `scale` with `use_scale=True`, which is off by default where Keras' is on): 3 or 4
  trainable weights in `test_attention_basics` where Keras has 0 or 1.
- **Pooling on one tensor.** `layer(x)` is attention pooling (the query is the last valid step
  of `x`), a documented feature, where Keras refuses a call that is not a list ("must be called
  on a list"). The other three error cases of `test_attention_errors` raise Keras' messages.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras.src import testing

from keras_attention import AdditiveAttention
from tests.backend_utils import to_numpy


def _as_keras(layer, dim: int, scale=None):
    """Set `layer`'s weights so that its score is Keras' `Σ_j scale_j · tanh(q_j + k_j)`."""
    layer.query_kernel.assign(np.eye(dim))
    layer.key_kernel.assign(np.eye(dim))
    layer.score_vector.assign(np.ones(dim) if scale is None else scale)
    return layer


class AdditiveAttentionPortTest(testing.TestCase):
    @pytest.mark.slow  # run_layer_test compiles several functions
    def test_attention_basics(self):
        # Keras: use_scale=True has 1 weight (its scale vector), use_scale=False none. Ours
        # always has the projections and v (3 weights), plus the scalar `scale` (4).
        self.run_layer_test(
            AdditiveAttention,
            init_kwargs={"use_scale": True, "dropout": 0.5},
            input_shape=[(2, 3, 4), (2, 4, 4)],
            expected_output_shape=(2, 3, 4),
            expected_num_trainable_weights=4,
            expected_num_non_trainable_weights=0,
            expected_num_seed_generators=1,
            expected_num_losses=0,
            supports_masking=True,
            run_training_check=False,
        )
        self.run_layer_test(
            AdditiveAttention,
            init_kwargs={"use_scale": False, "dropout": 0.5},
            input_shape=[(2, 3, 4), (2, 4, 4)],
            expected_output_shape=(2, 3, 4),
            expected_num_trainable_weights=3,
            expected_num_non_trainable_weights=0,
            expected_num_seed_generators=1,
            expected_num_losses=0,
            supports_masking=True,
            run_training_check=False,
        )

    def test_attention_correctness(self):
        query = np.array([[[1.0, 0.0], [0.0, 1.0]]])
        key = np.array([[[0.0, 1.0], [1.0, 0.0]]])
        value = np.array([[[1.0, 2.0], [3.0, 4.0]]])

        layer = AdditiveAttention(use_scale=False)
        layer.build([query.shape, value.shape, key.shape])
        _as_keras(layer, 2)
        output, scores = layer([query, value, key], return_attention_scores=True)
        # Keras' own expected numbers.
        self.assertAllClose(output, [[[1.727, 2.727], [2.272, 3.272]]], atol=1e-3)
        self.assertAllClose(scores, [[[0.636, 0.363], [0.363, 0.636]]], atol=1e-3)

    def test_attention_with_mask(self):
        # The numbers do not depend on the weights: one valid memory position.
        layer = AdditiveAttention(use_scale=False)
        query = np.array([[[1.0, 0.0], [0.0, 1.0]]])
        value = np.array([[[1.0, 1.0], [1.0, 1.0]]])
        query_mask = np.array([[True, False]])
        value_mask = np.array([[True, False]])
        output, scores = layer(
            [query, value], mask=[query_mask, value_mask], return_attention_scores=True
        )
        self.assertAllClose(output, [[[1.0, 1.0], [0.0, 0.0]]])
        self.assertAllClose(scores, [[[1.0, 0.0], [1.0, 0.0]]])

    def test_attention_errors(self):
        layer = AdditiveAttention()
        tensor = np.array([[[1.0, 1.0], [1.0, 1.0]]])
        # Keras' "must be called on a list" case is attention pooling here (documented).
        self.assertEqual(tuple(layer(tensor).shape), (1, 2))

        with self.assertRaisesRegex(ValueError, "length 2 or 3"):
            layer([tensor, tensor, tensor, tensor])

        with self.assertRaisesRegex(ValueError, "layer mask must be a list"):
            layer([tensor, tensor], mask=tensor)

        with self.assertRaisesRegex(ValueError, "length 2 or 3"):
            layer([tensor, tensor], mask=[tensor])

    def test_attention_nd_inputs(self):
        """`attention_test.py`'s N-D test (e.g. 4-D from Conv2D), which Keras' additive layer
        inherits."""
        layer = AdditiveAttention()
        query = np.random.random((2, 8, 6, 4)).astype(np.float32)
        value = np.random.random((2, 8, 6, 4)).astype(np.float32)
        output = layer([query, value])
        self.assertEqual(output.shape, (2, 8, 6, 4))

        output, scores = layer([query, value], return_attention_scores=True)
        self.assertEqual(output.shape, (2, 8, 6, 4))
        self.assertEqual(scores.shape, (2, 8, 6, 6))


# ---------------------------------------------------- the same numbers as Keras' layer itself
@pytest.mark.parametrize("use_scale", [False, True])
def test_matches_keras_additive_attention_nd_with_masks(use_scale):
    """N-D queries, masks, key and value apart and the causal mask: the numbers of
    `keras.layers.AdditiveAttention` with its weights copied across."""
    rng = np.random.default_rng(7)
    query = rng.normal(size=(2, 3, 4, 5)).astype("float32")
    key = rng.normal(size=(2, 3, 4, 5)).astype("float32")
    value = rng.normal(size=(2, 3, 4, 6)).astype("float32")
    query_mask = rng.random((2, 3, 4)) > 0.3
    value_mask = rng.random((2, 3, 4)) > 0.3
    value_mask[..., 0] = True  # no all-padding row (Keras averages it, we give zeros)

    theirs = keras.layers.AdditiveAttention(use_scale=use_scale)
    theirs.build([query.shape, value.shape, key.shape])
    scale = None
    if use_scale:
        scale = rng.normal(size=5)
        theirs.scale.assign(scale)
    ours = AdditiveAttention()
    ours.build([query.shape, value.shape, key.shape])
    _as_keras(ours, 5, scale)

    for causal in (False, True):
        kwargs = dict(return_attention_scores=True, use_causal_mask=causal)
        out_ours, w_ours = ours([query, value, key], mask=[query_mask, value_mask], **kwargs)
        # Keras broadcasts an N-D value mask without the causal mask only as [*batch, 1, S]
        # (it expands a [B, S] mask itself, not [*batch, S]); ours takes [*batch, S].
        their_mask = value_mask if causal else value_mask[..., None, :]
        out_theirs, w_theirs = theirs([query, value, key], mask=[query_mask, their_mask], **kwargs)
        np.testing.assert_allclose(to_numpy(w_ours), to_numpy(w_theirs), atol=1e-6)
        np.testing.assert_allclose(to_numpy(out_ours), to_numpy(out_theirs), atol=1e-5)


def test_nd_inputs_symbolic_and_output_shape():
    query = keras.Input((8, 6, 4))
    value = keras.Input((8, 5, 3))
    layer = AdditiveAttention(score_units=7)
    output, scores = layer([query, value], return_attention_scores=True)
    assert tuple(output.shape) == (None, 8, 6, 3)
    assert tuple(scores.shape) == (None, 8, 6, 5)
    assert layer.compute_output_shape([(2, 8, 6, 4), (2, 8, 5, 3)]) == (2, 8, 6, 3)
    model = keras.Model([query, value], output)
    result = model([np.ones((2, 8, 6, 4), "float32"), np.ones((2, 8, 5, 3), "float32")])
    assert tuple(result.shape) == (2, 8, 6, 3)


@pytest.mark.parametrize(
    "shapes, match",
    [
        ([(2, 8, 6, 4), (2, 5, 4)], r"`value`.*rank of `query` \(4.*value.shape=\(2, 5, 4\)"),
        ([(2, 8, 6, 4), (2, 7, 5, 4)], r"same leading.*value.shape=\(2, 7, 5, 4\)"),
    ],
)
def test_nd_inputs_need_a_memory_of_the_same_batch_axes(shapes, match):
    arrays = [np.ones(s, "float32") for s in shapes]
    with pytest.raises(ValueError, match=match):
        AdditiveAttention()(arrays)


def test_a_mask_list_of_one_is_refused_with_what_it_received():
    tensor = np.ones((1, 2, 2), "float32")
    with pytest.raises(ValueError, match=r"length 2 or 3.*a list of 1 masks.*shape \(1, 2\)"):
        AdditiveAttention()([tensor, tensor], mask=[np.array([[True, False]])])
    with pytest.raises(ValueError, match=r"layer mask must be a list.*shape \(1, 2, 2\)"):
        AdditiveAttention()([tensor, tensor], mask=tensor)
