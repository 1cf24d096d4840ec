"""The drills' background work (``scenarios.background`` sends these once a grade commits; Celery
beat runs ``end_interviews_past_their_hour``).

All are idempotent, so a redelivery (``acks_late``: a worker lost mid-task) is harmless.
"""

from __future__ import annotations

from celery import shared_task

from drills.contrast import services as contrast
from drills.interview import services as interviews
from drills.stats import warm
from drills.trainer import fixed


@shared_task(name=fixed.TWIN_TASK, acks_late=True, reject_on_worker_lost=True)
def make_fixed_twin(attempt_id: str) -> str | None:
    twin = fixed.make_twin(attempt_id)
    return None if twin is None else str(twin.pk)


@shared_task(name=contrast.PREPARE_TASK, acks_late=True, reject_on_worker_lost=True)
def prepare_trial(user_id: int, pair: str) -> bool:
    return contrast.prepare_trial(user_id, pair)


@shared_task(name=warm.WARM_TASK, acks_late=True, reject_on_worker_lost=True)
def warm_dashboard(user_id: int) -> bool:
    return warm.warm(user_id)


@shared_task(name=interviews.END_TASK)
def end_interviews_past_their_hour() -> int:
    """Celery beat, every 5 minutes: an interview left open past its hour ends without waiting
    for the learner to come back. Idempotent."""
    return interviews.end_those_past_their_hour()
