"""A mock interview's grades count nowhere else until it ends.

Mid-interview, answering a trace moved the dashboard's accuracy and confusion cells,
stats.json, Today's due pills, the cards behind the next deal and the instructor's exports: a
learner could answer, open another tab, and read which scenario row moved (the answer of the
trace just answered, and whether it was right). Now the interview's grades wait on its attempts
and are recorded when it ends, once each; the counters and cards stay what a rebuild from the
raw attempts makes of them at every step."""

from __future__ import annotations

import difflib
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.roles import make_instructor
from cohorts.models import Cohort, Membership
from drills import summaries
from drills.interview import services as interviews
from drills.models import Attempt, Card, MockInterview, ScenarioTally
from drills.scheduling import cards
from drills.trainer import services
from tests.conftest import right_answer, script_scheduler

pytestmark = pytest.mark.django_db

# The first interview trace is a straggler answered as its lookalike (a confusion: it pulls
# the twin's card and the pair's card due, and calls for a contrast trial).
ORDER = ["healthy", "straggler", "healthy", "launch-bound", "healthy", "launch-bound"]


@pytest.fixture
def scripted(monkeypatch, no_refill):
    script_scheduler(monkeypatch, iter(ORDER))


@pytest.fixture
def teacher_client(make_user, learner):
    teacher = make_user("teacher")
    make_instructor(teacher)
    cohort = Cohort.objects.create(name="C", created_by=teacher, join_code="ABCDEFGH")
    cohort.instructors.add(teacher)
    Membership.objects.create(cohort=cohort, user=learner)
    c = Client()
    c.force_login(teacher)
    c.cohort_id = cohort.pk  # type: ignore[attr-defined]
    return c


def confused(attempt: Attempt) -> dict[str, str]:
    return {**right_answer(attempt), "scenario": "bandwidth-bound-collective"}


def pages(learner_client: Client, teacher_client: Client, learner) -> dict[str, str]:
    """Every page and download that shows the learner's numbers or answers, as each reads."""
    cohort = teacher_client.cohort_id  # type: ignore[attr-defined]
    shown = {
        url: learner_client.get(url)
        for url in ("/", "/dashboard/", "/dashboard/stats.json", "/drill/", "/track/", "/math/")
    }
    for url in (
        f"/cohorts/{cohort}/",
        f"/cohorts/{cohort}/export.csv",
        f"/cohorts/{cohort}/attempts.csv",
        f"/cohorts/{cohort}/learners/{learner.pk}/",
    ):
        shown[url] = teacher_client.get(url)
    out = {}
    for url, response in shown.items():
        assert response.status_code == 200, url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        # the form tokens and script nonces differ from one response to the next
        out[url] = re.sub(r'"[\w-]{20,}"', '""', body.decode())
        out[url] = re.sub(r'"generated_at": "[^"]*"', "", out[url])  # stats.json's own clock
    return out


def changed_lines(before: str, after: str) -> list[str]:
    return list(difflib.unified_diff(before.splitlines(), after.splitlines(), n=0))[2:12]


def counters_match_the_raw_attempts(learner) -> None:
    assert summaries.stale_users([learner.pk]) == []
    assert cards.rebuild_user(learner, dry_run=True)[1] == 0


