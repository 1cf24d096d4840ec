"""The dashboard's two big SVG charts and the pairs' sparklines, drawn in Python from
``charts``' geometry.

The confusion heatmap (a cell per true x answered pair) and the activity grid (a cell per day
of 26 weeks) are a few hundred cells each; through the template engine every cell cost a dozen
variable lookups and number localisations, about two thirds of drawing the page after a grade.
Here each cell is one f-string. The markup is byte for byte what the template partials printed
(``tests/drills/test_dashboard.py`` reads it, ``static/`` styles it); every text value is
escaped, and numbers print as the template printed them (``str``: no thousands separator).
"""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString, mark_safe

from drills.stats.format import esc


def confusion_svg(c: dict[str, Any]) -> SafeString:
    """The heatmap of ``charts.confusion_chart``'s geometry."""
    w, h, size = c["width"], c["height"], c["cell"]
    label_w, head_h, total_x = c["label_w"], c["head_h"], c["total_x"]
    out = [
        f'\n<svg class="chart confusion" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        'role="img" aria-labelledby="confusion-title confusion-desc">\n'
        '  <title id="confusion-title">Confusion matrix: true scenario (rows) by answered '
        "scenario (columns)</title>\n"
        '  <desc id="confusion-desc">Each cell prints the number of graded attempts; shade is the '
        "share of the row. Lookalike pairs are outlined.</desc>\n"
        f'  <text class="axis-title" x="{label_w}" y="12">answered →</text>\n'
        f'  <text class="axis-title" x="4" y="{head_h - 8}">true ↓</text>\n  '
    ]
    out += [
        f'<text class="col-label" transform="translate({col["x"]} {head_h - 6}) rotate(-55)">'
        f"{esc(col['title'])}</text>"
        for col in c["cols"]
    ]
    out.append("\n  ")
    out += [
        f'<text class="row-label" x="{label_w - 6}" y="{row["y"]}" text-anchor="end">'
        f"{esc(row['title'])}</text>\n"
        f'  <text class="row-total" x="{total_x}" y="{row["y"]}">{row["total"]}</text>'
        for row in c["rows"]
    ]
    out.append(f'\n  <text class="axis-title" x="{total_x}" y="{head_h - 8}">n</text>\n  ')
    for cell in c["cells"]:
        x, y = cell["x"], cell["y"]
        fill = (
            f'<rect class="fill" x="{x}" y="{y}" width="{size}" height="{size}" '
            f'fill-opacity="{esc(cell["opacity"])}"/>\n'
            f'    <text class="count" x="{cell["cx"]}" y="{cell["cy"]}" text-anchor="middle">'
            f"{cell['n']}</text>"
            if cell["n"]
            else ""
        )
        out.append(
            f'<g class="cell {esc(cell["kind"])}"><title>{esc(cell["label"])}</title>\n'
            f'    <rect class="bg" x="{x}" y="{y}" width="{size}" height="{size}"/>\n'
            f"    {fill}\n  </g>"
        )
    out.append("\n  ")
    out += [
        f'<rect class="pair-outline" x="{cell["x"] + 1}" y="{cell["y"] + 1}" '
        f'width="{size - 2}" height="{size - 2}"/>'
        for cell in c["cells"]
        if cell["pair"]
    ]
    out.append("\n</svg>\n")
    return mark_safe("".join(out))


def activity_svg(h: dict[str, Any]) -> SafeString:
    """The day grid of ``charts.activity_chart``'s geometry."""
    w, ht, day = h["w"], h["h"], h["day"]
    out = [
        f'\n<svg class="chart activity" viewBox="0 0 {w} {ht}" width="{w}" height="{ht}" '
        'role="img" aria-labelledby="act-title">\n'
        '  <title id="act-title">Graded attempts per day (UTC), one column per week; counts '
        "printed in the cells</title>\n  "
    ]
    out += [f'<text class="tick" x="{m["x"]}" y="12">{esc(m["label"])}</text>' for m in h["months"]]
    out.append("\n  ")
    out += [
        f'<text class="tick" x="0" y="{d["y"]}">{esc(d["label"])}</text>' for d in h["weekdays"]
    ]
    out.append("\n  ")
    for cell in h["cells"]:
        n = cell["n"]
        count = (
            f'<text class="day-n" x="{cell["tx"]}" y="{cell["ty"]}" text-anchor="middle">{n}</text>'
            if n
            else ""
        )
        out.append(
            f"<g><title>{esc(cell['label'])}</title>"
            f'<rect class="day l{cell["level"]}" x="{cell["x"]}" y="{cell["y"]}" '
            f'width="{day}" height="{day}" rx="3"/>{count}</g>'
        )
    out.append("\n</svg>\n")
    return mark_safe("".join(out))


CONFUSION_RATE = "Weekly confusion rate"
PICKED_RIGHT = "Weekly share picked right"


def spark_label(s: dict[str, Any], what: str = CONFUSION_RATE) -> str:
    """What a sparkline says to a screen reader: what it plots (``what``: a lookalike pair's
    confusion rate, or a contrast pair's share picked right), its first and last week's rate, or
    that it has one week or none (not "— to —")."""
    if len(s["points"]) > 1:
        return f"{what}, {s['first']} to {s['last']}"
    if s["points"]:
        return f"{what}, one week so far: {s['first']}"
    return f"{what}: no graded attempts in the weeks shown"


def spark_svg(s: dict[str, Any], what: str = CONFUSION_RATE) -> SafeString:
    """A lookalike pair's (or, with ``what`` = ``PICKED_RIGHT``, a contrast pair's) weekly
    line, from ``charts.sparkline``."""
    w, h, mid = s["w"], s["h"], s["mid"]
    line = f'<polyline class="spark-line" points="{s["path"]}"/>' if len(s["points"]) > 1 else ""
    dots = "".join(
        f'<circle class="spark-dot" cx="{p["x"]}" cy="{p["y"]}" r="2.5">'
        f"<title>{esc(p['label'])}</title></circle>"
        for p in s["points"]
    )
    return mark_safe(
        f'\n<svg class="chart spark" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" '
        f'aria-label="{esc(spark_label(s, what))}">\n'
        f'  <line class="spark-base" x1="0" x2="{w}" y1="{h - 6}" y2="{h - 6}"/>\n'
        f'  <line class="spark-mid" x1="0" x2="{w}" y1="{mid}" y2="{mid}"/>\n'
        f"  {line}\n  {dots}\n</svg>\n"
    )
