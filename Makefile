# Quick start: `make demo` (set up and run the main example) and `make test` (set up and test).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# What `make test` runs on JAX and PyTorch: the tests not marked slow (the slow ones, e.g. every
# layer's jit_compile fit, run there with `make test-backends-slow`; JAX-compiled training is also
# covered in the TensorFlow run by tests/distributed's JAX workers). TensorFlow-only tests are
# skipped there (conftest.py), and the summary says why.
BACKEND_TESTS := -m "not figures and not slow"

.PHONY: setup test test-tensorflow test-jax test-torch test-backends-slow test-figures test-fast demo lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,examples]"
	touch $(STAMP)

setup: $(STAMP)

# The suite on TensorFlow, slow tests included; then the backend-agnostic part on JAX and on
# PyTorch (TensorFlow-only tests are skipped there with the reason). The examples' full default
# runs (marker `figures`, minutes each, reproducing BENCHMARKS.md) run with `make test-figures`.
test: test-tensorflow test-jax test-torch

test-tensorflow: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=tensorflow $(PY) -m pytest -n 2 --dist loadfile -m "not figures"

test-jax: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=jax $(PY) -m pytest -n 2 --dist loadfile $(BACKEND_TESTS)

test-torch: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=torch $(PY) -m pytest -n 2 --dist loadfile $(BACKEND_TESTS)

test-backends-slow: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=jax $(PY) -m pytest -n 2 --dist loadfile -m "slow and not figures"
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=torch $(PY) -m pytest -n 2 --dist loadfile -m "slow and not figures"

test-figures: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -n 2 --dist loadfile -m figures

# Everything but the tests marked slow.
test-fast: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -n 2 --dist loadfile -m "not slow"

demo: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) examples/translate.py --output-dir demo_output

lint: $(STAMP)
	$(PY) -m ruff check keras_attention tests examples benchmarks
	$(PY) -m ruff format --check keras_attention tests examples benchmarks

format: $(STAMP)
	$(PY) -m ruff format keras_attention tests examples benchmarks

bench: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_layers.py
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_local.py
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_decoder.py
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_translate.py
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_backends.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist *.egg-info