def test_nothing_outside_the_interview_moves_until_it_ends(
    learner_client, learner, teacher_client, scripted
):
    drill = services.start_drill(learner)  # some history: one healthy drill, answered right
    learner_client.post(f"/drill/attempts/{drill.pk}/diagnosis/", right_answer(drill))
    url = learner_client.post("/interview/start/")["Location"]
    before = pages(learner_client, teacher_client, learner)
    tallies = list(ScenarioTally.objects.values_list("scenario", "answer_scenario", "n"))

    location = learner_client.post(f"{url}next/")["Location"]
    first = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
    assert first.scenario == "straggler"
    response = learner_client.post(f"/drill/attempts/{first.pk}/diagnosis/", confused(first))
    assert response["Location"] == url

    after = pages(learner_client, teacher_client, learner)
    for page, html in before.items():
        assert after[page] == html, (page, changed_lines(html, after[page]))
    assert list(ScenarioTally.objects.values_list("scenario", "answer_scenario", "n")) == tallies
    assert not Card.objects.filter(user=learner, item__contains="straggler").exists()
    counters_match_the_raw_attempts(learner)

    # The rest of the interview, then its report: its five grades count, once each.
    for _ in range(4):
        location = learner_client.post(f"{url}next/")["Location"]
        attempt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
        learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    counters_match_the_raw_attempts(learner)
    assert "Mock interview report" in learner_client.get(url).content.decode()
    learner_client.get(url)  # the report again: nothing recorded twice
    assert sum(ScenarioTally.objects.filter(user=learner).values_list("n", flat=True)) == 6
    assert (
        ScenarioTally.objects.get(
            user=learner, scenario="straggler", answer_scenario="bandwidth-bound-collective"
        ).n
        == 1
    )
    card = Card.objects.get(user=learner, kind=Card.Kind.SCENARIO, item="straggler")
    assert card.reviews == 1 and card.last_review == Attempt.objects.get(pk=first.pk).submitted_at
    assert Card.objects.filter(user=learner, kind=Card.Kind.PAIR).exists()
    counters_match_the_raw_attempts(learner)
    dashboard = learner_client.get("/dashboard/").content.decode()
    assert dashboard != before["/dashboard/"]


def test_no_other_drill_is_dealt_while_an_interview_is_under_way(learner_client, learner, scripted):
    url = learner_client.post("/interview/start/")["Location"]
    location = learner_client.post(f"{url}next/")["Location"]
    first = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
    learner_client.post(f"/drill/attempts/{first.pk}/diagnosis/", confused(first))

    response = learner_client.post("/drill/next/", {"mode": "timed"}, follow=True)

    assert response.redirect_chain[-1][0] == url
    assert "Your mock interview is still under way" in response.content.decode()
    assert Attempt.objects.filter(user=learner).count() == 1
    hx = learner_client.post("/drill/next/", {"mode": "timed"}, HTTP_HX_REQUEST="true")
    assert hx.status_code == 204 and hx["HX-Redirect"] == url


def test_an_interview_left_open_past_its_hour_ends_and_counts(learner_client, learner, scripted):
    url = learner_client.post("/interview/start/")["Location"]
    interview = MockInterview.objects.get()
    for _ in range(2):
        location = learner_client.post(f"{url}next/")["Location"]
        attempt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
        learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    # the third dealt, then left open; the interview began over an hour ago
    location = learner_client.post(f"{url}next/")["Location"]
    past = timezone.now() - interviews.OPEN_FOR - timedelta(minutes=5)
    MockInterview.objects.filter(pk=interview.pk).update(started_at=past)
    Attempt.objects.filter(pk=location.split("/")[3]).update(served_at=past)
    assert not ScenarioTally.objects.filter(user=learner).exists()

    response = learner_client.post("/drill/next/", {"mode": "timed"})

    assert response["Location"].startswith("/drill/attempts/")  # a drill dealt at last
    interview.refresh_from_db()
    assert interview.is_finished
    third = Attempt.objects.get(pk=location.split("/")[3])
    assert third.closed == "expired" and third.elapsed_s == pytest.approx(
        services.time_limit_s() + 2.0
    )
    assert sum(ScenarioTally.objects.filter(user=learner).values_list("n", flat=True)) == 3
    counters_match_the_raw_attempts(learner)
    report = learner_client.get(url).content.decode()
    assert "Mock interview report" in report and 'id="ended-early"' in report
    assert "no answer before the clock ran out" in report


def test_an_interview_stored_before_grades_waited_is_not_counted_twice(
    learner_client, learner, scripted
):
    """An interview under way at the upgrade had its traces counted as they were graded: its
    later traces count as they are graded too, and its end records none of them again."""
    interview = MockInterview.objects.create(
        user=learner, started_at=timezone.now(), grades_held=False
    )
    url = f"/interview/{interview.pk}/"
    location = learner_client.post(f"{url}next/")["Location"]
    attempt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    assert sum(ScenarioTally.objects.filter(user=learner).values_list("n", flat=True)) == 1
    MockInterview.objects.filter(pk=interview.pk).update(
        started_at=timezone.now() - interviews.OPEN_FOR
    )
    assert "Mock interview report" in learner_client.get(url).content.decode()
    assert sum(ScenarioTally.objects.filter(user=learner).values_list("n", flat=True)) == 1
    counters_match_the_raw_attempts(learner)
