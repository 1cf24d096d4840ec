from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from accounts.roles import make_instructor


class Command(BaseCommand):
    help = "Put a user in the instructors group (they can then create and teach cohorts)."

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username, **options):
        try:
            user = get_user_model().objects.get(username=username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {username!r}") from None
        make_instructor(user)
        self.stdout.write(f"{username} is now an instructor.")
