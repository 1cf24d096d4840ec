"""Geometry of the server-rendered SVG charts (no JS; every value is printed, nothing needs
hovering). Pure functions from the read model's numbers to coordinates the templates draw."""

from __future__ import annotations

import functools
from datetime import date
from typing import Any

from drills.stats.format import pct


@functools.lru_cache(maxsize=4096)
def _strf(day: date, fmt: str) -> str:
    """``format(day, fmt)``, remembered: the charts print the same few dozen weeks and days on
    every drawing, and strftime was a good part of drawing the day grid and the sparklines."""
    return format(day, fmt)


def _short(title: str, limit: int = 26) -> str:
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"


CELL = 34
LABEL_W = 200
HEAD_H = 150


def confusion_chart(confusion: dict[str, Any], lookalikes: list[dict[str, Any]]) -> dict[str, Any]:
    """Rects and labels for the true x answered heatmap. Shade = share of the row (so a rarely
    drilled scenario still shows its confusions); the count is printed in every non-empty cell.
    Lookalike pair cells are outlined."""
    labels = confusion["labels"]
    matrix = confusion["matrix"]
    pair_cells = {(p["true"], p["answered"]) for p in lookalikes}
    cells = []
    for i, true in enumerate(labels):
        row_total = confusion["row_totals"][i]
        for j, answered in enumerate(labels):
            n = matrix[i][j]
            share = n / row_total if row_total else 0.0
            cells.append(
                {
                    "x": LABEL_W + j * CELL,
                    "y": HEAD_H + i * CELL,
                    "cx": LABEL_W + j * CELL + CELL / 2,
                    "cy": HEAD_H + i * CELL + CELL / 2 + 4,
                    "n": n,
                    "opacity": f"{0.12 + 0.88 * share:.2f}" if n else "0",
                    "kind": "hit" if i == j else "miss",
                    "pair": (true, answered) in pair_cells,
                    "label": f"{confusion['titles'][i]} answered as {confusion['titles'][j]}: {n}",
                }
            )
    size = len(labels) * CELL
    rows = [
        {
            "y": HEAD_H + i * CELL + CELL / 2 + 4,
            "title": _short(t),
            "total": confusion["row_totals"][i],
        }
        for i, t in enumerate(confusion["titles"])
    ]
    cols = [
        {"x": LABEL_W + j * CELL + CELL / 2, "title": _short(t)}
        for j, t in enumerate(confusion["titles"])
    ]
    return {
        "cells": cells,
        "rows": rows,
        "cols": cols,
        "cell": CELL,
        "label_w": LABEL_W,
        "head_h": HEAD_H,
        "total_x": LABEL_W + size + 8,
        "width": LABEL_W + size + 50,
        "height": HEAD_H + size + 10,
        "grid_right": LABEL_W + size,
        "grid_bottom": HEAD_H + size,
    }


SPARK_W, SPARK_H, SPARK_PAD = 180, 44, 6


def sparkline(trend: list[dict[str, Any]]) -> dict[str, Any]:
    """A tiny weekly-rate line (0-100 %) with a dot per week that had attempts."""
    n = len(trend)
    step = (SPARK_W - 2 * SPARK_PAD) / max(1, n - 1)
    points = []
    for k, week in enumerate(trend):
        if week["rate"] is None:
            continue
        x = SPARK_PAD + k * step
        y = SPARK_PAD + (1 - week["rate"]) * (SPARK_H - 2 * SPARK_PAD)
        points.append(
            {
                "x": round(x, 1),
                "y": round(y, 1),
                "label": (
                    f"week of {_strf(week['week'], '%d %b')}: {week['confused']}/{week['attempts']}"
                ),
            }
        )
    recent = [w for w in trend if w["rate"] is not None]
    return {
        "w": SPARK_W,
        "h": SPARK_H,
        "points": points,
        "path": " ".join(f"{p['x']},{p['y']}" for p in points),
        "mid": SPARK_H / 2,
        "first": pct(recent[0]["rate"]) if recent else "—",
        "last": pct(recent[-1]["rate"]) if recent else "—",
        "first_week": recent[0]["week"] if recent else None,
        "last_week": recent[-1]["week"] if recent else None,
        # every week with attempts, (Monday, rate printed), oldest first: the line in words
        "weeks": [(w["week"], pct(w["rate"])) for w in recent],
    }


ACC_W, ACC_H = 640, 230
ACC_L, ACC_R, ACC_T, ACC_B = 44, 30, 22, 46


