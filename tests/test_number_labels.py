"""Every number label means what it says: dashboard totals, one-point trends, due marks."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from cohorts.progress import scenario_stats
from cohorts.render import scenario_cells
from drills import summaries
from drills.models import Attempt, Card
from drills.scheduling import new_card_state
from tests.factories import AttemptFactory, UserFactory

pytestmark = pytest.mark.django_db


def _submitted(user, *, mode, scenario="straggler", answer=None, when=None):
    when = when or timezone.now()
    a = AttemptFactory(
        user=user, scenario=scenario, mode=mode, served_at=when - timedelta(seconds=40)
    )
    Attempt.objects.filter(pk=a.pk).update(
        submitted_at=when,
        elapsed_s=40,
        answer_scenario=answer or scenario,
        scenario_correct=(answer or scenario) == scenario,
        measurement_correct=True,
        fix_correct=True,
        win_correct=True,
        over_time=False,
        counted=mode != Attempt.Mode.PRACTICE,
    )
    a.refresh_from_db()
    summaries.record_attempt(a)  # as the grading path does, in the same transaction
    return a


def _client(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def test_dashboard_totals_say_what_they_count():
    user = UserFactory()
    _submitted(user, mode=Attempt.Mode.TIMED)
    _submitted(user, mode=Attempt.Mode.PRACTICE)
    AttemptFactory(user=user)  # opened, never submitted: not a diagnosis
    html = _client(user).get("/dashboard/").content.decode()
    assert "Graded attempts only" not in html
    assert 'Graded drills</dt><dd data-kpi="graded">2<' in html
    assert 'untimed practice</dt><dd data-kpi="practice">1<' in html


def test_a_lookalike_trend_with_one_week_says_it_needs_two():
    user = UserFactory()
    _submitted(user, mode=Attempt.Mode.TIMED, answer="bandwidth-bound-collective")
    html = _client(user).get("/dashboard/").content.decode()
    assert "a trend needs two" in html
    section = html.split("<h2>Lookalike confusions</h2>")[1].split("</section>")[0]
    assert " → " not in section


def test_a_card_due_today_is_marked_due_not_overdue_by_zero_days():
    user = UserFactory()
    now = timezone.now()
    for item, due in (
        ("straggler", now - timedelta(hours=2)),
        ("healthy", now - timedelta(days=3)),
    ):
        Card.objects.create(
            user=user, kind=Card.Kind.SCENARIO, item=item, state=new_card_state(now), due=due
        )
    cells = scenario_stats([user.pk], now)[user.pk]
    assert cells["straggler"].due_now and cells["straggler"].overdue_days is None
    assert cells["healthy"].overdue_days == 3 and not cells["healthy"].due_now
    html = scenario_cells({"scenarios": [cells["straggler"], cells["healthy"]]})
    assert "!0" not in html and ">due<" in html and ">!3d<" in html
