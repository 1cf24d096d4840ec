"""Read models for the learner's home and dashboard. Aggregation happens in SQL."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from drills import scheduling
from drills.models import Card
from scenarios import engine


def due_overview(user, now: datetime) -> dict[str, Any]:
    cards = {
        c.item: c.state
        for c in Card.objects.filter(user=user, kind=Card.Kind.SCENARIO).only("item", "state")
    }
    states = {slug: cards.get(slug) for slug in engine.SCENARIOS}
    summary = scheduling.due_summary(states, now)
    titles = {slug: s.title for slug, s in engine.SCENARIOS.items()}
    return {
        "due_now": [(slug, titles[slug]) for slug in summary["due_now"]],
        "due_today": [(slug, titles[slug]) for slug in summary["due_today"]],
        "next": [(slug, titles[slug], when) for slug, when in summary["next"]],
        "unseen": [slug for slug, st in states.items() if st is None],
    }
