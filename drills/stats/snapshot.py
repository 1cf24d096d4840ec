"""One learner's dashboard numbers, stored as one row and patched in the grade's transaction.

``dashboard.learner_inputs`` reads what the dashboard shows from the summary counters (a dozen
queries, tens of milliseconds at 20k attempts). Here those inputs are kept per learner
(``DashboardSnapshot``) so that a view whose drawing is not cached yet reads one small row and
only formats and draws (``counters``):

* a live grade (``summaries.graded``, sent in its transaction after the counters moved on)
  patches the row in place (``apply``): the same ``summaries.contributions`` the counters got are
  added to the stored scenario, week and day rows; the graded scenario's last-10 and (when the
  attempt was on the clock) its time figures are read again for that scenario alone (small
  indexed reads); a mental-math
  answer adds to its family, a re-narration or a contrast trial reads its own small count
  again. The row is taken ``FOR UPDATE`` behind the learner's ``StatsVersion`` lock, so two
  grades at once are applied one after the other and neither increment is lost.
* it is patched only when it holds exactly the state before the grade (``n`` one less than the
  grade's ``StatsVersion.n``), for today's UTC day and today's code (``fmt``); otherwise it is
  left stale and the next view reads the inputs again from the counters and stores them
  (``store``: never over a newer state). ``summaries.rebuild_users`` (``manage.py
  rebuild_stats``) deletes the rows with the counters it rebuilds from the raw attempts.
"""

from __future__ import annotations

import functools
import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.db import connection
from django.utils import timezone

from drills import summaries
from drills.contrast.progress import pair_discrimination
from drills.models import (
    Attempt,
    DashboardSnapshot,
    DayTally,
    ElapsedTally,
    MathAttempt,
    ScenarioTally,
    StatsVersion,
    WeekTally,
)
from drills.stats import dashboard
from drills.stats.fingerprint import source_fingerprint
from scenarios import engine

HERE = Path(__file__).resolve().parent
SOURCES = (
    HERE / "snapshot.py",
    HERE / "dashboard.py",
    HERE.parent / "summaries.py",
    HERE.parent / "contrast" / "progress.py",
)


@functools.cache
def _code() -> str:
    catalogue = (
        [(s, engine.title_of(s), engine.lookalike_of(s)) for s in engine.SCENARIOS],
        dashboard.SENTENCES,
        dashboard.TREND_WEEKS,
        dashboard.ACTIVITY_WEEKS,
        dashboard.LAST_N,
    )
    return source_fingerprint(catalogue, SOURCES)


def fmt() -> str:
    """What stored inputs depend on besides the learner's grades and the day."""
    return f"{_code()}:{settings.TRACETRACK['DRILL_TIME_LIMIT_S']}"


def _today(now: datetime) -> date:
    return now.astimezone(UTC).date()


# --------------------------------------------------------------------------- JSON form


def _table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows of one shape as column names and value lists (a fifth of the JSON)."""
    cols = list(rows[0]) if rows else []
    return {"cols": cols, "rows": [[r[c] for c in cols] for r in rows]}


def _rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(zip(table["cols"], values, strict=True)) for values in table["rows"]]


def encode(inputs: dict[str, Any]) -> dict[str, Any]:
    """``learner_inputs`` as JSON values (dates as ISO strings, row lists as tables)."""
    return {
        **inputs,
        "tally_rows": _table(inputs["tally_rows"]),
        "week_rows": _table([{**r, "week": r["week"].isoformat()} for r in inputs["week_rows"]]),
        "days": {d.isoformat(): n for d, n in inputs["days"].items()},
        "math_tallies": {f: list(nc) for f, nc in inputs["math_tallies"].items()},
        "pair_discrimination": [
            {
                **p,
                "titles": list(p["titles"]),
                "trend": [{**t, "week": t["week"].isoformat()} for t in p["trend"]],
            }
            for p in inputs["pair_discrimination"]
        ],
    }


def loads(text: str | bytes) -> Any:
    """JSON text as the database hands it, parsed: with orjson (a quarter of ``json.loads``'s
    time on a learner's 26 KB row), and with ``json.loads`` for what orjson refuses (``NaN``,
    integers past 64 bits), so the result is always ``json.loads``'s."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _week_rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    """``_rows`` with each ISO week read back as a date (parsed once per week, not per row)."""
    cols = table["cols"]
    if not table["rows"]:
        return []  # stored without column names
    at = cols.index("week")
    weeks: dict[str, date] = {}
    out = []
    for values in table["rows"]:
        row = dict(zip(cols, values, strict=True))
        iso = values[at]
        week = weeks.get(iso)
        if week is None:
            week = weeks[iso] = date.fromisoformat(iso)
        row["week"] = week
        out.append(row)
    return out


