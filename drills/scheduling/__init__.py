"""Spaced-repetition scheduling over scenarios (pure: ``fsrs`` + stdlib, no Django).

One FSRS card per learner x scenario. The card is kept as a JSON-able dict (the keys of
``fsrs.Card.to_dict()``), so the web app can store it in a JSONField and tests can build
cards without a database.

Rating map (DESIGN.md "Diagnosis and grading"), evaluated top to bottom; the rule itself is
``scenarios.engine.diagnosis.rating`` (one rule for the live path, rebuilds and benchmarks):

============================================================  =======
condition                                                     rating
============================================================  =======
scenario wrong                                                Again
past 2:00 (``over_time`` or ``elapsed_s > 120``)              Again
``elapsed_s > 90`` (right but slow)                           Hard
a number or choice off (see below)                            Hard
otherwise                                                     Good
============================================================  =======

Decisions:

* Five-sentence attempts (``five_sentence``): "a number or choice off" is any of step time, gap,
  measurement, its value, fix, or expected step time graded wrong. A sentence the trace could not
  grade (``None``) does not count against the learner.
* Older three-part attempts keep the rule they were graded under: only the measurement or the fix
  wrong makes them Hard; ``win_correct`` (±20 % then) never affected the rating. A rebuild
  replays each attempt under its own scheme, so old grades do not change.
* The card tracks recognising the scenario; when the scenario is named correctly in time the
  recall succeeded, so a wrong number is a pass (Hard), never a lapse. A lapse (Again) costs a lot
  in FSRS (difficulty jumps, stability collapses), so it is kept for a wrong scenario or a blown
  clock.
* Easy is never given (speed alone is not evidence of long-term stability).
* Exactly 90 s is still Good; exactly 120 s is still in time (Hard), unless ``over_time`` is set.
* Practice attempts are graded and shown but never update the card: see ``counts_for_schedule``.

Contrast trials (``trial_rating``, ``pick_trial``): a confusion — naming X for a Y trace — pulls
the card of the pair {X, Y} due now (``confusion_pair``, created if new). A due pair card is served
as a contrast trial: two traces of one workload side by side, "which one is Y?" and "which
measurement tells them apart?", on a 45 s clock. The trial reviews the pair's card by the same FSRS
machinery: the wrong trace picked or past 45 s → Again; right but the measurement wrong or slower
than 30 s → Hard; otherwise Good. At most one trial is served in any three deals, so a confusion's
trial comes within the next three drills; lookalike pairs go first.

Times must be timezone-aware; they are converted to UTC for fsrs.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import fsrs
import numpy as np

from scenarios.engine import diagnosis
from scenarios.engine.catalog import HOSTS, SCENARIOS, lookalike_of, lookalike_pairs

__all__ = [
    "AGAIN_AFTER_S",
    "DEFAULT_DESIRED_RETENTION",
    "HARD_AFTER_S",
    "Grade",
    "GradeLike",
    "confusion_pair",
    "counts_for_schedule",
    "deal_shortlist",
    "due",
    "due_summary",
    "is_due",
    "is_lookalike_pair",
    "new_card_state",
    "numbers_right",
    "pair_key",
    "pair_of",
    "pairable",
    "pick_deal",
    "pick_next",
    "pick_trial",
    "pull_due_now",
    "rating_for",
    "rebuild",
    "retrievability",
    "retrievability_many",
    "review",
    "trial_rating",
    "twin_of",
    "twin_pull_target",
]

DEFAULT_DESIRED_RETENTION = 0.95
HARD_AFTER_S = diagnosis.HARD_AFTER_S
AGAIN_AFTER_S = diagnosis.LIMIT_S

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # a new card is due "since forever"

CardState = dict[str, Any]


class GradeLike(Protocol):
    """What ``rating_for`` reads from a grade (``drills.trainer.grading.GradeResult`` fits)."""

    @property
    def scenario_correct(self) -> bool: ...
    @property
    def measurement_correct(self) -> bool: ...
    @property
    def fix_correct(self) -> bool: ...
    @property
    def win_correct(self) -> bool: ...
    @property
    def elapsed_s(self) -> float: ...
    @property
    def over_time(self) -> bool: ...
    @property
    def practice(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Grade:
    """A plain ``GradeLike`` record (``rebuild_cards`` builds one from an Attempt's stored fields,
    ``bench/scheduler_sim.py`` from a simulated answer)."""

    scenario_correct: bool
    measurement_correct: bool
    fix_correct: bool
    win_correct: bool
    elapsed_s: float
    over_time: bool
    practice: bool = False
    five_sentence: bool = False
    step_correct: bool | None = None
    gap_correct: bool | None = None
    value_correct: bool | None = None
    expected_correct: bool | None = None
    trial: bool = False  # a contrast trial: rated by ``trial_rating``


# --------------------------------------------------------------------------- rating


def numbers_right(grade: GradeLike) -> bool:
    """Whether every graded sentence besides the signature is right, under the attempt's scheme."""
    parts: list[bool | None] = [grade.measurement_correct, grade.fix_correct]
    if getattr(grade, "five_sentence", False):
        parts += [
            getattr(grade, f, None)
            for f in ("step_correct", "gap_correct", "value_correct", "expected_correct")
        ]
    return all(p is not False for p in parts)


