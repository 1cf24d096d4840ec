"""Celery tasks of the content app (the beat schedule in settings names them)."""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task

log = logging.getLogger(__name__)

REMIND_WITHIN = timedelta(hours=24)


@shared_task(name="content.tasks.send_due_reminders", acks_late=True)
def send_due_reminders() -> int:
    """Email, once, each learner who has not finished an assignment due within the next 24 h."""
    from cohorts.reminders import send_due_reminders as run

    return run()
