"""The pool against the real stack: PostgreSQL row locks, a Redis broker and a Celery worker
process (not eager mode)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from scenarios import pool
from tests.conftest import needs_postgres, needs_redis
from tracetrack.celery import app as celery_app

ROOT = Path(__file__).resolve().parents[2]


def _db_url() -> str:
    db = settings.DATABASES["default"]
    auth = db["USER"] + (f":{db['PASSWORD']}" if db.get("PASSWORD") else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def _wait_for(predicate, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.25)
    return False


def _start_worker(
    queue: str, log_path: Path, *, wait: bool = True, **extra_env: str
) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": _db_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_QUEUE": queue,
        "POOL_TARGET": "5",
        "POOL_LOW_WATER": "2",
        "SECRET_KEY": settings.SECRET_KEY,
        **extra_env,
    }
    log = log_path.open("a")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "tracetrack",
            "worker",
            "-Q",
            queue,
            "--concurrency",
            "1",
            "--pool",
            "solo",
            "-l",
            "info",
            "-n",
            f"{uuid.uuid4().hex[:6]}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    if not wait:
        return proc
    ready = _wait_for(
        lambda: (
            bool(celery_app.control.ping(destination=[], timeout=0.5)) or proc.poll() is not None
        ),
        60,
    )
    assert proc.poll() is None and ready, log_path.read_text()[-3000:]
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def worker_queue(tmp_path):
    """A Celery worker process on its own queue, reading the test database."""
    needs_postgres()
    needs_redis()
    queue = f"tracetrack-test-{uuid.uuid4().hex[:8]}"
    old_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    proc = None
    try:
        proc = _start_worker(queue, tmp_path / "worker.log")
        yield queue
    finally:
        celery_app.conf.task_default_queue = old_queue
        if proc is not None:
            _stop(proc)


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_get_distinct_traces_and_a_worker_refills(make_user, worker_queue):
    n = 6
    assert pool.refill("healthy", target=n) == n
    users = [make_user() for _ in range(n + 2)]
    barrier = threading.Barrier(n + 2)
    claimed: list[object] = []
    lock = threading.Lock()

    def claim(user):
        try:
            barrier.wait()
            trace = pool.claim(user, "healthy")
            with lock:
                claimed.append(trace.pk if trace else None)
        finally:
            connection.close()

    threads = [threading.Thread(target=claim, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    got = [pk for pk in claimed if pk is not None]
    assert len(claimed) == n + 2
    assert len(got) == n and len(set(got)) == n, "every trace went to exactly one learner"
    assert pool.stock()["healthy"] == 0

    # A claim through the service finds the pool empty, serves a trace anyway and enqueues a
    # refill; the worker process tops the scenario up to its target (5 in the worker's env).
    trace = pool.claim_or_generate(make_user(), "healthy")
    assert trace.claimed_by is not None
    assert _wait_for(lambda: pool.stock()["healthy"] >= 5, 120), pool.stock()
    time.sleep(1.0)
    assert pool.stock()["healthy"] == 5


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_refill_is_redelivered_and_health_tells_the_truth(
    client, settings, tmp_path
):
    """SIGKILL the whole worker in the middle of ``refill_all``: the task sits unacked in Redis;
    with a short visibility timeout a fresh worker gets it back and the pool recovers. Meanwhile
    /healthz says "degraded" (scenarios empty past the grace), and "ok" once refilled."""
    import signal

    from scenarios import engine
    from scenarios.tasks import refill_all

    needs_postgres()
    needs_redis()
    settings.TRACETRACK = {**settings.TRACETRACK, "POOL_DEGRADED_AFTER_S": 1.0}
    queue = f"tracetrack-test-{uuid.uuid4().hex[:8]}"
    old_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    log_path = tmp_path / "worker.log"
    short = {"CELERY_VISIBILITY_TIMEOUT_S": "4", "POOL_TARGET": "4", "POOL_LOW_WATER": "1"}
    first = second = None
    try:
        first = _start_worker(queue, log_path, **short)
        refill_all.delay()
        # Mid-refill: some scenario has stock, another has none yet.
        assert _wait_for(lambda: sum(pool.stock().values()) > 0, 120), log_path.read_text()[-2000:]
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        stock = pool.stock()
        assert min(stock.values()) == 0, f"the refill finished before the kill: {stock}"
        time.sleep(1.2)  # past the grace: empty scenarios make the pool "short"
        health = client.get("/healthz")
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        assert health.json()["pool"] == "short"

        # No new task is sent. (A solo worker busy with the redelivered task cannot answer a
        # ping, so this one is not waited for.)
        second = _start_worker(queue, log_path, wait=False, **short)
        recovered = _wait_for(lambda: min(pool.stock().values()) >= 4, 150)
        assert recovered, (pool.stock(), log_path.read_text()[-3000:])
        assert set(pool.stock()) == set(engine.SCENARIOS)
        health = client.get("/healthz").json()
        assert health["status"] == "ok" and health["pool"] == "ok"
    finally:
        celery_app.conf.task_default_queue = old_queue
        for proc in (first, second):
            if proc is not None:
                _stop(proc)
