"""`step_noise`: the public hook through which cells draw every step's random inputs at once."""

import keras
import numpy as np
from keras import ops

from keras_attention.cells import AttentionRNN, LuongAttentionCell
from keras_attention.layers import LuongAttention, LuongMonotonicAttention


def test_dropout_masks_for_every_step():
    layer = LuongAttention("dot", dropout=0.5, seed=3)
    assert layer.step_noise((3, 2, 5), training=False) is None
    assert LuongAttention("dot").step_noise((3, 2, 5), training=True) is None
    mask = ops.convert_to_numpy(layer.step_noise((3, 2, 5), training=True))
    assert mask.shape == (3, 2, 1, 5)
    # Keras' dropout of ones: each element 0 or 1 / (1 - rate), both drawn.
    assert set(np.unique(mask).tolist()) == {0.0, 2.0}


def test_monotonic_noise_for_every_step():
    layer = LuongMonotonicAttention(sigmoid_noise=1.0, seed=1)
    assert layer.step_noise((4, 2, 6), training=False) is None
    noise = ops.convert_to_numpy(layer.step_noise((4, 2, 6), training=True))
    assert noise.shape == (4, 2, 6)
    assert noise.std() > 0.3  # a standard normal draw scaled by sigmoid_noise = 1


class _CountingAttention(LuongAttention):
    """A layer of one's own that draws per-step inputs: the cell must ask it, once per call."""

    calls = []

    def step_noise(self, shape, training=None):
        type(self).calls.append(training)
        return super().step_noise(shape, training)


def test_cells_draw_through_the_public_hook():
    _CountingAttention.calls.clear()
    cell = LuongAttentionCell(keras.layers.LSTMCell(4), _CountingAttention("dot", dropout=0.5))
    rnn = AttentionRNN(cell)
    inputs = np.ones((2, 3, 4), "float32")
    memory = np.ones((2, 5, 4), "float32")
    rnn(inputs, memory, training=True)
    assert _CountingAttention.calls == [True]
