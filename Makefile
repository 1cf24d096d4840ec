# TraceTrack — `make run` for a laptop trial, `make test` for the whole suite.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
HASH  := $(shell cat pyproject.toml | md5sum | cut -c1-12)
STAMP := $(VENV)/.installed-dev-$(HASH)
RUN_STAMP := $(VENV)/.installed-run-$(HASH)
PORT  ?= 8000
# The suite runs like production (DEBUG off) but over plain HTTP on loopback.
TEST_ENV := SECRET_KEY=test-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFG \
  ALLOWED_HOSTS=localhost,127.0.0.1,testserver SECURE_SSL_REDIRECT=false \
  SESSION_COOKIE_SECURE=false CSRF_COOKIE_SECURE=false SECURE_HSTS_SECONDS=0 STATIC_MANIFEST=false

.PHONY: install install-run run test lint fmt bench pool worker beat clean

# Two stamps: `run` needs only the app's own dependencies; `test`, `lint` and `bench` add the dev
# extras (Playwright, mypy, HTA, pandas, Hypothesis...). An existing virtualenv is reused.
$(VENV)/.python-ok:
	@PYTHON=$$(scripts/find-python.sh) && \
	  if [ ! -x $(PY) ] || ! $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then \
	    rm -rf $(VENV) && echo "creating $(VENV) with $$PYTHON" && $$PYTHON -m venv $(VENV) && \
	    $(PY) -m pip install --quiet --upgrade pip; fi
	@touch $@

$(RUN_STAMP): pyproject.toml | $(VENV)/.python-ok
	$(PY) -m pip install --quiet -e .
	@rm -f $(VENV)/.installed-run-* && touch $@

$(STAMP): pyproject.toml | $(VENV)/.python-ok
	$(PY) -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-dev-* $(VENV)/.installed-run-* && touch $@ $(RUN_STAMP)

install: $(STAMP)  ## the virtualenv with TraceTrack and its dev tools

install-run: $(RUN_STAMP)  ## the virtualenv with what running the app needs, nothing more

run: install-run  ## embedded mode: SQLite, in-process tasks, demo accounts, http://127.0.0.1:$(PORT)
	$(PY) manage.py migrate --no-input
	$(PY) manage.py load_content
	$(PY) manage.py compress_perfetto_ui
	$(PY) manage.py fill_pool --target $${POOL_TARGET:-6}
	$(PY) manage.py create_demo_accounts
	@echo "serving on http://127.0.0.1:$(PORT) (set PORT=... to change)"
	$(PY) manage.py runserver 127.0.0.1:$(PORT)

test: install  ## lint, types, then the whole suite (PostgreSQL/Redis when DATABASE_URL/REDIS_URL are set)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	env $(TEST_ENV) $(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	env $(TEST_ENV) $(VENV)/bin/pytest $(PYTEST_ARGS)

lint: install  ## ruff, mypy, and the import contracts in pyproject.toml
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	env $(TEST_ENV) $(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

fmt: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: install  ## the benchmarks in bench/ (figures, not pass/fail)
	for b in bench/*_bench.py bench/scheduler_sim.py; do echo "== $$b"; $(PY) $$b || exit 1; done

worker: install-run
	$(VENV)/bin/celery -A tracetrack worker -l info --concurrency 1

beat: install-run
	$(VENV)/bin/celery -A tracetrack beat -l info

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache .mypy_cache .import_linter_cache
