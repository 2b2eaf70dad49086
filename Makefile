# Quick start: `make demo` (set up and run the main example) and `make test` (set up and test).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup test test-figures test-fast demo lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev,examples]"
	touch $(STAMP)

setup: $(STAMP)

# The suite, slow tests included; the examples' full default runs (marker `figures`, minutes
# each, reproducing BENCHMARKS.md) run with `make test-figures`.
test: $(STAMP)
	TF_CPP_MIN_LOG_LEVEL=2 $(PY) -m pytest -n 2 --dist loadfile -m "not figures"

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

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build dist *.egg-info
