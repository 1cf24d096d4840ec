"""Rebuild learners' trace cards (scenarios and walkthrough re-narrations) from their raw attempts
with the current rating map.

Every graded attempt keeps its raw answer and grade fields, so when the rating map
(``drills.scheduling.rating_for``) or the desired retention changes, the cards can be replayed
from history through the same ``apply_attempt`` the live path uses
(``drills.scheduling.cards.rebuild_user``). Running it twice changes nothing; cards with no counted
attempt behind them are left alone (the command never deletes a card).

    python manage.py rebuild_cards [--user USERNAME] [--dry-run]
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from drills.scheduling.cards import rebuild_user


class Command(BaseCommand):
    help = "Rebuild trace cards from raw attempts with the current rating map (idempotent)."

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
