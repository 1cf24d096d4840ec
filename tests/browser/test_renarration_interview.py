"""In Chromium: a walkthrough marked read comes back the next day as a re-narration (time travel:
the read mark's timestamp moved back a day), and a mock interview's report matches its five
attempts."""

from __future__ import annotations

import itertools
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from content.models import ReadMark
from content.pages import get_page
from drills.models import Attempt, MockInterview
from scenarios import pool
from tests.browser.test_drill_e2e import ATTEMPT_URL, screenshot, sign_up
from tests.conftest import script_scheduler

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHEAP_WALK = "walkthrough-launch-bound-inference"
INTERVIEW_URL = re.compile(r"/interview/([0-9a-f-]{36})/$")


@pytest.fixture
def page(open_page, live_server):
    return open_page(width=1280)


def say(page, attempt: Attempt, *, right: bool = True) -> None:
    """Fill the five sentences from the key's graded values and commit."""
    g = attempt.trace.key["grading"]
    measurement = g["measurements_accepted"][0]
    page.fill("#id_step_ms", f"{g['step_ms']:.3f}")
    page.fill("#id_gap_ms", f"{g['gap_ms']:.3f}")
    page.select_option("#id_scenario", attempt.scenario if right else "healthy")
    page.select_option("#id_measurement", measurement)
    page.fill("#id_measurement_value", f"{g['measurements'][measurement]['value']:.3f}")
    page.select_option("#id_fix", g["fixes_accepted"][0])
    page.fill("#id_expected_step_ms", f"{g['expected_step_ms']:.3f}")
    page.click("#diagnosis-form button[type=submit]")


def served(page) -> Attempt:
    page.wait_for_url(ATTEMPT_URL)
    return Attempt.objects.select_related("trace").get(pk=ATTEMPT_URL.search(page.url).group(1))


def test_a_walkthrough_read_yesterday_comes_back_as_a_renarration(page, live_server):
    walk = get_page(CHEAP_WALK)
    sign_up(page, live_server, "renarrator")
    page.goto(f"{live_server.url}{walk.url}")
    page.click(".readmark-btn")
    page.wait_for_selector(".readmark-btn.is-read")
    page.goto(f"{live_server.url}/")
    assert "No re-narration due" in page.inner_text("#practice-more")

    # The next day.
    ReadMark.objects.filter(slug=CHEAP_WALK).update(
        read_at=timezone.now() - timedelta(days=1, minutes=1)
    )
    page.goto(f"{live_server.url}/")
    assert "1 walkthrough re-narration due" in page.inner_text("#renarrations-due")
    assert walk.title not in page.content()
    page.click("#start-renarration")
    attempt = served(page)
    assert attempt.kind == Attempt.Kind.RENARRATION and attempt.trace.seed == walk.seed
    page.wait_for_selector("#timeline canvas")
    before_form = page.content().split('id="diagnosis-form"')[0]
    assert walk.title not in before_form and "Re-narration of a walkthrough" in before_form
    say(page, attempt)
    page.wait_for_url(re.compile(r"/renarrations/[0-9a-f-]{36}/$"))
    page.wait_for_selector("#narration")
    assert walk.title in page.inner_text("#renarration-title")
    assert page.locator('#sentences tr.sentence[data-correct="yes"]').count() == 7
    assert page.locator("#narration .wt-step").count() == len(walk.steps)
    page.wait_for_selector("#timeline canvas")  # "Show me" has the trace to zoom
    screenshot(page, "renarration.png")
    page.goto(f"{live_server.url}/")
    assert "No re-narration due" in page.inner_text("#practice-more")
    assert page.errors == []


def test_a_mock_interviews_report_matches_its_five_attempts(page, live_server, monkeypatch):
    script_scheduler(monkeypatch, itertools.cycle(["healthy", "launch-bound"]))
    monkeypatch.setattr(pool, "schedule_refill", lambda scenario: None)
    sign_up(page, live_server, "candidate")
    page.goto(f"{live_server.url}/interview/")
    page.click("#start-interview")
    page.wait_for_url(INTERVIEW_URL)
    for i in range(MockInterview.SIZE):
        assert f"{i} of 5 traces done" in page.inner_text("#interview-progress")
        page.click("#next-trace")
        attempt = served(page)
        page.wait_for_selector("#clock")
        say(page, attempt, right=i % 2 == 0)  # the launch-bound traces are named healthy
        page.wait_for_url(INTERVIEW_URL)
    page.wait_for_selector("#interview-traces")
    interview = MockInterview.objects.get()
    attempts = list(interview.attempts.order_by("served_at"))
    rows = page.locator("tr.interview-trace")
    assert rows.count() == 5
    fields = ["step_correct", "gap_correct", "scenario_correct", "measurement_correct",
              "value_correct", "fix_correct", "expected_correct"]  # fmt: skip
    for i, attempt in enumerate(attempts):
        row = rows.nth(i)
        assert row.get_attribute("data-scenario") == attempt.scenario
        assert float(row.get_attribute("data-elapsed")) == pytest.approx(
            attempt.elapsed_s, abs=0.06
        )
        marks = [m.get_attribute("data-correct") for m in row.locator("td.mark").all()]
        assert marks == [
            "none" if getattr(attempt, f) is None else "yes" if getattr(attempt, f) else "no"
            for f in fields
        ]
    right = sum(1 for a in attempts for f in fields if getattr(a, f) is True)
    assert page.inner_text("#summary-right") == str(right)
    assert page.get_attribute("#weakest", "data-scenario") == "launch-bound"
    assert "signature" in page.inner_text("#next-step")
    page.click("#share-toggle")
    page.wait_for_selector("text=Stop sharing")
    interview.refresh_from_db()
    assert interview.shared_at is not None
    screenshot(page, "interview-report.png")
    assert page.errors == []
