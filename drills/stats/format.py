"""How the stats pages print numbers: one percentage format, one duration format."""

from __future__ import annotations


def pct(value: float | None) -> str:
    return "—" if value is None else f"{round(value * 100)}%"


def mmss(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    total = round(seconds)
    return f"{total // 60}:{total % 60:02d}"
