"""The drill loop's write paths: start a drill, commit a diagnosis, update the learner's card."""

from __future__ import annotations

import random
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from drills import scheduling
from drills.grading import Diagnosis, GradeResult, grade
from drills.models import Attempt, Card
from scenarios import engine, pool
from scenarios.models import Trace


def time_limit_s() -> int:
    return settings.TRACETRACK["DRILL_TIME_LIMIT_S"]


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
        .defer(*Trace.blob_paths("trace"))  # pages stream the trace separately
        .order_by("-served_at")
        .first()
    )


def start_drill(user, mode: str = Attempt.Mode.TIMED, *, scenario: str | None = None) -> Attempt:
    scenario = scenario or next_scenario(user)
    trace = pool.claim_or_generate(user, scenario)
    return Attempt.objects.create(
        user=user, trace=trace, scenario=scenario, mode=mode, served_at=timezone.now()
    )


def submit_diagnosis(attempt: Attempt, diagnosis: Diagnosis) -> tuple[Attempt, bool]:
    """Grade and store the diagnosis once. Returns (attempt, graded_now).

    A second submission (double click, replayed POST) changes nothing and returns the stored grade.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = (
            Attempt.objects.select_for_update()
            .select_related("trace")
            .defer(*Trace.blob_paths("trace"))
            .get(pk=attempt.pk)
        )
        if locked.submitted_at is not None:
            return locked, False
        elapsed = (now - locked.served_at).total_seconds()
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
