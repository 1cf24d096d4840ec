"""The summary counters against the raw attempts they summarise.

For generated histories (several learners; every mode; practice; unknown slugs; blank answers;
three-part and five-sentence grades; times on and around whole seconds and the limit; attempts
over many weeks, some never submitted), the dashboard and cohort numbers read from the counters
equal the numbers the old read model computes by scanning the attempts
(``tests/drills/dashboard_scan.py``), whether the counters were kept live, one grade at a time
through ``summaries.record_attempt``, or rebuilt by ``manage.py rebuild_stats``. Also: a grade
submitted twice counts once, and the data migration's fill equals the rebuild.
"""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models import Q
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drills import summaries
from drills.models import Attempt, MathAttempt, ScenarioTally
from drills.stats import dashboard
from scenarios import engine
from scenarios.models import Trace
from tests.drills import dashboard_scan as scan

pytestmark = pytest.mark.django_db

NOW = datetime(2025, 6, 18, 10, 30, tzinfo=UTC)
SLUGS = [*engine.SCENARIOS, "retired-scenario"]
_users = itertools.count()
_seeds = itertools.count(1)

maybe_bool = st.sampled_from([None, True, False])
elapsed = st.one_of(
    st.floats(min_value=0.2, max_value=400, allow_nan=False),
    st.integers(min_value=1, max_value=300).map(float),  # exactly on a whole second
    st.sampled_from([119.999, 120.0, 120.001]),  # around the 2:00 limit
)
attempt = st.fixed_dictionaries(
    {
        "learner": st.integers(0, 2),
        "scenario": st.sampled_from(SLUGS),
        "answer": st.one_of(st.sampled_from(SLUGS), st.just("")),
        "mode": st.sampled_from(["timed", "practice", "perfetto"]),
        "ago_s": st.floats(min_value=-3 * 86400, max_value=400 * 86400),
        "elapsed": elapsed,
        "submitted": st.booleans().map(lambda b: b or None),  # mostly graded
        "m": maybe_bool,
        "f": maybe_bool,
        "w": maybe_bool,
        "step": maybe_bool,
        "gap": maybe_bool,
        "value": maybe_bool,
        "expected": maybe_bool,
        "over": maybe_bool,
    }
)
twin_heavy = st.sampled_from(
    [(s, t) for s in engine.SCENARIOS if (t := engine.lookalike_of(s))]
).map(lambda p: {"scenario": p[0], "answer": p[1]})
history = st.lists(
    st.one_of(attempt, st.tuples(attempt, twin_heavy).map(lambda x: {**x[0], **x[1]})),
    min_size=0,
    max_size=60,
)


def learners(n: int = 3):
    return [get_user_model().objects.create_user(f"p{next(_users)}") for _ in range(n)]


def store(users, rows, *, live: bool) -> list[Attempt]:
    # A learner has at most one open attempt (the database holds it): keep the first per learner.
    opened: set[int] = set()
    kept = []
    for r in rows:
        if r["submitted"] is None:
            if r["learner"] in opened:
                continue
            opened.add(r["learner"])
        kept.append(r)
    rows = kept
    traces = Trace.objects.bulk_create(
        Trace(
            scenario=r["scenario"],
            seed=next(_seeds),
            hardware="H100",
            generator_version="t",
            prompt={},
            key={},
            n_events=0,
            payload=b"",
            timeline_gz=b"",
        )
        for r in rows
    )
    attempts = []
    for r, trace in zip(rows, traces, strict=True):
        when = NOW - timedelta(seconds=r["ago_s"])
        graded = r["submitted"] is not None
        attempts.append(
            Attempt(
                user=users[r["learner"]],
                trace=trace,
                scenario=r["scenario"],
                mode=r["mode"],
                served_at=when - timedelta(seconds=r["elapsed"]),
                submitted_at=when if graded else None,
                answer_scenario=r["answer"] if graded else "",
                elapsed_s=r["elapsed"] if graded else None,
                scenario_correct=(r["answer"] == r["scenario"]) if graded else None,
                measurement_correct=r["m"] if graded else None,
                fix_correct=r["f"] if graded else None,
                win_correct=r["w"] if graded else None,
                step_correct=r["step"] if graded else None,
                gap_correct=r["gap"] if graded else None,
                value_correct=r["value"] if graded else None,
                expected_correct=r["expected"] if graded else None,
                five_sentence=r["step"] is not None,
                over_time=r["over"] if graded else None,
            )
        )
    saved = Attempt.objects.bulk_create(attempts)
    if live:  # one grade at a time, in submission order, as the write path adds them
        for a in sorted((a for a in saved if a.submitted_at), key=lambda a: a.submitted_at):
            summaries.record_attempt(a)
    return saved


