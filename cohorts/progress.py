"""Read models for cohorts: the progress grid, per-scenario stats, confusion, drill goals.

Every aggregate is computed in SQL (``values().annotate(Count(..., filter=Q(...)))``) over
the summary counters of the cohort's members, so a page costs a fixed number of queries whatever
the cohort's size. Python only shapes the (small, already aggregated) rows and computes FSRS
retrievability from each card's stored state.

The drill numbers only a grade changes (per-scenario totals, pair-goal counts, confusion and its
leaders, the per-sentence weeks) and the members' cards as arrays (``RecallTable``: stability,
last review, due; cards change only in the transaction of a grade or of ``rebuild_cards``, both
of which move ``StatsVersion`` on) are kept one row per member (``MemberNumbers``), stored per
shape of the cohort (the members, the pair-goal due dates and extensions, the UTC day) with the
``StatsVersion`` each row was read for. A view sums the rows; after a member's grade only that
member's rows are read again, never the whole cohort's. What is drawn from the sums (the
instructor page's per-sentence table and confusion drawing) is kept per state of the cohort
(``snapshot_key``: the shape and every member's ``StatsVersion``). Walkthrough reads and names
are read on every view, and recall is computed for every member at once for the moment of the
view (``scheduling.retrievability_many``), so the roster sorts on any column across the cohort
while only one page of it (``PAGE_SIZE`` learners) is drawn.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db.models import Min, Q
from django.db.models.fields.json import KT

from content.models import ReadMark, WalkthroughSet
from drills import scheduling
from drills.models import Attempt, Card, StatsVersion, WeekTally
from drills.stats import dashboard as stats
from drills.stats.fingerprint import source_fingerprint
from scenarios import engine

from .models import Assignment, Extension, Membership

DONE, LATE, MISSING, OPEN = "done", "late", "missing", "open"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class ScenarioInfo:
    slug: str
    title: str
    short: str


def scenarios() -> list[ScenarioInfo]:
    """The scenario catalogue in the engine's order."""
    return list(_scenarios())


@functools.cache
def _scenarios() -> tuple[ScenarioInfo, ...]:
    return tuple(ScenarioInfo(slug, s.title, _short(slug)) for slug, s in engine.SCENARIOS.items())


def _short(slug: str) -> str:
    words = slug.split("-")
    return "".join(w[0] for w in words).upper() if len(words) > 1 else slug[:4].title()


def lookalike_pairs() -> list[tuple[str, str]]:
    """Each deliberate lookalike pair once, as (scenario, its twin), from the engine's catalogue."""
    return engine.lookalike_pairs()


# --------------------------------------------------------------------------- walkthroughs

_TITLE_RE = re.compile(r'^title:\s*"?(.*?)"?\s*$', re.MULTILINE)


@functools.lru_cache(maxsize=1)
def _walkthrough_titles() -> dict[str, str]:
    titles: dict[str, str] = {}
    folder = Path(settings.BASE_DIR) / "content" / "pages" / "walkthroughs"
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        head = path.read_text(encoding="utf-8")[:2000]
        slug = re.search(r"^slug:\s*(\S+)", head, re.MULTILINE)
        title = _TITLE_RE.search(head)
        if slug and title:
            titles[slug.group(1)] = title.group(1)
    return titles


def walkthrough_title(slug: str) -> str:
    title = _walkthrough_titles().get(slug)
    if title:
        return title
    return slug.removeprefix("walkthrough-").replace("-", " ").capitalize()


def walkthrough_url(slug: str) -> str:
    return f"/walkthroughs/{slug}/"


def set_contents() -> list[dict[str, Any]]:
    """Every walkthrough set with its walkthroughs (title and link), in the sets' order: what
    the assign form's choices hold."""
    return [
        {
            "title": ws.title,
            "walkthroughs": [
                {"title": walkthrough_title(slug), "url": walkthrough_url(slug)}
                for slug in ws.walkthroughs
            ],
        }
        for ws in WalkthroughSet.objects.all()
    ]


# --------------------------------------------------------------------------- rules


def effective_dates(
    assignment: Assignment, extension: Extension | None
) -> tuple[datetime, datetime | None]:
    """(due, cut-off) for one learner. An extension replaces the due date; without its own
    cut-off it keeps the assignment's, pushed to the new due date if that is later."""
    if extension is None:
        return assignment.due_at, assignment.cutoff_at
    if extension.cutoff_at is not None:
        return extension.due_at, extension.cutoff_at
    if assignment.cutoff_at is None:
        return extension.due_at, None
    return extension.due_at, max(assignment.cutoff_at, extension.due_at)


def walkthrough_status(
    read_at: datetime | None, due: datetime, cutoff: datetime | None, now: datetime
) -> str:
    """done: read by the due date; late: read after it (by the cut-off, if any);
    missing: read only after the cut-off, or not read and the due date has passed;
    open: not read yet and not yet due."""
    if read_at is not None:
        if read_at <= due:
            return DONE
        if cutoff is None or read_at <= cutoff:
            return LATE
        return MISSING
    return MISSING if now > due else OPEN


def renarrated(user_ids, slugs) -> dict[tuple[int, str], datetime]:
    """{(user_id, walkthrough slug): first graded re-narration} in one query."""
    rows = (
        Attempt.objects.filter(
            user_id__in=user_ids,
            kind=Attempt.Kind.RENARRATION,
            item__in=list(slugs),
            submitted_at__isnull=False,
        )
        .values("user_id", "item")
        .annotate(first=Min("submitted_at"))
        .order_by()
    )
    return {(r["user_id"], r["item"]): r["first"] for r in rows}


def completed_at(
    assignment: Assignment, read_at: datetime | None, renarrated_at: datetime | None
) -> datetime | None:
    """When a walkthrough of ``assignment`` was completed: read, and where the instructor asks
    for re-narration, re-narrated too (the later of the two; re-narrations come after reading)."""
    if read_at is None:
        return None
    if not assignment.renarration:
        return read_at
    return None if renarrated_at is None else max(read_at, renarrated_at)


