"""The dashboard of the learner's new state, drawn when a grade commits instead of on the next
view.

Every live grade moves the learner's ``StatsVersion`` on (``drills.summaries``), so the next
dashboard view misses the per-state cache and would draw the page again: the counters' queries
and the template, the one slow view left. Instead, ``summaries.graded`` (sent in the grade's
transaction) runs ``warm`` right after the commit, in the request that graded: it reads the
learner's state as committed and stores the numbers and the page for it, exactly what that view
would have stored. The grade's response waits for it (a few milliseconds: the numbers are one
stored row), so the learner's next dashboard view always finds its page drawn. It used to be
queued for the worker, and a learner who went to the dashboard straight from the reveal could
beat the worker and pay for the drawing in that view.

Only for learners who look at their dashboard (``cached.mark_viewer``, set when a view draws the
page): the others' grades cost nothing here. A drawing that fails is logged and loses nothing:
the grade has committed, and the next view draws the page itself; running twice for one state
stores the same thing. The Celery task stays registered for messages queued before this change.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from drills.stats import cached

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
    """``summaries.graded`` receiver: draw the new state as soon as the grade commits, in this
    request (``robust``: a failure is logged, never raised into the learner's request)."""
    if cached.is_viewer(user_id):
        transaction.on_commit(lambda: warm(user_id), robust=True)
