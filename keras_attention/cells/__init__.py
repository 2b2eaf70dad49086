"""Attentional RNN cells and the layer that runs them over a sequence."""

from keras_attention.cells.attention_rnn import AttentionRNN
from keras_attention.cells.bahdanau_attention_cell import BahdanauAttentionCell
from keras_attention.cells.luong_attention_cell import LuongAttentionCell

__all__ = ["AttentionRNN", "BahdanauAttentionCell", "LuongAttentionCell"]
