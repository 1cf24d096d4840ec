"""One open attempt per learner holds across kinds: an interview trace or a re-narration asked for
while a drill is open sends the learner back to that drill instead of failing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from drills.models import Attempt, MockInterview

pytestmark = pytest.mark.django_db


def test_an_interview_trace_waits_for_the_open_drill(learner_client):
    assert learner_client.post("/drill/next/", {"mode": "timed"}).status_code == 302
    drill = Attempt.objects.get()
    r = learner_client.post("/interview/start/")
    interview = MockInterview.objects.get()
    r = learner_client.post(f"/interview/{interview.pk}/next/")
    assert r.status_code == 302 and r["Location"] == f"/drill/attempts/{drill.pk}/"
    assert Attempt.objects.count() == 1
    learner_client.post(f"/drill/attempts/{drill.pk}/abandon/")
    r = learner_client.post(f"/interview/{interview.pk}/next/")
    assert r.status_code == 302
    assert Attempt.objects.filter(interview=interview, submitted_at__isnull=True).count() == 1


def test_an_open_drill_behind_a_newer_answered_one_still_holds_the_interview(
    learner_client, learner
):
    """The interview asks the newest attempts whether one is open. Should the open drill sort
    behind an answered one (two servers' clocks disagreeing), the database still refuses a second
    open attempt: the learner is sent to the open drill, and no trace is spent."""
    from scenarios.models import Trace

    learner_client.post("/drill/next/", {"mode": "timed"})
    answered = Attempt.objects.get()
    learner_client.post(f"/drill/attempts/{answered.pk}/abandon/")
    learner_client.post("/drill/next/", {"mode": "timed"})
    drill = Attempt.objects.get(submitted_at__isnull=True)
    Attempt.objects.filter(pk=answered.pk).update(served_at=drill.served_at + timedelta(minutes=1))
    claimed = Trace.objects.filter(claimed_by=learner).count()
    learner_client.post("/interview/start/")
    interview = MockInterview.objects.get()

    r = learner_client.post(f"/interview/{interview.pk}/next/")

    assert r.status_code == 302 and r["Location"] == f"/drill/attempts/{drill.pk}/"
    assert not Attempt.objects.filter(interview=interview).exists()
    assert Trace.objects.filter(claimed_by=learner).count() == claimed


def test_the_next_interview_trace_asks_about_the_learners_attempts_once(
    learner, no_refill, monkeypatch
):
    """Dealing an interview trace reads the interview's own attempts, then the learner's newest
    ones once: that one read says whether a drill is open and what was dealt lately. (With the
    pool stocked: a deal that must generate on the request leaves its transaction to do it and
    runs again, reading twice.)"""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from drills.interview import services as interviews
    from drills.trainer import services
    from scenarios import pool

    monkeypatch.setattr(services, "next_scenario", lambda *a, **kw: "launch-bound")
    pool.refill("launch-bound", target=2)
    interview = interviews.start(learner)
    services.close_attempt(interviews.next_attempt(interview), "abandoned")
    with CaptureQueriesContext(connection) as ctx:
        attempt = interviews.next_attempt(interview)
    assert attempt is not None and attempt.interview_id == interview.pk
    reads = [
        q["sql"] for q in ctx.captured_queries if q["sql"].startswith('SELECT "drills_attempt"')
    ]
    assert len(reads) == 2, reads
