"""Recompute the dashboard's and cohort pages' summary counters from the raw attempts.

The counters (``drills.summaries``) are kept up to date in the transaction that stores each
grade; this replays every graded attempt and mental-math answer through the same
``contributions`` instead. Run it after importing attempts by other means than the app's write
paths, or to check the counters (``--check`` reports the learners whose counters differ and
writes nothing). Running it twice changes nothing.

    python manage.py rebuild_stats [--user USERNAME] [--check]
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from drills import summaries


class Command(BaseCommand):
    help = "Rebuild the dashboard's summary counters from raw attempts (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("--user", help="only this username")
        parser.add_argument("--check", action="store_true", help="compare, write nothing")

    def handle(self, *args, user=None, check=False, **options):
        if user:
            found = get_user_model().objects.filter(username=user).values_list("pk", flat=True)
            if not found:
                raise CommandError(f"no user named {user!r}")
            ids = list(found)
        else:
            ids = summaries.users_with_answers()
        if check:
            stale = summaries.stale_users(ids)
            for uid in stale:
                self.stdout.write(f"user {uid}: counters differ from the raw attempts")
            msg = f"{len(ids)} learners checked, {len(stale)} differ"
            self.stdout.write(self.style.SUCCESS(msg) if not stale else self.style.WARNING(msg))
            return
        written = summaries.rebuild_users(ids)
        rows = ", ".join(f"{n} {name}" for name, n in sorted(written.items())) or "no rows"
        self.stdout.write(self.style.SUCCESS(f"{len(ids)} learners rebuilt: {rows}"))
