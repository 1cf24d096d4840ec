"""A drill start that finds nothing prepared generates its trace with no transaction open.

Generating takes seconds. Inside the deal's transaction it would hold the deal's locks that long:
on SQLite, whose transactions take the database's one write lock when they begin, every other
learner's write (a grade, a math answer, a pool refill) would wait for it. These tests record,
at the moment the engine is called on the request, whether a transaction is open, and on SQLite
that another learner can write meanwhile.
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from content import renarration
from content.models import ReadMark
from content.pages import get_page
from drills import scheduling
from drills.interview import services as interview
from drills.models import Attempt, Card, LearnerProfile, PreparedTrial
from drills.trainer import services
from drills.trainer.grading import Diagnosis
from scenarios import engine, pool
from scenarios.models import Trace

pytestmark = pytest.mark.django_db(transaction=True)

CHEAP_PAIR = scheduling.pair_key("healthy", "launch-bound")


@pytest.fixture
def engine_calls(monkeypatch, make_user):
    """Every engine call on the request's thread: was a transaction open, and could another
    learner write while it ran."""
    calls: list[dict[str, bool]] = []
    bystander = make_user("bystander")
    real_generate, real_pair = engine.generate, engine.generate_pair

    def other_learner_writes() -> bool:
        done = threading.Event()

        def write() -> None:
            try:
                with transaction.atomic():
                    LearnerProfile.objects.get_or_create(user=bystander)
                    LearnerProfile.objects.filter(user=bystander).update(streak_opt_in=True)
                done.set()
            finally:
                connections.close_all()

        t = threading.Thread(target=write, daemon=True)
        t.start()
        finished = done.wait(3)
        if not finished:
            t.join(30)  # let it finish once the deal commits, before the test tears down
        return finished

    request_thread = threading.get_ident()

    def record() -> None:
        if threading.get_ident() != request_thread:
            return  # the worker's own draws (embedded mode runs them in threads)
        calls.append(
            {
                "in_transaction": connection.in_atomic_block,
                "others_can_write": other_learner_writes(),
            }
        )

    def generate(*a, **kw):
        record()
        return real_generate(*a, **kw)

    def generate_pair(*a, **kw):
        record()
        return real_pair(*a, **kw)

    monkeypatch.setattr(engine, "generate", generate)
    monkeypatch.setattr(engine, "generate_pair", generate_pair)
    monkeypatch.setattr(pool, "schedule_refill", lambda scenario: None)
    return calls


def _only_call(calls):
    assert len(calls) == 1, calls
    return calls[0]


def test_a_drill_start_with_an_empty_pool(make_user, engine_calls, monkeypatch):
    monkeypatch.setattr(services, "next_scenario", lambda *a, **kw: "launch-bound")
    learner = make_user()

    attempt, dealt = services.next_drill(learner)

    assert dealt and attempt.scenario == "launch-bound"
    assert attempt.trace.source == Trace.Source.ON_DEMAND and attempt.trace.claimed_by == learner
    call = _only_call(engine_calls)
    assert call == {"in_transaction": False, "others_can_write": True}


def test_a_contrast_trial_with_nothing_prepared(make_user, engine_calls):
    learner = make_user()
    confused = services.start_drill(learner, scenario="launch-bound")
    key = confused.trace.key
    services.submit_diagnosis(  # answered healthy: the pair's card falls due now
        confused, Diagnosis("healthy", key["measurement"], key["fix"], 1.0)
    )
    assert Card.objects.filter(user=learner, kind=Card.Kind.PAIR, item=CHEAP_PAIR).exists()
    PreparedTrial.objects.filter(user=learner).delete()  # the worker has not drawn it yet
    engine_calls.clear()

    trial, dealt = services.next_drill(learner)

    assert dealt and trial.kind == Attempt.Kind.CONTRAST and trial.item == CHEAP_PAIR
    assert {trial.trace.scenario, trial.partner.scenario} == {"healthy", "launch-bound"}
    assert _only_call(engine_calls) == {"in_transaction": False, "others_can_write": True}


def test_a_mock_interview_trace_with_an_empty_pool(make_user, engine_calls, monkeypatch):
    monkeypatch.setattr(services, "next_scenario", lambda *a, **kw: "launch-bound")
    learner = make_user()
    mock = interview.start(learner)

    first = interview.next_attempt(mock)

    assert first is not None and first.interview_id == mock.pk
    assert first.trace.source == Trace.Source.ON_DEMAND
    assert _only_call(engine_calls) == {"in_transaction": False, "others_can_write": True}


def test_a_start_for_one_scenario_with_an_empty_pool(make_user, engine_calls):
    learner = make_user()

    attempt = services.start_drill(learner, scenario="launch-bound")

    assert attempt.scenario == "launch-bound" and attempt.trace.claimed_by == learner
    assert _only_call(engine_calls) == {"in_transaction": False, "others_can_write": True}


def test_the_second_pass_deals_what_the_first_chose_and_drew(make_user, engine_calls, monkeypatch):
    """The scheduler is asked once per deal: the pass after the draw deals the drawn trace even
    if the scheduler would now pick otherwise, or a refill stocked the pool meanwhile."""
    asked: list[str] = []
    picks = iter(["launch-bound", "healthy"])

    def next_scenario(*a, **kw):
        asked.append(next(picks))
        return asked[-1]

    monkeypatch.setattr(services, "next_scenario", next_scenario)
    monkeypatch.setattr(services, "STOCK_TRIES", 1)
    learner = make_user()
    real = pool.on_demand_row

    def draw_while_stock_arrives(scenario):
        row = real(scenario)
        pool.build_trace("healthy", 77).save(force_insert=True)  # a refill lands meanwhile
        return row

    monkeypatch.setattr(pool, "on_demand_row", draw_while_stock_arrives)

    attempt, _ = services.next_drill(learner)

    assert asked == ["launch-bound"]
    assert attempt.scenario == "launch-bound" and attempt.trace.source == Trace.Source.ON_DEMAND
    assert Trace.objects.unclaimed().filter(scenario="healthy").count() == 1
    assert Attempt.objects.filter(user=learner).count() == 1


def test_a_first_renarration_of_a_walkthrough(make_user, engine_calls):
    learner = make_user()
    page = get_page("walkthrough-launch-bound-inference")
    mark = ReadMark.objects.create(user=learner, slug=page.slug)
    ReadMark.objects.filter(pk=mark.pk).update(read_at=timezone.now() - timedelta(days=2))

    attempt = renarration.start(learner, page.slug)

    assert attempt.kind == Attempt.Kind.RENARRATION and attempt.trace.seed == page.seed
    assert _only_call(engine_calls) == {"in_transaction": False, "others_can_write": True}
