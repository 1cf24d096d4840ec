"""The sign-in brake: growing delays per (client address, username) pair.

- The username is keyed exactly as authentication sees it: stripped and NFKC-normalised, as
  Django's ``UsernameField`` and ``AbstractBaseUser.normalize_username`` do (so a full-width or
  other compatibility variant of a name shares its counter), and compared case-sensitively, as
  ``ModelBackend`` does.
- It sits in the authentication backend (``ThrottledModelBackend``) and Django's
  ``user_login_failed``/``user_logged_in`` signals, so every form that authenticates with a
  request — the sign-in page, ``/admin/login/`` — is covered. The sign-in page answers 429.
- The first ``LOGIN_FAILURE_LIMIT`` failures of a pair are free; each further one locks the pair
  for ``LOGIN_DELAY_S`` × 2^(n − limit) seconds, at most ``LOGIN_LOCKOUT_S``. A success clears
  the pair; a pair with no failure for a day starts over. ``LOGIN_FAILURE_LIMIT=0`` turns the
  brake off. Another address is never locked by this one's failures, so nobody can lock a
  victim out from elsewhere.
- The client address is ``REMOTE_ADDR``, unless that is one of ``TRUSTED_PROXIES``: then the
  rightmost ``X-Forwarded-For`` entry that is not a trusted proxy. Clients cannot spoof it.
- State lives in the database (``LoginFailure``), never in Redis.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import unicodedata
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.contrib.auth.views import LoginView
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from accounts.models import LoginFailure

FORGET_AFTER = timedelta(days=1)


def limit() -> int:
    return settings.TRACETRACK["LOGIN_FAILURE_LIMIT"]


def max_lock_s() -> int:
    return settings.TRACETRACK["LOGIN_LOCKOUT_S"]


def base_delay_s() -> float:
    return settings.TRACETRACK["LOGIN_DELAY_S"]


def normalise_username(username: str | None) -> str:
    """What authentication compares: the form strips and NFKC-normalises; the backend then
    matches exactly."""
    return unicodedata.normalize("NFKC", (username or "").strip())


def _networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(n, strict=False) for n in settings.TRUSTED_PROXIES]


def _trusted(address: str, networks) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in net for net in networks)


def client_address(request: HttpRequest) -> str:
    """The client's address: X-Forwarded-For is believed only as far as trusted proxies go."""
    remote = request.META.get("REMOTE_ADDR", "") or ""
    networks = _networks()
    if not networks or not _trusted(remote, networks):
        return remote
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    for hop in reversed([h for h in hops if h]):
        if not _trusted(hop, networks):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return remote  # garbage from beyond the proxy: fall back to the proxy itself
    return remote


def pair_key(request: HttpRequest, username: str | None) -> str:
    pair = f"{client_address(request)}\0{normalise_username(username)}"
    return hashlib.sha256(pair.encode("utf-8", "surrogatepass")).hexdigest()


def locked_for_s(request: HttpRequest, username: str | None) -> float:
    """Seconds the pair must still wait (0 when it may try)."""
    if limit() <= 0:
        return 0.0
    row = LoginFailure.objects.filter(key=pair_key(request, username)).first()
    if row is None or row.locked_until is None:
        return 0.0
    return max(0.0, (row.locked_until - timezone.now()).total_seconds())


def delay_after(failures: int) -> float:
    """The lock after the ``failures``-th failure: none within the limit, then doubling."""
    over = failures - limit() - 1
    if over < 0 or limit() <= 0:
        return 0.0
    return min(float(max_lock_s()), base_delay_s() * 2 ** min(over, 40))


def record_failure(request: HttpRequest, username: str | None) -> None:
    if limit() <= 0:
        return
    key = pair_key(request, username)
    now = timezone.now()
    with transaction.atomic():
        row = LoginFailure.objects.select_for_update().filter(key=key).first()
        if row is None:
            try:
                with transaction.atomic():
                    row = LoginFailure.objects.create(key=key, failures=0, last_failure_at=now)
            except IntegrityError:
                row = LoginFailure.objects.select_for_update().get(key=key)
        if row.locked_until is not None and row.locked_until > now:
            return  # refused without a password check: does not count again
        forgotten = row.failures and now - row.last_failure_at > FORGET_AFTER
        row.failures = (0 if forgotten else row.failures) + 1  # the row is locked: no lost update
        row.last_failure_at = now
        delay = delay_after(row.failures)
        row.locked_until = now + timedelta(seconds=delay) if delay else None
        row.save(update_fields=["failures", "last_failure_at", "locked_until"])


def clear(request: HttpRequest, username: str | None) -> None:
    LoginFailure.objects.filter(key=pair_key(request, username)).delete()


class ThrottledModelBackend(ModelBackend):
    """``ModelBackend`` that refuses, without checking the password, a locked pair."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is not None and username is not None and locked_for_s(request, username) > 0:
            request.login_locked_out = True
            raise PermissionDenied("too many failed sign-ins")
        return super().authenticate(request, username=username, password=password, **kwargs)


@receiver(user_login_failed, dispatch_uid="accounts.login_throttle.failed")
def _on_failure(sender, credentials, request=None, **kwargs) -> None:
    if request is not None:
        record_failure(request, credentials.get("username"))


@receiver(user_logged_in, dispatch_uid="accounts.login_throttle.success")
def _on_success(sender, request, user, **kwargs) -> None:
    if request is not None and request.method == "POST":
        clear(request, request.POST.get("username") or user.get_username())


class ThrottledLoginView(LoginView):
    """The sign-in page: a locked pair gets 429 and a message instead of a password check."""

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        username = request.POST.get("username")
        wait_s = locked_for_s(request, username)
        if wait_s > 0:
            # The name kept (the password is not checked, and not echoed back).
            form = self.get_form_class()(request, initial={"username": username or ""})
            context = self.get_context_data(form=form, locked_out=True, wait=_wait_text(wait_s))
            return self.render_to_response(context, status=429)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        focus_password_after_a_failed_sign_in(form)
        return super().form_invalid(form)


def focus_password_after_a_failed_sign_in(form) -> None:
    """A refused sign-in keeps the name and clears the password: the cursor goes where the
    typing resumes (the password box), not back to the name already filled in."""
    if (form.data.get("username") or "").strip():
        form.fields["username"].widget.attrs.pop("autofocus", None)
        form.fields["password"].widget.attrs["autofocus"] = True


def _wait_text(seconds: float) -> str:
    """ "8 seconds", "1 minute", "15 minutes": how long the lock has left, rounded up."""
    s = max(1, math.ceil(seconds))
    if s < 60:
        return f"{s} second{'s' if s != 1 else ''}"
    m = math.ceil(s / 60)
    return f"{m} minute{'s' if m != 1 else ''}"