def decode(data: dict[str, Any]) -> dict[str, Any]:
    """The inverse of ``encode``."""
    return {
        **data,
        "tally_rows": _rows(data["tally_rows"]),
        "week_rows": _week_rows(data["week_rows"]),
        "days": {date.fromisoformat(d): n for d, n in data["days"].items()},
        "math_tallies": {f: (nc[0], nc[1]) for f, nc in data["math_tallies"].items()},
        "pair_discrimination": [
            {
                **p,
                "titles": tuple(p["titles"]),
                "trend": [{**t, "week": date.fromisoformat(t["week"])} for t in p["trend"]],
            }
            for p in data["pair_discrimination"]
        ],
    }


# --------------------------------------------------------------------------- read side


def store(user_id: int, n: int, now: datetime, inputs: dict[str, Any]) -> None:
    """Keep ``inputs`` (read for ``StatsVersion.n`` = ``n``, or later) as the learner's row,
    unless the row already holds a later state or this very one (same day, same code)."""
    table = connection.ops.quote_name(DashboardSnapshot._meta.db_table)
    data = DashboardSnapshot._meta.get_field("data").get_db_prep_value(encode(inputs), connection)
    day = DashboardSnapshot._meta.get_field("day").get_db_prep_value(_today(now), connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (user_id, n, day, fmt, data) VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (user_id) DO UPDATE SET n = excluded.n, day = excluded.day, "
            "fmt = excluded.fmt, data = excluded.data "
            f"WHERE excluded.n > {table}.n OR (excluded.n = {table}.n "
            f"AND (excluded.day <> {table}.day OR excluded.fmt <> {table}.fmt))",
            [user_id, n, day, fmt(), data],
        )


def _stored(user_id: int) -> tuple[Any, ...] | None:
    """The learner's row as (n, their ``StatsVersion.n``, day, fmt, data as the driver hands it),
    or None: one query, written out (through the ORM, building it cost more than running it,
    on the view that draws the dashboard after a grade)."""
    table = connection.ops.quote_name(DashboardSnapshot._meta.db_table)
    versions = connection.ops.quote_name(StatsVersion._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT s.n, v.n, s.day, s.fmt, s.data FROM {table} s "
            f"LEFT JOIN {versions} v ON v.user_id = s.user_id WHERE s.user_id = %s",
            [user_id],
        )
        return cursor.fetchone()


def inputs(user, now: datetime) -> dict[str, Any]:
    """The learner's ``learner_inputs`` for ``now``'s day: the stored row when it holds the
    learner's current state (one query), else read from the counters and stored."""
    row = _stored(user.pk)
    if row is not None:
        n, current, day, code, data = row
        # ``day`` as the driver hands it: a date (PostgreSQL) or its ISO text (SQLite)
        if n == current and str(day) == _today(now).isoformat() and code == fmt():
            # the JSON as text (both drivers, as Django has them hand it to ``JSONField``)
            return decode(loads(data) if isinstance(data, str) else data)
    # Read the version before the counters it stands for (a grade in between only makes the
    # stored row's label older than its numbers, and the next grade or view reads it again).
    current = StatsVersion.objects.filter(user_id=user.pk).values_list("n", flat=True).first()
    fresh = dashboard.learner_inputs(user, now)
    if current is not None:
        store(user.pk, current, now, fresh)
    return fresh


