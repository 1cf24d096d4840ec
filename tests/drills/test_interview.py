"""Mock interview: five timed traces in a row through the trainer's own attempt and grading path,
then a report whose numbers are those five attempts'; shareable with the cohort's instructors
(read-only), 404 for everyone else."""

from __future__ import annotations

import itertools
import re

import pytest
from django.test import Client

from accounts.roles import make_instructor
from cohorts.models import Cohort, Membership
from drills.interview import services as interviews
from drills.models import Attempt, Card, MockInterview
from scenarios.engine.catalog import title_of
from tests.conftest import right_answer, script_scheduler

pytestmark = pytest.mark.django_db

# Five traces: two of the weakest one, where the learner names the wrong signature.
ORDER = ["straggler", "healthy", "launch-bound", "straggler", "healthy"]


@pytest.fixture
def scripted(monkeypatch, no_refill):
    script_scheduler(monkeypatch, itertools.cycle(ORDER))


def wrong_signature(attempt: Attempt) -> dict[str, str]:
    return {**right_answer(attempt), "scenario": "healthy"}


def wrong_gap(attempt: Attempt) -> dict[str, str]:
    answer = right_answer(attempt)
    return {**answer, "gap_ms": f"{float(answer['gap_ms']) * 3 + 50:.3f}"}


ANSWERS = [wrong_signature, right_answer, wrong_gap, wrong_signature, right_answer]


def run_interview(client: Client) -> MockInterview:
    response = client.post("/interview/start/")
    assert response.status_code == 302
    interview_url = response["Location"]
    interview = MockInterview.objects.get(pk=interview_url.split("/")[2])
    for i, answer in enumerate(ANSWERS):
        page = client.get(interview_url).content.decode()
        assert f"{i} of 5 traces done" in page and "Mock interview report" not in page
        assert "interview-traces" not in page  # no results between traces
        response = client.post(f"{interview_url}next/")
        assert response["Location"].startswith("/drill/attempts/")
        attempt = Attempt.objects.select_related("trace").get(pk=response["Location"].split("/")[3])
        assert attempt.kind == Attempt.Kind.INTERVIEW and attempt.interview_id == interview.pk
        html = client.get(response["Location"]).content.decode()
        assert 'id="clock"' in html and "Mock interview" in html
        response = client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", answer(attempt))
        # No reveal between traces: back to the interview.
        assert response.status_code == 302 and response["Location"] == interview_url
    interview.refresh_from_db()
    return interview


def test_five_traces_then_a_report_whose_numbers_are_the_attempts(learner_client, scripted):
    interview = run_interview(learner_client)
    html = learner_client.get(f"/interview/{interview.pk}/").content.decode()
    interview.refresh_from_db()
    assert interview.is_finished and "Mock interview report" in html
    attempts = list(interview.attempts.order_by("served_at"))  # type: ignore[attr-defined]
    assert [a.scenario for a in attempts] == ORDER
    assert interview.finished_at == max(a.submitted_at for a in attempts)

    rows = re.findall(
        r'<tr class="interview-trace" data-n="(\d)" data-scenario="([\w-]+)" '
        r'data-elapsed="([\d.]+)" data-right="(\d)">(.*?)</tr>',
        html,
        re.S,
    )
    assert len(rows) == 5
    fields = ["step_correct", "gap_correct", "scenario_correct", "measurement_correct",
              "value_correct", "fix_correct", "expected_correct"]  # fmt: skip
    for (n, scenario, elapsed, right, cells), attempt in zip(rows, attempts, strict=True):
        assert scenario == attempt.scenario
        assert float(elapsed) == pytest.approx(attempt.elapsed_s, abs=0.06)
        marks = re.findall(r'class="mark" data-correct="(yes|no|none)"', cells)
        expected = [
            "none" if getattr(attempt, f) is None else "yes" if getattr(attempt, f) else "no"
            for f in fields
        ]
        assert marks == expected, n
        assert int(right) == expected.count("yes")
    total_right = sum(1 for a in attempts for f in fields if getattr(a, f) is True)
    assert f'<strong id="summary-right">{total_right}</strong>' in html
    # The straggler traces were named healthy twice: the weakest signature, and the signature
    # sentence the one to drill.
    assert 'id="weakest" data-scenario="straggler"' in html
    assert title_of("straggler") in re.search(r'id="weakest"[^>]*>(.*?)</p>', html, re.S)[1]
    report = interviews.report(interview)
    assert report["weakest"] == "straggler"
    assert report["wrong_by_sentence"]["3"] == 2 and report["wrong_by_sentence"].get("2", 0) >= 1
    assert "signature of " + title_of("straggler") in report["next"]


