"""The learner's accuracy dashboard, its JSON twin, and the streak opt-in.

The numbers come from ``drills.stats.dashboard.learner_stats`` (SQL aggregates); this module only
lays them out: formatted table cells (``format``) and the charts' geometry (``charts``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from drills.models import LearnerProfile
from drills.stats.charts import accuracy_chart, activity_chart, confusion_chart, sparkline
from drills.stats.dashboard import learner_stats
from drills.stats.format import mmss, pct

# --------------------------------------------------------------------------- views


def _table(scenarios: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
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
            "retrievability_txt": pct(row.get("retrievability")),
        }
        for row in scenarios
    ]


def sentence_table(sentence_accuracy: dict[str, Any]) -> dict[str, Any]:
    """Per-sentence accuracy as a table: the weeks with attempts (newest first) and a total row.
    Shared by the dashboard and the cohort pages (``drills/_sentence_accuracy.html``)."""
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


@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    stats = learner_stats(request.user, now)
    context = {
        "stats": stats,
        "now": now,
        "table": _table(stats["scenarios"], now),
        "math": [
            {
                **m,
                "accuracy_txt": pct(m["accuracy"]),
                "retrievability_txt": pct(m["retrievability"]),
            }
            for m in stats["math"]
        ],
        "totals_accuracy": pct(stats["totals"]["accuracy"]),
        "confusion_chart": confusion_chart(stats["confusion"], stats["lookalikes"]),
        "pairs": [
            {**p, "rate_txt": pct(p["rate"]), "spark": sparkline(p["trend"])}
            for p in stats["lookalikes"]
        ],
        "pair_trials": [
            {**p, "rate_txt": pct(p["rate"]), "spark": sparkline(p["trend"])}
            for p in stats["pair_discrimination"]
        ],
        "accuracy_chart": accuracy_chart(stats["accuracy_over_time"]),
        "sentence_table": sentence_table(stats["sentence_accuracy"]),
        "activity_chart": activity_chart(stats["daily_activity"]),
    }
    return TemplateResponse(request, "drills/dashboard.html", context)


@require_GET
@never_cache
def stats_json(request: HttpRequest) -> JsonResponse:
    stats = learner_stats(request.user, timezone.now())
    return JsonResponse(stats, encoder=DjangoJSONEncoder)


@require_POST
def streak_opt_in(request: HttpRequest) -> HttpResponse:
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
