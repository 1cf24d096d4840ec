from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from content.services import home_assignments
from drills import services
from drills.dashboard import due_overview, streak
from drills.models import Attempt, LearnerProfile
from scenarios import pool
from tracetrack.forms import SignupForm

log = logging.getLogger(__name__)


@login_not_required
@never_cache
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend=settings.AUTHENTICATION_BACKENDS[0])
        return redirect("home")
    status = 400 if request.method == "POST" else 200
    return TemplateResponse(request, "registration/signup.html", {"form": form}, status=status)


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    opted_in = LearnerProfile.objects.filter(user=request.user, streak_opt_in=True).exists()
    context = {
        "due": due_overview(request.user, now),
        "open_attempt": services.open_attempt(request.user),
        "streak_opt_in": opted_in,
        "streak": streak(Attempt.objects.filter(user=request.user), now) if opted_in else None,
    }
    context["assignments"] = home_assignments(request.user)
    return TemplateResponse(request, "home.html", context)


def _broker_ok() -> tuple[bool, str]:
    if not settings.REDIS_URL:
        return True, "in-process (embedded mode)"
    try:
        import redis

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