def rating_for(grade: GradeLike) -> fsrs.Rating:
    """FSRS rating for one graded attempt (see the module docstring for the table)."""
    if getattr(grade, "trial", False):
        return trial_rating(
            bool(grade.scenario_correct),
            grade.measurement_correct is not False,
            float(grade.elapsed_s),
            bool(grade.over_time),
        )
    return fsrs.Rating(
        diagnosis.rating(
            bool(grade.scenario_correct),
            numbers_right(grade),
            float(grade.elapsed_s),
            bool(grade.over_time),
        )
    )


TRIAL_LIMIT_S = 45.0  # a contrast trial's clock
TRIAL_HARD_AFTER_S = 30.0  # right but slow
TRIAL_EVERY = 3  # at most one contrast trial in any this many deals


def trial_rating(
    picked_right: bool, measurement_right: bool, elapsed_s: float, over_time: bool
) -> fsrs.Rating:
    """FSRS rating of a contrast trial: the wrong trace or past the clock → Again; the right trace
    but the measurement wrong, or slow (> 30 s) → Hard; otherwise Good."""
    if not picked_right or over_time or elapsed_s > TRIAL_LIMIT_S:
        return fsrs.Rating.Again
    if not measurement_right or elapsed_s > TRIAL_HARD_AFTER_S:
        return fsrs.Rating.Hard
    return fsrs.Rating.Good


def pair_key(a: str, b: str) -> str:
    """The card item of the pair {a, b} (order-free)."""
    if a == b:
        raise ValueError("a pair needs two scenarios")
    return "|".join(sorted((a, b)))


def pair_of(key: str) -> tuple[str, str]:
    a, _, b = key.partition("|")
    if not a or not b or a not in SCENARIOS or b not in SCENARIOS or a == b:
        raise ValueError(f"not a pair of scenarios: {key!r}")
    return a, b


def pairable(a: str, b: str) -> bool:
    """Whether one workload can host both scenarios (a trial draws the two from one workload:
    a decode-only and a pipeline-only scenario never share one)."""
    return bool(set(HOSTS[a]) & set(HOSTS[b]))


def confusion_pair(true_slug: str, answered_slug: str | None) -> str | None:
    """The pair card a graded answer pulls due: the true scenario and the one named instead, when
    both are scenarios, they differ (a blank answer — a miss on the clock — names none) and one
    workload can host both (otherwise no trial can show them side by side)."""
    if not answered_slug or answered_slug == true_slug:
        return None
    if true_slug not in SCENARIOS or answered_slug not in SCENARIOS:
        return None
    if not pairable(true_slug, answered_slug):
        return None
    return pair_key(true_slug, answered_slug)


_LOOKALIKE_KEYS = frozenset(pair_key(a, b) for a, b in lookalike_pairs())


def is_lookalike_pair(key: str) -> bool:
    return key in _LOOKALIKE_KEYS


def pick_trial(
    pairs: Mapping[str, Mapping[str, Any]],
    now: datetime,
    *,
    recent_kinds: Sequence[str] = (),
) -> str | None:
    """The pair to serve as a contrast trial now, or None (deal an ordinary drill).

    ``pairs`` maps pair keys to their card states; ``recent_kinds`` lists the kinds of the
    attempts dealt most recently, oldest first. None when no pair card is due, or when a trial
    was among the last ``TRIAL_EVERY - 1`` deals (trials never crowd out drills). Otherwise the
    due pair that is a declared lookalike pair first, then the lowest retrievability, then the
    most overdue, then by key."""
    when = _utc(now)
    if "contrast" in list(recent_kinds)[-(TRIAL_EVERY - 1) :]:
        return None
    due_now = [k for k, st in pairs.items() if due(st) <= when]
    if not due_now:
        return None
    return min(
        due_now,
        key=lambda k: (
            not is_lookalike_pair(k),
            round(_fine_retrievability(pairs[k], when), 9),
            due(pairs[k]),
            k,
        ),
    )