def awaiting_renarration(
    assignment: Assignment, read_at: datetime | None, renarrated_at: datetime | None
) -> bool:
    """Read, but not complete: the assignment asks for re-narration and there is none yet. The
    status stays open (or missing), and the pages say the reading is done."""
    return assignment.renarration and read_at is not None and renarrated_at is None


# --------------------------------------------------------------------------- scenario stats


@dataclass
class ScenarioCell:
    attempts: int = 0
    correct: int = 0
    retrievability: float | None = None
    card_due: datetime | None = None
    overdue_days: int | None = None  # whole days past due (at least one)
    due_now: bool = False  # due, but not a whole day late yet
    state: dict | None = field(default=None, repr=False)
    r_now: float = field(default=0.0, repr=False)  # unrounded, for the retention goal

    @property
    def accuracy_pct(self) -> int | None:
        return round(100 * self.correct / self.attempts) if self.attempts else None

    @property
    def r_display(self) -> str:
        return "" if self.retrievability is None else f"{self.retrievability:.2f}"

    @property
    def acc_display(self) -> str:
        pct = self.accuracy_pct
        return "" if pct is None else str(pct)

    @property
    def overdue(self) -> bool:
        return self.overdue_days is not None

    @property
    def unscheduled_text(self) -> str:
        """The "Next review" column without a card: untimed practice drills never schedule one,
        so a scenario drilled only in practice is not "not drilled"."""
        return "practice only, no review scheduled" if self.attempts else "not drilled"

    @property
    def heat(self) -> str:
        pct = self.accuracy_pct
        if pct is None:
            return "heat-none"
        return "heat-good" if pct >= 80 else "heat-mid" if pct >= 50 else "heat-low"

    @property
    def r_heat(self) -> str:
        r = self.retrievability
        if r is None:
            return "heat-none"
        return "heat-good" if r >= 0.9 else "heat-mid" if r >= 0.7 else "heat-low"


def in_time(assignment: Assignment, extended_due: dict[int, datetime]) -> Q:
    """Attempts submitted by each learner's effective due date. ``extended_due`` maps the
    learners with an extension on this assignment to their due date; everyone else has the
    assignment's. One OR term per distinct extended date, no per-row subquery."""
    if not extended_due:
        return Q(submitted_at__lte=assignment.due_at)
    by_due: dict[datetime, list[int]] = {}
    for uid, due in extended_due.items():
        by_due.setdefault(due, []).append(uid)
    q = Q(submitted_at__lte=assignment.due_at) & ~Q(user_id__in=sorted(extended_due))
    for due, uids in by_due.items():
        q |= Q(user_id__in=sorted(uids), submitted_at__lte=due)
    return q


def pair_slugs() -> set[str]:
    """The scenarios of the lookalike pairs: the only ones a pair-drill goal counts."""
    return {slug for pair in lookalike_pairs() for slug in pair}


def attempt_counts(
    user_ids, windows: dict[int, tuple[Q, datetime]] | None = None
) -> list[dict[str, Any]]:
    """The stats read model's ``answer_counts`` rows for these learners: every per-learner and
    cohort-wide drill number on the cohort pages is a sum over them. The ``windows`` (pair-goal
    windows) are counted on the lookalike pairs' scenarios only: no other row is read for them."""
    # Re-narrations are no evidence on the scenario: the summaries never count them.
    return stats.answer_counts(user_ids, windows, window_scenarios=pair_slugs())


def scenario_totals(counts: list[dict[str, Any]]) -> dict[int, dict[str, tuple[int, int]]]:
    """{user_id: {slug: (graded attempts, scenario right)}}, summed over ``attempt_counts`` rows."""
    out: dict[int, dict[str, list[int]]] = {}
    for row in counts:
        cell = out.setdefault(row["user_id"], {}).setdefault(row["scenario"], [0, 0])
        cell[0] += row["n"]
        cell[1] += row["ok"]
    return {uid: {slug: (n, ok) for slug, (n, ok) in cells.items()} for uid, cells in out.items()}


def scenario_stats(
    user_ids,
    now: datetime,
    *,
    counts: list[dict[str, Any]] | None = None,
    totals: dict[int, dict[str, tuple[int, int]]] | None = None,
) -> dict[int, dict[str, ScenarioCell]]:
    """{user_id: {slug: ScenarioCell}} in two queries (attempt counts, cards); one when the
    ``attempt_counts`` rows, or their ``scenario_totals``, are passed in."""
    if totals is None:
        totals = scenario_totals(attempt_counts(user_ids) if counts is None else counts)
    out: dict[int, dict[str, ScenarioCell]] = {
        uid: {slug: ScenarioCell(attempts=n, correct=ok) for slug, (n, ok) in cells.items()}
        for uid, cells in totals.items()
    }
    cards = Card.objects.filter(user_id__in=user_ids, kind=Card.Kind.SCENARIO).values_list(
        "user_id", "item", "state", "due"
    )
    for user_id, item, state, due in cards:
        cell = out.setdefault(user_id, {}).setdefault(item, ScenarioCell())
        cell.state = state
        cell.r_now = scheduling.retrievability(state, now)
        cell.retrievability = round(cell.r_now, 2)
        cell.card_due = due
        if (now - due).days >= 1:
            cell.overdue_days = (now - due).days
        elif due <= now:
            cell.due_now = True
    return out


def card_states(user_ids) -> dict[int, dict[str, dict]]:
    out: dict[int, dict[str, dict]] = {}
    for user_id, item, state in Card.objects.filter(
        user_id__in=user_ids, kind=Card.Kind.SCENARIO
    ).values_list("user_id", "item", "state"):
        out.setdefault(user_id, {})[item] = state
    return out


