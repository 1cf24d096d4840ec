"""Read models for the learner's home and dashboard, and the cohort pages' drill numbers.

The numbers are read from the summary counters (``drills.models``: ``ScenarioTally``,
``ElapsedTally``, ``WeekTally``, ``DayTally``, ``MathTally``) that ``drills.summaries`` keeps up
to date in the transaction that stores each grade, never by scanning a learner's history: a view
costs the same at 20 attempts as at 20,000. ``manage.py rebuild_stats`` recomputes them from the
raw attempts. The dashboard itself reads one learner's numbers from one stored row
(``learner_inputs``, kept by ``drills.stats.snapshot`` and patched by every grade) and shapes
them here (``counters_from``).

Every function takes ``who``: one learner (a user or a user id) or several (an iterable or a
``values("user_id")`` queryset of ids, for a cohort), and returns plain data: numbers, dates,
lists and dicts. ``learner_stats`` bundles them for one learner; the dashboard page and
``/dashboard/stats.json`` both render its result, so they always show the same numbers.

Rules (a contract for the page, the JSON and the tests):

* Only graded attempts count (``submitted_at IS NOT NULL``): only a grade adds to a summary.
* Practice attempts (``mode == "practice"``) are graded diagnoses, so they count in attempts,
  scenario accuracy, last-10 accuracy, measurement / fix / expected-win accuracy, the confusion
  matrix, the lookalike rates, accuracy over time and daily activity. They have no clock, so they
  are left out of the time figures: the median time to diagnosis and the share under 2:00 are taken
  over the timed attempts (timed and Perfetto-only modes) only. They never update a card
  (``scheduling.counts_for_schedule``), so retrievability and next due ignore them. Each scenario
  row also reports how many of its attempts were practice.
* Each function runs a fixed number of queries over summary rows (at most one per scenario,
  scenario pair, week, day or whole second of time) or over a bounded slice of attempts read
  through an index (the last 10 per scenario; the one or two middle times per scenario).
* "Under 2:00" means ``elapsed_s <= DRILL_TIME_LIMIT_S`` (the limit the learner sees; the
  network grace used for ``over_time`` is not counted).
* Weeks start on Monday and days are UTC days.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connections
from django.db.models import Count, Manager, Model, Q, QuerySet, Sum
from django.db.models.functions import Coalesce

from drills import scheduling
from drills.contrast.progress import pair_discrimination
from drills.mentalmath import FAMILIES
from drills.models import (
    TIMED,
    Attempt,
    Card,
    DayTally,
    ElapsedTally,
    MathTally,
    ScenarioTally,
    WeekTally,
)
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


def _week_start(when: datetime | date) -> date:
    d = when.astimezone(UTC).date() if isinstance(when, datetime) else when
    return d - timedelta(days=d.weekday())


def _of(qs: QuerySet | Manager, who: Any) -> QuerySet:
    """``qs`` narrowed to one learner (a user or an id) or to several (ids, or a subquery)."""
    if isinstance(who, Model):
        return qs.filter(user_id=who.pk)
    if isinstance(who, int):
        return qs.filter(user_id=who)
    return qs.filter(user_id__in=who)


def _sum(field: str, **filter_q: Any) -> Coalesce:
    total = Sum(field, filter=Q(**filter_q)) if filter_q else Sum(field)
    return Coalesce(total, 0)


def _sentence_sums(keys: Iterable[str] | None = None) -> dict[str, Coalesce]:
    """Sum(...) annotations over summary rows: per sentence, attempts graded on it and right."""
    out: dict[str, Coalesce] = {}
    for key, _fld, _title in SENTENCES:
        if keys is not None and key not in keys:
            continue
        out[f"{key}_graded"] = _sum(f"{key}_graded")
        out[f"{key}_right"] = _sum(f"{key}_right")
    return out


# --------------------------------------------------------------------------- per scenario


_SLUG = "\x00scenario"  # a placeholder parameter, replaced per scenario in a compiled query
_BOUND = -1.0e300


def _union(
    qs: QuerySet, per_part: list[tuple[dict[Any, Any], tuple[Any, ...]]], tail: str = ""
) -> list[tuple]:
    """Run ``qs`` (compiled once, with placeholder parameters) once per entry of ``per_part``
    (placeholder -> value, and the parameters of ``tail``, e.g. LIMIT/OFFSET), as one UNION ALL
    query. Compiling the ORM query once keeps the cost flat in the number of scenarios."""
    if not per_part:
        return []
    sql, params = qs.query.sql_with_params()
    parts: list[str] = []
    args: list[Any] = []
    for k, (values, tail_args) in enumerate(per_part):
        parts.append(f"SELECT * FROM ({sql}{tail}) AS u{k}")
        args.extend(values.get(p, p) if isinstance(p, str | float) else p for p in params)
        args.extend(tail_args)
    with connections[qs.db].cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), args)
        return cursor.fetchall()


def _middle_times(who: Any, wanted: dict[str, tuple[float, int, int]]) -> dict[str, float]:
    """The median per scenario, from the timed attempts' index: ``wanted`` maps a scenario to
    (lower bound, offset, count): the attempts with ``elapsed_s > bound`` in order, skipping
    ``offset``, the next ``count`` (one or two) are the middle. One query (a UNION of at most
    one short index range per scenario)."""
    qs = (
        _of(Attempt.objects.evidence().filter(TIMED, elapsed_s__isnull=False), who)
        .filter(scenario=_SLUG, elapsed_s__gt=_BOUND)
        .order_by("elapsed_s")
        .values_list("scenario", "elapsed_s")
    )
    per_part = [
        ({_SLUG: slug, _BOUND: float(bound)}, (count, offset))
        for slug, (bound, offset, count) in wanted.items()
    ]
    values: dict[str, list[float]] = defaultdict(list)
    for slug, elapsed in _union(qs, per_part, " LIMIT %s OFFSET %s"):
        values[slug].append(float(elapsed))
    return {slug: sum(v) / len(v) for slug, v in values.items() if v}


def timing(who: Any, *, slugs: Collection[str] | None = None) -> dict[str, dict[str, Any]]:
    """Per scenario: graded timed attempts, those under the limit, and the median time to
    diagnosis (s). Two queries: over the whole-second counts, a window sum finds each
    scenario's total, its count under the limit and the second holding its middle time (one
    row per scenario comes back); then the middle one or two times themselves. ``slugs``:
    only these scenarios (e.g. the one a grade just changed)."""
    limit = _limit_s()
    tallies = _of(ElapsedTally.objects, who)
    if slugs is not None:
        tallies = tallies.filter(scenario__in=sorted(slugs))
    cells = tallies.order_by().values_list("scenario", "second").annotate(total=Sum("n"))
    sql, params = cells.query.sql_with_params()
    middle = (
        "SELECT scenario, second, n, cum, total, under FROM ("
        "SELECT c.scenario AS scenario, c.second AS second, CAST(c.total AS INTEGER) AS n, "
        # Whole numbers cast back to integers: PostgreSQL sums a sum as numeric, and the
        # rank below must divide as integers.
        "CAST(SUM(c.total) OVER (PARTITION BY c.scenario ORDER BY c.second) AS INTEGER) AS cum, "
        "CAST(SUM(c.total) OVER (PARTITION BY c.scenario) AS INTEGER) AS total, "
        "CAST(SUM(CASE WHEN c.second <= %s THEN c.total ELSE 0 END) "
        "OVER (PARTITION BY c.scenario) AS INTEGER) AS under "
        f"FROM ({sql}) AS c) AS w "
        "WHERE w.cum >= (w.total + 1) / 2 AND w.cum - w.n < (w.total + 1) / 2"
    )
    out: dict[str, dict[str, Any]] = {}
    wanted: dict[str, tuple[float, int, int]] = {}
    with connections[cells.db].cursor() as cursor:
        cursor.execute(middle, [limit, *params])
        for slug, second, n, cum, total, under in cursor.fetchall():
            total, under = int(total), int(under)
            out[slug] = {"timed": total, "under_limit": under, "median_s": None}
            first = (total + 1) // 2  # 1-based rank of the lower middle time
            count = 2 if total % 2 == 0 else 1
            wanted[slug] = (second - 1, first - (int(cum) - int(n)) - 1, count)
    for slug, median in _middle_times(who, wanted).items():
        out[slug]["median_s"] = median
    return out


def median_elapsed(who: Any) -> dict[str, float]:
    """Median time to diagnosis (s) per true scenario over graded, timed attempts."""
    return {s: t["median_s"] for s, t in timing(who).items() if t["median_s"] is not None}


def last_n_accuracy(
    who: Any, n: int = LAST_N, *, slugs: list[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Accuracy over each scenario's last ``n`` graded attempts (by submission time). One query
    (two without ``slugs``, the scenarios to read): a UNION of each scenario's newest ``n``
    through the (user, scenario, submitted_at) index."""
    if slugs is None:
        slugs = _scenario_slugs() + sorted(
            set(_of(ScenarioTally.objects, who).values_list("scenario", flat=True))
            - set(engine.SCENARIOS)
        )
    qs = (
        _of(Attempt.objects.evidence(), who)
        .filter(scenario=_SLUG)
        .order_by("-submitted_at", "-pk")
        .values_list("scenario", "scenario_correct")
    )
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    # At most n rows per scenario come back (bounded: 11 x n).
    for slug, correct in _union(qs, [({_SLUG: s}, (n,)) for s in slugs], " LIMIT %s"):
        tally[slug][0] += 1
        tally[slug][1] += 1 if correct else 0
    return {
        slug: {"attempts": total, "correct": right, "accuracy": _ratio(right, total)}
        for slug, (total, right) in tally.items()
    }