def counters(user, now: datetime) -> dict[str, Any]:
    """``dashboard.learner_counters(user, now)``, from the learner's stored row."""
    return dashboard.counters_from(inputs(user, now), now)


# --------------------------------------------------------------------------- write side


def _add_row(rows: list[dict[str, Any]], match: dict[str, Any], counts: dict[str, int]) -> None:
    for r in rows:
        if all(r[k] == v for k, v in match.items()):
            for k, v in counts.items():
                r[k] += v
            return
    rows.append({**match, **counts})


def patch(inputs: dict[str, Any], attempt: Attempt | MathAttempt, now: datetime) -> None:
    """Add one just-graded attempt (submitted on ``now``'s UTC day, already in the summary
    counters of this transaction) to the learner's ``inputs``, in place."""
    user_id = attempt.user_id
    if isinstance(attempt, MathAttempt):
        n, right = inputs["math_tallies"].get(attempt.family, (0, 0))
        inputs["math_tallies"][attempt.family] = (n + 1, right + (1 if attempt.correct else 0))
        return
    if attempt.kind == Attempt.Kind.RENARRATION:
        inputs["renarrations"] = dashboard.renarration_counts(user_id)
        return
    if attempt.kind == Attempt.Kind.CONTRAST:
        inputs["pair_discrimination"] = pair_discrimination(
            user_id, now, weeks=dashboard.TREND_WEEKS
        )
        return
    first_week = dashboard.trend_start(now)
    row = {name: getattr(attempt, name) for name in summaries.ATTEMPT_FIELDS}
    timed = False
    for model, key, counts in summaries.contributions(row):
        if model is ScenarioTally:
            _, scenario, answer = key
            match = {"user_id": user_id, "scenario": scenario, "answer_scenario": answer}
            cell = dict.fromkeys(dashboard.TALLY_COUNTERS, 0) | counts
            _add_row(inputs["tally_rows"], match, cell)
        elif model is WeekTally:
            _, week, scenario = key
            if week >= first_week:
                cell = dict.fromkeys(dashboard.WEEK_COUNTERS, 0) | counts
                _add_row(inputs["week_rows"], {"week": week, "scenario": scenario}, cell)
        elif model is DayTally:
            day = key[1]
            inputs["days"][day] = inputs["days"].get(day, 0) + counts["n"]
        elif model is ElapsedTally:
            timed = True
    slug = attempt.scenario
    if timed:  # a time to diagnosis was counted: the scenario's time figures moved
        inputs["timing"][slug] = dashboard.timing(user_id, slugs=[slug])[slug]
    inputs["last_n"].update(dashboard.last_n_accuracy(user_id, slugs=[slug]))


def apply(user_id: int, n: int, attempt: Attempt | MathAttempt) -> bool:
    """In the grade's transaction: patch the learner's stored row with ``attempt`` when it
    holds the state just before it (True); otherwise leave it stale (False)."""
    now = timezone.now()
    row = DashboardSnapshot.objects.select_for_update().filter(user_id=user_id).first()
    if row is None or row.n != n - 1 or row.day != _today(now) or row.fmt != fmt():
        return False
    if attempt.submitted_at is None or _today(attempt.submitted_at) != _today(now):
        return False  # a grade stamped on another day: left to a read from the counters
    data = decode(row.data)
    patch(data, attempt, now)
    row.n, row.data = n, encode(data)
    row.save(update_fields=["n", "data"])
    return True


def on_graded(
    sender: Any,
    user_id: int,
    n: int | None = None,
    attempt: Attempt | MathAttempt | None = None,
    **kwargs: Any,
) -> None:
    """``summaries.graded`` receiver (in the grade's transaction)."""
    if n is not None and attempt is not None:
        apply(user_id, n, attempt)