# --------------------------------------------------------------------------- confusion


@dataclass
class Confusion:
    scenarios: list[ScenarioInfo]
    counts: dict[tuple[str, str], int]
    pairs: list[tuple[str, str]]
    leaders: list[dict[str, Any]] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        pair_cells = {(a, b) for a, b in self.pairs} | {(b, a) for a, b in self.pairs}
        out = []
        for t in self.scenarios:
            total = sum(self.counts.get((t.slug, a.slug), 0) for a in self.scenarios)
            cells = []
            for a in self.scenarios:
                n = self.counts.get((t.slug, a.slug), 0)
                share = n / total if total else 0.0
                cls = ["cm"]
                if t.slug == a.slug:
                    cls.append("cm-diag")
                if (t.slug, a.slug) in pair_cells:
                    cls.append("cm-pair")
                cls.append(f"cm-h{min(5, int(share * 5 + 0.999)) if n else 0}")
                cells.append(
                    {"answered": a, "n": n, "share": round(100 * share), "cls": " ".join(cls)}
                )
            out.append({"true": t, "total": total, "cells": cells})
        return out


def confusion(
    user_ids,
    *,
    leaders_from: dict[int, str] | None = None,
    counts: list[dict[str, Any]] | None = None,
) -> Confusion:
    """The true × answered matrix and, when ``leaders_from`` maps user ids to names, who
    confuses each lookalike pair most. Both are sums over ``attempt_counts`` rows (one query,
    none when they are passed in)."""
    rows = attempt_counts(user_ids) if counts is None else counts
    matrix = {key: n for key, n in stats.confusion_counts(rows).items() if key[1]}
    pairs = lookalike_pairs()
    result = Confusion(scenarios(), matrix, pairs)
    if leaders_from is None or not pairs:
        return result
    for a, b in pairs:
        mixups, on_pair = stats.pair_mixups(rows, (a, b))
        ranked = sorted(
            (uid for uid, n in mixups.items() if n),
            key=lambda uid: (-mixups[uid], -mixups[uid] / on_pair[uid], uid),
        )
        result.leaders.append(
            {
                "pair": (a, b),
                "titles": (engine.title_of(a), engine.title_of(b)),
                "top": [
                    {
                        "user_id": uid,
                        "name": leaders_from.get(uid, "?"),
                        "mixups": mixups[uid],
                        "on_pair": on_pair[uid],
                        "rate": round(100 * mixups[uid] / on_pair[uid]),
                    }
                    for uid in ranked[:3]
                ],
            }
        )
    return result


# --------------------------------------------------------------------------- drill goals


def pair_goal_windows(
    assignments: list[Assignment], extensions: dict[tuple[int, int], Extension]
) -> dict[int, tuple[Q, datetime]]:
    """``attempt_counts`` windows for the pair-goal assignments: {assignment id: (in_time Q,
    the earliest effective due date — every attempt submitted by then is in time)}."""
    out: dict[int, tuple[Q, datetime]] = {}
    for a in assignments:
        if a.goal == Assignment.Goal.PAIRS:
            ext_due = {uid: e.due_at for (aid, uid), e in extensions.items() if aid == a.pk}
            out[a.pk] = (in_time(a, ext_due), min([a.due_at, *ext_due.values()]))
    return out


def pair_goal_counts(
    assignments: list[Assignment],
    user_ids,
    *,
    extensions: dict[tuple[int, int], Extension] | None = None,
    counts: list[dict[str, Any]] | None = None,
) -> dict[tuple[int, int], list[int]]:
    """{(assignment id, user id): [drills on pair 0, pair 1, ...]} counting graded attempts
    submitted by the learner's effective due date (learners with graded attempts only).

    Pass ``extensions`` ({(assignment id, learner id): Extension}) when already fetched, and
    ``counts`` when ``attempt_counts`` already ran with ``pair_goal_windows``; otherwise this
    costs one query for the extensions and one for the counts."""
    pairs = lookalike_pairs()
    goal_asgs = [a for a in assignments if a.goal == Assignment.Goal.PAIRS]
    if not goal_asgs or not pairs:
        return {}
    if counts is None:
        if extensions is None:
            extensions = {
                (e.assignment_id, e.learner_id): e
                for e in Extension.objects.filter(
                    assignment__in=[a.pk for a in goal_asgs], learner_id__in=user_ids
                )
            }
        counts = attempt_counts(user_ids, pair_goal_windows(goal_asgs, extensions))
    pair_of = {slug: i for i, pair in enumerate(pairs) for slug in pair}
    out: dict[tuple[int, int], list[int]] = {}
    for r in counts:
        i = pair_of.get(r["scenario"])
        for a in goal_asgs:
            per_pair = out.setdefault((a.pk, r["user_id"]), [0] * len(pairs))
            if i is not None:
                per_pair[i] += r[f"t{a.pk}"]
    return out


def goal_status(
    assignment: Assignment,
    user_id: int,
    due: datetime,
    now: datetime,
    cards: dict[int, dict[str, dict]],
    pair_counts: dict[tuple[int, int], list[int]],
    r_due: dict[str, float] | None = None,
) -> dict[str, Any] | None:
    """Whether one learner meets the assignment's drill goal (None when it has none).
    Retention is read at min(now, due) from the current cards; ``r_due`` ({slug: this learner's
    retrievability at min(now, due)}, e.g. from ``RecallTable``) saves reading the cards."""
    if assignment.goal == Assignment.Goal.RETENTION:
        target = assignment.goal_retention or 0.0
        slugs = [s.slug for s in scenarios()]
        if r_due is not None:
            ok = sum(1 for s in slugs if r_due.get(s, 0.0) >= target)
        else:
            when = min(now, due)
            user_cards = cards.get(user_id, {})
            ok = sum(
                1 for s in slugs if scheduling.retrievability(user_cards.get(s), when) >= target
            )
        return {"met": ok == len(slugs), "detail": f"{ok}/{len(slugs)} at ≥ {target:.2f}"}
    if assignment.goal == Assignment.Goal.PAIRS:
        k = assignment.goal_pair_drills or 0
        pairs = lookalike_pairs()
        counts = pair_counts.get((assignment.pk, user_id), [0] * len(pairs))
        return {
            "met": all(c >= k for c in counts),
            "detail": " · ".join(f"{c}/{k}" for c in counts),
            # which count is which pair: the learner's list prints them, the grid's cell on hover
            "pairs": [
                {"title": f"{engine.title_of(a)} ↔ {engine.title_of(b)}", "n": c, "k": k}
                for (a, b), c in zip(pairs, counts, strict=True)
            ],
        }
    return None


