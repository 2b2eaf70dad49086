"""Members trained side by side, each in a process of its own (`Settings.workers`), train as
they do one after another in the calling process: the same weights, curves and selection."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

from keras_attention.pairs import Settings, train
from tests.backend_utils import BACKEND

pytestmark = pytest.mark.skipif(BACKEND != "tensorflow", reason="keras_attention.pairs: TF")

WORDS = ["aba", "bad", "cab", "dab", "abc", "bcd", "cda", "dcb", "aab", "bba", "cca", "ddb"]
TINY = {"units": 8, "embedding_dim": 4, "epochs": 1, "batch_size": 4, "beam_width": 2,
        "jit_compile": False, "members": 2, "verbose": 0}  # fmt: skip


def _write(path, words):
    path.write_text("".join(f"{w}\t{' '.join(w.upper())}\n" for w in words), encoding="utf-8")
    return path


@pytest.mark.slow  # two members in turn, then two processes each starting TensorFlow: ~1 min
def test_members_in_processes_equal_members_in_this_process(tmp_path):
    data = _write(tmp_path / "train.tsv", WORDS), _write(tmp_path / "dev.tsv", WORDS[:4])
    runs = {}
    for workers in (1, 2):
        output = tmp_path / f"workers{workers}"
        training = train(*data, output, workers=workers, **TINY)
        model = keras.saving.load_model(output / "model.keras")
        runs[workers] = (training, [m.get_weights() for m in model.members])
        config = json.loads((output / "config.json").read_text())
        assert config["settings"]["workers"] == workers
        assert sorted(p.name for p in output.iterdir()) == [
            "backup-0",
            "backup-1",
            "config.json",
            "model.keras",
            "training.json",
        ]  # fmt: skip  (the members' weights and records were handed over and removed)
    (alone, alone_weights), (side, side_weights) = runs[1], runs[2]
    for a, b in zip(alone["members"], side["members"]):
        assert [round(p["val_loss"], 5) for p in a["curve"]] == [
            round(p["val_loss"], 5) for p in b["curve"]
        ]
        assert a["best_epoch"] == b["best_epoch"] and a["epochs"] == b["epochs"] == 1
    for a, b in zip(alone_weights, side_weights):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    assert alone["valid"] == side["valid"]


def test_workers_setting_is_checked_and_capped_by_the_members():
    assert Settings(members=3, workers=8).parallel_members() == 3
    assert Settings(members=1).parallel_members() == 1
    with pytest.raises(ValueError, match=r"Invalid setting `workers`. Received: workers=0"):
        Settings(workers=0)
