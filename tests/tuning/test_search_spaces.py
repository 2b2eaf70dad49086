"""`search_space`: every combination it can produce builds a valid model that trains."""

from __future__ import annotations

import importlib
import itertools
import sys

import numpy as np
import pytest

keras_tuner = pytest.importorskip("keras_tuner")

from keras_attention.tuning import Seq2SeqHyperModel, search_space  # noqa: E402

SMALL = {"units": 8, "embedding_dim": 4, "dropout": 0.1, "learning_rate": 1e-3}
LUONG_ONLY = ("score_mode", "alignment", "window_radius", "input_feeding")


def _grid(fixed: dict) -> list[tuple[dict, dict]]:
    """`(hyperparameter values, search_space result)` for every distinct result over the
    categorical grid of the space left by `fixed`: each Choice value, Booleans as the 0/1
    that `hp.Choice([True, False])` gives, Ints at both ends of their range."""
    space = keras_tuner.HyperParameters()
    search_space(space, **fixed)
    axes = {}
    for hp in space.space:
        kind = type(hp).__name__
        if kind == "Boolean":
            axes[hp.name] = [0, 1]
        elif kind == "Choice":
            axes[hp.name] = list(hp.values)
        elif kind == "Int":
            axes[hp.name] = [hp.min_value, hp.max_value]
        else:
            raise AssertionError(f"the test does not enumerate {kind} {hp.name}")
    results = {}
    for combination in itertools.product(*axes.values()):
        hp = keras_tuner.HyperParameters()
        search_space(hp, **fixed)
        values = dict(zip(axes, combination))
        hp.values.update(values)
        arguments = search_space(hp, **fixed)
        results[tuple(sorted(arguments.items()))] = (values, arguments)
    return list(results.values())


def _tiny_batch(rng, source_vocabulary=12, target_vocabulary=9):
    source = rng.integers(1, source_vocabulary, size=(4, 6)).astype("int32")
    source[1, 4:] = 0  # padding
    target = rng.integers(1, target_vocabulary, size=(4, 5)).astype("int32")
    target[2, 3:] = 0
    return {"source_ids": source, "target_ids": target}, np.where(target > 0, target, 0)


def _checked_grid():
    fixed = {k: v for k, v in SMALL.items() if k != "learning_rate"}
    grid = _grid(fixed)
    arguments = [a for _, a in grid]
    luong = [a for a in arguments if a["attention"] == "luong"]
    bahdanau = [a for a in arguments if a["attention"] == "bahdanau"]
    # 3 scores x (global + 2 local alignments x 2 radii) x 2 input feedings, and Bahdanau once
    # (its Luong-only hyperparameters are inactive and left out).
    assert len(luong) == 3 * (1 + 2 * 2) * 2 and len(bahdanau) == 1
    assert not set(LUONG_ONLY) & set(bahdanau[0])
    assert {a.get("window_radius") for a in luong} == {None, 2, 8}
    assert {a["input_feeding"] for a in luong} == {0, 1}
    assert all(("window_radius" in a) == (a["alignment"] != "global") for a in luong)
    return grid


def _covering(grid):
    """A greedy cover, in grid order: each combination kept adds a value of some argument not
    seen before, so that every value of every argument appears (not always the fewest)."""
    chosen, seen = [], set()
    for values, arguments in grid:
        new = {(k, v) for k, v in arguments.items()} - seen
        if new:
            chosen.append((values, arguments))
            seen |= new
    return chosen


def _build_and_train(grid):
    hypermodel = Seq2SeqHyperModel(12, 9, fixed=SMALL, jit_compile=False)
    x, y = _tiny_batch(np.random.default_rng(0))
    for values, arguments in grid:
        hp = keras_tuner.HyperParameters()
        hp.values.update(values)  # registration keeps values already set
        model = hypermodel.build(hp)
        config = model.get_config()
        for key, value in arguments.items():
            expected = bool(value) if key == "input_feeding" else value
            assert config[key] == expected, (key, arguments)
        model.run_eagerly = True  # one eager step each: tracing 31 graphs would take minutes
        loss = model.train_on_batch(x, y, return_dict=True)["loss"]
        assert np.isfinite(loss), arguments


def test_combinations_covering_every_value_build_and_train_one_step():
    grid = _checked_grid()
    covering = _covering(grid)
    assert len(covering) < len(grid)
    covered = {(k, v) for _, a in covering for k, v in a.items()}
    assert covered == {(k, v) for _, a in grid for k, v in a.items()}
    _build_and_train(covering)


