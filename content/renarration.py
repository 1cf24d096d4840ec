"""Next-day re-narration of a walkthrough: its own trace, narration hidden, five sentences.

A walkthrough marked read comes back one day after the read mark; from then on its re-narration
card (``Card.Kind.RENARRATION``, item = the walkthrough's slug), reviewed by the same FSRS path as
every other card (``drills.scheduling.cards``), says when it is due again. The attempt itself is an
ordinary timed trainer attempt of kind ``renarration`` on a stored copy of the walkthrough's
fixed trace (its key carries the grading block), so grading, the clock and the reveal are the
trainer's; nothing served before the commit names the walkthrough.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from content.models import ReadMark
from content.pages import Page, get_page, library
from drills.models import Attempt, Card
from drills.trainer import services as trainer
from scenarios import engine, pool
from scenarios.models import Trace

FIRST_DELAY = timedelta(days=1)
TRACE_FIELDS = (
    "scenario", "seed", "hardware", "generator_version", "prompt", "key", "n_events", "payload",
    "timeline_gz", "perfetto_gz",
)  # fmt: skip


class NotDue(Exception):
    """The walkthrough is not read, or its re-narration is not due yet."""


@dataclass(frozen=True)
class DueRenarration:
    slug: str  # never shown before the commit: the walkthrough's title names the scenario
    due: datetime
    read_at: datetime
    reviews: int


def schedule(user) -> dict[str, DueRenarration]:
    """Every read walkthrough's re-narration, due or not, by slug."""
    walkthroughs = {p.slug for p in library().walkthroughs()}
    marks = ReadMark.objects.filter(user=user, slug__in=walkthroughs)
    held = {
        c.item: c
        for c in Card.objects.filter(user=user, kind=Card.Kind.RENARRATION, item__in=walkthroughs)
    }
    out = {}
    for mark in marks:
        card = held.get(mark.slug)
        due = card.due if card is not None else mark.read_at + FIRST_DELAY
        out[mark.slug] = DueRenarration(
            mark.slug, due, mark.read_at, card.reviews if card is not None else 0
        )
    return out


def due_renarrations(user, now: datetime | None = None) -> list[DueRenarration]:
    """The re-narrations due now, the longest overdue first."""
    now = now or timezone.now()
    due = [d for d in schedule(user).values() if d.due <= now]
    return sorted(due, key=lambda d: (d.due, d.slug))


def open_any(user) -> Attempt | None:
    """The learner's open re-narration, whichever walkthrough it is of."""
    return (
        Attempt.objects.filter(user=user, kind=Attempt.Kind.RENARRATION, submitted_at__isnull=True)
        .order_by("-served_at")
        .first()
    )


def narrations_held(user) -> Attempt | None:
    """The open re-narration that holds back every narration of a walkthrough's trace, or None.

    A re-narration is a walkthrough's own trace: its walkthrough page narrates it with the very
    numbers asked for (step time, gap, the measurement's value, the step time after the fix), and
    an earlier re-narration's result shows them again. While one is open, every walkthrough
    page, its trace and every re-narration result wait for its commit: all of them, since holding
    only the one being re-narrated would name it, and its title names the scenario."""
    return open_any(user)


def open_renarration(user, slug: str) -> Attempt | None:
    return (
        Attempt.objects.filter(
            user=user, kind=Attempt.Kind.RENARRATION, item=slug, submitted_at__isnull=True
        )
        .order_by("-served_at")
        .first()
    )


def walkthrough_trace(page: Page, user) -> Trace:
    """A stored copy of the walkthrough's own trace, served to ``user`` (the engine is
    deterministic in (scenario, seed, hardware): it is the trace the narration was written on)."""
    scenario, seed = page.scenario, page.seed
    assert scenario is not None and seed is not None
    # Generating costs seconds and every re-narration of a walkthrough stores the same rows: copy
    # an earlier copy when there is one (the database, not the cache: Redis may be down).
    earlier = (
        Trace.objects.filter(
            source=Trace.Source.NARRATED,
            scenario=scenario,
            seed=seed,
            generator_version=engine.GENERATOR_VERSION,
            **({"hardware": page.hardware} if page.hardware else {}),
        )
        .only(*TRACE_FIELDS)
        .first()
    )
    built = earlier or pool.drawn_or_draw(
        "narrated",
        page.slug,
        lambda: pool.build_trace(
            scenario, seed, hardware=page.hardware, source=Trace.Source.NARRATED
        ),
    )
    fields = {f: getattr(built, f) for f in TRACE_FIELDS}
    trace = Trace(source=Trace.Source.NARRATED, **fields)
    trace.claimed_at = timezone.now()
    trace.claimed_by = user
    trace.save(force_insert=True)
    return trace


@pool.draws_outside_transaction
def start(user, slug: str, now: datetime | None = None) -> Attempt:
    """Serve the walkthrough's trace as a re-narration (resuming an open one). Raises NotDue
    unless the walkthrough is read and its re-narration is due."""
    now = now or timezone.now()
    page = get_page(slug)
    if page is None or not page.is_walkthrough or page.scenario is None or page.seed is None:
        raise NotDue("No such walkthrough.")
    existing = open_renarration(user, slug)
    if existing is not None:
        return existing
    entry = schedule(user).get(slug)
    if entry is None:
        raise NotDue("Mark the walkthrough read first; it comes back the next day.")
    if entry.due > now:
        raise NotDue("This re-narration is not due yet.")
    with transaction.atomic():
        trace = walkthrough_trace(page, user)
        return trainer.start_on_trace(user, trace, kind=Attempt.Kind.RENARRATION, item=slug)


def start_next(user, now: datetime | None = None) -> Attempt:
    """Resume an open re-narration, else start the longest-overdue one (the start URL names no
    walkthrough: its slug would name the scenario)."""
    now = now or timezone.now()
    open_one = open_any(user)
    if open_one is not None:
        return open_one
    due = due_renarrations(user, now)
    if not due:
        raise NotDue("No walkthrough re-narration is due.")
    return start(user, due[0].slug, now)
