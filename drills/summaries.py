"""The write side of the dashboard's read model: summary counters kept with every grade.

A graded attempt adds to one row of each summary table (``drills.models``: ``ScenarioTally``,
``ElapsedTally``, ``WeekTally``, ``DayTally``; ``MathTally`` for a mental-math answer). The same
function, ``contributions``, says what an attempt adds, whether it is applied live or replayed:

* live: every path that stores a grade calls ``record_attempt`` (``record_math_attempt``) in the
  transaction that stores it, once — the submit-once lock makes a second submission a no-op
  before it gets here. Each counter is one ``INSERT ... ON CONFLICT DO UPDATE SET n = n + ...``,
  so concurrent grades of one learner never lose an increment.
* rebuild: ``rebuild_users`` deletes the learners' rows and sums the contributions of their raw
  graded attempts again (``manage.py rebuild_stats``; also needed after attempts were written
  without the live path, e.g. a bulk import, or after ``DRILL_TIME_LIMIT_S``-independent
  definitions change).
"""

from __future__ import annotations

import math
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db import connection, models, transaction
from django.dispatch import Signal

from drills.models import (
    NOT_EVIDENCE,
    SENTENCE_FIELDS,
    Attempt,
    DashboardSnapshot,
    DayTally,
    ElapsedTally,
    MathAttempt,
    MathTally,
    ScenarioTally,
    StatsVersion,
    WeekTally,
)
from scenarios import engine

# The Attempt fields the contributions read (a rebuild fetches only these).
ATTEMPT_FIELDS = (
    "user_id",
    "scenario",
    "answer_scenario",
    "mode",
    "submitted_at",
    "elapsed_s",
    "over_time",
    "win_correct",
    *SENTENCE_FIELDS.values(),
)
KEYS: dict[type[models.Model], tuple[str, ...]] = {
    ScenarioTally: ("user_id", "scenario", "answer_scenario"),
    ElapsedTally: ("user_id", "scenario", "second"),
    WeekTally: ("user_id", "week", "scenario"),
    DayTally: ("user_id", "day"),
    MathTally: ("user_id", "family"),
}
Contribution = tuple[type[models.Model], tuple[Any, ...], dict[str, int]]

# Sent (``user_id``; ``n``, the learner's new ``StatsVersion.n``; ``attempt``, the graded
# Attempt or MathAttempt) in the transaction of every live grade, after the learner's counters
# moved on: the stored dashboard numbers are patched by it there (``drills.stats.snapshot``),
# and what is drawn from them is drawn again for the new state once it commits, in the same
# request (``drills.stats.warm``). A rebuild sends nothing (it may touch every learner).
graded = Signal()


def utc_day(when: datetime) -> date:
    return when.astimezone(UTC).date()


def week_of(when: datetime) -> date:
    d = utc_day(when)
    return d - timedelta(days=d.weekday())


def elapsed_second(elapsed_s: float) -> int:
    """The whole second a time rounds up to: ``elapsed_s <= L`` iff this is ``<= L`` for a
    whole-second limit L."""
    return math.ceil(elapsed_s)


def _fully_correct(row: dict[str, Any]) -> bool:
    # drills.models.FULLY_CORRECT on one row (SQL: NULL over_time is not False).
    return (
        row["over_time"] is False
        and all(
            row[f] is True
            for f in ("scenario_correct", "measurement_correct", "fix_correct", "win_correct")
        )
        and all(row[f] is not False for f in ("step_correct", "gap_correct", "value_correct"))
    )


