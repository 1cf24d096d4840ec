"""A mock interview left open past its hour ends unattended (the Celery beat job
``drills.tasks.end_interviews_past_their_hour``): it ended only when the learner came back, so an
abandoned one held its grades off the dashboard, the cards and the instructor's exports for good.
Ended by the job, its grades count once each, exactly what a rebuild from the raw attempts makes
of them, even when the learner's own request ends it at the same moment."""

from __future__ import annotations

import re
import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connections
from django.test import Client
from django.utils import timezone

from drills import summaries
from drills.interview import services as interviews
from drills.models import Attempt, Card, MockInterview, ScenarioTally
from drills.scheduling import cards
from tests.conftest import needs_postgres, right_answer, script_scheduler
from tracetrack.celery import app

ORDER = ["healthy", "straggler", "healthy", "launch-bound", "healthy", "launch-bound"]


@pytest.fixture
def scripted(monkeypatch, no_refill):
    script_scheduler(monkeypatch, iter(ORDER))


def tallied(learner) -> int:
    return sum(ScenarioTally.objects.filter(user=learner).values_list("n", flat=True))


def counters_match_the_raw_attempts(learner) -> None:
    assert summaries.stale_users([learner.pk]) == []
    assert cards.rebuild_user(learner, dry_run=True)[1] == 0


def reviews(learner) -> list[tuple[str, int]]:
    return sorted(Card.objects.filter(user=learner).values_list("item", "reviews"))


def left_open(client: Client, *, answered: int, open_for: timedelta, dealt_ago: timedelta):
    """An interview begun ``open_for`` ago: ``answered`` traces answered, the next dealt
    ``dealt_ago`` and left open. Returns (interview, the open trace)."""
    url = client.post("/interview/start/")["Location"]
    for n in range(answered + 1):
        location = client.post(f"{url}next/")["Location"]
        attempt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
        if n < answered:
            client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    now = timezone.now()
    interview = MockInterview.objects.get(pk=url.split("/")[2])
    MockInterview.objects.filter(pk=interview.pk).update(started_at=now - open_for)
    Attempt.objects.filter(pk=attempt.pk).update(served_at=now - dealt_ago)
    interview.refresh_from_db()
    return interview, attempt


def without_tokens(html: str) -> str:
    html = re.sub(r'"[\w-]{20,}"', '""', html)  # form tokens and script nonces
    return re.sub(r'"generated_at": "[^"]*"', "", html)


ABANDONED = {
    "answered": 2,
    "open_for": interviews.OPEN_FOR + timedelta(minutes=5),
    "dealt_ago": timedelta(minutes=30),
}


@pytest.mark.django_db
def test_an_abandoned_interview_ends_and_counts_once_as_a_rebuild_would(
    learner_client, learner, scripted
):
    interview, left = left_open(learner_client, **ABANDONED)
    learner_client.get("/dashboard/")  # a learner who looks at their dashboard
    assert tallied(learner) == 0

    assert interviews.end_those_past_their_hour() == 1

    interview.refresh_from_db()
    assert interview.is_finished
    left.refresh_from_db()
    assert left.closed == "expired" and left.answer_scenario == ""
    assert tallied(learner) == 3
    counters_match_the_raw_attempts(learner)
    shown = {
        u: learner_client.get(u).content.decode() for u in ("/dashboard/", "/dashboard/stats.json")
    }
    assert 'data-kpi="graded">3<' in shown["/dashboard/"]
    summaries.rebuild_users([learner.pk])
    for url, page in shown.items():
        assert without_tokens(learner_client.get(url).content.decode()) == without_tokens(page)
    # The learner comes back: the report, and nothing recorded again.
    report = learner_client.get(f"/interview/{interview.pk}/").content.decode()
    assert "Mock interview report" in report and 'id="ended-early"' in report
    assert tallied(learner) == 3


@pytest.mark.django_db
def test_an_interview_within_its_hour_is_left_alone(learner_client, learner, scripted):
    interview, left = left_open(
        learner_client, answered=2, open_for=timedelta(minutes=50), dealt_ago=timedelta(minutes=20)
    )

    assert interviews.end_those_past_their_hour() == 0

    interview.refresh_from_db()
    left.refresh_from_db()
    assert not interview.is_finished and not left.is_submitted
    assert tallied(learner) == 0 and reviews(learner) == []


@pytest.mark.django_db
def test_a_second_run_changes_nothing(learner_client, learner, scripted):
    interview, _ = left_open(learner_client, **ABANDONED)
    assert interviews.end_those_past_their_hour() == 1
    interview.refresh_from_db()
    ended = (interview.finished_at, tallied(learner), reviews(learner))

    assert interviews.end_those_past_their_hour() == 0

    interview.refresh_from_db()
    assert (interview.finished_at, tallied(learner), reviews(learner)) == ended
    counters_match_the_raw_attempts(learner)


@pytest.mark.django_db
def test_a_trace_still_on_its_clock_keeps_the_interview_open_until_its_clock_runs_out(
    learner_client, learner, scripted
):
    interview, left = left_open(
        learner_client,
        answered=2,
        open_for=interviews.OPEN_FOR + timedelta(seconds=30),
        dealt_ago=timedelta(seconds=40),  # dealt at 59:50, its clock still running
    )

    assert interviews.end_those_past_their_hour() == 0
    interview.refresh_from_db()
    left.refresh_from_db()
    assert not interview.is_finished and not left.is_submitted

    later = timezone.now() + timedelta(minutes=5)  # the next run: its clock has run out
    assert interviews.end_those_past_their_hour(later) == 1
    interview.refresh_from_db()
    left.refresh_from_db()
    assert interview.is_finished and left.closed == "expired"
    assert tallied(learner) == 3
    counters_match_the_raw_attempts(learner)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("learner_opens", ["/interview/{pk}/", "/interview/"])
def test_the_job_and_the_learner_at_once_end_it_once(
    learner_opens, make_user, monkeypatch, scripted
):
    needs_postgres()
    learner = make_user("returning")
    client = Client()
    client.force_login(learner)
    interview, _ = left_open(client, **ABANDONED)
    closing = interviews.close_expired

    def slow_close(*args, **kwargs):  # both past "is it ended?" before either takes the lock
        closed = closing(*args, **kwargs)
        time.sleep(0.3)
        return closed

    monkeypatch.setattr(interviews, "close_expired", slow_close)
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(action) -> None:
        try:
            barrier.wait(timeout=10)
            action()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    def learner_returns() -> None:
        assert client.get(learner_opens.format(pk=interview.pk)).status_code == 200

    threads = [
        threading.Thread(target=run, args=(learner_returns,)),
        threading.Thread(target=run, args=(interviews.end_those_past_their_hour,)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)

    assert not errors, errors
    interview.refresh_from_db()
    assert interview.is_finished
    assert tallied(learner) == 3
    counters_match_the_raw_attempts(learner)


def test_beat_runs_the_job_every_five_minutes():
    entry = settings.CELERY_BEAT_SCHEDULE["end-interviews-past-their-hour"]
    assert entry["task"] == interviews.END_TASK and entry["schedule"] == 300.0
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