# --------------------------------------------------------------------------- the snapshot

SNAPSHOT_TTL_S = 36 * 3600  # outlives a day's views; the key changes with the UTC day anyway
_SOURCES = (
    Path(__file__).resolve(),
    Path(stats.__file__).resolve(),
    Path(settings.BASE_DIR) / "drills" / "stats" / "charts.py",
    Path(__file__).resolve().parent / "views.py",
    Path(__file__).resolve().parent / "render.py",
    Path(settings.BASE_DIR) / "drills" / "stats" / "tables.py",
    Path(settings.BASE_DIR) / "drills" / "stats" / "format.py",  # tables.py escapes through it
)


@functools.cache
def _fingerprint() -> str:
    """What a snapshot depends on besides the learners' numbers: the code and templates that
    draw it and the scenario catalogue (titles, lookalike pairs)."""
    catalogue = (
        [(s.slug, s.title, s.short) for s in scenarios()],
        lookalike_pairs(),
        stats.SENTENCES,
    )
    return source_fingerprint(catalogue, _SOURCES)


def member_versions(cohort, member_ids: list[int]) -> list[tuple[str, int] | None]:
    """Each member's ``StatsVersion`` (token, n), in the order of ``member_ids`` (None for a
    member never graded). One query, read before the numbers it stands for."""
    # The members as a subquery, not 200 bound ids (building those cost more than the query);
    # anyone who joined since ``member_ids`` was read is left out, as they are from the numbers.
    found = {
        uid: (token.hex, n)
        for uid, token, n in StatsVersion.objects.filter(
            user_id__in=Membership.objects.filter(cohort=cohort).values("user_id")
        ).values_list("user_id", "token", "n")
    }
    return [found.get(uid) for uid in member_ids]


def _shape(
    member_ids: list[int],
    assignments: list[Assignment],
    extensions: dict[tuple[int, int], Extension],
    now: datetime,
) -> tuple[Any, ...]:
    """What the cohort's drill numbers depend on besides the members' grades: the members,
    the pair-goal windows (the goals' due dates and their extensions) and the UTC day."""
    windows = sorted(
        (a.pk, a.due_at.isoformat()) for a in assignments if a.goal == Assignment.Goal.PAIRS
    )
    goal_ids = {a for a, _due in windows}
    ext = sorted(
        (aid, uid, e.due_at.isoformat()) for (aid, uid), e in extensions.items() if aid in goal_ids
    )
    return (member_ids, windows, ext, now.astimezone(UTC).date().isoformat())


def _digest(state: Any) -> str:
    return hashlib.sha256(repr(state).encode()).hexdigest()[:32]


def members_key(cohort, shape: tuple[Any, ...]) -> str:
    """The cache key of the cohort's per-member numbers (``MemberNumbers``) for one shape of
    the cohort: whatever the members' grades, so a grade patches it (``MemberNumbers.update``)."""
    return f"cohort-members:{_fingerprint()}:{cohort.pk}:{_digest(shape)}"


def snapshot_key(
    cohort,
    member_ids: list[int],
    assignments: list[Assignment],
    extensions: dict[tuple[int, int], Extension],
    now: datetime,
    versions: list[tuple[str, int] | None] | None = None,
) -> str:
    """The cache key of the cohort's drill numbers as they are now: the shape (``_shape``),
    each member's ``StatsVersion`` (``member_versions``, read here when not given) and the
    code's fingerprint. Any grade of any member, a member joining or leaving, a new due date or
    extension: a new key."""
    if versions is None:
        versions = member_versions(cohort, member_ids)
    state = (_shape(member_ids, assignments, extensions, now), versions)
    return f"cohort:{_fingerprint()}:{cohort.pk}:{_digest(state)}"


def snapshot_part(key: str, name: str) -> Any:
    """What was stored as ``name`` for this state of the cohort's numbers (None when nothing)."""
    return cache.get(f"{key}:{name}")


def snapshot_store(key: str, name: str, value: Any) -> None:
    cache.set(f"{key}:{name}", value, SNAPSHOT_TTL_S)


SENTENCE_COUNTERS = (
    "n",
    *(f"{k}_{p}" for k, _f, _t in stats.SENTENCES for p in ("graded", "right")),
)


