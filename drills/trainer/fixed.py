"""The reveal's "after the fix": the drill's trace regenerated with the fix applied.

The engine draws a trace from (scenario, seed); ``engine.generate(..., fixed=True)`` draws the same
workload with the fix applied. The fixed twin is made the first time the reveal is shown, stored as
a trace of source ``fixed`` claimed by the learner (so the viewer reads it from the ordinary
``/traces/<id>/timeline.json``) and linked from the attempt; later views read the stored row. It
only exists once the diagnosis is committed: before that its step time would give the answer away.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from drills.models import Attempt
from scenarios import engine, pool
from scenarios.models import Trace

log = logging.getLogger(__name__)


def _same_workload(original: Trace, twin: engine.Trace) -> bool:
    return twin.hardware == original.hardware and all(
        twin.prompt.get(k) == original.prompt.get(k) for k in ("hardware", "workload")
    )


def regenerate_fixed(original: Trace) -> engine.Trace | None:
    """The original's workload with the fix applied, or None when it cannot be reproduced (a
    trace from another generator version). Pool traces are drawn with the hardware left to the
    seed; others name it: both ways are tried and the workload line must match."""
    if original.generator_version != engine.GENERATOR_VERSION:
        return None
    for hardware in (None, original.hardware):
        twin = engine.generate(original.scenario, original.seed, hardware=hardware, fixed=True)
        if _same_workload(original, twin):
            return twin
    return None


def fixed_twin(attempt: Attempt) -> Trace | None:
    """The attempt's stored fixed twin, made now if missing; None before the commit or when the
    trace cannot be reproduced."""
    if not attempt.is_submitted:
        return None
    if attempt.fixed_trace_id is not None:
        return Trace.objects.without_blobs().filter(pk=attempt.fixed_trace_id).first()
    with transaction.atomic():
        locked = Attempt.objects.select_for_update().get(pk=attempt.pk)
        if locked.fixed_trace_id is not None:  # a concurrent view made it
            attempt.fixed_trace_id = locked.fixed_trace_id
            return Trace.objects.without_blobs().filter(pk=locked.fixed_trace_id).first()
        original = Trace.objects.get(pk=attempt.trace_id)
        twin = regenerate_fixed(original)
        if twin is None:
            return None
        row = pool.trace_row(twin, source=Trace.Source.FIXED)
        row.claimed_at = timezone.now()
        row.claimed_by_id = attempt.user_id
        row.save(force_insert=True)
        locked.fixed_trace = row
        locked.save(update_fields=["fixed_trace"])
        attempt.fixed_trace_id = row.pk
    return row


def _step(key: dict[str, Any]) -> float | None:
    g = key.get("grading") or {}
    value = g.get("step_ms", key.get("step_ms"))
    return None if value is None else float(value)


def after_fix(attempt: Attempt) -> dict[str, Any] | None:
    """What the reveal's "after the fix" shows: both traces (for the viewer, on one time scale)
    and both measured step times beside the key's expected one."""
    try:
        twin = fixed_twin(attempt)
    except Exception:  # never lose the reveal over its extra
        log.exception("attempt %s: the fixed twin could not be made", attempt.pk)
        return None
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
    }
