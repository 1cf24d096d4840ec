"""The learner's stored dashboard numbers (``drills.stats.snapshot``): every grade patches them
in its own transaction, so the first view after a grade reads one row and no counter; what the
grades patched equals what a rebuild from the raw attempts reads; two grades at once lose
nothing."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from drills import scheduling, summaries
from drills.models import Attempt, DashboardSnapshot, StatsVersion
from drills.stats import dashboard, snapshot
from scenarios import engine
from tests.conftest import needs_postgres
from tests.drills.test_dashboard import S, build, save_all
from tests.factories import graded_math_answer

PAIR_A = "bandwidth-bound-collective"
PAIR_B = engine.lookalike_of(PAIR_A)


def grade(attempt: Attempt) -> Attempt:
    """One grade in its own transaction, as the live paths store one."""
    with transaction.atomic():
        return save_all([attempt])[0]


def stored(user) -> dict:
    row = DashboardSnapshot.objects.get(user=user)
    return snapshot.decode(row.data)


def same(inputs: dict) -> dict:
    """Inputs with their row lists in one order (the database returns them in any)."""
    out = snapshot.decode(snapshot.encode(inputs))
    out["tally_rows"] = sorted(
        out["tally_rows"], key=lambda r: (r["user_id"], r["scenario"], r["answer_scenario"])
    )
    out["week_rows"] = sorted(out["week_rows"], key=lambda r: (r["week"], r["scenario"]))
    return out


def earlier_today(now, minutes: float):
    """``minutes`` before ``now``, but never before today's midnight (UTC): a grade stamped
    yesterday is rightly not patched into today's row, which would fail these tests just after
    midnight."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return max(now - timedelta(minutes=minutes), midnight + (now - midnight) / 2)


def is_current(user) -> bool:
    """The stored row holds the learner's state now (patched, not left stale)."""
    row = DashboardSnapshot.objects.get(user=user)
    return row.n == StatsVersion.objects.get(user=user).n


def a_sequence(user, now) -> None:
    """Drills right and wrong (a lookalike confusion too), practice, a slow one, a mock
    interview's trace, a contrast trial, a re-narration and mental-math answers, each graded in
    its own transaction; the stored row stays current after each."""
    start = earlier_today(now, 30)
    when = [start + (now - start) * k / 20 for k in range(20)]
    sequence = [
        build(user, S, S, when[0], elapsed=41.2),
        build(user, PAIR_A, PAIR_B, when[1], elapsed=77.0, m=False),
        build(user, PAIR_B, PAIR_A, when[2], elapsed=130.5, f=False),
        build(user, S, "healthy", when[3], mode="practice", elapsed=300.0),
        build(user, "healthy", "healthy", when[4], elapsed=20.0, w=False),
        build(user, S, S, when[5], elapsed=55.5),
    ]
    interview = build(user, "launch-bound", "launch-bound", when[6], elapsed=99.0)
    interview.kind = Attempt.Kind.INTERVIEW
    sequence.append(interview)
    renarration = build(user, S, S, when[7], elapsed=61.0)
    renarration.kind, renarration.item = Attempt.Kind.RENARRATION, "walkthrough-any"
    sequence.append(renarration)
    trial = build(user, PAIR_A, PAIR_A, when[8], elapsed=33.0)
    trial.kind, trial.item = Attempt.Kind.CONTRAST, scheduling.pair_key(PAIR_A, PAIR_B)
    sequence.append(trial)
    for attempt in sequence:
        grade(attempt)
        assert is_current(user), attempt.kind
    for correct in (True, False, True):
        with transaction.atomic():
            graded_math_answer(user, correct=correct, when=now)
        assert is_current(user)


@pytest.mark.django_db
def test_grades_patch_the_stored_numbers_to_what_a_rebuild_reads(learner, learner_client):
    now = timezone.now()
    grade(build(learner, S, S, earlier_today(now, 60)))
    assert learner_client.get("/dashboard/").status_code == 200  # the row is stored
    assert is_current(learner)
    a_sequence(learner, timezone.now())

    patched = stored(learner)
    assert patched["math_tallies"]["busbw"] == (3, 2)
    assert patched["renarrations"] == {"graded": 1, "right": 1}
    assert [p["trials"] for p in patched["pair_discrimination"]] == [1]
    summaries.rebuild_users([learner.pk])  # the counters again from the raw attempts
    now = timezone.now()
    assert same(patched) == same(dashboard.learner_inputs(learner, now))
    assert dashboard.counters_from(patched, now) == dashboard.learner_counters(learner, now)
    totals = dashboard.counters_from(patched, now)["totals"]
    assert totals["graded"] == 8 and totals["practice"] == 1  # no trial, no re-narration