def per_scenario_stats(
    who: Any,
    now: datetime,
    cards: QuerySet[Card] | dict[str, dict[str, Any]] | None = None,
    *,
    tally_rows: list[dict[str, Any]] | None = None,
    last: dict[str, dict[str, Any]] | None = None,
    times: dict[str, dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """One row per scenario (every scenario in the engine, in its order, plus any unknown slug
    found in the attempts): attempts, accuracy all time and over the last 10, median time to
    diagnosis, share under 2:00, measurement / fix / expected-win accuracy, and the card's
    retrievability and next due.

    ``cards`` is a queryset of scenario cards (one learner's), or a mapping slug -> state; None
    leaves retrievability and due out (a cohort has no single card). ``tally_rows`` (from
    ``scenario_tally_rows``) saves reading the scenario counters again; ``last`` (from
    ``last_n_accuracy``) and ``times`` (from ``timing``) the last-10 and the time queries.
    """
    fields = {"attempts": "n", "correct": "ok"}
    fields.update({c: c for c in ("practice", "measurement", "fix", "win")})
    fields.update({c: c for c in TALLY_COUNTERS[6:]})  # the sentences' graded / right
    rows: dict[str, dict[str, int]] = {}
    if tally_rows is None:
        rows = {
            r["scenario"]: r
            for r in _of(ScenarioTally.objects, who)
            .order_by()
            .values("scenario")
            .annotate(**{name: _sum(counter) for name, counter in fields.items()})
        }
    else:
        for t in tally_rows:
            sums = rows.setdefault(t["scenario"], dict.fromkeys(fields, 0))
            for name, counter in fields.items():
                sums[name] += t[counter]
    slugs = _scenario_slugs() + sorted(s for s in rows if s not in engine.SCENARIOS)
    if last is None:
        last = last_n_accuracy(who, slugs=slugs)
    if times is None:
        times = timing(who)

    states: dict[str, dict[str, Any]] | None = None
    if isinstance(cards, QuerySet):
        states = dict(cards.filter(kind=Card.Kind.SCENARIO).values_list("item", "state"))
    elif cards is not None:
        states = dict(cards)

    out = []
    for slug in slugs:
        r = rows.get(slug, {})
        t = times.get(slug, {})
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
            "timed": t.get("timed", 0),
            "median_s": t.get("median_s"),
            "under_limit": t.get("under_limit", 0),
            "under_limit_share": _ratio(t.get("under_limit"), t.get("timed")),
            "measurement_accuracy": _ratio(r.get("measurement"), n),
            "fix_accuracy": _ratio(r.get("fix"), n),
            "win_accuracy": _ratio(r.get("win"), n),
            **{
                f"{k}_accuracy": _ratio(r.get(f"{k}_right"), r.get(f"{k}_graded"))
                for k in ("step", "gap", "value", "expected")
            },
        }
        if states is not None:
            row.update(_card_fields(states.get(slug), now))
            row["due_now"] = row["due"] is not None and row["due"] <= now
        out.append(row)
    return out


# --------------------------------------------------------------------------- confusion

# ScenarioTally's counters; the sentences' graded / right pairs come last (from index 6).
TALLY_COUNTERS = (
    "n",
    "ok",
    "practice",
    "measurement",
    "fix",
    "win",
    *(f"{k}_{part}" for k in ("step", "gap", "value", "expected") for part in ("graded", "right")),
)


def scenario_tally_rows(who: Any) -> list[dict[str, Any]]:
    """The ``ScenarioTally`` rows themselves, every counter: ``answer_counts`` rows (no windows)
    that ``per_scenario_stats`` can also sum. One query for both."""
    return list(
        _of(ScenarioTally.objects, who)
        .order_by()
        .values("user_id", "scenario", "answer_scenario", *TALLY_COUNTERS)
    )


def answer_counts(
    who: Any,
    windows: dict[int, tuple[Q, datetime]] | None = None,
    *,
    window_scenarios: Collection[str] | None = None,
) -> list[dict]:
    """Graded attempts per (learner, true scenario, answer): ``n``, ``ok`` (scenario right) and,
    for each ``windows`` entry ``{key: (in_time, since)}``, ``t<key>``: those matching the
    ``in_time`` Q, where every attempt submitted at or before ``since`` matches it. The counts
    are the ``ScenarioTally`` rows; a window subtracts the attempts after ``since`` that miss it
    (one more GROUP BY, over the attempts since the earliest ``since`` only). The confusion
    matrix and the lookalike mix-ups, of one learner or of a cohort, are sums over these rows.

    ``window_scenarios``: only the rows of these true scenarios get ``t<key>`` (and only their
    attempts are read for it), e.g. the lookalike pairs' scenarios for a pair-drill goal."""
    rows = list(
        _of(ScenarioTally.objects, who)
        .order_by()
        .values("user_id", "scenario", "answer_scenario", "n", "ok")
    )
    if not windows:
        return rows
    earliest = min(since for _q, since in windows.values())
    late_ann = {
        f"late{key}": Count("pk", filter=Q(submitted_at__gt=since) & ~q)
        for key, (q, since) in windows.items()
    }
    late_qs = _of(Attempt.objects.evidence(), who).filter(submitted_at__gt=earliest)
    if window_scenarios is not None:
        wanted = set(window_scenarios)
        late_qs = late_qs.filter(scenario__in=sorted(wanted))
        rows_in = [r for r in rows if r["scenario"] in wanted]
    else:
        rows_in = rows
    late = {
        (r["user_id"], r["scenario"], r["answer_scenario"]): r
        for r in late_qs.order_by()
        .values("user_id", "scenario", "answer_scenario")
        .annotate(**late_ann)
    }
    for r in rows_in:
        missed = late.get((r["user_id"], r["scenario"], r["answer_scenario"]), {})
        for key in windows:
            r[f"t{key}"] = r["n"] - missed.get(f"late{key}", 0)
    return rows


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


def confusion_matrix(who: Any, *, rows: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """True scenario x answered scenario counts over graded attempts (one query, none when the
    ``answer_counts`` rows are passed in).

    ``labels`` are the engine's scenarios in order, then any other slug met in the data (so the
    cells always sum to the number of graded attempts). ``matrix[i][j]`` counts attempts whose
    true scenario is ``labels[i]`` and whose answer is ``labels[j]``.
    """
    counts = confusion_counts(answer_counts(who) if rows is None else rows)
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


def lookalike_rates(
    who: Any,
    *,
    weeks: int = TREND_WEEKS,
    now: datetime | None = None,
    rows: list[dict[str, Any]] | None = None,
    week_rows: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """For each directed lookalike pair (true A, answered its twin B): how often a graded attempt
    on A was answered B, all time (from the ``answer_counts`` rows, passed in or read) and per
    week (the ``weeks`` most recent weeks up to ``now``, empty weeks included with ``rate``
    None, from the week counters, or from ``week_counts`` rows of at least those weeks)."""
    pairs = _lookalike_pairs()
    counts = confusion_counts(answer_counts(who) if rows is None else rows)
    end = _week_start(now or datetime.now(UTC))
    week_list = [end - timedelta(weeks=k) for k in range(weeks - 1, -1, -1)]
    by_pair: dict[str, dict[date, tuple[int, int]]] = defaultdict(dict)
    if week_rows is None:
        weekly = (
            _of(WeekTally.objects, who)
            .filter(scenario__in=[p[0] for p in pairs], week__gte=week_list[0], week__lte=end)
            .order_by()
            .values_list("scenario", "week")
            .annotate(n=_sum("n"), confused=_sum("confused"))
        )
        for slug, week, n, c in weekly:
            by_pair[slug][week] = (n, c)
    else:
        trues = {p[0] for p in pairs}
        for r in week_rows:
            slug, week = r["scenario"], r["week"]
            if slug in trues and week_list[0] <= week <= end:
                n, c = by_pair[slug].get(week, (0, 0))
                by_pair[slug][week] = (n + r["n"], c + r["confused"])
    out = []
    for true, twin in pairs:
        series = by_pair.get(true, {})
        total = sum(n for (t, _a), n in counts.items() if t == true)
        conf = counts.get((true, twin), 0)
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


WEEK_COUNTERS = (
    "n",
    "ok",
    "fully",
    "confused",
    *(f"{key}_{part}" for key, _f, _t in SENTENCES for part in ("graded", "right")),
)


def week_counts(
    who: Any, *, weeks: int = TREND_WEEKS, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Every week counter (``WEEK_COUNTERS``) per (week, scenario), from the Monday ``weeks``
    weeks back from ``now``'s on: one query for the lookalike trends, the accuracy over time and
    the per-sentence table together (each takes these rows as ``week_rows``)."""
    end = _week_start(now or datetime.now(UTC))
    rows = (
        _of(WeekTally.objects, who)
        .filter(week__gte=end - timedelta(weeks=weeks - 1))
        .order_by()
        .values("week", "scenario")
        .annotate(**{f"sum_{c}": _sum(c) for c in WEEK_COUNTERS})
    )
    return [
        {"week": r["week"], "scenario": r["scenario"], **{c: r[f"sum_{c}"] for c in WEEK_COUNTERS}}
        for r in rows
    ]


def _weeks_of(
    who: Any,
    weeks: int,
    now: datetime | None,
    fields: dict[str, str],
    week_rows: list[dict[str, Any]] | None = None,
):
    """(first week, {week: {name: summed counter}}) for ``fields`` (name -> counter) over the
    ``weeks`` most recent weeks: one query, or none from ``week_counts`` rows."""
    end = _week_start(now or datetime.now(UTC))
    start = end - timedelta(weeks=weeks - 1)
    if week_rows is not None:
        found: dict[date, dict[str, int]] = {}
        pairs = list(fields.items())
        for r in week_rows:
            week = r["week"]
            if week >= start:
                cell = found.get(week)
                if cell is None:
                    found[week] = {name: r[counter] for name, counter in pairs}
                else:
                    for name, counter in pairs:
                        cell[name] += r[counter]
        return start, found
    rows = (
        _of(WeekTally.objects, who)
        .filter(week__gte=start)
        .order_by()
        .values("week")
        .annotate(**{name: _sum(counter) for name, counter in fields.items()})
    )
    return start, {r["week"]: r for r in rows}


def accuracy_over_time(
    who: Any,
    *,
    weeks: int = TREND_WEEKS,
    now: datetime | None = None,
    week_rows: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Scenario accuracy per week for the ``weeks`` most recent weeks (empty weeks included).
    One query over the week counters (none with ``week_counts`` rows)."""
    start, found = _weeks_of(
        who, weeks, now, {"attempts": "n", "correct": "ok", "fully": "fully"}, week_rows
    )
    out = []
    for k in range(weeks):
        w = start + timedelta(weeks=k)
        r = found.get(w, {})
        n, c, f = r.get("attempts", 0), r.get("correct", 0), r.get("fully", 0)
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


def sentence_accuracy_over_time(
    who: Any,
    *,
    weeks: int = TREND_WEEKS,
    now: datetime | None = None,
    week_rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Accuracy of each of the five sentences per week (the ``weeks`` most recent, empty weeks
    included) and over the whole window. One query over the week counters (none with
    ``week_counts`` rows).

    Each sentence's accuracy is over the attempts graded on it, so older three-part attempts
    count for the signature, measurement and fix but not for the numbers they never gave."""
    fields = {"n": "n"}
    for key, _fld, _title in SENTENCES:
        fields[f"{key}_graded"] = f"{key}_graded"
        fields[f"{key}_right"] = f"{key}_right"
    start, found = _weeks_of(who, weeks, now, fields, week_rows)
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


def trend_start(now: datetime, weeks: int = TREND_WEEKS) -> date:
    """The first week (its Monday) of the weekly trends ending in ``now``'s week."""
    return _week_start(now) - timedelta(weeks=weeks - 1)


def activity_start(now: datetime, weeks: int = ACTIVITY_WEEKS) -> date:
    """The first day (a Monday) of the daily-activity window ending in ``now``'s week."""
    return _week_start(_utc_day(now)) - timedelta(weeks=weeks - 1)


def day_counts(who: Any, since: date) -> dict[date, int]:
    """Graded attempts per UTC day from ``since`` on: one query over the day counters."""
    rows = (
        _of(DayTally.objects, who)
        .filter(day__gte=since)
        .order_by()
        .values_list("day")
        .annotate(total=_sum("n"))
    )
    return dict(rows)


def daily_activity(
    who: Any,
    *,
    weeks: int = ACTIVITY_WEEKS,
    now: datetime | None = None,
    counts: dict[date, int] | None = None,
) -> dict[str, Any]:
    """Graded attempts per UTC day over the last ``weeks`` weeks (whole weeks, Monday first, the
    current week last). One query over the day counters (none with ``counts``, from
    ``day_counts`` since at most the window's first day). ``weeks`` is a list of columns of 7
    days."""
    today = _utc_day(now or datetime.now(UTC))
    start = _week_start(today) - timedelta(weeks=weeks - 1)
    if counts is None:
        counts = day_counts(who, start)
    counts = {d: n for d, n in counts.items() if start <= d}
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


def streak(who: Any, now: datetime) -> dict[str, Any]:
    """Consecutive UTC days with at least one graded attempt, ending today (or yesterday, while
    today's drill is still to do).

    Reads the active days of the last ``span`` days from the day counters (one query, at most
    ``span`` small rows); only a streak that reaches back to the start of that window reads
    again, with the window widened."""
    today = _utc_day(now)
    active = _of(DayTally.objects, who).filter(day__lte=today, n__gt=0).order_by()
    span = 64
    while True:
        since = today - timedelta(days=span - 1)
        days = set(active.filter(day__gte=since).values_list("day", flat=True).distinct())
        done_today = today in days
        day = today if done_today else today - timedelta(days=1)
        length = 0
        while day in days:
            length += 1
            day -= timedelta(days=1)
        if length < span - 1 or not active.filter(day__lt=since).exists():
            return {"days": length, "done_today": done_today}
        span *= 4


# --------------------------------------------------------------------------- mental math


def _card_fields(state: dict[str, Any] | None, now: datetime) -> dict[str, Any]:
    return {
        "retrievability": estimated_recall(state, now),
        "due": None if state is None else scheduling.due(state),
    }


def estimated_recall(state: dict[str, Any] | None, now: datetime) -> float | None:
    """A card's retrievability as the dashboard shows it: None (printed "—") for a card never
    reviewed, which the scheduler has no estimate for: a lookalike's card pulled due by a
    confusion before the learner ever drilled it (fsrs reads it as 0, and the row said "0%")."""
    if state is None or state.get("last_review") is None:
        return None
    return scheduling.retrievability(state, now)


def math_stats(
    user,
    now: datetime,
    *,
    tallies: dict[str, tuple[int, int]] | None = None,
    cards: dict[str, tuple[dict[str, Any], datetime | None]] | None = None,
) -> list[dict[str, Any]]:
    """Per mental-math family: graded attempts, accuracy, and the family card's retrievability
    and next due. Two queries (the family counters, the cards; none for the ones passed in:
    ``tallies`` family -> (graded, correct), ``cards`` family -> (state, due))."""
    if tallies is None:
        tallies = math_tallies(user)
    if cards is None:
        cards = {
            item: (state, due)
            for item, state, due in Card.objects.filter(user=user, kind=Card.Kind.MATH).values_list(
                "item", "state", "due"
            )
        }
    keys = list(FAMILIES) + sorted((set(tallies) | set(cards)) - set(FAMILIES))
    out = []
    for key in keys:
        n, c = tallies.get(key, (0, 0))
        family = FAMILIES.get(key)
        out.append(
            {
                "family": key,
                "title": family.title if family is not None else key,
                "attempts": n,
                "correct": c,
                "accuracy": _ratio(c, n),
                **math_card(cards.get(key), now),
            }
        )
    return out


def math_card(card: tuple[dict[str, Any], datetime | None] | None, now: datetime) -> dict:
    """A math row's card columns from the family card's (state, due): retrievability, due."""
    state, due = (None, None) if card is None else card
    return {
        "retrievability": estimated_recall(state, now),
        "due": due,
    }


def math_tallies(who: Any) -> dict[str, tuple[int, int]]:
    """Per mental-math family: (graded answers, right). One query over the family counters."""
    return {
        fam: (n, c)
        for fam, n, c in _of(MathTally.objects, who).values_list("family", "n", "correct")
    }


# --------------------------------------------------------------------------- bundles


def renarration_counts(user) -> dict[str, int]:
    """Graded walkthrough re-narrations and those with the signature right (one query).
    Re-narrations are answers on a trace the learner has read narrated: no evidence on the
    scenario, so the summaries leave them out and they are counted on their own."""
    return (
        Attempt.objects.filter(user=user, kind=Attempt.Kind.RENARRATION)
        .graded()
        .aggregate(graded=Count("pk"), right=Count("pk", filter=Q(scenario_correct=True)))
    )


def learner_inputs(user, now: datetime) -> dict[str, Any]:
    """Everything ``counters_from`` needs, read from the learner's summary counters (and their
    re-narrations and contrast trials) for ``now``'s UTC day: the scenario counters' rows, the
    week rows of the trend window, the day counts of the activity window, the per-scenario
    times and last-10, the math counters, and the two kinds graded apart. This is what
    ``drills.stats.snapshot`` stores per learner and patches in the transaction of a grade."""
    rows = scenario_tally_rows(user)
    slugs = _scenario_slugs() + sorted({r["scenario"] for r in rows} - set(engine.SCENARIOS))
    return {
        "renarrations": renarration_counts(user),
        "tally_rows": rows,
        "week_rows": week_counts(user, weeks=TREND_WEEKS, now=now),
        "days": day_counts(user, activity_start(now)),
        "timing": timing(user),
        "last_n": last_n_accuracy(user, slugs=slugs),
        "math_tallies": math_tallies(user),
        # Contrast trials: no evidence on a scenario, so counted per confused pair instead.
        "pair_discrimination": pair_discrimination(user, now, weeks=TREND_WEEKS),
    }


def counters_from(inputs: dict[str, Any], now: datetime) -> dict[str, Any]:
    """``learner_counters`` from ``learner_inputs`` (of ``now``'s UTC day): no query."""
    rows = inputs["tally_rows"]
    weeks = inputs["week_rows"]
    who = None  # every part below is handed its rows: none reads the database
    scenarios = per_scenario_stats(
        who, now, tally_rows=rows, last=inputs["last_n"], times=inputs["timing"]
    )
    confusion = confusion_matrix(who, rows=rows)
    total = confusion["total"]
    practice = sum(r["practice"] for r in scenarios)
    return {
        "time_limit_s": _limit_s(),
        "totals": {
            "graded": total,
            "correct": confusion["correct"],
            "accuracy": _ratio(confusion["correct"], total),
            "practice": practice,
        },
        "renarrations": dict(inputs["renarrations"]),
        "scenarios": scenarios,
        "confusion": confusion,
        "lookalikes": lookalike_rates(who, now=now, rows=rows, week_rows=weeks),
        "accuracy_over_time": accuracy_over_time(who, now=now, week_rows=weeks),
        "sentence_accuracy": sentence_accuracy_over_time(who, now=now, week_rows=weeks),
        "daily_activity": daily_activity(who, now=now, counts=inputs["days"]),
        "math_tallies": dict(inputs["math_tallies"]),
        "pair_discrimination": inputs["pair_discrimination"],
    }


def learner_counters(user, now: datetime) -> dict[str, Any]:
    """What ``learner_stats`` shows that the learner's counters and re-narration grades decide:
    no card is read, and ``now`` matters only through its UTC day (the week and day windows).
    Together with the ``StatsVersion`` read before it, a cacheable snapshot (``drills.stats.
    cached``); ``with_cards`` completes it. Read from the summary counters here; the dashboard
    reads the same from the learner's stored snapshot (``drills.stats.snapshot``)."""
    return counters_from(learner_inputs(user, now), now)


Cards = tuple[dict[str, dict[str, Any]], dict[str, tuple[dict[str, Any], datetime | None]]]


def cards_of(user) -> Cards:
    """The learner's scenario cards (slug -> state) and mental-math family cards (family ->
    (state, due)). One query."""
    return split_cards(
        Card.objects.filter(user=user, kind__in=(Card.Kind.SCENARIO, Card.Kind.MATH)).values_list(
            "kind", "item", "state", "due"
        )
    )


def split_cards(rows: Iterable[tuple[str, str, dict[str, Any], datetime | None]]) -> Cards:
    """(kind, item, state, due) card rows as ``Cards``: scenario states by slug, math (state,
    due) by family."""
    scenario_cards: dict[str, dict[str, Any]] = {}
    math_cards: dict[str, tuple[dict[str, Any], datetime | None]] = {}
    for kind, item, state, due in rows:
        if kind == Card.Kind.SCENARIO:
            scenario_cards[item] = state
        else:
            math_cards[item] = (state, due)
    return scenario_cards, math_cards


def scenario_card(state: dict[str, Any] | None, now: datetime) -> dict[str, Any]:
    """A scenario row's card columns: retrievability, next due, and whether that is past."""
    fields = _card_fields(state, now)
    fields["due_now"] = fields["due"] is not None and fields["due"] <= now
    return fields


def with_cards(
    counters: dict[str, Any], user, now: datetime, cards: Cards | None = None
) -> dict[str, Any]:
    """``learner_stats`` from ``learner_counters``: each scenario row gets its card's
    retrievability and next due, the math rows their family cards' (``cards``, or one query
    over them). ``counters`` is left as it was."""
    scenario_cards, math_cards = cards_of(user) if cards is None else cards
    scenarios = [
        {**row, **scenario_card(scenario_cards.get(row["slug"]), now)}
        for row in counters["scenarios"]
    ]
    out = {k: v for k, v in counters.items() if k != "math_tallies"}
    return {
        "generated_at": now,
        **out,
        "scenarios": scenarios,
        "math": math_stats(user, now, tallies=counters["math_tallies"], cards=math_cards),
    }


def learner_stats(user, now: datetime) -> dict[str, Any]:
    """Everything the dashboard shows for one learner (the page and stats.json render this)."""
    return with_cards(learner_counters(user, now), user, now)


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
