# The two commands a fresh machine needs: `make run` (the daemon, in the foreground) and `make test` (everything).
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
PI_VERSION := 0.73.1
BIN := $(VENV)/bin
PY_STAMP := $(VENV)/.longhaul-installed
NODE_STAMP := client_shim/node_modules/.longhaul-installed
# pytest-xdist workers: one per core. Every test, the e2e ones included, makes its own sandbox, socket and model
# server, and each worker gets its own HOME and runtime dir (tests/home_guard.py), so they can run side by side.
PYTEST_WORKERS ?= auto  # 0: no workers, everything in one process
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist worksteal
WHEELHOUSE := $(VENV)/wheelhouse
WHEEL_STAMP := $(WHEELHOUSE)/.longhaul-built

# The real small model (SmolLM2-135M-Instruct on llama-cpp-python, compiled here: 4 to 10 minutes the first
# time) for tests/e2e/test_e2e_real_model.py and `make bench-model`. realmodel/build_model.py and the test both
# read LONGHAUL_REALMODEL_DIR; set it to keep one build for several checkouts or across CI runs, anywhere but
# under the real HOME's ~/.cache, ~/.config and the like, which tests may not read (tests/home_guard.py).
LONGHAUL_REALMODEL_DIR ?= $(abspath $(VENV))/realmodel
export LONGHAUL_REALMODEL_DIR

.PHONY: run test install realmodel try lint typecheck pytest node-test e2e bench load-bench bench-model bench-via-pi clean

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

# Two more pi releases for tests/e2e/test_e2e_pi_versions.py, each in its own prefix under the venv, installed
# once: the oldest pi Longhaul supports (client_shim/lib/support.ts), on which the shim must work as on the
# pinned one, and the newest release older than that, on which it must stand down with one notice.
PI_OLDEST := 0.69.0
PI_TOO_OLD := 0.68.1
OTHER_PI_STAMPS := $(VENV)/pi/$(PI_OLDEST)/.longhaul-installed $(VENV)/pi/$(PI_TOO_OLD)/.longhaul-installed

$(VENV)/pi/%/.longhaul-installed: | $(BIN)/python
	mkdir -p $(VENV)/pi/$*
	npm install --prefix $(VENV)/pi/$* --no-audit --no-fund --no-package-lock --loglevel=error @mariozechner/pi-coding-agent@$*
	@installed=$$(node -p "require('$(abspath $(VENV))/pi/$*/node_modules/@mariozechner/pi-coding-agent/package.json').version"); \
	  if [ "$$installed" != "$*" ]; then echo "pi $$installed installed in $(VENV)/pi/$*, $* expected" >&2; exit 1; fi
	touch $@

# Wheels of the runtime dependencies (and of the build's setuptools, and pip for pipx), so the install e2e can
# `pipx install` a fresh copy offline, as a user would from a clone (tests/e2e/test_e2e_install.py).
$(WHEEL_STAMP): pyproject.toml | $(PY_STAMP)
	$(BIN)/python -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' > $(VENV)/runtime-requirements.txt
	$(BIN)/python -m pip wheel --quiet --wheel-dir $(WHEELHOUSE) -r $(VENV)/runtime-requirements.txt 'setuptools>=77' pip
	touch $@

# Idempotent: a second run checks the build and the model's sha256 in about a second.
realmodel: $(PY_STAMP)
	$(BIN)/python realmodel/build_model.py

install: $(PY_STAMP) $(NODE_STAMP) $(WHEEL_STAMP) $(OTHER_PI_STAMPS) realmodel

run: $(PY_STAMP)
	$(BIN)/longhaul-daemon serve

# Numbers to compare between changes, never asserted in tests: how code reads each bank's withdrawals and
# requests (counts only), the pure pass steps on long synthetic sessions, then the long-haul table through a real daemon (1 to
# 200 MB sessions; BENCH_WORK keeps the session files).
BENCH_WORK ?= $(VENV)/bench-work
bench: $(PY_STAMP)
	$(BIN)/python bench/withdrawal_readings.py
	$(BIN)/python bench/request_readings.py
	$(BIN)/python bench/rule_readings.py
	$(BIN)/python bench/pass_bench.py
	$(BIN)/python bench/daemon_bench.py --work $(BENCH_WORK)
	$(BIN)/python bench/turns_bench.py --work $(BENCH_WORK)

# 64 concurrent passes on a real daemon against a scripted 1 s model: wall time, passes/s, status latency.
load-bench: $(PY_STAMP)
	$(BIN)/python bench/daemon_load.py

