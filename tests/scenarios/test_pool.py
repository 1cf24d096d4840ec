from __future__ import annotations

import pytest

from scenarios import engine, pool
from scenarios.models import Trace


@pytest.mark.django_db
def test_refill_tops_a_scenario_up_to_target_and_no_further(no_refill):
    assert pool.refill("healthy", target=3) == 3
    assert pool.stock()["healthy"] == 3
    assert pool.refill("healthy", target=3) == 0
    assert Trace.objects.filter(scenario="healthy").count() == 3


@pytest.mark.django_db
def test_refill_seeds_are_deterministic_so_a_redelivered_task_inserts_nothing(no_refill):
    first = pool.pool_seed("healthy", 0)
    assert first == pool.pool_seed("healthy", 0)
    assert first != pool.pool_seed("healthy", 1)
    row = pool.build_trace("healthy", first)
    assert pool._insert_once(row) == 1
    assert pool._insert_once(pool.build_trace("healthy", first)) == 0
    assert Trace.objects.filter(scenario="healthy").count() == 1


@pytest.mark.django_db
def test_claim_takes_each_trace_once(make_user, no_refill):
    pool.refill("exposed-allreduce", target=2)
    a, b, c = make_user(), make_user(), make_user()
    t1 = pool.claim(a, "exposed-allreduce")
    t2 = pool.claim(b, "exposed-allreduce")
    assert t1 and t2 and t1.pk != t2.pk
    assert pool.claim(c, "exposed-allreduce") is None
    assert Trace.objects.get(pk=t1.pk).claimed_by == a


@pytest.mark.django_db
def test_empty_pool_generates_on_the_spot_and_schedules_a_refill(
    make_user, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    asked = []
    monkeypatch.setattr(pool, "schedule_refill", asked.append)
    user = make_user()
    with caplog.at_level("WARNING"):
        trace = pool.claim_or_generate(user, "healthy")
    assert trace.claimed_by == user
    assert trace.source == Trace.Source.ON_DEMAND
    assert asked == ["healthy"]
    assert "pool empty" in caplog.text


@pytest.mark.django_db
def test_claim_below_low_water_enqueues_a_refill(make_user, monkeypatch):
    asked = []
    monkeypatch.setattr(pool, "schedule_refill", asked.append)
    pool.refill("healthy", target=2)
    pool.claim_or_generate(make_user(), "healthy")  # 1 left, low water is 1: no refill yet
    assert asked == []
    pool.claim_or_generate(make_user(), "healthy")  # 0 left
    assert asked == ["healthy"]


@pytest.mark.django_db
def test_stock_lists_every_scenario(no_refill):
    stock = pool.stock()
    assert set(stock) == set(engine.SCENARIOS)
    assert all(v == 0 for v in stock.values())


@pytest.mark.django_db
def test_stored_row_round_trips_to_the_same_trace(no_refill):
    row = pool.build_trace("exposed-allreduce", 7)
    row.save()
    again = Trace.objects.get(pk=row.pk).load()
    fresh = engine.generate("exposed-allreduce", 7)
    assert again.n_events == fresh.n_events == row.n_events
    assert engine.perfetto_bytes(again) == engine.perfetto_bytes(fresh)


@pytest.mark.django_db
def test_stock_an_earlier_engine_made_is_never_dealt_and_is_replaced(make_user, no_refill):
    """After an engine change lands, the pool's unclaimed stock of the old generator was dealt
    until it ran out: traces whose events and keys the content and audits no longer describe."""
    pool.refill("healthy", target=2)
    old = set(Trace.objects.values_list("pk", flat=True))
    Trace.objects.filter(pk__in=old).update(generator_version="0-old")
    assert pool.stock()["healthy"] == 0
    assert pool.claim(make_user(), "healthy") is None
    assert pool.refill("healthy", target=2) == 2  # topped up beside the old rows, new seeds
    taken = pool.claim(make_user(), "healthy")
    assert taken is not None and taken.pk not in old
    assert taken.generator_version == engine.GENERATOR_VERSION
    assert Trace.objects.filter(pk__in=old, claimed_at__isnull=True).count() == 2


@pytest.mark.django_db
def test_a_seed_that_hosts_no_workload_is_skipped_and_the_pool_still_fills(
    no_refill, monkeypatch, caplog
):
    # one pool seed whose workload draws all miss (engine.NoHostingWorkload, about once in
    # 10^13 seeds): the refill skips it and the next seed fills its slot
    bad = pool.pool_seed("healthy", 1)
    generate = engine.generate

    def flaky(scenario, seed, **kw):
        if seed == bad:
            raise engine.NoHostingWorkload(f"no ddp workload drawn for seed {seed}")
        return generate(scenario, seed, **kw)

    monkeypatch.setattr(engine, "generate", flaky)
    assert pool.refill("healthy", target=3) == 3
    seeds = set(Trace.objects.filter(scenario="healthy").values_list("seed", flat=True))
    assert bad not in seeds and len(seeds) == 3
    assert pool.pool_seed("healthy", 3) in seeds
    assert "hosts no workload: skipped" in caplog.text


@pytest.mark.django_db
def test_a_refill_whose_seeds_keep_missing_says_so_instead_of_looping(no_refill, monkeypatch):
    def never(scenario, seed, **kw):
        raise engine.NoHostingWorkload(f"no ddp workload drawn for seed {seed}")

    monkeypatch.setattr(engine, "generate", never)
    with pytest.raises(engine.NoHostingWorkload):
        pool.refill("healthy", target=2)
    assert not Trace.objects.filter(scenario="healthy").exists()


@pytest.mark.django_db
def test_an_on_demand_trace_draws_another_seed_when_one_hosts_no_workload(monkeypatch):
    generate, calls = engine.generate, []

    def first_misses(scenario, seed, **kw):
        calls.append(seed)
        if len(calls) == 1:
            raise engine.NoHostingWorkload(f"no ddp workload drawn for seed {seed}")
        return generate(scenario, seed, **kw)

    monkeypatch.setattr(engine, "generate", first_misses)
    row = pool.on_demand_row("healthy")
    assert row.scenario == "healthy" and row.seed == calls[1] and len(calls) == 2


@pytest.mark.django_db
def test_beat_runs_refill_pool_which_without_a_scenario_tops_up_every_short_one(
    no_refill, settings
):
    from scenarios.tasks import refill_pool

    entry = next(e for e in settings.CELERY_BEAT_SCHEDULE.values() if "refill" in e["task"])
    assert entry["task"] == pool.REFILL_TASK == refill_pool.name
    assert not entry.get("args")  # no scenario: all of them
    settings.TRACETRACK = {**settings.TRACETRACK, "POOL_TARGET": 1}
    pool.refill("healthy", target=1)  # one scenario already at target
    made = refill_pool()
    assert made == len(engine.SCENARIOS) - 1
    assert set(pool.stock().values()) == {1}
    assert refill_pool() == 0  # nothing under target: nothing made
