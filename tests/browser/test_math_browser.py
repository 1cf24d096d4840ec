"""The mental-math trainer in Chromium: one single drill to its worked steps, and a short sprint."""

from __future__ import annotations

import re

import pytest

from drills.models import MathAttempt, MathSprint
from tests.conftest import PASSWORD
from tests.drills.test_math_web import right_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ATTEMPT_URL = re.compile(r"/math/attempts/([0-9a-f-]{36})/")
SPRINT_URL = re.compile(r"/math/sprint/([0-9a-f-]{36})/")


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # CSP violations and script errors land in the console; failed loads are checked by URL
    # below (the console line doesn't name it), so the browser's own /favicon.ico probe is fine.
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.on(
        "response",
        lambda r: (
            errors.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico")
            else None
        ),
    )
    page.errors = errors
    yield page
    context.close()


def sign_in(page, live_server, make_user):
    make_user("hopper")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "hopper")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def test_single_drill_shows_the_worked_steps(page, live_server, make_user):
    sign_in(page, live_server, make_user)
    page.click("nav >> text=Math")
    page.wait_for_url(f"{live_server.url}/math/")
    page.click("[data-start-family=busbw]")
    page.wait_for_url(ATTEMPT_URL)
    attempt = MathAttempt.objects.get(pk=ATTEMPT_URL.search(page.url).group(1))
    assert attempt.family == "busbw"
    page.wait_for_selector("#math-clock .clock-value")
    assert page.inner_text("#math-prompt") == attempt.problem["prompt"]
    assert page.locator(".math-steps").count() == 0

    page.fill("input[name=answer]", "fast")  # unreadable: explained, nothing recorded
    page.click("#math-answer-form button[type=submit]")
    page.wait_for_selector("#answer-error")
    assert "Couldn" in page.inner_text("#answer-error")
    attempt.refresh_from_db()
    assert attempt.submitted_at is None

    page.fill("input[name=answer]", right_text(attempt, with_unit=True))
    page.click("#math-answer-form button[type=submit]")
    page.wait_for_selector("#math-reveal[data-correct=true]")
    steps = page.locator(".math-steps li")
    assert steps.count() == len(attempt.problem["steps"])
    assert steps.first.inner_text() == attempt.problem["steps"][0]
    assert attempt.problem["unit"] in page.inner_text(".answer-value")
    attempt.refresh_from_db()
    assert attempt.correct is True
    assert page.errors == []


def test_a_short_sprint_with_two_answers(page, live_server, make_user):
    sign_in(page, live_server, make_user)
    page.goto(f"{live_server.url}/math/")
    page.click("#start-sprint")
    page.wait_for_url(SPRINT_URL)
    sprint = MathSprint.objects.get(pk=SPRINT_URL.search(page.url).group(1))
    page.wait_for_selector("#sprint-clock .clock-value")

    for n in (1, 2):
        problem_id = page.get_attribute(".math-problem", "data-attempt")
        attempt = MathAttempt.objects.get(pk=problem_id, sprint=sprint)
        page.fill("input[name=answer]", right_text(attempt, with_unit=n == 1))
        page.press("input[name=answer]", "Enter")
        page.wait_for_selector(f"#sprint-score[data-score='{n}']")
        page.wait_for_selector("#sprint-feedback[data-correct=true]")
        assert page.get_attribute(".math-problem", "data-attempt") != problem_id
        # the next problem's field has the focus, ready for typing
        page.wait_for_selector("input[name=answer]:focus")

    sprint.refresh_from_db()
    assert (sprint.score, sprint.attempted) == (2, 2)
    assert page.errors == []
