from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pytest
from django.conf import settings

from tests.personas import cast

# The scenario slugs of the design (a contract, healthy included): tests compare the engine and
# the catalogue with this list rather than with themselves.
DESIGN_SLUGS = (
    "exposed-allreduce",
    "input-starvation",
    "launch-bound",
    "straggler",
    "memory-bound-kernel",
    "sync-stalls",
    "pipeline-bubbles",
    "allocator-stalls",
    "bandwidth-bound-collective",
    "recompilation",
    "healthy",
)

# Playwright's sync API runs an event loop in the test thread; Django's ORM refuses to run
# beside one unless told. Tests only; never in production settings.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

PASSWORD = "correct-horse-battery-42"


def require_services() -> bool:
    return os.environ.get("TRACETRACK_REQUIRE_SERVICES") == "1"


def needs_postgres():
    """Skip locally without PostgreSQL; in CI (TRACETRACK_REQUIRE_SERVICES=1) fail instead."""
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    if require_services():
        pytest.fail("this test needs PostgreSQL (DATABASE_URL) and CI requires it")
    pytest.skip("needs PostgreSQL: set DATABASE_URL")


def needs_redis():
    if settings.REDIS_URL:
        return
    if require_services():
        pytest.fail("this test needs Redis (REDIS_URL) and CI requires it")
    pytest.skip("needs Redis: set REDIS_URL")


def script_scheduler(monkeypatch, order: Iterable[str]) -> None:
    """The trainer deals ``order``, one scenario per drill started. A scripted scenario the pool has
    none of is generated on the request: when a start asks again with the dry one left out, the
    script names it again rather than moving on."""
    from drills.trainer import services

    script = iter(order)
    current: list[str] = []

    def next_scenario(user, now=None, *, exclude=frozenset(), **_):
        if not exclude or not current:
            current[:] = [next(script)]
        return current[0]

    monkeypatch.setattr(services, "next_scenario", next_scenario)


def right_answer(attempt) -> dict[str, str]:
    """The diagnosis form's five sentences filled from the attempt's answer key."""
    key = attempt.trace.key
    g = key["grading"]
    measurement = g["measurements_accepted"][0]
    return {
        "step_ms": f"{g['step_ms']:.3f}",
        "gap_ms": f"{g['gap_ms']:.3f}",
        "scenario": key["scenario"],
        "measurement": measurement,
        "measurement_value": f"{g['measurements'][measurement]['value']:.4f}",
        "fix": g["fixes_accepted"][0],
        "expected_step_ms": f"{g['expected_step_ms']:.3f}",
        "arithmetic": "",
    }


@pytest.fixture(autouse=True)
def _fast_tests(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # The sign-in brake is off in tests (its counts would outlive a run in a shared Redis);
    # tests/test_security.py turns it on where it is tested.
    settings.TRACETRACK = {
        **settings.TRACETRACK,
        "POOL_TARGET": 3,
        "POOL_LOW_WATER": 1,
        "LOGIN_FAILURE_LIMIT": 0,
    }


@pytest.fixture
def make_user(django_user_model):
    counter = iter(range(10_000))

    def make(username: str | None = None, **extra):
        name = username or f"user{next(counter)}"
        return django_user_model.objects.create_user(username=name, password=PASSWORD, **extra)

    return make


@pytest.fixture
def people(make_user):
    """The shared cast (tests/personas.py), by name."""
    return cast(make_user)


@pytest.fixture
def learner(make_user):
    return make_user("ada")


@pytest.fixture
def learner_client(client, learner):
    client.force_login(learner)
    return client


@pytest.fixture
def no_refill(monkeypatch):
    """Keep background refills out of tests that count pool rows."""
    from scenarios import pool

    monkeypatch.setattr(pool, "schedule_refill", lambda scenario: None)


@pytest.fixture(autouse=True)
def _perfetto_ui_cache_in_tmp(settings):
    """The Perfetto UI's compressed copies go to a folder under the system temp dir, not var/.

    It outlives the run on purpose: compressing the 11 MB wasm files takes seconds, and a cold
    cache would put that on the first browser test's clock. (Writes are atomic renames, so
    concurrent runs can share it; tests of the compression itself use their own tmp_path.)
    """
    settings.PERFETTO_UI_CACHE = Path(tempfile.gettempdir()) / "tracetrack-test-perfetto-ui"


@pytest.fixture(autouse=True)
def _export_spool_in_tmp(settings, tmp_path_factory):
    """Downloads spool their stored exports in a fresh folder per test, not in var/."""
    settings.EXPORT_SPOOL = tmp_path_factory.mktemp("exports")


@pytest.fixture
def tasks_inline(monkeypatch):
    """Background work (``scenarios.background``) runs in the calling thread when it is sent, as
    a worker would run it, instead of going to a broker no test worker reads. Combine with
    ``django_capture_on_commit_callbacks(execute=True)`` in tests inside a transaction."""
    from scenarios import background

    monkeypatch.setattr(background, "dispatch", lambda name, args, run: run(*args))
