from __future__ import annotations

from django.db import models


class LoginFailure(models.Model):
    """Failed sign-ins of one (client address, username) pair: the sign-in brake's state.

    In the database, not the cache, so the brake holds when Redis is down and across restarts.
    ``key`` is a hash of the pair (typed usernames are not stored).
    """

    key = models.CharField(max_length=64, unique=True)
    failures = models.PositiveIntegerField(default=0)
    last_failure_at = models.DateTimeField()
    locked_until = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.failures} failures"
