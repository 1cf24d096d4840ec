"""The dashboard's read model as it was before the summary counters: every number computed by
scanning the raw attempts (SQL GROUP BYs over ``Attempt``). Kept only as the reference the
property test in ``test_dashboard_summaries.py`` holds the counter-based read model
(``drills.stats.dashboard``) to: same inputs, same numbers.

Every function takes a queryset of attempts; ``answer_counts`` takes ``{key: Q}`` windows.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import (
    Aggregate,
    Count,
    DateField,
    F,
    FloatField,
    Func,
    Q,
    QuerySet,
    Window,
)
from django.db.models.functions import RowNumber

from drills import scheduling
from drills.mentalmath import FAMILIES
from drills.models import FULLY_CORRECT, TIMED, Attempt, AttemptQuerySet, Card, MathAttempt
from scenarios import engine

LAST_N = 10
# The five sentences of the diagnosis as stored on Attempt: (key, field, column title). A
# sentence an attempt was not graded on (an older three-part attempt) is NULL and left out of
# that sentence's count.
SENTENCES: tuple[tuple[str, str, str], ...] = (
    ("step", "step_correct", "Step time"),
    ("gap", "gap_correct", "Gap"),
    ("signature", "scenario_correct", "Signature"),
    ("measurement", "measurement_correct", "Measurement"),
    ("value", "value_correct", "Measurement value"),
    ("fix", "fix_correct", "Fix"),
    ("expected", "expected_correct", "Expected step time"),
)
TREND_WEEKS = 12
ACTIVITY_WEEKS = 26


# --------------------------------------------------------------------------- helpers


def _ratio(num: int | None, den: int | None) -> float | None:
    return None if not den else (num or 0) / den


def _limit_s() -> int:
    return settings.TRACETRACK["DRILL_TIME_LIMIT_S"]


def _scenario_slugs() -> list[str]:
    return list(engine.SCENARIOS)


def _lookalike_pairs() -> list[tuple[str, str]]:
    """Directed (true, answered) lookalike pairs, both directions, in catalogue order."""
    return [(slug, twin) for slug in _scenario_slugs() if (twin := engine.lookalike_of(slug))]


def _utc_day(when: datetime) -> date:
    return when.astimezone(UTC).date()


class PercentileCont(Aggregate):
    """PostgreSQL ``percentile_cont(f) WITHIN GROUP (ORDER BY expr)``."""

    function = "percentile_cont"
    name = "PercentileCont"
    output_field = FloatField()
    template = "%(function)s(%(percentile)s) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, expression, percentile: float, **extra):
        super().__init__(expression, percentile=float(percentile), **extra)


class UTCDay(Func):
    """The UTC calendar day of a datetime column, computed natively by the database.

    Django's ``TruncDate`` is a Python function on SQLite, called once per row; with tens of
    thousands of attempts that dominates the page. SQLite stores aware datetimes as UTC text,
    so ``date()`` is exact there.
    """

    output_field = DateField()
    template = "((%(expressions)s) AT TIME ZONE 'UTC')::date"

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="date(%(expressions)s)", **extra)


class UTCWeek(Func):
    """The Monday (UTC) starting the week of a datetime column, computed natively."""

    output_field = DateField()
    template = "date_trunc('week', (%(expressions)s) AT TIME ZONE 'UTC')::date"

    def as_sqlite(self, compiler, connection, **extra):
        # 'weekday 0' moves forward to the next Sunday (or stays on one); 6 days back is Monday.
        template = "date(%(expressions)s, 'weekday 0', '-6 days')"
        return self.as_sql(compiler, connection, template=template, **extra)


def _is_postgres(qs: QuerySet) -> bool:
    return connections[qs.db].vendor == "postgresql"


# --------------------------------------------------------------------------- per scenario


def median_elapsed(attempts_qs: AttemptQuerySet) -> dict[str, float]:
    """Median time to diagnosis (s) per true scenario over graded, timed attempts. One query.

    PostgreSQL: ``percentile_cont(0.5)``. Elsewhere: one window query that numbers each
    scenario's times in order and keeps the middle one or two rows (at most two per scenario),
    which are averaged here.
    """
    qs = attempts_qs.graded().filter(TIMED, elapsed_s__isnull=False)
    if _is_postgres(qs):
        rows = (
            qs.order_by()
            .values("scenario")
            .annotate(median=PercentileCont("elapsed_s", 0.5))
            .values_list("scenario", "median")
        )
        return {slug: float(m) for slug, m in rows if m is not None}
    inner = (
        qs.order_by()
        .annotate(
            rn=Window(RowNumber(), partition_by=[F("scenario")], order_by=F("elapsed_s").asc()),
            n=Window(Count("pk"), partition_by=[F("scenario")]),
        )
        .values_list("scenario", "elapsed_s", "rn", "n")
    )
    sql, params = inner.query.sql_with_params()
    wrapped = (
        "SELECT scenario, AVG(elapsed_s) FROM ("
        f"SELECT x.* FROM ({sql}) AS x) AS w "
        "WHERE w.rn IN ((w.n + 1) / 2, (w.n + 2) / 2) GROUP BY scenario"
    )
    with connections[qs.db].cursor() as cursor:
        cursor.execute(wrapped, params)
        return {slug: float(m) for slug, m in cursor.fetchall() if m is not None}


def last_n_accuracy(attempts_qs: AttemptQuerySet, n: int = LAST_N) -> dict[str, dict[str, Any]]:
    """Accuracy over each scenario's last ``n`` graded attempts (by submission time). One query:
    ROW_NUMBER() over the scenario partition, filtered to the first ``n``, then aggregated."""
    ranked = (
        attempts_qs.graded()
        .order_by()
        .annotate(
            rn=Window(
                RowNumber(),
                partition_by=[F("scenario")],
                order_by=[F("submitted_at").desc(), F("pk").desc()],
            )
        )
        .filter(rn__lte=n)
        .values_list("scenario", "scenario_correct")
    )
    # At most n rows per scenario come back (bounded: 11 x n), so tallying them is not a loop
    # over the learner's history.
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for slug, correct in ranked:
        tally[slug][0] += 1
        tally[slug][1] += 1 if correct else 0
    return {
        slug: {"attempts": total, "correct": right, "accuracy": _ratio(right, total)}
        for slug, (total, right) in tally.items()
    }


def per_scenario_stats(
    attempts_qs: AttemptQuerySet,
    now: datetime,
    cards: QuerySet[Card] | dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One row per scenario (every scenario in the engine, in its order, plus any unknown slug
    found in the attempts): attempts, accuracy all time and over the last 10, median time to
    diagnosis, share under 2:00, measurement / fix / expected-win accuracy, and the card's
    retrievability and next due.

    ``cards`` is a queryset of scenario cards (one learner's), or a mapping slug -> state; None
    leaves retrievability and due out (a cohort has no single card).
    """
    graded = attempts_qs.graded()
    limit = _limit_s()
    timed = TIMED
    rows = {
        r["scenario"]: r
        for r in graded.order_by()
        .values("scenario")
        .annotate(
            attempts=Count("pk"),
            correct=Count("pk", filter=Q(scenario_correct=True)),
            practice=Count("pk", filter=Q(mode=Attempt.Mode.PRACTICE)),
            timed=Count("pk", filter=timed & Q(elapsed_s__isnull=False)),
            under_limit=Count("pk", filter=timed & Q(elapsed_s__lte=limit)),
            measurement=Count("pk", filter=Q(measurement_correct=True)),
            fix=Count("pk", filter=Q(fix_correct=True)),
            win=Count("pk", filter=Q(win_correct=True)),
            **_sentence_counts(("step", "gap", "value", "expected")),
        )
    }
    last = last_n_accuracy(attempts_qs)
    medians = median_elapsed(attempts_qs)

    states: dict[str, dict[str, Any]] | None = None
    if isinstance(cards, QuerySet):
        states = dict(cards.filter(kind=Card.Kind.SCENARIO).values_list("item", "state"))
    elif cards is not None:
        states = dict(cards)

    slugs = _scenario_slugs() + sorted(s for s in rows if s not in engine.SCENARIOS)
    out = []
    for slug in slugs:
        r = rows.get(slug, {})
        n = r.get("attempts", 0)
        row: dict[str, Any] = {
            "slug": slug,
            "title": engine.title_of(slug),
            "twin": engine.lookalike_of(slug),
            "attempts": n,
            "correct": r.get("correct", 0),
            "accuracy": _ratio(r.get("correct"), n),
            "last_n": last.get(slug, {}).get("attempts", 0),
            "last_n_accuracy": last.get(slug, {}).get("accuracy"),
            "practice": r.get("practice", 0),
            "timed": r.get("timed", 0),
            "median_s": medians.get(slug),
            "under_limit": r.get("under_limit", 0),
            "under_limit_share": _ratio(r.get("under_limit"), r.get("timed")),
            "measurement_accuracy": _ratio(r.get("measurement"), n),
            "fix_accuracy": _ratio(r.get("fix"), n),
            "win_accuracy": _ratio(r.get("win"), n),
            **{
                f"{k}_accuracy": _ratio(r.get(f"{k}_right"), r.get(f"{k}_graded"))
                for k in ("step", "gap", "value", "expected")
            },
        }
        if states is not None:
            state = states.get(slug)
            row["retrievability"] = None if state is None else scheduling.retrievability(state, now)
            row["due"] = None if state is None else scheduling.due(state)
            row["due_now"] = row["due"] is not None and row["due"] <= now
        out.append(row)
    return out


