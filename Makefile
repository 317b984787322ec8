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

OUT := out

# The main job on the embedded default: check, format-check and run the examples.
demo: $(BIN)/rbg
	$(BIN)/rbg check examples
	$(BIN)/rbg fmt --check examples
	mkdir -p $(OUT)
	$(BIN)/rbg run examples/gsm8k/rubric.rbg examples/gsm8k/items.jsonl --out $(OUT)/gsm8k.traces.jsonl
	$(BIN)/rbg replay examples/gsm8k/rubric.rbg $(OUT)/gsm8k.traces.jsonl
	$(BIN)/rbg eval examples/topical_chat/rubric.rbg examples/topical_chat/items.jsonl \
	  --annotations examples/topical_chat/annotations.jsonl

test: $(BIN)/rbg
	$(BIN)/pytest

bench: $(BIN)/rbg
	$(BIN)/python benchmarks/bench_frontend.py

docs: $(BIN)/rbg
	$(BIN)/python -m rubriclang.docs_gen
