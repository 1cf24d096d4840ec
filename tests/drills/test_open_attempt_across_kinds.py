"""One open attempt per learner holds across kinds: an interview trace or a re-narration asked for
while a drill is open sends the learner back to that drill instead of failing."""

from __future__ import annotations

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
