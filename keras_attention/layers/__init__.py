"""Attention layers."""

from keras_attention.layers.additive_attention import AdditiveAttention, BahdanauAttention
from keras_attention.layers.luong_attention import LuongAttention

__all__ = ["AdditiveAttention", "BahdanauAttention", "LuongAttention"]
