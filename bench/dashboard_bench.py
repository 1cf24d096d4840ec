"""Dashboard time at 20k attempts, against a trivial view in the same run (not a test).

    python bench/dashboard_bench.py [--attempts 20000] [--repeat 15]

Builds a throwaway database: a SQLite file in a temporary folder by default, or, when
DATABASE_URL is set (postgres://...), a ``tracetrack_bench`` database on that server, created
here and dropped at the end. One learner gets N graded attempts over the last year (every
scenario, some lookalike confusions, some practice), scenario and math cards, and a second
learner gets a few attempts (they must not slow the first one down). Then the Django test Client
(full middleware stack, signed in) fetches ``/dashboard/``, ``/dashboard/stats.json``, a bare
signed-in page (the site's layout with nothing in it: what the target is a multiple of) and a
trivial signed-in view that returns "ok", interleaved, and the medians and ratios are printed;
also the first dashboard view after each grade (a real one: a new graded attempt stored and
counted as the live path does, in one transaction, then the new state drawn once it commits, as
the grading request does, ``drills.stats.warm``; both times are printed), and for comparison a
view after a grade whose drawing did not happen (the view draws the page itself).
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import timedelta

from common import env_defaults, print_table, setup_database, timed, trivial_urlconf

BENCH_DB = "tracetrack_bench"


def populate(n_attempts: int):
    import random

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from drills import scheduling
    from drills.mentalmath import FAMILIES
    from drills.models import Attempt, Card, MathAttempt
    from scenarios import engine
    from scenarios.models import Trace

    rng = random.Random(7)
    users = get_user_model().objects
    learner = users.create_user("bench", password="bench-password-123")
    other = users.create_user("other", password="bench-password-123")
    slugs = list(engine.SCENARIOS)
    now = timezone.now()

    def rows(user, n, seed0):
        traces, attempts = [], []
        for k in range(n):
            true = rng.choice(slugs)
            twin = scheduling.twin_of(true)
            roll = rng.random()
            if twin and roll < 0.25:
                answer = twin
            elif roll < 0.15:
                answer = rng.choice(slugs)
            else:
                answer = true
            elapsed = rng.uniform(15, 170)
            practice = rng.random() < 0.1
            submitted = now - timedelta(seconds=rng.uniform(0, 365 * 86400))
            traces.append(
                Trace(
                    scenario=true,
                    seed=seed0 + k,
                    hardware="h100",
                    generator_version="bench",
                    prompt={},
                    key={"scenario": true},
                    n_events=1,
                    payload=b"x",
                    timeline_gz=b"x",
                )
            )
            attempts.append(
                Attempt(
                    user=user,
                    scenario=true,
                    mode="practice" if practice else "timed",
                    served_at=submitted - timedelta(seconds=elapsed),
                    submitted_at=submitted,
                    answer_scenario=answer,
                    answer_measurement="m",
                    answer_fix="f",
                    answer_expected_ms=100.0,
                    elapsed_s=elapsed,
                    scenario_correct=answer == true,
                    measurement_correct=rng.random() < 0.7,
                    fix_correct=rng.random() < 0.7,
                    win_correct=rng.random() < 0.5,
                    over_time=(elapsed > 122) and not practice,
                    rating=3,
                    counted=not practice,
                )
            )
        for chunk in range(0, n, 2000):
            made = Trace.objects.bulk_create(traces[chunk : chunk + 2000])
            batch = attempts[chunk : chunk + 2000]
            for a, t in zip(batch, made, strict=True):
                a.trace = t
            Attempt.objects.bulk_create(batch)

    rows(learner, n_attempts, 1)
    rows(other, 500, 10_000_000)
    for slug in slugs:
        state = scheduling.review(scheduling.new_card_state(), 3, now - timedelta(days=3))
        Card.objects.create(user=learner, item=slug, state=state, due=scheduling.due(state))
    for family in FAMILIES:
        state = scheduling.review(scheduling.new_card_state(), 3, now - timedelta(days=2))
        Card.objects.create(
            user=learner, kind="math", item=family, state=state, due=scheduling.due(state)
        )
    MathAttempt.objects.bulk_create(
        MathAttempt(
            user=learner,
            family=rng.choice(list(FAMILIES)),
            seed=k,
            problem={},
            served_at=now,
            submitted_at=now,
            correct=rng.random() < 0.6,
        )
        for k in range(2000)
    )
    return learner


def grade_one(learner, k: int) -> None:
    """What a live grade does to the learner's numbers, on a new graded attempt (a random
    scenario and answer): one transaction that stores it and ``summaries.record_attempt`` --
    the counters, the ``StatsVersion`` and whatever the grade's transaction keeps besides."""
    import random

    from django.db import transaction
    from django.utils import timezone

    from drills import summaries
    from drills.models import Attempt
    from scenarios import engine
    from scenarios.models import Trace

    rng = random.Random(k)
    slugs = list(engine.SCENARIOS)
    true = rng.choice(slugs)
    answer = true if rng.random() < 0.7 else rng.choice(slugs)
    now = timezone.now()
    with transaction.atomic():
        trace = Trace.objects.create(
            scenario=true, seed=50_000_000 + k, hardware="h100", generator_version="bench",
            prompt={}, key={"scenario": true}, n_events=1, payload=b"x", timeline_gz=b"x",
        )  # fmt: skip
        attempt = Attempt.objects.create(
            user=learner, trace=trace, scenario=true, mode="timed",
            served_at=now - timedelta(seconds=60 + k % 50), submitted_at=now,
            answer_scenario=answer, answer_measurement="m", answer_fix="f",
            answer_expected_ms=100.0, elapsed_s=60.0 + k % 50, scenario_correct=answer == true,
            measurement_correct=rng.random() < 0.7, fix_correct=rng.random() < 0.7,
            win_correct=rng.random() < 0.5, over_time=False, rating=3, counted=True,
        )  # fmt: skip
        summaries.record_attempt(attempt)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    env_defaults()
    where, cleanup = setup_database(BENCH_DB)
    import django

    django.setup()
    try:
        from django.core.management import call_command
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext, override_settings

        call_command("migrate", verbosity=0)
        t0 = time.perf_counter()
        learner = populate(args.attempts)
        print(f"database: {where}")
        print(f"populated {args.attempts} attempts in {time.perf_counter() - t0:.1f} s")
        # The rows went in by bulk insert, past the write path that keeps the dashboard's
        # counters: fill them the way `manage.py rebuild_stats` does.
        from django.utils import timezone

        from drills import summaries
        from drills.stats import cached, warm

        t0 = time.perf_counter()
        summaries.rebuild_users(summaries.users_with_answers())
        print(f"rebuilt the summary counters in {time.perf_counter() - t0:.1f} s")
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")

        urls = {
            "trivial": "/bench/trivial/",
            "bare page": "/bench/page/",
            "dashboard": "/dashboard/",
            "stats.json": "/dashboard/stats.json",
        }
        with override_settings(ROOT_URLCONF=trivial_urlconf()):
            client = Client()
            client.force_login(learner)
            queries = {}
            for name, url in urls.items():  # warm up (and check) each; count a repeat view
                assert client.get(url).status_code == 200, url
                with CaptureQueriesContext(connection) as ctx:
                    response = client.get(url)
                assert response.status_code == 200, (url, response.status_code)
                queries[name] = len(ctx.captured_queries)
            times: dict[str, list[float]] = {name: [] for name in urls}
            times["first view after a grade"] = []
            times["after a failed drawing"] = []
            plain: list[float] = []
            drawing: list[float] = []
            for k in range(args.repeat):
                for name, url in urls.items():
                    start = time.perf_counter()
                    response = client.get(url)
                    times[name].append(time.perf_counter() - start)
                    assert response.status_code == 200
                # A grade moves the learner's numbers on and, once it commits, draws the new
                # state in the same request (drills.stats.warm, for a learner who looks at the
                # dashboard): the grade's cost with the drawing, then the next view.
                cached.mark_viewer(learner.pk)
                drawing.append(timed(lambda k=k: grade_one(learner, 2 * k)))
                key = cached.key_of(learner, timezone.now())
                assert cached.part(key, "page") is not None, "the grade did not draw ahead"
                start = time.perf_counter()
                response = client.get("/dashboard/")
                times["first view after a grade"].append(time.perf_counter() - start)
                assert response.status_code == 200
                # The same grade without the drawing (its cost alone), and the view that
                # then has to draw: what a learner gets only when a drawing failed.
                summaries.graded.disconnect(dispatch_uid="drills.stats.warm")
                try:
                    plain.append(timed(lambda k=k: grade_one(learner, 2 * k + 1)))
                finally:
                    summaries.graded.connect(warm.on_graded, dispatch_uid="drills.stats.warm")
                start = time.perf_counter()
                response = client.get("/dashboard/")
                times["after a failed drawing"].append(time.perf_counter() - start)
                assert response.status_code == 200
        print_table(times, queries)
        grade_ms = statistics.median(plain) * 1000
        with_ms = statistics.median(drawing) * 1000
        print(
            f"a grade's transaction (attempt, counters, version, stored numbers): median "
            f"{grade_ms:.1f} ms; with the new state drawn after its commit (what the grading "
            f"request now does): {with_ms:.1f} ms (+{with_ms - grade_ms:.1f} ms)"
        )
        med = {name: statistics.median(ts) for name, ts in times.items()}
        # Every view a learner makes: repeats (the cache answers) and the first after a grade.
        worst = max(med["dashboard"], med["stats.json"], med["first view after a grade"])
        page = med["bare page"]
        print(
            f"slowest dashboard view: {worst * 1000:.1f} ms = {worst / page:.1f}x a bare signed-in "
            f"page (target: <= 3x), {worst / med['trivial']:.1f}x the 'ok' view"
        )
        failed = med["after a failed drawing"]
        print(
            f"a view that draws the page itself (only after a failed drawing): "
            f"{failed * 1000:.1f} ms = {failed / page:.1f}x a bare signed-in page"
        )
        return 0
    finally:
        cleanup()


if __name__ == "__main__":
    raise SystemExit(main())
