from __future__ import annotations

import logging

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
    context = {
        "due": due_overview(request.user, now),
        "open_attempt": services.open_attempt(request.user),
        "streak_opt_in": opted_in,
        "streak": streak(request.user, now) if opted_in else None,
    }
    context["assignments"] = learner_assignments(request.user, now)
    if not Attempt.objects.filter(user=request.user).exists():
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


def _stock_view(request: HttpRequest, stock: dict[str, int]) -> dict[str, object]:
    """Per-scenario stock: exact for staff, capped for everyone else.

    Exact counts are a side channel: a learner reading them before and after starting a drill
    would see which scenario's count dropped, i.e. the answer. Above the low-water mark a claim
    changes nothing in the capped view; at or below it the pool is refilling and operators need
    the low counts exactly.
    """
    if request.user.is_staff:
        return {"stock": stock}
    cap = pool.low_water() + 1
    return {"stock": {slug: min(n, cap) for slug, n in stock.items()}, "stock_capped_at": cap}


@login_not_required
@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, object] = {}
    healthy = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
        stock = pool.stock()
    except Exception as exc:
        log.exception("healthz: database check failed")
        checks["database"] = f"error: {type(exc).__name__}"
        stock = {}
        healthy = False
    broker_ok, broker_status = _broker_ok()
    checks["broker"] = broker_status
    healthy = healthy and broker_ok
    empty = sorted(slug for slug, n in stock.items() if n == 0)
    checks["pool"] = {"unclaimed": sum(stock.values()), "empty": empty}
    checks["pool"].update(_stock_view(request, stock))
    status = 200 if healthy else 503
    return JsonResponse({"status": "ok" if healthy else "degraded", **checks}, status=status)


@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico before they read the page's icon link."""
    return redirect(static("img/favicon.svg"), permanent=True)
