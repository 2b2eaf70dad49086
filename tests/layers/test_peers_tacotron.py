"""Tacotron 2's location-sensitive attention, reproduced by `LocationSensitiveAttention` with
`attention_dim` ≠ the query size, against a float64 NumPy transcription of NVIDIA's reference
implementation (`tests/reference_peers.py`, from `model.py`: `LocationLayer`, `Attention`, the
decoder's cumulative weights).

The mapping (docs/migrating-from-tfa.md, "Tacotron 2"): `Attention(attention_rnn_dim,
embedding_dim, attention_dim, n_filters, kernel_size)` is `LocationSensitiveAttention(
score_units=attention_dim, filters=n_filters, kernel_size=kernel_size, cumulative=True)`. `units`
must be given: it defaults to the query size (`attention_rnn_dim`, 1024 in Tacotron 2), while
Tacotron's `attention_dim` (128) is its own. Weights, PyTorch's `[out, in]` to our `[in, out]`:
`query_kernel = query_layer.weightᵀ`, `key_kernel = memory_layer.weightᵀ`,
`score_vector = v.weight[0]`, `location_kernel = location_conv.weight` transposed `[K, 2, F]`,
`location_projection = location_dense.weightᵀ`.
"""

from __future__ import annotations

import numpy as np

from keras_attention import LocationSensitiveAttention
from tests.backend_utils import to_numpy
from tests.reference_peers import tacotron2_attention

BATCH, STEPS, LENGTH = 2, 5, 9
RNN_DIM, EMBEDDING_DIM, ATTENTION_DIM, FILTERS, KERNEL = 7, 6, 4, 3, 5
TOL = {"atol": 2e-6, "rtol": 1e-5}


def _tacotron_weights(rng):
    return {
        "query_layer.weight": rng.normal(scale=0.5, size=(ATTENTION_DIM, RNN_DIM)),
        "memory_layer.weight": rng.normal(scale=0.5, size=(ATTENTION_DIM, EMBEDDING_DIM)),
        "v.weight": rng.normal(scale=0.5, size=(1, ATTENTION_DIM)),
        "location_layer.location_conv.weight": rng.normal(size=(FILTERS, 2, KERNEL)),
        "location_layer.location_dense.weight": rng.normal(
            scale=0.5, size=(ATTENTION_DIM, FILTERS)
        ),
    }


def test_layer_is_tacotron2_attention_with_its_own_attention_dim():
    rng = np.random.default_rng(0)
    weights = _tacotron_weights(rng)
    queries = rng.normal(size=(BATCH, STEPS, RNN_DIM)).astype("float32")
    memory = rng.normal(size=(BATCH, LENGTH, EMBEDDING_DIM)).astype("float32")
    lengths = np.array([LENGTH, 6])
    padding = np.arange(LENGTH)[None, :] >= lengths[:, None]  # Tacotron's mask: True on padding
    expected_contexts, expected_alignments, _ = tacotron2_attention(
        queries, np.where(padding[..., None], 0.0, memory), weights, mask=padding
    )
    memory[padding] = 1e4  # padding is never read

    layer = LocationSensitiveAttention(
        score_units=ATTENTION_DIM, filters=FILTERS, kernel_size=KERNEL, cumulative=True
    )
    layer.build([queries.shape, memory.shape])
    layer.query_kernel.assign(weights["query_layer.weight"].T)
    layer.key_kernel.assign(weights["memory_layer.weight"].T)
    layer.score_vector.assign(weights["v.weight"][0])
    layer.location_kernel.assign(
        np.transpose(weights["location_layer.location_conv.weight"], (2, 1, 0))
    )
    layer.location_projection.assign(weights["location_layer.location_dense.weight"].T)
    assert tuple(layer.query_kernel.shape) == (RNN_DIM, ATTENTION_DIM)

    contexts, alignments, previous, cumulative = layer(
        queries, memory, value_mask=~padding, return_attention_scores=True, return_state=True
    )
    np.testing.assert_allclose(to_numpy(alignments), expected_alignments, **TOL)
    np.testing.assert_allclose(to_numpy(contexts), expected_contexts, **TOL)
    # The state after the last step is Tacotron's (attention_weights, attention_weights_cum).
    np.testing.assert_allclose(to_numpy(previous), expected_alignments[:, -1], **TOL)
    np.testing.assert_allclose(to_numpy(cumulative), expected_alignments.sum(1), **TOL)


def test_units_defaults_to_the_query_size_not_attention_dim():
    """Why the mapping names `units`: left out, U is the query size (attention_rnn_dim)."""
    layer = LocationSensitiveAttention(filters=FILTERS, kernel_size=KERNEL, cumulative=True)
    layer.build([(BATCH, STEPS, RNN_DIM), (BATCH, LENGTH, EMBEDDING_DIM)])
    assert tuple(layer.query_kernel.shape) == (RNN_DIM, RNN_DIM)
    assert tuple(layer.location_projection.shape) == (FILTERS, RNN_DIM)
