# Each target sets up its own virtual environment, so the README's commands work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test bytecode test-kubectl test-image test-node test-latest test-monitoring lint types unit demo bench lock clean

# The exact versions of requirements/dev.lock, every file checked against its sha256, then the
# project itself: a run is the same on every machine until `make lock` moves the versions.
# --no-compile: a dependency's bytecode is written when something first imports it (`bytecode`
# imports what the tests do), not for every module of every package — half the install's CPU.
$(STAMP): pyproject.toml requirements/dev.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required (found %s)" % sys.version.split()[0])'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile --require-hashes -r requirements/dev.lock
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

# ruff, then the import contract between our packages ([tool.importlinter] in pyproject.toml).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

# Every package is strictly typed, the agent's decision core (agent/eviction) included.
types: $(STAMP)
	$(VENV)/bin/mypy --strict kube scheduler kubesim evictor agent bench/startup.py bench/agent_api_requests.py bench/scheduler_perf examples/demo.py deploy/monitoring/generate.py

# Ten workers although the machine has two cores: many tests mostly wait (kubesim's time scale,
# kubectl and CLI subprocesses), and with fewer workers both cores idle while they all wait at
# once. Tests are handed out one at a time (--maxschedchunk 1) rather than in long runs of
# neighbours, so no worker is left with a queue of slow ones at the end.
PYTEST_WORKERS ?= 10

# Bytecode is written (in __pycache__, which git ignores) even where the environment asks Python
# not to (PYTHONDONTWRITEBYTECODE): each worker would otherwise compile and assertion-rewrite
# every test module again (8 s of CPU apiece), and every Python the tests start would compile
# the modules it imports.
KEEP_BYTECODE := env -u PYTHONDONTWRITEBYTECODE

# The real Prometheus test (tests/monitoring, marked `prometheus`) is test-monitoring's, the
# Containerfile's build (marked `image`) test-image's.
PYTEST := $(KEEP_BYTECODE) $(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --maxschedchunk 1
UNIT := $(PYTEST) -m "not prometheus and not image"

# The tests' bytecode, assertion rewriting included, and that of what they import, made once
# before the workers start (the collection's output is shown only when it fails).
bytecode: $(STAMP)
	@out=$$($(KEEP_BYTECODE) $(VENV)/bin/pytest -q --collect-only -p no:cacheprovider 2>&1) \
	  || { printf '%s\n' "$$out"; exit 1; }

unit: bytecode
	$(UNIT)

# lint, types and the tests' bytecode side by side (each keeps one core busy), then the tests.
test: $(STAMP)
	@$(MAKE) --no-print-directory -j3 --output-sync=target lint types bytecode
	$(UNIT)

# Real kubectl against kubesim for every kubectl minor installed (make test runs the default one
# and the two ends of the range: tests/support/kubectl.py).
test-kubectl: bytecode
	KUBECTL_MATRIX=all $(UNIT) tests/kubesim/kubectl

# The Containerfile's build stage run as written, without a container engine: pip installs the
# locks into a fresh venv, builds the project's wheel and compiles the venv (a minute of CPU).
test-image: $(STAMP)
	$(KEEP_BYTECODE) $(VENV)/bin/pytest -q -m image tests/agent/test_containerfile.py

# The guest-kernel tests (tests/node): Debian's kernel under QEMU (TCG) with the host's root
# read-only, cgroup v2 and systemd as PID 1, one VM for the whole run (see tests/node/README.md).
# Installs the Debian packages it needs when run as root; otherwise names them in one line
# and the tests that need the VM are skipped with that reason.
test-node: $(STAMP)
	@$(PY) -m tests.node.image
	$(VENV)/bin/pytest -q --node tests/node

# The monitoring component (deploy/monitoring) against the real tools: promtool checks the alerts
# and runs their unit tests, and a real Prometheus scrapes the demo's agent under pressure, where
# every dashboard query must return data. Debian's prometheus package (2.42) is installed when
# run as root (CI runs on a clean machine as root); otherwise the target says what is missing.
test-monitoring: $(STAMP)
	@if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends prometheus >/dev/null; \
	  else \
	    echo "test-monitoring: skipped, needs prometheus and promtool (Debian: apt-get install prometheus, as root)"; \
	    exit 0; \
	  fi; \
	fi; \
	$(VENV)/bin/pytest -q -n 2 tests/monitoring

# The same checks with the newest versions pyproject.toml allows, in a venv of their own: what
# the next `make lock` would bring in, tried before it is taken.
LATEST := .venv-latest
test-latest:
	$(PYTHON) -m venv --clear $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip
	$(LATEST)/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[dev,kubesim,plot]'
	@touch $(LATEST)/.installed
	$(MAKE) lint types unit VENV=$(LATEST)

# kubesim with node-1 running its pods for real, and the agent evicting as memory climbs (~40 s).
demo: $(STAMP)
	$(PY) examples/demo.py

# Every benchmark: the scripts, and the folders run by their __main__.py (bench/scheduler_perf).
bench: $(STAMP)
	@set -e; for b in bench/*.py bench/*/__main__.py; do echo "# $$b"; $(PY) $$b; done

# The dependency locks, every file with its sha256 (pip-tools): dev.lock for make test and CI
# (runtime, dev, kubesim and plot), runtime.lock (the agent and evict alone) and build.lock for the
# image (Containerfile).
LOCK_FLAGS := --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links
lock: $(STAMP)
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) --extra dev --extra kubesim --extra plot -o requirements/dev.lock pyproject.toml
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) -o requirements/runtime.lock pyproject.toml
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) -o requirements/build.lock requirements/build.in

clean:
	rm -rf $(VENV) $(LATEST) .pytest_cache .mypy_cache .ruff_cache .hypothesis .benchmarks
