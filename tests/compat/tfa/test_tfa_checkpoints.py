"""`load_tfa_weights` against TensorFlow Addons 0.23's own numbers (fixtures/, made by
make_tfa_fixtures.py with real tfa; see its docstring for the environment).

Each case rebuilds the tfa `AttentionWrapper` of fixtures/MANIFEST.json as a
`LuongAttentionCell` by the rules of docs/migrating-from-tfa.md, loads the checkpoint and must
reproduce tfa's teacher-forced outputs, alignments and final states to 1e-5. Every variable was
moved away from its initializer before the checkpoint was written, so a weight left unloaded or
loaded into the wrong place fails. Reading a TensorFlow checkpoint needs TensorFlow installed;
the Keras backend may be any, so this runs on TensorFlow, JAX and PyTorch.
"""

from __future__ import annotations

import json
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_attention
from keras_attention import (
    AdditiveAttention,
    AttentionRNN,
    BahdanauAttentionCell,
    LuongAttention,
    LuongAttentionCell,
)
from keras_attention.migrate import load_tfa_weights
from tests.backend_utils import to_numpy

tf = pytest.importorskip("tensorflow", reason="reading a TensorFlow checkpoint needs TensorFlow")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text())
TOL = {"rtol": 1e-5, "atol": 1e-5}
MONOTONIC = ("BahdanauMonotonicAttention", "LuongMonotonicAttention")
HAVE_MONOTONIC = all(hasattr(keras_attention, name) for name in MONOTONIC)


def _attention(mechanism: dict):
    """Our attention layer for a tfa mechanism (docs/migrating-from-tfa.md, "Classes")."""
    kind = mechanism["class"]
    probability_fn = mechanism.get("probability_fn", "softmax")
    if kind == "LuongAttention":
        return LuongAttention(
            "general", use_scale=mechanism.get("scale", False), probability_fn=probability_fn
        )
    if kind == "BahdanauAttention":
        return AdditiveAttention(
            mechanism["units"],
            normalize=mechanism.get("normalize", False),
            probability_fn=probability_fn,
        )
    if kind == "BahdanauMonotonicAttention":
        return keras_attention.BahdanauMonotonicAttention(
            mechanism["units"], normalize=mechanism.get("normalize", False), mode=mechanism["mode"]
        )
    return keras_attention.LuongMonotonicAttention(
        use_scale=mechanism.get("scale", False), mode=mechanism["mode"]
    )


def _cell(case: dict) -> LuongAttentionCell:
    """Our cell for a tfa AttentionWrapper (docs/migrating-from-tfa.md, "AttentionWrapper")."""
    units = MANIFEST["sizes"]["units"]
    inner = {
        "lstm": lambda: keras.layers.LSTMCell(units),
        "gru": lambda: keras.layers.GRUCell(units),
        "stacked": lambda: keras.layers.StackedRNNCells(
            [keras.layers.GRUCell(3), keras.layers.LSTMCell(units)]
        ),
    }[case["cell"]]()
    layers = [_attention(m) for m in case["mechanisms"]]
    size = case["wrapper"]["attention_layer_size"]
    options = {"attention_layer": False} if size is None else {"attention_layer_size": size}
    return LuongAttentionCell(
        inner,
        layers if len(layers) > 1 else layers[0],
        attention_activation=None,  # tfa's attention layer is a Dense without activation
        output_attention=case["wrapper"].get("output_attention", True),
        **options,
    )


def _inputs(name: str):
    data = dict(np.load(FIXTURES / f"{name}.npz"))
    mask = np.arange(data["memory"].shape[1])[None, :] < data["lengths"][:, None]
    initial = [data[k] for k in sorted(data) if k.startswith("initial_state_")] or None
    return data, mask, initial


