"""The dashboard's body drawn in Python from the learner's numbers (the rest of the page, around
it, is ``templates/drills/dashboard.html``).

The grading request draws this body for the learner's new state (``drills.stats.warm``), and a view
that finds no drawing draws it itself. Through the template engine, a few hundred variable lookups,
escapes and number localisations were most of that drawing. The markup is the one the template
partial printed, byte for byte (the tests read its ``data-`` rows, KPIs and cells; ``static/``
styles it); every text value is escaped, numbers print as the template printed them (``str``: no
thousands separator) and dates through the template's own ``date`` filter. Each ``LIVE`` marks a
row's card columns, filled on every view (``views.card_cells``).
"""

from __future__ import annotations

from typing import Any

from django.template.defaultfilters import floatformat
from django.urls import reverse

from drills.stats.format import RETRIEVABILITY_NOTE, day_label, esc, pct

LIVE = "<!--live-->"


def _plural(n: int) -> str:
    return "" if n == 1 else "s"


def _head(stats: dict[str, Any], totals_accuracy: str) -> str:
    totals, ren, act = stats["totals"], stats["renarrations"], stats["daily_activity"]
    return (
        '\n<section class="card dash-head">\n'
        "  <h1>Dashboard</h1>\n"
        '  <p class="lede">Every graded drill counts toward accuracy and the confusion matrix, '
        "untimed practice included; one you gave up on or let run out counts as a miss. Times "
        "and your schedule use only drills on the clock. The drill still open is not here. "
        f'<a href="{esc(reverse("stats:json"))}">stats.json</a></p>\n'
        '  <dl class="kpis">\n'
        '    <div><dt>Graded drills</dt><dd data-kpi="graded">'
        f"{totals['graded']}</dd></div>\n"
        f'    <div><dt>Scenario accuracy</dt><dd data-kpi="accuracy">{esc(totals_accuracy)}'
        "</dd></div>\n"
        '    <div><dt>of which untimed practice</dt><dd data-kpi="practice">'
        f"{totals['practice']}</dd></div>\n"
        '    <div><dt>Walkthrough re-narrations</dt><dd id="renarrations-total">'
        f"{ren['right']} of {ren['graded']} signatures right</dd></div>\n"
        f"    <div><dt>Active days (26 weeks)</dt><dd>{act['active_days']}</dd></div>\n"
        "  </dl>\n"
        f"{_first_steps(totals['graded'])}"
        "</section>\n\n"
    )


def _first_steps(graded: int) -> str:
    """A brand-new learner's dashboard is all dashes: say what fills it and where to begin."""
    if graded:
        return ""
    return (
        '  <p class="empty-note" id="dashboard-empty">Nothing graded yet: every table and chart '
        "below fills in as you commit diagnoses. "
        f'<a class="button primary" href="{esc(reverse("trainer:home"))}">'
        "Start your first drill</a>"
        f' or read <a href="{esc(reverse("content:page", args=["vocabulary-rows"]))}">'
        "the rows of a trace</a> first.</p>\n"
    )


def _scenario_row(r: dict[str, Any]) -> str:
    twin = ' <span class="pill muted" title="lookalike pair">twin</span>' if r["twin"] else ""
    last_n = r["last_n"]
    of = f' <span class="muted">of {last_n}</span>' if last_n and last_n < 10 else ""
    return (
        f'\n      <tr data-scenario-row="{esc(r["slug"])}">\n'
        f'        <th scope="row">{esc(r["title"])}{twin}</th>\n'
        f'        <td class="num">{r["attempts"]}</td>\n'
        f'        <td class="num muted">{r["practice"]}</td>\n'
        f'        <td class="num">{esc(r["accuracy_txt"])}</td>\n'
        f'        <td class="num">{esc(r["last_n_txt"])}{of}</td>\n'
        f'        <td class="num">{esc(r["median_txt"])}</td>\n'
        f'        <td class="num">{esc(r["under_txt"])}</td>\n'
        f'        <td class="num">{esc(r["step_txt"])}</td>\n'
        f'        <td class="num">{esc(r["gap_txt"])}</td>\n'
        f'        <td class="num">{esc(r["measurement_txt"])}</td>\n'
        f'        <td class="num">{esc(r["value_txt"])}</td>\n'
        f'        <td class="num">{esc(r["fix_txt"])}</td>\n'
        f'        <td class="num">{esc(r["win_txt"])}</td>\n'
        f"        {LIVE}\n"
        "      </tr>\n    "
    )


