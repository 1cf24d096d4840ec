"""Models and migrations agree: a model change without its migration fails here, not in deploy."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_is_missing_a_migration():
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out)
    except SystemExit:  # --check exits 1 when a migration would be written
        pytest.fail(f"models changed without a migration:\n{out.getvalue()}", pytrace=False)
    assert "No changes detected" in out.getvalue()


CLAMP = ("drills", "0014_clamp_closed_attempt_times")
BEFORE_CLAMP = ("drills", "0013_interview_grades_held")


def _migrate(target):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


@pytest.mark.django_db(transaction=True)
def test_attempts_closed_before_the_clock_fix_keep_the_clocks_time(settings):
    """Attempts closed as expired (or abandoned) before the clock fix stored the days their tab
    stayed open: a drill expired a day later read 86,400 s. The migration stores what the code
    stores now (the limit plus the 2 s grace; a contrast trial's 45 s), moves their elapsed
    counters with them, and leaves practice and answered drills alone. Backwards, a no-op."""
    from datetime import timedelta

    from django.utils import timezone

    from drills import summaries
    from drills.models import Attempt as LiveAttempt
    from drills.models import ElapsedTally as LiveTally
    from tests.factories import TraceFactory, UserFactory

    limit = settings.TRACETRACK["DRILL_TIME_LIMIT_S"]
    _migrate(BEFORE_CLAMP)  # the schema is the same: only the data migration is undone
    user = UserFactory(username="old-timer")
    now = timezone.now()
    rows = {
        # name: (kind, mode, closed, elapsed stored, elapsed after)
        "expired a day later": ("drill", "timed", "expired", 86_400.0, limit + 2.0),
        "abandoned an hour later": ("drill", "perfetto", "abandoned", 3_600.0, limit + 2.0),
        "trial expired": ("contrast", "timed", "expired", 7_200.0, 47.0),
        "practice abandoned": ("drill", "practice", "abandoned", 9_000.0, 9_000.0),
        "answered late": ("drill", "timed", "", 600.0, 600.0),
        "expired in time": ("drill", "timed", "expired", limit + 1.5, limit + 1.5),
    }
    made = {}
    for name, (kind, mode, closed, elapsed, _) in rows.items():
        made[name] = LiveAttempt.objects.create(
            trace=TraceFactory(),
            user=user, scenario="straggler", kind=kind, mode=mode, closed=closed,
            served_at=now - timedelta(seconds=elapsed), submitted_at=now, elapsed_s=elapsed,
            scenario_correct=False, measurement_correct=False, fix_correct=False,
            win_correct=False, over_time=elapsed > limit + 2.0,
        ).pk  # fmt: skip
    summaries.rebuild_users([user.pk])  # the counters as they stood, day-long times and all
    assert LiveTally.objects.filter(user_id=user.pk, second=86_400).exists()

    _migrate(CLAMP)

    for name, (*_, after) in rows.items():
        assert LiveAttempt.objects.get(pk=made[name]).elapsed_s == pytest.approx(after), name
    assert not LiveTally.objects.filter(user_id=user.pk, second__gt=9_000).exists()
    assert summaries.stale_users([user.pk]) == []  # the counters agree with the clamped rows

    _migrate(BEFORE_CLAMP)  # backwards: nothing to undo
    assert LiveAttempt.objects.get(pk=made["expired a day later"]).elapsed_s == limit + 2.0
    _migrate(CLAMP)