def _run_case(name: str, scope=None, case_name=None, checkpoint=None, via_rnn=False):
    case = MANIFEST["cases"][case_name or name]
    data, mask, initial = _inputs(case_name or name)
    cell = _cell(case)
    rnn = AttentionRNN(cell, return_attention_scores=True, return_state=True)
    rnn(data["inputs"], data["memory"], memory_mask=mask, initial_state=initial)  # builds
    target = rnn if via_rnn else cell
    mapping = load_tfa_weights(target, checkpoint or str(FIXTURES / name), scope=scope)
    outputs, alignments, *states = rnn(
        data["inputs"], data["memory"], memory_mask=mask, initial_state=initial
    )
    return cell, mapping, data, to_numpy(outputs), to_numpy(alignments), states


def _assert_matches_tfa(data, outputs, alignments, states, check_feed=True):
    np.testing.assert_allclose(outputs, data["outputs"], **TOL)
    tfa_alignments = [data[k] for k in sorted(data) if k.startswith("alignments_")]
    np.testing.assert_allclose(alignments, np.mean(tfa_alignments, axis=0), **TOL)
    cell_states = [data[k] for k in sorted(data) if k.startswith("cell_state_")]
    for ours, theirs in zip(states, cell_states):
        np.testing.assert_allclose(to_numpy(ours), theirs, **TOL)
    if check_feed:  # the fed attention h̃ (tfa's state.attention) follows the cell's states
        np.testing.assert_allclose(to_numpy(states[len(cell_states)]), data["attention"], **TOL)


PLAIN = [n for n, c in MANIFEST["cases"].items() if c["mechanisms"][0]["class"] not in MONOTONIC]
MONOTONIC_CASES = [n for n in MANIFEST["cases"] if n not in PLAIN]


def test_fixtures_cover_the_issue():
    """Luong, scaled Luong, normalized Bahdanau, every monotonic mode, GRU and LSTM,
    attention_layer_size None / int / list, output_attention=False, two mechanisms."""
    cases = MANIFEST["cases"].values()
    mechanisms = [m for c in cases for m in c["mechanisms"]]
    assert {"LuongAttention", "BahdanauAttention", *MONOTONIC} <= {m["class"] for m in mechanisms}
    assert any(m.get("scale") and m["class"] == "LuongAttention" for m in mechanisms)
    assert any(m.get("normalize") and m["class"] == "BahdanauAttention" for m in mechanisms)
    modes = {(m["class"], m["mode"]) for m in mechanisms if "mode" in m}
    assert len(modes) == 6
    assert {"lstm", "gru"} <= {c["cell"] for c in cases}
    sizes = [c["wrapper"]["attention_layer_size"] for c in cases]
    assert None in sizes and 5 in sizes and any(isinstance(s, list) for s in sizes)
    assert any(c["wrapper"].get("output_attention") is False for c in cases)
    assert any(len(c["mechanisms"]) == 2 for c in cases)
    total = sum(p.stat().st_size for p in FIXTURES.iterdir())
    assert total < 256 * 1024, f"tfa fixtures take {total} bytes; keep them small"


@pytest.mark.parametrize("name", PLAIN)
def test_loaded_cell_reproduces_tfa(name):
    cell, mapping, data, outputs, alignments, states = _run_case(name)
    _assert_matches_tfa(data, outputs, alignments, states)
    # Every weight of the cell came from the checkpoint, each from its own variable.
    assert sorted(mapping) == sorted(w.path for w in cell.weights)
    assert len(set(mapping.values())) == len(mapping)
    stored = {key for key, _ in tf.train.list_variables(str(FIXTURES / name))}
    assert set(mapping.values()) <= stored


@pytest.mark.skipif(
    not HAVE_MONOTONIC,
    reason="keras_attention has no BahdanauMonotonicAttention / LuongMonotonicAttention yet "
    "(issue 12, the other half); the tfa fixtures are ready",
)
@pytest.mark.parametrize("name", MONOTONIC_CASES)
def test_loaded_monotonic_cell_reproduces_tfa(name):
    """tfa carries the previous alignments in the state and starts from all weight on the
    first memory position; the fed h̃ sits elsewhere in our state, so only the cell's own states
    and the outputs are compared (the outputs are h̃)."""
    cell, mapping, data, outputs, alignments, states = _run_case(name)
    _assert_matches_tfa(data, outputs, alignments, states, check_feed=False)
    assert any(path.endswith("score_bias") for path in mapping)


