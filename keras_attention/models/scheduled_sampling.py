"""A callback that follows a scheduled-sampling schedule (Bengio et al., 2015) epoch by epoch."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import keras

from keras_attention._validation import is_number

__all__ = ["ScheduledSampling"]

SCHEDULES = ("inverse_sigmoid", "linear", "exponential")


class ScheduledSampling(keras.callbacks.Callback):
    """Sets the scheduled-sampling probability `p_i` at the start of every epoch `i`.

    Bengio et al. (2015) feed the ground truth with probability `ε_i`, decaying with `i`;
    here `p_i = 1 − ε_i` is the probability of feeding the model's own token (epochs counted
    from 0):

    - `"inverse_sigmoid"`: `ε_i = k / (k + exp(i / k))`, `k >= 1` (`k` defaults to 5);
    - `"linear"`: `ε_i = max(0, 1 − c · i)`, i.e. `p_i = c · i` (`slope` c defaults to 0.1);
    - `"exponential"`: `ε_i = k ** i`, `0 < k < 1` (`k` defaults to 0.9);
    - a callable `epoch -> p`.

    The result is clipped to `[0, max_probability]` and assigned to every non-trainable
    variable named `sampling_probability` of the model (`Seq2Seq(sampling_probability=...)`,
    `AttentionRNN(sampling_probability=...)`), or to the `variables` given. Each epoch's value
    is added to the logs as `"sampling_probability"` (so it appears in `History`).

    Args:
        schedule: One of `"inverse_sigmoid"`, `"linear"`, `"exponential"` or a callable.
            Defaults to `"inverse_sigmoid"`.
        k: The decay constant of the inverse-sigmoid and exponential schedules.
            Defaults to `None` (5 and 0.9).
        slope: The slope c of the linear schedule. Defaults to `0.1`.
        max_probability: The largest probability set. Defaults to `1.0`.
        variables: The variables to set. Defaults to `None` (found in the model).

    Example:

    >>> callback = ScheduledSampling("linear", slope=0.25, max_probability=0.6)
    >>> [callback.probability(epoch) for epoch in range(4)]
    [0.0, 0.25, 0.5, 0.6]
    >>> round(ScheduledSampling("inverse_sigmoid", k=2.0).probability(4), 4)
    0.787

    References:
        Bengio et al., 2015, "Scheduled Sampling for Sequence Prediction with Recurrent
        Neural Networks", section 2.4.
    """

    def __init__(
        self,
        schedule: str | Callable = "inverse_sigmoid",
        k: float | None = None,
        slope: float = 0.1,
        max_probability: float = 1.0,
        variables: list | None = None,
    ) -> None:
        super().__init__()
        if not callable(schedule) and schedule not in SCHEDULES:
            raise ValueError(
                f"`schedule` must be one of {SCHEDULES} or a callable epoch -> probability. "
                f"Received: schedule={schedule!r}"
            )
        if k is None:
            k = {"inverse_sigmoid": 5.0, "exponential": 0.9}.get(schedule, 1.0)
        if schedule == "inverse_sigmoid" and not _real(k, 1.0, math.inf):
            raise ValueError(f"`k` must be a number >= 1 for 'inverse_sigmoid'. Received: k={k!r}")
        if schedule == "exponential" and not (_real(k, 0.0, 1.0) and 0 < k < 1):
            raise ValueError(f"`k` must be in (0, 1) for 'exponential'. Received: k={k!r}")
        if not _real(slope, 0.0, math.inf):
            raise ValueError(f"`slope` must be a number >= 0. Received: slope={slope!r}")
        if not _real(max_probability, 0.0, 1.0):
            raise ValueError(
                "`max_probability` must be in [0, 1]. Received: "
                f"max_probability={max_probability!r}"
            )
        self.schedule, self.k, self.slope = schedule, float(k), float(slope)
        self.max_probability = float(max_probability)
        self._variables = None if variables is None else list(variables)

    def probability(self, epoch: int) -> float:
        """`p` for an epoch (0-based), clipped to `[0, max_probability]`."""
        if callable(self.schedule):
            p = float(self.schedule(epoch))
        elif self.schedule == "inverse_sigmoid":
            p = 1.0 - self.k / (self.k + math.exp(min(epoch / self.k, 700.0)))
        elif self.schedule == "linear":
            p = self.slope * epoch
        else:
            p = 1.0 - self.k**epoch
        return min(max(p, 0.0), self.max_probability)

    def on_train_begin(self, logs: dict | None = None) -> None:
        from keras_attention.models.seq2seq import Seq2Seq

        # The TensorFlow trainer builds the model inside its first step, after
        # `on_epoch_begin`: build it here so that epoch 0 already runs with p_0.
        if isinstance(self.model, Seq2Seq) and not self.model.built:
            self.model.build({"source_ids": (None, None), "target_ids": (None, None)})

    def _targets(self) -> list:
        if self._variables is None:
            self._variables = [
                v for v in self.model.non_trainable_variables if v.name == "sampling_probability"
            ]
            if not self._variables:
                raise ValueError(
                    "ScheduledSampling found no `sampling_probability` variable in the model: "
                    "build it with `Seq2Seq(sampling_probability=...)` (or an AttentionRNN with "
                    "`sampling_probability=`), or pass `variables=`. Received: model="
                    f"{self.model.name!r}"
                )
        return self._variables

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._current = self.probability(epoch)
        for variable in self._targets():
            variable.assign(self._current)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["sampling_probability"] = self._current


def _real(value: Any, low: float, high: float) -> bool:
    return is_number(value) and math.isfinite(float(value)) and low <= value <= high
