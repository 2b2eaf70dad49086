"""Checkpoints made by an earlier keras_attention keep loading, with the same outputs.

Each released version's fixtures (`fixtures/` for 0.1.0, `fixtures-0.2.0/` for 0.2.0;
`_specs.FIXTURE_DIRS`) were written once by `make_fixtures.py` with that version (on TensorFlow;
see each folder's `MANIFEST.json`) and are never rewritten by tests. For each of them:

- (a) the `.keras` file loads with `safe_mode=True` and reproduces the stored outputs;
- (b) a model freshly built by the same constructor (`_specs.py`) loads the `.weights.h5` file
  and reproduces the stored outputs;
- (c) the stored outputs agree with the float64 NumPy references (`tests/reference.py`,
  `tests/reference_cells.py`, `tests/reference_monotonic.py`), so a fixture recorded from wrong
  code cannot pass (the Seq2Seq models and the two-attention Luong cell have no reference of
  their own: their parts are checked here and in tests/cells).

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
from tests import reference_monotonic as ref_mono
from tests.compat._specs import FIXTURE_DIRS, SPECS, specs_for, to_numpy
from tests.conftest import layer_weights

HERE = Path(__file__).resolve().parent
VERSIONS = sorted(FIXTURE_DIRS)
MANIFESTS = {
    v: json.loads((HERE / FIXTURE_DIRS[v] / "MANIFEST.json").read_text()) for v in VERSIONS
}
CASES = [(v, name) for v in VERSIONS for name in sorted(MANIFESTS[v]["fixtures"])]
IDS = [f"{v}-{name}" for v, name in CASES]
TOL = {"rtol": 1e-5, "atol": 1e-5}
CELL_FNS = {"lstm": ref_cells.lstm_cell, "gru": ref_cells.gru_cell}


def _dir(version: str) -> Path:
    return HERE / FIXTURE_DIRS[version]


def _stored(version: str, name: str) -> tuple[dict, dict]:
    with np.load(_dir(version) / f"{name}.npz") as data:
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


@pytest.mark.parametrize("version", VERSIONS)
def test_manifest_lists_every_fixture_and_spec(version):
    manifest = MANIFESTS[version]
    assert manifest["keras_attention_version"] == version
    assert set(manifest["fixtures"]) == set(specs_for(version))
    for entry in manifest["fixtures"].values():
        for filename in entry["files"]:
            assert (_dir(version) / filename).is_file(), filename


def test_every_version_after_the_first_resaves_the_earlier_specs():
    """0.2.0's set holds every 0.1.0 model saved again by 0.2.0, and adds its own."""
    assert set(MANIFESTS["0.1.0"]["fixtures"]) < set(MANIFESTS["0.2.0"]["fixtures"])
    new = set(MANIFESTS["0.2.0"]["fixtures"]) - set(MANIFESTS["0.1.0"]["fixtures"])
    assert {SPECS[n].kind for n in new} >= {"monotonic_layer", "location_layer", "stateful_rnn"}


@pytest.mark.parametrize("version", VERSIONS)
def test_fixtures_stay_small(version):
    total = sum(p.stat().st_size for p in _dir(version).iterdir())
    assert total < 1536 * 1024, f"{version}'s fixtures take {total} bytes; keep them < 1.5 MiB"


@pytest.mark.parametrize(("version", "name"), CASES, ids=IDS)
def test_keras_file_loads_safely_with_the_same_outputs(version, name):
    inputs, want = _stored(version, name)
    model = keras.saving.load_model(_dir(version) / f"{name}.keras", safe_mode=True)
    _assert_outputs(_run(model, inputs), want)


_FRESH: dict = {}


def _fresh(version: str, name: str) -> keras.Model:
    """A model built by the fixture's constructor, with the stored weights loaded (cached)."""
    if (version, name) not in _FRESH:
        model = SPECS[name].build()
        model.load_weights(_dir(version) / f"{name}.weights.h5")
        _FRESH[(version, name)] = model
    return _FRESH[(version, name)]


