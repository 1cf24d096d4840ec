"""The drill loop's write paths: start a drill, commit a diagnosis, update the learner's card."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import fsrs
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from drills import scheduling
from drills.grading import Diagnosis, GradeResult, grade, is_over_time
from drills.models import Attempt, Card, LearnerProfile
from scenarios import engine, pool


def time_limit_s() -> int:
    return settings.TRACETRACK["DRILL_TIME_LIMIT_S"]


def load_allowance_s(mode: str) -> float:
    """Seconds of loading time that do not count against the clock: only in Perfetto-only mode,
    where the Perfetto UI and the trace take a while to load. A fixed server-side bound; nothing
    the client sends can extend it."""
    if mode == Attempt.Mode.PERFETTO:
        return float(settings.TRACETRACK["PERFETTO_LOAD_ALLOWANCE_S"])
    return 0.0


def clock_elapsed_s(attempt: Attempt, now: datetime) -> float:
    """Time on the clock: server time since serving, less the mode's loading allowance."""
    raw = (now - attempt.served_at).total_seconds()
    return max(0.0, raw - load_allowance_s(attempt.mode))


def display_remaining_s(attempt: Attempt, now: datetime) -> float:
    """What the page's clock shows: the limit plus the loading allowance, minus server time."""
    raw = (now - attempt.served_at).total_seconds()
    return max(0.0, time_limit_s() + load_allowance_s(attempt.mode) - raw)


def is_expired(attempt: Attempt, now: datetime) -> bool:
    """A timed (or Perfetto-only) attempt whose clock has run out without a diagnosis."""
    return (
        attempt.submitted_at is None
        and attempt.mode != Attempt.Mode.PRACTICE
        and is_over_time(clock_elapsed_s(attempt, now), time_limit_s())
    )


def claims_per_hour() -> int:
    return settings.TRACETRACK["DRILL_CLAIMS_PER_HOUR"]


class TooManyDrills(Exception):
    """The learner has started ``DRILL_CLAIMS_PER_HOUR`` drills in the last hour."""


def scenario_weights() -> dict[str, int]:
    return {slug: s.weight for slug, s in engine.SCENARIOS.items()}


def load_cards(user, kind: str = Card.Kind.SCENARIO) -> dict[str, Card]:
    return {c.item: c for c in Card.objects.filter(user=user, kind=kind)}


def next_scenario(user, now: datetime | None = None) -> str:
    now = now or timezone.now()
    cards = load_cards(user)
    states = {slug: (cards[slug].state if slug in cards else None) for slug in engine.SCENARIOS}
    newest_first = Attempt.objects.filter(user=user).order_by("-served_at")
    recent = list(newest_first.values_list("scenario", flat=True)[:5])[::-1]  # oldest first
    return scheduling.pick_next(
        states, now, rng=random.Random(), weights=scenario_weights(), recent=recent
    )


def open_attempt(user) -> Attempt | None:
    """The learner's unfinished attempt, if any (a new drill resumes it instead of piling up)."""
    return (
        Attempt.objects.filter(user=user, submitted_at__isnull=True)
        .select_related("trace")
        .order_by("-served_at")
        .first()
    )


def start_drill(user, mode: str = Attempt.Mode.TIMED, *, scenario: str | None = None) -> Attempt:
    """Deal a new drill. The caller has made sure the learner has no open attempt; the database
    refuses a second one (``attempt_one_open_per_user``) and the claim rolls back with it."""
    scenario = scenario or next_scenario(user)
    with transaction.atomic():
        trace = pool.claim_or_generate(user, scenario)
        return Attempt.objects.create(
            user=user, trace=trace, scenario=scenario, mode=mode, served_at=timezone.now()
        )


def next_drill(user, mode: str = Attempt.Mode.TIMED) -> tuple[Attempt, bool]:
    """The learner's drill: the open attempt resumed (whatever mode was asked for), or a new one.

    Returns (attempt, dealt_now). An expired timed attempt is closed as a miss first. Concurrent
    calls by one learner serialise on the learner's profile row (PostgreSQL) and, everywhere, on
    the one-open-attempt constraint: the loser of a race resumes the winner's attempt. Changing
    the mode never deals a new trace; only an explicit abandon closes the open attempt.
    """
    now = timezone.now()
    current = open_attempt(user)
    if current is not None and is_expired(current, now):
        close_attempt(current, "expired")
        current = None
    if current is not None:
        return current, False
    LearnerProfile.objects.get_or_create(user=user)
    try:
        with transaction.atomic():
            LearnerProfile.objects.select_for_update().get(user=user)
            current = open_attempt(user)
            if current is not None:
                return current, False
            since = now - timedelta(hours=1)
            if Attempt.objects.filter(user=user, served_at__gte=since).count() >= claims_per_hour():
                raise TooManyDrills
            return start_drill(user, mode), True
    except IntegrityError:
        current = open_attempt(user)
        if current is None:
            raise
        return current, False