def _scenarios(stats: dict[str, Any], table: list[dict[str, Any]]) -> str:
    limit = esc(floatformat(stats["time_limit_s"], 0))
    return (
        '<section class="card">\n'
        '  <h2 id="per-scenario">Per scenario</h2>\n'
        f'  <p class="muted">{esc(RETRIEVABILITY_NOTE)}</p>\n'
        '  <div class="table-scroll">\n'
        '  <table class="compact dash-table" aria-describedby="per-scenario">\n'
        '    <colgroup span="7"></colgroup><colgroup span="6"></colgroup><colgroup span="2">'
        "</colgroup>\n"
        '    <thead><tr class="col-groups"><td colspan="7"></td>'
        '<th scope="colgroup" colspan="6">Each sentence right, share of graded drills</th>'
        '<td colspan="2"></td></tr>\n'
        "    <tr>\n"
        '      <th scope="col">Scenario</th><th scope="col" class="num">Attempts</th>'
        '<th scope="col" class="num">of which practice</th>'
        '<th scope="col" class="num">Accuracy</th>\n'
        '      <th scope="col" class="num">Last 10</th><th scope="col" class="num">Median time'
        f'</th><th scope="col" class="num">Under {limit} s</th>\n'
        '      <th scope="col" class="num">Step time</th><th scope="col" class="num">Gap</th>\n'
        '      <th scope="col" class="num">Measure&shy;ment</th>'
        '<th scope="col" class="num">Value</th>'
        '<th scope="col" class="num">Fix</th><th scope="col" class="num">Expected step time</th>\n'
        '      <th scope="col" class="num">Retriev&shy;ability</th><th scope="col">Next due</th>\n'
        "    </tr></thead>\n"
        "    <tbody>\n    "
        f"{''.join(_scenario_row(r) for r in table)}"
        "\n    </tbody>\n"
        "  </table>\n"
        "  </div>\n"
        "</section>\n\n"
    )


def _trend_note(spark: dict[str, Any], none: str) -> str:
    """The words beside a pair's sparkline: every week with attempts, as the line shows them
    (the first and last only left the weeks between to the drawing, which a screen reader does
    not read)."""
    first_week = spark["first_week"]
    if len(spark["points"]) > 1:
        return " → ".join(f"{day_label(week, 'j M')}: {esc(rate)}" for week, rate in spark["weeks"])
    if first_week:
        return (
            f"one week so far ({day_label(first_week, 'j M')}: {esc(spark['first'])}); "
            "a trend needs two"
        )
    return none


def _pair(p: dict[str, Any]) -> str:
    return (
        f'\n    <li data-pair="{esc(p["true"])}→{esc(p["answered"])}">\n'
        f'      <div class="pair-text"><strong>{esc(p["true_title"])}</strong> answered as '
        f"<strong>{esc(p['answered_title'])}</strong>:\n"
        f'        <span class="rate">{esc(p["rate_txt"])}</span> <span class="muted">'
        f"({p['confused']} of {p['attempts']})</span></div>\n"
        f'      <div class="pair-trend">{p["spark_svg"]}\n'
        '        <span class="muted small">'
        f"{_trend_note(p['spark'], 'no attempts in 12 weeks')}</span></div>\n"
        "    </li>\n  "
    )


def _pair_trial(p: dict[str, Any]) -> str:
    lookalike = ' <span class="muted">(lookalikes)</span>' if p["lookalike"] else ""
    return (
        f'\n    <li data-pair-card="{esc(p["pair"])}">\n'
        f'      <div class="pair-text"><strong>{esc(p["titles"][0])}</strong> vs '
        f"<strong>{esc(p['titles'][1])}</strong>{lookalike}:\n"
        f'        <span class="rate">{esc(p["rate_txt"])}</span> <span class="muted">'
        f"({p['right']} of {p['trials']} trial{_plural(p['trials'])} right)</span></div>\n"
        f'      <div class="pair-trend">{p["spark_svg"]}\n'
        '        <span class="muted small">'
        f"{_trend_note(p['spark'], 'no trials in 12 weeks')}</span></div>\n"
        "    </li>\n  "
    )