@pytest.mark.parametrize(("version", "name"), CASES, ids=IDS)
def test_weights_file_loads_into_a_fresh_model_with_the_same_outputs(version, name):
    inputs, want = _stored(version, name)
    _assert_outputs(_run(_fresh(version, name), inputs), want)


REFERENCED = [(v, n) for v, n in CASES if SPECS[n].kind not in ("seq2seq", "rnn")]


@pytest.mark.parametrize(("version", "name"), REFERENCED, ids=[f"{v}-{n}" for v, n in REFERENCED])
def test_stored_outputs_match_the_numpy_reference(version, name):
    """The fixture itself is right: its outputs follow docs/design.md §2 (and
    docs/monotonic-attention.md) with its own weights."""
    spec = SPECS[name]
    inputs, want = _stored(version, name)
    model = _fresh(version, name)
    if spec.kind in ("monotonic_layer", "location_layer"):
        weights = layer_weights(model.get_layer("attention"))
        args = (inputs["query"], inputs["value"], weights)
        if spec.kind == "location_layer":
            out, alpha, _ = ref_mono.location_sequence(
                *args, mask=inputs["value_mask"], **spec.reference
            )
        else:
            score = {k: v for k, v in spec.reference.items() if k not in ("family", "mode")}
            out, alpha = ref_mono.monotonic_sequence(
                *args,
                spec.reference["family"],
                spec.reference["mode"],
                mask=inputs["value_mask"],
                **score,
            )
        np.testing.assert_allclose(want["weights"], alpha, **TOL)
        np.testing.assert_allclose(want["output"], out, **TOL)
        return
    if spec.kind == "stateful_rnn":
        _check_stateful_rnn(spec, model, inputs, want)
        return
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


def _check_stateful_rnn(spec, model, inputs, want) -> None:
    """A decoder whose attention carries its previous alignments (tests/reference_monotonic)."""
    rnn = next(layer for layer in model.layers if isinstance(layer, AttentionRNN))
    cell, reference = rnn.cell, spec.reference
    attention = cell.attention
    weights = layer_weights(attention)
    batch, steps = inputs["memory"].shape[:2]
    if reference["family"] == "location":
        attend = ref_mono.location_attend(weights, cumulative=reference["cumulative"])
        initial = [np.zeros((batch, steps))] * attention.state_count
    else:
        attend = ref_mono.monotonic_attend(reference["family"], reference["mode"], weights)
        initial = [ref_mono.first_alignment(batch, steps)]
    (kind,) = reference["cells"]
    kernel = cell.attention_kernel.numpy() if reference["kind"] == "luong" else None
    outputs, alignments, final = ref_mono.decoder(
        reference["kind"],
        inputs["sequences"],
        inputs["memory"],
        inputs["memory_mask"],
        CELL_FNS[kind],
        layer_weights(cell.cell),
        attend,
        initial,
        kernel,
        inputs["target_mask"],
    )
    np.testing.assert_allclose(want["alignments"], alignments, **TOL)
    np.testing.assert_allclose(want["outputs"], outputs, **TOL)
    states = [want[k] for k in sorted(want) if k.startswith("state_")]
    for got, expected in zip(states[-attention.state_count :], final):
        np.testing.assert_allclose(got, expected, **TOL)


@pytest.mark.parametrize(
    ("version", "name"), [(v, n) for v, n in CASES if SPECS[n].kind in ("seq2seq", "rnn")]
)
def test_fixtures_without_a_reference_are_sane(version, name):
    """No reference for the whole model: finite outputs of the stored shapes."""
    inputs, want = _stored(version, name)
    for key, value in want.items():
        assert np.all(np.isfinite(value)), key
    if SPECS[name].kind == "seq2seq":
        assert want["logits"].shape == inputs["target_ids"].shape + (9,)
    else:
        assert want["alignments"].shape == inputs["sequences"].shape[:2] + (5,)
