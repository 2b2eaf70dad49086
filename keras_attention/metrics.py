"""Sequence error rates: edit distance, word (sequence) error rate and token error rate.

The measures of grapheme-to-phoneme and speech-recognition papers, for outputs with one or
several acceptable references:

- `edit_distance(a, b)`: the Levenshtein distance (insertions, deletions and substitutions,
  each of cost 1) between two token sequences.
- `sequence_error_rates(predictions, references)`: for `N` outputs, each with one or more
  alternative references, the **sequence error rate** (called WER, word error rate, in G2P:
  the fraction of outputs that equal none of their references) and the **token error rate**
  (PER, phoneme error rate: `sum_i d_i / sum_i |r_i|`, where `r_i` is the reference of output
  `i` closest in edit distance and `d_i` that distance). Among references at the same,
  smallest distance the longest one counts (then the first given), so the rate never depends
  on the order of the alternatives.
- `SequenceErrorRate` and `TokenErrorRate`: the same measures as Keras metrics on batches of
  token ids (`keras.ops` only, every backend, traceable), for `model.compile(metrics=...)` or
  a custom evaluation loop.

Hand-checkable example (`kitten` → `sitting` needs 3 edits):

>>> edit_distance("kitten", "sitting")
3
>>> rates = sequence_error_rates(
...     [["N", "AY", "F"], ["EH", "K", "S", "IH", "T"]],
...     [[["N", "AY", "F"]], [["EH", "G", "Z", "IH", "T"], ["EH", "K", "S", "AH", "T"]]],
... )
>>> rates["sequence_error_rate"], rates["token_errors"], rates["reference_tokens"]
(0.5, 1, 8)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
from keras import ops

from keras_attention._validation import is_integer

__all__ = ["SequenceErrorRate", "TokenErrorRate", "edit_distance", "sequence_error_rates"]


def edit_distance(prediction: Sequence[Any], reference: Sequence[Any]) -> int:
    """The Levenshtein distance between two sequences of hashable tokens.

    The fewest insertions, deletions and substitutions (cost 1 each) that turn `prediction`
    into `reference`; symmetric, `0` only for equal sequences, and the length of the other
    sequence when one is empty.

    Args:
        prediction: A sequence of tokens (a string counts as a sequence of characters).
        reference: Another sequence of tokens.

    Returns:
        The distance as an `int`.

    Example:

    >>> edit_distance(["K", "AE", "T"], ["K", "AA", "T", "S"])
    2
    >>> edit_distance([], ["AH"])
    1
    """
    a, b = _tokens("prediction", prediction), _tokens("reference", reference)
    previous = list(range(len(b) + 1))
    for i, token in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (token != other))
            )
        previous = current
    return previous[-1]


def sequence_error_rates(predictions: Sequence[Any], references: Sequence[Any]) -> dict:
    """Sequence (word) and token (phoneme) error rates against alternative references.

    Args:
        predictions: `N` token sequences (an empty sequence is an empty output).
        references: `N` entries, each a list of one or more alternative token sequences (or a
            single token sequence, the only reference). An empty list of alternatives is an
            error (nothing to score against).

    Returns:
        A dict: `"sequences"` (`N`), `"sequence_errors"` (outputs equal to none of their
        references), `"sequence_error_rate"` (their fraction), `"token_errors"` (`sum d_i`
        over the closest references), `"reference_tokens"` (`sum |r_i|`),
        `"token_error_rate"` (their ratio; `0.0` when every closest reference is empty and
        matched, `inf` never: an empty closest reference with `d_i > 0` counts as length 1)
        and `"closest"` (per output, the index of its closest reference).
    """
    predictions, references = list(predictions), list(references)
    if len(predictions) != len(references):
        raise ValueError(
            "`predictions` and `references` must have the same length. Received: "
            f"len(predictions)={len(predictions)}, len(references)={len(references)}"
        )
    sequence_errors = token_errors = reference_tokens = 0
    closest = []
    for index, (prediction, alternatives) in enumerate(zip(predictions, references)):
        prediction = _tokens(f"predictions[{index}]", prediction)
        alternatives = _alternatives(index, alternatives)
        scored = [
            (edit_distance(prediction, ref), -len(ref), k) for k, ref in enumerate(alternatives)
        ]
        distance, negative_length, best = min(scored)
        closest.append(best)
        sequence_errors += distance > 0
        token_errors += distance
        reference_tokens += max(-negative_length, 1 if distance else 0)
    count = len(predictions)
    return {
        "sequences": count,
        "sequence_errors": int(sequence_errors),
        "sequence_error_rate": sequence_errors / count if count else 0.0,
        "token_errors": int(token_errors),
        "reference_tokens": int(reference_tokens),
        "token_error_rate": token_errors / reference_tokens if reference_tokens else 0.0,
        "closest": closest,
    }


def _tokens(name: str, value: Any) -> list:
    try:
        return list(value)
    except TypeError:
        raise ValueError(
            f"`{name}` must be a sequence of tokens. Received: {name}={value!r:.200}"
        ) from None


def _alternatives(index: int, value: Any) -> list[list]:
    """One entry of `references` as a list of token lists (a flat sequence is one reference)."""
    if isinstance(value, (str, bytes)):
        return [list(value)]
    value = list(value)
    if not value:
        raise ValueError(
            f"Every output needs at least one reference. Received: references[{index}]=[]"
        )
    if all(isinstance(v, (str, bytes)) for v in value):
        # A flat list of string tokens (["N", "AY", "F"]) is one reference; alternatives
        # are given as a list of token lists.
        return [value]
    return [_tokens(f"references[{index}][{k}]", ref) for k, ref in enumerate(value)]


# ---------------------------------------------------------------- Keras metric forms
def _lengths(ids, end_id):
    """Tokens before the first `end_id` or padding `0` in each row of `[..., T]` ids."""
    stop = ops.logical_or(ops.equal(ids, 0), ops.equal(ids, end_id))
    before = ops.cumsum(ops.cast(stop, "int32"), axis=-1) == 0
    return ops.sum(ops.cast(before, "int32"), axis=-1)


def _prefix_min(x):
    """Running minimum along the last axis (`log2(T)` shifted minimums; keras.ops has no
    `cummin`)."""
    length, shift = x.shape[-1], 1
    big = ops.full_like(x, 2**30)
    while shift < length:
        shifted = ops.concatenate([big[..., :shift], x[..., :-shift]], axis=-1)
        x = ops.minimum(x, shifted)
        shift *= 2
    return x


def batch_edit_distance(predictions, references, end_id: int | None = None):
    """Levenshtein distances between rows of id tensors `[B, T1]` and `[B, T2]`, in `keras.ops`.

    A row ends at its first `0` (padding) or `end_id`; the tokens after are ignored. The
    dynamic programme runs over the prediction's positions; each row of the table is a
    running minimum (`D[i, j] = j + min_{k <= j}(c_k - k)` with `c_k` the deletion /
    substitution candidates), so no loop over reference positions is needed.

    Returns:
        int32 `[B]` distances and int32 `[B]` reference lengths.
    """
    predictions = ops.cast(predictions, "int32")
    references = ops.cast(references, "int32")
    end = -1 if end_id is None else int(end_id)
    pred_lengths = _lengths(predictions, end)
    ref_lengths = _lengths(references, end)
    t1, t2 = predictions.shape[-1], references.shape[-1]
    positions = ops.arange(t2 + 1, dtype="int32")
    row = ops.broadcast_to(positions, (ops.shape(references)[0], t2 + 1))
    # Reference tokens past their row's length never match (and their columns are not read).
    valid_ref = positions[None, 1:] <= ref_lengths[:, None]
    for i in range(t1):
        token = predictions[:, i : i + 1]
        cost = ops.cast(ops.logical_or(ops.not_equal(references, token), ~valid_ref), "int32")
        candidates = ops.minimum(row[:, 1:] + 1, row[:, :-1] + cost)
        candidates = ops.concatenate([row[:, :1] + 1, candidates], axis=-1)
        new_row = positions + _prefix_min(candidates - positions)
        active = (i < pred_lengths)[:, None]
        row = ops.where(active, new_row, row)
    distances = ops.take_along_axis(row, ref_lengths[:, None], axis=1)[:, 0]
    return distances, ref_lengths


class _RateMetric(keras.metrics.Metric):
    def __init__(self, end_id: int | None = 3, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        if end_id is not None and not is_integer(end_id):
            raise ValueError(f"`end_id` must be an int or None. Received: end_id={end_id!r}")
        self.end_id = None if end_id is None else int(end_id)
        self.errors = self.add_variable(shape=(), initializer="zeros", name="errors")
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")

    def _closest(self, y_true, y_pred):
        """Distances to the closest reference and that reference's length, `[B]` each.

        `y_true` is `[B, T]` (one reference) or `[B, R, T]` (alternatives; an all-padding
        alternative is absent)."""
        y_true = ops.convert_to_tensor(y_true)
        y_pred = ops.cast(ops.convert_to_tensor(y_pred), "int32")
        if len(y_true.shape) == 2:
            y_true = y_true[:, None, :]
        if len(y_true.shape) != 3 or len(y_pred.shape) != 2:
            raise ValueError(
                "`y_true` must be [batch, length] or [batch, alternatives, length] ids and "
                f"`y_pred` [batch, length] ids. Received: y_true shape {tuple(y_true.shape)}, "
                f"y_pred shape {tuple(y_pred.shape)}"
            )
        batch, alternatives = ops.shape(y_true)[0], y_true.shape[1]
        flat_true = ops.reshape(y_true, (-1, y_true.shape[2]))
        flat_pred = ops.reshape(
            ops.repeat(y_pred[:, None, :], alternatives, axis=1), (-1, y_pred.shape[1])
        )
        distances, lengths = batch_edit_distance(flat_pred, flat_true, self.end_id)
        distances = ops.reshape(distances, (batch, alternatives))
        lengths = ops.reshape(lengths, (batch, alternatives))
        present = ops.any(ops.not_equal(ops.cast(y_true, "int32"), 0), axis=-1)
        present = ops.logical_or(present, ops.arange(alternatives)[None, :] == 0)
        # Order by (distance, -length): distance * (T + 1) - length, absent ones last.
        key = distances * (y_true.shape[2] + 1) - lengths
        key = ops.where(present, key, 2**30)
        best = ops.argmin(key, axis=-1)[:, None]
        return (
            ops.take_along_axis(distances, best, axis=1)[:, 0],
            ops.take_along_axis(lengths, best, axis=1)[:, 0],
        )

    def reset_state(self) -> None:
        self.errors.assign(0.0)
        self.total.assign(0.0)

    def result(self):
        return ops.where(self.total > 0, self.errors / ops.maximum(self.total, 1.0), 0.0)

    def get_config(self) -> dict:
        return {**super().get_config(), "end_id": self.end_id}


@keras.saving.register_keras_serializable(package="keras_attention")
class SequenceErrorRate(_RateMetric):
    """Fraction of outputs equal to none of their references (G2P's WER), on token ids.

    Rows end at their first `0` (padding) or `end_id`. `y_true` is `[B, T]` or
    `[B, R, T]` (R alternative references, all-padding rows absent); `y_pred` is `[B, T']`
    generated ids (not logits).

    Args:
        end_id: The end token (a row stops there), or `None`. Defaults to `3`.
        name: Metric name. Defaults to `"sequence_error_rate"`.

    Example:

    >>> import numpy as np
    >>> metric = SequenceErrorRate()
    >>> metric.update_state(np.array([[[5, 6, 3], [5, 7, 3]], [[4, 3, 0], [0, 0, 0]]]),
    ...                     np.array([[5, 7, 3, 0], [4, 4, 3, 0]]))
    >>> float(metric.result())
    0.5
    """

    def __init__(self, end_id: int | None = 3, name: str = "sequence_error_rate", **kwargs):
        super().__init__(end_id=end_id, name=name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        distances, _ = self._closest(y_true, y_pred)
        errors = ops.cast(distances > 0, "float32")
        weight = (
            ops.ones_like(errors) if sample_weight is None else ops.cast(sample_weight, "float32")
        )
        self.errors.assign_add(ops.sum(errors * weight))
        self.total.assign_add(ops.sum(weight))


@keras.saving.register_keras_serializable(package="keras_attention")
class TokenErrorRate(_RateMetric):
    """Edit distance to the closest reference over its length, summed (G2P's PER), on ids.

    Same inputs and conventions as `SequenceErrorRate` (and as `sequence_error_rates`: the
    longest of equally close references counts; an empty closest reference with a non-zero
    distance counts as length 1).

    Args:
        end_id: The end token (a row stops there), or `None`. Defaults to `3`.
        name: Metric name. Defaults to `"token_error_rate"`.

    Example:

    >>> import numpy as np
    >>> metric = TokenErrorRate()
    >>> metric.update_state(np.array([[5, 6, 7, 3]]), np.array([[5, 7, 3, 0]]))
    >>> round(float(metric.result()), 4)
    0.3333
    """

    def __init__(self, end_id: int | None = 3, name: str = "token_error_rate", **kwargs):
        super().__init__(end_id=end_id, name=name, **kwargs)

    def update_state(self, y_true, y_pred, sample_weight=None) -> None:
        distances, lengths = self._closest(y_true, y_pred)
        distances = ops.cast(distances, "float32")
        lengths = ops.cast(lengths, "float32")
        lengths = ops.where(ops.logical_and(lengths == 0, distances > 0), 1.0, lengths)
        weight = (
            ops.ones_like(distances)
            if sample_weight is None
            else ops.cast(sample_weight, "float32")
        )
        self.errors.assign_add(ops.sum(distances * weight))
        self.total.assign_add(ops.sum(lengths * weight))
