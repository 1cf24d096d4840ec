"""How the stats pages print numbers: one percentage format, one duration format; and the
escaping and date printing of the parts drawn in Python (``svg``, ``tables``, ``page``)."""

from __future__ import annotations

import functools
import html
from datetime import date
from typing import Any

from django.template.defaultfilters import date as date_filter


def esc(text: Any) -> str:
    """``django.utils.html.escape`` without its lazy-string wrapper and ``SafeString``: the same
    characters escaped the same way (it is ``html.escape(str(text))``), at a fraction of the
    cost over a page's thousand-odd cells."""
    return html.escape(str(text))


@functools.lru_cache(maxsize=4096)
def day_label(day: date, fmt: str) -> str:
    """``day|date:fmt`` as a template prints it, escaped: for a date (not a datetime, so no
    time zone comes in), remembered (a page prints the same few dozen weeks and days)."""
    return esc(date_filter(day, fmt))


def pct(value: float | None) -> str:
    return "—" if value is None else f"{round(value * 100)}%"


def mmss(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    total = round(seconds)
    return f"{total // 60}:{total % 60:02d}"


# What the retrievability column means, said wherever it is shown beside an accuracy: just after
# a review it reads near 100 % whatever the answer was (FSRS measures recall since the last
# review), so a fresh miss would otherwise look mastered.
RETRIEVABILITY_NOTE = (
    "Retrievability is the scheduler's estimate that you would answer right today. Just after "
    "any review it reads near 100 %, right or wrong; after a miss it falls within days, so the "
    "item comes back soon (next due)."
)
