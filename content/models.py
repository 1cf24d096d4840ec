from __future__ import annotations

from django.conf import settings
from django.db import models


class WalkthroughSet(models.Model):
    """A named, ordered list of walkthroughs (kept in sync with content/walkthrough_sets.yaml)."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    walkthroughs = models.JSONField(help_text="Ordered list of walkthrough slugs.")
    order = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["order", "title"]

    def __str__(self) -> str:
        return self.title


class ReadMark(models.Model):
    """A learner marked a track page (or finished a walkthrough) as read."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    slug = models.SlugField(max_length=120)
    read_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "slug"], name="readmark_unique")]

    def __str__(self) -> str:
        return f"{self.user_id} read {self.slug}"