# --------------------------------------------------------------------------- confusion


def answer_counts(
    attempts_qs: AttemptQuerySet, windows: dict[int, Q] | None = None
) -> list[dict[str, Any]]:
    """Graded attempts per (learner, true scenario, answer): ``n``, ``ok`` (scenario right) and,
    for each ``windows`` entry ``{key: Q}``, ``t<key>`` (those matching Q). One GROUP BY, which
    the partial index attempt_graded_cover_idx answers without touching the table. The confusion
    matrix and the lookalike mix-ups, of one learner or of a cohort, are sums over these rows."""
    ann: dict[str, Any] = {
        "n": Count("user_id"),
        "ok": Count("user_id", filter=Q(scenario_correct=True)),
    }
    for key, q in (windows or {}).items():
        ann[f"t{key}"] = Count("user_id", filter=q)
    return list(
        attempts_qs.graded()
        .values("user_id", "scenario", "answer_scenario")
        .annotate(**ann)
        .order_by()
    )


def confusion_counts(rows: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(true scenario, answer) -> graded attempts, summed over ``answer_counts`` rows."""
    out: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        out[(r["scenario"], r["answer_scenario"])] += r["n"]
    return dict(out)


def pair_mixups(
    rows: list[dict[str, Any]], pair: tuple[str, str]
) -> tuple[dict[int, int], dict[int, int]]:
    """For one lookalike pair, per learner: attempts that named the other one of the pair, and
    attempts on either scenario of the pair, summed over ``answer_counts`` rows."""
    a, b = pair
    mixups: dict[int, int] = defaultdict(int)
    on_pair: dict[int, int] = defaultdict(int)
    for r in rows:
        if r["scenario"] in pair:
            on_pair[r["user_id"]] += r["n"]
            if r["answer_scenario"] == (b if r["scenario"] == a else a):
                mixups[r["user_id"]] += r["n"]
    return dict(mixups), dict(on_pair)


def confusion_matrix(
    attempts_qs: AttemptQuerySet, *, rows: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """True scenario x answered scenario counts over graded attempts (one GROUP BY query, none
    when the ``answer_counts`` rows are passed in).

    ``labels`` are the engine's scenarios in order, then any other slug met in the data (so the
    cells always sum to the number of graded attempts). ``matrix[i][j]`` counts attempts whose
    true scenario is ``labels[i]`` and whose answer is ``labels[j]``.
    """
    counts = confusion_counts(answer_counts(attempts_qs) if rows is None else rows)
    labels = _scenario_slugs()
    extra = sorted({s for pair in counts for s in pair} - set(labels))
    labels = labels + extra
    index = {slug: i for i, slug in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for (true, answered), n in counts.items():
        matrix[index[true]][index[answered]] += n
    row_totals = [sum(r) for r in matrix]
    return {
        "labels": labels,
        "titles": [engine.title_of(s) for s in labels],
        "matrix": matrix,
        "row_totals": row_totals,
        "col_totals": [sum(col) for col in zip(*matrix, strict=True)] if matrix else [],
        "total": sum(row_totals),
        "correct": sum(matrix[i][i] for i in range(len(labels))),
    }


# --------------------------------------------------------------------------- lookalikes


def _week_start(when: datetime | date) -> date:
    d = when.astimezone(UTC).date() if isinstance(when, datetime) else when
    return d - timedelta(days=d.weekday())


def lookalike_rates(
    attempts_qs: AttemptQuerySet, *, weeks: int = TREND_WEEKS, now: datetime | None = None
) -> list[dict[str, Any]]:
    """For each directed lookalike pair (true A, answered its twin B): how often a graded attempt
    on A was answered B, all time and per week (the ``weeks`` most recent weeks up to ``now``,
    empty weeks included with ``rate`` None). One GROUP BY (scenario, week) query."""
    pairs = _lookalike_pairs()
    confused = Q()
    for true, twin in pairs:
        confused |= Q(scenario=true, answer_scenario=twin)
    rows = (
        attempts_qs.graded()
        .filter(scenario__in=[p[0] for p in pairs])
        .order_by()
        .annotate(week=UTCWeek("submitted_at"))
        .values_list("scenario", "week")
        .annotate(n=Count("pk"), confused=Count("pk", filter=confused))
    )
    by_pair: dict[str, dict[date, tuple[int, int]]] = defaultdict(dict)
    for slug, week, n, c in rows:
        by_pair[slug][_week_start(week)] = (n, c)
    end = _week_start(now or datetime.now(UTC))
    week_list = [end - timedelta(weeks=k) for k in range(weeks - 1, -1, -1)]
    out = []
    for true, twin in pairs:
        series = by_pair.get(true, {})
        total = sum(n for n, _ in series.values())
        conf = sum(c for _, c in series.values())
        trend = []
        for w in week_list:
            n, c = series.get(w, (0, 0))
            trend.append({"week": w, "attempts": n, "confused": c, "rate": _ratio(c, n)})
        out.append(
            {
                "true": true,
                "answered": twin,
                "true_title": engine.title_of(true),
                "answered_title": engine.title_of(twin),
                "attempts": total,
                "confused": conf,
                "rate": _ratio(conf, total),
                "trend": trend,
            }
        )
    return out


# --------------------------------------------------------------------------- over time


def accuracy_over_time(
    attempts_qs: AttemptQuerySet, *, weeks: int = TREND_WEEKS, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Scenario accuracy per week for the ``weeks`` most recent weeks (empty weeks included).
    One GROUP BY week query."""
    end = _week_start(now or datetime.now(UTC))
    start = end - timedelta(weeks=weeks - 1)
    rows = (
        attempts_qs.graded()
        .filter(submitted_at__gte=datetime.combine(start, datetime.min.time(), tzinfo=UTC))
        .order_by()
        .annotate(week=UTCWeek("submitted_at"))
        .values_list("week")
        .annotate(
            n=Count("pk"),
            correct=Count("pk", filter=Q(scenario_correct=True)),
            fully=Count("pk", filter=FULLY_CORRECT),
        )
    )
    found = {_week_start(w): (n, c, f) for w, n, c, f in rows}
    out = []
    for k in range(weeks):
        w = start + timedelta(weeks=k)
        n, c, f = found.get(w, (0, 0, 0))
        out.append(
            {
                "week": w,
                "attempts": n,
                "correct": c,
                "accuracy": _ratio(c, n),
                "fully_correct": f,
                "full_accuracy": _ratio(f, n),
            }
        )
    return out