@dataclass
class MemberNumbers:
    """The cohort's drill numbers that only grades change, one row per member (``uids``, in
    ``member_ids`` order) over the catalogue's scenarios (``slugs``): graded attempts and
    right (``n``, ``ok``), the confusion cells (``conf``: true x answered), each pair-drill
    goal's in-time drills per lookalike pair (``pairs``: assignment id -> learners x pairs), the
    sentence counters of the trend's weeks (``weeks``: learners x weeks x
    ``SENTENCE_COUNTERS``) and the scenario cards (``recall``). ``versions``: the members'
    ``StatsVersion`` each row was read for. A cohort view sums the rows; after a grade only the
    graded learner's rows are read again (``update``), never the whole cohort."""

    uids: list[int]
    slugs: list[str]
    first_week: date
    versions: list[tuple[str, int] | None]
    n: np.ndarray
    ok: np.ndarray
    conf: np.ndarray
    pairs: dict[int, np.ndarray]
    weeks: np.ndarray
    recall: RecallTable

    @classmethod
    def read(
        cls,
        uids: list[int],
        versions: list[tuple[str, int] | None],
        assignments: list[Assignment],
        extensions: dict[tuple[int, int], Extension],
        now: datetime,
    ) -> MemberNumbers:
        """Every member's rows: three queries over the summary counters, one over the cards."""
        slugs = [s.slug for s in scenarios()]
        goals = [a.pk for a in assignments if a.goal == Assignment.Goal.PAIRS]
        shape = (len(uids), len(slugs))
        out = cls(
            uids=list(uids),
            slugs=slugs,
            first_week=stats.trend_start(now),
            versions=list(versions),
            n=np.zeros(shape, dtype=np.int64),
            ok=np.zeros(shape, dtype=np.int64),
            conf=np.zeros((*shape, len(slugs)), dtype=np.int32),
            pairs={aid: np.zeros((len(uids), len(lookalike_pairs())), np.int32) for aid in goals},
            weeks=np.zeros((len(uids), stats.TREND_WEEKS, len(SENTENCE_COUNTERS)), dtype=np.int32),
            recall=RecallTable.read(list(uids), slugs),
        )
        out._fill(list(range(len(uids))), assignments, extensions)
        return out

    def _fill(
        self,
        rows: list[int],
        assignments: list[Assignment],
        extensions: dict[tuple[int, int], Extension],
    ) -> None:
        """(Re)read the rows ``rows`` (indexes into ``uids``) from the counters (their arrays
        are zero)."""
        uids = [self.uids[i] for i in rows]
        row_of = dict(zip(uids, rows, strict=True))
        col_of = {slug: j for j, slug in enumerate(self.slugs)}
        pair_of = {slug: p for p, pair in enumerate(lookalike_pairs()) for slug in pair}
        for r in attempt_counts(uids, pair_goal_windows(assignments, extensions)):
            i, j = row_of[r["user_id"]], col_of.get(r["scenario"])
            if j is None:
                continue
            self.n[i, j] += r["n"]
            self.ok[i, j] += r["ok"]
            answered = col_of.get(r["answer_scenario"])
            if answered is not None:
                self.conf[i, j, answered] += r["n"]
            p = pair_of.get(r["scenario"])
            if p is not None:
                for aid, counts in self.pairs.items():
                    counts[i, p] += r[f"t{aid}"]
        for r in (
            WeekTally.objects.filter(user_id__in=uids, week__gte=self.first_week)
            .order_by()
            .values_list("user_id", "week", *SENTENCE_COUNTERS)
        ):
            w = (r[1] - self.first_week).days // 7
            if 0 <= w < stats.TREND_WEEKS:
                self.weeks[row_of[r[0]], w] += r[2:]

    def update(
        self,
        versions: list[tuple[str, int] | None],
        assignments: list[Assignment],
        extensions: dict[tuple[int, int], Extension],
    ) -> bool:
        """Read again the rows of the members whose ``StatsVersion`` moved on since (a few
        small queries over their counters and cards alone). True when any did."""
        rows = [i for i, v in enumerate(versions) if v != self.versions[i]]
        if not rows:
            return False
        for arr in (self.n, self.ok, self.conf, self.weeks, *self.pairs.values()):
            arr[rows] = 0
        self._fill(rows, assignments, extensions)
        fresh = RecallTable.read([self.uids[i] for i in rows], self.slugs)
        for name in ("stability", "last_us", "due_us", "has_card"):
            getattr(self.recall, name)[rows] = getattr(fresh, name)
        self.versions = list(versions)
        return True

    def pair_counts(self) -> dict[tuple[int, int], list[int]]:
        """``pair_goal_counts``'s shape: {(assignment id, user id): drills per pair}."""
        return {
            (aid, uid): counts[i].tolist()
            for aid, counts in self.pairs.items()
            for i, uid in enumerate(self.uids)
        }

    def confusion(self) -> Confusion:
        """The cohort's true x answered matrix and who confuses each lookalike pair most (by
        user id; ``name`` is filled in per view): ``progress.confusion`` over the rows' sums."""
        total = self.conf.sum(axis=0)
        counts = {
            (a, b): int(total[i, j])
            for i, a in enumerate(self.slugs)
            for j, b in enumerate(self.slugs)
            if total[i, j]
        }
        pairs = lookalike_pairs()
        result = Confusion(scenarios(), counts, pairs)
        col_of = {slug: j for j, slug in enumerate(self.slugs)}
        for a, b in pairs:
            ja, jb = col_of[a], col_of[b]
            mixups = (self.conf[:, ja, jb] + self.conf[:, jb, ja]).tolist()
            on_pair = (self.n[:, ja] + self.n[:, jb]).tolist()
            ranked = sorted(
                (i for i, m in enumerate(mixups) if m),
                key=lambda i: (-mixups[i], -mixups[i] / on_pair[i], self.uids[i]),
            )
            result.leaders.append(
                {
                    "pair": (a, b),
                    "titles": (engine.title_of(a), engine.title_of(b)),
                    "top": [
                        {
                            "user_id": self.uids[i],
                            "name": "?",
                            "mixups": mixups[i],
                            "on_pair": on_pair[i],
                            "rate": round(100 * mixups[i] / on_pair[i]),
                        }
                        for i in ranked[:3]
                    ],
                }
            )
        return result

    def drill_numbers(self) -> dict[str, Any]:
        """What the cohort's pages show of these rows (kept per state of the cohort, so a
        repeat view reads only this): per member attempts and right (``n``, ``ok``, rows in
        ``uids`` order) and cards (``recall``), the pair-goal counts, the confusion and its
        leaders, the sentence weeks."""
        return {
            "n": self.n,
            "ok": self.ok,
            "recall": self.recall,
            "pair_counts": self.pair_counts(),
            "confusion": self.confusion(),
            "sentence_weeks": self.week_rows(),
        }

    def week_rows(self) -> list[dict[str, Any]]:
        """The cohort's sentence counters per week, as ``dashboard.week_counts`` rows."""
        total = self.weeks.sum(axis=0).tolist()
        return [
            {
                "week": self.first_week + timedelta(weeks=w),
                **dict(zip(SENTENCE_COUNTERS, total[w], strict=True)),
            }
            for w in range(stats.TREND_WEEKS)
            if total[w][0]
        ]


