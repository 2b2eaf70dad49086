"""The keys of a search's result, and the result of a search over no rows."""

from __future__ import annotations

from typing import Any

from keras import ops

#: What every search returns: `ids` `[B, L]`, `scores` `[B]`, `lengths` `[B]` and, when the
#: step function returns attention weights, `alignments` `[B, L, S]`.
RESULT_KEYS = ("ids", "scores", "lengths", "alignments")
#: What `beam_search` adds: the best beam's `normalized_scores` `[B]` and the n-best list
#: `beam_ids` `[B, K, L]`, `beam_scores`, `beam_normalized_scores`, `beam_lengths` `[B, K]`.
BEAM_RESULT_KEYS = (
    "normalized_scores",
    "beam_ids",
    "beam_scores",
    "beam_normalized_scores",
    "beam_lengths",
)


def empty_search_result(max_length: int, beam_width: int, memory_length: Any) -> dict:
    """The result of a search over an empty batch: the keys of `greedy_search` /
    `sample_search` (`beam_width == 1`) or `beam_search` (`beam_width > 1`), zero rows.

    `memory_length` (S of the `alignments`, `None` read as 0) may be a scalar tensor inside
    a traced TensorFlow function. The one builder of empty results: `Seq2Seq.generate`,
    `Translator` (as NumPy) and the SavedModel export (a subset of the keys) use it.

    Example:

    >>> result = empty_search_result(4, 2, 3)
    >>> {key: tuple(value.shape) for key, value in result.items()}["beam_ids"]
    (0, 2, 4)
    >>> sorted(result) == sorted(RESULT_KEYS + BEAM_RESULT_KEYS)
    True
    """
    memory_length = 0 if memory_length is None else memory_length
    shapes = {
        "ids": ((0, max_length), "int32"),
        "scores": ((0,), "float32"),
        "lengths": ((0,), "int32"),
        "alignments": ((0, max_length, memory_length), "float32"),
    }
    if beam_width > 1:
        shapes.update(
            normalized_scores=((0,), "float32"),
            beam_ids=((0, beam_width, max_length), "int32"),
            beam_scores=((0, beam_width), "float32"),
            beam_normalized_scores=((0, beam_width), "float32"),
            beam_lengths=((0, beam_width), "int32"),
        )
    return {key: ops.zeros(shape, dtype) for key, (shape, dtype) in shapes.items()}
