"""The per-sentence accuracy table, drawn in Python from ``charts.sentence_table``.

Shared by the dashboard, the instructor page and a learner's page in a cohort. A dozen weeks of
nine cells, four values each: through the template engine it was the biggest part of drawing the
dashboard after a grade. The markup is the one the template printed (the tests read its
``data-sentence-week`` rows and ``data-sentence`` cells); every text value is escaped.
"""

from __future__ import annotations

from typing import Any

from django.utils.safestring import SafeString, mark_safe

from drills.stats.format import day_label, esc


def _cells(cells: list[dict[str, Any]]) -> str:
    return "".join(
        f'<td class="num" data-sentence="{esc(c["key"])}" '
        f'title="{c["right"]} of {c["graded"]}">{esc(c["txt"])}</td>'
        for c in cells
    )


def sentence_table_html(st: dict[str, Any]) -> SafeString:
    """The table of ``charts.sentence_table``'s rows: the weeks with attempts, newest first,
    and the window's total; without a graded attempt in the window, a sentence saying so (a table
    of no weeks would show only an empty total row)."""
    if not st["weeks"]:
        return mark_safe(
            '<p class="muted" id="sentence-accuracy-empty">'
            "No graded attempts in the last 12 weeks.</p>\n"
        )
    heads = "".join(f'<th scope="col" class="num">{esc(t)}</th>' for t in st["titles"])
    rows = []
    for w in st["weeks"]:
        iso = day_label(w["week"], "Y-m-d")
        rows.append(
            f'    <tr data-sentence-week="{iso}">\n'
            f'      <th scope="row"><time datetime="{iso}">{day_label(w["week"], "j M Y")}'
            "</time></th>\n"
            f'      <td class="num">{w["attempts"]}</td>\n'
            f"      {_cells(w['cells'])}\n"
            "    </tr>\n"
        )
    return mark_safe(
        '<div class="table-scroll">\n'
        '<table class="compact dash-table sentence-accuracy" id="sentence-accuracy">\n'
        '  <caption class="muted">Share right per sentence (right of graded); older three-part '
        "attempts count only for the signature, measurement and fix.</caption>\n"
        '  <thead><tr><th scope="col">Week of</th><th scope="col" class="num">Attempts</th>'
        f"{heads}</tr></thead>\n"
        f"  <tbody>\n{''.join(rows)}  </tbody>\n"
        '  <tfoot><tr data-sentence-week="total"><th scope="row">All 12 weeks</th>'
        f'<td class="num">{sum(w["attempts"] for w in st["weeks"])}</td>'
        f"{_cells(st['total'])}</tr></tfoot>\n"
        "</table>\n</div>\n"
    )
