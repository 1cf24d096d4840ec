"""One learner's dashboard numbers, and the page parts drawn from them, cached per state.

A snapshot is keyed on the learner's ``StatsVersion`` (read first, in its own query; moved on
in the transaction of every grade, re-narration and rebuild), on the UTC day (the only way the
counters' windows depend on the clock), on the time limit and on a fingerprint of the scenario
catalogue and of the code and templates that draw it. So a grade shows on the very next view,
and a deploy that changes what is drawn never serves an older drawing. The cards are not in it:
retrievability and next due are read fresh on every view (``dashboard.with_cards``).

A learner without a ``StatsVersion`` row has never been graded (the migration that made the
table gave one to everyone with numbers): nothing is cached for them.
"""

from __future__ import annotations

import functools
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from drills.mentalmath import FAMILIES
from drills.models import Card, StatsVersion
from drills.stats import dashboard, snapshot
from drills.stats.fingerprint import source_fingerprint
from scenarios import engine

# Long enough to outlive a day's views; the key changes with the day anyway.
TTL_S = 36 * 3600
HERE = Path(__file__).resolve().parent
SOURCES = (
    HERE / "dashboard.py",
    HERE / "charts.py",
    HERE / "svg.py",
    HERE / "format.py",
    HERE / "views.py",
    HERE / "cached.py",
    HERE / "snapshot.py",
    HERE.parent / "contrast" / "progress.py",
    settings.BASE_DIR / "templates" / "drills" / "dashboard.html",
    HERE / "tables.py",
    HERE / "page.py",
)


@functools.cache
def fingerprint() -> str:
    """What a snapshot's numbers and drawings depend on besides the learner's data."""
    catalogue = (
        [(s, engine.title_of(s), engine.lookalike_of(s)) for s in engine.SCENARIOS],
        [(k, f.title) for k, f in FAMILIES.items()],
        dashboard.SENTENCES,
        dashboard.TREND_WEEKS,
        dashboard.ACTIVITY_WEEKS,
        dashboard.LAST_N,
    )
    return source_fingerprint(catalogue, SOURCES)


def key_of(user, now: datetime) -> str | None:
    """The cache key of this learner's numbers as they are now (one query), or None."""
    row = StatsVersion.objects.filter(user_id=user.pk).values_list("token", "n").first()
    return None if row is None else _key(user.pk, row[0], row[1], now)


def _key(user_id: int, token: uuid.UUID, n: int, now: datetime) -> str:
    day = now.astimezone(UTC).date().isoformat()
    limit = settings.TRACETRACK["DRILL_TIME_LIMIT_S"]
    return f"dash:{fingerprint()}:{user_id}:{token.hex}:{n}:{day}:{limit}"


def _aware(value: datetime | str) -> datetime:
    """A ``DateTimeField`` value as the driver hands it (SQLite: naive UTC text) made what the
    ORM makes of it: an aware datetime."""
    when = parse_datetime(value) if isinstance(value, str) else value
    if when is None:
        raise ValueError(f"not a datetime: {value!r}")
    return when if timezone.is_aware(when) else timezone.make_aware(when, UTC)


def key_and_cards(user, now: datetime) -> tuple[str | None, dashboard.Cards]:
    """``key_of`` and ``dashboard.cards_of`` in one query, what every dashboard view reads
    first: the learner's row, their ``StatsVersion`` and their scenario and math cards (written
    out: through the ORM, building the two queries cost more than running them)."""
    q = connection.ops.quote_name
    meta = get_user_model()._meta
    users, uid = q(meta.db_table), f"u.{q(meta.pk.column or 'id')}"
    v_user = q(StatsVersion._meta.get_field("user").column)
    c_user = q(Card._meta.get_field("user").column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT v.token, v.n, c.kind, c.item, c.state, c.due FROM {users} u "
            f"LEFT JOIN {q(StatsVersion._meta.db_table)} v ON v.{v_user} = {uid} "
            f"LEFT JOIN {q(Card._meta.db_table)} c ON c.{c_user} = {uid} AND c.kind IN (%s, %s) "
            f"WHERE {uid} = %s",
            [Card.Kind.SCENARIO.value, Card.Kind.MATH.value, user.pk],
        )
        rows = cursor.fetchall()
    key, cards = None, []
    for token, n, kind, item, state, due in rows:
        if token is not None and key is None:
            key = _key(user.pk, StatsVersion._meta.get_field("token").to_python(token), n, now)
        if kind is not None:
            state = snapshot.loads(state) if isinstance(state, str) else state
            cards.append((kind, item, state, None if due is None else _aware(due)))
    return key, dashboard.split_cards(cards)


def counters(user, now: datetime, key: str | None = "") -> dict[str, Any]:
    """``dashboard.learner_counters(user, now)``, from the cache when this state of the
    learner's numbers was seen before (``key``: from ``key_of``, read here when not given),
    else from the learner's stored numbers (``snapshot``, patched by every grade)."""
    if key == "":
        key = key_of(user, now)
    stats = part(key, "stats")
    if stats is None:
        stats = snapshot.counters(user, now)
        store(key, "stats", stats)
    return stats


def part(key: str | None, name: str) -> Any:
    """What was stored as ``name`` for this state (None when nothing was, or no key)."""
    return None if key is None else cache.get(f"{key}:{name}")


def store(key: str | None, name: str, value: Any) -> None:
    if key is not None:
        cache.set(f"{key}:{name}", value, TTL_S)


def store_many(key: str | None, parts: dict[str, Any]) -> None:
    """``store`` each of ``parts`` (name -> value), in one cache round trip."""
    if key is not None:
        cache.set_many({f"{key}:{name}": value for name, value in parts.items()}, TTL_S)


# A learner who has looked at the dashboard lately: their grades draw the next state ahead.
VIEWER_TTL_S = 14 * 24 * 3600


def viewer_key(user_id: int | None) -> str:
    return f"dash:viewer:{user_id}"


def _mark(now: datetime) -> str:
    """What a viewer's mark holds: the UTC day it was last set."""
    return now.astimezone(UTC).date().isoformat()


def mark_viewer(user_id: int | None, now: datetime | None = None) -> None:
    cache.set(viewer_key(user_id), _mark(now or datetime.now(UTC)), VIEWER_TTL_S)


def is_viewer(user_id: int) -> bool:
    return cache.get(viewer_key(user_id)) is not None


def lookup(key: str | None, user_id: int | None, now: datetime) -> tuple[Any, bool]:
    """What a dashboard view reads from the cache, in one round trip: the page stored for this
    state (None when not, or no key), and whether the learner's viewer mark was set today
    already (then a drawing need not set it again: it lasts ``VIEWER_TTL_S``)."""
    names = {viewer_key(user_id): "viewer"}
    if key is not None:
        names[f"{key}:page"] = "page"
    found = {names[k]: v for k, v in cache.get_many(list(names)).items()}
    return found.get("page"), found.get("viewer") == _mark(now)
