"""Drill start under 50 concurrent learners, pool refill with one worker core, RSS (not a test).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/4 \\
        python bench/load_bench.py [--learners 50] [--rounds 4]

A throwaway PostgreSQL database gets a stocked pool; gunicorn (3 sync workers) serves the
project and a Celery worker (concurrency 1: one core) refills the pool from the claims'
low-water triggers, as in production. Each learner is a thread with its own signed-in session:
per round it fetches a trivial signed-in view (one small query) and starts a drill
(``POST /drill/next/``), then its attempt is closed so the next round starts a fresh one.
Printed: p50/p99 of each and their ratios (targets: p50 <= 2x, p99 <= 4x the trivial view);
pool refill in traces/s against the demand of 100 learners drilling one trace a minute; peak
RSS of the gunicorn workers (target < 250 MB) and of the Celery worker (target < 600 MB).
Without DATABASE_URL/REDIS_URL it runs on SQLite with in-process refills (figures less useful).
A simple threaded client on purpose: the Locust load test in bench/ covers whole-site traffic.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

import psutil
from common import env_defaults, setup_database
from server import VENV_BIN, Gunicorn, PeakRSS, signed_in_session

DEMAND_PER_S = 100 / 60  # 100 learners, one trace a minute each


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def worker_cpu_s(worker) -> float:
    """CPU seconds (user + system) used so far by the Celery worker and its pool child."""
    procs = [psutil.Process(worker.pid), *psutil.Process(worker.pid).children()]
    return sum(sum(p.cpu_times()[:2]) for p in procs)


def stock_copies(per_scenario: int) -> None:
    """A pool of ``per_scenario`` unclaimed rows per scenario: one generated trace each, copied
    under new seeds (drill start never reads the bytes, so copies cost what real rows cost)."""
    from scenarios import engine, pool
    from scenarios.models import Trace

    rows = []
    for slug in engine.SCENARIOS:
        real = pool.build_trace(slug, 1)
        for i in range(per_scenario):
            fields = {f.attname: getattr(real, f.attname) for f in Trace._meta.concrete_fields}
            fields.pop("id")
            fields["seed"] = 10_000 + i
            rows.append(Trace(**fields))
    Trace.objects.bulk_create(rows, batch_size=50)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--refill", type=int, default=12, help="traces the refill run generates")
    args = parser.parse_args()
    env_defaults()
    os.environ["POOL_TARGET"] = str(args.rounds * args.learners // 11 + 12)
    os.environ["POOL_LOW_WATER"] = str(args.rounds * args.learners // 11 + 2)
    where, cleanup = setup_database("delivery")
    import django

    django.setup()
    server = worker = None
    try:
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connection
        from django.utils import timezone

        from drills.models import Attempt
        from scenarios import engine, pool

        call_command("migrate", verbosity=0)
        per_scenario = args.rounds * args.learners // 11 + 8
        stock_copies(per_scenario)
        users = [
            get_user_model().objects.create_user(f"load{i}", password="x-bench-pass-1")
            for i in range(args.learners)
        ]
        print(f"database: {where}; broker: {settings.REDIS_URL or 'none (in-process refills)'}")
        print(f"pool: {per_scenario} per scenario; {args.learners} learners x {args.rounds} rounds")
        if settings.REDIS_URL:
            worker = subprocess.Popen(
                [str(VENV_BIN / "celery"), "-A", "tracetrack", "worker", "-l", "warning",
                 "--concurrency", "1", "--without-gossip", "--without-mingle"],
                env=dict(os.environ),
            )  # fmt: skip
        server = Gunicorn(workers=3)
        sessions = [signed_in_session(server.url, u) for u in users]
        web_rss = PeakRSS(server.workers)
        worker_rss = PeakRSS(
            (lambda: [psutil.Process(worker.pid), *psutil.Process(worker.pid).children()])
            if worker
            else list
        )
        times: dict[str, list[float]] = {"trivial": [], "POST /drill/next/": []}
        errors: list[str] = []
        lock = threading.Lock()
        barrier = threading.Barrier(args.learners)

        def learner(i: int) -> None:
            s, user = sessions[i], users[i]
            barrier.wait()
            try:
                for _ in range(args.rounds):
                    t = time.perf_counter()
                    r1 = s.get(f"{server.url}/bench/trivial/", timeout=120)
                    trivial = time.perf_counter() - t
                    t = time.perf_counter()
                    r2 = s.post(
                        f"{server.url}/drill/next/",
                        data={"mode": "timed"},
                        allow_redirects=False,
                        timeout=120,
                    )
                    start = time.perf_counter() - t
                    if r1.status_code != 200 or r2.status_code != 302:
                        with lock:
                            errors.append(f"{r1.status_code}/{r2.status_code}")
                        continue
                    with lock:
                        times["trivial"].append(trivial)
                        times["POST /drill/next/"].append(start)
                    # Close it (as an abandoned attempt) so the next round starts a new drill.
                    Attempt.objects.filter(user=user, submitted_at__isnull=True).update(
                        submitted_at=timezone.now()
                    )
            finally:
                connection.close()

        threads = [threading.Thread(target=learner, args=(i,)) for i in range(args.learners)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        p = {k: (statistics.median(v), pct(v, 0.99)) for k, v in times.items()}
        n = len(times["trivial"])
        print(f"{n} samples each in {wall:.1f} s, {len(errors)} errors {errors[:5]}")
        for name, (p50, p99) in p.items():
            print(f"  {name:<18} p50 {p50 * 1e3:7.1f} ms   p99 {p99 * 1e3:7.1f} ms")
        (b50, b99), (d50, d99) = p["trivial"], p["POST /drill/next/"]
        print(
            f"drill start / trivial: p50 {d50 / b50:.2f}x (target <= 2x), "
            f"p99 {d99 / b99:.2f}x (target <= 4x)"
        )

        # Pool refill with one worker core: generate --refill traces and time them.
        scenarios = list(engine.SCENARIOS)
        before = sum(pool.stock().values())
        busy = worker_cpu_s(worker) if worker else time.process_time()
        t0 = time.perf_counter()
        if worker:
            from scenarios.tasks import refill_pool

            for slug in scenarios:
                refill_pool.delay(slug)
            goal = before + args.refill
            while sum(pool.stock().values()) < goal and time.perf_counter() - t0 < 300:
                time.sleep(0.2)
            # The target may ask for more; count what arrived in the time it took.
            made = sum(pool.stock().values()) - before
        else:
            made = 0
            for slug in scenarios:
                made += pool.refill(slug, target=pool.stock()[slug] + 1)
                if made >= args.refill:
                    break
        took = time.perf_counter() - t0
        cpu = (worker_cpu_s(worker) if worker else time.process_time()) - busy
        # On a shared 2-core box the worker rarely gets a whole core: per CPU-second is what one
        # dedicated worker core would sustain; per wall-second is what this run got.
        rate, wall_rate = made / cpu, made / took
        print(
            f"pool refill, one worker core: {made} traces, {cpu:.1f} CPU-s ({took:.1f} s wall) = "
            f"{rate:.2f} traces per core-second ({wall_rate:.2f}/s wall here) vs demand "
            f"{DEMAND_PER_S:.2f}/s (100 learners x 1/min) -> {rate / DEMAND_PER_S:.1f}x"
            " (target >= 1x)"
        )
        web = web_rss.stop()
        celery = worker_rss.stop()
        print(
            "peak RSS: gunicorn workers "
            + ", ".join(f"{v:.0f}" for v in web.values())
            + " MB (target < 250 MB)"
            + (f"; Celery worker (parent + child) {sum(celery.values()):.0f} MB "
               f"(largest process {max(celery.values()):.0f} MB; target < 600 MB)"
               if celery else "")
        )  # fmt: skip
        return 0
    finally:
        if server is not None:
            server.stop()
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=30)
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