def same(x):
    """Floats to 9 significant digits (PostgreSQL's percentile_cont and an average of two may
    differ in the last bit), everything else as is."""
    if isinstance(x, float):
        return float(f"{x:.9g}") if math.isfinite(x) else x
    if isinstance(x, dict):
        return {k: same(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [same(v) for v in x]
    return x


def assert_matches_the_scan(users):
    ids = [u.pk for u in users]
    for u in users:
        live = dashboard.learner_stats(u, NOW)
        live.pop("renarrations")  # counted from the attempts themselves, not from the counters
        live.pop("pair_discrimination")  # so are contrast trials (tests/drills/test_contrast.py)
        assert same(live) == same(scan.learner_stats(u, NOW))
        mine = Attempt.objects.filter(user=u)
        assert dashboard.streak(u, NOW) == scan.streak(mine, NOW)
        later = NOW + timedelta(days=1)
        assert dashboard.streak(u, later) == scan.streak(mine, later)
    cohort = Attempt.objects.of_learners(ids)
    due = NOW - timedelta(days=20)
    late = Q(submitted_at__lte=due) & ~Q(user_id__in=ids[:1]) | Q(
        user_id__in=ids[:1], submitted_at__lte=due + timedelta(days=3)
    )
    windows = {7: Q(submitted_at__lte=due), 8: late}
    key = ("user_id", "scenario", "answer_scenario")

    def by_key(rows):
        return {tuple(r[k] for k in key): r for r in rows}

    assert by_key(dashboard.answer_counts(ids, {7: (windows[7], due), 8: (late, due)})) == by_key(
        scan.answer_counts(cohort, windows)
    )
    assert same(dashboard.sentence_accuracy_over_time(ids, now=NOW)) == same(
        scan.sentence_accuracy_over_time(cohort, now=NOW)
    )
    assert same(dashboard.per_scenario_stats(ids, NOW)) == same(
        scan.per_scenario_stats(cohort, NOW)
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=history)
def test_counters_kept_live_show_the_numbers_a_scan_of_the_attempts_shows(rows):
    users = learners()
    store(users, rows, live=True)
    assert_matches_the_scan(users)
    # The live counters are exactly what a rebuild from the raw attempts writes.
    ids = [u.pk for u in users]
    assert summaries.stale_users(ids) == []
    before = summaries.stored(ids)
    summaries.rebuild_users(ids)
    assert summaries.stored(ids) == before


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=history)
def test_rebuilt_counters_show_the_numbers_a_scan_shows(rows):
    users = learners()
    store(users, rows, live=False)  # e.g. an import past the write path
    ids = [u.pk for u in users]
    graded = [r for r in rows if r["submitted"] is not None]
    assert summaries.stale_users(ids) == (sorted({ids[r["learner"]] for r in graded}))
    out = StringIO()
    call_command("rebuild_stats", stdout=out)
    assert summaries.stale_users(ids) == []
    assert_matches_the_scan(users)
    call_command("rebuild_stats", "--check", stdout=out)
    assert "0 differ" in out.getvalue()


def test_a_grade_submitted_twice_counts_once(people, monkeypatch):
    from drills.trainer import services
    from drills.trainer.grading import Diagnosis
    from tests.factories import TraceFactory

    ada = people["ada"]
    trace = TraceFactory(scenario="straggler")
    a = Attempt.objects.create(
        user=ada, trace=trace, scenario="straggler", served_at=NOW - timedelta(seconds=50)
    )
    monkeypatch.setattr(services.timezone, "now", lambda: NOW)
    diagnosis = Diagnosis(scenario="straggler", measurement="", fix="", expected_step_ms=100.0)
    services.submit_diagnosis(a, diagnosis)
    services.submit_diagnosis(a, diagnosis)
    assert ScenarioTally.objects.get(user=ada).n == 1
    stats = dashboard.learner_stats(ada, NOW)
    assert stats["totals"]["graded"] == 1
    assert dashboard.streak(ada, NOW) == {"days": 1, "done_today": True}
    assert summaries.stale_users([ada.pk]) == []


def test_math_answers_are_counted_when_graded(people):
    from drills.mentalmath import services

    ada = people["ada"]
    attempt = services.start_single(ada, "busbw")
    problem = services.problem_of(attempt)
    assert services.submit_answer(attempt, problem.answer_text).graded_now
    assert not services.submit_answer(attempt, problem.answer_text).graded_now
    row = next(m for m in dashboard.math_stats(ada, NOW) if m["family"] == "busbw")
    assert (row["attempts"], row["correct"]) == (1, 1)
    assert MathAttempt.objects.filter(user=ada).graded().count() == 1
    assert summaries.stale_users([ada.pk]) == []


def test_the_data_migration_fills_the_counters_a_rebuild_writes(people):
    import importlib

    from django.apps import apps

    ada, bob = people["ada"], people["bob"]
    rows = [
        {"learner": k % 2, "scenario": s, "answer": s if k % 3 else "", "mode": "timed",
         "ago_s": 3600.0 * k, "elapsed": 30.0 + k, "submitted": True, "m": True, "f": False,
         "w": None, "step": True, "gap": None, "value": False, "expected": True, "over": False}
        for k, s in enumerate(SLUGS)
    ]  # fmt: skip
    store([ada, bob], rows, live=False)
    migration = importlib.import_module("drills.migrations.0007_stats_summaries")
    migration.fill_from_raw_attempts(apps, None)
    assert summaries.stale_users([ada.pk, bob.pk]) == []
    assert ScenarioTally.objects.filter(user__in=[ada, bob]).count() == len(SLUGS)