def test_interview_traces_are_drills_in_every_other_respect(learner_client, learner, scripted):
    interview = run_interview(learner_client)
    assert Attempt.objects.filter(user=learner, kind=Attempt.Kind.INTERVIEW).count() == 5
    # Until the report is seen a trace's page leads to it, and the grades wait with it; after
    # it, each trace's own reveal, and the cards reviewed as a drill's are.
    assert not Card.objects.filter(user=learner, kind=Card.Kind.SCENARIO).exists()
    attempt = Attempt.objects.filter(user=learner).first()
    assert learner_client.get(f"/drill/attempts/{attempt.pk}/")["Location"] == (
        f"/interview/{interview.pk}/"
    )
    learner_client.get(f"/interview/{interview.pk}/")
    card = Card.objects.get(user=learner, kind=Card.Kind.SCENARIO, item="straggler")
    assert card.reviews == 2
    assert 'id="reveal"' in learner_client.get(f"/drill/attempts/{attempt.pk}/").content.decode()


def test_starting_again_continues_the_unfinished_interview(learner_client, scripted):
    first = learner_client.post("/interview/start/")["Location"]
    assert learner_client.post("/interview/start/")["Location"] == first


def test_sharing_shows_the_report_read_only_to_the_cohorts_instructors_only(
    learner_client, learner, make_user, scripted
):
    interview = run_interview(learner_client)
    learner_client.get(f"/interview/{interview.pk}/")
    teacher, other_teacher, classmate, bob = (
        make_user(n) for n in ("teacher", "other-teacher", "classmate", "bob")
    )
    make_instructor(teacher)
    make_instructor(other_teacher)
    cohort = Cohort.objects.create(name="C", created_by=teacher, join_code="ABCDEFGH")
    cohort.instructors.add(teacher)
    Membership.objects.create(cohort=cohort, user=learner)
    Membership.objects.create(cohort=cohort, user=classmate)
    elsewhere = Cohort.objects.create(name="D", created_by=other_teacher, join_code="HGFEDCBA")
    elsewhere.instructors.add(other_teacher)
    shared_url = f"/cohorts/{cohort.pk}/interviews/{interview.pk}/"

    def as_(user) -> Client:
        c = Client()
        c.force_login(user)
        return c

    assert as_(teacher).get(shared_url).status_code == 404  # not shared yet
    assert (
        learner_client.post(f"/interview/{interview.pk}/share/", {"shared": "1"}).status_code == 302
    )
    # the learner's own report says what sharing adds: the drills are visible with the others
    own = learner_client.get(f"/interview/{interview.pk}/").content.decode()
    assert 'id="share-scope"' in own and "part of your drill history either way" in own
    response = as_(teacher).get(shared_url)
    html = response.content.decode()
    assert response.status_code == 200 and "Mock interview report" in html
    assert 'id="share-form"' not in html and "/drill/attempts/" not in html  # read-only
    assert f"{learner.username}" in html
    learner_page = as_(teacher).get(f"/cohorts/{cohort.pk}/learners/{learner.pk}/").content
    assert shared_url in learner_page.decode()
    for intruder in (other_teacher, classmate, bob):
        assert as_(intruder).get(shared_url).status_code == 404
        assert as_(intruder).get(f"/interview/{interview.pk}/").status_code == 404
        assert (
            as_(intruder).post(f"/interview/{interview.pk}/share/", {"shared": "0"}).status_code
            == 404
        )
    assert (
        as_(other_teacher).get(f"/cohorts/{elsewhere.pk}/interviews/{interview.pk}/").status_code
        == 404
    )
    # The learner (a member, not a teacher) cannot use the instructor URL either.
    assert learner_client.get(shared_url).status_code == 404
    # Unsharing takes it away again.
    learner_client.post(f"/interview/{interview.pk}/share/", {"shared": "0"})
    assert as_(teacher).get(shared_url).status_code == 404


def test_an_unfinished_interview_cannot_be_shared(learner_client, scripted):
    url = learner_client.post("/interview/start/")["Location"]
    assert learner_client.post(f"{url}share/", {"shared": "1"}).status_code == 404
    assert MockInterview.objects.get().shared_at is None


def test_an_interview_in_progress_has_its_own_page_title(learner_client, scripted):
    """The intro page and the page between traces were both titled "Mock interview"."""
    intro = learner_client.get("/interview/").content.decode()
    url = learner_client.post("/interview/start/")["Location"]
    between = learner_client.get(url).content.decode()
    title = re.compile(r"<title>(.*?)</title>", re.S)
    assert title.search(between).group(1).startswith("Mock interview, 0 of 5 traces done")
    assert title.search(intro).group(1) != title.search(between).group(1)