@pytest.mark.django_db
def test_the_first_view_after_a_grade_reads_no_counter(learner, learner_client):
    now = timezone.now()
    grade(build(learner, S, S, earlier_today(now, 5)))
    learner_client.get("/dashboard/")
    grade(build(learner, S, "healthy", timezone.now()))
    with CaptureQueriesContext(connection) as queries:
        response = learner_client.get("/dashboard/")
    assert response.status_code == 200
    assert 'data-kpi="graded">2<' in response.content.decode()
    sql = [q["sql"].lower() for q in queries.captured_queries]
    assert not [q for q in sql if "tally" in q or "drills_attempt" in q]


@pytest.mark.django_db
def test_a_lookalike_confusion_shows_in_its_pairs_weekly_line(learner, learner_client):
    learner_client.get("/dashboard/")
    now = timezone.now()
    grade(build(learner, PAIR_A, PAIR_A, earlier_today(now, 2)))
    learner_client.get("/dashboard/")  # stored, then patched by the next grade
    grade(build(learner, PAIR_A, PAIR_B, earlier_today(now, 1)))
    page = learner_client.get("/dashboard/").content.decode()
    pair = re.search(rf'data-pair="{PAIR_A}→{PAIR_B}">(.*?)</li>', page, re.S).group(1)
    monday = dashboard.trend_start(now, weeks=1)
    assert f"<title>week of {monday:%d %b}: 1/2</title>" in pair
    assert 'aria-label="Weekly confusion rate, one week so far: 50%"' in pair
    assert '<span class="rate">50%</span>' in pair


@pytest.mark.django_db
def test_a_stale_row_is_read_again_from_the_counters(learner, learner_client):
    now = timezone.now()
    grade(build(learner, S, S, earlier_today(now, 5)))
    learner_client.get("/dashboard/")
    # Moved on past the stored row (a rebuild of the cards does this): not patched any more ...
    summaries.bump_version(learner.pk)
    grade(build(learner, S, "healthy", timezone.now()))
    assert not is_current(learner)
    # ... and the next view reads the counters and stores them again.
    page = learner_client.get("/dashboard/").content.decode()
    assert 'data-kpi="graded">2<' in page and 'data-kpi="accuracy">50%<' in page
    assert is_current(learner)
    # A row read for an older state never overwrites a newer one.
    newer = DashboardSnapshot.objects.get(user=learner)
    snapshot.store(learner.pk, newer.n - 1, timezone.now(), dashboard.learner_inputs(learner, now))
    assert DashboardSnapshot.objects.get(user=learner).n == newer.n


@pytest.mark.django_db(transaction=True)
def test_two_grades_at_once_lose_no_increment(make_user):
    needs_postgres()
    learner = make_user("racer")
    now = timezone.now()
    grade(build(learner, S, S, earlier_today(now, 5)))
    snapshot.counters(learner, timezone.now())  # stored
    rounds = 6
    attempts = [
        build(learner, S if k % 2 else PAIR_A, S, now - timedelta(seconds=60 - k), elapsed=30.0 + k)
        for k in range(2 * rounds)
    ]
    errors: list[BaseException] = []

    def worker(mine: list[Attempt], barrier: threading.Barrier) -> None:
        try:
            for attempt in mine:
                barrier.wait(timeout=30)
                grade(attempt)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=worker, args=(attempts[k::2], barrier)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert is_current(learner)
    patched = stored(learner)
    totals = dashboard.counters_from(patched, timezone.now())["totals"]
    assert totals["graded"] == 1 + 2 * rounds
    summaries.rebuild_users([learner.pk])
    assert same(patched) == same(dashboard.learner_inputs(learner, timezone.now()))
