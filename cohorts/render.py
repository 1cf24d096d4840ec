"""The instructor page's two big grids, rendered in Python.

At 200 learners the grids have ~3,400 cells; through the template engine each cell cost a dozen
variable lookups, filters and tags (≈1.5 s for the page). Here each row's cells are one string
join over values ``progress.cohort_grid`` already computed, so rendering is O(learners ×
columns) string formatting, for the one page of learners shown. The markup is the one the
template used (the tests and cohorts.css read it), less the sort values the browser needed
before the server sorted and paged the roster; every interpolated value is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator


def _when(value) -> str:
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M")


def walkthrough_cells(row: dict[str, Any]) -> SafeString:
    parts = []
    for c in row["cells"]:
        s = c["status"]  # one of progress.DONE/LATE/MISSING/OPEN: no markup
        ext = (
            f' <span class="ext" title="extended to {_when(c["due"])} UTC">ext</span>'
            if c["extended"]
            else ""
        )
        read = (
            ' <span class="ext" title="read; not re-narrated yet">read, not re-narrated</span>'
            if c.get("awaiting")
            else ""
        )
        parts.append(f'<td class="status status-{s}" data-status="{s}">{s}{read}{ext}</td>')
    for g in row["goals"]:
        if g is None:
            continue
        met = "met" if g["met"] else "not met"
        cls = "status-done" if g["met"] else "status-open"
        named = "; ".join(f"{p['title']}: {p['n']} of {p['k']}" for p in g.get("pairs", ()))
        hover = f' title="{escape(named)}"' if named else ""
        parts.append(
            f'<td class="{cls}"{hover}>{met} <span class="muted">{escape(g["detail"])}</span></td>'
        )
    return mark_safe("".join(parts))


def scenario_cells(row: dict[str, Any]) -> SafeString:
    parts = []
    for c in row["scenarios"]:
        acc, r, n = c.acc_display, c.r_display, c.attempts
        overdue = ""
        if c.overdue_days is not None:
            d = c.overdue_days
            overdue = (
                f'<span class="overdue-mark" title="review overdue by {d} '
                f'day{"" if d == 1 else "s"}">!{d}d</span>'
            )
        elif c.due_now:
            overdue = '<span class="due-mark" title="due for review now">due</span>'

        parts.append(
            f'<td class="sc {c.heat}" data-acc="{acc}" data-r="{r}" data-attempts="{n}">'
            f'<span class="acc">{acc + "%" if n else "–"}</span><small class="n">{n}</small>'
            f'<span class="r {c.r_heat}">{r or "–"}</span>{overdue}</td>'
        )
    return mark_safe("".join(parts))


def add_row_html(grid: dict[str, Any], cohort, csrf_token: str) -> None:
    """Adds ``walkthrough_tr`` and ``scenario_tr`` (each a whole ``<tr>``) to every row of
    ``grid``. URLs come from one reverse() each, with the user id substituted."""
    marker = "2147483647"
    learner = reverse("cohorts:learner", args=[cohort.pk, marker]).rpartition(marker)
    remove = reverse("cohorts:remove_member", args=[cohort.pk, marker]).rpartition(marker)
    token = escape(csrf_token)
    cohort_name = escape(cohort.name)
    for row in grid["rows"]:
        uid = str(row["user"].pk)
        name = escape(row["user"].username)
        head = (
            f'<tr data-learner="{name}">\n'
            f'        <th scope="row">'
            f'<a href="{learner[0]}{uid}{learner[2]}">{name}</a></th>\n'
        )
        row["walkthrough_tr"] = mark_safe(
            f"{head}"
            f'        <td class="num">{row["done"]}</td>\n'
            f'        <td class="num">{row["missing"]}</td>\n'
            f"        {walkthrough_cells(row)}\n"
            f'        <td><form method="post" action="{remove[0]}{uid}{remove[2]}" class="inline" '
            f'data-confirm="Remove {name} from {cohort_name}?">'
            f'<input type="hidden" name="csrfmiddlewaretoken" value="{token}">'
            f'<button type="submit" class="link" aria-label="Remove {name} from {cohort_name}">'
            "remove</button></form></td>\n"
            f"      </tr>"
        )
        row["scenario_tr"] = mark_safe(
            f"{head}"
            f'        <td class="num">{row["attempts"]}</td>\n'
            f"        {scenario_cells(row)}\n"
            f"      </tr>"
        )


# --------------------------------------------------------------------------- roster controls


def roster_query(sort: str, descending: bool, metric: str, page: int = 1) -> str:
    """The query string of one view of the roster (defaults left out)."""
    params: dict[str, str | int] = {}
    if sort != "name":
        params["sort"] = sort
    if descending:
        params["dir"] = "desc"
    if metric == "r" and not sort.startswith("r:"):
        params["metric"] = "r"
    if page > 1:
        params["page"] = page
    return "?" + urlencode(params) if params else "?"


def _head(grid: dict[str, Any], key: str, metric: str) -> dict[str, str]:
    """A sortable header: the link (ascending first, the other way when already sorted on
    it) and its ``aria-sort``."""
    current = grid["sort"] == key
    desc = current and not grid["descending"]
    aria = ("descending" if grid["descending"] else "ascending") if current else "none"
    return {"href": roster_query(key, desc, metric), "aria": aria}


def roster_controls(grid: dict[str, Any], metric: str) -> dict[str, Any]:
    """Header links, the accuracy / retrievability switch and the page links of the roster,
    each keeping the rest of the view (sort, direction, metric)."""
    sort, desc = grid["sort"], grid["descending"]
    on_scenario = sort.startswith(("acc:", "r:"))
    slug = sort.partition(":")[2]

    def switch(to: str) -> str:
        if on_scenario:
            return roster_query(f"{to}:{slug}", desc, to)
        return roster_query(sort, desc, to, grid["page"])

    page, pages = grid["page"], grid["pages"]
    return {
        "metric": metric,
        "heads": {k: _head(grid, k, metric) for k in ("name", "read", "missing", "drills")},
        "scenario_heads": [
            {"s": s, **_head(grid, f"{metric}:{s.slug}", metric)} for s in grid["scenarios"]
        ],
        "by_acc": switch("acc"),
        "by_r": switch("r"),
        "pages": [
            {"n": n, "href": roster_query(sort, desc, metric, n), "current": n == page}
            for n in range(1, pages + 1)
        ],
        "prev": roster_query(sort, desc, metric, page - 1) if page > 1 else None,
        "next": roster_query(sort, desc, metric, page + 1) if page < pages else None,
    }


# --------------------------------------------------------------------------- confusion


def confusion_table(conf) -> SafeString:
    """The true × answered table of a ``progress.Confusion`` (the instructor page and a
    learner's page), with its legend: 121 cells, each with its share of the row as a shade
    class and a title that spells it out. One string join: through the template engine this
    table was most of the time of a cohort view after a grade."""
    heads = "".join(
        f'<th scope="col" title="{escape(s.title)}">{escape(s.short)}</th>' for s in conf.scenarios
    )
    body = []
    for row in conf.rows():
        t = row["true"]
        title = escape(t.title)
        cells = "".join(
            f'<td class="{c["cls"]}" data-true="{escape(t.slug)}" '
            f'data-answered="{escape(c["answered"].slug)}" '
            f'title="{title} answered as {escape(c["answered"].title)}: {c["n"]} '
            f'({c["share"]}%)">{c["n"] or ""}</td>'
            for c in row["cells"]
        )
        body.append(
            f'    <tr><th scope="row" title="{title}">{escape(t.short)} '
            f'<span class="muted">{escape(Truncator(t.title).chars(26))}</span></th>\n'
            f'    {cells}\n    <td class="num">{row["total"]}</td></tr>\n'
        )
    named = {s.slug: s.title for s in conf.scenarios}
    pairs = "; ".join(
        f"{escape(named.get(a, a))} ↔ {escape(named.get(b, b))}" for a, b in conf.pairs
    )
    return mark_safe(
        '<div class="scroll">\n'
        '<table class="confusion" aria-label="Confusion matrix: rows are the true scenario, '
        'columns the answer">\n'
        f'  <thead><tr><th scope="col">true \\ answered</th>{heads}'
        '<th scope="col" class="num">n</th></tr></thead>\n'
        f"  <tbody>\n{''.join(body)}  </tbody>\n</table>\n</div>\n"
        '<p class="legend"><span class="cm cm-diag cm-h3">n</span> correct · '
        f'<span class="cm cm-pair cm-h3">n</span> lookalike pair ({pairs}) · '
        "<b>n</b> counts the drills that named a scenario: one submitted blank, or closed "
        "unanswered, counts in the drill totals but has no column here.</p>\n"
    )
