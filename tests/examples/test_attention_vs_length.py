"""The accuracy-by-length example: data generator, scoring, smoke run end to end, default (slow)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from _example_loader import load_example

example = load_example("attention_vs_length")


def test_pairs_are_deterministic_and_the_target_is_the_ciphered_source():
    lengths = np.array([5, 9, 1, 12])
    pairs = example.make_pairs(lengths, alphabet=6, max_length=12, seed=3)
    again = example.make_pairs(lengths, alphabet=6, max_length=12, seed=3)
    for key in ("source_ids", "target_ids", "labels", "lengths"):
        assert pairs[key].dtype == np.int32 and np.array_equal(pairs[key], again[key])
        assert pairs[key].shape == ((4, 13) if key != "lengths" else (4,))
    table = example.cipher(6)
    # A permutation of the letters that keeps the special ids: every target is determined.
    assert sorted(table[example.FIRST_TOKEN :]) == list(range(example.FIRST_TOKEN, 10))
    assert list(table[: example.FIRST_TOKEN]) == list(range(example.FIRST_TOKEN))
    for i, length in enumerate(lengths):
        source, decoder_in, labels = (pairs[k][i] for k in ("source_ids", "target_ids", "labels"))
        letters = source[:length]
        assert ((letters >= example.FIRST_TOKEN) & (letters < 10)).all()
        assert source[length] == example.END and (source[length + 1 :] == 0).all()
        # Position by position: label t is the cipher of source token t, then END.
        assert np.array_equal(labels[:length], table[letters]) and labels[length] == example.END
        assert (labels[length + 1 :] == 0).all()
        # Teacher forcing: START, then the labels shifted right; END is never an input.
        assert decoder_in[0] == example.START
        assert np.array_equal(decoder_in[1 : length + 1], labels[:length])
        assert (decoder_in[length + 1 :] == 0).all()


def test_datasets_cover_every_bucket_and_test_sources_are_unseen():
    config = dict(example.DEFAULTS, samples=300, test_per_bucket=7)
    train, test = example.make_datasets(config, seed=1)
    ranges = example.buckets(5, 40, 5)
    assert ranges[0] == (5, 9) and ranges[-1] == (35, 40)
    assert train["lengths"].min() >= 5 and train["lengths"].max() <= 40
    for lo, hi in ranges:
        assert ((test["lengths"] >= lo) & (test["lengths"] <= hi)).sum() == 7
    assert not train["keys"] & test["keys"]
    assert example.buckets(3, 12, 3) == [(3, 5), (6, 8), (9, 12)]  # a short rest joins the last


def test_score_exact_match_and_token_accuracy():
    e = example.END
    labels = np.array([[5, 6, e, 0], [5, 6, e, 0], [5, 6, e, 0], [7, e, 0, 0]])
    predicted = np.array(
        [
            [5, 6, e, 0, 0],  # right
            [5, 7, e, 0, 0],  # one token wrong
            [5, 6, 6, e, 0],  # END late: not exact, 2 of 3 tokens
            [7, e, 0, 0, 0],
        ]
    )
    exact, token = example.score(predicted, labels)
    assert exact.tolist() == [1.0, 0.0, 0.0, 1.0]
    assert np.allclose(token, [1.0, 2 / 3, 2 / 3, 1.0])
    # Outputs shorter than the labels are padded; longer outputs with tokens past the width
    # are not exact.
    exact, _ = example.score(np.array([[7, e]]), np.array([[7, e, 0]]))
    assert exact.tolist() == [1.0]


def _check(results: dict, output: Path) -> None:
    assert set(results) >= {
        "config", "buckets", "bucket_counts", "exact_match", "token_accuracy",
        "exact_match_table", "token_accuracy_table", "train_seconds", "plot", "wall_seconds",
    }  # fmt: skip
    n = len(results["buckets"])
    for metric in ("exact_match", "token_accuracy"):
        assert list(results[metric]) == list(example.MODELS)
        for values in results[metric].values():
            assert len(values) == n and all(0.0 <= v <= 1.0 for v in values)
        table = results[f"{metric}_table"].splitlines()
        assert table[0] == "| source length | n | " + " | ".join(example.MODELS) + " |"
        assert len(table) == 2 + n
        assert [row.split(" | ")[0].strip("| ") for row in table[2:]] == results["buckets"]
    for seconds in results["train_seconds"].values():
        assert math.isfinite(seconds) and seconds > 0
    plot = Path(results["plot"])
    assert plot.parent == output and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if results["alignment_plot"] is not None:  # when keras_attention.plot is available
        assert Path(results["alignment_plot"]).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_smoke_run_prints_tables_and_writes_the_plot(tmp_path, capsys):
    results = example.main(["--smoke", "--output-dir", str(tmp_path)])
    _check(results, tmp_path)
    assert results["buckets"] == ["3-5", "6-8", "9-12"]
    assert results["bucket_counts"] == [4, 4, 4]
    printed = capsys.readouterr().out
    assert results["exact_match_table"] in printed and results["token_accuracy_table"] in printed


@pytest.mark.slow
@pytest.mark.figures
def test_default_run_attention_holds_up_with_length(tmp_path):
    results = example.main(["--output-dir", str(tmp_path)])
    _check(results, tmp_path)
    exact = results["exact_match"]
    # The finding: without attention exact match collapses on long sources; with it, not.
    assert exact["no attention"][-1] <= 0.1 < exact["no attention"][0]
    for name in ("bahdanau", "luong global", "luong local-p"):
        assert min(results["token_accuracy"][name]) >= 0.8, name
