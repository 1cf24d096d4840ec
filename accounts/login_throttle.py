"""A small brute-force brake on the sign-in form.

Failed sign-ins are counted per (username, client address) in Django's cache (Redis when
REDIS_URL is set, so every web worker shares the count). After ``LOGIN_FAILURE_LIMIT`` failures
in ``LOGIN_LOCKOUT_S`` seconds that pair is refused (429, no password check) until the window
ends; a successful sign-in clears it. Keying on the pair means one classroom behind a NAT does
not lock everyone out. ``LOGIN_FAILURE_LIMIT=0`` turns the brake off.

The client address is ``REMOTE_ADDR``: behind a reverse proxy that is the proxy's, so the brake
becomes per username (still a brake; X-Forwarded-For is not trusted because clients can set it).
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse


def limit() -> int:
    return settings.TRACETRACK["LOGIN_FAILURE_LIMIT"]


def window_s() -> int:
    return settings.TRACETRACK["LOGIN_LOCKOUT_S"]


def failure_key(request: HttpRequest) -> str:
    username = (request.POST.get("username") or "").strip().casefold()
    address = request.META.get("REMOTE_ADDR", "")
    digest = hashlib.sha256(f"{username}\0{address}".encode()).hexdigest()
    return f"login-failures:{digest}"


def is_locked(request: HttpRequest) -> bool:
    return limit() > 0 and (cache.get(failure_key(request)) or 0) >= limit()


def record_failure(request: HttpRequest) -> None:
    key = failure_key(request)
    cache.add(key, 0, timeout=window_s())  # the window starts at the first failure
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, timeout=window_s())


class ThrottledLoginView(LoginView):
    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if is_locked(request):
            context = self.get_context_data(form=self.get_form_class()(request), locked_out=True)
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        cache.delete(failure_key(self.request))
        return super().form_valid(form)

    def form_invalid(self, form):
        if limit() > 0:
            record_failure(self.request)
        return super().form_invalid(form)
