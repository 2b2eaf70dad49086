"""Data-parallel training on two CPU devices gives the losses and weights of one device.

A small `Seq2Seq` (Luong "general" global attention, and Bahdanau attention; dropout 0) is
fitted for 5 steps of a fixed global batch of 8 with SGD, once on one device and once split
over two devices, from the same initial weights and in the same data order:

- TensorFlow: `tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])` over the CPU split into
  two logical devices (`tf.config.set_logical_device_configuration`);
- JAX: `keras.distribution.DataParallel` over two host devices
  (`XLA_FLAGS=--xla_force_host_platform_device_count=2`).

The devices must be configured before the framework initialises, so each run is a subprocess
(`train_worker.py`). The JAX check starts its workers with `KERAS_BACKEND=jax` whatever the
suite's backend, so it runs in the TensorFlow suite and is skipped in the JAX and PyTorch runs
(it would only repeat itself there).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

WORKER = Path(__file__).resolve().parent / "train_worker.py"
ROOT = WORKER.parents[2]
VARIANTS = ("luong", "bahdanau")
TOLERANCE = 1e-5  # absolute, on per-step losses and on every final weight


def run_worker(backend: str, devices: int, weights_dir: Path, out: Path) -> dict:
    """One training run in a fresh process on `backend`; its JSON result."""
    env = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2",
    }
    command = [sys.executable, str(WORKER), "--devices", str(devices), "--attention", *VARIANTS]
    command += ["--weights-dir", str(weights_dir), "--out", str(out)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert run.returncode == 0, f"{backend} worker, {devices} device(s):\n{run.stderr[-4000:]}"
    return json.loads(out.read_text(encoding="utf-8"))


def one_and_two_devices(backend: str, directory: Path) -> tuple[dict, dict]:
    """The one-device run (which saves the initial weights), then the two-device run."""
    weights_dir = directory / "initial_weights"
    single = run_worker(backend, 1, weights_dir, directory / "one_device.json")
    split = run_worker(backend, 2, weights_dir, directory / "two_devices.json")
    assert len(split["devices"]) == 2, split["devices"]
    return single, split


def assert_same_training(single: dict, split: dict, attention: str) -> None:
    one, two = single[attention], split[attention]
    assert len(one["losses"]) == 5
    assert np.all(np.isfinite(one["losses"]))
    assert one["largest_update"] > 1e-2  # the steps did move the weights
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=0, atol=TOLERANCE)
    assert len(two["weights"]) == len(one["weights"])
    for w_two, w_one in zip(two["weights"], one["weights"]):
        np.testing.assert_allclose(w_two, w_one, rtol=0, atol=TOLERANCE)


@pytest.fixture(scope="module")
def tensorflow_runs(tmp_path_factory):
    return one_and_two_devices("tensorflow", tmp_path_factory.mktemp("tensorflow"))


@pytest.fixture(scope="module")
def jax_runs(tmp_path_factory):
    return one_and_two_devices("jax", tmp_path_factory.mktemp("jax"))


@pytest.mark.slow
@pytest.mark.tensorflow_only
@pytest.mark.parametrize("attention", VARIANTS)
def test_mirrored_strategy_matches_one_device(tensorflow_runs, attention):
    assert_same_training(*tensorflow_runs, attention)


@pytest.mark.slow
@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="runs its JAX workers from the TensorFlow suite; on other backends it would repeat",
)
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs jax")
@pytest.mark.parametrize("attention", VARIANTS)
def test_jax_data_parallel_matches_one_device(jax_runs, attention):
    assert_same_training(*jax_runs, attention)