def contributions(row: dict[str, Any]) -> list[Contribution]:
    """What one graded attempt (its ``ATTEMPT_FIELDS``) adds to each summary table."""
    user, scenario, answer = row["user_id"], row["scenario"], row["answer_scenario"] or ""
    ok = 1 if row["scenario_correct"] else 0
    sentences: dict[str, int] = {}
    for key, fld in SENTENCE_FIELDS.items():
        sentences[f"{key}_graded"] = 0 if row[fld] is None else 1
        sentences[f"{key}_right"] = 1 if row[fld] is True else 0
    cell = {
        "n": 1,
        "ok": ok,
        "practice": 1 if row["mode"] == Attempt.Mode.PRACTICE else 0,
        "measurement": 1 if row["measurement_correct"] is True else 0,
        "fix": 1 if row["fix_correct"] is True else 0,
        "win": 1 if row["win_correct"] is True else 0,
        **{
            f"{k}_{part}": sentences[f"{k}_{part}"]
            for k in ("step", "gap", "value", "expected")
            for part in ("graded", "right")
        },
    }
    twin = engine.lookalike_of(scenario)
    week = {
        "n": 1,
        "ok": ok,
        "fully": 1 if _fully_correct(row) else 0,
        "confused": 1 if twin and answer == twin else 0,
        **sentences,
    }
    when: datetime = row["submitted_at"]
    out: list[Contribution] = [
        (ScenarioTally, (user, scenario, answer), cell),
        (WeekTally, (user, week_of(when), scenario), week),
        (DayTally, (user, utc_day(when)), {"n": 1}),
    ]
    if row["mode"] != Attempt.Mode.PRACTICE and row["elapsed_s"] is not None:
        second = elapsed_second(row["elapsed_s"])
        out.append((ElapsedTally, (user, scenario, second), {"n": 1}))
    return out


def math_contributions(row: dict[str, Any]) -> list[Contribution]:
    return [
        (
            MathTally,
            (row["user_id"], row["family"]),
            {"n": 1, "correct": 1 if row["correct"] else 0},
        )
    ]


