"""Rebuild learners' scenario cards from their raw attempts with the current rating map.

Every graded attempt keeps its raw answer and grade fields, so when the rating map
(``drills.scheduling.rating_for``) or the desired retention changes, the cards can be replayed
from history. The replay does what ``drills.services.submit_diagnosis`` did at the time, in
submission order: for each attempt that counts for the schedule, review the true scenario's card
at ``submitted_at``; when the answer was the true scenario's lookalike twin, pull the twin's card
due at that moment (both through ``services.apply_review`` / ``apply_pull``, as the live path
does). Running it twice changes nothing (idempotent).

Cards with no counted attempt behind them are left alone (the command never deletes a card).

    python manage.py rebuild_cards [--user USERNAME] [--dry-run]
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from drills import scheduling, services
from drills.models import Attempt, Card


def stored_grade(row: dict[str, Any]) -> scheduling.Grade:
    """The grade an Attempt's stored fields record."""
    return scheduling.Grade(
        scenario_correct=bool(row["scenario_correct"]),
        measurement_correct=bool(row["measurement_correct"]),
        fix_correct=bool(row["fix_correct"]),
        win_correct=bool(row["win_correct"]),
        elapsed_s=float(row["elapsed_s"] or 0.0),
        over_time=bool(row["over_time"]),
        practice=row["mode"] == Attempt.Mode.PRACTICE,
        five_sentence=bool(row["five_sentence"]),
        step_correct=row["step_correct"],
        gap_correct=row["gap_correct"],
        value_correct=row["value_correct"],
        expected_correct=row["expected_correct"],
    )


@dataclass
class Replayed:
    state: dict[str, Any]
    due: datetime
    reviews: int = 0
    last_review: datetime | None = None


FIELDS = (
    "scenario",
    "answer_scenario",
    "mode",
    "submitted_at",
    "elapsed_s",
    "scenario_correct",
    "measurement_correct",
    "fix_correct",
    "win_correct",
    "over_time",
    "five_sentence",
    "step_correct",
    "gap_correct",
    "value_correct",
    "expected_correct",
)


def replay(rows, desired_retention: float) -> dict[str, Replayed]:
    """Cards (by scenario slug) from a learner's graded attempts in submission order."""
    cards: dict[str, Replayed] = {}
    for row in rows:
        grade = stored_grade(row)
        if not scheduling.counts_for_schedule(grade):
            continue
        when: datetime = row["submitted_at"]
        slug = row["scenario"]
        card = cards.get(slug) or Replayed(state=scheduling.new_card_state(when), due=when)
        services.apply_review(
            card, scheduling.rating_for(grade), when, desired_retention=desired_retention
        )
        cards[slug] = card
        target = scheduling.twin_pull_target(slug, row["answer_scenario"] or None)
        if target is not None:
            pulled = cards.get(target) or Replayed(state=scheduling.new_card_state(when), due=when)
            services.apply_pull(pulled, when)
            cards[target] = pulled
    return cards


def rebuild_user(user, *, dry_run: bool = False) -> tuple[int, int]:
    """Rebuild one learner's scenario cards. Returns (cards written, cards changed)."""
    retention = settings.TRACETRACK["DESIRED_RETENTION"]
    with transaction.atomic():
        existing = {
            c.item: c
            for c in Card.objects.select_for_update().filter(user=user, kind=Card.Kind.SCENARIO)
        }
        rows = (
            Attempt.objects.filter(user=user, submitted_at__isnull=False)
            .order_by("submitted_at", "served_at", "pk")
            .values(*FIELDS)
            .iterator(chunk_size=2000)
        )
        cards = replay(rows, retention)
        changed = 0
        for slug, rebuilt in cards.items():
            card = existing.get(slug) or Card(user=user, kind=Card.Kind.SCENARIO, item=slug)
            before = (card.state, card.due, card.reviews, card.last_review)
            after = (rebuilt.state, rebuilt.due, rebuilt.reviews, rebuilt.last_review)
            if card.pk is not None and before == after:
                continue
            changed += 1
            if dry_run:
                continue
            card.state, card.due, card.reviews, card.last_review = after
            card.save()
    return len(cards), changed


class Command(BaseCommand):
    help = "Rebuild scenario cards from raw attempts with the current rating map (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--user", help="only this username")
        parser.add_argument("--dry-run", action="store_true", help="report, write nothing")

    def handle(self, *args, user=None, dry_run=False, **options):
        users = get_user_model().objects.order_by("pk")
        if user:
            users = users.filter(username=user)
            if not users.exists():
                raise CommandError(f"no user named {user!r}")
        else:
            users = users.filter(attempt__submitted_at__isnull=False).distinct()
        total = changed_total = 0
        for learner in users.iterator():
            n, changed = rebuild_user(learner, dry_run=dry_run)
            total += n
            changed_total += changed
            if changed:
                self.stdout.write(f"{learner.get_username()}: {changed} of {n} cards changed")
        verb = "would change" if dry_run else "changed"
        self.stdout.write(self.style.SUCCESS(f"{total} cards rebuilt, {verb} {changed_total}"))
