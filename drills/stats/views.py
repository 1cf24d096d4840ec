"""The learner's accuracy dashboard, its JSON twin, and the streak opt-in.

The numbers come from ``drills.stats.dashboard.learner_stats``, through the per-state cache of
``drills.stats.cached`` and, when that misses (the first view after a grade), from the learner's
stored numbers that every grade patches (``drills.stats.snapshot``: one row, no counter read).
The parts drawn from the numbers alone are rendered once per state and cached with them; the
cards' columns are read and rendered on every view. This module only lays them out: formatted
table cells (``format``) and the charts' geometry (``charts``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.defaultfilters import date as date_filter
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from accounts.http import SignedInRequest
from drills.models import LearnerProfile
from drills.stats import cached, page, snapshot
from drills.stats.charts import (
    accuracy_chart,
    activity_chart,
    confusion_chart,
    sentence_table,
    sparkline,
)
from drills.stats.dashboard import (
    Cards,
    math_card,
    math_stats,
    scenario_card,
    with_cards,
)
from drills.stats.format import mmss, pct
from drills.stats.svg import (
    CONFUSION_RATE,
    PICKED_RIGHT,
    activity_svg,
    confusion_svg,
    spark_svg,
)
from drills.stats.tables import sentence_table_html

# --------------------------------------------------------------------------- views


def _table(scenarios: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **row,
            "accuracy_txt": pct(row["accuracy"]),
            "last_n_txt": pct(row["last_n_accuracy"]),
            "median_txt": mmss(row["median_s"]),
            "under_txt": pct(row["under_limit_share"]),
            "measurement_txt": pct(row["measurement_accuracy"]),
            "fix_txt": pct(row["fix_accuracy"]),
            "win_txt": pct(row["expected_accuracy"]),
            "step_txt": pct(row["step_accuracy"]),
            "gap_txt": pct(row["gap_accuracy"]),
            "value_txt": pct(row["value_accuracy"]),
        }
        for row in scenarios
    ]


LIVE = page.LIVE


def card_cells(
    retrievability: float | None,
    due: datetime | None,
    due_now: bool = False,
    practised: bool = False,
) -> str:
    """A table row's card columns, filled on every view: retrievability and next due (numbers
    and dates only, nothing to escape; printed as the template's ``date`` filter would). A
    scenario drilled only in untimed practice has no card (practice schedules no review)."""
    if due is None:
        when = (
            '<span class="muted">practice only, no review scheduled</span>'
            if practised
            else '<span class="muted">not drilled</span>'
        )
    elif due_now:
        when = '<strong class="warn-text">due now</strong>'
    else:
        when = _due_time(due, timezone.get_current_timezone_name())
    return f'<td class="num">{pct(retrievability)}</td><td>{when}</td>'


@functools.lru_cache(maxsize=4096)
def _due_time(due: datetime, zone: str) -> str:
    """A card's next due as the page prints it, through the template's own ``date`` filter (which
    is handed local time); remembered, as a card's due stays put between its reviews."""
    d = timezone.localtime(due)
    return f'<time datetime="{date_filter(d, "c")}">{date_filter(d, "D j M, H:i")} UTC</time>'


def _row_keys(scenarios: list[dict[str, Any]], math: list[dict[str, Any]]) -> list[str]:
    return [f"s:{r['slug']}" for r in scenarios] + [f"m:{m['family']}" for m in math]


def _with_spark(pair: dict[str, Any], what: str = CONFUSION_RATE) -> dict[str, Any]:
    """A pair's row: its rate printed, its weekly line's geometry and drawing."""
    spark = sparkline(pair["trend"])
    return {
        **pair,
        "rate_txt": pct(pair["rate"]),
        "spark": spark,
        "spark_svg": spark_svg(spark, what),
    }


