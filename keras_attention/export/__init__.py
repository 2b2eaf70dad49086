"""Export for serving (TensorFlow backend only): SavedModel for TF Serving, LiteRT (`.tflite`)
for phones and other devices."""

from keras_attention.export.litert import LiteRTConversionError, export_litert
from keras_attention.export.saved_model import FORBIDDEN_OPS, export_saved_model, exported_ops

__all__ = [
    "FORBIDDEN_OPS",
    "LiteRTConversionError",
    "export_litert",
    "export_saved_model",
    "exported_ops",
]
