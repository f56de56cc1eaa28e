# Two commands do all set-up: `make lab` opens the kit, `make test` runs every test.
# uv is installed into .tools/ when it is not already on PATH (no root needed).

SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo $(CURDIR)/.tools/bin/uv)
PYTHON ?= python3
SYNC_STAMP := .venv/.gwkit-synced
# JupyterLab refuses to run as root unless told to (containers and CI machines run as root).
LAB_ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab test test-uvicorn-matrix lint sandbox team-sandbox pg-up bench env bytecode clean strip-notebooks docs js-deps

lab: bytecode
	$(UV) run --no-sync jupyter lab --notebook-dir=notebooks $(LAB_ROOT_FLAG)

# The gates, in order, stopping at the first that fails: lint, format, types, then every test with
# the coverage of gwkit/ measured (processes the tests start included) and held to its floor
# (pyproject.toml's [tool.coverage.*]).
# TEST_WORKERS: pytest-xdist worker processes (0: all in this one), each test file on one worker
# (its module-wide sandboxes started once); coverage measures the workers as any process the tests start.
TEST_WORKERS ?= 2
test: lint bytecode
	rm -rf .coverage-data && mkdir -p .coverage-data
	$(UV) run --no-sync coverage run -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)
	$(UV) run --no-sync coverage combine -q
	$(UV) run --no-sync coverage report

# gwkit beside each uvicorn it supports (pyproject.toml: uvicorn>=0.30): the sandbox's HTTP tests
# (the adapter, framing, the drop, deadlines and bounds, stopping, the official client) over the
# oldest supported, a middle one and the locked version, each pinned, on SQLite (the server is the
# same for both stores). Then over the newest release, when it is not the locked one: a failure
# there only warns (a new uvicorn is news to act on, not a broken build). About 10 s a version.
UVICORN_PINNED := 0.30.6 0.32.1
UVICORN_TESTS := tests/sandbox/test_uvicorn_adapter.py tests/sandbox/test_framing.py \
	tests/sandbox/test_stop.py tests/sandbox/test_blocking.py tests/sandbox/test_latency_budget.py \
	tests/sandbox/test_faults.py::test_drop_closes_the_connection_before_or_after_the_payment \
	tests/sandbox/test_official_module_tests.py tests/sandbox/test_interop.py
UVICORN_PYTEST := pytest -q -p no:cacheprovider -k "not postgresql" $(UVICORN_TESTS)
test-uvicorn-matrix: bytecode
	@set -e; for version in $(UVICORN_PINNED); do \
		echo "== uvicorn $$version"; \
		GWKIT_EXPECT_UVICORN=$$version $(UV) run --no-sync --with "uvicorn==$$version" $(UVICORN_PYTEST); \
	done
	@echo "== uvicorn $$($(UV) run --no-sync python -c 'import uvicorn; print(uvicorn.__version__)') (locked)"
	@$(UV) run --no-sync $(UVICORN_PYTEST)
	@locked=$$($(UV) run --no-sync python -c 'import uvicorn; print(uvicorn.__version__)'); \
	newest=$$(echo uvicorn | $(UV) pip compile --quiet --no-header --no-annotate - 2>/dev/null | sed -n 's/^uvicorn==//p'); \
	if [ -z "$$newest" ]; then echo "warning: the newest uvicorn release could not be found (offline?)"; \
	elif [ "$$newest" = "$$locked" ]; then echo "== uvicorn $$newest, the newest release, is the locked one"; \
	else echo "== uvicorn $$newest (the newest release: a failure only warns)"; \
		GWKIT_EXPECT_UVICORN=$$newest $(UV) run --no-sync --with "uvicorn==$$newest" $(UVICORN_PYTEST) \
		|| echo "warning: gwkit's HTTP tests fail beside uvicorn $$newest, the newest release (above)"; \
	fi

# The quick gates alone: ruff (lint and format check) and mypy (pyproject.toml's [tool.mypy]).
lint: $(SYNC_STAMP)
	$(UV) run --no-sync ruff check .
	$(UV) run --no-sync ruff format --check .
	$(UV) run --no-sync mypy

# The database a plain gwkit.connect() in a notebook uses (the notebooks' working directory is notebooks/).
sandbox: $(SYNC_STAMP)
	$(UV) run --no-sync gwkit sandbox --db notebooks/.gwkit/sandbox.db

# The team sandbox (docs/team-sandbox.md): PostgreSQL, served by $(WORKERS) worker processes. Unless
# TEAM_DB names a database (postgresql://user:password@host/dbname), a local PostgreSQL is started
# first by scripts/pg-up (as root it installs Debian's postgresql when missing).
TEAM_DB ?=
WORKERS ?= 2
team-sandbox: $(SYNC_STAMP)
	@db="$(TEAM_DB)"; if [ -z "$$db" ]; then db="$$(scripts/pg-up --install)" || exit 1; fi; \
	GWKIT_SANDBOX_DB="$$db" $(UV) run --no-sync gwkit sandbox --workers $(WORKERS)

# The PostgreSQL the tests use (they start it themselves too, when they can; else they skip, saying why).
pg-up:
	scripts/pg-up --install gwkit_test

# The makers' 3-D Secure browser library (npm @trustpayments/3ds-sdk-js 1.2.73), which the browser tests
# drive against the sandbox's EMV 3-D Secure pages, in .tools/npm (the tests install it there too
# when it is missing). Its install scripts only fetch build tools: not run.
js-deps:
	mkdir -p .tools/npm && cd .tools/npm && npm install --ignore-scripts --no-audit --no-fund --no-save @trustpayments/3ds-sdk-js@1.2.73

bench: bytecode
	@for b in benchmarks/*.py; do echo "== $$b"; $(UV) run --no-sync python $$b || exit 1; done

env: bytecode

# The kit's own bytecode, as uv compiles the installed packages' (see pyproject.toml): where
# PYTHONDONTWRITEBYTECODE is set, every notebook kernel would otherwise compile gwkit from source.
# Up to date, this takes a twentieth of a second.
bytecode: $(SYNC_STAMP)
	@$(UV) run --no-sync python -m compileall -q gwkit

$(SYNC_STAMP): pyproject.toml uv.lock | $(UV)
	$(UV) sync --locked --extra lab --extra team
	@touch $@

$(CURDIR)/.tools/bin/uv:
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet uv

strip-notebooks:
	$(UV) run --no-sync python -m gwkit.devtools.strip_notebooks notebooks/*.ipynb

# A static site of docs/ and the executed notebooks (widgets as they were left) in site/: host it, or
# open site/index.html. Every notebook runs on a fresh sandbox first (about a minute).
docs: bytecode
	$(UV) run --no-sync python -m gwkit.devtools.build_docs site

clean:
	rm -rf .venv .tools .pytest_cache .coverage-data
