# `make demo` and `make test` set themselves up: a virtual environment in .venv with the
# project installed (the demo: the core only; the tests: every extra), rebuilt when
# pyproject.toml changes.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CORE_STAMP := $(VENV)/.installed-core

.PHONY: demo test test-fast lint format bench clean docs

# Everything: the core, the [server] and [postgres] extras and the test tools.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP) $(CORE_STAMP)

# What the demo needs: the core library and the `engrammar` command, no extras.
$(CORE_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $(CORE_STAMP)

demo: $(CORE_STAMP)
	$(PY) -m engrammar.demo
	@echo
	@echo "The engrammar command is in $(VENV)/bin: run '$(VENV)/bin/engrammar --help',"
	@echo "or 'source $(VENV)/bin/activate' first to have it on your PATH."

# Everything CI runs.
test: $(STAMP)
	$(PY) -m pytest -q

# Day-to-day lane (under 30 s): leaves out what costs time, each marked in the tests (see the
# markers in pyproject.toml): crash kills and timed loads, the real model, PostgreSQL, and
# real servers and processes.
FAST := not (slow or model or postgres or processes)
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "$(FAST)"

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-logo

format: $(STAMP)
	$(VENV)/bin/ruff format src tests bench
	$(VENV)/bin/ruff check --fix src tests bench

# The reference pages under docs/reference/, written from Config and the operation table.
docs: $(VENV)/.installed
	$(PY) -m engrammar.interfaces.docs docs/reference

BENCH_STAMP := $(VENV)/.bench-installed

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	touch $(BENCH_STAMP)

# bench/peers.py creates the peer systems' own environments under bench/.venvs/ on first use.
bench: $(BENCH_STAMP)
	$(PY) bench/speed.py
	$(PY) bench/ranking.py --sample 100
	$(PY) bench/feedback_learning.py --rounds 2
	$(PY) bench/graph.py
	$(PY) bench/peers.py
	$(PY) bench/concurrency.py --out bench/results/concurrency.json
	$(PY) bench/load.py --rate 100 --seconds 60
	ENGRAMMAR_CRASH_KILLS=40 $(PY) -m pytest -q tests/test_crash.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache .import_linter_cache .grimp_cache
