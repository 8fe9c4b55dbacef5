# Each target sets up its own virtual environment, so the README's commands work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: test lint types unit demo bench lock clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python >= 3.11 is required (found %s)" % sys.version.split()[0])'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Every package is strictly typed, the agent's decision core (agent/eviction) included.
types: $(STAMP)
	$(VENV)/bin/mypy --strict scheduler kubesim evictor agent bench/startup.py examples/demo.py

unit: $(STAMP)
	$(VENV)/bin/pytest -q

test: lint types unit

# kubesim with node-1 running its pods for real, and the agent evicting as memory climbs (~40 s).
demo: $(STAMP)
	$(PY) examples/demo.py

bench: $(STAMP)
	@set -e; for b in bench/*.py; do echo "# $$b"; $(PY) $$b; done

# The image's dependency locks (Containerfile): runtime deps of pyproject.toml and the build
# backend, every file with its sha256.
LOCK_FLAGS := --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links
lock: $(STAMP)
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) -o requirements/runtime.lock pyproject.toml
	$(VENV)/bin/pip-compile $(LOCK_FLAGS) -o requirements/build.lock requirements/build.in

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .benchmarks
