"""The drill loop's write paths: start a drill, commit a diagnosis, update the learner's card."""

from __future__ import annotations

import logging
import random
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from drills import scheduling, summaries
from drills.models import Attempt
from drills.scheduling import cards
from drills.trainer.grading import Diagnosis, grade
from scenarios import engine, pool
from scenarios.engine import diagnosis as engine_diagnosis

log = logging.getLogger(__name__)


def time_limit_s() -> int:
    return settings.TRACETRACK["DRILL_TIME_LIMIT_S"]


def scenario_weights() -> dict[str, int]:
    return {slug: s.weight for slug, s in engine.SCENARIOS.items()}


def next_scenario(user, now: datetime | None = None) -> str:
    now = now or timezone.now()
    held = cards.load_cards(user)
    states = {slug: (held[slug].state if slug in held else None) for slug in engine.SCENARIOS}
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
        locked = Attempt.objects.select_for_update().select_related("trace").get(pk=attempt.pk)
        if locked.submitted_at is not None:
            return locked, False
        elapsed = (now - locked.served_at).total_seconds()
        practice = locked.mode == Attempt.Mode.PRACTICE
        result = grade(
            diagnosis,
            graded_key(locked.trace),
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
        locked.answer_step_ms = diagnosis.step_ms
        locked.answer_gap_ms = diagnosis.gap_ms
        locked.answer_measurement_value = diagnosis.measurement_value
        locked.answer_arithmetic = diagnosis.arithmetic
        locked.elapsed_s = elapsed
        locked.scenario_correct = result.scenario_correct
        locked.measurement_correct = result.measurement_correct
        locked.fix_correct = result.fix_correct
        locked.win_correct = result.win_correct
        locked.win_error = result.win_error if result.win_error != float("inf") else None
        locked.step_correct = result.step_correct
        locked.gap_correct = result.gap_correct
        locked.value_correct = result.value_correct
        locked.expected_correct = result.expected_correct
        locked.five_sentence = True
        locked.over_time = result.over_time
        locked.rating = int(rating)
        locked.counted = scheduling.counts_for_schedule(result)
        locked.save()
        summaries.record_attempt(locked)
        cards.apply_live(
            locked.user, result, item=locked.scenario, when=now, answered=diagnosis.scenario
        )
    return locked, True


def graded_key(trace) -> dict:
    """The trace's answer key with its graded values. A trace stored before the key carried them
    is measured now from its own stored events (the ones the learner was shown)."""
    key = trace.key
    if key.get("grading"):
        return key
    try:
        events = trace.load()
        block = engine_diagnosis.key_block(
            events.cols, events.names, events.args, key["scenario"], float(key["expected_step_ms"])
        )
    except Exception:  # an unreadable payload: grade what the key carries
        log.warning("trace %s: no graded values and its events could not be read", trace.pk)
        return key
    return {**key, "grading": block}