def accuracy_chart(weeks: list[dict[str, Any]]) -> dict[str, Any]:
    """Weekly scenario accuracy as a line with printed values; weeks without attempts are gaps."""
    plot_w = ACC_W - ACC_L - ACC_R
    plot_h = ACC_H - ACC_T - ACC_B
    step = plot_w / max(1, len(weeks) - 1)
    cols = []
    segments: list[list[str]] = [[]]
    for k, week in enumerate(weeks):
        x = ACC_L + k * step
        col: dict[str, Any] = {
            "x": round(x, 1),
            "week": week["week"],
            "n": week["attempts"],
            "value": pct(week["accuracy"]),
            "has": week["accuracy"] is not None,
        }
        if week["accuracy"] is not None:
            col["y"] = round(ACC_T + (1 - week["accuracy"]) * plot_h, 1)
            col["ly"] = col["y"] - 8 if col["y"] > ACC_T + 14 else col["y"] + 16
            segments[-1].append(f"{col['x']},{col['y']}")
        elif segments[-1]:
            segments.append([])
        cols.append(col)
    grid = [{"y": round(ACC_T + (1 - v / 100) * plot_h, 1), "label": f"{v}%"} for v in (0, 50, 100)]
    return {
        "w": ACC_W,
        "h": ACC_H,
        "left": ACC_L,
        "right": ACC_W - ACC_R,
        "base": ACC_T + plot_h,
        "cols": cols,
        "lines": [" ".join(s) for s in segments if len(s) > 1],
        "grid": grid,
        "date_y": ACC_T + plot_h + 16,
        "n_y": ACC_T + plot_h + 32,
    }


DAY, GAP, ACT_L, ACT_T = 18, 3, 34, 22


WEEKDAYS = ["Mon", "", "Wed", "", "Fri", "", "Sun"]


def _level(count: int, peak: int) -> int:
    if count <= 0:
        return 0
    if peak <= 4:
        return min(4, count)
    return min(4, 1 + (4 * (count - 1)) // peak)


def activity_chart(activity: dict[str, Any]) -> dict[str, Any]:
    """GitHub-style grid: one column per week (Monday on top), counts printed in the cells."""
    peak = activity["max"]
    cells = []
    months = []
    last_month = None
    for k, column in enumerate(activity["weeks"]):
        x = ACT_L + k * (DAY + GAP)
        first: date = column[0]["date"]
        if first.month != last_month:
            months.append({"x": x, "label": f"{first:%b}"})
            last_month = first.month
        for i, day in enumerate(column):
            if day["future"]:
                continue
            cells.append(
                {
                    "x": x,
                    "y": ACT_T + i * (DAY + GAP),
                    "tx": x + DAY / 2,
                    "ty": ACT_T + i * (DAY + GAP) + DAY / 2 + 3.5,
                    "n": day["count"],
                    "level": _level(day["count"], peak),
                    "label": f"{_strf(day['date'], '%a %d %b %Y')}: {day['count']}",
                }
            )
    n_weeks = len(activity["weeks"])
    return {
        "w": ACT_L + n_weeks * (DAY + GAP) + 4,
        "h": ACT_T + 7 * (DAY + GAP) + 4,
        "day": DAY,
        "cells": cells,
        "months": months,
        "weekdays": [
            {"y": ACT_T + i * (DAY + GAP) + DAY / 2 + 4, "label": label}
            for i, label in enumerate(WEEKDAYS)
            if label
        ],
    }


def sentence_table(sentence_accuracy: dict[str, Any]) -> dict[str, Any]:
    """Per-sentence accuracy as a table: the weeks with attempts (newest first) and a total row.
    Shared by the dashboard and the cohort pages (drawn by ``tables.sentence_table_html``)."""
    keys = [s["key"] for s in sentence_accuracy["sentences"]]

    def cells(per: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {
                "key": k,
                "txt": pct(per[k]["accuracy"]),
                "right": per[k]["right"],
                "graded": per[k]["graded"],
            }
            for k in keys
        ]

    weeks = [
        {"week": w["week"], "attempts": w["attempts"], "cells": cells(w["sentences"])}
        for w in reversed(sentence_accuracy["weeks"])
        if w["attempts"]
    ]
    return {
        "titles": [s["title"] for s in sentence_accuracy["sentences"]],
        "weeks": weeks,
        "total": cells(sentence_accuracy["totals"]),
    }
