"""The local-vs-global long-sequence example: data, model, one worker subprocess, smoke run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from _example_loader import load_example

example = load_example("long_sequences")


def test_data_is_deterministic_and_each_label_is_the_token_lag_steps_back():
    tokens, labels, weights = example.make_data(5, 40, alphabet=7, lag=3, seed=2)
    again = example.make_data(5, 40, alphabet=7, lag=3, seed=2)
    for a, b in zip((tokens, labels, weights), again):
        assert a.shape == (5, 40) and np.array_equal(a, b)
    assert tokens.dtype == labels.dtype == np.int32
    assert tokens.min() >= 1 and tokens.max() <= 7  # 0 is kept for "no label"
    assert np.array_equal(labels[:, 3:], tokens[:, :-3])  # y_t = x_{t-3}: a nearby position
    assert (labels[:, :3] == example.NO_LABEL).all()
    assert np.array_equal(weights, np.broadcast_to(np.arange(40) >= 3, (5, 40)).astype("f4"))
    other, _, _ = example.make_data(5, 40, alphabet=7, lag=3, seed=3)
    assert not np.array_equal(tokens, other)


def test_positions_and_model_shapes():
    layer = example.SinusoidalPositions(6)
    features = np.asarray(layer(np.zeros((2, 5), "int32")))
    assert features.shape == (2, 5, 6)
    t = np.arange(5)[:, None]
    frequencies = 10000.0 ** (-np.arange(0, 6, 2) / 6)
    expected = np.concatenate([np.sin(t * frequencies), np.cos(t * frequencies)], axis=-1)
    np.testing.assert_allclose(features[1], expected, atol=1e-6)
    with pytest.raises(ValueError, match="dim=3"):
        example.SinusoidalPositions(3)
    config = dict(example.DEFAULTS, embedding_dim=4, position_dim=4, attention_units=8)
    for alignment in example.ALIGNMENTS:
        model = example.build_model(config, alignment, 24)
        assert tuple(model(np.ones((3, 24), "int32")).shape) == (3, 24, 17)
        assert model.get_layer("attention").alignment == alignment


_TINY = dict(
    example.DEFAULTS,
    lengths=[32],
    window_radius=4,
    tokens_per_step=64,
    steps_per_epoch=2,
    epochs=2,
    test_sequences_tokens=64,
    embedding_dim=4,
    position_dim=4,
    attention_units=4,
)


def _check_result(result: dict, alignment: str, length: int) -> None:
    assert result["alignment"] == alignment and result["length"] == length
    for key in ("accuracy", "final_loss", "ms_per_step", "first_epoch_s", "peak_mib"):
        assert math.isfinite(result[key]), key
    assert 0.0 <= result["accuracy"] <= 1.0
    assert result["ms_per_step"] > 0 and result["peak_mib"] >= 0


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_worker_runs_one_configuration_in_a_subprocess():
    result = example.run_worker(_TINY, "local_monotonic", 32, seed=0, jit=False)
    _check_result(result, "local_monotonic", 32)
    assert result["batch"] == 2 and result["steps"] == 4


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_smoke_run_prints_the_side_by_side_table(tmp_path, capsys):
    results = example.main(["--smoke", "--output-dir", str(tmp_path)])
    lengths, alignments = results["config"]["lengths"], results["config"]["alignments"]
    assert alignments == list(example.ALIGNMENTS) and len(lengths) == 2
    assert [(r["length"], r["alignment"]) for r in results["results"]] == [
        (length, alignment) for length in lengths for alignment in alignments
    ]
    for r in results["results"]:
        _check_result(r, r["alignment"], r["length"])
    table = results["table"].splitlines()
    assert table[0] == "| " + " | ".join(example.HEADER) + " |"
    assert len(table) == 2 + len(lengths) * len(alignments)
    assert all(row.split(" | ")[5] == "(ref)" for row in table[2:] if "| global |" in row)
    assert results["table"] in capsys.readouterr().out
    saved = json.loads(Path(results["results_path"]).read_text())
    assert saved["table"] == results["table"] and Path(results["results_path"]).parent == tmp_path


@pytest.mark.slow
@pytest.mark.figures
def test_local_monotonic_learns_long_inputs_with_less_memory(tmp_path):
    # The default settings on two lengths and the two alignments with a clear outcome.
    results = example.main(
        ["--lengths", "256", "2048", "--alignments", "global", "local_monotonic",
         "--output-dir", str(tmp_path)]
    )  # fmt: skip
    by_key = {(r["length"], r["alignment"]): r for r in results["results"]}
    for length in (256, 2048):
        assert by_key[(length, "local_monotonic")]["accuracy"] >= 0.95
    assert by_key[(2048, "local_monotonic")]["peak_mib"] < by_key[(2048, "global")]["peak_mib"]
