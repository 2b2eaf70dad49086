"""Bring trained models over from other libraries: `load_tfa_weights` (TensorFlow Addons)."""

from keras_attention.migrate.tfa_checkpoint import load_tfa_weights

__all__ = ["load_tfa_weights"]