# Real pi and the real small model, the compactors side by side on a generated corpus of 24 sessions in four
# halves of six: tuning (bench/bench_bank_tuning.py), held-out (bench/bench_bank_heldout.py), held-out-2 and
# held-out-3 (bench/bench_bank_heldout2.py, bench_bank_heldout3.py, written blind; prompt and heuristic work
# never reads a held-out bank); hours: every pi turn is a real completion on the CPU (default `all`: the first
# three; `both`: the first two; held-out-3 only by name). Prints a table of measures per half and one row per
# compaction (docs/performance.md, "Against a real small model").
# MODEL_BENCH_ARGS: --half tuning|held-out|held-out-2|held-out-3|both|all, --only SESSION, --compactors
# pi,longhaul,..., --list.
MODEL_BENCH_ARGS ?=
bench-model: install
	$(BIN)/python bench/model_bench.py $(MODEL_BENCH_ARGS)

# Longhaul offline in one command: the real small model on loopback, a private daemon and interactive pi with
# the shim, in a scratch agent dir and project; all stopped and removed when pi exits (realmodel/offline_trial.py).
# TRY_ARGS: --keep (keep sessions and logs), --project DIR (work in DIR), -- PI_ARGUMENTS.
TRY_ARGS ?=
try: $(PY_STAMP) $(NODE_STAMP) realmodel
	$(BIN)/python -m realmodel.offline_trial $(TRY_ARGS)

# One Diff call per pass through real pi and a real daemon against a scripted model, made by the daemon and
# then by pi (model.complete): what going through pi adds to a call. See docs/performance.md.
bench-via-pi: install
	$(BIN)/python bench/via_pi_bench.py

lint: $(PY_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(PY_STAMP)
	$(BIN)/mypy

pytest: install
	$(BIN)/pytest $(PYTEST_PARALLEL)

node-test: $(NODE_STAMP)
	cd client_shim && npm run --silent typecheck && npm test

e2e: install
	$(BIN)/pytest $(PYTEST_PARALLEL) -m e2e

test: install lint typecheck pytest node-test

clean:
	rm -rf $(VENV) client_shim/node_modules .mypy_cache .ruff_cache .pytest_cache .hypothesis

# pi's own compaction and Longhaul's side by side through real pi on a 20-session corpus with a scripted
# summarizer (about ten minutes): a plumbing check, both get the same understanding of each transcript; prints
# the table and puts it into docs/performance.md under "Plumbing check".
.PHONY: bench-compare bench-compare-real
bench-compare: install
	$(BIN)/python bench/compare.py --write

# The side by side that opens docs/performance.md: `score` with the real small model for both compactors on the
# model bench's corpus, tuning and held-out half apart (hours on two cores); writes its table into the doc.
# COMPARE_REAL_ARGS: --half tuning|held-out|held-out-2|held-out-3|both|all, --only SESSION, --threads N.
COMPARE_REAL_ARGS ?=
bench-compare-real: install
	$(BIN)/python bench/compare.py --real-model --write $(COMPARE_REAL_ARGS)

# Reliability runs (docs/reliability.md), longer than the bounded versions in `make test`; both print the figures
# the doc quotes. fuzz: a real daemon, 20,000 mutated frames, 200 connections at once, 50 slow-loris clients
# (FUZZ_ARGS: --seed N, --frames N, --dump DIR for the frames behind a failure). soak: 100 SIGKILLs of the
# daemon mid-pass through a real pi, each followed by a restart and a compaction that must carry the state.
.PHONY: fuzz fuzz-turns soak
FUZZ_ARGS ?=
fuzz: $(PY_STAMP)
	$(BIN)/python tests/reliability/fuzz_socket.py $(FUZZ_ARGS)
	$(BIN)/python tests/reliability/fuzz_turns.py $(FUZZ_TURNS_ARGS)
# fuzz-turns: turns mode against a hostile model, every case of tests/reliability/fuzz_turns.py 10 times
# (FUZZ_TURNS_ARGS: --rounds N, --seed N, --budget S, --case NAME)
FUZZ_TURNS_ARGS ?=
fuzz-turns: $(PY_STAMP)
	$(BIN)/python tests/reliability/fuzz_turns.py $(FUZZ_TURNS_ARGS)
SOAK_ITERATIONS ?= 100
soak: $(PY_STAMP) $(NODE_STAMP)
	LONGHAUL_SOAK_ITERATIONS=$(SOAK_ITERATIONS) $(BIN)/pytest -p no:cacheprovider -s -q tests/e2e/test_e2e_kill_loop.py
