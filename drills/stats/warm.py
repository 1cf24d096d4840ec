"""The dashboard of the learner's new state, drawn when a grade commits instead of on the next
view.

Every live grade moves the learner's ``StatsVersion`` on (``drills.summaries``), so the next
dashboard view misses the per-state cache and would draw the page again: the counters' queries
and the template, the one slow view left. Instead, ``summaries.graded`` (sent in the grade's
transaction) queues ``warm`` for after the commit, on the worker (in embedded mode, a thread of
this process): it reads the learner's state as committed and stores the numbers and the page for
it, exactly what that view would have stored. Only for learners who look at their dashboard
(``cached.mark_viewer``, set when a view draws the page): the others' grades cost nothing here.

Nothing depends on it having run: a view that comes first (or after a lost task) draws the page
itself, as before; and running twice for one state stores the same thing.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from drills.stats import cached
from scenarios import background

WARM_TASK = "drills.tasks.warm_dashboard"


def warm(user_id: int) -> bool:
    """Draw and cache the learner's dashboard for their numbers as committed now (True), or
    nothing when that state is drawn already or the learner is gone (False)."""
    from drills.stats.views import draw

    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        return False
    now = timezone.now()
    key = cached.key_of(user, now)
    if key is None or cached.part(key, "page") is not None:
        return False
    draw(user, now, key)
    return True


def on_graded(sender: Any, user_id: int, **kwargs: Any) -> None:
    """``summaries.graded`` receiver: queue ``warm`` for after the grade commits."""
    if cached.is_viewer(user_id):
        background.send_on_commit(WARM_TASK, [user_id], warm)
