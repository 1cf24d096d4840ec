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


def set_read(user, slug: str, wanted: str | None) -> bool:
    """Mark ``slug`` read ("1") or unread ("0") for ``user``, as the button pressed asked, and
    return whether it is read now. Saying what is wanted makes a double click (two posts) land
    where one does; a mark already there keeps its first read time (re-narrations count from it).
    Anything else (an older page's button sends nothing) toggles."""
    marks = ReadMark.objects.filter(user=user, slug=slug)
    if wanted not in ("0", "1"):
        wanted = "0" if marks.exists() else "1"
    if wanted == "0":
        marks.delete()
        return False
    ReadMark.objects.get_or_create(user=user, slug=slug)
    return True
