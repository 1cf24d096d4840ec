# TraceTrack — `make run` for a laptop trial, `make test` for the whole suite.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | md5sum | cut -c1-12)
PORT  ?= 8000
# The suite runs like production (DEBUG off) but over plain HTTP on loopback.
TEST_ENV := SECRET_KEY=test-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFG \
  ALLOWED_HOSTS=localhost,127.0.0.1,testserver SECURE_SSL_REDIRECT=false \
  SESSION_COOKIE_SECURE=false CSRF_COOKIE_SECURE=false SECURE_HSTS_SECONDS=0 STATIC_MANIFEST=false

.PHONY: install run test lint fmt bench pool worker beat clean

$(STAMP): pyproject.toml
	@PYTHON=$$(scripts/find-python.sh) && \
	  if [ ! -x $(PY) ] || ! $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then \
	    rm -rf $(VENV) && echo "creating $(VENV) with $$PYTHON" && $$PYTHON -m venv $(VENV); fi
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)  ## create the virtualenv and install TraceTrack with its dev tools

run: install  ## embedded mode: SQLite, in-process tasks, demo accounts, http://127.0.0.1:$(PORT)
	$(PY) manage.py migrate --no-input
	$(PY) manage.py load_content
	$(PY) manage.py compress_perfetto_ui
	$(PY) manage.py fill_pool --target $${POOL_TARGET:-4}
	$(PY) manage.py create_demo_accounts
	$(PY) manage.py runserver 127.0.0.1:$(PORT)

test: install  ## lint, types, then the whole suite (PostgreSQL/Redis when DATABASE_URL/REDIS_URL are set)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	env $(TEST_ENV) $(VENV)/bin/pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

fmt: install
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: install  ## the benchmarks in bench/ (figures, not pass/fail)
	for b in bench/*_bench.py bench/scheduler_sim.py; do echo "== $$b"; $(PY) $$b || exit 1; done

worker: install
	$(VENV)/bin/celery -A tracetrack worker -l info --concurrency 1

beat: install
	$(VENV)/bin/celery -A tracetrack beat -l info

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache .mypy_cache
