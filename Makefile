# The commands a new user types: `make demo`, `make install` and `make test`.  Each creates .venv when missing.
# `make demo` installs only what the demo needs (bundlewise with numpy, pyarrow, matplotlib); `make test`
# and `make bench` add the rest (Spark, the live load manager's clients, benchmark and dev tools).
# `make shell` opens a shell with .venv active, so `bundlewise …` runs; `.venv/bin/bundlewise …` works too.
# `make check` is the gate CI runs: lint, formatting, types, then the whole test suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CORE := $(VENV)/.installed-core
STAMP := $(VENV)/.installed
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: proto install demo shell screenshot test test-fast bench check gates lint format-check typecheck clean zookeeper chromium faketime

$(VENV)/bin/python:
	@echo "creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip

# what `bundlewise` needs to run every command but pipeline/sweep/simulate --workload and live (.venv about 370 MB)
$(CORE): pyproject.toml | $(VENV)/bin/python
	@echo "installing bundlewise and its core dependencies (numpy, pyarrow, matplotlib: about 370 MB) into $(VENV)"
	$(PY) -m pip install -e .
	touch $(CORE)

# everything: Spark with its jars, the live load manager's clients, benchmark and dev tools (.venv about 1.2 GB)
$(STAMP): pyproject.toml | $(VENV)/bin/python
	@echo "installing bundlewise with every extra (spark, live, clients, bench, dev: about 1.2 GB) into $(VENV)"
	$(PY) -m pip install -e '.[spark,bench,dev,live,clients]'
	touch $(STAMP) $(CORE)

# every extra into .venv (Spark, the live load manager's clients, bench and dev tools), no test run: then
# every command works from .venv/bin/bundlewise (or make shell)
install: $(STAMP)
	@echo "installed: $(VENV)/bin/bundlewise --help (or make shell)"

demo: $(CORE)
	$(PY) -m bundlewise.demo
	@echo "run bundlewise yourself: make shell, or $(VENV)/bin/bundlewise --help"

shell: $(CORE)
	@echo "a shell with $(VENV) active: bundlewise --help; exit to leave"
	@. $(VENV)/bin/activate && exec "$${SHELL:-/bin/sh}" -i

# Debian's chromium renders the report for scripts/screenshot_report.sh (and its test)
chromium:
	@command -v chromium > /dev/null || { echo "installing Debian's chromium"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q chromium; }
	@command -v chromium > /dev/null

screenshot: $(CORE) chromium
	scripts/screenshot_report.sh

# The live-store tests run a real ZooKeeper: Debian's package, installed here when missing (CI runs as root).
ZOOKEEPER_JAR := /usr/share/java/zookeeper.jar
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
zookeeper:
	@test -f $(ZOOKEEPER_JAR) || { echo "installing Debian's zookeeper"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q zookeeper; }
	@test -f $(ZOOKEEPER_JAR)

# the skewed-clock fencing test runs one broker under Debian's faketime, installed here when missing
faketime:
	@command -v faketime > /dev/null || { echo "installing Debian's faketime"; \
	  $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q faketime; }
	@command -v faketime > /dev/null

# the binary protocol's classes from its schema (src/bundlewise/live/broker/binary/wire.proto)
PROTO_DIR := src/bundlewise/live/broker/binary
proto: $(STAMP)
	cd $(PROTO_DIR) && $(abspath $(PY)) -m grpc_tools.protoc -I. --python_out=. --pyi_out=. wire.proto

# pytest exits 5 when no test ran, so a run that collects nothing fails (in either phase).  Two phases: every
# test but the `timing` ones on two workers (pytest-xdist, a test file per worker at a time), then the
# `timing` ones -- the live fault tests, which hold wall-clock bounds (session timeout + 2 s, fencing
# deadlines) that a Spark job on the other worker could push over -- in one process.  WORKERS=0: everything
# in one process (about 45 minutes here).
WORKERS ?= 2
test: $(STAMP) zookeeper chromium faketime
ifeq ($(WORKERS),0)
	$(PY) -m pytest -q --durations=15
else
	$(PY) -m pytest -q -n $(WORKERS) --dist loadfile -m "not timing" --durations=15
	$(PY) -m pytest -q -m timing --durations=15
endif

# the fast tier: everything but the Spark, integration and slow tests (Ctrl-C runs, the report rendered in
# Chromium, the simulator's hypothesis invariants); starts no server and no broker process (under 3 minutes)
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not spark and not integration and not slow"

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
