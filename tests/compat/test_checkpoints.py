"""Checkpoints made by an earlier keras_attention keep loading, with the same outputs.

The fixtures in `fixtures/` were written once by `make_fixtures.py` (on TensorFlow; see
`fixtures/MANIFEST.json`) and are never rewritten by tests. For each of them:

- (a) the `.keras` file loads with `safe_mode=True` and reproduces the stored outputs;
- (b) a model freshly built by the same constructor (`_specs.py`) loads the `.weights.h5` file
  and reproduces the stored outputs;
- (c) the stored outputs agree with the float64 NumPy references (`tests/reference.py`,
  `tests/reference_cells.py`), so a fixture recorded from wrong code cannot pass (the Seq2Seq
  model has no reference of its own: its parts are the layers and cells checked here).

Tolerance 1e-5 (relative and absolute): the outputs are recomputed in float32, possibly on
another backend (JAX, PyTorch) whose kernels sum in another order; over these few small
operations and 4 recurrent steps that moves results by ~1e-7 to 1e-6. A checkpoint that loaded
wrongly (a weight missing, renamed, transposed or left at its initial value) or a change of the
mathematics moves them by 1e-2 or more.
"""

from __future__ import annotations

import json
from pathlib import Path

import keras
import numpy as np
import pytest

from keras_attention import AttentionRNN
from tests import reference
from tests import reference_cells as ref_cells
from tests.compat._specs import SPECS, to_numpy
from tests.conftest import layer_weights

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text())
NAMES = sorted(MANIFEST["fixtures"])
TOL = {"rtol": 1e-5, "atol": 1e-5}
CELL_FNS = {"lstm": ref_cells.lstm_cell, "gru": ref_cells.gru_cell}


def _stored(name: str) -> tuple[dict, dict]:
    with np.load(FIXTURES / f"{name}.npz") as data:
        inputs = {k[len("input__") :]: data[k] for k in data.files if k.startswith("input__")}
        outputs = {k[len("output__") :]: data[k] for k in data.files if k.startswith("output__")}
    return inputs, outputs


def _run(model: keras.Model, inputs: dict) -> dict:
    """The model's outputs as NumPy arrays.

    On JAX through `predict` (one XLA compilation per model; eager JAX compiles every
    operation separately, which costs seconds), elsewhere eagerly.
    """
    if keras.backend.backend() == "jax":
        return model.predict(inputs, batch_size=len(next(iter(inputs.values()))), verbose=0)
    return to_numpy(model(inputs))


def _assert_outputs(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].shape == want[key].shape, key
        np.testing.assert_allclose(got[key], want[key], err_msg=key, **TOL)


def test_manifest_lists_every_fixture_and_spec():
    assert set(NAMES) == set(SPECS)
    for entry in MANIFEST["fixtures"].values():
        for filename in entry["files"]:
            assert (FIXTURES / filename).is_file(), filename
    assert MANIFEST["keras_attention_version"] == "0.1.0"


def test_fixtures_stay_small():
    total = sum(p.stat().st_size for p in FIXTURES.iterdir())
    assert total < 1024 * 1024, f"fixtures take {total} bytes; keep them under 1 MiB"


@pytest.mark.parametrize("name", NAMES)
def test_keras_file_loads_safely_with_the_same_outputs(name):
    inputs, want = _stored(name)
    model = keras.saving.load_model(FIXTURES / f"{name}.keras", safe_mode=True)
    _assert_outputs(_run(model, inputs), want)


_FRESH: dict = {}


def _fresh(name: str) -> keras.Model:
    """A model built by the fixture's constructor, with the stored weights loaded (cached)."""
    if name not in _FRESH:
        model = SPECS[name].build()
        model.load_weights(FIXTURES / f"{name}.weights.h5")
        _FRESH[name] = model
    return _FRESH[name]


@pytest.mark.parametrize("name", NAMES)
def test_weights_file_loads_into_a_fresh_model_with_the_same_outputs(name):
    inputs, want = _stored(name)
    _assert_outputs(_run(_fresh(name), inputs), want)


@pytest.mark.parametrize("name", [n for n in NAMES if SPECS[n].kind != "seq2seq"])
def test_stored_outputs_match_the_numpy_reference(name):
    """The fixture itself is right: its outputs follow docs/design.md §2 with its own weights."""
    spec = SPECS[name]
    inputs, want = _stored(name)
    model = _fresh(name)
    if spec.kind == "layer":
        out, alpha = reference.attention(
            inputs["query"],
            inputs["value"],
            weights=layer_weights(model.get_layer("attention")),
            value_mask=inputs["value_mask"],
            **spec.reference,
        )
        np.testing.assert_allclose(want["weights"], alpha, **TOL)
        np.testing.assert_allclose(want["output"], out, **TOL)
        return

    rnn = next(layer for layer in model.layers if isinstance(layer, AttentionRNN))
    cell = rnn.cell
    kinds = spec.reference["cells"]
    if len(kinds) == 1:
        cell_fn, cell_weights = CELL_FNS[kinds[0]], layer_weights(cell.cell)
    else:
        cell_fn = ref_cells.stacked_cell(*(CELL_FNS[k] for k in kinds))
        cell_weights = [layer_weights(c) for c in cell.cell.cells]
    common = {
        "cell_fn": cell_fn,
        "cell_weights": cell_weights,
        "attention": {**spec.reference["attention"], "weights": layer_weights(cell.attention)},
        "target_mask": inputs["target_mask"],
    }
    args = (inputs["sequences"], inputs["memory"], inputs["memory_mask"])
    if spec.kind == "luong_rnn":
        outputs, alignments, states = ref_cells.luong_decoder(
            *args,
            attention_kernel=cell.attention_kernel.numpy(),
            input_feeding=spec.reference["input_feeding"],
            **common,
        )
    else:
        outputs, alignments, states = ref_cells.bahdanau_decoder(*args, **common)
    np.testing.assert_allclose(want["alignments"], alignments, **TOL)
    np.testing.assert_allclose(want["outputs"], outputs, **TOL)
    assert len(states) == len([k for k in want if k.startswith("state_")])
    for i, state in enumerate(states):
        np.testing.assert_allclose(want[f"state_{i}"], state, **TOL)


def test_seq2seq_fixture_is_sane():
    """No reference for the whole model: finite logits of the stored shape, one per target step."""
    inputs, want = _stored("seq2seq_luong")
    logits = want["logits"]
    assert logits.shape == inputs["target_ids"].shape + (9,)
    assert np.all(np.isfinite(logits))
