"""Due-date reminders: once per (assignment, learner), claimed by a unique row before sending."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from content.models import ReadMark

from . import progress
from .models import Assignment, Extension, Membership, ReminderSent

log = logging.getLogger(__name__)


REMIND_WITHIN = timedelta(hours=24)


def send_due_reminders(now: datetime | None = None, window=None) -> int:
    now = now or timezone.now()
    window = window or REMIND_WITHIN
    horizon = now + window
    in_window = Q(due_at__gt=now, due_at__lte=horizon)
    assignments = list(
        Assignment.objects.filter(
            in_window | Q(extensions__due_at__gt=now, extensions__due_at__lte=horizon)
        )
        .filter(cohort__archived_at__isnull=True)  # archived: its learners no longer see it
        .distinct()
        .select_related("cohort", "walkthrough_set")
    )
    if not assignments:
        return 0
    ids = [a.pk for a in assignments]
    extensions = {
        (e.assignment_id, e.learner_id): e for e in Extension.objects.filter(assignment_id__in=ids)
    }
    already = set(
        ReminderSent.objects.filter(assignment_id__in=ids).values_list(
            "assignment_id", "learner_id"
        )
    )
    members: dict[int, list] = {}
    for m in Membership.objects.filter(
        cohort_id__in={a.cohort_id for a in assignments}
    ).select_related("user"):
        members.setdefault(m.cohort_id, []).append(m.user)
    slugs = {s for a in assignments for s in a.walkthrough_set.walkthroughs}
    user_ids = {u.pk for users in members.values() for u in users}
    reads = set(
        ReadMark.objects.filter(user_id__in=user_ids, slug__in=slugs).values_list("user_id", "slug")
    )
    sent = 0
    for a in assignments:
        for user in members.get(a.cohort_id, []):
            if (a.pk, user.pk) in already:
                continue
            due, _cutoff = progress.effective_dates(a, extensions.get((a.pk, user.pk)))
            if not (now < due <= horizon):
                continue
            todo = [s for s in a.walkthrough_set.walkthroughs if (user.pk, s) not in reads]
            if not todo:
                continue
            if not user.email:
                log.info("reminder: %s has no email address; skipped", user.username)
                continue
            try:
                with transaction.atomic():
                    claim = ReminderSent.objects.create(assignment=a, learner=user, due_at=due)
            except IntegrityError:
                continue  # another worker claimed it
            try:
                send_mail(
                    subject=f"Due soon: {a.walkthrough_set.title} ({a.cohort.name})",
                    message=_body(user, a, due, todo),
                    from_email=settings.DEFAULT_FROM_EMAIL,
                    recipient_list=[user.email],
                )
            except Exception:
                claim.delete()  # let the next run retry
                log.exception("reminder to %s failed", user.username)
                continue
            sent += 1
    log.info("sent %d assignment reminders", sent)
    return sent


def _body(user, assignment: Assignment, due: datetime, todo: list[str]) -> str:
    lines = [
        f"Hi {user.username},",
        "",
        f"“{assignment.walkthrough_set.title}” for {assignment.cohort.name} is due "
        f"{due:%a %d %b %H:%M} UTC. Still to read:",
        "",
    ]
    site = settings.TRACETRACK["SITE_URL"]
    lines += [
        f"  - {progress.walkthrough_title(s)}: {site}{progress.walkthrough_url(s)}" for s in todo
    ]
    if assignment.goal:
        lines += ["", f"Drill goal: {assignment.goal_text()}."]
    lines += ["", "— TraceTrack"]
    return "\n".join(lines)