def member_numbers(
    cohort,
    member_ids: list[int],
    assignments: list[Assignment],
    extensions: dict[tuple[int, int], Extension],
    now: datetime,
    versions: list[tuple[str, int] | None],
) -> MemberNumbers:
    """The cohort's ``MemberNumbers`` for these members' ``versions``: the stored ones for this
    shape of the cohort, with the rows of any member graded since read again, or (none stored)
    every member's."""
    key = members_key(cohort, _shape(member_ids, assignments, extensions, now))
    numbers = snapshot_part(key, "members")
    if numbers is None:
        numbers = MemberNumbers.read(member_ids, versions, assignments, extensions, now)
    elif not numbers.update(versions, assignments, extensions):
        return numbers
    snapshot_store(key, "members", numbers)
    return numbers


# --------------------------------------------------------------------------- the grid

PAGE_SIZE = 50  # learners per page of the instructor page (the CSV export has every one)


@dataclass(frozen=True)
class Learner:
    """A member as the grid shows them: no model instance per learner (at 200 learners the
    ``Membership`` + ``User`` objects were a tenth of the page's time)."""

    pk: int
    username: str
    joined_at: datetime

    @property
    def user_id(self) -> int:
        return self.pk


def _json_scalar(value: str | None) -> str | None:
    """A key read out of a JSON column as text, with JSON ``null`` as None.

    PostgreSQL's ``->>`` gives SQL NULL for a JSON null; SQLite gives the text ``'null'``.
    """
    return None if value is None or value == "null" else value


@dataclass
class RecallTable:
    """Learners' scenario cards as arrays, one row per learner (``uids``), one column per
    scenario (``slugs``): stability (NaN where there is no reviewed card), last review and due
    (``scheduling.epoch_us``), and whether there is a card at all. Read in one query without
    decoding each card's JSON state; small enough to keep in the cohort's snapshot (cards change
    only in the transaction of a grade or a rebuild, both of which move ``StatsVersion`` on)."""

    uids: list[int]
    slugs: list[str]
    stability: np.ndarray
    last_us: np.ndarray
    due_us: np.ndarray
    has_card: np.ndarray

    @classmethod
    def read(cls, uids: list[int], slugs: list[str]) -> RecallTable:
        """Every scenario card of ``uids`` (a card never reviewed has no stability yet)."""
        row_of = {uid: i for i, uid in enumerate(uids)}
        col_of = {slug: j for j, slug in enumerate(slugs)}
        shape = (len(uids), len(slugs))
        stability = np.full(shape, np.nan)
        last_us = np.zeros(shape, dtype=np.int64)
        due_us = np.zeros(shape, dtype=np.int64)
        has_card = np.zeros(shape, dtype=bool)
        rows = Card.objects.filter(user_id__in=uids, kind=Card.Kind.SCENARIO).values_list(
            "user_id", "item", KT("state__stability"), KT("state__last_review"), "due"
        )
        for uid, item, stab, last, card_due in rows:
            i, j = row_of.get(uid), col_of.get(item)
            if i is None or j is None:
                continue
            has_card[i, j] = True
            due_us[i, j] = scheduling.epoch_us(card_due)
            stab, last = _json_scalar(stab), _json_scalar(last)
            if stab is not None and last is not None:
                stability[i, j] = float(stab)
                last_us[i, j] = scheduling.epoch_us(last)
        return cls(uids, slugs, stability, last_us, due_us, has_card)

    def take(self, uids: list[int]) -> RecallTable:
        """The same table with its rows in the order of ``uids`` (each one of ``self.uids``)."""
        row_of = {uid: i for i, uid in enumerate(self.uids)}
        idx = [row_of[uid] for uid in uids]
        return RecallTable(
            uids, self.slugs, self.stability[idx], self.last_us[idx], self.due_us[idx],
            self.has_card[idx],
        )  # fmt: skip

    def recall(self, when: datetime, rows: slice | list[int] = slice(None)) -> np.ndarray:
        """Retrievability at ``when`` (equal to ``scheduling.retrievability`` card by card)."""
        return scheduling.retrievability_many(self.stability[rows], self.last_us[rows], when)

    def due(self, i: int, j: int) -> datetime:
        """When the card at (i, j) is due (there must be one: see ``has_card``)."""
        return _EPOCH + timedelta(microseconds=int(self.due_us[i, j]))


def parse_sort(value: str | None) -> str:
    """A sort key of the roster: ``name``, ``read``, ``missing``, ``drills``, or ``acc:<slug>``
    / ``r:<slug>`` (a scenario's accuracy or retrievability); anything else is ``name``."""
    if value in ("name", "read", "missing", "drills"):
        return value
    metric, _, slug = (value or "").partition(":")
    if metric in ("acc", "r") and slug in {s.slug for s in scenarios()}:
        return f"{metric}:{slug}"
    return "name"


