"""A learner's whole loop in Chromium: sign up → drill → diagnose → reveal → download."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from drills.models import Attempt

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ATTEMPT_URL = re.compile(r"/drill/attempts/([0-9a-f-]{36})/")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def screenshot(page, name: str) -> None:
    """Keep a full-page screenshot under test-artifacts/ (git-ignored) for review."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


@pytest.fixture
def page(open_page, live_server):
    return open_page(width=1280, height=800, timeout_ms=20_000, accept_downloads=True)


def sign_up(page, live_server, username="turing"):
    page.goto(f"{live_server.url}/accounts/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", "long-enough-pass-91")
    page.fill("#id_password2", "long-enough-pass-91")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def start_drill(page, live_server, mode="timed") -> Attempt:
    page.goto(f"{live_server.url}/drill/")
    page.check(f"input[name=mode][value={mode}]")
    page.click("#start-drill")
    page.wait_for_url(ATTEMPT_URL)
    attempt_id = ATTEMPT_URL.search(page.url).group(1)
    return Attempt.objects.select_related("trace").get(pk=attempt_id)


def canvas_ink(page) -> float:
    """Share of sampled canvas pixels that differ from the top-left background pixel."""
    return page.evaluate(
        """() => {
        const c = document.querySelector('#timeline canvas');
        if (!c) return 0;
        const ctx = c.getContext('2d');
        const {width: w, height: h} = c;
        const data = ctx.getImageData(0, 0, w, h).data;
        const bg = data.slice(0, 3);
        let ink = 0, n = 0;
        for (let i = 0; i < data.length; i += 4 * 97) {
          n++;
          const d = Math.abs(data[i] - bg[0]) + Math.abs(data[i+1] - bg[1])
            + Math.abs(data[i+2] - bg[2]);
          if (d > 30) ink++;
        }
        return ink / n;
    }"""
    )


def commit(page, attempt: Attempt, *, right=True, **numbers):
    """Say the five sentences from the key's graded values (``numbers`` overrides a field)."""
    key = attempt.trace.key
    g = key["grading"]
    measurement = g["measurements_accepted"][0]
    values = {
        "step_ms": g["step_ms"],
        "gap_ms": g["gap_ms"],
        "measurement_value": g["measurements"][measurement]["value"],
        "expected_step_ms": g["expected_step_ms"],
        **numbers,
    }
    page.fill("#id_step_ms", f"{values['step_ms']:.3f}")
    page.fill("#id_gap_ms", f"{values['gap_ms']:.3f}")
    page.select_option("#id_scenario", key["scenario"] if right else "healthy")
    page.select_option("#id_measurement", measurement)
    page.fill("#id_measurement_value", f"{values['measurement_value']:.3f}")
    page.select_option("#id_fix", g["fixes_accepted"][0])
    page.fill("#id_expected_step_ms", f"{values['expected_step_ms']:.3f}")
    page.fill("#id_arithmetic", "step − gap ≈ expected")
    page.click("#diagnosis-form button[type=submit]")
    page.wait_for_selector("[data-scenario]")
    # the reveal then fetches "after the fix" (the twin was made at the commit: the browser
    # tests' stand-in for the worker runs in the committing request); let it load
    page.wait_for_load_state("networkidle")


def test_sign_up_drill_diagnose_reveal_download(page, live_server, tmp_path):
    sign_up(page, live_server)
    attempt = start_drill(page, live_server)
    page.wait_for_selector("#timeline canvas")
    page.wait_for_timeout(300)
    assert canvas_ink(page) > 0.05, "the timeline canvas is blank"
    span = (
        "() => { const v = document.querySelector('#timeline').viewer.getView();"
        " return v.t1 - v.t0 }"
    )
    before = page.evaluate(span)
    page.focus("#timeline canvas.tt-canvas")
    page.keyboard.press("w")
    page.keyboard.press("w")
    assert page.evaluate(span) < 0.8 * before, "W did not zoom the drill's timeline"
    page.keyboard.press("d")
    clock = page.locator("#clock .clock-value")
    first = clock.inner_text()
    page.wait_for_timeout(1300)
    assert clock.inner_text() != first, "the clock is not counting down"
    assert attempt.scenario not in page.content().split("<select")[0]

    with page.expect_download() as download_info:
        page.click("text=Export to Perfetto (.json)")
    download = download_info.value
    assert attempt.scenario not in download.suggested_filename
    path = tmp_path / download.suggested_filename
    download.save_as(path)
    exported = json.loads(path.read_text())
    assert any(e.get("name", "").startswith("ProfilerStep#") for e in exported["traceEvents"])

    screenshot(page, "drill.png")
    commit(page, attempt)
    truth = page.locator("[data-scenario]")
    assert truth.get_attribute("data-scenario") == attempt.scenario
    assert page.locator("#reveal").is_visible()
    assert "under 2:00" in page.locator("#reveal").inner_text()
    rows = page.locator("tr.sentence")
    assert rows.count() == 7
    assert page.locator('tr.sentence[data-correct="yes"]').count() == 7
    # "Show me" on the gap row zooms the timeline onto the longest idle stretch
    page.wait_for_function("() => document.querySelector('#timeline').viewer")
    whole = page.evaluate(span)
    page.click('tr.sentence[data-sentence="2"] button.show-me')
    gap = attempt.trace.key["grading"]["evidence"]["gap"][0]
    view = page.evaluate("() => document.querySelector('#timeline').viewer.getView()")
    assert view["t1"] - view["t0"] < whole
    assert view["t0"] <= gap["start_us"] and gap["end_us"] <= view["t1"]
    screenshot(page, "reveal.png")
    # on a phone the five rows stack inside their card instead of widening it (the page's own
    # width at 390 px is the viewer's concern)
    page.set_viewport_size({"width": 390, "height": 800})
    widths = page.evaluate(
        """() => { const t = document.querySelector('#sentences');
        return [t.scrollWidth, t.parentElement.clientWidth,
                getComputedStyle(t.querySelector('thead')).display]; }"""
    )
    assert widths[2] == "none" and widths[0] <= widths[1], widths
    screenshot(page, "reveal-390.png")
    attempt.refresh_from_db()
    assert attempt.rating == 3  # Good
    assert not page.errors, page.errors


