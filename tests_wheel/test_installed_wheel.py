"""Smoke test of keras_attention as users get it: the wheel installed in a fresh virtual
environment, not the source tree.

`make test-wheel` builds the wheel (`make dist`), installs it with TensorFlow and pytest into
`.venv-wheel` (no editable install), copies this file to an empty temporary directory and runs
pytest there with that environment's Python, so that `import keras_attention` can only come from
site-packages. The first test checks that it does; the rest use the package as a user would:
every public layer built and called, a `Seq2Seq` trained a few steps and `generate`d, a `.keras`
round trip with `safe_mode=True`, a SavedModel export reloaded in a process that never imports
the package, and `load_tfa_weights` on a checkpoint written by TensorFlow Addons itself.

Data files come from the repository (`KERAS_ATTENTION_REPO`, set by the Makefile): the tfa
fixture is read as data, never imported. This file is not collected by `make test` (pyproject's
`testpaths` are `tests` and `keras_attention`).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import warnings
from importlib import metadata, resources
from pathlib import Path

import keras
import numpy as np
import pytest

import keras_attention
from keras_attention.decoding import GreedySearch

REPO = Path(os.environ.get("KERAS_ATTENTION_REPO", "")).resolve()
TFA_FIXTURES = REPO / "tests" / "compat" / "tfa" / "fixtures"
PUBLIC_MODULES = [
    "keras_attention",
    "keras_attention.cells",
    "keras_attention.decoding",
    "keras_attention.export",
    "keras_attention.functional",
    "keras_attention.layers",
    "keras_attention.metrics",
    "keras_attention.migrate",
    "keras_attention.models",
    "keras_attention.plot",
    "keras_attention.text",
    "keras_attention.tuning",
]
OPTIONAL = {  # public modules whose extra the smoke environment does not install
    "keras_attention.plot": "matplotlib",
    "keras_attention.text": "tensorflow_text",
    "keras_attention.tuning": "keras_tuner",
}


def test_the_package_comes_from_site_packages_not_the_source_tree():
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    location = Path(keras_attention.__file__).resolve()
    assert site in location.parents, f"{location} is not under {site}"
    assert (REPO / "keras_attention") not in location.parents
    assert not (Path.cwd() / "keras_attention").exists()
    # Not an editable install: no .pth or finder pointing back at a source tree.
    dist = metadata.distribution("keras-recurrent-attention")
    assert not any(str(f).endswith(".pth") for f in dist.files or [])
    assert dist.read_text("direct_url.json") is None or '"editable": true' not in (
        dist.read_text("direct_url.json") or ""
    )


def test_version_and_package_data():
    assert metadata.version("keras-recurrent-attention") == keras_attention.__version__
    assert resources.files("keras_attention").joinpath("py.typed").is_file()
    files = {str(f) for f in metadata.distribution("keras-recurrent-attention").files}
    assert "keras_attention/py.typed" in files
    for prefix in ("tests/", "examples/", "benchmarks/", "tests_wheel/"):
        assert not any(f.startswith(prefix) for f in files), prefix


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_every_public_name_imports(module):
    try:
        mod = importlib.import_module(module)
    except ImportError as error:  # only an optional extra's module, with an install hint
        assert module in OPTIONAL, error
        with pytest.raises(ImportError):
            importlib.import_module(OPTIONAL[module])
        assert "pip install" in str(error), error
        return
    assert mod.__all__
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{module}.{name}"


# ----------------------------------------------------------------------------- layers
B, T, S, D = 2, 3, 5, 4
RNG = np.random.default_rng(0)
QUERY = RNG.normal(size=(B, T, D)).astype("float32")
VALUE = RNG.normal(size=(B, S, D)).astype("float32")
VALUE_MASK = np.array([[True] * S, [True, True, True, False, False]])


# Monotonic weights may stop before the end; local-p's Gaussian is not renormalised.
UNNORMALISED = {"BahdanauMonotonicAttention", "LuongMonotonicAttention", "LuongAttention"}


def _attention_layers():
    from keras_attention import layers

    return {
        "AdditiveAttention": lambda: layers.AdditiveAttention(score_units=3),
        "BahdanauAttention": lambda: layers.BahdanauAttention(score_units=3, normalize=True),
        "BahdanauMonotonicAttention": lambda: layers.BahdanauMonotonicAttention(score_units=3),
        "LocationSensitiveAttention": lambda: layers.LocationSensitiveAttention(
            score_units=3, filters=2, kernel_size=3
        ),
        "LuongAttention": lambda: layers.LuongAttention("general", "local_predictive", 1, 3),
        "LuongMonotonicAttention": lambda: layers.LuongMonotonicAttention(mode="recursive"),
    }


def _public_layer_classes() -> dict:
    found = {}
    for module in PUBLIC_MODULES:
        if module in OPTIONAL:
            continue
        mod = importlib.import_module(module)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) and issubclass(obj, keras.layers.Layer):
                found[name] = obj
    return found


def test_the_smoke_test_covers_every_public_layer():
    """A new public layer must get a case here (RecurrentAttention is the abstract base of the
    recurrent layers; Seq2Seq and its encoder/decoder run in the Seq2Seq test, the ensemble in
    its own)."""
    covered = set(_attention_layers()) | {
        "AttentionRNN",
        "BahdanauAttentionCell",
        "LuongAttentionCell",
        "RecurrentAttention",
        "Seq2Seq",
        "Seq2SeqEncoder",
        "Seq2SeqDecoder",
        "Seq2SeqEnsemble",
    }
    assert set(_public_layer_classes()) <= covered, set(_public_layer_classes()) - covered


@pytest.mark.parametrize("name", sorted(_attention_layers()))
def test_attention_layer_builds_and_is_called(name):
    layer = _attention_layers()[name]()
    output, weights = layer(QUERY, VALUE, value_mask=VALUE_MASK, return_attention_scores=True)
    output, weights = keras.ops.convert_to_numpy(output), keras.ops.convert_to_numpy(weights)
    assert output.shape == (B, T, D) and weights.shape == (B, T, S)
    assert np.all(np.isfinite(output)) and np.all(np.isfinite(weights))
    total = weights.sum(-1)
    if name in UNNORMALISED:  # weights may leave mass unassigned (sum <= 1)
        assert np.all(total <= 1 + 1e-5) and np.all(total > 0)
    else:
        np.testing.assert_allclose(total, 1.0, atol=1e-5)
    assert np.all(weights[1, :, 3:] == 0)  # padding gets no weight
    assert layer.weights, "built with weights"


@pytest.mark.parametrize("kind", ["luong", "bahdanau"])
def test_attention_cells_in_attention_rnn(kind):
    from keras_attention import (
        AdditiveAttention,
        AttentionRNN,
        BahdanauAttentionCell,
        LuongAttention,
        LuongAttentionCell,
    )

    if kind == "luong":  # outputs h̃, of the wrapped cell's size
        cell, size = LuongAttentionCell(keras.layers.LSTMCell(4), LuongAttention("general")), 4
    else:  # outputs [s_t; c_t]
        cell, size = BahdanauAttentionCell(keras.layers.GRUCell(4), AdditiveAttention(3)), 4 + D
    rnn = AttentionRNN(cell, return_attention_scores=True)
    outputs, alignments = rnn(QUERY, VALUE, memory_mask=VALUE_MASK)
    assert tuple(outputs.shape) == (B, T, size) and tuple(alignments.shape) == (B, T, S)
    assert np.all(np.isfinite(keras.ops.convert_to_numpy(outputs)))


def test_error_rate_metrics():
    from keras_attention.metrics import SequenceErrorRate, TokenErrorRate, edit_distance

    assert edit_distance("kitten", "sitting") == 3
    truth, pred = np.array([[4, 5, 3, 0]]), np.array([[4, 6, 3, 0]])
    for metric in (SequenceErrorRate(end_id=3), TokenErrorRate(end_id=3)):
        metric.update_state(truth, pred)
        assert 0 < float(metric.result()) <= 1


# ----------------------------------------------------------------------------- Seq2Seq
@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A copy task on ids, trained a few hundred steps (seconds), and its generated ids."""
    from keras_attention.models import Seq2Seq, Seq2SeqDecoder, Seq2SeqEncoder

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    body = rng.integers(4, 10, size=(256, 4)).astype("int32")
    source = np.concatenate([body, np.full((256, 1), 3, "int32")], axis=1)  # ... END
    target_in = np.concatenate([np.full((256, 1), 2, "int32"), source], axis=1)[:, :5]
    labels = source
    model = Seq2Seq(10, 10, embedding_dim=8, units=32)
    model.compile(
        keras.optimizers.Adam(2e-2),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(
        {"source_ids": source, "target_ids": target_in},
        labels,
        epochs=12,
        batch_size=32,
        verbose=0,
    )
    assert isinstance(model.encoder, Seq2SeqEncoder)
    assert isinstance(model.decoder, Seq2SeqDecoder)
    generated = model.generate(source[:8], GreedySearch(max_length=6))
    return model, history.history["loss"], source, generated, tmp_path_factory.mktemp("wheel")


def test_seq2seq_trains_and_generates(trained):
    model, losses, source, generated, _ = trained
    assert losses[-1] < 0.5 * losses[0], losses
    ids = keras.ops.convert_to_numpy(generated["ids"])
    assert ids.shape == (8, 6)
    copied = np.mean([np.array_equal(ids[i, :5], source[i]) for i in range(8)])
    assert copied >= 0.5, (ids, source[:8])


def test_keras_round_trip_with_safe_mode(trained):
    model, _, source, generated, directory = trained
    model.save(directory / "model.keras")
    loaded = keras.saving.load_model(directory / "model.keras", safe_mode=True)
    again = loaded.generate(source[:8], GreedySearch(max_length=6))
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(again["ids"]), keras.ops.convert_to_numpy(generated["ids"])
    )


