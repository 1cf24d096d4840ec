"""Per-family mental-math statistics for a learner.

The dashboard already aggregates these in SQL (``drills.stats.dashboard.math_stats``: one GROUP BY
family over the graded attempts, one query for the family cards, whatever the history's size);
``family_stats`` is that same aggregation under the name the math trainer and other callers use,
so there is exactly one implementation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from drills.stats.dashboard import math_stats


def family_stats(user, now: datetime) -> list[dict[str, Any]]:
    """One row per family (every family in ``FAMILIES``, drilled or not, in registry order):
    ``family``, ``title``, ``attempts``, ``correct``, ``accuracy`` (None when unattempted),
    ``retrievability`` (None when never reviewed) and ``due`` (the card's next due, or None)."""
    return math_stats(user, now)