def _sentence_counts(keys=None) -> dict[str, Count]:
    """Count(...) annotations: per sentence, attempts graded on it and attempts right on it."""
    out: dict[str, Count] = {}
    for key, fld, _title in SENTENCES:
        if keys is not None and key not in keys:
            continue
        out[f"{key}_graded"] = Count("pk", filter=Q(**{f"{fld}__isnull": False}))
        out[f"{key}_right"] = Count("pk", filter=Q(**{fld: True}))
    return out


def sentence_accuracy_over_time(
    attempts_qs: QuerySet[Attempt], *, weeks: int = TREND_WEEKS, now: datetime | None = None
) -> dict[str, Any]:
    """Accuracy of each of the five sentences per week (the ``weeks`` most recent, empty weeks
    included) and over the whole window. One GROUP BY week query.

    Each sentence's accuracy is over the attempts graded on it, so older three-part attempts
    count for the signature, measurement and fix but not for the numbers they never gave."""
    end = _week_start(now or datetime.now(UTC))
    start = end - timedelta(weeks=weeks - 1)
    rows = (
        attempts_qs.graded()
        .filter(submitted_at__gte=datetime.combine(start, datetime.min.time(), tzinfo=UTC))
        .order_by()
        .annotate(week=UTCWeek("submitted_at"))
        .values("week")
        .annotate(n=Count("pk"), **_sentence_counts())
    )
    found = {_week_start(r["week"]): r for r in rows}
    keys = [k for k, _f, _t in SENTENCES]
    out_weeks = []
    totals = {k: [0, 0] for k in keys}
    for i in range(weeks):
        w = start + timedelta(weeks=i)
        r = found.get(w, {})
        cells = {}
        for k in keys:
            graded, right = r.get(f"{k}_graded", 0), r.get(f"{k}_right", 0)
            totals[k][0] += graded
            totals[k][1] += right
            cells[k] = {"graded": graded, "right": right, "accuracy": _ratio(right, graded)}
        out_weeks.append({"week": w, "attempts": r.get("n", 0), "sentences": cells})
    return {
        "sentences": [{"key": k, "title": t} for k, _f, t in SENTENCES],
        "weeks": out_weeks,
        "totals": {
            k: {"graded": g, "right": rt, "accuracy": _ratio(rt, g)}
            for k, (g, rt) in totals.items()
        },
    }