def _as_table(
    summary: str, caption: str, head: list[str], rows: list[list[str]], empty: str
) -> str:
    """A chart's numbers as a table, folded under the chart: the drawing is an image to a screen
    reader (and its printed numbers are too small to read for some), so the table says the
    same in text. ``rows`` hold escaped cell text; ``empty`` stands in when there are none."""
    if not rows:
        return f'  <p class="muted small chart-text">{esc(empty)}</p>\n'
    th = "".join(f'<th scope="col">{esc(h)}</th>' for h in head)
    body = "".join(
        f'<tr><th scope="row">{r[0]}</th>{"".join(f"<td>{c}</td>" for c in r[1:])}</tr>'
        for r in rows
    )
    return (
        f'  <details class="chart-text"><summary>{esc(summary)}</summary>\n'
        f'  <div class="table-scroll"><table class="compact"><caption>{esc(caption)}</caption>'
        f"<thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>\n"
        "  </details>\n"
    )


def confusion_text(confusion: dict[str, Any]) -> str:
    """The confusion matrix's cells that hold an attempt, as a table (the others are 0)."""
    titles, totals = confusion["titles"], confusion["row_totals"]
    rows = []
    for i, counts in enumerate(confusion["matrix"]):
        for j, n in enumerate(counts):
            if n:
                rows.append([esc(titles[i]), esc(titles[j]), str(n), esc(pct(n / totals[i]))])
    return _as_table(
        "The matrix as a table",
        "Every true scenario and answer with at least one graded attempt; all other cells are 0",
        ["True scenario", "Answered", "Attempts", "Share of the true scenario's attempts"],
        rows,
        "No graded attempts yet: every cell is 0.",
    )


def accuracy_text(weeks: list[dict[str, Any]]) -> str:
    """The weekly accuracy line's points, as a table."""
    rows = [
        [
            day_label(w["week"], "j M Y"),
            str(w["attempts"]),
            str(w["correct"]),
            esc(pct(w["accuracy"])),
        ]
        for w in weeks
    ]
    return _as_table(
        "The chart as a table",
        "Scenario accuracy per week (weeks start on Monday, UTC)",
        ["Week of", "Graded", "Scenario right", "Accuracy"],
        rows,
        "No weeks to show.",
    )


def activity_text(activity: dict[str, Any]) -> str:
    """The day grid's days with a graded attempt, as a table (every other day had none)."""
    rows = [
        [day_label(d["date"], "D j M Y"), str(d["count"])]
        for column in activity["weeks"]
        for d in column
        if d["count"]
    ]
    return _as_table(
        "The active days as a table",
        "Days (UTC) with at least one graded attempt; every other day had none",
        ["Day", "Graded attempts"],
        rows,
        "No graded attempts in these 26 weeks.",
    )


def _confusion_and_pairs(stats: dict[str, Any], confusion_svg: str, pairs: list) -> str:
    confusion = stats["confusion"]
    total = confusion["total"]
    return (
        '<div class="dash-grid">\n'
        '<section class="card">\n'
        "  <h2>Confusion matrix</h2>\n"
        '  <p class="muted">Rows: the true scenario; columns: what you answered. The diagonal is '
        f"right. Outlined cells are the lookalike pairs. {total} graded attempt{_plural(total)}, "
        f"{confusion['correct']} on the diagonal.</p>\n"
        f'  <div class="chart-scroll">{confusion_svg}</div>\n'
        f"{confusion_text(confusion)}"
        "</section>\n\n"
        '<section class="card">\n'
        "  <h2>Lookalike confusions</h2>\n"
        '  <p class="muted">How often the true scenario was answered as its twin, all time, with '
        "the weekly rate over the last 12 weeks.</p>\n"
        '  <ul class="pairs">\n  '
        f"{''.join(_pair(p) for p in pairs)}"
        "\n  </ul>\n"
        "</section>\n"
        "</div>\n\n"
    )


def _pair_trials(pair_trials: list) -> str:
    if pair_trials:
        listed = (
            f'\n  <ul class="pairs">\n  {"".join(_pair_trial(p) for p in pair_trials)}\n  </ul>\n  '
        )
    else:
        listed = '<p id="no-pairs">No confused pairs yet.</p>'
    return (
        '<section class="card" id="pair-discrimination">\n'
        "  <h2>Telling confused pairs apart</h2>\n"
        '  <p class="muted">Each pair you have named one for the other gets contrast trials: the '
        "two side by side, pick the one asked for. The share picked right, all time, with the "
        "weekly share over the last 12 weeks.</p>\n"
        f"  {listed}\n"
        "</section>\n\n"
    )


