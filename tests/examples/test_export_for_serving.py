"""The export-for-serving example: data generator, smoke run end to end, default run (slow)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
from _example_loader import load_example

example = load_example("export_for_serving")


def test_pairs_are_deterministic_unambiguous_and_disjoint():
    sources, targets, dates = example.make_pairs(500, seed=3)
    again = example.make_pairs(500, seed=3)
    assert (sources, targets) == (again[0], again[1])
    test_sources, test_targets, test_dates = example.make_pairs(100, seed=4, exclude=dates)
    assert not dates & test_dates
    assert len(set(targets)) == 500  # distinct dates
    for source, target in zip(sources + test_sources, targets + test_targets):
        date = datetime.date.fromisoformat(target)
        assert str(date.year) in source  # four-digit years only: nothing ambiguous
    # Every style renders every date differently from the other dates (style by style).
    for style in range(8):
        rendered = {example.render(d, style) for d in dates}
        assert len(rendered) == len(dates)


def _check(results: dict, output: Path) -> None:
    model_dir = Path(results["model_dir"])
    assert (model_dir / "saved_model.pb").exists() and model_dir.name == "1"
    request = json.loads((output / "request.json").read_text())
    assert request["signature_name"] == "translate"
    response = json.loads((output / "response.json").read_text())
    assert len(response["predictions"]) == len(request["instances"])
    assert results["served_equals_python"] and results["saved_model_cli_equals_python"]
    assert results["serving_process_keras_attention_modules"] == []


@pytest.mark.slow  # end to end (`make test-extended`, which CI runs; issue 43)
def test_smoke_run_trains_exports_and_serves(tmp_path, capsys):
    results = example.main(["--smoke", "--output-dir", str(tmp_path), "march 3, 2021", ""])
    _check(results, tmp_path)
    assert results["request"]["instances"] == ["march 3, 2021", ""]
    printed = capsys.readouterr().out
    assert "| query | exported model (translate) | Python translator |" in printed
    assert "docker run" in printed and ":predict" in printed


@pytest.mark.slow
@pytest.mark.figures
def test_default_run_learns_the_dates(tmp_path):
    results = example.main(["--output-dir", str(tmp_path)])
    _check(results, tmp_path)
    assert results["test_exact_match"] >= 0.95
    assert [p["outputs"] for p in results["predictions"]] == [
        "1976-07-04", "2000-01-01", "1999-12-25", "2021-03-09",
    ]  # fmt: skip
