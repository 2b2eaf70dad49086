"""Sequence error rates: hand-worked cases, TensorFlow's edit distance as the outside reference,
and the Keras-metric forms against the NumPy form."""

from __future__ import annotations

import numpy as np
import pytest

from keras_attention.metrics import (
    SequenceErrorRate,
    TokenErrorRate,
    batch_edit_distance,
    edit_distance,
    sequence_error_rates,
)
from tests.backend_utils import BACKEND, jit, to_numpy


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("kitten", "sitting", 3),  # k→s, e→i, +g
        ("intention", "execution", 5),  # the textbook example (Jurafsky & Martin)
        ("flaw", "lawn", 2),  # -f, +n
        ("", "abc", 3),
        ("abc", "", 3),
        ("", "", 0),
        (["N", "AY", "F"], ["N", "AY", "F"], 0),
        (["K", "N", "AY", "F"], ["N", "AY", "F"], 1),  # the silent k said
        (["EH", "K", "S", "IH", "T"], ["EH", "G", "Z", "IH", "T"], 2),
    ],
)
def test_edit_distance_hand_worked(a, b, expected):
    assert edit_distance(a, b) == expected
    assert edit_distance(b, a) == expected


@pytest.mark.tensorflow_only
def test_edit_distance_matches_tensorflow():
    """`tf.edit_distance(normalize=False)` (an independent implementation) on random pairs."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    pairs = [
        (list(rng.integers(0, 4, rng.integers(0, 9))), list(rng.integers(0, 4, rng.integers(0, 9))))
        for _ in range(200)
    ]

    def sparse(rows):
        indices = [[i, j] for i, row in enumerate(rows) for j in range(len(row))]
        values = [int(v) for row in rows for v in row]
        width = max(1, max(len(r) for r in rows))
        return tf.SparseTensor(
            tf.constant(indices or np.zeros((0, 2)), tf.int64),
            tf.constant(values, tf.int64),
            [len(rows), width],
        )

    expected = tf.edit_distance(
        sparse([p for p, _ in pairs]), sparse([r for _, r in pairs]), normalize=False
    ).numpy()
    assert [edit_distance(p, r) for p, r in pairs] == expected.astype(int).tolist()


def test_rates_with_alternatives_ties_and_empty_outputs():
    predictions = [
        ["EH", "K", "S", "AH", "T"],  # the second of two references: correct
        ["N", "AY"],  # one deletion from N AY F
        ["AH", "B"],  # ties: AH C (len 2) and AH B C (len 3) are both 1 away: len 3 counts
        [],  # empty output: 2 deletions
    ]
    references = [
        [["EH", "G", "Z", "IH", "T"], ["EH", "K", "S", "AH", "T"]],
        [["N", "AY", "F"]],
        [["AH", "C"], ["AH", "B", "C"]],
        ["D", "AH"],  # a flat token list is one reference
    ]
    rates = sequence_error_rates(predictions, references)
    assert rates["sequences"] == 4
    assert rates["sequence_errors"] == 3
    assert rates["sequence_error_rate"] == 0.75
    assert rates["token_errors"] == 0 + 1 + 1 + 2
    assert rates["reference_tokens"] == 5 + 3 + 3 + 2
    assert rates["token_error_rate"] == pytest.approx(4 / 13)
    assert rates["closest"] == [1, 0, 1, 0]
    # The order of the alternatives does not change the rates.
    swapped = [refs[::-1] if isinstance(refs[0], list) else refs for refs in references]
    again = sequence_error_rates(predictions, swapped)
    assert again["token_error_rate"] == rates["token_error_rate"]
    assert again["closest"] == [0, 0, 0, 0]


def test_rates_edge_cases_and_bad_input():
    assert sequence_error_rates([], [])["sequence_error_rate"] == 0.0
    empty_reference = sequence_error_rates([["A"]], [[[]]])
    assert empty_reference["token_errors"] == 1 and empty_reference["reference_tokens"] == 1
    assert sequence_error_rates([[]], [[[]]])["token_error_rate"] == 0.0
    with pytest.raises(ValueError, match=r"same length.*len\(predictions\)=1, len\(references\)=2"):
        sequence_error_rates([["A"]], [[["A"]], [["B"]]])
    with pytest.raises(ValueError, match=r"at least one reference.*references\[0\]=\[\]"):
        sequence_error_rates([["A"]], [[]])
    with pytest.raises(ValueError, match=r"sequence of tokens.*predictions\[0\]=3"):
        sequence_error_rates([3], [[["A"]]])


def _padded(rows, width, end=3):
    out = np.zeros((len(rows), width), "int32")
    for i, row in enumerate(rows):
        out[i, : len(row) + 1] = [*row, end]
    return out


def test_batch_edit_distance_matches_python():
    rng = np.random.default_rng(1)
    preds = [list(rng.integers(4, 8, rng.integers(0, 7))) for _ in range(64)]
    refs = [list(rng.integers(4, 8, rng.integers(0, 7))) for _ in range(64)]
    distances, lengths = batch_edit_distance(_padded(preds, 9), _padded(refs, 8), end_id=3)
    assert to_numpy(distances).tolist() == [edit_distance(p, r) for p, r in zip(preds, refs)]
    assert to_numpy(lengths).tolist() == [len(r) for r in refs]


def test_keras_metrics_match_the_numpy_form():
    """Alternatives (absent ones all padding), ties and empty outputs, in two batches."""
    rng = np.random.default_rng(2)
    n = 40
    preds = [list(rng.integers(4, 7, rng.integers(0, 6))) for _ in range(n)]
    alternatives = [
        [list(rng.integers(4, 7, rng.integers(1, 6))) for _ in range(rng.integers(1, 4))]
        for _ in range(n)
    ]
    preds[0] = list(alternatives[0][-1])  # an exact match on the last alternative
    y_true = np.zeros((n, 3, 7), "int32")
    for i, refs in enumerate(alternatives):
        y_true[i, : len(refs)] = _padded(refs, 7)
    y_pred = _padded(preds, 8)
    expected = sequence_error_rates(preds, alternatives)
    wer, per = SequenceErrorRate(), TokenErrorRate()
    for half in (slice(0, n // 2), slice(n // 2, n)):
        wer.update_state(y_true[half], y_pred[half])
        per.update_state(y_true[half], y_pred[half])
    assert float(to_numpy(wer.result())) == pytest.approx(expected["sequence_error_rate"])
    assert float(to_numpy(per.result())) == pytest.approx(expected["token_error_rate"])
    wer.reset_state()
    assert float(to_numpy(wer.result())) == 0.0


@pytest.mark.skipif(BACKEND == "torch", reason="torch.compile of the metric loop is minutes")
def test_batch_edit_distance_compiles():
    preds, refs = _padded([[4, 5], [6]], 5), _padded([[4, 6, 5], [6]], 5)
    distances, _ = jit(lambda p, r: batch_edit_distance(p, r, end_id=3))(preds, refs)
    assert to_numpy(distances).tolist() == [1, 0]


def test_metric_config_and_bad_input():
    metric = TokenErrorRate(end_id=None, name="per")
    config = metric.get_config()
    assert config["end_id"] is None and config["name"] == "per"
    assert TokenErrorRate.from_config(config).end_id is None
    with pytest.raises(ValueError, match="end_id=1.5"):
        SequenceErrorRate(end_id=1.5)
    with pytest.raises(ValueError, match=r"y_true shape \(2,\)"):
        SequenceErrorRate().update_state(np.array([4, 3]), np.array([[4, 3]]))
