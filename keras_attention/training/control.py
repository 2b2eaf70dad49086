"""`TrainingControl`: a learning-rate schedule over a time or CPU budget, early stopping and
the selection of the weights kept (the best epoch by a monitored score, or the mean of the last
epochs' weights where it scores better), in one Keras callback.

The recipe behind `keras-attention train` and `examples/pronounce.py`.
"""

from __future__ import annotations

import math
import os
import platform
import time

import keras
import numpy as np

__all__ = ["TrainingControl", "cpu_seconds", "host"]


def cpu_seconds() -> float:
    """CPU seconds of this process (every thread) and of its finished children, user and
    system: the clock of `--cpu-budget`."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def host() -> dict:
    """The host class a figure was taken on: CPUs, the CPU's model name and whether it has
    the vector and matrix units XLA's CPU code uses (AVX-512, AMX), from `/proc/cpuinfo`
    where there is one. A CPU-minute of training bought 1.5x more on one 2-core host than on
    another (BENCHMARKS.md §7), so every training record states the host. (The instruction set
    alone is not that difference: masking AVX-512 from oneDNN and XLA on a Zen 4 host changed
    the rate by 3%.)

    Example:

    >>> sorted(host())
    ['amx', 'avx512', 'cpu', 'cpus']
    """
    name, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    name = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu": name,
        "avx512": "avx512f" in flags,
        "amx": "amx_tile" in flags,
    }


CLOCKS = {"wall", "cpu"}
EMA_EVERY = 5  # steps between updates of the weights' moving average


class TrainingControl(keras.callbacks.Callback):
    """Cosine learning-rate decay over the budget, a time limit, and early stopping.

    Progress is the larger of (epochs done / `epochs`) and (seconds / `seconds`); the rate
    is `peak * (floor + (1 - floor) * (1 + cos(pi * progress)) / 2)`. Training stops at the
    first batch that ends past the time limit (mid-epoch: that epoch's validation still runs,
    and the rate has then decayed to its floor) or when the selection score has not improved
    for `patience` epochs; the weights of the best score are restored at the end.
    `monitor` (optional, called after each epoch's validation) returns a dict of scores (the
    validation WER curve) recorded in `curve` with the training minutes so far (wall and CPU).

    `select` names the score that chooses the weights kept, lower is better: `"val_loss"`,
    or keys of `monitor`'s dict compared in order (`("wer", "per")`: the validation WER, ties
    broken by the PER). `average_last` (`k`, 0 or 1: off) keeps the last `k` epochs' weights;
    at the end their mean (Izmailov et al., 2018; Vaswani et al., 2017's checkpoint
    averaging) is scored the same way and kept where it beats the best epoch (a tie keeps
    the epoch). `selection` then says what was kept and both candidates' scores.
    `label` starts each printed line (`"model 2: "`: models trained side by side print their
    lines interleaved). `clock` is what `seconds` counts: `"wall"` (elapsed time) or
    `"cpu"` (this process's CPU time, `cpu_seconds()`: on a shared machine, the CPU a quiet
    machine would have given).

    `ema` (a momentum per step, 0: off) keeps an exponential moving average of the trainable
    weights, updated every `EMA_EVERY` steps with `ema ** EMA_EVERY` (and, early on, the
    smaller `(1 + n) / (10 + n)` after `n` updates, so the average does not start from the
    random initial weights); each epoch's validation loss and `monitor` then score the
    averaged weights (`model.evaluate` on `validation`: a dataset or an `(x, y)` tuple), and
    those are the best weights kept. The raw weights' validation loss is `val_loss_raw`.
    `monitor`'s scores also go into the epoch's logs as `val_<name>` (`val_wer`), so Keras'
    progress bar shows them and `History` keeps them."""

    def __init__(
        self, peak, epochs, seconds, patience=3, floor=0.02, verbose=True, monitor=None,
        clock="wall", ema=0.0, validation=None, select="val_loss", average_last=0, label="",
    ):  # fmt: skip
        super().__init__()
        self.select = (select,) if isinstance(select, str) else tuple(select)
        if not self.select or (self.select != ("val_loss",) and monitor is None):
            raise ValueError(
                "`select` is 'val_loss' or keys of `monitor`'s scores, and needs `monitor`. "
                f"Received: select={select!r}, monitor={monitor!r}"
            )
        if not isinstance(average_last, int) or average_last < 0:
            raise ValueError(
                f"`average_last` must be an integer >= 0. Received: average_last={average_last!r}"
            )
        self.average_last, self.recent, self.selection = average_last, [], None
        if not 0 <= ema < 1 or (ema and validation is None):
            raise ValueError(
                "`ema` must be in [0, 1), and needs `validation` data. "
                f"Received: ema={ema}, validation={validation!r}"
            )
        self.ema, self.validation, self.averages, self.ema_updates = ema, validation, None, 0
        if clock not in CLOCKS:
            raise ValueError(f"`clock` must be one of {sorted(CLOCKS)}. Received: clock={clock!r}")
        self.peak, self.epochs, self.seconds = peak, epochs, seconds
        self.patience, self.floor, self.verbose = patience, floor, verbose
        self.monitor, self.clock, self.label = monitor, clock, label
        self.best, self.best_weights, self.wait, self.stopped_by = None, None, 0, "epochs"
        self.best_epoch = None
        self.epoch_seconds: list[float] = []
        self.curve: list[dict] = []
        self.steps_done = 0
        self.monitor_seconds = 0.0
        self.spent_before = {"wall": 0.0, "cpu": 0.0}  # a resumed run's earlier training
        self.resumed_stopped = False  # the backup was made as training stopped

    def on_train_begin(self, logs=None):
        self.started = time.perf_counter() - self.spent_before["wall"]
        self.cpu_started = cpu_seconds() - self.spent_before["cpu"]

    @property
    def _budget_name(self) -> str:
        return "CPU budget" if self.clock == "cpu" else "time budget"

    def spent(self, clock: str | None = None) -> float:
        """Training seconds so far on `clock` (`"wall"` or `"cpu"`; default: the budget's)."""
        if (clock or self.clock) == "cpu":
            return cpu_seconds() - self.cpu_started
        return time.perf_counter() - self.started

    def _progress(self, epoch_fraction):
        elapsed = self.spent() / self.seconds
        return min(1.0, max(epoch_fraction / self.epochs, elapsed))

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch, self.epoch_started = epoch, time.perf_counter()
        self.epoch_steps = 0

    def on_train_batch_begin(self, batch, logs=None):
        if batch % 20 == 0:
            steps = self.params.get("steps") or 1
            progress = self._progress(self.epoch + batch / steps)
            scale = self.floor + (1 - self.floor) * 0.5 * (1 + math.cos(math.pi * progress))
            self.model.optimizer.learning_rate.assign(self.peak * scale)

    def on_train_batch_end(self, batch, logs=None):
        self.epoch_steps += 1
        self.steps_done += 1
        if self.ema and self.steps_done % EMA_EVERY == 0:
            self._update_average()
        if self.spent() > self.seconds:
            self.model.stop_training, self.stopped_by = True, self._budget_name

    def _update_average(self) -> None:
        weights = [
            keras.ops.convert_to_numpy(v).astype("float64") for v in self.model.trainable_variables
        ]
        if self.averages is None:
            self.averages = weights
        else:
            n = self.ema_updates
            decay = min(self.ema**EMA_EVERY, (1 + n) / (10 + n))
            for average, w in zip(self.averages, weights):
                average *= decay
                average += (1 - decay) * w
        self.ema_updates += 1

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_seconds.append(time.perf_counter() - self.epoch_started)
        loss = raw_loss = (logs or {}).get("val_loss", math.inf)
        raw = None
        if self.ema and self.averages is not None:  # score the averaged weights
            raw = [keras.ops.convert_to_numpy(v) for v in self.model.trainable_variables]
            for variable, average in zip(self.model.trainable_variables, self.averages):
                variable.assign(average.astype(variable.dtype))
            data = self.validation if isinstance(self.validation, tuple) else (self.validation,)
            loss = self.model.evaluate(*data, verbose=0, return_dict=True)["loss"]
        steps = self.params.get("steps") or self.epoch_steps or 1
        point = {
            "epoch": epoch + 1,
            "epochs": epoch + self.epoch_steps / steps,
            "minutes": self.spent("wall") / 60,
            "cpu_minutes": self.spent("cpu") / 60,
            "val_loss": loss,
        }
        if self.ema:
            point["val_loss_raw"] = raw_loss
        if self.monitor is not None:
            started = time.perf_counter()
            scores = self.monitor()
            point.update(scores)
            self.monitor_seconds += time.perf_counter() - started
            if logs is not None:  # `val_wer`...: in History and on Keras' progress bar
                logs.update({f"val_{k}": float(v) for k, v in scores.items()})
        self._keep(point)
        if raw is not None:  # training goes on from the raw weights
            for variable, value in zip(self.model.trainable_variables, raw):
                variable.assign(value)
        self.curve.append(point)
        elapsed = self.spent()
        if self.wait >= self.patience:
            self.model.stop_training, self.stopped_by = True, "early stopping"
        elif elapsed > self.seconds:
            self.model.stop_training, self.stopped_by = True, self._budget_name
        if self.verbose:
            rate = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
            scores = "".join(
                f", valid {k} {v:.2f}%" for k, v in point.items() if k in ("wer", "per")
            )
            print(f"  {self.label}epoch {epoch + 1}: {self.epoch_seconds[-1]:.0f} s, "
                  f"lr {rate:.2e}, val_loss {loss:.4f}{scores}, {elapsed / 60:.1f} "
                  f"{self.clock} min of {self.seconds / 60:.1f}", flush=True)  # fmt: skip

    def _score(self, point: dict) -> list[float]:
        """The selection score of a curve point (`select`'s values, in order)."""
        return [float(point[key]) for key in self.select]

    def _keep(self, point: dict) -> None:
        """Early stopping's bookkeeping for this epoch's `point`, and the weights it scored
        kept as the best (if they are) and among the last `average_last`."""
        score = self._score(point)
        weights = None
        if self.best is None or score < self.best:
            weights = self.model.get_weights()
            self.best, self.best_weights, self.wait = score, weights, 0
            self.best_epoch = point["epoch"]
        else:
            self.wait += 1
        if self.average_last > 1:
            self.recent = [*self.recent, weights or self.model.get_weights()][-self.average_last :]

    def on_train_end(self, logs=None):
        if self.best_weights is not None:
            self.model.set_weights(self.best_weights)
        if self.average_last > 1 and len(self.recent) > 1:
            self._try_average()

    def _try_average(self) -> None:
        """Score the mean of the last epochs' weights; keep it where it beats the best epoch."""
        mean = [  # floating weights averaged; any other state (counters) from the last epoch
            np.mean(np.stack(ws).astype("float64"), axis=0).astype(ws[-1].dtype)
            if np.issubdtype(ws[-1].dtype, np.floating) else ws[-1]
            for ws in zip(*self.recent)
        ]  # fmt: skip
        self.model.set_weights(mean)
        point = {}
        if "val_loss" in self.select:
            data = self.validation if isinstance(self.validation, tuple) else (self.validation,)
            point["val_loss"] = self.model.evaluate(*data, verbose=0, return_dict=True)["loss"]
        if self.monitor is not None and self.select != ("val_loss",):
            point.update(self.monitor())
        score, last = self._score(point), self.curve[-1]["epoch"]
        averaged = f"mean of epochs {last - len(self.recent) + 1}-{last}"
        won = score < self.best
        self.selection = {
            "kept": averaged if won else f"epoch {self.best_epoch}",
            "best_epoch": {"epoch": self.best_epoch, **dict(zip(self.select, self.best))},
            "average": {"epochs": len(self.recent), **dict(zip(self.select, score))},
        }
        if won:
            self.best = score
        else:
            self.model.set_weights(self.best_weights)
        if self.verbose:
            print(f"  {self.label}kept the {self.selection['kept']} ({self.select[0]}: best epoch "
                  f"{self.selection['best_epoch'][self.select[0]]:.4g}, {averaged} "
                  f"{score[0]:.4g})", flush=True)  # fmt: skip

    # `ResumableTraining` keeps this state in every epoch's backup (`--resume`).
    def get_resume_state(self) -> tuple[dict, list | None]:
        """The state at this epoch's end: the budget spent (both clocks), early stopping's
        best score, epoch and counter, whether training stops here, the curve; and the best
        weights, the last epochs' (`average_last`) and the moving average's."""
        state = {
            "best": self.best,
            "best_epoch": self.best_epoch,
            "wait": self.wait,
            "stopped_by": self.stopped_by,
            "stopped": bool(self.model.stop_training),
            "spent": {"wall": self.spent("wall"), "cpu": self.spent("cpu")},
            "epoch_seconds": self.epoch_seconds,
            "curve": self.curve,
            "steps_done": self.steps_done,
            "monitor_seconds": self.monitor_seconds,
            "seconds": self.seconds,  # the budget (the first process's set-up left out)
            "ema_updates": self.ema_updates,
            "best_weights": 0 if self.best_weights is None else len(self.best_weights),
            "recent": [len(weights) for weights in self.recent],
        }
        recent = [array for weights in self.recent for array in weights]
        arrays = [*(self.best_weights or []), *recent, *(self.averages or [])]
        return state, arrays or None

    def set_resume_state(self, state: dict, arrays: list | None) -> None:
        """Put back `get_resume_state`'s state (before `fit`): the budget goes on from what
        was spent, so the learning-rate schedule and the limit stay where they were."""
        self.best = None if state["best"] is None else [float(v) for v in state["best"]]
        self.best_epoch = state["best_epoch"]
        self.wait, self.stopped_by = int(state["wait"]), state["stopped_by"]
        self.resumed_stopped = bool(state["stopped"])
        self.spent_before = {k: float(v) for k, v in state["spent"].items()}
        self.epoch_seconds, self.curve = list(state["epoch_seconds"]), list(state["curve"])
        self.steps_done = int(state["steps_done"])
        self.monitor_seconds = float(state["monitor_seconds"])
        self.seconds, self.ema_updates = float(state["seconds"]), int(state["ema_updates"])
        arrays, kept = list(arrays or []), int(state["best_weights"])
        self.best_weights, arrays = arrays[:kept] or None, arrays[kept:]
        self.recent = []
        for count in state["recent"]:
            self.recent, arrays = [*self.recent, arrays[:count]], arrays[count:]
        self.averages = [a.astype("float64") for a in arrays] or None
