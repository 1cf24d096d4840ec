"""The hot download, answered before the session and auth middleware: a signed-in learner's own
trace's Perfetto export, already in the spool, to a client that accepts gzip.

Through the whole stack, that download costs a session load, a user load and the claim check
(three ORM queries) before the file goes out; the same bytes served as a static file cost none.
Here it is one SQL query that reads the claimant of the trace together with the session row, and
the same checks ``django.contrib.auth.get_user`` makes, done on what that query returned:

* the session row exists and has not expired (as the database session engines load it);
* it names the trace's claimant as its user, with a configured backend whose ``get_user`` is
  ``ModelBackend``'s (so "active" is the only other rule), and the user is active;
* its auth hash matches the user's password hash under the current ``SECRET_KEY``.

Anything else — no cookie, a session engine without a database row (signed cookies, cache
only), a hash under a fallback key (the full stack rotates it), another learner's trace (a 404
there), no gzip (inflated there), a file not yet in the spool (written there), a query string
other than ``inline=1`` — falls through to the whole stack and ``views.perfetto_json``, which
answers exactly as before. The answer itself is built by ``exports.spooled_response``, the
view's own. Place it right after WhiteNoise, before ``SessionMiddleware``.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Callable
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import (
    BACKEND_SESSION_KEY,
    HASH_SESSION_KEY,
    SESSION_KEY,
    get_user_model,
    load_backend,
)
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.models import Session
from django.db import connection
from django.http import HttpRequest, HttpResponseBase
from django.urls import Resolver404, resolve
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.crypto import constant_time_compare

from scenarios import exports, views
from scenarios.models import Trace

# Engines whose database row is the session (cached_db writes it through, and deletes it with
# the cached copy on sign-out).
DB_SESSIONS = (
    "django.contrib.sessions.backends.db",
    "django.contrib.sessions.backends.cached_db",
)
# scenarios.urls's "perfetto" route, matched without walking the URLconf (``_routed`` checks
# once per process that the URLconf still sends it to the view).
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
PATH = re.compile(rf"/traces/({UUID})/perfetto\.json")


@functools.cache
def _routed() -> bool:
    try:
        match = resolve(f"/traces/{uuid.UUID(int=0)}/perfetto.json")
    except Resolver404:
        return False
    return match.func is views.perfetto_json


@functools.cache
def _sql() -> str:
    q = connection.ops.quote_name
    user = get_user_model()._meta
    trace, session = Trace._meta, Session._meta
    claimant = q(str(trace.get_field("claimed_by").column))
    user_pk, trace_pk = q(str(user.pk.column)), q(str(trace.pk.column))
    return (
        f"SELECT s.{q('session_data')}, u.{user_pk}, u.{q('password')} "
        f"FROM {q(trace.db_table)} t "
        f"JOIN {q(user.db_table)} u ON u.{user_pk} = t.{claimant} "
        f"JOIN {q(session.db_table)} s ON s.{q('session_key')} = %s "
        f"WHERE t.{trace_pk} = %s AND s.{q('expire_date')} > %s "
        f"AND u.{q('is_active')}"
    )


@functools.cache
def _plain_model_backend(path: str) -> bool:
    """The backend at ``path`` loads users as ``ModelBackend`` does (by id, active only)."""
    backend = type(load_backend(path))
    return (
        issubclass(backend, ModelBackend)
        and backend.get_user is ModelBackend.get_user
        and backend.user_can_authenticate is ModelBackend.user_can_authenticate
    )


def _session_store() -> Any:
    return import_module(settings.SESSION_ENGINE).SessionStore()


def signed_in_claimant(request: HttpRequest, trace_id) -> bool:
    """True when the request's session is the signed-in, verified session of the learner who
    claimed ``trace_id`` (one query); False whenever the whole stack should decide."""
    session_key = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if not session_key or settings.SESSION_ENGINE not in DB_SESSIONS:
        return False
    if settings.SESSION_SAVE_EVERY_REQUEST:  # each request moves the expiry on: the stack's job
        return False
    params = [
        session_key,
        Trace._meta.pk.get_db_prep_value(trace_id, connection),
        connection.ops.adapt_datetimefield_value(timezone.now()),
    ]
    with connection.cursor() as cursor:
        cursor.execute(_sql(), params)
        row = cursor.fetchone()
    if row is None:
        return False
    session_data, user_id, password = row
    data = _session_store().decode(session_data)
    User = get_user_model()
    try:
        if User._meta.pk.to_python(data.get(SESSION_KEY)) != user_id:
            return False
    except Exception:  # no user in the session, or not an id
        return False
    backend = data.get(BACKEND_SESSION_KEY)
    if backend not in settings.AUTHENTICATION_BACKENDS or not _plain_model_backend(backend):
        return False
    session_hash = data.get(HASH_SESSION_KEY)
    expected = User(pk=user_id, password=password).get_session_auth_hash()
    return bool(session_hash) and constant_time_compare(session_hash, expected)


def spooled_download(request: HttpRequest) -> HttpResponseBase | None:
    """The answer to a download this fast path may give, or None (the whole stack answers)."""
    if request.method != "GET" or not (found := PATH.fullmatch(request.path_info)):
        return None
    if request.META.get("QUERY_STRING", "") not in ("", "inline=1"):
        return None
    if not exports.accepts_gzip(request):
        return None
    if not _routed():
        return None
    trace_id = uuid.UUID(found[1])
    try:
        spooled = exports.spool_path(trace_id).open("rb")
    except OSError:
        return None
    try:
        allowed = signed_in_claimant(request, trace_id)
    except BaseException:
        spooled.close()
        raise
    if not allowed:
        spooled.close()
        return None
    response = exports.spooled_response(request, spooled, trace_id, exports.etag(trace_id, True))
    # As through the whole stack, where the session was read: the answer depends on the cookie.
    patch_vary_headers(response, ("Cookie",))
    return response


class SpooledExportMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = spooled_download(request)
        if response is None:
            response = self.get_response(request)
        return response
