"""Cohort page benchmark (not a test): 200 learners x 500 graded attempts each.

Builds the cohort in a throwaway database (a temporary SQLite file, or, when DATABASE_URL points
at PostgreSQL, a database called tt_cohort_bench on that server, created and dropped here), then
times, in the same run and process, the instructor's progress page and the CSV export against a
trivial view served by the same stack (middleware, session, auth), and the page's first view
after a grade (a member's StatsVersion moved on before each). Prints median and p90 of each,
the ratios to the trivial view, the page's query count and its HTML size.

    .venv/bin/python bench/cohort_bench.py [--learners 200] [--attempts 500] [--reps 15]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/cohort_bench.py
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import types
import uuid
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--learners", type=int, default=200)
    ap.add_argument("--attempts", type=int, default=500)
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="cohort-bench-")
    os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-" + "x" * 40)
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("TRACETRACK_VAR_DIR", tmp)
    os.environ["DJANGO_SETTINGS_MODULE"] = "tracetrack.settings"

    import django
    from django.conf import settings

    django.setup()
    from django.db import connection

    db = settings.DATABASES["default"]
    db.setdefault("TEST", {})
    if db["ENGINE"].endswith("sqlite3"):
        db["TEST"]["NAME"] = str(Path(tmp) / "bench.sqlite3")
    else:
        suffix = os.environ.get("BENCH_DB_SUFFIX", "")  # several checkouts on one server
        db["TEST"]["NAME"] = f"tt_cohort_bench_{suffix}" if suffix else "tt_cohort_bench"
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        run(args, connection)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


def _insert(model, columns: list[str], rows: list[tuple], batch: int = 5000) -> None:
    """Plain executemany in one transaction: the ORM's bulk_create spends ~0.5 ms of Python per
    row building SQL, which made the 100k-attempt build take minutes."""
    from django.db import connection, transaction

    table = connection.ops.quote_name(model._meta.db_table)
    cols = ", ".join(connection.ops.quote_name(c) for c in columns)
    sql = f"INSERT INTO {table} ({cols}) VALUES ({', '.join(['%s'] * len(columns))})"
    if connection.vendor == "sqlite":  # the adaptation Django's fields would do
        to_db = connection.ops.adapt_datetimefield_value

        def adapt(v):
            return v.hex if isinstance(v, uuid.UUID) else to_db(v) if isinstance(v, datetime) else v

        rows = [tuple(adapt(v) for v in row) for row in rows]
    with transaction.atomic(), connection.cursor() as cur:
        for i in range(0, len(rows), batch):
            cur.executemany(sql, rows[i : i + batch])


def build(n_learners: int, n_attempts: int):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.utils import timezone

    from accounts.roles import make_instructor
    from cohorts import progress
    from cohorts.models import Assignment, Cohort, Extension, Membership
    from content.models import ReadMark, WalkthroughSet
    from drills import scheduling
    from drills.models import Attempt, Card
    from scenarios.models import Trace

    rng = random.Random(7)
    now = timezone.now()
    User = get_user_model()
    pw = make_password("bench-password-1")
    teacher = User.objects.create(username="teacher", password=pw)
    make_instructor(teacher)
    learners = User.objects.bulk_create(
        [User(username=f"learner{i:04d}", password=pw) for i in range(n_learners)]
    )
    cohort = Cohort.objects.create(name="Bench cohort", created_by=teacher)
    cohort.instructors.add(teacher)
    Membership.objects.bulk_create([Membership(cohort=cohort, user=u) for u in learners])
    wsets = [
        WalkthroughSet.objects.create(
            slug=f"bench-{k}",
            title=f"Bench set {k}",
            walkthroughs=[f"walkthrough-bench-{k}-{j}" for j in range(3)],
            order=k,
        )
        for k in range(2)
    ]
    a1 = Assignment.objects.create(
        cohort=cohort, walkthrough_set=wsets[0], due_at=now - timedelta(days=2),
        cutoff_at=now + timedelta(days=2), goal="pairs", goal_pair_drills=20,
    )  # fmt: skip
    Assignment.objects.create(
        cohort=cohort, walkthrough_set=wsets[1], due_at=now + timedelta(days=3),
        goal="retention", goal_retention=0.8,
    )  # fmt: skip
    Extension.objects.bulk_create(
        [Extension(assignment=a1, learner=u, due_at=now) for u in learners[:10]]
    )
    ReadMark.objects.bulk_create(
        [
            ReadMark(user=u, slug=slug)
            for u in learners
            for ws in wsets
            for slug in ws.walkthroughs
            if rng.random() < 0.6
        ]
    )
    slugs = [s.slug for s in progress.scenarios()]
    traces, attempts = [], []
    for u in learners:
        for _ in range(n_attempts):
            true = rng.choice(slugs)
            twin = scheduling.twin_of(true)
            answer = true if rng.random() < 0.7 else (twin or rng.choice(slugs))
            sub = now - timedelta(minutes=rng.randint(1, 60 * 24 * 60))
            trace_id = uuid.uuid4()
            traces.append((trace_id, true, len(traces) + 1, "H100", "bench", "pool", "{}", "{}",
                           0, b"", b"", now))  # fmt: skip
            served = sub - timedelta(seconds=70)
            attempts.append((uuid.uuid4(), u.pk, trace_id, true, "timed", served, sub, answer,
                             "", "", "", True, answer == true, 70.0, False, "drill", "",
                             ""))  # fmt: skip
    _insert(Trace, ["id", "scenario", "seed", "hardware", "generator_version", "source", "prompt",
                    "key", "n_events", "payload", "timeline_gz", "created_at"], traces)  # fmt: skip
    _insert(Attempt, ["id", "user_id", "trace_id", "scenario", "mode", "served_at", "submitted_at",
                      "answer_scenario", "answer_measurement", "answer_fix", "answer_arithmetic",
                      "five_sentence", "scenario_correct", "elapsed_s", "counted", "kind", "item",
                      "closed"],
            attempts)  # fmt: skip
    # Inserted past the write path that keeps the summary counters: fill them as
    # `manage.py rebuild_stats` does.
    from drills import summaries

    summaries.rebuild_users([u.pk for u in learners])
    cards = []
    for u in learners:
        for s in slugs:
            when = now - timedelta(days=rng.randint(1, 20))
            state = scheduling.review(scheduling.new_card_state(), rng.choice([1, 2, 3]), when)
            cards.append(Card(user=u, item=s, state=state, due=scheduling.due(state), reviews=1))
    Card.objects.bulk_create(cards, batch_size=2000)
    return teacher, cohort


def run(args, connection) -> None:
    from django.http import HttpResponse
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, override_settings
    from django.urls import path

    import tracetrack.urls

    t0 = time.perf_counter()
    teacher, cohort = build(args.learners, args.attempts)
    with connection.cursor() as cur:  # fresh statistics, as autovacuum / a settled file would have
        cur.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")
    build_s = time.perf_counter() - t0

    def trivial(request):
        return HttpResponse("ok")

    urls = types.ModuleType("cohort_bench_urls")
    urls.urlpatterns = [path("bench-trivial/", trivial), *tracetrack.urls.urlpatterns]
    sys.modules["cohort_bench_urls"] = urls

    with override_settings(ROOT_URLCONF="cohort_bench_urls", DEBUG=False, ALLOWED_HOSTS=["*"]):
        client = Client()
        client.force_login(teacher)
        targets = {
            "trivial view": "/bench-trivial/",
            "instructor page": f"/cohorts/{cohort.pk}/",
            "export.csv": f"/cohorts/{cohort.pk}/export.csv",
        }
        times: dict[str, list[float]] = {k: [] for k in targets}
        for name, url in targets.items():  # warm-up
            assert client.get(url).status_code == 200, name
        for _ in range(args.reps):  # interleaved, so drift hits all alike
            for name, url in targets.items():
                t = time.perf_counter()
                resp = client.get(url)
                _ = resp.content
                times[name].append(time.perf_counter() - t)
        # The first view after a grade: the grade moves the learner's StatsVersion on (as
        # drills.summaries does in the grade's transaction), so the cohort's snapshot misses.
        from drills import summaries

        graded = list(cohort.members.order_by("pk").values_list("pk", flat=True))
        after_grade: list[float] = []
        for k in range(args.reps):
            summaries.bump_version(graded[k % len(graded)])
            t = time.perf_counter()
            _ = client.get(targets["instructor page"]).content
            after_grade.append(time.perf_counter() - t)
        times["after a grade"] = after_grade
        with CaptureQueriesContext(connection) as ctx:
            page = client.get(targets["instructor page"])
        size_kb = len(page.content) / 1024

    n_att = args.learners * args.attempts
    print(
        f"cohort bench on {connection.vendor}: {args.learners} learners x {args.attempts} "
        f"attempts = {n_att} attempts (built in {build_s:.1f} s), {args.reps} reps each"
    )
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, v in times.items():
        p90 = statistics.quantiles(v, n=10)[-1] if len(v) > 1 else v[0]
        print(f"  {name:16s} median {med[name] * 1000:9.2f} ms   p90 {p90 * 1000:9.2f} ms"
              f"   x{med[name] / med['trivial view']:.0f} trivial")  # fmt: skip
    print(f"  instructor page: {len(ctx.captured_queries)} queries, {size_kb:.0f} KiB of HTML")


if __name__ == "__main__":
    main()