def counts_for_schedule(grade: GradeLike) -> bool:
    """Whether this attempt may update the learner's card (practice attempts never do)."""
    return not grade.practice


def twin_of(slug: str) -> str | None:
    """The lookalike twin of a scenario (the engine's catalogue decides), or None."""
    return lookalike_of(slug)


def twin_pull_target(true_slug: str, answered_slug: str | None) -> str | None:
    """The card to pull due now after an attempt: the answered scenario when it is the twin."""
    if answered_slug is not None and lookalike_of(true_slug) == answered_slug:
        return answered_slug
    return None


# --------------------------------------------------------------------------- card state


def _utc(now: datetime) -> datetime:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("datetimes must be timezone-aware")
    return now.astimezone(UTC)


# No same-session (re)learning steps (fsrs's defaults are 1 and 10 minutes for new cards, 10
# minutes after a lapse). Every drill ends in a full reveal, so re-serving the scenario ten minutes
# later mostly tests short-term memory of that reveal and costs a drill from a 10-15 drill session;
# without steps a new or lapsed card comes back on a later day. In bench/scheduler_sim.py this
# reached mastery about 2-3 days sooner under both learner models (docs/scheduler-benchmark.md).
LEARNING_STEPS: tuple[timedelta, ...] = ()
RELEARNING_STEPS: tuple[timedelta, ...] = ()


@functools.lru_cache(maxsize=16)
def _scheduler(desired_retention: float) -> fsrs.Scheduler:
    # No fuzzing: scheduling stays a pure function of the history (rebuild == incremental).
    return fsrs.Scheduler(
        desired_retention=desired_retention,
        learning_steps=LEARNING_STEPS,
        relearning_steps=RELEARNING_STEPS,
        enable_fuzzing=False,
    )


def _card(state: Mapping[str, Any]) -> fsrs.Card:
    return fsrs.Card.from_dict(dict(state))  # type: ignore[arg-type]


def _state(card: fsrs.Card) -> CardState:
    return dict(card.to_dict())


def new_card_state(now: datetime | None = None, *, card_id: int = 0) -> CardState:
    """A never-reviewed card. It is due at ``now`` (or at the epoch: always due)."""
    when = _EPOCH if now is None else _utc(now)
    return _state(fsrs.Card(card_id=card_id, due=when))


def review(
    state: Mapping[str, Any],
    rating: fsrs.Rating | int,
    now: datetime,
    *,
    desired_retention: float = DEFAULT_DESIRED_RETENTION,
) -> CardState:
    """The card after one graded review at ``now``. The input is not modified."""
    card, _log = _scheduler(desired_retention).review_card(
        _card(state), fsrs.Rating(int(rating)), review_datetime=_utc(now)
    )
    return _state(card)


def retrievability(state: Mapping[str, Any] | None, now: datetime) -> float:
    """Predicted recall probability at ``now`` (0 for unseen or never-reviewed cards).

    fsrs counts elapsed time in whole days, so any card reviewed within the last day reads 1.0.
    """
    if state is None:
        return 0.0
    sched = _scheduler(DEFAULT_DESIRED_RETENTION)  # R does not depend on desired retention
    return float(sched.get_card_retrievability(_card(state), _utc(now)))


_DAY_US = 86_400_000_000


