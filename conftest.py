"""Backend selection for the whole suite (tests and doctests).

The suite runs on the Keras backend named by `KERAS_BACKEND` (TensorFlow by default). Tests of
the TensorFlow-only modules (`keras_attention.text`: tf-text tokenizers and `tf.data`
pipelines; `keras_attention.export`: SavedModel export for TF Serving) and any test marked
`tensorflow_only` are skipped, with the reason, on the JAX and PyTorch backends.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent

# Paths (relative to the repository root) whose tests and doctests need the TensorFlow backend.
TENSORFLOW_ONLY_PATHS = (
    "keras_attention/text",
    "keras_attention/export",
    "tests/text",
    "tests/export",
    # Examples built on the tf-text tokenizers, the tf.function Translator or SavedModel export.
    "keras_attention/cli.py",
    "tests/cli",
    "tests/examples/test_translate.py",
    "tests/examples/test_export_for_serving.py",
    "tests/examples/test_tune.py",
    "tests/examples/test_attention_vs_length.py",
)


def _backend() -> str:
    import keras

    return keras.backend.backend()


def _is_tensorflow_only_path(path: Path) -> bool:
    try:
        relative = path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return False
    return any(relative == p or relative.startswith(p + "/") for p in TENSORFLOW_ONLY_PATHS)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    backend = _backend()
    for item in items:
        if _is_tensorflow_only_path(Path(str(item.path))):
            item.add_marker(pytest.mark.tensorflow_only)
    if backend == "tensorflow":
        return
    skip = pytest.mark.skip(
        reason=(
            f"TensorFlow-only (tf-text, tf.data, SavedModel export or tf.function); "
            f"KERAS_BACKEND={backend}"
        )
    )
    for item in items:
        if item.get_closest_marker("tensorflow_only") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """On JAX, free every compiled program after each test module.

    XLA's CPU client maps each executable's code into the process and keeps it while JAX's
    caches hold the function. One pytest worker compiles thousands of programs over the suite;
    without this, its memory maps pass Linux's `vm.max_map_count` (65,530) near the end of the
    suite and the next compilation fails ("LLVM compilation error: Cannot allocate memory") or
    segfaults. Measured on 40 test files in one process: 52,000 maps and 6 GB resident without
    it, 2,000-2,700 maps with it. Module-scoped fixtures (shared compiled models) are untouched.
    """
    yield
    if _backend() != "jax":
        return
    import gc

    import jax
    import keras

    keras.backend.clear_session()
    jax.clear_caches()
    gc.collect()
