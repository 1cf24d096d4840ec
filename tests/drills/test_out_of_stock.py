"""A drill start deals from stock: a scenario whose pool ran dry waits for its refill and the
scheduler's next choice is dealt, instead of a learner waiting while a trace is generated."""

from __future__ import annotations

import pytest

from drills.models import Attempt
from drills.trainer import services
from scenarios import engine, pool
from scenarios.models import Trace


@pytest.fixture
def refills(monkeypatch):
    asked: list[str] = []
    monkeypatch.setattr(pool, "schedule_refill", asked.append)
    return asked


@pytest.fixture
def scheduler_prefers(monkeypatch):
    """The scheduler's choices, in the order given, honouring what the caller leaves out."""

    def prefer(*order: str) -> None:
        def next_scenario(user, now=None, *, recent=None, held=None, exclude=frozenset()):
            return next(s for s in order if s not in exclude)

        monkeypatch.setattr(services, "next_scenario", next_scenario)

    return prefer


@pytest.fixture
def first_choice_dry(scheduler_prefers):
    """The scheduler prefers straggler (none in stock), then healthy (one in stock)."""
    pool.refill("healthy", target=1)
    scheduler_prefers("straggler", "healthy", "sync-stalls")


def assert_dealt_healthy_from_stock(attempt, refills) -> None:
    assert attempt.scenario == "healthy"
    assert attempt.trace.source == Trace.Source.POOL
    assert not Trace.objects.filter(source=Trace.Source.ON_DEMAND).exists()
    assert "straggler" in refills  # the dry scenario's refill is asked for


@pytest.mark.django_db
def test_a_scenario_out_of_stock_yields_to_the_next_choice(make_user, refills, first_choice_dry):
    learner = make_user()

    attempt = services.start_drill(learner)

    assert_dealt_healthy_from_stock(attempt, refills)


@pytest.mark.django_db
def test_the_dry_scenario_comes_back_once_restocked(make_user, refills, first_choice_dry):
    learner = make_user()
    first = services.start_drill(learner)
    Attempt.objects.filter(pk=first.pk).update(submitted_at=first.served_at)

    pool.refill("straggler", target=1)
    again = services.start_drill(learner)

    assert again.scenario == "straggler"


@pytest.mark.django_db
def test_when_every_choice_is_dry_the_first_is_generated(make_user, refills, scheduler_prefers):
    scheduler_prefers("straggler", "healthy", "sync-stalls", "launch-bound")
    pool.refill("launch-bound", target=1)  # the fourth choice: beyond what a start tries
    learner = make_user()

    attempt = services.start_drill(learner)

    assert services.STOCK_TRIES == 3
    assert attempt.scenario == "straggler"
    assert attempt.trace.source == Trace.Source.ON_DEMAND
    assert attempt.trace.claimed_by == learner
    assert Trace.objects.unclaimed().filter(scenario="launch-bound").count() == 1
    assert {"straggler", "healthy", "sync-stalls"} <= set(refills)


@pytest.mark.django_db
def test_an_asked_for_scenario_is_never_swapped(make_user, refills):
    pool.refill("healthy", target=1)
    learner = make_user()

    attempt = services.start_drill(learner, scenario="straggler")

    assert attempt.scenario == "straggler"
    assert attempt.trace.source == Trace.Source.ON_DEMAND


@pytest.mark.django_db
def test_with_the_real_scheduler_a_new_learner_gets_what_is_in_stock(
    make_user, refills, monkeypatch
):
    monkeypatch.setattr(services, "STOCK_TRIES", len(engine.SCENARIOS))
    pool.refill("memory-bound-kernel", target=3)
    learner = make_user()

    attempt = services.start_drill(learner)

    assert attempt.scenario == "memory-bound-kernel"
    assert attempt.trace.source == Trace.Source.POOL


@pytest.mark.django_db
def test_the_drill_page_deals_from_stock(learner_client, learner, refills, first_choice_dry):

    response = learner_client.post("/drill/next/", {"mode": "timed"})

    attempt = Attempt.objects.get(user=learner)
    assert response.status_code == 302 and str(attempt.pk) in response["Location"]
    assert_dealt_healthy_from_stock(attempt, refills)
