"""Celery tasks of the cohorts app (the beat schedule in settings names them)."""

from __future__ import annotations

from celery import shared_task

from cohorts.reminders import send_due_reminders as run


@shared_task(name="cohorts.tasks.send_due_reminders", acks_late=True)
def send_due_reminders() -> int:
    """Email, once, each learner who has not finished an assignment due within the next 24 h."""
    return run()