def _add(model: type[models.Model], key: tuple[Any, ...], counts: dict[str, int]) -> None:
    """One upsert that adds ``counts`` to the row at ``key`` (creating it)."""
    table = connection.ops.quote_name(model._meta.db_table)
    # Concrete fields always have a column (the stubs allow None for the other kinds).
    fields = {str(f.column): f for f in model._meta.concrete_fields}
    by_attname = {f.attname: str(f.column) for f in model._meta.concrete_fields}
    key_cols = [by_attname[k] for k in KEYS[model]]
    cols = key_cols + list(counts)
    q = connection.ops.quote_name
    params = [
        fields[c].get_db_prep_value(v, connection) for c, v in zip(key_cols, key, strict=True)
    ]
    params += list(counts.values())
    sets = ", ".join(f"{q(c)} = {table}.{q(c)} + excluded.{q(c)}" for c in counts)
    sql = (
        f"INSERT INTO {table} ({', '.join(q(c) for c in cols)}) "
        f"VALUES ({', '.join(['%s'] * len(cols))}) "
        f"ON CONFLICT ({', '.join(q(c) for c in key_cols)}) DO UPDATE SET {sets}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def bump_version(user_id: int) -> int:
    """One learner's numbers changed (in this transaction): move their ``StatsVersion`` on, so
    every cache keyed on it misses from the commit on. Returns the new ``n``. The row stays
    locked until the transaction ends, so one learner's grades are applied one after another."""
    table = connection.ops.quote_name(StatsVersion._meta.db_table)
    token = StatsVersion._meta.get_field("token").get_db_prep_value(uuid.uuid4(), connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (user_id, token, n) VALUES (%s, %s, 1) "
            f"ON CONFLICT (user_id) DO UPDATE SET n = {table}.n + 1 RETURNING n",
            [user_id, token],
        )
        return int(cursor.fetchone()[0])


def _row_of(obj: models.Model, names: Iterable[str]) -> dict[str, Any]:
    return {n: getattr(obj, n) for n in names}


def record_attempt(attempt: Attempt) -> None:
    """Add one just-graded attempt to the summaries. Call it once, inside the transaction that
    stores the grade (after the submit-once check), from every path that grades an attempt."""
    if attempt.submitted_at is None:
        raise ValueError("only a graded attempt is counted")
    n = bump_version(attempt.user_id)
    if attempt.kind not in NOT_EVIDENCE:  # else no evidence: counted apart, from the attempts
        for model, key, counts in contributions(_row_of(attempt, ATTEMPT_FIELDS)):
            _add(model, key, counts)
    graded.send(sender=Attempt, user_id=attempt.user_id, n=n, attempt=attempt)


def record_math_attempt(attempt: MathAttempt) -> None:
    """Add one just-graded mental-math answer to the summaries (same rules as above)."""
    if attempt.submitted_at is None:
        raise ValueError("only a graded answer is counted")
    n = bump_version(attempt.user_id)
    for model, key, counts in math_contributions(
        _row_of(attempt, ("user_id", "family", "correct"))
    ):
        _add(model, key, counts)
    graded.send(sender=MathAttempt, user_id=attempt.user_id, n=n, attempt=attempt)


# --------------------------------------------------------------------------- rebuild


def summed(rows: Iterable[Mapping[str, Any]], contribute=contributions) -> dict[type, dict]:
    """{model: {key: counters}} summed over raw graded rows."""
    out: dict[type, dict[tuple, dict[str, int]]] = defaultdict(dict)
    for row in rows:
        for model, key, counts in contribute(row):
            cell = out[model].get(key)
            if cell is None:
                out[model][key] = dict(counts)
            else:
                for k, v in counts.items():
                    cell[k] += v
    return out


def _write(model: type[models.Model], cells: dict[tuple, dict[str, int]]) -> int:
    names = KEYS[model]
    model._default_manager.bulk_create(
        [model(**dict(zip(names, key, strict=True)), **counts) for key, counts in cells.items()],
        batch_size=1000,
    )
    return len(cells)


def rebuild_users(user_ids: Iterable[int]) -> dict[str, int]:
    """Recompute the summaries of these learners from their raw graded attempts (deleting
    theirs first). Returns rows written per table. Idempotent."""
    ids = sorted(set(user_ids))
    written: dict[str, int] = defaultdict(int)
    with transaction.atomic():
        for model in KEYS:
            model._default_manager.filter(user_id__in=ids).delete()
        # Read again from the rebuilt counters by the next view.
        DashboardSnapshot.objects.filter(user_id__in=ids).delete()
        for chunk in range(0, len(ids), 200):
            part = ids[chunk : chunk + 200]
            rows = (
                Attempt.objects.filter(user_id__in=part)
                .evidence()
                .order_by()
                .values(*ATTEMPT_FIELDS)
                .iterator(chunk_size=5000)
            )
            for model, cells in summed(rows).items():
                written[model.__name__] += _write(model, cells)
            math_rows = (
                MathAttempt.objects.filter(user_id__in=part)
                .graded()
                .order_by()
                .values("user_id", "family", "correct")
                .iterator(chunk_size=5000)
            )
            for model, cells in summed(math_rows, math_contributions).items():
                written[model.__name__] += _write(model, cells)
        for user_id in ids:
            bump_version(user_id)
    return dict(written)


def users_with_answers() -> list[int]:
    """Everyone with a graded attempt or mental-math answer."""
    drills = Attempt.objects.graded().values_list("user_id", flat=True).distinct()
    maths = MathAttempt.objects.graded().values_list("user_id", flat=True).distinct()
    return sorted(set(drills) | set(maths))


def stored(user_ids: Iterable[int]) -> dict[type, dict[tuple, dict[str, int]]]:
    """The summary rows these learners have now, in ``summed``'s shape (zero cells left out)."""
    ids = sorted(set(user_ids))
    out: dict[type, dict[tuple, dict[str, int]]] = defaultdict(dict)
    for model, names in KEYS.items():
        counters = [
            f.attname
            for f in model._meta.concrete_fields
            if not f.primary_key and f.attname not in names
        ]
        for row in model._default_manager.filter(user_id__in=ids).values(*names, *counters):
            if any(row[c] for c in counters):
                out[model][tuple(row[k] for k in names)] = {c: row[c] for c in counters}
    return out


def recomputed(user_ids: Iterable[int]) -> dict[type, dict[tuple, dict[str, int]]]:
    """What the summary rows of these learners should be, from their raw attempts."""
    ids = sorted(set(user_ids))
    rows = Attempt.objects.filter(user_id__in=ids).evidence().order_by().values(*ATTEMPT_FIELDS)
    out = summed(rows.iterator(chunk_size=5000))
    maths = MathAttempt.objects.filter(user_id__in=ids).graded().order_by()
    out.update(summed(maths.values("user_id", "family", "correct"), math_contributions))
    return out


def stale_users(user_ids: Iterable[int]) -> list[int]:
    """The learners whose stored counters differ from their raw attempts."""
    ids = sorted(set(user_ids))
    have, want = stored(ids), recomputed(ids)
    stale = set()
    for model in KEYS:
        a, b = have.get(model, {}), want.get(model, {})
        for key in set(a) | set(b):
            if a.get(key) != b.get(key):
                stale.add(key[0])
    return sorted(stale)