def test_keras_model_checkpoint_with_a_second_path_to_the_mechanism():
    """tf.keras Model.save_weights stores the mechanism's kernel under the model's shorter path
    (`first_mechanism/…`); the object graph still finds it below the wrapper."""
    _, mapping, data, outputs, alignments, states = _run_case(
        "stacked_luong_keras_model", via_rnn=True
    )
    _assert_matches_tfa(data, outputs, alignments, states)
    assert "first_mechanism/memory_layer/kernel/.ATTRIBUTES/VARIABLE_VALUE" in mapping.values()


def test_a_checkpoint_directory_and_a_path_like(tmp_path):
    """A directory with a `checkpoint` file (what tf.train.CheckpointManager writes) and a
    pathlib prefix both work."""
    import shutil

    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(FIXTURES / f"luong_lstm{suffix}", tmp_path / f"ckpt-3{suffix}")
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-3"\n')
    _, _, data, outputs, alignments, states = _run_case("luong_lstm", checkpoint=str(tmp_path))
    _assert_matches_tfa(data, outputs, alignments, states)
    _, _, data, outputs, alignments, states = _run_case(
        "luong_lstm", checkpoint=tmp_path / "ckpt-3"
    )
    _assert_matches_tfa(data, outputs, alignments, states)


def test_scope_picks_one_of_several_wrappers():
    first, second = MANIFEST["two_wrappers"]["first"], MANIFEST["two_wrappers"]["second"]
    _, _, data, outputs, alignments, states = _run_case(
        "two_wrappers", scope="second", case_name=second
    )
    _assert_matches_tfa(data, outputs, alignments, states)
    cell = _cell(MANIFEST["cases"][first])
    data, mask, initial = _inputs(first)
    AttentionRNN(cell)(data["inputs"], data["memory"], memory_mask=mask, initial_state=initial)
    with pytest.raises(ValueError, match="2 AttentionWrappers.*'first'.*'second'"):
        load_tfa_weights(cell, str(FIXTURES / "two_wrappers"))
    with pytest.raises(ValueError, match="scope='third'.*'first'.*'second'"):
        load_tfa_weights(cell, str(FIXTURES / "two_wrappers"), scope="third")


def _built(case_name, **changes):
    """The cell of a case with some constructor arguments changed, built on its inputs."""
    case = json.loads(json.dumps(MANIFEST["cases"][case_name]))
    cell = _cell(case)
    config = cell.get_config()
    config.update(changes)
    cell = LuongAttentionCell.from_config(config)
    data, mask, initial = _inputs(case_name)
    AttentionRNN(cell)(data["inputs"], data["memory"], memory_mask=mask, initial_state=initial)
    return cell