def test_the_reveal_says_the_fixed_trace_is_being_drawn_until_the_worker_has_it(
    page, live_server, monkeypatch
):
    from drills.trainer import fixed
    from scenarios import background

    monkeypatch.setattr(background, "dispatch", lambda name, args, run: None)  # a busy worker
    sign_up(page, live_server)
    attempt = start_drill(page, live_server, mode="practice")
    commit(page, attempt)
    page.wait_for_selector("#after-fix-pending")
    assert "being drawn" in page.inner_text("#after-fix")
    fixed.make_twin(attempt.pk)  # the worker gets to it; the page, asking again, shows it
    page.wait_for_selector("#after-fix #step-after")
    page.wait_for_selector("#after-fix .compare-side:nth-child(2) canvas")
    assert page.locator("#after-fix-pending").count() == 0
    assert not page.errors, page.errors


def test_right_signature_with_a_number_off_is_graded_hard(page, live_server):
    sign_up(page, live_server, "noether")
    attempt = start_drill(page, live_server)
    step = attempt.trace.key["grading"]["step_ms"]
    commit(page, attempt, step_ms=step * 1.5)
    row = page.locator('tr.sentence[data-sentence="1"]')
    assert row.get_attribute("data-correct") == "no"
    assert "±10 %" in row.inner_text()
    attempt.refresh_from_db()
    assert attempt.scenario_correct and attempt.step_correct is False
    assert attempt.rating == 2  # Hard


def test_the_server_enforces_the_clock(page, live_server):
    sign_up(page, live_server, "hopper")
    attempt = start_drill(page, live_server)
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - timedelta(seconds=200))
    page.reload()
    page.wait_for_selector("#clock.over")
    # the same words as the reveal: the miss is the schedule's (accuracy counts the signature)
    assert "your schedule counts it as a miss" in page.locator("#clock .clock-label").inner_text()
    commit(page, attempt)
    assert "over 2:00 — your schedule counts it as a miss" in page.locator("#reveal").inner_text()
    attempt.refresh_from_db()
    assert attempt.over_time and attempt.rating == 1


def test_perfetto_only_mode_shows_no_timeline_and_no_framing(page, live_server):
    sign_up(page, live_server, "liskov")
    attempt = start_drill(page, live_server, mode="perfetto")
    assert page.locator("#timeline").count() == 0
    assert page.locator(".prompt").count() == 0
    assert page.locator("#open-perfetto").count() == 1
    commit(page, attempt)
    assert page.locator("[data-scenario]").get_attribute("data-scenario") == attempt.scenario


@pytest.mark.parametrize("debug", [False, True], ids=["deployed", "make-run-debug"])
def test_an_incomplete_diagnosis_shows_its_errors_in_place(page, live_server, settings, debug):
    """htmx 2 drops 4xx responses by default; the 400 with the re-rendered form is swapped in.
    Also with DEBUG on, as `make run` serves (django-htmx's debug helper, which the page must not
    load, replaces the whole document with any 4xx answer)."""
    settings.DEBUG = debug
    sign_up(page, live_server, username="hopper")
    attempt = start_drill(page, live_server)
    assert page.title().startswith("Drill")
    page.click("#diagnosis-form button[type=submit]")
    page.wait_for_selector("#form-errors")
    assert page.url.endswith(f"/drill/attempts/{attempt.pk}/")
    assert page.is_visible("header.topbar"), "the error partial replaced the whole page"
    assert page.evaluate("document.activeElement.id") == "id_step_ms"
    assert page.locator(".has-error").count() == 7  # every field but the optional arithmetic
    assert page.evaluate("document.styleSheets.length") >= 1
    assert page.locator("#timeline").count() == 1
    attempt.refresh_from_db()
    assert attempt.submitted_at is None
    assert not page.errors, page.errors
