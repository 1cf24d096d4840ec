"""An upload of the trace a learner's open drill is on: its analysis waits for the diagnosis.

Every drill trace downloads as Perfetto JSON, and bring-your-own-trace reads such a file back
and names what it finds. Without this check a learner could upload the open drill's trace and
read the answer off the findings instead of off the timeline. The upload is kept (its export
still downloads); its timeline, measurements and findings show once the drill is answered or
closed.
A trace is recognised by its step times (``traceanalysis.measures.same_steps``), which
survive renaming the file and stripping its header.
"""

from __future__ import annotations

from typing import Any

from drills.models import Attempt
from scenarios.traceanalysis.measures import same_steps

HELD = (
    "This is the trace of the drill you have open. Its measurements and findings show here "
    "once you have committed your diagnosis (or given the drill up): until then, read it on "
    "the drill's timeline."
)


def open_drill_hold(user: Any, analysis: dict) -> str | None:
    """``scenarios.uploads`` hold check: HELD when ``analysis`` is of a trace (either side of
    a contrast trial) of one of the learner's open attempts."""
    if not getattr(user, "is_authenticated", False):
        return None
    open_keys = Attempt.objects.filter(user=user, submitted_at__isnull=True, closed="").values_list(
        "trace__key", "partner__key"
    )
    for keys in open_keys:
        for key in keys:
            series = ((key or {}).get("facts") or {}).get("step_ms_series") or []
            if same_steps(analysis, series):
                return HELD
    return None
