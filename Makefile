# Quick start: `make demo` (set up and run the main example) and `make test` (set up and test).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# `make test` (the README's command, 8-14 minutes on 2 cores from a fresh clone) runs the tests
# not marked slow on TensorFlow and on PyTorch. CI (.ci/run) then runs `make test-extended`: the
# slow tests on TensorFlow (every layer's and cell's jit_compile fit, mixed-precision training
# parity, distribution, the benchmarks' quick modes, the examples' longer smoke runs) and every
# test on JAX (not marked slow, then slow: JAX compiles `fit` under XLA by default, where a
# random draw inside a time loop fails). TensorFlow-only tests are skipped on the other backends
# (conftest.py), and the summary says why. `make test-backends-slow` runs the slow tests on JAX
# and PyTorch.
BACKEND_TESTS := -m "not figures and not slow"

# TensorFlow's start-up messages about hardware this machine lacks (no CUDA driver, oneDNN and
# CPU-feature notes, printed before TF_CPP_MIN_LOG_LEVEL takes effect): `make demo` hides these
# lines only; every other line, warnings and errors included, is printed. On CPUs without
# AVX-512, oneDNN adds a note on int64 ops (`oneDNN supports DT_INT64 only on platforms with
# AVX-512`) late in the run, which used to be the demo's last line. The filter is a pipeline,
# not `2> >(...)`: make waits for it, so nothing it passes through can print after the demo.
TF_NOISE := absl::InitializeLog|oneDNN custom operations|cudart_stub\.cc|cuda_platform\.cc|failed call to cuInit|cpu_feature_guard\.cc|To enable the following instructions|rebuild TensorFlow with the appropriate|oneDNN supports DT_
SHELL := /bin/bash

.PHONY: setup test test-extended test-tensorflow test-tensorflow-slow test-jax test-jax-slow test-torch test-backends-slow test-figures test-fast demo lint format bench clean

DEMO_STAMP := $(VENV)/.installed-examples

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# Everything the tests need (the three backends, pytest, the examples' packages).
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[dev,examples]"
	touch $(STAMP)

# What the demo needs only (TensorFlow, tf-text, babel, matplotlib: no JAX, PyTorch or pytest).
$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e ".[examples]"
	touch $(DEMO_STAMP)

setup: $(STAMP)

# The examples' full default runs (marker `figures`, minutes each, reproducing BENCHMARKS.md) run
# with `make test-figures`.
test: test-tensorflow test-torch

# What CI runs after `make test`, so that every test runs on every submission.
test-extended: test-tensorflow-slow test-jax test-jax-slow

test-tensorflow: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=tensorflow $(PY) -m pytest -n 2 --dist loadfile $(BACKEND_TESTS)

test-tensorflow-slow: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=tensorflow $(PY) -m pytest -n 2 --dist loadfile -m "slow and not figures"

test-jax: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=jax $(PY) -m pytest -n 2 --dist loadfile $(BACKEND_TESTS)

test-torch: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=torch $(PY) -m pytest -n 2 --dist loadfile $(BACKEND_TESTS)

test-jax-slow: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=jax $(PY) -m pytest -n 2 --dist loadfile -m "slow and not figures"

test-backends-slow: test-jax-slow
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=torch $(PY) -m pytest -n 2 --dist loadfile -m "slow and not figures"

test-figures: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -n 2 --dist loadfile -m figures

# Everything but the tests marked slow.
test-fast: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -n 2 --dist loadfile -m "not slow"

# DEMO_ARGS: extra arguments for examples/translate.py (e.g. `make demo DEMO_ARGS=--help`).
demo: $(DEMO_STAMP)
	set -o pipefail; { TF_CPP_MIN_LOG_LEVEL=2 $(PY) -u examples/translate.py \
		--output-dir demo_output $(DEMO_ARGS) 2>&1 1>&3 3>&- \
		| { grep --line-buffered -v -E '$(TF_NOISE)' || true; } >&2; } 3>&1

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
