from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from accounts.roles import make_instructor


class Command(BaseCommand):
    help = "Create (or reset) a demo learner and a demo instructor, and print their passwords."

    def handle(self, *args, **options):
        User = get_user_model()
        for username, instructor in (("learner", False), ("instructor", True)):
            password = secrets.token_urlsafe(9)
            user, _ = User.objects.get_or_create(username=username)
            user.set_password(password)
            user.save()
            if instructor:
                make_instructor(user)
            role = "instructor" if instructor else "learner"
            self.stdout.write(f"  {role:<10}  username: {username:<10}  password: {password}")
