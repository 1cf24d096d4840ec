"""Drill start latency against a trivial view on the same server (not a test).

    python bench/drill_bench.py [--samples 40]

A throwaway database (SQLite temp file, or a PostgreSQL database when DATABASE_URL is set) gets
a trace pool; then each sample is a new signed-in learner who starts a drill (POST /drill/next/:
schedule, claim with SKIP LOCKED, create the attempt), opens the attempt page and fetches the
timeline JSON, interleaved with a trivial view through the same middleware stack. For contrast it
also times a start on an empty pool (the trace is generated on the request path).
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

from common import env_defaults, print_table, setup_database, timed, trivial_urlconf


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=40)
    args = parser.parse_args()
    env_defaults()
    where, cleanup = setup_database("tt_drill_bench")
    import django

    django.setup()
    try:
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.test import Client
        from django.test.utils import override_settings

        from drills.models import Attempt
        from scenarios import engine, pool

        call_command("migrate", verbosity=0)
        pool.schedule_refill = lambda scenario: None  # measure the request alone
        per_scenario = max(4, args.samples // 3)
        t0 = time.perf_counter()
        pool.refill_many(engine.SCENARIOS, target=per_scenario)
        print(f"database: {where}")
        filled = time.perf_counter() - t0
        print(f"pool: {per_scenario} traces per scenario, filled in {filled:.1f} s")
        users = get_user_model().objects
        times: dict[str, list[float]] = {
            "trivial": [],
            "POST /drill/next/": [],
            "attempt page": [],
            "timeline.json": [],
        }
        with override_settings(ROOT_URLCONF=trivial_urlconf()):
            for i in range(args.samples + 1):
                client = Client()
                client.force_login(users.create_user(f"bench{i}", password="x-bench-pass-1"))
                start = time.perf_counter()
                response = client.post("/drill/next/", {"mode": "timed"})
                started = time.perf_counter() - start
                assert response.status_code == 302, response.status_code
                url = response["Location"]
                attempt_id = re.search(r"attempts/([0-9a-f-]{36})/", url).group(1)
                trace_id = Attempt.objects.get(pk=attempt_id).trace_id
                samples = {
                    "trivial": lambda c=client: c.get("/bench/trivial/"),
                    "attempt page": lambda c=client, u=url: c.get(u),
                    "timeline.json": lambda c=client, t=trace_id: c.get(
                        f"/traces/{t}/timeline.json", headers={"Accept-Encoding": "gzip"}
                    ),
                }
                measured = {}
                for name, fetch in samples.items():
                    start = time.perf_counter()
                    assert fetch().status_code == 200, name
                    measured[name] = time.perf_counter() - start
                if i == 0:
                    continue  # warm-up
                times["POST /drill/next/"].append(started)
                for name, value in measured.items():
                    times[name].append(value)
            left = min(pool.stock().values())
            drain = users.create_user("drain", password="x-bench-pass-1")
            while pool.claim(drain, "healthy") is not None:
                pass
            on_demand = []
            for i in range(5):
                user = users.create_user(f"empty{i}", password="x-bench-pass-1")
                on_demand.append(timed(lambda u=user: pool.claim_or_generate(u, "healthy")))
        print_table(times)
        note = "no start generated a trace" if left else "a scenario ran dry: some starts generated"
        print(f"pool left after the timed starts: min {left} per scenario ({note})")
        print(
            "claim or generate once the pool is drained (healthy): "
            f"median {statistics.median(on_demand) * 1000:.0f} ms over {len(on_demand)}"
        )
        return 0
    finally:
        cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
