# The two commands a fresh machine needs: `make run` (the daemon, in the foreground) and `make test` (everything).
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
PI_VERSION := 0.73.1
BIN := $(VENV)/bin
PY_STAMP := $(VENV)/.longhaul-installed
NODE_STAMP := client_shim/node_modules/.longhaul-installed

.PHONY: run test install lint typecheck pytest node-test e2e bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(PY_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

$(NODE_STAMP): client_shim/package.json client_shim/package-lock.json
	cd client_shim && npm ci --no-audit --no-fund --loglevel=error
	@installed=$$(node -p "require('./client_shim/node_modules/@mariozechner/pi-coding-agent/package.json').version"); \
	  if [ "$$installed" != "$(PI_VERSION)" ]; then echo "pi $$installed installed, $(PI_VERSION) expected" >&2; exit 1; fi
	touch $@

install: $(PY_STAMP) $(NODE_STAMP)

run: $(PY_STAMP)
	$(BIN)/longhaul-daemon serve

# Timings of the pure pass steps on long synthetic sessions; numbers to compare, never asserted in tests.
bench: $(PY_STAMP)
	$(BIN)/python bench/pass_bench.py

lint: $(PY_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(PY_STAMP)
	$(BIN)/mypy

pytest: install
	$(BIN)/pytest

node-test: $(NODE_STAMP)
	cd client_shim && npm run --silent typecheck && npm test

e2e: install
	$(BIN)/pytest -m e2e

test: install lint typecheck pytest node-test

clean:
	rm -rf $(VENV) client_shim/node_modules .mypy_cache .ruff_cache .pytest_cache .hypothesis

# pi's own compaction and Longhaul's side by side through real pi on a 20-session corpus (about ten minutes);
# prints the table and puts it into docs/performance.md.
.PHONY: bench-compare
bench-compare: install
	$(BIN)/python bench/compare.py --write