def _order(
    learners: list[Learner],
    sort: str,
    descending: bool,
    done: list[int],
    missing: list[int],
    n: np.ndarray,
    ok: np.ndarray,
    r: np.ndarray,
    slugs: list[str],
) -> list[int]:
    """Learner indexes in the order the instructor asked for: blanks (no drills, no card) last
    in either direction, ties by username."""
    names = [x.username for x in learners]
    if sort == "name":
        return sorted(range(len(learners)), key=lambda i: names[i], reverse=descending)
    values: list[float | None]
    if sort == "read":
        values = [float(v) for v in done]
    elif sort == "missing":
        values = [float(v) for v in missing]
    elif sort == "drills":
        values = [float(v) for v in n.sum(axis=1)]
    else:
        metric, _, slug = sort.partition(":")
        j = slugs.index(slug)
        if metric == "acc":
            values = [
                round(100 * int(ok[i, j]) / int(n[i, j])) if n[i, j] else None
                for i in range(len(learners))
            ]
        else:
            has = ~np.isnan(r[:, j])
            values = [round(float(r[i, j]), 2) if has[i] else None for i in range(len(learners))]
    sign = -1.0 if descending else 1.0
    return sorted(
        range(len(learners)),
        key=lambda i: (values[i] is None, sign * (values[i] or 0.0), names[i]),
    )