def test_an_ensemble_of_the_model_and_its_copy_generates_as_the_model(trained, tmp_path):
    """Seq2SeqEnsemble from the installed wheel: the mean of two identical distributions is
    that distribution, so it generates the trained model's ids, and it survives a `.keras`
    round trip."""
    from keras_attention.models import Seq2Seq, Seq2SeqEnsemble

    model, _, source, generated, _ = trained
    copy = Seq2Seq.from_config(model.get_config())
    copy.set_weights(model.get_weights())
    ensemble = Seq2SeqEnsemble([model, copy])
    ids = keras.ops.convert_to_numpy(
        ensemble.generate(source[:8], GreedySearch(max_length=6))["ids"]
    )
    np.testing.assert_array_equal(ids, keras.ops.convert_to_numpy(generated["ids"]))
    ensemble.save(tmp_path / "ensemble.keras")
    loaded = keras.saving.load_model(tmp_path / "ensemble.keras", safe_mode=True)
    again = keras.ops.convert_to_numpy(
        loaded.generate(source[:8], GreedySearch(max_length=6))["ids"]
    )
    np.testing.assert_array_equal(again, ids)


def test_saved_model_reloads_without_the_package(trained):
    from keras_attention.export import export_saved_model

    model, _, source, generated, directory = trained
    export_saved_model(model, directory / "saved", GreedySearch(max_length=6))
    code = textwrap.dedent(
        f"""
        import json, sys
        import numpy as np
        import tensorflow as tf
        loaded = tf.saved_model.load({str(directory / "saved")!r})
        out = loaded.signatures["serving_default"](
            source_ids=tf.constant(np.array({source[:8].tolist()!r}, "int32")))
        print(json.dumps({{
            "ids": out["ids"].numpy().tolist(),
            "modules": sorted(m for m in sys.modules if m.startswith("keras_attention")),
        }}))
        """
    )
    # -I: isolated mode (no user site, no PYTHONPATH, not the script's directory on sys.path).
    run = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["modules"] == []
    np.testing.assert_array_equal(result["ids"], keras.ops.convert_to_numpy(generated["ids"]))


