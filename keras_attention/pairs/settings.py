"""`Settings`: everything a `keras-attention train` run is made of, chosen from the data's
size where the user gives nothing, and written to the model folder's `config.json`."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any

from keras_attention.decoding import BeamSearch, GreedySearch, Search

__all__ = ["Settings", "choose_settings"]

RNNS = ("gru", "lstm")
ATTENTIONS = ("bahdanau", "luong", "location_sensitive")


@dataclass
class Settings:
    """The model, training and decoding settings of a run (`docs/cli.md` lists the rule that
    chooses them from the data).

    Attributes:
        rnn: `"gru"` or `"lstm"`.
        attention: `"bahdanau"` (additive) or `"luong"` (general score).
        units: Decoder units; the bidirectional encoder has `units // 2` per direction.
        embedding_dim: Embedding size of sources and targets.
        encoder_layers: Stacked encoder layers.
        dropout: Dropout rate of the model.
        batch_size: Pairs per training batch.
        learning_rate: Peak learning rate of the cosine schedule over the budget.
        label_smoothing: Label smoothing of the training targets.
        epochs: Most epochs per model (the budget or early stopping usually ends first).
        patience: Epochs without a better validation WER before stopping.
        average_last: Also score the mean of the last `average_last` epochs' weights.
        members: Models of seeds `seed .. seed + members - 1`, each trained with an equal
            share of the budget, decoded as one ensemble.
        workers: Members trained at once, each in a process of its own with an equal share
            of the CPU cores (`None`: as many as there are members and cores). A process per
            core trains more per CPU-second than one process using every core
            (BENCHMARKS.md §7, "Members side by side").
        beam_width: Beams of the search (validation, `predict`, `evaluate`, exports).
        max_length: Most target symbols generated (end token included).
        buckets: Upper bounds of the training batches' length buckets.
        time_budget: Wall minutes for training all members.
        cpu_budget: CPU minutes for training all members instead (`None`: the wall budget).
        jit_compile: Train and decode with XLA.
        seed: Seed of the first member's weights, dropout and batch order.
        target_chars: Targets are characters, not space-separated symbols.
    """

    rnn: str = "gru"
    attention: str = "bahdanau"
    units: int = 256
    embedding_dim: int = 64
    encoder_layers: int = 1
    dropout: float = 0.0
    batch_size: int = 128
    learning_rate: float = 3e-3
    label_smoothing: float = 0.1
    epochs: int = 40
    patience: int = 5
    average_last: int = 3
    members: int = 2
    workers: int | None = None
    beam_width: int = 4
    max_length: int = 32
    buckets: tuple[int, ...] = field(default_factory=tuple)
    time_budget: float = 24.5
    cpu_budget: float | None = None
    jit_compile: bool = True
    seed: int = 0
    target_chars: bool = False

    def __post_init__(self) -> None:
        checks = {
            "rnn": self.rnn in RNNS,
            "attention": self.attention in ATTENTIONS,
            "dropout": 0 <= self.dropout < 1,
            "label_smoothing": 0 <= self.label_smoothing < 1,
            "learning_rate": self.learning_rate > 0,
            "time_budget": self.time_budget > 0,
            "cpu_budget": self.cpu_budget is None or self.cpu_budget > 0,
            "workers": self.workers is None
            or (isinstance(self.workers, int) and not isinstance(self.workers, bool))
            and self.workers >= 1,
        }
        for name in (
            "units",
            "embedding_dim",
            "encoder_layers",
            "batch_size",
            "epochs",
            "patience",
            "members",
            "beam_width",
            "max_length",
        ):
            value = getattr(self, name)
            checks[name] = isinstance(value, int) and not isinstance(value, bool) and value >= 1
        for name, ok in checks.items():
            if not ok:
                raise ValueError(
                    f"Invalid setting `{name}`. Received: {name}={getattr(self, name)!r}"
                )
        self.buckets = tuple(int(b) for b in self.buckets)

    def parallel_members(self) -> int:
        """How many members train at once: `workers`, or as many as there are members and
        CPU cores."""
        if self.workers is not None:
            return min(self.workers, self.members)
        return max(1, min(self.members, os.cpu_count() or 1))

    def search(self, beam_width: int | None = None, return_beams: bool = False) -> Search:
        """The search of `beam_width` beams (default: the settings'), of the settings'
        `max_length`: a `BeamSearch` past one beam, else a `GreedySearch`."""
        beam_width = self.beam_width if beam_width is None else beam_width
        if beam_width == 1 and not return_beams:
            return GreedySearch(self.max_length)
        return BeamSearch(beam_width, max_length=self.max_length, return_beams=return_beams)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "buckets": list(self.buckets)}

    @classmethod
    def from_dict(cls, config: dict[str, Any]) -> Settings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"Unknown settings {unknown}. Known: {sorted(known)}")
        return cls(**config)


def choose_settings(
    pairs: int, longest_target: int, lengths: list[int] | None = None, **given: Any
) -> Settings:
    """The settings for a training set of `pairs` pairs whose longest target has
    `longest_target` symbols; `given` (not `None`) overrides any of them.

    The rule, chosen on the SIGMORPHON 2021 dev files and CMUdict's validation words
    (BENCHMARKS.md §7 and "G2P in 21 languages"):

    - from 50,000 pairs (CMUdict): 256 units, batches of 256 at a peak learning rate of
      0.006 (against 128 at 0.003: 2.1 points of validation WER better at 12 CPU minutes a
      model, BENCHMARKS.md §7), no dropout, two members with 24.5 training minutes between
      them (`examples/pronounce.py`'s 28.5-minute run);
    - from 3,000 pairs: 256 units, batches of 64, dropout 0.2, 10 minutes, no early stopping
      (on arm_e's dev words, patience 5 stopped both members at 55-64% of their budget while
      the rate was still high; the best epoch is kept);
    - fewer: 128 units, batches of 16, dropout 0.3, four members, each of 60 epochs over
      which the learning rate decays (no early stopping: the best epoch is kept), 8 minutes
      at most. On the ten low-resource dev files: two members at batches of 16 score 25.6% macro
      dev WER against 28.5% at 32 (twice the updates in the same epochs), four members
      25.0%. Two length buckets (the 95th percentile, the longest) instead of six: each is a
      training program XLA compiles, most of a small member's CPU (a member's first epoch
      0.58 CPU minutes against 1.07, the whole member 15% less; dev WER level, 26.0% / PER
      6.90 against 25.6% / 7.07).

    Every size: a GRU decoder with Bahdanau attention, 64-dimensional embeddings, a peak
    learning rate of 0.003 (CMUdict's aside), label smoothing 0.1, the weights of the best
    validation WER kept, beam width 4, and at most `ceil(1.5 * longest_target) + 2` target
    symbols generated; the members train side by side, one process a core
    (`parallel_members`).
    """
    from keras_attention.training import length_buckets

    given = {k: v for k, v in given.items() if v is not None}
    # Quantile bounds of the length buckets (plus the 95th percentile and the longest): each
    # bucket is a shape XLA compiles (~8 CPU seconds a member at 128 units).
    quantiles = 5
    if pairs >= 50_000:
        chosen: dict[str, Any] = {
            "units": 256,
            "batch_size": 256,
            "learning_rate": 6e-3,
            "dropout": 0.0,
            "time_budget": 24.5,
            "epochs": 40,
        }
    elif pairs >= 3_000:
        chosen = {
            "units": 256,
            "batch_size": 64,
            "dropout": 0.2,
            "time_budget": 10.0,
            "epochs": 100,
            "patience": 100,
        }
    else:
        chosen = {
            "units": 128,
            "batch_size": 16,
            "dropout": 0.3,
            "time_budget": 8.0,
            "epochs": 60,
            "patience": 60,
            "members": 4,
        }
        quantiles = 1  # 60 short epochs: six buckets' compiles were most of a member's CPU
    chosen["max_length"] = math.ceil(1.5 * longest_target) + 2
    if lengths:
        chosen["buckets"] = length_buckets(lengths, buckets=quantiles)
    return Settings(**{**chosen, **given})