def test_a_trace_given_up_reads_as_given_up_not_as_a_wrong_signature(learner_client, scripted):
    """Giving up one trace of five (the others right): the report said "You said (blank)" where
    the trainer's history says "gave up", and told the learner "you named the wrong signature
    most often" though they had named none."""
    interview_url = learner_client.post("/interview/start/")["Location"]
    for i in range(5):
        location = learner_client.post(f"{interview_url}next/")["Location"]
        attempt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
        if i == 0:
            learner_client.post(f"/drill/attempts/{attempt.pk}/abandon/")
        else:
            learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    html = learner_client.get(interview_url).content.decode()
    assert "Mock interview report" in html
    first = re.search(r'<tr class="interview-trace" data-n="1".*?</tr>', html, re.S)[0]
    cells = re.findall(r"<td>(.*?)</td>", first)
    assert cells[:2] == [title_of("straggler"), "gave up"]
    assert "(blank)" not in html
    next_step = re.search(r'<p id="next-step">(.*?)</p>', html, re.S)[1]
    assert "signature of " + title_of("straggler") in next_step
    assert "named the wrong signature" not in next_step
    assert "without a diagnosis" in next_step


def test_the_next_step_counts_signatures_named_wrong_apart_from_traces_left_unanswered():
    titles = {"3": "Signature"}
    both = interviews.next_step("straggler", {"3": 2}, titles, unnamed=1)
    assert "1 named wrong, 1 left without a diagnosis" in both
    assert "you named the wrong signature most often" in interviews.next_step(
        "straggler", {"3": 2}, titles
    )


def wrong_value(attempt: Attempt) -> dict[str, str]:
    """Right signature, measurement named, its value far off (sentence 4b wrong)."""
    answer = right_answer(attempt)
    return {**answer, "measurement_value": f"{float(answer['measurement_value']) * 5 + 50:.3f}"}


def test_a_given_up_trace_and_the_advice_are_about_that_trace(learner_client, scripted):
    """The third trace (the only launch-bound one) given up, the four others answered with the
    measurement's value wrong. The report said "You said (blank)" and "Drill Launch-bound
    inference traces and say sentence 4b aloud": 4b was not graded on the trace given up."""
    learner_client.post("/interview/start/")
    interview = MockInterview.objects.get()
    url = f"/interview/{interview.pk}/"
    for i in range(5):
        attempt_url = learner_client.post(f"{url}next/")["Location"]
        attempt = Attempt.objects.select_related("trace").get(pk=attempt_url.split("/")[3])
        if i == 2:
            learner_client.post(f"/drill/attempts/{attempt.pk}/abandon/")
        else:
            learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", wrong_value(attempt))
    html = learner_client.get(url).content.decode()
    assert "Mock interview report" in html
    third = re.search(r'<tr class="interview-trace" data-n="3".*?</tr>', html, re.S).group(0)
    assert "gave up" in third and "(blank)" not in html
    weakest = re.search(r'id="weakest" data-scenario="([\w-]*)"', html).group(1)
    assert weakest == "launch-bound"
    advice = re.search(r'<p id="next-step">(.*?)</p>', html, re.S).group(1)
    assert "4b" not in advice
    assert "Drill the signature of Launch-bound inference" in advice


def test_after_the_fix_waits_for_the_report(learner_client, scripted):
    """Mid-interview, a graded trace's "after the fix" answered with both step times and, for a
    healthy trace, "Nothing needed fixing": a reveal before the report, one URL away."""
    learner_client.post("/interview/start/")
    interview = MockInterview.objects.get()
    url = f"/interview/{interview.pk}/"
    graded = []
    for i in range(5):
        attempt_url = learner_client.post(f"{url}next/")["Location"]
        attempt = Attempt.objects.select_related("trace").get(pk=attempt_url.split("/")[3])
        learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
        graded.append(attempt)
        if i < 4:
            for done in graded:
                r = learner_client.get(f"/drill/attempts/{done.pk}/after-fix/")
                assert r.status_code == 404, (i, done.scenario)
    assert "Mock interview report" in learner_client.get(url).content.decode()
    healthy = next(a for a in graded if a.scenario == "healthy")
    r = learner_client.get(f"/drill/attempts/{healthy.pk}/after-fix/")
    assert r.status_code == 200 and 'id="after-fix"' in r.content.decode()


