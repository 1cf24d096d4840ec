"""Contrast-trial scheduling rules (pure: no database)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import fsrs
import pytest

from drills import scheduling as S

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LOOKALIKE = S.pair_key("straggler", "bandwidth-bound-collective")
OTHER = S.pair_key("straggler", "healthy")


def test_a_pair_is_the_same_card_whichever_way_it_was_confused():
    assert S.pair_key("straggler", "healthy") == S.pair_key("healthy", "straggler")
    assert S.pair_of(S.pair_key("healthy", "straggler")) == ("healthy", "straggler")
    with pytest.raises(ValueError):
        S.pair_of("healthy|healthy")
    with pytest.raises(ValueError):
        S.pair_of("healthy|no-such-scenario")


@pytest.mark.parametrize(
    ("true", "answered", "pair"),
    [
        ("straggler", "bandwidth-bound-collective", LOOKALIKE),
        ("healthy", "straggler", OTHER),
        ("straggler", "straggler", None),  # right
        ("straggler", "", None),  # a blank answer (a miss on the clock) names nothing
        ("straggler", None, None),
        ("pipeline-bubbles", "launch-bound", None),  # no workload hosts both: no trial possible
    ],
)
def test_only_naming_another_scenario_makes_a_confused_pair(true, answered, pair):
    assert S.confusion_pair(true, answered) == pair


@pytest.mark.parametrize(
    ("picked", "measurement", "elapsed", "over", "rating"),
    [
        (True, True, 12.0, False, fsrs.Rating.Good),
        (True, True, 30.0, False, fsrs.Rating.Good),
        (True, True, 31.0, False, fsrs.Rating.Hard),  # slow
        (True, False, 12.0, False, fsrs.Rating.Hard),  # right trace, wrong measurement
        (False, True, 12.0, False, fsrs.Rating.Again),  # wrong trace
        (True, True, 46.0, False, fsrs.Rating.Again),  # past the 45 s clock
        (True, True, 20.0, True, fsrs.Rating.Again),
    ],
)
def test_trial_rating(picked, measurement, elapsed, over, rating):
    assert S.trial_rating(picked, measurement, elapsed, over) == rating
    grade = S.Grade(picked, measurement, True, True, elapsed, over, trial=True)
    assert S.rating_for(grade) == rating


def test_a_trial_grade_is_not_rated_as_a_diagnosis():
    # 40 s and everything right is Good for a drill but Hard for a 45 s trial.
    assert S.rating_for(S.Grade(True, True, True, True, 40.0, False)) == fsrs.Rating.Good
    assert S.rating_for(S.Grade(True, True, True, True, 40.0, False, trial=True)) == 2


def _pulled(now=NOW):
    return S.pull_due_now(None, now)


def test_a_due_pair_is_served_unless_a_trial_was_among_the_last_two_deals():
    pairs = {OTHER: _pulled()}
    assert S.pick_trial(pairs, NOW, recent_kinds=["drill", "drill"]) == OTHER
    assert S.pick_trial(pairs, NOW, recent_kinds=["contrast", "drill"]) is None
    assert S.pick_trial(pairs, NOW, recent_kinds=["drill", "contrast"]) is None
    assert S.pick_trial(pairs, NOW, recent_kinds=["contrast", "drill", "drill"]) == OTHER
    assert S.pick_trial({}, NOW) is None


def test_a_pair_not_yet_due_waits():
    reviewed = S.review(_pulled(), fsrs.Rating.Good, NOW)
    assert S.pick_trial({OTHER: reviewed}, NOW + timedelta(hours=1)) is None
    assert S.pick_trial({OTHER: reviewed}, S.due(reviewed)) == OTHER


def test_lookalike_pairs_first():
    # The other pair is weaker (never reviewed, R = 0) and more overdue, the lookalike still wins.
    pairs = {OTHER: _pulled(NOW - timedelta(days=3)), LOOKALIKE: _pulled()}
    assert S.pick_trial(pairs, NOW) == LOOKALIKE
    del pairs[LOOKALIKE]
    assert S.pick_trial(pairs, NOW) == OTHER


def test_a_confusion_is_followed_by_its_trial_within_three_deals():
    """Whatever the last deals were, the pair pulled by a confusion is served by the third deal
    after it (one trial at most every three deals; nothing else due)."""
    rng = random.Random(5)
    for _ in range(200):
        kinds = [rng.choice(["drill", "contrast"]) for _ in range(3)] + ["drill"]  # the confusion
        pairs = {OTHER: _pulled()}
        served = [S.pick_trial(pairs, NOW, recent_kinds=kinds)]
        while served[-1] is None and len(served) < 3:
            kinds.append("drill")
            served.append(S.pick_trial(pairs, NOW, recent_kinds=kinds))
        assert served[-1] == OTHER, f"no trial within three deals after {kinds[:4]}"