def accuracy_svg(a: dict[str, Any]) -> str:
    """The weekly accuracy line of ``charts.accuracy_chart``'s geometry."""
    w, h, left, right = a["w"], a["h"], a["left"], a["right"]
    grid = "".join(
        f'<line class="grid" x1="{left}" x2="{right}" y1="{g["y"]}" y2="{g["y"]}"/>\n'
        f'  <text class="tick" x="{left - 6}" y="{g["y"]}" dy="4" text-anchor="end">'
        f"{esc(g['label'])}</text>"
        for g in a["grid"]
    )
    lines = "".join(f'<polyline class="acc-line" points="{esc(line)}"/>' for line in a["lines"])
    cols = []
    for col in a["cols"]:
        x = col["x"]
        dot = (
            f'<circle class="acc-dot" cx="{x}" cy="{col["y"]}" r="3.5"/><text class="value" '
            f'x="{x}" y="{col["ly"]}" text-anchor="middle">{esc(col["value"])}</text>'
            if col["has"]
            else ""
        )
        cols.append(
            f"\n    {dot}\n"
            f'    <text class="tick" x="{x}" y="{a["date_y"]}" text-anchor="middle">'
            f"{day_label(col['week'], 'j M')}</text>\n"
            f'    <text class="tick muted" x="{x}" y="{a["n_y"]}" text-anchor="middle">'
            f"n={col['n']}</text>\n  "
        )
    return (
        f'\n<svg class="chart accuracy" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
        'role="img" aria-labelledby="acc-title">\n'
        '  <title id="acc-title">Scenario accuracy per week; the number of graded attempts is '
        "printed under each week</title>\n"
        f"  {grid}\n  {lines}\n  {''.join(cols)}\n</svg>\n"
    )


def _rest(stats: dict[str, Any], sentence_html: str, accuracy: str, activity_svg: str) -> str:
    act = stats["daily_activity"]
    total, days = act["total"], act["active_days"]
    busiest = f"; busiest day {act['max']}" if act["max"] else ""
    return (
        '<section class="card">\n'
        '  <h2 id="per-sentence">Accuracy per sentence over time</h2>\n'
        '  <p class="muted">Each sentence of the diagnosis, week by week: reading the numbers off '
        "the trace, not only recognising the picture.</p>\n"
        f'  <div class="table-scroll">{sentence_html}</div>\n'
        "</section>\n\n"
        '<section class="card">\n'
        "  <h2>Accuracy over time</h2>\n"
        f'  <div class="chart-scroll">{accuracy}</div>\n'
        f"{accuracy_text(stats['accuracy_over_time'])}"
        "</section>\n\n"
        '<section class="card">\n'
        "  <h2>Daily activity</h2>\n"
        f'  <p class="muted">{total} graded attempt{_plural(total)} on {days} day{_plural(days)} '
        f"since {day_label(act['start'], 'j M Y')} (UTC days){busiest}.</p>\n"
        f'  <div class="chart-scroll">{activity_svg}</div>\n'
        f"{activity_text(act)}"
        "</section>\n\n"
    )


def _math(math: list[dict[str, Any]]) -> str:
    rows = "".join(
        f'\n      <tr data-family-row="{esc(m["family"])}"><th scope="row">{esc(m["title"])}</th>'
        f'<td class="num">{m["attempts"]}</td><td class="num">{esc(m["accuracy_txt"])}</td>'
        f"{LIVE}</tr>\n    "
        for m in math
    )
    return (
        '<section class="card">\n'
        '  <h2 id="math">Mental math by family</h2>\n'
        '  <div class="table-scroll"><table class="compact" aria-describedby="math">\n'
        '    <thead><tr><th scope="col">Family</th><th scope="col" class="num">Attempts</th>'
        '<th scope="col" class="num">Accuracy</th><th scope="col" class="num">Retrievability'
        '</th><th scope="col">Next due</th></tr></thead>\n'
        f"    <tbody>{rows}</tbody>\n"
        "  </table></div>\n"
        "</section>\n"
    )


def body(c: dict[str, Any]) -> str:
    """The page body of ``views._drawn``'s context ``c``, with a ``LIVE`` mark per row."""
    stats = c["stats"]
    return "".join(
        (
            _head(stats, c["totals_accuracy"]),
            _scenarios(stats, c["table"]),
            _confusion_and_pairs(stats, c["confusion_svg"], c["pairs"]),
            _pair_trials(c["pair_trials"]),
            _rest(stats, c["sentence_html"], accuracy_svg(c["accuracy_chart"]), c["activity_svg"]),
            _math(c["math"]),
        )
    )
