"""Services the rest of the site calls into the content app with."""

from __future__ import annotations

from typing import Any

from django.utils import timezone


def home_assignments(user) -> list[dict[str, Any]]:
    """The learner's assignments across their cohorts for the home page: effective due and
    cut-off (extensions applied) and each walkthrough's status (done / late / missing / open),
    unfinished ones first, soonest due first."""
    if not getattr(user, "is_authenticated", False):
        return []
    from cohorts.progress import learner_assignments

    return learner_assignments(user, timezone.now())
