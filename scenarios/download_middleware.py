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
view's own.

It comes first in ``MIDDLEWARE``, so its answer passes through none of the others: it asks
``SecurityMiddleware`` itself whether to redirect to HTTPS (then the stack answers), checks the
Host header as ``CommonMiddleware`` would (a bad one: the stack's 400), and puts on the headers
the security, clickjacking and CSP middleware would add — the same answer, headers included, as
the whole stack gives. What it derives from a row it has just read (the decoded session, the
auth hash a password gives) is memoised by that row's content; the row itself is read afresh on
every request, so a sign-out, password change, deactivation or expiry refuses the next download.
"""

from __future__ import annotations

import functools
import re
import uuid
import weakref
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any, cast

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
from django.core.exceptions import DisallowedHost
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import Resolver404, resolve
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.csp import CSP, build_policy

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
    """The session row (unexpired) beside the trace's claimant (active): one row or none.

    The claimant comes from a scalar subquery on the trace's primary key rather than a
    three-way join, which PostgreSQL plans in about half the time (that matters where it is
    planned per request; ``_claim_row`` prepares it once per PostgreSQL connection)."""
    q = connection.ops.quote_name
    user = get_user_model()._meta
    trace, session = Trace._meta, Session._meta
    claimant = q(str(trace.get_field("claimed_by").column))
    user_pk, trace_pk = q(str(user.pk.column)), q(str(trace.pk.column))
    return (
        f"SELECT s.{q('session_data')}, u.{user_pk}, u.{q('password')} "
        f"FROM {q(session.db_table)} s, {q(user.db_table)} u "
        f"WHERE s.{q('session_key')} = %s AND s.{q('expire_date')} > %s "
        f"AND u.{q('is_active')} AND u.{user_pk} = "
        f"(SELECT t.{claimant} FROM {q(trace.db_table)} t WHERE t.{trace_pk} = %s)"
    )


# On PostgreSQL the claim query is prepared once per database connection: EXECUTE skips the
# parsing and planning that are about half of its cost on the server. Other databases run it as
# it is (sqlite3 keeps its compiled statements itself). A connection's first download pays two
# more queries (the pg_prepared_statements check and the PREPARE), so with CONN_MAX_AGE=0 every
# download pays them; behind a transaction-mode pooler (PgBouncer) a statement may be missing on
# the server connection a request gets: that request goes through the whole stack instead, and
# the next prepares it again.
STATEMENT = "tracetrack_spooled_claim"
_prepared_on: weakref.WeakSet[Any] = weakref.WeakSet()  # the raw connections holding it


def _claim_row(params: list[Any]) -> tuple[Any, ...] | None:
    """The claim query's row (session data, user id, password hash) or None."""
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(_sql(), params)
            return cursor.fetchone()
        raw = connection.connection
        if raw not in _prepared_on:
            # A pooled connection may hold it already (prepared under another thread).
            cursor.execute("SELECT 1 FROM pg_prepared_statements WHERE name = %s", [STATEMENT])
            if cursor.fetchone() is None:
                numbered = _sql().replace("%s", "$1", 1).replace("%s", "$2", 1)
                cursor.execute(f"PREPARE {STATEMENT} AS {numbered.replace('%s', '$3', 1)}")
            _prepared_on.add(raw)
        try:
            cursor.execute(f"EXECUTE {STATEMENT}(%s, %s, %s)", params)
        except DatabaseError:
            # Gone from under us (DISCARD ALL, say): prepared again next time; the stack answers.
            _prepared_on.discard(raw)
            if connection.in_atomic_block:
                raise
            return None
        return cursor.fetchone()


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


@functools.lru_cache(maxsize=4096)
def _session_claims(session_data: str, _keys: tuple) -> tuple[Any, Any, Any]:
    """(user id, backend, auth hash) that a session row's data names, decoded as the session
    engine decodes it; ``_keys`` (the signing keys and engine) is only part of the memo's key.
    A pure function of the row's content: a changed or deleted row is a different key or none."""
    data = _session_store().decode(session_data)
    return data.get(SESSION_KEY), data.get(BACKEND_SESSION_KEY), data.get(HASH_SESSION_KEY)


@functools.lru_cache(maxsize=4096)
def _auth_hash(user_id: Any, password: str, _key: str) -> str:
    """The session auth hash a user with this password hash has under the current key."""
    return get_user_model()(pk=user_id, password=password).get_session_auth_hash()


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
        connection.ops.adapt_datetimefield_value(timezone.now()),
        Trace._meta.pk.get_db_prep_value(trace_id, connection),
    ]
    row = _claim_row(params)
    if row is None:
        return False
    session_data, user_id, password = row
    keys = (
        settings.SECRET_KEY,
        tuple(settings.SECRET_KEY_FALLBACKS),
        settings.SESSION_ENGINE,
        settings.SESSION_SERIALIZER,
    )
    session_user, backend, session_hash = _session_claims(session_data, keys)
    try:
        if get_user_model()._meta.pk.to_python(session_user) != user_id:
            return False
    except Exception:  # no user in the session, or not an id
        return False
    if backend not in settings.AUTHENTICATION_BACKENDS or not _plain_model_backend(backend):
        return False
    expected = _auth_hash(user_id, password, settings.SECRET_KEY)
    return bool(session_hash) and constant_time_compare(session_hash, expected)


def spooled_download(request: HttpRequest, security: SecurityMiddleware) -> HttpResponseBase | None:
    """The answer to a download this fast path may give, or None (the whole stack answers)."""
    path = request.path_info
    if not path.endswith("/perfetto.json") or request.method != "GET":
        return None
    if not (found := PATH.fullmatch(path)):
        return None
    if (query := request.META.get("QUERY_STRING", "")) not in ("", "inline=1"):
        return None
    if security.process_request(request) is not None:  # a redirect to HTTPS is due
        return None
    try:
        request.get_host()  # ALLOWED_HOSTS, as CommonMiddleware checks it
    except DisallowedHost:
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
    return exports.spooled_response(
        request,
        spooled,
        trace_id,
        exports.etag(trace_id, True),
        inline=bool(query),
        # As through the whole stack, where the session was read: the answer depends on the cookie.
        vary="Accept-Encoding, Cookie",
    )


class SpooledExportMiddleware:
    """First in ``MIDDLEWARE``: the fast path's answer, with the headers the middleware it
    skips would have added; anything else goes down the whole stack."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]):
        self.get_response = get_response
        self.security = SecurityMiddleware(get_response)
        self.clickjacking = XFrameOptionsMiddleware(get_response)
        # What ContentSecurityPolicyMiddleware adds to an answer that sets no policy of its own
        # and used no nonce (this one), built once as SecurityMiddleware reads its settings once.
        self.csp = {
            str(header): build_policy(cast(Mapping[str, Any], config))
            for header, config in (
                (CSP.HEADER_ENFORCE, settings.SECURE_CSP),
                (CSP.HEADER_REPORT_ONLY, settings.SECURE_CSP_REPORT_ONLY),
            )
            if config
        }

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = spooled_download(request, self.security)
        if response is None:
            return self.get_response(request)
        # (typed for HttpResponse; they only set headers, which a FileResponse has too)
        response = self.security.process_response(request, cast(HttpResponse, response))
        response = self.clickjacking.process_response(request, cast(HttpResponse, response))
        for header, policy in self.csp.items():
            response.headers[header] = policy
        return response