@pytest.mark.slow
def test_every_combination_builds_and_trains_one_step():
    _build_and_train(_checked_grid())


@pytest.mark.parametrize("bidirectional", [True, False])
def test_dot_scores_tie_the_encoder_size_for_every_units_choice(bidirectional):
    fixed = {"bidirectional": bidirectional}
    space = keras_tuner.HyperParameters()
    search_space(space, **fixed)
    for units in next(p for p in space.space if p.name == "units").values:
        hp = keras_tuner.HyperParameters()
        search_space(hp, **fixed)
        hp.values.update(units=units, score_mode="dot")
        arguments = search_space(hp, **fixed)
        assert arguments["encoder_units"] * (2 if bidirectional else 1) == units
        hypermodel = Seq2SeqHyperModel(7, 7, fixed={**fixed, "embedding_dim": 4})
        hp.values.update(embedding_dim=4)
        hypermodel.build(hp)  # builds the weights: raises if the sizes differ


def test_conditions_mark_luong_hyperparameters_inactive():
    hp = keras_tuner.HyperParameters()
    search_space(hp)
    assert [p.name for p in hp.space] == [
        "units", "embedding_dim", "dropout", "attention", "score_mode", "alignment",
        "window_radius", "input_feeding",
    ]  # fmt: skip
    assert hp.is_active("score_mode") and not hp.is_active("window_radius")  # global default
    hp.values["alignment"] = "local_monotonic"
    hp.values["window_radius"] = 6
    assert hp.is_active("window_radius")
    hp.values["attention"] = "bahdanau"
    assert not any(hp.is_active(name) for name in LUONG_ONLY)
    assert search_space(hp) == {"units": 64, "embedding_dim": 32, "dropout": 0.0,
                                "attention": "bahdanau"}  # fmt: skip


def test_fixed_values_are_not_tuned():
    hp = keras_tuner.HyperParameters()
    arguments = search_space(hp, attention="luong", alignment="global", units=16, rnn="gru")
    assert [p.name for p in hp.space] == ["embedding_dim", "dropout", "score_mode",
                                          "input_feeding"]  # fmt: skip
    assert all(not p.conditions for p in hp.space)  # fixed parents: no conditional scopes
    assert arguments["rnn"] == "gru" and arguments["units"] == 16
    hp = keras_tuner.HyperParameters()
    assert search_space(hp, attention="Bahdanau", score_mode="dot")["attention"] == "Bahdanau"
    assert [p.name for p in hp.space] == ["units", "embedding_dim", "dropout"]
    hp = keras_tuner.HyperParameters()
    search_space(hp, alignment="local_predictive")
    window = next(p for p in hp.space if p.name == "window_radius")
    assert [c.get_config()["name"] for c in window.conditions] == ["attention"]


def test_dot_is_left_out_when_sizes_are_fixed_apart():
    hp = keras_tuner.HyperParameters()
    search_space(hp, encoder_units=16)  # units tuned: no dot
    score = next(p for p in hp.space if p.name == "score_mode")
    assert list(score.values) == ["general", "concat"]
    hp = keras_tuner.HyperParameters()
    search_space(hp, units=32, encoder_units=16)  # 2 x 16 == 32: dot fits
    assert "dot" in next(p for p in hp.space if p.name == "score_mode").values
    hp = keras_tuner.HyperParameters()
    hp.values["score_mode"] = "dot"
    assert search_space(hp, units=33, bidirectional=False)["encoder_units"] == 33


@pytest.mark.parametrize(
    "hp, fixed, error, match",
    [
        ("hp", {}, TypeError, r"`hp` must be a keras_tuner.HyperParameters. Received: hp='hp'"),
        (None, {"unit": 8}, ValueError, r"`fixed` may only hold Seq2Seq arguments.*unknown: unit"),
        (None, {"units": 0}, ValueError, r"`units` must be a positive integer.*units=0"),
        (
            None,
            {"score_mode": "dot", "encoder_units": 8},
            ValueError,
            r"score_mode='dot' needs .* encoder_units=8",
        ),
        (None, {"score_mode": "dot", "units": 33}, ValueError, r"Received: units=33"),
    ],
)
def test_bad_arguments(hp, fixed, error, match):
    with pytest.raises(error, match=match):
        search_space(keras_tuner.HyperParameters() if hp is None else hp, **fixed)


def test_missing_keras_tuner_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m.startswith("keras_attention.tuning")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "keras_tuner", None)
    with pytest.raises(ImportError, match=r'pip install "keras-recurrent-attention\[tuning\]"'):
        importlib.import_module("keras_attention.tuning")
