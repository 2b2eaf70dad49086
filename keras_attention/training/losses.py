"""`SmoothedSparseCrossentropy`: sparse cross-entropy from logits with label smoothing."""

from __future__ import annotations

import keras

__all__ = ["SmoothedSparseCrossentropy"]


@keras.saving.register_keras_serializable(package="keras_attention")
class SmoothedSparseCrossentropy(keras.losses.Loss):
    """Cross-entropy from logits against label-smoothed one-hot targets: the target
    distribution is `(1 - smoothing) * onehot(y) + smoothing / V` over the `V` classes
    (Szegedy et al., 2016; Keras's `categorical_crossentropy(label_smoothing=...)` rule).
    `smoothing=0` is `SparseCategoricalCrossentropy(from_logits=True)`. The logits' Keras
    mask (padded target steps) is applied by `keras.losses.Loss` as for any loss."""

    def __init__(
        self,
        classes: int,
        smoothing: float = 0.1,
        reduction="sum_over_batch_size",
        name="smoothed_crossentropy",
    ):
        super().__init__(name=name, reduction=reduction)
        if not 0 <= smoothing < 1:
            raise ValueError(f"`smoothing` must be in [0, 1). Received: smoothing={smoothing}")
        self.classes, self.smoothing = int(classes), float(smoothing)

    def call(self, y_true, y_pred):
        labels = keras.ops.one_hot(keras.ops.cast(y_true, "int32"), self.classes)
        return keras.losses.categorical_crossentropy(
            labels, y_pred, from_logits=True, label_smoothing=self.smoothing
        )

    def get_config(self):
        return {**super().get_config(), "classes": self.classes, "smoothing": self.smoothing}