def cohort_grid(
    cohort,
    now: datetime,
    *,
    sort: str = "name",
    descending: bool = False,
    page: int | None = None,
    per_page: int | None = None,
) -> dict[str, Any]:
    """Everything the instructor page and the CSV export show, in a fixed number of queries.

    Every member's walkthrough statuses, drill totals and card recall (vectorised) are computed,
    so the roster sorts on any column across the whole cohort; the per-cell detail (scenario
    cells, goals) is built for the ``page`` shown only (every learner when ``page`` is None)."""
    learners = [
        Learner(uid, name, joined)
        for uid, name, joined in Membership.objects.filter(cohort=cohort)
        .order_by("user__username")
        .values_list("user_id", "user__username", "joined_at")
    ]
    # The ids themselves, not a subquery: the attempts read for the pair-goal windows are then
    # found through the (user, submitted_at) index instead of a scan of everyone's attempts.
    member_ids = sorted(x.pk for x in learners)
    assignments = list(cohort.assignments.select_related("walkthrough_set"))
    extensions = {
        (e.assignment_id, e.learner_id): e
        for e in Extension.objects.filter(assignment__cohort=cohort)
    }
    slugs = sorted({s for a in assignments for s in a.walkthrough_set.walkthroughs})
    reads: dict[tuple[int, str], datetime] = {}
    if slugs:
        reads = {
            (uid, slug): at
            for uid, slug, at in ReadMark.objects.filter(
                user_id__in=Membership.objects.filter(cohort=cohort).values("user_id"),
                slug__in=slugs,
            ).values_list("user_id", "slug", "read_at")
        }
    renarr: dict[tuple[int, str], datetime] = {}
    if any(a.renarration for a in assignments):
        renarr = renarrated(member_ids, slugs)
    versions = member_versions(cohort, member_ids)
    key = snapshot_key(cohort, member_ids, assignments, extensions, now, versions)
    drill = snapshot_part(key, "drill")
    if drill is None:
        drill = member_numbers(
            cohort, member_ids, assignments, extensions, now, versions
        ).drill_numbers()
        snapshot_store(key, "drill", drill)
    pair_counts = drill["pair_counts"]
    names = {x.pk: x.username for x in learners}
    conf = drill["confusion"]
    for item in conf.leaders:  # the names as they are now (the numbers keep the ids)
        for who in item["top"]:
            who["name"] = names.get(who["user_id"], "?")
    scen = scenarios()
    scen_slugs = [s.slug for s in scen]

    # Drill totals and recall of every member, as learner × scenario arrays.
    uids = [x.pk for x in learners]
    row_of = {uid: i for i, uid in enumerate(member_ids)}
    order_rows = [row_of[uid] for uid in uids]
    n, ok = drill["n"][order_rows], drill["ok"][order_rows]
    recall = drill["recall"]
    table = recall.take(uids)
    r = table.recall(now)
    r[~table.has_card] = np.nan  # no card: a blank (a card never reviewed reads 0)

    columns = [
        {
            "assignment": a,
            "slug": slug,
            "title": walkthrough_title(slug),
            "url": walkthrough_url(slug),
            "key": f"{a.walkthrough_set.slug}:{slug}",
        }
        for a in assignments
        for slug in a.walkthrough_set.walkthroughs
    ]
    all_cells: list[list[dict[str, Any]]] = []
    for x in learners:
        cells = []
        for col in columns:
            a = col["assignment"]
            ext = extensions.get((a.pk, x.pk))
            due, cutoff = effective_dates(a, ext)
            read_at, renarrated_at = reads.get((x.pk, col["slug"])), renarr.get((x.pk, col["slug"]))
            done_at = completed_at(a, read_at, renarrated_at)
            status = walkthrough_status(done_at, due, cutoff, now)
            cells.append(
                {
                    "status": status,
                    "extended": ext is not None,
                    "due": due,
                    "awaiting": awaiting_renarration(a, read_at, renarrated_at),
                }
            )
        all_cells.append(cells)
    done = [sum(1 for c in cells if c["status"] in (DONE, LATE)) for cells in all_cells]
    missing = [sum(1 for c in cells if c["status"] == MISSING) for cells in all_cells]

    order = _order(learners, sort, descending, done, missing, n, ok, r, scen_slugs)
    per_page = per_page or PAGE_SIZE
    pages = max(1, -(-len(learners) // per_page))
    if page is None:
        shown, page_no = order, 1
    else:
        page_no = min(max(1, page), pages)
        shown = order[(page_no - 1) * per_page : page_no * per_page]

    recall_at: dict[datetime, list[list[float]]] = {}  # retention goals: recall at each due date
    n_l, ok_l, r_l, has_l = n.tolist(), ok.tolist(), r.tolist(), table.has_card.tolist()
    rows = []
    for i in shown:
        x = learners[i]
        uid = x.pk
        goals = []
        for a in assignments:
            due, _cutoff = effective_dates(a, extensions.get((a.pk, uid)))
            r_due = None
            if a.goal == Assignment.Goal.RETENTION:
                when = min(now, due)
                if when not in recall_at:
                    recall_at[when] = table.recall(when).tolist()
                r_due = dict(zip(scen_slugs, recall_at[when][i], strict=True))
            goals.append(goal_status(a, uid, due, now, {}, pair_counts, r_due))
        srow = []
        for j in range(len(scen_slugs)):
            cell = ScenarioCell(attempts=n_l[i][j], correct=ok_l[i][j])
            if has_l[i][j]:
                card_due = table.due(i, j)
                r_ij = r_l[i][j]
                cell.r_now = r_ij
                cell.retrievability = round(r_ij, 2)
                cell.card_due = card_due
                if (now - card_due).days >= 1:
                    cell.overdue_days = (now - card_due).days
                elif card_due <= now:
                    cell.due_now = True
            srow.append(cell)
        rows.append(
            {
                "membership": x,
                "user": x,
                "cells": all_cells[i],
                "goals": goals,
                "scenarios": srow,
                "done": done[i],
                "missing": missing[i],
                "attempts": sum(c.attempts for c in srow),
                "correct": sum(c.correct for c in srow),
            }
        )
    return {
        "snapshot_key": key,
        "sentence_weeks": drill["sentence_weeks"],
        "learners": learners,
        "assignments": assignments,
        "extensions": extensions,
        "columns": columns,
        "rows": rows,
        "scenarios": scen,
        "confusion": conf,
        "has_goals": any(a.goal for a in assignments),
        "sort": sort,
        "descending": descending,
        "page": page_no,
        "pages": pages,
        "per_page": per_page,
        "first": (page_no - 1) * per_page + 1 if rows else 0,
        "last": (page_no - 1) * per_page + len(rows) if page is not None else len(rows),
        "total": len(learners),
    }


def grid_csv_rows(grid: dict[str, Any]) -> list[list[str]]:
    """The grid as CSV rows; the same formatted numbers the page shows."""
    header = ["username", "joined_at"]
    header += [f"{c['assignment'].walkthrough_set.slug}/{c['slug']}" for c in grid["columns"]]
    header += [f"goal {a.walkthrough_set.slug} #{a.pk}" for a in grid["assignments"] if a.goal]
    for s in grid["scenarios"]:
        header += [
            f"{s.slug} attempts",
            f"{s.slug} accuracy %",
            f"{s.slug} retrievability",
            f"{s.slug} overdue days",
        ]
    out = [header]
    for row in grid["rows"]:
        line = [row["user"].username, row["membership"].joined_at.isoformat()]
        line += [c["status"] for c in row["cells"]]
        line += [("met" if g["met"] else "not met") for g in row["goals"] if g is not None]
        for cell in row["scenarios"]:
            line += [
                str(cell.attempts),
                cell.acc_display,
                cell.r_display,
                "" if cell.overdue_days is None else str(cell.overdue_days),
            ]
        out.append(line)
    return out


# --------------------------------------------------------------------------- one learner


def learner_assignments(user, now: datetime, *, cohort=None) -> list[dict[str, Any]]:
    """One learner's assignments (across their active cohorts, or in one, archived or not) with
    effective dates and per-walkthrough status. Three queries, plus at most two when a drill
    goal is set."""
    qs = Assignment.objects.filter(cohort__memberships__user=user)
    if cohort is not None:
        qs = qs.filter(cohort=cohort)
    else:  # an archived cohort's work is over: out of the learner's lists
        qs = qs.filter(cohort__archived_at__isnull=True)
    assignments = list(qs.select_related("cohort", "walkthrough_set"))
    if not assignments:
        return []
    extensions = {
        e.assignment_id: e
        for e in Extension.objects.filter(learner=user, assignment__in=[a.pk for a in assignments])
    }
    slugs = {s for a in assignments for s in a.walkthrough_set.walkthroughs}
    reads = dict(ReadMark.objects.filter(user=user, slug__in=slugs).values_list("slug", "read_at"))
    uid = user.pk
    renarr: dict[tuple[int, str], datetime] = {}
    if any(a.renarration for a in assignments):
        renarr = renarrated([uid], slugs)
    cards = (
        card_states([uid]) if any(a.goal == Assignment.Goal.RETENTION for a in assignments) else {}
    )
    pair_counts = pair_goal_counts(
        assignments, [uid], extensions={(aid, uid): e for aid, e in extensions.items()}
    )
    out: list[dict[str, Any]] = []
    for a in assignments:
        ext = extensions.get(a.pk)
        due, cutoff = effective_dates(a, ext)
        items = []
        for slug in a.walkthrough_set.walkthroughs:
            read_at, renarrated_at = reads.get(slug), renarr.get((uid, slug))
            done_at = completed_at(a, read_at, renarrated_at)
            status = walkthrough_status(done_at, due, cutoff, now)
            items.append(
                {
                    "slug": slug,
                    "title": walkthrough_title(slug),
                    "url": walkthrough_url(slug),
                    "status": status,
                    "read_at": read_at,
                    "awaiting_renarration": awaiting_renarration(a, read_at, renarrated_at),
                }
            )
        finished = all(i["status"] in (DONE, LATE) for i in items)
        goal = goal_status(a, uid, due, now, cards, pair_counts)
        out.append(
            {
                "assignment": a,
                "cohort": a.cohort,
                "title": a.walkthrough_set.title,
                "due_at": due,
                "cutoff_at": cutoff,
                "extended": ext is not None,
                "items": items,
                "done": sum(1 for i in items if i["status"] in (DONE, LATE)),
                "total": len(items),
                "finished": finished and (goal is None or goal["met"]),
                "closed": cutoff is not None and now > cutoff,
                "goal_text": a.goal_text(),
                "goal": goal,
            }
        )
    out.sort(key=lambda r: (r["finished"], r["due_at"], r["assignment"].pk))
    return out
