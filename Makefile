# The two commands a new user types: `make demo` and `make test`.  Each creates .venv when missing.
# `make check` is the gate CI runs: lint, formatting, types, then the whole test suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: demo test test-fast bench check gates lint format-check typecheck clean zookeeper

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[spark,bench,dev,live]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m bundlewise.demo

# The live-store tests run a real ZooKeeper: Debian's package, installed here when missing (CI runs as root).
ZOOKEEPER_JAR := /usr/share/java/zookeeper.jar
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
zookeeper:
	@test -f $(ZOOKEEPER_JAR) || { echo "installing Debian's zookeeper"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q zookeeper; }
	@test -f $(ZOOKEEPER_JAR)

# pytest exits 5 when no test ran, so a run that collects nothing fails
test: $(STAMP) zookeeper
	$(PY) -m pytest -q

# everything but the Spark tests (seconds, not minutes)
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not spark"

bench: $(STAMP)
	$(PY) -m bench

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench

format-check: $(STAMP)
	$(VENV)/bin/ruff format --check src tests bench

typecheck: $(STAMP)
	$(VENV)/bin/mypy

gates: lint format-check typecheck

check: gates test

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .ruff_cache .mypy_cache