# ----------------------------------------------------------------------------- tfa
def test_load_tfa_weights_reproduces_tfa():
    """tfa 0.23's own LuongAttention + LSTM AttentionWrapper (tests/compat/tfa/fixtures):
    the loaded cell reproduces tfa's teacher-forced outputs to 1e-5."""
    from keras_attention import AttentionRNN, LuongAttention, LuongAttentionCell
    from keras_attention.migrate import load_tfa_weights

    manifest = json.loads((TFA_FIXTURES / "MANIFEST.json").read_text())
    case = manifest["cases"]["luong_lstm"]
    assert case["mechanisms"] == [{"class": "LuongAttention", "units": 4}]
    data = dict(np.load(TFA_FIXTURES / "luong_lstm.npz"))
    mask = np.arange(data["memory"].shape[1])[None, :] < data["lengths"][:, None]
    initial = [data[k] for k in sorted(data) if k.startswith("initial_state_")]
    cell = LuongAttentionCell(
        keras.layers.LSTMCell(manifest["sizes"]["units"]),
        LuongAttention("general"),
        attention_units=case["wrapper"]["attention_layer_size"],
        attention_activation=None,
    )
    rnn = AttentionRNN(cell, return_attention_scores=True, return_state=True)
    rnn(data["inputs"], data["memory"], memory_mask=mask, initial_state=initial)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapping = load_tfa_weights(cell, str(TFA_FIXTURES / "luong_lstm"))
    assert sorted(mapping) == sorted(w.path for w in cell.weights)
    outputs, alignments, *_ = rnn(
        data["inputs"], data["memory"], memory_mask=mask, initial_state=initial
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(outputs), data["outputs"], rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(alignments), data["alignments_0"], rtol=1e-5, atol=1e-5
    )


