"""One card-update path: what the live review path writes, replaying the raw attempts rebuilds.

Histories are generated (seeded): right answers, lookalike confusions in all four directions,
other wrong answers, slow and over-time answers, practice and Perfetto-only attempts, and contrast
trials on confused pairs (right, wrong, slow, over time, abandoned). Each is submitted through the
live path (``submit_diagnosis``, ``contrast.submit``, ``close_attempt``) on traces the engine
really generated; then the cards are thrown away and rebuilt from the attempts."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from drills import scheduling
from drills.contrast import services as contrast
from drills.models import Attempt, Card
from drills.scheduling.cards import rebuild_user
from drills.trainer import services
from drills.trainer.grading import Diagnosis
from scenarios import engine
from scenarios.models import Trace
from tests.factories import AttemptFactory, TraceFactory, UserFactory

pytestmark = pytest.mark.django_db

TWIN_DIRECTIONS = [
    (true, twin) for a, b in engine.lookalike_pairs() for true, twin in ((a, b), (b, a))
]
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def submit(user, true, answer, served: datetime, elapsed: float, monkeypatch, *, right=True, **kw):
    """Serve a real trace of ``true`` at ``served`` and answer ``answer`` ``elapsed`` s later."""
    attempt = AttemptFactory(user=user, scenario=true, served_at=served, **kw)
    key = attempt.trace.key
    monkeypatch.setattr(timezone, "now", lambda: served + timedelta(seconds=elapsed))
    diagnosis = Diagnosis(
        scenario=answer,
        measurement=key["measurement"] if right else "not-a-measurement",
        fix=key["fix"],
        expected_step_ms=float(key["expected_step_ms"]),
    )
    services.submit_diagnosis(attempt, diagnosis)
    monkeypatch.undo()
    return served + timedelta(seconds=elapsed)


def trial(user, pair: str, target: str, pick: str, served: datetime, elapsed: float, mp, **kw):
    """Serve a contrast trial on ``pair`` asking for ``target`` and answer by picking the trace of
    ``pick`` ``elapsed`` s later (``abandon=True``: give it up instead)."""
    a, b = scheduling.pair_of(pair)
    left, right = (TraceFactory(scenario=s, source=Trace.Source.CONTRAST) for s in (a, b))
    attempt = Attempt.objects.create(
        user=user, trace=left, partner=right, scenario=target, item=pair,
        kind=Attempt.Kind.CONTRAST, served_at=served,
    )  # fmt: skip
    mp.setattr(timezone, "now", lambda: served + timedelta(seconds=elapsed))
    if kw.get("abandon"):
        services.close_attempt(attempt, "abandoned")
    else:
        side = contrast.LEFT if pick == a else contrast.RIGHT
        target_key, other_key = (left.key, right.key) if target == a else (right.key, left.key)
        telling = contrast.telling_measurements(target_key, other_key)
        right = kw.get("right", True) and telling
        contrast.submit(attempt, side, telling[0] if right else "nope")
    mp.undo()
    return attempt


def cards_of(user) -> dict[tuple[str, str], tuple]:
    return {
        (c.kind, c.item): (c.state, c.due, c.reviews, c.last_review)
        for c in Card.objects.filter(user=user, kind__in=[Card.Kind.SCENARIO, Card.Kind.PAIR])
    }


@pytest.mark.parametrize(("true", "twin"), TWIN_DIRECTIONS)
def test_naming_the_lookalike_pulls_its_card_due_now_in_either_direction(true, twin, monkeypatch):
    user = UserFactory()
    answered_at = submit(user, true, twin, START, 45, monkeypatch)
    pulled = Card.objects.get(user=user, kind=Card.Kind.SCENARIO, item=twin)
    assert pulled.due == answered_at
    assert pulled.reviews == 0  # pulled, not reviewed: its memory state is untouched
    assert Card.objects.get(user=user, kind=Card.Kind.SCENARIO, item=true).reviews == 1
    # The confused pair's card is pulled due too (a contrast trial will review it).
    pair = Card.objects.get(user=user, kind=Card.Kind.PAIR)
    assert pair.item == scheduling.pair_key(true, twin) and pair.due == answered_at

    before = cards_of(user)
    Card.objects.filter(user=user).delete()
    rebuild_user(user)
    assert cards_of(user) == before


def history(rng: random.Random, n: int) -> list[tuple[str, str, float, str, bool]]:
    """(true, answered, elapsed_s, mode, measurement right) rows; every twin direction once."""
    slugs = list(engine.SCENARIOS)
    rows = [(true, twin, 50.0, "timed", True) for true, twin in TWIN_DIRECTIONS]
    for _ in range(n):
        true = rng.choice(slugs)
        roll = rng.random()
        if roll < 0.55:
            answer = true
        elif roll < 0.8 and engine.lookalike_of(true):
            answer = engine.lookalike_of(true) or true
        else:
            answer = rng.choice(slugs)
        elapsed = rng.choice([20.0, 60.0, 95.0, 121.0, 130.0])
        mode = rng.choices(["timed", "practice", "perfetto"], weights=[6, 1, 1])[0]
        rows.append((true, answer, elapsed, mode, rng.random() < 0.8))
    rng.shuffle(rows)
    return rows


@pytest.mark.parametrize("seed", [1, 2])
def test_replaying_raw_attempts_reproduces_the_live_cards(seed, monkeypatch):
    rng = random.Random(seed)
    ada, bob = UserFactory(), UserFactory()
    when = START
    trials = 0
    for true, answer, elapsed, mode, right in history(rng, 16):
        when += timedelta(hours=rng.choice([1, 5, 20, 30, 70]))
        submit(ada, true, answer, when, elapsed, monkeypatch, mode=mode, right=right)
        if answer != true and mode != "practice":
            # The confused pair's trial: picked right or wrong, in time or slow, or given up.
            when += timedelta(minutes=3)
            pair = scheduling.pair_key(true, answer)
            pick = rng.choice([true, answer])
            secs = rng.choice([10.0, 35.0, 50.0])
            trial(ada, pair, true, pick, when, secs, monkeypatch, right=right,
                  abandon=rng.random() < 0.15)  # fmt: skip
            trials += 1
    submit(bob, "straggler", "bandwidth-bound-collective", START, 30, monkeypatch)
    live_ada, live_bob = cards_of(ada), cards_of(bob)
    graded = Attempt.objects.filter(user=ada).graded()
    assert graded.count() == 16 + len(TWIN_DIRECTIONS) + trials
    assert graded.filter(kind=Attempt.Kind.CONTRAST).count() == trials >= len(TWIN_DIRECTIONS)
    for true, twin in TWIN_DIRECTIONS:
        assert (Card.Kind.SCENARIO, twin) in live_ada
        assert live_ada[(Card.Kind.PAIR, scheduling.pair_key(true, twin))][2] >= 1  # reviewed

    Card.objects.filter(user=ada).delete()
    Card.objects.filter(user=bob, item="straggler").update(reviews=99)
    call_command("rebuild_cards")
    assert cards_of(ada) == live_ada
    assert cards_of(bob) == live_bob
    call_command("rebuild_cards")  # idempotent
    assert cards_of(ada) == live_ada

    # --user rebuilds that learner only; --dry-run writes nothing.
    Card.objects.filter(user=bob).update(reviews=7)
    call_command("rebuild_cards", user=ada.username)
    assert set(Card.objects.filter(user=bob).values_list("reviews", flat=True)) == {7}
    call_command("rebuild_cards", user=bob.username, dry_run=True)
    assert set(Card.objects.filter(user=bob).values_list("reviews", flat=True)) == {7}
    call_command("rebuild_cards", user=bob.username)
    assert cards_of(bob) == live_bob