@pytest.mark.parametrize(
    "case_name, changes, message",
    [
        # attention_layer_size=5 in tfa: W_c is [8, 5]
        (
            "luong_lstm",
            {"attention_layer_size": 6},
            r"misshaped: _attention_layers/0/kernel: checkpoint \[8, 5\]",
        ),
        (
            "luong_lstm",
            {
                "attention": [LuongAttention("general"), LuongAttention("general")],
                "attention_layer_size": [5, 5],
            },
            r"missing in the checkpoint: _attention_layers/1/kernel, "
            r"_attention_mechanisms/1/memory_layer/kernel",
        ),
        (
            "luong_lstm",
            {"attention": LuongAttention("dot")},
            r"matching no weight of the cell: _attention_mechanisms/0/memory_layer/kernel",
        ),
        (
            "luong_lstm",
            {"attention_layer": False, "attention_layer_size": None},
            r"matching no weight of the cell: _attention_layers/0/kernel",
        ),
        (
            "bahdanau_normalized_lstm",
            {"attention": AdditiveAttention(3, normalize=True, use_scale=True)},
            r"without a tfa counterpart: .*additive_attention.*/scale",
        ),
        (
            "luong_lstm",
            {"input_feeding": False, "output_attention": True},
            r"misshaped: _cell/kernel: checkpoint \[8, 16\]",
        ),
    ],
)
def test_mismatch_names_what_is_wrong_and_loads_nothing(case_name, changes, message):
    if "attention" in changes:
        attention = changes["attention"]
        changes["attention"] = (
            [keras.saving.serialize_keras_object(a) for a in attention]
            if isinstance(attention, list)
            else keras.saving.serialize_keras_object(attention)
        )
    cell = _built(case_name, **changes)
    before = [to_numpy(w).copy() for w in cell.weights]
    with pytest.raises(ValueError, match=message) as error:
        load_tfa_weights(cell, str(FIXTURES / case_name))
    assert "nothing was loaded" in str(error.value) and "Found under the wrapper" in str(
        error.value
    )
    for weight, old in zip(cell.weights, before):
        np.testing.assert_array_equal(to_numpy(weight), old)


def test_bad_arguments_are_named(tmp_path):
    data, mask, _ = _inputs("bahdanau_gru_output_cell")
    bahdanau = BahdanauAttentionCell(keras.layers.GRUCell(4), AdditiveAttention(3))
    with pytest.raises(TypeError, match="LuongAttentionCell.*Received: cell="):
        load_tfa_weights(bahdanau, str(FIXTURES / "bahdanau_gru_output_cell"))
    unbuilt = _cell(MANIFEST["cases"]["bahdanau_gru_output_cell"])
    with pytest.raises(ValueError, match="must be built"):
        load_tfa_weights(unbuilt, str(FIXTURES / "bahdanau_gru_output_cell"))
    AttentionRNN(unbuilt)(data["inputs"], data["memory"], memory_mask=mask)
    missing = str(tmp_path / "nothing-here")
    with pytest.raises(ValueError, match="checkpoint="):
        load_tfa_weights(unbuilt, missing)
    with pytest.raises(ValueError, match="checkpoint=None"):
        load_tfa_weights(unbuilt, None)


def test_tanh_on_the_attention_layer_warns():
    cell = _built("luong_lstm", attention_activation="tanh")
    with pytest.warns(UserWarning, match="attention_activation=None"):
        load_tfa_weights(cell, str(FIXTURES / "luong_lstm"))


def test_migration_guide_example_runs(tmp_path, monkeypatch):
    """The keras_attention half of docs/migrating-from-tfa.md's worked example, on the
    checkpoint tfa wrote for the same model (the fixture bahdanau_normalized_lstm)."""
    import re
    import shutil

    guide = (Path(__file__).resolve().parents[3] / "docs" / "migrating-from-tfa.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", guide, flags=re.S)
    (snippet,) = [b for b in blocks if 'load_tfa_weights(cell, "tfa_ckpt/decoder")' in b]
    (tfa_side,) = [b for b in blocks if "tensorflow_addons" in b]
    case = MANIFEST["cases"]["bahdanau_normalized_lstm"]
    assert "BahdanauAttention(3" in tfa_side and case["mechanisms"][0]["units"] == 3
    assert "attention_layer_size=6" in tfa_side and case["wrapper"]["attention_layer_size"] == [6]
    (tmp_path / "tfa_ckpt").mkdir()
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(
            FIXTURES / f"bahdanau_normalized_lstm{suffix}",
            tmp_path / "tfa_ckpt" / f"decoder{suffix}",
        )
    shutil.copy(FIXTURES / "bahdanau_normalized_lstm.npz", tmp_path / "tfa_outputs.npz")
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, "docs/migrating-from-tfa.md", "exec"), {})