def epoch_us(value: datetime | str) -> int:
    """Microseconds since the Unix epoch (UTC) of a card time (datetime or ISO string)."""
    if not isinstance(value, datetime):
        value = datetime.fromisoformat(value)
    delta = _utc(value) - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def retrievability_many(stability: np.ndarray, last_review_us: np.ndarray, now: datetime):
    """``retrievability`` of many cards at once: ``stability`` (float, NaN where the card has
    none or is unseen) and ``last_review_us`` (``epoch_us`` of its last review, any value where
    stability is NaN), same shape. Whole elapsed days, floored like ``timedelta.days``, and
    the same forgetting curve as fsrs, so each value equals ``retrievability`` of that card."""
    sched = _scheduler(DEFAULT_DESIRED_RETENTION)
    stability = np.asarray(stability, dtype=np.float64)
    seen = ~np.isnan(stability)
    last = np.where(seen, np.asarray(last_review_us, dtype=np.int64), 0)
    elapsed = np.maximum(0, (epoch_us(now) - last) // _DAY_US).astype(np.float64)
    base = 1 + sched._FACTOR * elapsed / np.where(seen, stability, 1.0)
    # The power in Python (C pow), not numpy's vectorised one, which can differ in the last bit.
    decay = sched._DECAY
    r = np.array([b**decay for b in base.ravel().tolist()], dtype=np.float64).reshape(base.shape)
    return np.where(seen, r, 0.0)


def _fine_retrievability(state: Mapping[str, Any], when: datetime) -> float:
    """FSRS-6 forgetting curve with fractional elapsed days (for ordering only)."""
    stability = state.get("stability")
    last = state.get("last_review")
    if stability is None or last is None:
        return 0.0
    if not isinstance(last, datetime):
        last = datetime.fromisoformat(last)
    decay = -float(_scheduler(DEFAULT_DESIRED_RETENTION).parameters[20])
    factor = 0.9 ** (1 / decay) - 1
    elapsed = max(0.0, (when - _utc(last)).total_seconds() / 86400.0)
    return float((1 + factor * elapsed / float(stability)) ** decay)


def due(state: Mapping[str, Any]) -> datetime:
    """When the card is next due (UTC)."""
    value = state["due"]
    if isinstance(value, datetime):
        return _utc(value)
    return _utc(datetime.fromisoformat(value))


def is_due(state: Mapping[str, Any] | None, now: datetime) -> bool:
    return state is not None and due(state) <= _utc(now)


def pull_due_now(state: Mapping[str, Any] | None, now: datetime) -> CardState:
    """Twin pull: the same card, due at ``now`` (an unseen scenario gets a new card due now).

    Only ``due`` changes; memory state (stability, difficulty) is untouched. A card already due
    earlier keeps its earlier due date.
    """
    if state is None:
        return new_card_state(now)
    pulled = dict(state)
    when = _utc(now)
    if due(state) > when:
        pulled["due"] = when.isoformat()
    return pulled


def rebuild(
    reviews: Iterable[tuple[datetime, fsrs.Rating | int]],
    *,
    desired_retention: float = DEFAULT_DESIRED_RETENTION,
    card_id: int = 0,
) -> CardState:
    """The card rebuilt from its scheduled reviews (chronological order is enforced).

    Pass only attempts that count (``counts_for_schedule``). Twin pulls are not replayed: they
    move ``due`` only, and the next review after a pull overwrites it anyway.
    """
    state = new_card_state(card_id=card_id)
    for when, rating in sorted(reviews, key=lambda item: _utc(item[0])):
        state = review(state, rating, when, desired_retention=desired_retention)
    return state


# --------------------------------------------------------------------------- picking


def _recency_penalty(recent: Sequence[str]) -> dict[str, int]:
    """Larger for more recently served slugs (the last one served scores len(recent))."""
    penalty: dict[str, int] = {}
    for i, slug in enumerate(recent):
        penalty[slug] = i + 1
    return penalty


def _weighted_choice(slugs: Sequence[str], weights: Mapping[str, int], rng: random.Random) -> str:
    w = [max(0, int(weights.get(s, 1))) for s in slugs]
    if sum(w) <= 0:
        w = [1] * len(slugs)
    return rng.choices(list(slugs), weights=w, k=1)[0]


def pick_next(
    cards: Mapping[str, Mapping[str, Any] | None],
    now: datetime,
    *,
    rng: random.Random,
    weights: Mapping[str, int] | None = None,
    recent: Sequence[str] = (),
) -> str:
    """The scenario to drill next.

    ``cards`` maps every scenario slug to its card state, or None when never drilled.
    ``recent`` lists the slugs served most recently, oldest first (e.g. the last few attempts).

    0. Lookalike interleaving: when the last scenario served has a twin that was not served
       recently, the twin comes next if it is due, or if nothing is due (pairs are drilled side
       by side; drilling one twin alone is what breeds the confusion).
    1. Due cards first, lowest retrievability first. Among equally low ones, the one served
       least recently, then the most overdue, then a random one. A due card that is strictly
       the weakest is served even if it was just served (a weak one must come back).
    2. Otherwise an unseen scenario, weighted random (``weights``; healthy has weight 2, the
       default is 1), avoiding the ones just served when others are left.
    3. Otherwise (nothing due, nothing unseen) the lowest retrievability, with the same
       tie-breaks as in 1 (practising ahead is allowed by FSRS).

    Ordering uses retrievability with fractional elapsed days (``retrievability`` itself
    follows fsrs and counts whole days, which makes every card reviewed within a day tie).
    """
    if not cards:
        raise ValueError("no scenarios to pick from")
    weights = weights or {}
    when = _utc(now)
    penalty = _recency_penalty(recent)

    seen = {slug: st for slug, st in cards.items() if st is not None}
    unseen = sorted(slug for slug, st in cards.items() if st is None)
    due_now = [slug for slug, st in seen.items() if due(st) <= when]

    def best_of(candidates: list[str]) -> str:
        scored = [
            (
                round(_fine_retrievability(seen[s], when), 9),
                penalty.get(s, 0),
                due(seen[s]),
                s,
            )
            for s in candidates
        ]
        top = min(sc[:3] for sc in scored)
        ties = sorted(sc[3] for sc in scored if sc[:3] == top)
        return ties[0] if len(ties) == 1 else rng.choice(ties)

    partner = twin_of(recent[-1]) if recent else None
    if (
        partner is not None
        and partner in cards
        and partner not in penalty
        and (partner in due_now or not due_now)
    ):
        return partner
    if due_now:
        return best_of(due_now)
    if unseen:
        fresh = [s for s in unseen if s not in penalty] or unseen
        return _weighted_choice(fresh, weights, rng)
    return best_of(sorted(seen))


# How many of the scheduler's choices the deal draws from (``pick_deal``).
DEAL_SHORTLIST = 3


def deal_shortlist(
    cards: Mapping[str, Mapping[str, Any] | None],
    now: datetime,
    *,
    rng: random.Random,
    weights: Mapping[str, int] | None = None,
    recent: Sequence[str] = (),
    k: int = DEAL_SHORTLIST,
) -> list[str]:
    """The scheduler's first ``k`` choices, in its order: ``pick_next``, then ``pick_next``
    again with each choice left out."""
    left = dict(cards)
    shortlist: list[str] = []
    while left and len(shortlist) < k:
        slug = pick_next(left, now, rng=rng, weights=weights, recent=recent)
        shortlist.append(slug)
        del left[slug]
    return shortlist


def pick_deal(
    cards: Mapping[str, Mapping[str, Any] | None],
    now: datetime,
    *,
    rng: random.Random,
    weights: Mapping[str, int] | None = None,
    recent: Sequence[str] = (),
) -> str:
    """The scenario a drill is dealt: one of the scheduler's first ``DEAL_SHORTLIST`` choices,
    drawn evenly.

    ``pick_next`` alone is predictable from what a learner sees: the twin of the scenario whose
    reveal they just read, else the first of the "due now" list on Today, else the weakest card on
    the dashboard. A learner who knows the next scenario can name it without reading the trace.
    Drawn from three, no scenario is dealt with a chance above one in three whatever the learner
    knows of their schedule; the scenario left out stays due and is in the next draw.
    """
    return rng.choice(deal_shortlist(cards, now, rng=rng, weights=weights, recent=recent))


def due_summary(
    cards: Mapping[str, Mapping[str, Any] | None], now: datetime
) -> dict[str, list[Any]]:
    """What is due: ``due_now`` (weakest first), ``due_today`` (later on ``now``'s calendar day,
    in ``now``'s own timezone, soonest first), ``next`` ([(slug, due datetime)] for every seen card
    not due now, soonest first) and ``unseen`` (never drilled, sorted)."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("datetimes must be timezone-aware")
    end_of_day = datetime.combine(
        now.date() + timedelta(days=1), datetime.min.time(), tzinfo=now.tzinfo
    )
    seen = {slug: st for slug, st in cards.items() if st is not None}
    due_now = sorted(
        (s for s, st in seen.items() if due(st) <= _utc(now)),
        key=lambda s: (retrievability(seen[s], now), due(seen[s]), s),
    )
    later = sorted(
        ((s, due(st)) for s, st in seen.items() if due(st) > _utc(now)),
        key=lambda item: (item[1], item[0]),
    )
    due_today = [s for s, when in later if when < _utc(end_of_day)]
    return {
        "due_now": due_now,
        "due_today": due_today,
        "next": later,
        "unseen": sorted(s for s, st in cards.items() if st is None),
    }
