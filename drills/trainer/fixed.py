"""The reveal's "after the fix": the drill's trace regenerated with the fix applied.

The engine draws a trace from (scenario, seed); ``engine.generate(..., fixed=True)`` draws the same
workload with the fix applied. The fixed twin is queued for the Celery worker in the transaction
that grades the attempt (``queue_twin``: stamped ``fixed_queued_at``, sent once it commits; run
in-process off the request in embedded mode) and stored as a trace of source ``fixed`` claimed by
the learner, so the viewer reads it from the ordinary ``/traces/<id>/timeline.json``. It only
exists once the diagnosis is committed: before that its step time would give the answer away.

The reveal asks for it (``twin_state``): stored, it is shown; queued within the last
``WORKER_GRACE_S``, the page says it is being drawn and asks again; otherwise (an attempt graded
before twins were queued, a worker or broker that never got to it) it is made on the request, as
before. ``make_twin`` is the one writer: it generates outside any transaction, then stores the row
and links it in one short transaction under the attempt's lock, so a second run (a redelivery, the
request racing the worker) stores nothing and no half-written twin is ever seen.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from drills.models import Attempt
from drills.trainer.reveal import number_text
from scenarios import background, engine, pool
from scenarios.models import Trace

log = logging.getLogger(__name__)

TWIN_TASK = "drills.tasks.make_fixed_twin"
# Attempt kinds whose reveal shows "after the fix" (a re-narration continues on its narration
# page, a contrast trial has its own reveal).
TWIN_KINDS = (Attempt.Kind.DRILL, Attempt.Kind.INTERVIEW)
# How long the reveal waits on a queued twin before making it itself (a busy or absent worker).
WORKER_GRACE_S = 20.0
# How often the "being drawn" state asks again (seconds, for the page's poll).
POLL_S = 1


def _same_workload(original: Trace, twin: engine.Trace) -> bool:
    return twin.hardware == original.hardware and all(
        twin.prompt.get(k) == original.prompt.get(k) for k in ("hardware", "workload")
    )


def reproducible(original: Trace) -> bool:
    """Whether the engine can draw this trace again (same generator version)."""
    return original.generator_version == engine.GENERATOR_VERSION


def regenerate_fixed(original: Trace) -> engine.Trace | None:
    """The original's workload with the fix applied, or None when it cannot be reproduced (a
    trace from another generator version). Pool traces are drawn with the hardware left to the
    seed; others name it: both ways are tried and the workload line must match."""
    if not reproducible(original):
        return None
    for hardware in (None, original.hardware):
        twin = engine.generate(original.scenario, original.seed, hardware=hardware, fixed=True)
        if _same_workload(original, twin):
            return twin
    return None


def wants_twin(attempt: Attempt) -> bool:
    return attempt.kind in TWIN_KINDS


def queue_twin(locked: Attempt, now: datetime) -> None:
    """Inside the transaction that grades ``locked`` (before it is saved): stamp the twin as
    queued and send the task once the grade commits. Nothing for kinds without the reveal's
    "after the fix", nor for a trace the engine can no longer draw."""
    if not wants_twin(locked) or locked.fixed_trace_id is not None:
        return
    if not Trace.objects.filter(
        pk=locked.trace_id, generator_version=engine.GENERATOR_VERSION
    ).exists():
        return
    locked.fixed_queued_at = now
    background.send_on_commit(TWIN_TASK, [str(locked.pk)], make_twin)


def make_twin(attempt_id) -> Trace | None:
    """Make and store the attempt's fixed twin unless it has one (the worker's task, and the
    request's fallback). Returns the stored twin (without its bytes), or None before the commit
    or when the trace cannot be reproduced."""
    attempt = (
        Attempt.objects.filter(pk=attempt_id)
        .only("id", "user_id", "trace_id", "fixed_trace_id", "submitted_at", "kind")
        .first()
    )
    if attempt is None or not attempt.is_submitted or attempt.kind == Attempt.Kind.CONTRAST:
        return None
    if attempt.fixed_trace_id is not None:
        return _stored(attempt.fixed_trace_id)
    original = Trace.objects.without_blobs().get(pk=attempt.trace_id)
    twin = regenerate_fixed(original)  # the heavy part: outside any transaction or lock
    if twin is None:
        return None
    row = pool.trace_row(twin, source=Trace.Source.FIXED)
    with transaction.atomic():
        locked = Attempt.objects.select_for_update().only("id", "fixed_trace_id").get(pk=attempt.pk)
        if locked.fixed_trace_id is not None:  # made meanwhile (the worker, or another request)
            return _stored(locked.fixed_trace_id)
        row.claimed_at = timezone.now()
        row.claimed_by_id = attempt.user_id
        row.save(force_insert=True)
        Attempt.objects.filter(pk=attempt.pk).update(fixed_trace=row)
    return _stored(row.pk)


def _stored(trace_id) -> Trace | None:
    return Trace.objects.without_blobs().filter(pk=trace_id).first()


@dataclass(frozen=True, slots=True)
class TwinState:
    """What the reveal can show now: the twin, or that the worker is still drawing it."""

    twin: Trace | None = None
    pending: bool = False


def worker_still_due(attempt: Attempt, now: datetime) -> bool:
    """A twin was queued recently enough that the worker should be left to make it."""
    queued = attempt.fixed_queued_at
    return queued is not None and now - queued < timedelta(seconds=WORKER_GRACE_S)


def twin_state(attempt: Attempt, now: datetime | None = None) -> TwinState:
    """The stored twin; "pending" while the worker has it in hand; otherwise made now (nothing
    was queued, or the worker is late). Nothing before the commit."""
    if not attempt.is_submitted:
        return TwinState()
    if attempt.fixed_trace_id is not None:
        return TwinState(twin=_stored(attempt.fixed_trace_id))
    # The worker may have finished since this attempt was read.
    linked = Attempt.objects.filter(pk=attempt.pk).values_list("fixed_trace_id", flat=True).first()
    if linked is not None:
        return TwinState(twin=_stored(linked))
    if worker_still_due(attempt, now or timezone.now()):
        return TwinState(pending=True)
    return TwinState(twin=make_twin(attempt.pk))


def _step(key: dict[str, Any]) -> float | None:
    """The step time as the key prints it (rounded once, as the reveal's arithmetic prints it),
    else the graded one: 319.8498 ms is 319.8 there, and "319.85" rounded again read 319.9."""
    g = key.get("grading") or {}
    value = key.get("step_ms", g.get("step_ms"))
    return None if value is None else float(value)


def after_fix(attempt: Attempt) -> dict[str, Any] | None:
    """What the reveal's "after the fix" shows: both traces (for the viewer, on one time scale)
    and both measured step times beside the key's expected one; ``{"pending": True}`` while the
    worker is drawing the twin; None when there is none to show."""
    try:
        state = twin_state(attempt)
    except Exception:  # never lose the reveal over its extra
        log.exception("attempt %s: the fixed twin could not be made", attempt.pk)
        return None
    if state.pending:
        return {"pending": True, "poll_s": POLL_S}
    twin = state.twin
    if twin is None:
        return None
    key = attempt.trace.key
    g = key.get("grading") or {}
    expected = g.get("expected_step_ms", key.get("expected_step_ms"))
    before, after = _step(key), _step(twin.key)
    return {
        "trace_id": twin.pk,
        "original_id": attempt.trace_id,
        "before_ms": before,
        "after_ms": after,
        "expected_ms": None if expected is None else float(expected),
        "saved_ms": None if before is None or after is None else before - after,
        # printed as the reveal's rows above print them: "6.95 ms" there read "7.0 ms" here
        "before_text": number_text(before, "ms"),
        "after_text": number_text(after, "ms"),
        "expected_text": number_text(expected, "ms"),
        # a healthy trace has no fix: its twin is the same job, drawn again unchanged
        "nothing_to_fix": key.get("scenario") == "healthy",
    }
