"""benchmarks/g2p_peers.py: its scoring and output parsing (cheap), the Sequitur patch, and
(marker `slow`, CI's extended tests, which install the peers with `make peers`) its smoke mode
with Phonetisaurus and Sequitur on a few hundred words."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("_g2p_peers", ROOT / "benchmarks" / "g2p_peers.py")
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)

LEXICON = {
    "exit": [("EH", "G", "Z", "IH", "T"), ("EH", "K", "S", "AH", "T")],
    "knife": [("N", "AY", "F")],
    "box": [("B", "AA", "K", "S")],
}


def test_tool_outputs_are_parsed():
    text = "exit\tEH G Z IH T\nexit\tEH K S IH T\nstack usage:  2\nknife\tN AY F\n"
    assert peers.read_hypotheses(text) == {
        "exit": [("EH", "G", "Z", "IH", "T"), ("EH", "K", "S", "IH", "T")],
        "knife": [("N", "AY", "F")],
    }
    variants = "exit\t0\t0.16\tEH G Z IH T\nexit\t1\t0.11\tS T\nswig/python detected a leak\n"
    assert peers.read_hypotheses(variants, sequitur_variants=True) == {
        "exit": [("EH", "G", "Z", "IH", "T"), ("S", "T")]
    }


def test_score_uses_the_closest_reference_and_counts_missing_words():
    hypotheses = {
        "exit": [("EH", "K", "S", "IH", "T")],  # 1 substitution from the 2nd reference
        "knife": [("N", "AY", "F")],  # right
    }  # box: no output, an empty prediction (4 deletions)
    result = peers.score(hypotheses, ["exit", "knife", "box"], LEXICON)
    assert result["wer"] == pytest.approx(100 * 2 / 3)
    assert result["per"] == pytest.approx(100 * (1 + 0 + 4) / (5 + 3 + 4))
    assert result["no_output"] == 1 and result["words"] == 3


def test_n_best_share():
    hypotheses = {
        "exit": [("S",), ("EH", "K", "S", "AH", "T"), ("T",), ("T",), ("EH", "G", "Z", "IH", "T")]
    }  # the first reference is 5th: outside the 4-best
    share = peers.n_best_share(hypotheses, ["exit", "knife"], LEXICON, n=4)
    assert (share["words"], share["references"], share["references_found"]) == (1, 2, 1)
    assert share["share_found"] == 0.5 and share["words_all_found"] == 0
    assert peers.n_best_share(hypotheses, ["exit"], LEXICON, n=5)["words_all_found"] == 1


def test_ours_reads_a_run_and_the_minutes_to_the_reference_wer(tmp_path):
    """`--ours` reads a pronounce.py metrics.json; the first curve point at or below the
    reference WER gives the wall and CPU minutes to it (none reached: None)."""
    curve = [
        {"epoch": 1, "epochs": 1.0, "minutes": 3.0, "cpu_minutes": 5.5, "wer": 40.0, "per": 9.0},
        {"epoch": 2, "epochs": 2.0, "minutes": 6.0, "cpu_minutes": 11.0, "wer": 26.0, "per": 6.0},
        {"epoch": 3, "epochs": 3.0, "minutes": 9.0, "cpu_minutes": 16.5, "wer": 25.0, "per": 5.9},
    ]
    metrics = {
        "test": {"wer": 25.5, "per": 6.1, "words": 100},
        "training": {"epochs": 3, "epochs_done": 3.0, "seconds": 540.0, "cpu_seconds": 990.0,
                     "curve": curve},
        "evaluation_seconds": 1.0,
        "config": {"attention": "bahdanau", "beam_width": 4},
    }  # fmt: skip
    (tmp_path / "metrics.json").write_text(json.dumps(metrics))
    row = peers.ours("run", tmp_path, 26.06)
    assert row["minutes_to_reference_wer"] == 6.0 and row["cpu_minutes_to_reference_wer"] == 11.0
    assert row["training"]["cpu_seconds"] == 990.0 and row["decoding"]["ms_per_word"] == 10.0
    never = peers.ours("run", tmp_path, 20.0)
    assert never["minutes_to_reference_wer"] is None
    assert never["cpu_minutes_to_reference_wer"] is None
    assert "| keras_attention run (bahdanau, 3.0 epochs) | 25.50 | 6.10 | 9.0 (16.5, ?) |" in (
        peers.table([row])
    )
    # An ensemble's run (pronounce.py --members 2): its first model's curve, said so.
    members = [{"curve": curve}, {"curve": []}]
    metrics["training"] = {"epochs": 6, "epochs_done": 6.0, "seconds": 1080.0,
                           "cpu_seconds": 1980.0, "members": members}  # fmt: skip
    (tmp_path / "metrics.json").write_text(json.dumps(metrics))
    ensemble = peers.ours("run", tmp_path, 26.06)
    assert ensemble["minutes_to_reference_wer"] == 6.0 and "first" in ensemble["curve_of"]
    assert ensemble["system"] == "keras_attention run (2 models × bahdanau, 6.0 epochs)"


def test_sequitur_patch_frees_returned_objects_with_their_destructor(tmp_path):
    """The patch on a stand-in for sequitur-g2p 1.0.1668.30's sequitur.py (its five
    `thisown` lines, `num.sometrue`, which NumPy 2 removed): the objects are freed by their
    class's destructor once, when they die, and `thisown` is never set."""
    names = ("eg", "eg", "evidence", "evidence", "result")  # five objects, one line each
    body = "".join(
        f"    {name} = objects[{i}]\n    {name}.thisown = True\n    out.append({name})\n"
        for i, name in enumerate(names)
    )
    (tmp_path / "sequitur.py").write_text(
        "import numpy as num\nimport sequitur_, misc\n\n\ndef run(objects):\n    out = []\n"
        + body + "    assert not num.sometrue(num.zeros(2))\n    return out\n"
    )  # fmt: skip
    (tmp_path / "sequitur_.py").write_text(
        textwrap.dedent("""
        freed = []
        class _Proxy:
            def __init__(self):
                self.this = object()
            @property
            def thisown(self):
                raise AssertionError("the patch must not touch thisown")
            @thisown.setter
            def thisown(self, value):
                raise AssertionError("the patch must not touch thisown")
        class EstimationGraph(_Proxy):
            __swig_destroy__ = freed.append
        class SequenceModelEstimator(EstimationGraph): pass
    """)
    )
    (tmp_path / "misc.py").write_text("")
    peers.patch_sequitur(str(tmp_path))
    peers.patch_sequitur(str(tmp_path))  # idempotent
    code = textwrap.dedent("""
        import gc, sequitur, sequitur_
        objects = [sequitur_.EstimationGraph(), sequitur_.EstimationGraph(),
                   sequitur_.SequenceModelEstimator(), sequitur_.SequenceModelEstimator(),
                   sequitur_.EstimationGraph()]
        pointers = [o.this for o in objects]
        returned = sequitur.run(objects)
        assert all(a is b for a, b in zip(returned, objects)) and not sequitur_.freed
        del objects, returned
        gc.collect()
        assert sorted(map(id, sequitur_.freed)) == sorted(map(id, pointers)), sequitur_.freed
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert run.stdout.strip() == "ok", run.stderr
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "sequitur.py").write_text("import sequitur_\n")
    with pytest.raises(RuntimeError, match="Received: 0 `thisown` lines"):
        peers.patch_sequitur(str(tmp_path / "other"))


@pytest.mark.slow
@pytest.mark.tensorflow_only  # one run is enough: the scoring is backend-free
def test_smoke_mode_trains_decodes_and_scores_both_peers(tmp_path):
    if peers.find_peers_bin(None) is None:
        pytest.skip(
            "Phonetisaurus and Sequitur are not installed: `make peers` installs them "
            f"(make test-extended does; or set {peers.PEERS_ENV})"
        )
    results = peers.main(["--smoke", "--output-dir", str(tmp_path), "--sequitur-budget", "10"])
    rows = {row["system"].split()[0]: row for row in results["rows"]}
    assert set(rows) == {"Phonetisaurus", "Sequitur"}
    for row in rows.values():
        test = row["test"]
        assert test["words"] == peers.SMOKE["test_words"] and test["no_output"] == 0
        assert 0 <= test["per"] <= test["wer"] <= 100 and test["wer"] < 100
        assert row["training"]["cpu_seconds"] > 0 and row["model_bytes"] > 0
        assert row["decoding"]["ms_per_word"] > 0
        assert row["n_best"]["words"] >= 1
    orders = rows["Sequitur"]["training"]["orders"]
    assert 1 <= len(orders) <= peers.SMOKE["max_order"]
    saved = json.loads(Path(results["json"]).read_text())
    assert [r["system"] for r in saved["rows"]] == [r["system"] for r in results["rows"]]
    predictions = (tmp_path / "phonetisaurus_test_predictions.tsv").read_text().splitlines()
    assert len(predictions) == peers.SMOKE["test_words"]
