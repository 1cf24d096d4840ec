"""Pair discrimination over time: the dashboard's view of a learner's contrast trials."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import Count, Q
from django.db.models.functions import TruncWeek

from drills import scheduling
from drills.models import Attempt
from scenarios import engine


def _monday(when: datetime) -> date:
    d = when.astimezone(UTC).date()
    return d - timedelta(days=d.weekday())


def pair_discrimination(user, now: datetime, *, weeks: int = 12) -> list[dict[str, Any]]:
    """Per confused pair with a graded trial: trials graded, picked right, and the weekly share
    right over the last ``weeks`` weeks (empty weeks with ``rate`` None). Lookalike pairs first,
    then the most trialled."""
    end = _monday(now)
    first = end - timedelta(weeks=weeks - 1)
    # One query: every trial counted per (pair, week); the all-time totals are their sums.
    weekly: dict[str, dict[date, tuple[int, int]]] = defaultdict(dict)
    for r in (
        Attempt.objects.filter(user=user, kind=Attempt.Kind.CONTRAST)
        .graded()
        .annotate(week=TruncWeek("submitted_at", tzinfo=UTC))
        .order_by()
        .values("item", "week")
        .annotate(n=Count("pk"), right=Count("pk", filter=Q(scenario_correct=True)))
    ):
        week = r["week"].date() if isinstance(r["week"], datetime) else r["week"]
        weekly[r["item"]][week] = (r["n"], r["right"])
    out: list[dict[str, Any]] = []
    for item in sorted(weekly):
        try:
            a, b = scheduling.pair_of(item)
        except ValueError:
            continue
        n_all = sum(n for n, _r in weekly[item].values())
        right_all = sum(r for _n, r in weekly[item].values())
        trend = []
        for k in range(weeks):
            week = first + timedelta(weeks=k)
            n, right = weekly[item].get(week, (0, 0))
            trend.append(
                {"week": week, "attempts": n, "confused": right, "rate": right / n if n else None}
            )
        out.append(
            {
                "pair": item,
                "titles": (engine.title_of(a), engine.title_of(b)),
                "lookalike": scheduling.is_lookalike_pair(item),
                "trials": n_all,
                "right": right_all,
                "rate": right_all / n_all if n_all else None,
                "trend": trend,
            }
        )
    out.sort(key=lambda p: (not p["lookalike"], -p["trials"], p["pair"]))
    return out
