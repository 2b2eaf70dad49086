"""The location-sensitive vs additive example: data, metrics, smoke run end to end."""

from __future__ import annotations

import numpy as np
import pytest
from _example_loader import load_example

example = load_example("location_alignment")


def test_data_copies_the_source_and_the_decoder_input_is_shifted():
    data = example.make_data(5, 4, 6, seed=0)
    valid = data["source"] != 0
    assert np.array_equal(data["labels"], data["source"])
    assert np.all(data["decoder_in"][:, 0] == example.START)
    assert np.array_equal(
        data["decoder_in"][:, 1:][valid[:, 1:]], data["source"][:, :-1][valid[:, 1:]]
    )
    assert np.all(data["decoder_in"][~valid] == 0)
    assert set(np.unique(data["source"][valid])) <= {1, 2, 3}


@pytest.mark.slow
def test_smoke_run():
    results = example.main(["--smoke"])
    for kind in ("additive", "location"):
        metrics = results[kind]
        for key in ("accuracy", "diagonal_weight", "argmax_on_diagonal", "peak_moves_one_right"):
            assert 0.0 <= metrics[key] <= 1.0
