"""Training a seq2seq model well within a budget: the recipe behind `keras-attention train`.

- `TrainingControl`: a cosine learning-rate schedule over a wall-clock or CPU budget, early
  stopping, and the weights kept by a validation score (or the mean of the last epochs').
- `ResumableTraining`: epoch backups that a killed run resumes from exactly.
- `BucketedBatches`: teacher-forcing batches of pairs of similar length.
- `SmoothedSparseCrossentropy`: sparse cross-entropy from logits with label smoothing.

`BucketedBatches.dataset` and `ResumableTraining.epoch_stream` use `tf.data` (TensorFlow
backend); the rest is backend-agnostic Keras.
"""

from keras_attention.training.batches import BucketedBatches, length_buckets
from keras_attention.training.control import TrainingControl, cpu_seconds, host
from keras_attention.training.losses import SmoothedSparseCrossentropy
from keras_attention.training.resume import CorruptBackupError, ResumableTraining

__all__ = [
    "BucketedBatches",
    "CorruptBackupError",
    "ResumableTraining",
    "SmoothedSparseCrossentropy",
    "TrainingControl",
    "cpu_seconds",
    "host",
    "length_buckets",
]