def close_attempt(attempt: Attempt, reason: str) -> Attempt:
    """Close an open attempt without a diagnosis ("abandoned" or "expired"): graded as a miss.

    A timed attempt is rated Again and updates the card through ``review_card``, the path a
    submitted diagnosis takes; a practice attempt never touches a card. Idempotent.
    """
    assert reason in ("abandoned", "expired"), reason
    now = timezone.now()
    with transaction.atomic():
        locked = Attempt.objects.select_for_update().get(pk=attempt.pk)
        if locked.submitted_at is not None:
            return locked
        locked.submitted_at = now
        locked.closed = reason
        locked.elapsed_s = clock_elapsed_s(locked, now)
        locked.scenario_correct = False
        locked.measurement_correct = False
        locked.fix_correct = False
        locked.win_correct = False
        locked.over_time = locked.mode != Attempt.Mode.PRACTICE and is_over_time(
            locked.elapsed_s, time_limit_s()
        )
        locked.rating = int(fsrs.Rating.Again)
        locked.counted = locked.mode != Attempt.Mode.PRACTICE
        locked.save()
        if locked.counted:
            review_card(locked.user, locked.scenario, fsrs.Rating.Again, now)
    return locked


def submit_diagnosis(attempt: Attempt, diagnosis: Diagnosis) -> tuple[Attempt, bool]:
    """Grade and store the diagnosis once. Returns (attempt, graded_now).

    A second submission (double click, replayed POST) changes nothing and returns the stored grade.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = Attempt.objects.select_for_update().select_related("trace").get(pk=attempt.pk)
        if locked.submitted_at is not None:
            return locked, False
        elapsed = clock_elapsed_s(locked, now)
        practice = locked.mode == Attempt.Mode.PRACTICE
        result = grade(
            diagnosis,
            locked.trace.key,
            elapsed_s=elapsed,
            limit_s=time_limit_s(),
            practice=practice,
        )
        rating = scheduling.rating_for(result)
        locked.submitted_at = now
        locked.answer_scenario = diagnosis.scenario
        locked.answer_measurement = diagnosis.measurement
        locked.answer_fix = diagnosis.fix
        locked.answer_expected_ms = diagnosis.expected_step_ms
        locked.elapsed_s = elapsed
        locked.scenario_correct = result.scenario_correct
        locked.measurement_correct = result.measurement_correct
        locked.fix_correct = result.fix_correct
        locked.win_correct = result.win_correct
        locked.win_error = result.win_error
        locked.over_time = result.over_time
        locked.rating = int(rating)
        locked.counted = scheduling.counts_for_schedule(result)
        locked.save()
        if locked.counted:
            review_card(locked.user, locked.scenario, rating, now)
            pull_twin(locked.user, result, now)
    return locked, True


def _card(user, item: str, kind: str, now: datetime) -> Card:
    card = Card.objects.select_for_update().filter(user=user, kind=kind, item=item).first()
    if card is None:
        state = scheduling.new_card_state(now)
        card = Card(user=user, kind=kind, item=item, state=state, due=now)
    return card


def apply_review(card, rating, now: datetime, *, desired_retention: float | None = None) -> None:
    """Review ``card`` at ``now`` in memory (a ``Card``, or anything with its four fields).

    Shared by the live write path (``review_card``) and ``rebuild_cards``'s replay.
    """
    if desired_retention is None:
        desired_retention = settings.TRACETRACK["DESIRED_RETENTION"]
    card.state = scheduling.review(card.state, rating, now, desired_retention=desired_retention)
    card.due = scheduling.due(card.state)
    card.reviews += 1
    card.last_review = now


def apply_pull(card, now: datetime) -> None:
    """Pull ``card`` due at ``now`` in memory (the twin pull); its memory state is untouched."""
    card.state = scheduling.pull_due_now(card.state, now)
    card.due = scheduling.due(card.state)


def review_card(user, item: str, rating, now: datetime, kind: str = Card.Kind.SCENARIO) -> Card:
    card = _card(user, item, kind, now)
    apply_review(card, rating, now)
    card.save()
    return card


def pull_twin(user, result: GradeResult, now: datetime) -> None:
    """Picking the lookalike twin pulls the twin's card due now, so the pair is drilled together."""
    if not result.twin_confusion:
        return
    card = _card(user, result.answered_scenario, Card.Kind.SCENARIO, now)
    apply_pull(card, now)
    card.save()