def daily_activity(
    attempts_qs: AttemptQuerySet, *, weeks: int = ACTIVITY_WEEKS, now: datetime | None = None
) -> dict[str, Any]:
    """Graded attempts per UTC day over the last ``weeks`` weeks (whole weeks, Monday first, the
    current week last). One GROUP BY day query. ``weeks`` is a list of columns of 7 days."""
    today = _utc_day(now or datetime.now(UTC))
    start = _week_start(today) - timedelta(weeks=weeks - 1)
    rows = (
        attempts_qs.graded()
        .filter(submitted_at__gte=datetime.combine(start, datetime.min.time(), tzinfo=UTC))
        .order_by()
        .annotate(day=UTCDay("submitted_at"))
        .values_list("day")
        .annotate(n=Count("pk"))
    )
    counts = dict(rows)
    columns = []
    for k in range(weeks):
        monday = start + timedelta(weeks=k)
        column = []
        for i in range(7):
            d = monday + timedelta(days=i)
            column.append({"date": d, "count": counts.get(d, 0), "future": d > today})
        columns.append(column)
    return {
        "start": start,
        "end": today,
        "weeks": columns,
        "total": sum(counts.values()),
        "active_days": sum(1 for n in counts.values() if n),
        "max": max(counts.values(), default=0),
    }


