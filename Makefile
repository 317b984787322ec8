# The two set-up commands of the README: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench docs

$(BIN)/rbg: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(BIN)/rbg

# The main job on the embedded default: check, format-check and run the examples.
demo: $(BIN)/rbg
	$(BIN)/rbg check examples
	$(BIN)/rbg fmt --check examples

test: $(BIN)/rbg
	$(BIN)/pytest

bench: $(BIN)/rbg
	$(BIN)/python benchmarks/bench_frontend.py

docs: $(BIN)/rbg
	$(BIN)/python -m rubriclang.docs_gen
