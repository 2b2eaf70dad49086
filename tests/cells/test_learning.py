"""A small learning check: attention solves sequence reversal where the plain decoder cannot."""

from __future__ import annotations

import time

import keras
import numpy as np
import pytest

from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell
from tests.backend_utils import BACKEND

VOCAB, START, MAX_LEN = 12, 1, 30


def _reversal(n, rng):
    """Sources of 10-30 random symbols; targets are the sources reversed (teacher-forced)."""
    lengths = rng.integers(10, MAX_LEN + 1, size=n)
    src, dec, tgt = (np.zeros((n, MAX_LEN), "int32") for _ in range(3))
    for i, length in enumerate(lengths):
        symbols = rng.integers(2, VOCAB, size=length)
        src[i, :length] = symbols
        tgt[i, :length] = symbols[::-1]
        dec[i, 0] = START
        dec[i, 1:length] = symbols[::-1][:-1]
    return src, dec, tgt


def _model(attention: bool):
    source = keras.Input((None,), dtype="int32")
    target = keras.Input((None,), dtype="int32")
    memory, h, c = keras.layers.LSTM(64, return_sequences=True, return_state=True)(
        keras.layers.Embedding(VOCAB, 32, mask_zero=True)(source)
    )
    embedded = keras.layers.Embedding(VOCAB, 32, mask_zero=True)(target)
    if attention:
        cell = LuongAttentionCell(keras.layers.LSTMCell(64), LuongAttention("general"))
        outputs = AttentionRNN(cell)(embedded, memory, initial_state=[h, c])
    else:
        outputs = keras.layers.LSTM(64, return_sequences=True)(embedded, initial_state=[h, c])
    model = keras.Model([source, target], keras.layers.Dense(VOCAB)(outputs))
    model.compile(
        keras.optimizers.Adam(3e-3, global_clipnorm=5.0),  # Luong et al. clip at norm 5
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=BACKEND != "torch",  # torch.compile takes minutes on a CPU
    )
    return model


def _token_accuracy(model, data) -> float:
    src, dec, tgt = data
    predicted = model.predict([src, dec], verbose=0).argmax(-1)
    valid = tgt > 0
    return float((predicted[valid] == tgt[valid]).mean())


@pytest.mark.slow
def test_input_feeding_luong_learns_reversal_and_plain_decoder_does_not():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    train, test = _reversal(6000, rng), _reversal(500, rng)
    results = {}
    for attention in (True, False):
        model = _model(attention)
        start = time.perf_counter()
        model.fit(list(train[:2]), train[2], batch_size=64, epochs=5, verbose=0)
        results[attention] = (_token_accuracy(model, test), time.perf_counter() - start)
    (with_attention, t_with), (without, t_without) = results[True], results[False]
    message = (
        f"token accuracy on reversal (lengths 10-30) after 5 epochs: with Luong input-feeding "
        f"attention {with_attention:.3f} ({t_with:.0f} s), without attention {without:.3f} "
        f"({t_without:.0f} s)"
    )
    assert with_attention >= 0.95, message
    assert without <= with_attention - 0.15, message