def streak(attempts_qs: AttemptQuerySet, now: datetime) -> dict[str, Any]:
    """Consecutive UTC days with at least one graded attempt, ending today (or yesterday, while
    today's drill is still to do).

    Reads the distinct UTC days of the last ``span`` days from SQL (one query, at most ``span``
    small rows); only a streak that reaches back to the start of that window reads again, with
    the window doubled."""
    today = _utc_day(now)
    tomorrow = datetime.combine(today + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    graded = attempts_qs.graded().filter(submitted_at__lt=tomorrow).order_by()
    span = 64
    while True:
        since = tomorrow - timedelta(days=span)
        days = set(
            graded.filter(submitted_at__gte=since)
            .annotate(day=UTCDay("submitted_at"))
            .values_list("day", flat=True)
            .distinct()
        )
        done_today = today in days
        day = today if done_today else today - timedelta(days=1)
        length = 0
        while day in days:
            length += 1
            day -= timedelta(days=1)
        if length < span - 1 or not graded.filter(submitted_at__lt=since).exists():
            return {"days": length, "done_today": done_today}
        span *= 4


# --------------------------------------------------------------------------- mental math


def math_stats(user, now: datetime) -> list[dict[str, Any]]:
    """Per mental-math family: graded attempts, accuracy, share in time, and the family card's
    retrievability and next due. Two queries (one GROUP BY family, one for the cards)."""
    rows = {
        fam: (n, c)
        for fam, n, c in MathAttempt.objects.filter(user=user)
        .graded()
        .order_by()
        .values_list("family")
        .annotate(n=Count("pk"), correct=Count("pk", filter=Q(correct=True)))
    }
    cards = {
        item: (state, due)
        for item, state, due in Card.objects.filter(user=user, kind=Card.Kind.MATH).values_list(
            "item", "state", "due"
        )
    }
    keys = list(FAMILIES) + sorted((set(rows) | set(cards)) - set(FAMILIES))
    out = []
    for key in keys:
        n, c = rows.get(key, (0, 0))
        state, due = cards.get(key, (None, None))
        family = FAMILIES.get(key)
        out.append(
            {
                "family": key,
                "title": family.title if family is not None else key,
                "attempts": n,
                "correct": c,
                "accuracy": _ratio(c, n),
                "retrievability": None if state is None else scheduling.retrievability(state, now),
                "due": due,
            }
        )
    return out


# --------------------------------------------------------------------------- bundles


def learner_stats(user, now: datetime) -> dict[str, Any]:
    """Everything the dashboard shows for one learner (the page and stats.json render this)."""
    attempts = Attempt.objects.filter(user=user)
    scenarios = per_scenario_stats(attempts, now, cards=Card.objects.filter(user=user))
    confusion = confusion_matrix(attempts)
    total = confusion["total"]
    practice = sum(r["practice"] for r in scenarios)
    return {
        "generated_at": now,
        "time_limit_s": _limit_s(),
        "totals": {
            "graded": total,
            "correct": confusion["correct"],
            "accuracy": _ratio(confusion["correct"], total),
            "practice": practice,
        },
        "scenarios": scenarios,
        "confusion": confusion,
        "lookalikes": lookalike_rates(attempts, now=now),
        "accuracy_over_time": accuracy_over_time(attempts, now=now),
        "sentence_accuracy": sentence_accuracy_over_time(attempts, now=now),
        "daily_activity": daily_activity(attempts, now=now),
        "math": math_stats(user, now),
    }


def due_overview(user, now: datetime) -> dict[str, Any]:
    cards = {
        c.item: c.state
        for c in Card.objects.filter(user=user, kind=Card.Kind.SCENARIO).only("item", "state")
    }
    states = {slug: cards.get(slug) for slug in engine.SCENARIOS}
    summary = scheduling.due_summary(states, now)
    titles = {slug: s.title for slug, s in engine.SCENARIOS.items()}
    return {
        "due_now": [(slug, titles[slug]) for slug in summary["due_now"]],
        "due_today": [(slug, titles[slug]) for slug in summary["due_today"]],
        "next": [(slug, titles[slug], when) for slug, when in summary["next"]],
        "unseen": [slug for slug, st in states.items() if st is None],
    }