def test_no_reveal_of_an_answered_trace_before_the_interviews_end(learner_client, scripted):
    """The reveal's "after the fix" names the fix (or "nothing needed fixing") and the key's step
    time, and the trainer's "Recent drills" says what each trace was: between traces either would
    be the reveal the interview holds back to its end."""
    interview_url = learner_client.post("/interview/start/")["Location"]
    answered: list[Attempt] = []
    for _ in range(5):
        location = learner_client.post(f"{interview_url}next/")["Location"]
        attempt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
        learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
        answered.append(attempt)
        if len(answered) < 5:
            for earlier in answered:
                response = learner_client.get(f"/drill/attempts/{earlier.pk}/after-fix/")
                assert response.status_code == 404, response.content.decode()[:300]
            trainer = learner_client.get("/drill/").content.decode()
            assert "Recent drills" not in trainer
            assert not any(title_of(a.scenario) in trainer for a in answered)
    learner_client.get(interview_url)  # the report
    response = learner_client.get(f"/drill/attempts/{answered[0].pk}/after-fix/")
    assert response.status_code == 200 and "After the fix" in response.content.decode()
    trainer = learner_client.get("/drill/").content.decode()
    assert "Recent drills" in trainer and title_of(answered[0].scenario) in trainer


def messages_on(html: str) -> list[str]:
    found = re.search(r'<ul class="messages">(.*?)</ul>', html, re.S)
    return (
        [re.sub(r"\s+", " ", m).strip() for m in re.findall(r"<li[^>]*>(.*?)</li>", found[1])]
        if found
        else []
    )


def test_an_answer_past_the_traces_clock_is_not_graded_and_the_learner_is_told(
    learner_client, scripted
):
    """An interview trace answered ten minutes after it was dealt was graded as if in time: the
    report marked its sentences right. It closes as expired, as a drill left past its clock does
    (only the clock's time kept), and the learner reads why their answer was not recorded."""
    from datetime import timedelta

    from django.utils import timezone

    from drills.trainer import services

    url = learner_client.post("/interview/start/")["Location"]
    location = learner_client.post(f"{url}next/")["Location"]
    attempt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - timedelta(minutes=10))

    page = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt), follow=True
    )

    assert page.redirect_chain[-1][0] == url
    shown = messages_on(page.content.decode())
    assert any("clock on this interview trace had run out" in m for m in shown), shown
    assert any("not recorded" in m for m in shown), shown
    attempt.refresh_from_db()
    assert attempt.closed == "expired" and attempt.answer_scenario == ""
    assert attempt.scenario_correct is False and attempt.over_time is True
    assert attempt.elapsed_s == pytest.approx(services.time_limit_s() + 2.0)  # the clock's time
    # A second send of the same answer says it was not recorded either.
    again = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt), HTTP_HX_REQUEST="true"
    )
    assert again.status_code == 204
    shown = messages_on(learner_client.get(again["HX-Redirect"], follow=True).content.decode())
    assert any("not recorded" in m and "interview trace" in m for m in shown), shown
    # The report, at the end, counts it as out of time with no answer.
    for _ in range(4):
        location = learner_client.post(f"{url}next/")["Location"]
        nxt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
        learner_client.post(f"/drill/attempts/{nxt.pk}/diagnosis/", right_answer(nxt))
    html = learner_client.get(url).content.decode()
    first = re.search(r'<tr class="interview-trace" data-n="1".*?</tr>', html, re.S)[0]
    assert "no answer before the clock ran out" in first and "over time" in first
    assert 'data-correct="yes"' not in first


def test_an_answer_inside_the_clock_and_its_grace_is_graded(learner_client, scripted):
    from datetime import timedelta

    from django.utils import timezone

    url = learner_client.post("/interview/start/")["Location"]
    location = learner_client.post(f"{url}next/")["Location"]
    attempt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - timedelta(seconds=115))
    page = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt), follow=True
    )
    assert not any("not recorded" in m for m in messages_on(page.content.decode()))
    attempt.refresh_from_db()
    assert attempt.closed == "" and attempt.scenario_correct is True


def test_a_trace_left_past_its_clock_is_closed_when_the_next_is_asked_for(learner_client, scripted):
    """Asking for the next trace resumed a trace whose clock had run out, at 0:00, and took an
    answer for it whenever it came."""
    from datetime import timedelta

    from django.utils import timezone

    url = learner_client.post("/interview/start/")["Location"]
    location = learner_client.post(f"{url}next/")["Location"]
    Attempt.objects.filter(pk=location.split("/")[3]).update(
        served_at=timezone.now() - timedelta(minutes=10)
    )
    page = learner_client.post(f"{url}next/", follow=True)
    assert page.redirect_chain[-1][0] != location
    assert any("clock ran out" in m for m in messages_on(page.content.decode()))
    assert Attempt.objects.get(pk=location.split("/")[3]).closed == "expired"
