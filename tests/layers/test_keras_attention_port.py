"""Keras 3's own tests of `keras.layers.Attention`, run against `LuongAttention()`.

Ported from keras-team/keras `keras/src/layers/attention/attention_test.py` (Keras 3.15):
docs/attention-layers.md promises that `LuongAttention()` is a drop-in replacement for
`keras.layers.Attention()`, so the same calls must give the same numbers, shapes and masks.
Every test of that file is here, with the layer swapped; the expected numbers are Keras' own
(hand-computed in that file, and checked against `keras.layers.Attention` itself where a test
compares). Left out, each for a documented reason:

- `test_attention_errors`' "must be called on a list": one tensor is attention pooling
  (`model.add(LuongAttention())`), a documented feature; the other three error cases raise
  Keras' messages (with the layer's name and what was received).
- `test_attention_invalid_score_mode`: kept, with our message (it lists dot/general/concat).
- `test_attention_calculate_scores_with_scale` and the three `_calculate_score_mask` tests call
  private methods of `keras.layers.Attention`; the same numbers are checked through the public
  call (`test_scale_scores_match_keras`, `test_causal_and_value_mask_match_keras`).

`test_attention_nd_inputs` (queries of rank > 3, e.g. 4-D from Conv2D) is Keras' own test: the
leading axes are one batch axis inside the layer.

Then `keras.src.testing.TestCase.run_layer_test` (Keras' own layer checker: build, symbolic and
eager calls, output shapes, weights, seed generators, masking, serialisation) on every public
layer and mode.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops
from keras.src import testing

from keras_attention import AdditiveAttention, LuongAttention
from tests.backend_utils import to_numpy
from tests.conftest import LAYER_CASES, LAYER_IDS


class AttentionPortTest(testing.TestCase):
    @pytest.mark.slow  # run_layer_test compiles several functions: ~10 s on JAX
    def test_attention_basics(self):
        # No scale, dot.
        self.run_layer_test(
            LuongAttention,
            init_kwargs={"score_mode": "dot", "dropout": 0.5},
            input_shape=[(2, 3, 4), (2, 4, 4)],
            expected_output_shape=(2, 3, 4),
            expected_num_trainable_weights=0,
            expected_num_non_trainable_weights=0,
            expected_num_seed_generators=1,
            expected_num_losses=0,
            supports_masking=True,
            run_training_check=False,
        )
        # Scale and concat (ours has query_kernel, key_kernel, score_vector and scale where
        # Keras' concat has scale and concat_score_weight: Luong's concat score is learned).
        self.run_layer_test(
            LuongAttention,
            init_kwargs={"use_scale": True, "score_mode": "concat", "dropout": 0.5},
            input_shape=[(2, 3, 4), (2, 4, 4)],
            expected_output_shape=(2, 3, 4),
            expected_num_trainable_weights=4,
            expected_num_non_trainable_weights=0,
            expected_num_seed_generators=1,
            expected_num_losses=0,
            supports_masking=True,
            run_training_check=False,
        )

    def test_attention_seed_preserved_in_config(self):
        layer = LuongAttention(dropout=0.5, seed=1337)
        config = layer.get_config()
        self.assertEqual(config["seed"], 1337)
        restored = LuongAttention.from_config(config)
        self.assertEqual(restored.seed, 1337)

    def test_attention_correctness(self):
        query = np.array([[[1.0, 0.0], [0.0, 1.0]]])
        key = np.array([[[0.0, 1.0], [1.0, 0.0]]])
        value = np.array([[[1.0, 2.0], [3.0, 4.0]]])
        output, scores = LuongAttention(score_mode="dot")(
            [query, value, key], return_attention_scores=True
        )
        self.assertAllClose(output, [[[2.462, 3.462], [1.538, 2.538]]], atol=1e-3)
        self.assertAllClose(scores, [[[0.269, 0.731], [0.731, 0.269]]], atol=1e-3)
        # Keras' "concat" score (tanh(q + k) summed, no weights) is not Luong's concat; it is
        # checked against keras.layers.Attention in test_concat_is_luongs_not_keras.

    def test_attention_with_mask(self):
        layer = LuongAttention()
        query = np.array([[[1.0, 0.0], [0.0, 1.0]]])
        value = np.array([[[1.0, 1.0], [1.0, 1.0]]])
        query_mask = np.array([[True, False]])
        value_mask = np.array([[True, False]])
        output, scores = layer(
            [query, value], mask=[query_mask, value_mask], return_attention_scores=True
        )
        self.assertAllClose(output, [[[1.0, 1.0], [0.0, 0.0]]])
        self.assertAllClose(scores, [[[1.0, 0.0], [1.0, 0.0]]])

    def test_attention_2D_mask_shape_mismatch(self):
        layer = LuongAttention()
        batch_size, tq, tv, dim = 2, 3, 4, 5
        query = np.random.random((batch_size, tq, dim)).astype(np.float32)
        value = np.random.random((batch_size, tv, dim)).astype(np.float32)
        query_mask = np.array([[True, False, True], [True, False, True]])
        value_mask = np.array([[True, False, True, True], [True, False, True, True]])
        output, scores = layer(
            [query, value], mask=[query_mask, value_mask], return_attention_scores=True
        )
        self.assertEqual(output.shape, (batch_size, tq, dim))
        self.assertEqual(scores.shape, (batch_size, tq, tv))

    def test_attention_errors(self):
        layer = LuongAttention()
        tensor = np.array([[[1.0, 1.0], [1.0, 1.0]]])
        with self.assertRaisesRegex(ValueError, "length 2 or 3"):
            layer([tensor, tensor, tensor, tensor])
        with self.assertRaisesRegex(ValueError, "layer mask must be a list"):
            layer([tensor, tensor], mask=tensor)
        with self.assertRaisesRegex(ValueError, "length 2 or 3"):
            layer([tensor, tensor], mask=[tensor])

    def test_attention_with_dropout(self):
        query = np.array([[[1.0, 0.0], [0.0, 1.0]]])
        value = np.array([[[1.0, 1.0], [1.0, 1.0]]])
        output1, scores1 = LuongAttention(dropout=0.2, seed=3)(
            [query, value], return_attention_scores=True, training=True
        )
        output2, scores2 = LuongAttention()(
            [query, value], return_attention_scores=True, training=True
        )
        self.assertNotAllClose(output1, output2)
        self.assertNotAllClose(scores1, scores2)

    def test_attention_invalid_score_mode(self):
        with self.assertRaisesRegex(ValueError, "score_mode.*invalid_mode"):
            LuongAttention(score_mode="invalid_mode")

    def test_attention_compute_mask_with_no_mask(self):
        layer = LuongAttention()
        inputs = [np.random.random((2, 3, 4)), np.random.random((2, 4, 4))]
        self.assertIsNone(layer.compute_mask(inputs=inputs, mask=None))

    def test_attention_compute_mask_with_first_element_none(self):
        layer = LuongAttention()
        inputs = [np.random.random((2, 3, 4)), np.random.random((2, 4, 4))]
        self.assertIsNone(
            layer.compute_mask(inputs=inputs, mask=[None, np.array([True, False, True])])
        )

    def test_attention_compute_mask_returns_the_query_mask(self):
        # Keras' tests "does_not_return_none_with_valid_mask", "returns_correct_tensor_with_
        # valid_mask", "all_true", "all_false", "non_boolean", "edge_case", "single_element",
        # "different_input_shapes" and the three tolerance tests: a fresh layer's
        # compute_mask returns mask[0] as given.
        layer = LuongAttention()
        masks = [
            np.array([True, False, True]),
            np.array([True, True, True]),
            np.array([False, False, False]),
            np.array([True]),
            np.array([1, 0, 1]),
            np.array([1.0, 0.0, 1.0]),
        ]
        for shape in [(2, 3, 4), (3, 2, 5), (4, 1, 6)]:
            inputs = [np.ones(shape), np.ones(shape)]
            for mask in masks:
                computed = ops.convert_to_numpy(layer.compute_mask(inputs, [mask, ~(mask > 0)]))
                self.assertEqual(computed.shape, mask.shape)
                self.assertTrue(np.array_equal(computed, mask))

    def test_attention_compute_output_shape(self):
        query = np.random.random((2, 3, 4))
        value = np.random.random((2, 3, 5))
        key = np.random.random((2, 3, 4))
        layer = LuongAttention()
        output = layer([query, value, key])
        self.assertEqual(output.shape, value.shape)
        self.assertEqual(
            layer.compute_output_shape([query.shape, value.shape, key.shape]), output.shape
        )

    def test_attention_nd_inputs(self):
        """Test that Attention handles N-D inputs (e.g. 4D from Conv2D)."""
        layer = LuongAttention()
        query = np.random.random((2, 8, 6, 4)).astype(np.float32)
        value = np.random.random((2, 8, 6, 4)).astype(np.float32)
        output = layer([query, value])
        self.assertEqual(output.shape, (2, 8, 6, 4))

        output, scores = layer([query, value], return_attention_scores=True)
        self.assertEqual(output.shape, (2, 8, 6, 4))
        self.assertEqual(scores.shape, (2, 8, 6, 6))

    def test_nd_inputs_match_keras(self):
        rng = np.random.default_rng(3)
        query = rng.random((2, 3, 4, 5)).astype("float32")
        value = rng.random((2, 3, 6, 5)).astype("float32")
        value_mask = rng.random((2, 3, 6)) > 0.3
        value_mask[..., 0] = True
        query_mask = rng.random((2, 3, 4)) > 0.3
        out_ours, w_ours = LuongAttention()(
            [query, value], mask=[query_mask, value_mask], return_attention_scores=True
        )
        # Keras broadcasts an N-D value mask only when given as [*batch, 1, S] (it expands a
        # [B, S] mask itself, not [*batch, S]); ours takes the value's own [*batch, S].
        out_theirs, w_theirs = keras.layers.Attention()(
            [query, value],
            mask=[query_mask, value_mask[..., None, :]],
            return_attention_scores=True,
        )
        self.assertAllClose(w_ours, w_theirs, atol=1e-6)
        self.assertAllClose(out_ours, out_theirs, atol=1e-6)
        # Local windows over N-D queries: the same as each row on its own.
        local = LuongAttention("general", alignment="local_monotonic", window_radius=1)
        out_nd = local([query, value], mask=[query_mask, value_mask])
        out_3d = local(
            [query.reshape(6, 4, 5), value.reshape(6, 6, 5)],
            mask=[query_mask.reshape(6, 4), value_mask.reshape(6, 6)],
        )
        self.assertAllClose(to_numpy(out_nd).reshape(6, 4, 5), out_3d, atol=1e-6)

    def test_return_attention_scores_true(self):
        query = np.random.random((2, 8, 16)).astype(np.float32)
        value = np.random.random((2, 4, 16)).astype(np.float32)
        output, scores = LuongAttention()([query, value], return_attention_scores=True)
        self.assertEqual(output.shape, (2, 8, 16))
        self.assertEqual(scores.shape, (2, 8, 4))

    def test_return_attention_scores_true_and_tuple(self):
        query = np.random.random((2, 8, 16)).astype(np.float32)
        value = np.random.random((2, 4, 16)).astype(np.float32)
        outputs = LuongAttention()([query, value], return_attention_scores=True)
        self.assertIsInstance(outputs, tuple)
        output, scores = outputs
        self.assertEqual(output.shape, (2, 8, 16))
        self.assertEqual(scores.shape, (2, 8, 4))

    def test_return_attention_scores_with_symbolic_tensors(self):
        x = keras.layers.Input(shape=(3, 5))
        y = keras.layers.Input(shape=(4, 5))
        output, scores = LuongAttention()([x, y], return_attention_scores=True)
        self.assertEqual(output.shape, (None, 3, 5))
        self.assertEqual(scores.shape, (None, 3, 4))

    def test_symbolic_call_does_not_leak_return_attention_scores(self):
        attention = LuongAttention()
        q = np.random.rand(2, 3, 5).astype("float32")
        v = np.random.rand(2, 4, 5).astype("float32")
        attention([q, v], return_attention_scores=True)
        x = keras.layers.Input(shape=(3, 5))
        y = keras.layers.Input(shape=(4, 5))
        output = attention([x, y])
        self.assertNotIsInstance(output, (tuple, list))
        self.assertEqual(output.shape, (None, 3, 5))
        self.assertEqual(attention.compute_output_shape([x.shape, y.shape]), (None, 3, 5))

    # ------------------------------------------ the private-method tests, through the public call
    def test_scale_scores_match_keras(self):
        rng = np.random.default_rng(0)
        query = rng.random((2, 3, 4)).astype("float32")
        value = rng.random((2, 4, 4)).astype("float32")
        ours, theirs = LuongAttention(use_scale=True), keras.layers.Attention(use_scale=True)
        ours.build([query.shape, value.shape])
        theirs.build([query.shape, value.shape])
        ours.scale.assign(1.7)
        theirs.scale.assign(1.7)
        _, w_ours = ours([query, value], return_attention_scores=True)
        _, w_theirs = theirs([query, value], return_attention_scores=True)
        self.assertAllClose(w_ours, w_theirs, atol=1e-6)

    def test_causal_and_value_mask_match_keras(self):
        rng = np.random.default_rng(1)
        query = rng.random((2, 4, 3)).astype("float32")
        value = rng.random((2, 4, 3)).astype("float32")
        value_mask = np.array([[True, False, True, False], [True, True, True, True]])
        kwargs = dict(mask=[None, value_mask], use_causal_mask=True, return_attention_scores=True)
        _, w_ours = LuongAttention()([query, value], **kwargs)
        _, w_theirs = keras.layers.Attention()([query, value], **kwargs)
        self.assertAllClose(w_ours, w_theirs, atol=1e-6)

    def test_concat_is_luongs_not_keras(self):
        # Keras' "concat" is tanh(q + k) summed over features with a scalar weight; Luong's is
        # v · tanh(s W_q + h W_k). With W_q = W_k = I and v = 1 they coincide.
        query = np.array([[[1.0, 0.0], [0.0, 1.0]]])
        key = np.array([[[0.0, 1.0], [1.0, 0.0]]])
        value = np.array([[[1.0, 2.0], [3.0, 4.0]]])
        layer = LuongAttention("concat")
        layer.build([query.shape, value.shape, key.shape])
        layer.query_kernel.assign(np.eye(2))
        layer.key_kernel.assign(np.eye(2))
        layer.score_vector.assign(np.ones(2))
        output, scores = layer([query, value, key], return_attention_scores=True)
        # Keras' own expected numbers for its concat test.
        self.assertAllClose(output, [[[1.727, 2.727], [2.272, 3.272]]], atol=1e-3)
        self.assertAllClose(scores, [[[0.636, 0.363], [0.363, 0.636]]], atol=1e-3)


# ------------------------------------------------------------------ run_layer_test everywhere
def _expected_weights(kwargs: dict) -> int:
    mode = kwargs.get("score_mode", "additive")
    count = {"dot": 0, "general": 1, "concat": 3, "additive": 3}[mode]
    count += 2 if kwargs.get("normalize") else 0
    count += 1 if kwargs.get("use_scale") else 0
    count += 2 if kwargs.get("alignment") == "local_predictive" else 0
    return count


@pytest.mark.slow  # run on TensorFlow in make test (~0.1 s each); 2-5 s each on JAX
@pytest.mark.parametrize("case", LAYER_CASES, ids=LAYER_IDS)
def test_run_layer_test(case):
    _, cls, kwargs, _ = case
    tester = testing.TestCase()
    tester.run_layer_test(
        cls,
        init_kwargs=dict(kwargs),
        input_shape=[(2, 3, 4), (2, 5, 4)],
        expected_output_shape=(2, 3, 4),
        expected_num_trainable_weights=_expected_weights(kwargs),
        expected_num_non_trainable_weights=0,
        expected_num_seed_generators=0,
        expected_num_losses=0,
        supports_masking=True,
        run_training_check=False,
    )


# ------------------------------------------------------------------ the stateless mask contract
def test_fresh_layer_compute_mask_returns_query_mask():
    query_mask = np.array([[True, False, True]])
    for layer in (LuongAttention(), AdditiveAttention(score_units=3), keras.layers.Attention()):
        inputs = [np.ones((1, 3, 4)), np.ones((1, 2, 4))]
        mask = layer.compute_mask(inputs, [query_mask, np.array([[True, True]])])
        assert np.array_equal(ops.convert_to_numpy(mask), query_mask), type(layer).__name__


@pytest.mark.parametrize("order", ["pool_first", "pair_first"])
def test_shared_layer_gets_the_mask_of_each_call_form(order):
    """One layer used for pooling and for query-value attention: each output has its own mask."""
    layer = LuongAttention()
    tokens = keras.Input((None,), dtype="int32")
    sequence = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)

    def pool():
        return layer(sequence)

    def pair():
        return layer(sequence, sequence)

    first, second = (pool, pair) if order == "pool_first" else (pair, pool)
    outputs = {
        order.split("_")[0]: first(),
        ("pair" if order == "pool_first" else "pool"): second(),
    }
    pooled, paired = outputs["pool"], outputs["pair"]
    model = keras.Model(tokens, [pooled, paired])
    ids = np.array([[3, 4, 0, 0], [5, 0, 0, 0]])
    pooled_value, paired_value = model(ids)
    assert tuple(pooled_value.shape) == (2, 4)
    assert tuple(paired_value.shape) == (2, 4, 4)
    assert getattr(pooled, "_keras_mask", None) is None
    paired_mask = layer.compute_mask(sequence, np.ones((2, 4), bool))  # outside a call: pooling
    assert paired_mask is None
    # Padded query steps of the pair form are zero (the query mask is honoured and kept).
    assert np.allclose(to_numpy(paired_value)[0, 2:], 0.0)


def test_mask_propagates_downstream_only_for_sequence_outputs():
    tokens = keras.Input((None,), dtype="int32")
    sequence = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
    attended = LuongAttention()(sequence, sequence)
    pooled = LuongAttention()(sequence)
    step = LuongAttention()(keras.layers.GlobalAveragePooling1D()(sequence), sequence)
    assert attended._keras_mask is not None
    assert getattr(pooled, "_keras_mask", None) is None
    assert getattr(step, "_keras_mask", None) is None


@pytest.mark.parametrize(
    "shapes, expected",
    [
        ([(2, 3, 4), (2, 5, 6)], (2, 3, 6)),
        ([(2, 3, 4), (2, 5, 6), (2, 5, 4)], (2, 3, 6)),
        ([(None, None, 4), (None, None, 6)], (None, None, 6)),
        ([(2, 4), (2, 5, 6)], (2, 6)),
    ],
)
def test_compute_output_shape_matches_call(shapes, expected):
    layer = LuongAttention("general")
    assert layer.compute_output_shape(shapes) == expected
    assert layer.compute_output_shape(*shapes) == expected
    if None not in expected:
        arrays = [np.ones(s, "float32") for s in shapes]
        assert tuple(LuongAttention("general")(arrays).shape) == expected


def test_compute_output_shape_pooling_and_attention_units():
    assert LuongAttention().compute_output_shape((2, 7, 4)) == (2, 4)
    assert LuongAttention(attention_units=9).compute_output_shape([(2, 3, 4), (2, 5, 4)]) == (
        2,
        3,
        9,
    )
    assert AdditiveAttention(score_units=3).compute_output_shape([(2, 3, 4), (2, 5, 6)]) == (
        2,
        3,
        6,
    )
