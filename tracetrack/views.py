from __future__ import annotations

import logging
from typing import Any

import redis
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.templatetags.static import static
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from cohorts.progress import learner_assignments
from content.pages import library
from content.renarration import due_renarrations
from drills.models import Attempt, LearnerProfile
from drills.stats.dashboard import due_overview, streak
from drills.trainer import services
from scenarios import pool

log = logging.getLogger(__name__)


@login_not_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        return TemplateResponse(request, "landing.html")
    now = timezone.now()
    opted_in = LearnerProfile.objects.filter(user=request.user, streak_opt_in=True).exists()
    context: dict[str, Any] = {
        "due": due_overview(request.user, now),
        "open_attempt": services.open_attempt(request.user),
        "streak_opt_in": opted_in,
        "streak": streak(request.user, now) if opted_in else None,
    }
    context["assignments"] = learner_assignments(request.user, now)
    context["renarrations"] = due_renarrations(request.user, now)
    if not Attempt.objects.filter(user=request.user).revealed().exists():
        context["first_steps"] = library().first_steps()
    return TemplateResponse(request, "home.html", context)


def _broker_ok() -> tuple[bool, str]:
    if not settings.REDIS_URL:
        return True, "in-process (embedded mode)"
    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1).ping()
    except Exception as exc:
        return False, f"unreachable: {type(exc).__name__}"
    return True, "ok"


@login_not_required
@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """Health only: database, broker, and whether the trace pool is keeping up.

    Never per-scenario counts or names: stock read before and after ``POST /drill/next/`` would
    tell a learner which scenario was dealt. Staff see the stock on the admin's "Pool stock" page.
    "degraded" (200) when some scenario has been empty or under low water for longer than
    ``POOL_DEGRADED_AFTER_S``; 503 when the database or the broker is down.
    """
    checks: dict[str, object] = {}
    up = True
    pool_ok = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
        pool_ok = not pool.short_scenarios()
    except Exception as exc:
        log.exception("healthz: database check failed")
        checks["database"] = f"error: {type(exc).__name__}"
        up = False
    broker_ok, broker_status = _broker_ok()
    checks["broker"] = broker_status
    up = up and broker_ok
    checks["pool"] = ("ok" if pool_ok else "short") if checks["database"] == "ok" else "unknown"
    status = "ok" if up and pool_ok else "degraded"
    return JsonResponse({"status": status, **checks}, status=200 if up else 503)


@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico before they read the page's icon link."""
    return redirect(static("img/favicon.svg"), permanent=True)