def _drawn(stats: dict[str, Any], math: list[dict[str, Any]]) -> dict[str, Any]:
    """The page body drawn from the numbers alone, cut at each row's card columns: ``chunks``
    (one more than the rows) and ``keys``, the rows in order."""
    context = {
        "stats": stats,
        "table": _table(stats["scenarios"]),
        "math": [{**m, "accuracy_txt": pct(m["accuracy"])} for m in math],
        "totals_accuracy": pct(stats["totals"]["accuracy"]),
        "confusion_svg": confusion_svg(confusion_chart(stats["confusion"], stats["lookalikes"])),
        "pairs": [_with_spark(p) for p in stats["lookalikes"]],
        "pair_trials": [_with_spark(p, PICKED_RIGHT) for p in stats["pair_discrimination"]],
        "accuracy_chart": accuracy_chart(stats["accuracy_over_time"]),
        "sentence_html": sentence_table_html(sentence_table(stats["sentence_accuracy"])),
        "activity_svg": activity_svg(activity_chart(stats["daily_activity"])),
    }
    chunks = page.body(context).split(LIVE)
    keys = _row_keys(stats["scenarios"], math)
    if len(chunks) != len(keys) + 1:
        raise ValueError("the drawn dashboard body (drills.stats.page) marks one live cell per row")
    # drilled only in untimed practice, which schedules no review: such a row has no card
    practice_only = [r["slug"] for r in stats["scenarios"] if 0 < r["attempts"] == r["practice"]]
    return {"chunks": chunks, "keys": keys, "practice_only": practice_only}


def _cells(
    keys: list[str], cards: Cards, now: datetime, practice_only: Iterable[str] = ()
) -> list[str] | None:
    """Each row's card columns, in the order of ``keys`` (None when a math card has no row);
    ``practice_only``: the scenarios drilled only in untimed practice."""
    scenario_cards, math_cards = cards
    if any(f"m:{family}" not in keys for family in math_cards):
        return None
    out = []
    for key in keys:
        kind, item = key.split(":", 1)
        if kind == "s":
            card = scenario_card(scenario_cards.get(item), now)
            practised = item in practice_only
            out.append(card_cells(card["retrievability"], card["due"], card["due_now"], practised))
        else:
            card = math_card(math_cards.get(item), now)
            out.append(card_cells(card["retrievability"], card["due"]))
    return out


def draw(
    user, now: datetime, key: str | None, counters: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The page body for this state of the learner's numbers (``key``: from
    ``cached.key_and_cards`` or ``cached.key_of``), drawn and stored in the cache with the
    numbers (read here when ``counters`` is None: from the cache, else from the learner's stored
    row), in one cache write."""
    if counters is None:
        counters = cached.part(key, "stats") or snapshot.counters(user, now)
    math = math_stats(user, now, tallies=counters["math_tallies"], cards={})
    body = _drawn(counters, math)
    cached.store_many(key, {"page": body, "stats": counters})
    return body


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    user, now = request.user, timezone.now()
    key, cards = cached.key_and_cards(user, now)
    body, marked = cached.lookup(key, user.pk, now)
    counters = None
    if body is None:
        # A new state's numbers are seldom in the cache yet (stats.json would have put them
        # there): read from the learner's stored row at once.
        counters = snapshot.counters(user, now)
        body = draw(user, now, key, counters)
        if not marked:  # from now on, a grade draws the next state ahead
            cached.mark_viewer(user.pk, now)
    cells = _cells(body["keys"], cards, now, set(body.get("practice_only", ())))
    if cells is None:  # a card of a family never answered: drawn for this view alone
        stats = with_cards(counters or cached.counters(user, now, key), user, now, cards)
        body = _drawn(stats, stats["math"])
        cells = _cells(body["keys"], cards, now, set(body["practice_only"])) or []
    parts = [body["chunks"][0]]
    for cell, chunk in zip(cells, body["chunks"][1:], strict=True):
        parts += [cell, chunk]
    return TemplateResponse(
        request, "drills/dashboard.html", {"body_html": mark_safe("".join(parts))}
    )


@require_GET
@never_cache
def stats_json(request: HttpRequest) -> JsonResponse:
    now = timezone.now()
    stats = with_cards(cached.counters(request.user, now), request.user, now)
    return JsonResponse(stats, encoder=DjangoJSONEncoder)


@require_POST
def streak_opt_in(request: SignedInRequest) -> HttpResponse:
    """Turn the home page's streak on or off (``streak_opt_in`` = "1" or "0")."""
    wanted = request.POST.get("streak_opt_in") == "1"
    LearnerProfile.objects.update_or_create(user=request.user, defaults={"streak_opt_in": wanted})
    target = request.POST.get("next") or "/"
    # A local path only: anything else (another host, a bare word like "0" that redirect()
    # would try to reverse as a view name) goes home.
    if not target.startswith("/") or not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}
    ):
        target = "/"
    return HttpResponseRedirect(target)
