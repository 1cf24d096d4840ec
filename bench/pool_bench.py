"""Pool throughput with a real Celery worker against generating in-process (not a test).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x REDIS_URL=redis://127.0.0.1:6379/0 \\
        python bench/pool_bench.py [--per-scenario 4] [--concurrency 2]

Times building the same number of pool rows in this process (generate + encode + insert), then
starts a worker process (prefork, N children) on a private queue, enqueues one refill per scenario
and times until the pool reaches its target. Prints traces/s for both and their ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid

from common import ROOT, env_defaults, setup_database


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-scenario", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    if not os.environ.get("REDIS_URL") or not os.environ.get("DATABASE_URL"):
        print("pool_bench needs DATABASE_URL (PostgreSQL) and REDIS_URL; skipped")
        return 0
    env_defaults()
    where, cleanup = setup_database("tt_pool_bench")
    os.environ["POOL_TARGET"] = str(args.per_scenario)
    os.environ["POOL_LOW_WATER"] = "0"
    import django

    django.setup()
    try:
        from django.conf import settings
        from django.core.management import call_command

        from scenarios import engine, pool
        from scenarios.models import Trace
        from tracetrack.celery import app

        call_command("migrate", verbosity=0)
        n = args.per_scenario * len(engine.SCENARIOS)
        start = time.perf_counter()
        for slug in engine.SCENARIOS:
            for i in range(args.per_scenario):
                pool.build_trace(slug, 10_000_000 + i).save()
        inline = time.perf_counter() - start
        Trace.objects.all().delete()

        queue = f"tt-bench-{uuid.uuid4().hex[:6]}"
        env = {**os.environ, "CELERY_QUEUE": queue, "DATABASE_URL": os.environ["DATABASE_URL"]}
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tracetrack", "worker", "-Q", queue,
             "--concurrency", str(args.concurrency), "-l", "warning"],
            cwd=ROOT, env=env,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not app.control.ping(timeout=0.5) and time.monotonic() < deadline:
                time.sleep(0.5)
            start = time.perf_counter()
            for slug in engine.SCENARIOS:
                app.send_task("scenarios.tasks.refill_pool", args=[slug], queue=queue)
            while sum(pool.stock().values()) < n:
                if time.perf_counter() - start > 900:
                    raise SystemExit("the worker did not fill the pool in 15 minutes")
                time.sleep(0.2)
            by_worker = time.perf_counter() - start
        finally:
            worker.terminate()
            worker.wait(30)
        print(f"database: {where}; broker: {settings.REDIS_URL.split('@')[-1]}")
        print(f"{n} traces ({args.per_scenario} per scenario, {len(engine.SCENARIOS)} scenarios)")
        print(f"in-process, 1 core:            {n / inline:6.2f} traces/s ({inline:.1f} s)")
        print(
            f"worker, {args.concurrency} processes:           {n / by_worker:6.2f} traces/s "
            f"({by_worker:.1f} s, incl. queueing) = {inline / by_worker:.2f}x in-process"
        )
        return 0
    finally:
        cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
