"""Attention layers."""

from keras_attention.layers.additive_attention import AdditiveAttention, BahdanauAttention
from keras_attention.layers.bahdanau_monotonic_attention import BahdanauMonotonicAttention
from keras_attention.layers.location_sensitive_attention import LocationSensitiveAttention
from keras_attention.layers.luong_attention import LuongAttention
from keras_attention.layers.luong_monotonic_attention import LuongMonotonicAttention
from keras_attention.layers.recurrent_attention import RecurrentAttention

__all__ = [
    "AdditiveAttention",
    "BahdanauAttention",
    "BahdanauMonotonicAttention",
    "LocationSensitiveAttention",
    "LuongAttention",
    "LuongMonotonicAttention",
    "RecurrentAttention",
]