# ----------------------------------------------------------------------------- command line
def test_the_keras_attention_command_trains_predicts_evaluates_and_exports(tmp_path):
    """The wheel's console script on a few hundred pairs of a SIGMORPHON 2021 language (the
    Italian low-resource files beside the repository): train, predict, evaluate, export."""
    data = REPO.parent / "shared" / "data" / "sigmorphon-2021-task1" / "data" / "low"
    train_lines = (data / "ita_train.tsv").read_text(encoding="utf-8").splitlines()[:200]
    (tmp_path / "train.tsv").write_text("\n".join(train_lines) + "\n", encoding="utf-8")
    script = Path(sysconfig.get_paths()["scripts"]) / "keras-attention"
    assert script.is_file(), f"no console script at {script}"

    def run(*argv):
        result = subprocess.run(
            [str(script), *map(str, argv)], capture_output=True, text=True, timeout=900,
            cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    run("train", "--train", tmp_path / "train.tsv", "--valid", data / "ita_dev.tsv",
        "--output-dir", "model", "--units", "16", "--epochs", "1", "--members", "1",
        "--no-xla", "--quiet")  # fmt: skip
    words = [line.split("\t")[0] for line in train_lines[:5]]
    (tmp_path / "words.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    predicted = run("predict", "--model", "model", "words.txt").splitlines()
    assert [line.split("\t")[0] for line in predicted] == words
    assert "WER" in run("evaluate", "--model", "model", data / "ita_test.tsv")
    result = json.loads((tmp_path / "model" / "evaluation.json").read_text())
    assert result["words"] == 100 and 0 <= result["wer"] <= 100
    run("export", "--model", "model", "--saved-model", "serving", "--litert", "model.tflite")
    assert (tmp_path / "serving" / "saved_model.pb").is_file()
    assert (tmp_path / "model.tflite").stat().st_size > 0
    bad = subprocess.run(
        [str(script), "evaluate", "--model", "model", "words.txt"], capture_output=True,
        text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "words.txt:1: the line has no tab" in bad.stderr
