"""drills.scheduling: pure scheduler tests (no Django, no database)."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone

import fsrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drills import scheduling as sch
from scenarios import engine
from tests.conftest import DESIGN_SLUGS

T0 = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)

SLUGS = list(DESIGN_SLUGS)
WEIGHTS = {s: (2 if s == "healthy" else 1) for s in SLUGS}


@dataclass(frozen=True)
class Grade:
    scenario_correct: bool = True
    measurement_correct: bool = True
    fix_correct: bool = True
    win_correct: bool = True
    elapsed_s: float = 45.0
    over_time: bool = False
    practice: bool = False


A, H, G = fsrs.Rating.Again, fsrs.Rating.Hard, fsrs.Rating.Good


# --------------------------------------------------------------------------- rating map

RATING_TABLE = [
    # scenario, measurement, fix, win, elapsed, over_time -> rating
    (True, True, True, True, 45.0, False, G),
    (True, True, True, False, 45.0, False, G),  # win arithmetic does not count
    (True, True, True, True, 90.0, False, G),  # exactly 90 s is not slow
    (True, True, True, True, 90.5, False, H),  # slow
    (True, True, True, True, 120.0, False, H),  # exactly 2:00 is in time
    (True, True, True, True, 120.5, False, A),  # past 2:00
    (True, True, True, True, 60.0, True, A),  # over_time flag wins
    (True, False, True, True, 45.0, False, H),  # measurement wrong
    (True, True, False, True, 45.0, False, H),  # fix wrong
    (True, False, False, True, 45.0, False, H),  # both wrong: still a pass
    (True, False, False, False, 100.0, False, H),
    (False, True, True, True, 20.0, False, A),  # wrong scenario
    (False, False, False, False, 200.0, True, A),
]


@pytest.mark.parametrize(("sc", "meas", "fix", "win", "elapsed", "over", "expected"), RATING_TABLE)
def test_rating_map(sc, meas, fix, win, elapsed, over, expected):
    grade = Grade(sc, meas, fix, win, elapsed, over)
    assert sch.rating_for(grade) == expected


@given(
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.floats(0, 1000, allow_nan=False),
    st.booleans(),
)
def test_rating_never_easy_and_wrong_is_again(sc, meas, fix, win, elapsed, over):
    rating = sch.rating_for(Grade(sc, meas, fix, win, elapsed, over))
    assert rating != fsrs.Rating.Easy
    if not sc or over or elapsed > 120:
        assert rating == A
    else:
        assert rating in (H, G)


def test_practice_does_not_count():
    assert sch.counts_for_schedule(Grade())
    assert not sch.counts_for_schedule(Grade(practice=True))
    # the rating itself is still computed (shown to the learner), only scheduling skips it
    assert sch.rating_for(Grade(practice=True)) == G


def test_practice_attempts_leave_rebuilt_card_unchanged():
    attempts = [
        (T0, Grade()),
        (T0 + timedelta(hours=1), Grade(practice=True, scenario_correct=False)),
        (T0 + timedelta(days=2), Grade(elapsed_s=100)),
    ]
    counted = [(t, sch.rating_for(g)) for t, g in attempts if sch.counts_for_schedule(g)]
    assert sch.rebuild(counted) == sch.rebuild([(T0, G), (T0 + timedelta(days=2), H)])


# --------------------------------------------------------------------------- card state


def test_new_card_is_due_and_unreviewed():
    s = sch.new_card_state()
    assert sch.due(s) <= T0
    assert sch.retrievability(s, T0) == 0.0
    assert sch.retrievability(None, T0) == 0.0


def test_review_good_schedules_into_future_and_keeps_input():
    s0 = sch.new_card_state()
    frozen = json.dumps(s0, sort_keys=True)
    s1 = sch.review(s0, G, T0)
    assert json.dumps(s0, sort_keys=True) == frozen
    assert sch.due(s1) > T0
    assert sch.retrievability(s1, T0) == pytest.approx(1.0)


def test_higher_desired_retention_means_shorter_intervals():
    s = sch.new_card_state()
    for i in range(4):
        s = sch.review(s, G, T0 + timedelta(days=3 * i))
    now = T0 + timedelta(days=10)
    hi = sch.review(s, G, now, desired_retention=0.95)
    lo = sch.review(s, G, now, desired_retention=0.85)
    assert sch.due(hi) < sch.due(lo)


def test_naive_datetime_rejected():
    with pytest.raises(ValueError):
        sch.review(sch.new_card_state(), G, datetime(2025, 1, 1))


def test_non_utc_aware_datetime_is_accepted():
    cet = timezone(timedelta(hours=1))
    a = sch.review(sch.new_card_state(), G, T0.astimezone(cet))
    b = sch.review(sch.new_card_state(), G, T0)
    assert a == b


ratings = st.sampled_from([A, H, G])
gaps = st.floats(min_value=0.0, max_value=40.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(gaps, ratings), min_size=0, max_size=15))
def test_json_round_trip(history):
    s = sch.new_card_state()
    t = T0
    for gap, r in history:
        t = t + timedelta(days=gap)
        s = sch.review(s, r, t)
        back = json.loads(json.dumps(s))
        assert back == s
        assert sch.due(back) == sch.due(s)
        assert sch.retrievability(back, t + timedelta(days=3)) == sch.retrievability(
            s, t + timedelta(days=3)
        )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(gaps, ratings), min_size=0, max_size=15))
def test_rebuild_equals_incremental(history):
    s = sch.new_card_state()
    t = T0
    log = []
    for gap, r in history:
        t = t + timedelta(days=gap)
        s = sch.review(s, r, t)
        log.append((t, r))
    assert sch.rebuild(log) == s
    if len({t for t, _ in log}) == len(log):  # rows in any order give the same card
        assert sch.rebuild(list(reversed(log))) == s


# --------------------------------------------------------------------------- twins


def test_twin_map_both_directions():
    assert sch.twin_of("straggler") == "bandwidth-bound-collective"
    assert sch.twin_of("bandwidth-bound-collective") == "straggler"
    assert sch.twin_of("recompilation") == "input-starvation"
    assert sch.twin_of("input-starvation") == "recompilation"
    assert sch.twin_of("healthy") is None
    for a, b in engine.lookalike_pairs():
        assert sch.twin_of(a) == b and sch.twin_of(b) == a
        assert a in SLUGS and b in SLUGS


def test_twin_pull_target():
    assert sch.twin_pull_target("straggler", "bandwidth-bound-collective") == (
        "bandwidth-bound-collective"
    )
    assert sch.twin_pull_target("straggler", "straggler") is None
    assert sch.twin_pull_target("straggler", "healthy") is None
    assert sch.twin_pull_target("healthy", None) is None


def test_pull_due_now_only_moves_due():
    s = sch.review(sch.new_card_state(), G, T0)
    s = sch.review(s, G, T0 + timedelta(minutes=10))  # graduates: due in days
    now = T0 + timedelta(hours=2)
    assert sch.due(s) > now
    pulled = sch.pull_due_now(s, now)
    assert sch.due(pulled) == now
    assert {k: v for k, v in pulled.items() if k != "due"} == {
        k: v for k, v in s.items() if k != "due"
    }
    assert sch.is_due(pulled, now)
    # an already-overdue card keeps its earlier due date
    late = now + timedelta(days=30)
    assert sch.pull_due_now(s, late) == s
    # an unseen twin gets a fresh card due now
    fresh = sch.pull_due_now(None, now)
    assert sch.due(fresh) == now and sch.retrievability(fresh, now) == 0.0


def test_twin_pull_gets_twin_served_next():
    now = T0 + timedelta(days=1)
    cards: dict[str, dict | None] = {}
    for s in SLUGS:
        c = sch.review(sch.new_card_state(), G, T0)
        cards[s] = sch.review(c, G, T0 + timedelta(minutes=10))
    # learner drilled straggler and answered its twin: straggler -> Again, twin pulled
    cards["straggler"] = sch.review(cards["straggler"], A, now)
    cards["bandwidth-bound-collective"] = sch.pull_due_now(cards["bandwidth-bound-collective"], now)
    nxt = sch.pick_next(cards, now, rng=random.Random(1), weights=WEIGHTS, recent=["straggler"])
    assert nxt == "bandwidth-bound-collective"


def test_lookalike_twin_served_next_when_nothing_due():
    now = T0 + timedelta(hours=1)
    cards: dict[str, dict | None] = {s: sch.review(sch.new_card_state(), G, T0) for s in SLUGS}
    assert not any(sch.is_due(c, now) for c in cards.values())
    for slug in ("straggler", "recompilation", "input-starvation"):
        twin = sch.twin_of(slug)
        assert sch.pick_next(cards, now, rng=random.Random(2), recent=[slug]) == twin
    # the pair was just drilled side by side: no ping-pong back to the first twin
    nxt = sch.pick_next(
        cards, now, rng=random.Random(2), recent=["straggler", "bandwidth-bound-collective"]
    )
    assert nxt not in ("straggler", "bandwidth-bound-collective")


def test_due_weak_card_beats_undue_twin():
    now = T0 + timedelta(days=3)
    cards: dict[str, dict | None] = {s: sch.review(sch.new_card_state(), G, now) for s in SLUGS}
    cards["healthy"] = sch.review(sch.new_card_state(), A, T0)  # due and weak
    assert sch.pick_next(cards, now, rng=random.Random(2), recent=["straggler"]) == "healthy"


# --------------------------------------------------------------------------- picking


def _graduated(at: datetime) -> dict:
    s = sch.review(sch.new_card_state(), G, at)
    return sch.review(s, G, at + timedelta(minutes=10))


def test_due_first_lowest_retrievability_first():
    cards: dict[str, dict | None] = dict.fromkeys(SLUGS)  # unseen ones wait
    cards["straggler"] = _graduated(T0 - timedelta(days=20))  # due, weakest
    cards["healthy"] = _graduated(T0 - timedelta(days=5))  # due, stronger
    cards["launch-bound"] = _graduated(T0)  # not due
    now = T0 + timedelta(days=1)
    rng = random.Random(0)
    assert sch.retrievability(cards["straggler"], now) < sch.retrievability(cards["healthy"], now)
    assert sch.pick_next(cards, now, rng=rng, weights=WEIGHTS) == "straggler"
    cards["straggler"] = _graduated(now)
    assert sch.pick_next(cards, now, rng=rng, weights=WEIGHTS) == "healthy"
    cards["healthy"] = _graduated(now)
    # nothing due: an unseen one comes next
    assert sch.pick_next(cards, now, rng=rng, weights=WEIGHTS) not in (
        "straggler",
        "healthy",
        "launch-bound",
    )


def test_weak_due_card_comes_back_even_if_just_served():
    cards: dict[str, dict | None] = {s: _graduated(T0) for s in SLUGS}
    now = T0 + timedelta(days=60)
    cards["sync-stalls"] = _graduated(T0 - timedelta(days=200))  # far weaker
    for _ in range(3):
        assert (
            sch.pick_next(cards, now, rng=random.Random(3), recent=["sync-stalls"] * 3)
            == "sync-stalls"
        )


def test_equal_candidates_avoid_immediate_repeat():
    cards: dict[str, dict | None] = {s: _graduated(T0) for s in SLUGS}
    now = T0 + timedelta(days=400)  # all due, identical cards
    rng = random.Random(5)
    recent: list[str] = []
    served = []
    for _ in range(30):
        s = sch.pick_next(cards, now, rng=rng, weights=WEIGHTS, recent=recent[-5:])
        served.append(s)
        recent.append(s)
    assert all(a != b for a, b in itertools.pairwise(served))
    # with the last 5 served remembered, any 6 in a row are distinct
    assert all(len(set(served[i : i + 6])) == 6 for i in range(len(served) - 5))


def test_nothing_due_nothing_unseen_serves_lowest_retrievability():
    now = T0 + timedelta(days=1)
    cards: dict[str, dict | None] = {s: _graduated(now) for s in SLUGS}
    for s in SLUGS:
        cards[s] = sch.review(cards[s], G, now + timedelta(days=2))  # long intervals, not due
    later = now + timedelta(days=3)
    cards["recompilation"] = _graduated(T0 - timedelta(days=1))
    cards["recompilation"] = dict(
        cards["recompilation"], due=(later + timedelta(days=9)).isoformat()
    )
    assert not any(sch.is_due(c, later) for c in cards.values())
    assert sch.pick_next(cards, later, rng=random.Random(0)) == "recompilation"


def test_unseen_rotation_weights_healthy_double():
    cards: dict[str, dict | None] = dict.fromkeys(SLUGS)
    rng = random.Random(1234)
    n = 24_000
    counts = Counter(sch.pick_next(cards, T0, rng=rng, weights=WEIGHTS) for _ in range(n))
    others = [counts[s] for s in SLUGS if s != "healthy"]
    mean_other = sum(others) / len(others)
    assert counts["healthy"] / mean_other == pytest.approx(2.0, rel=0.1)
    assert min(others) > 0.85 * n / 12 and max(others) < 1.15 * n / 12


def test_unseen_rotation_introduces_every_scenario():
    cards: dict[str, dict | None] = dict.fromkeys(SLUGS)
    rng = random.Random(9)
    order = []
    now = T0
    while any(v is None for v in cards.values()):
        s = sch.pick_next(cards, now, rng=rng, weights=WEIGHTS, recent=order[-3:])
        order.append(s)
        if cards[s] is None:
            cards[s] = _graduated(now)
        now += timedelta(minutes=2)
    assert sorted(set(order)) == sorted(SLUGS)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.sampled_from(SLUGS), max_size=6))
def test_pick_next_always_returns_a_known_slug(seed, recent):
    rng = random.Random(seed)
    cards: dict[str, dict | None] = {}
    for s in SLUGS:
        if rng.random() < 0.3:
            cards[s] = None
        else:
            cards[s] = _graduated(T0 - timedelta(days=rng.randint(0, 60)))
    assert sch.pick_next(cards, T0, rng=rng, weights=WEIGHTS, recent=recent) in SLUGS


def test_due_summary():
    now = datetime(2025, 3, 3, 12, 0, tzinfo=UTC)
    cards: dict[str, dict | None] = dict.fromkeys(SLUGS)
    cards["straggler"] = _graduated(now - timedelta(days=30))
    cards["healthy"] = _graduated(now - timedelta(days=10))
    cards["launch-bound"] = dict(
        _graduated(now), due=(now + timedelta(hours=3)).isoformat()
    )  # later today
    cards["sync-stalls"] = _graduated(now)  # in days
    summary = sch.due_summary(cards, now)
    assert summary["due_now"][0] == "straggler"
    assert set(summary["due_now"]) == {"straggler", "healthy"}
    assert summary["due_today"] == ["launch-bound"]
    assert [s for s, _ in summary["next"]] == ["launch-bound", "sync-stalls"]
    assert summary["next"][0][1] == now + timedelta(hours=3)
    assert "recompilation" in summary["unseen"] and "straggler" not in summary["unseen"]


def test_grade_dataclass_replace_helper_is_usable():
    # guards the Grade fixture shape used above against drift from GradeLike
    g = replace(Grade(), elapsed_s=100.0)
    assert sch.rating_for(g) == H


def test_retrievability_many_equals_each_cards_retrievability():
    """The vectorised recall the cohort pages use is the same number, bit for bit, as
    ``retrievability`` of each card (cards never reviewed read 0), at any moment."""
    import random as _random

    import numpy as np

    rng = _random.Random(3)
    now = datetime(2026, 12, 1, 6, 30, tzinfo=UTC)
    states = []
    for _ in range(400):
        state = sch.new_card_state()
        for k in range(rng.randint(0, 4)):
            when = now - timedelta(days=rng.uniform(0, 60) - k * 0.1)
            state = sch.review(state, rng.choice([1, 2, 3]), when)
        states.append(state)
    stability = np.array([s["stability"] if s.get("stability") else np.nan for s in states])
    last = np.array([sch.epoch_us(s["last_review"]) if s.get("last_review") else 0 for s in states])
    assert np.isnan(stability).any() and (~np.isnan(stability)).sum() > 300
    for when in (now, now + timedelta(days=3, hours=17), now - timedelta(days=5)):
        got = sch.retrievability_many(stability, last, when).tolist()
        assert got == [sch.retrievability(s, when) for s in states]
