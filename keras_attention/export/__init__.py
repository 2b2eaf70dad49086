"""SavedModel export for TF Serving (TensorFlow backend only)."""

from keras_attention.export.saved_model import FORBIDDEN_OPS, export_saved_model, exported_ops

__all__ = ["FORBIDDEN_OPS", "export_saved_model", "exported_ops"]
