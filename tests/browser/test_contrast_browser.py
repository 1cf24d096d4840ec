"""In Chromium: a learner who confuses a lookalike pair gets a contrast trial within the next
three drills, and the reveal's fixed twin shows the expected step time.

The confused drill is a straggler trace stocked in the pool at a fixed seed (real engine output);
the drills after it are cheap healthy traces. The confusion's commit has the trial's pair drawn
ahead (``engine.generate_pair``; the worker's task, run here in the committing request as there is
no worker beside the live server) and the deal serves that pair.
"""

from __future__ import annotations

import itertools
import re

import pytest

from drills.contrast import services as contrast
from drills.models import Attempt, Card, PreparedTrial
from scenarios import engine, pool
from scenarios.models import Trace
from tests.browser.test_drill_e2e import ATTEMPT_URL, commit, screenshot, sign_up
from tests.conftest import script_scheduler

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TRUE, TWIN = "straggler", "bandwidth-bound-collective"
SEED = 13  # a small straggler workload (2 % between the fixed twin's step and the key's)
TRIAL_URL = re.compile(r"/drill/trials/([0-9a-f-]{36})/$")
NEXT_DRILL = ".next-actions button:has-text('Next drill')"


@pytest.fixture
def page(open_page, live_server):
    # a long timeout: the commit that confuses the pair draws it ahead
    return open_page(width=1400, timeout_ms=90_000)


def ms(text: str) -> float:
    return float(re.search(r"([\d.]+)\s*ms", text.replace(" ", " ")).group(1))


def views(page) -> list[dict]:
    return page.evaluate(
        "() => ['timeline-left', 'timeline-right'].map("
        "(id) => document.getElementById(id).viewer.getView())"
    )


def test_a_lookalike_confusion_brings_a_contrast_trial_and_the_fix_shows(
    page, live_server, monkeypatch
):
    pool.build_trace(TRUE, SEED).save()  # the pool holds one straggler trace
    script_scheduler(monkeypatch, itertools.chain([TRUE], itertools.repeat("healthy")))
    monkeypatch.setattr(pool, "schedule_refill", lambda scenario: None)
    sign_up(page, live_server, "contrastee")

    # 1. The straggler trace, named as its lookalike.
    page.goto(f"{live_server.url}/drill/")
    page.click("#start-drill")
    page.wait_for_url(ATTEMPT_URL)
    drill = Attempt.objects.select_related("trace").get(pk=ATTEMPT_URL.search(page.url).group(1))
    assert drill.scenario == TRUE and drill.trace.seed == SEED
    page.wait_for_selector("#timeline canvas")
    say_as(page, drill, TWIN)
    page.wait_for_selector("[data-scenario]")
    drill.refresh_from_db()
    assert drill.answer_scenario == TWIN and not drill.scenario_correct
    pair = Card.objects.get(kind=Card.Kind.PAIR)
    assert set(pair.item.split("|")) == {TRUE, TWIN}
    prepared = PreparedTrial.objects.get(item=pair.item)

    # The reveal's "after the fix": the same workload regenerated with the fix applied.
    page.wait_for_selector("#after-fix #step-after")
    page.wait_for_selector("#after-fix .compare-side:nth-child(1) canvas")
    page.wait_for_selector("#after-fix .compare-side:nth-child(2) canvas")
    drill.refresh_from_db()
    twin = Trace.objects.get(pk=drill.fixed_trace_id)
    g = drill.trace.key["grading"]
    shown_after = ms(page.inner_text("#step-after"))
    shown_expected = ms(page.inner_text("#step-expected"))
    assert shown_after == pytest.approx(twin.key["grading"]["step_ms"], abs=0.05)
    assert shown_expected == pytest.approx(g["expected_step_ms"], abs=0.05)
    assert shown_after == pytest.approx(shown_expected, rel=0.05)
    assert ms(page.inner_text("#step-before")) == pytest.approx(g["step_ms"], abs=0.05)
    screenshot(page, "after-the-fix.png")

    # 2. Within the next three drills: the contrast trial on the pair.
    for _deal in range(3):
        page.click(NEXT_DRILL)
        page.wait_for_url(re.compile(r"/drill/(trials|attempts)/[0-9a-f-]{36}/$"))
        if TRIAL_URL.search(page.url):
            break
        served = Attempt.objects.select_related("trace").get(
            pk=ATTEMPT_URL.search(page.url).group(1)
        )
        commit(page, served)
    else:
        raise AssertionError("no contrast trial within three drills of the confusion")
    trial = Attempt.objects.select_related("trace", "partner").get(
        pk=TRIAL_URL.search(page.url).group(1)
    )
    assert trial.kind == Attempt.Kind.CONTRAST and trial.item == pair.item
    assert {trial.trace_id, trial.partner_id} == {prepared.first_id, prepared.second_id}
    assert (
        page.inner_text("#trial-title")
        == f"Contrast trial: which one is {engine.title_of(trial.scenario)}?"
    )
    assert page.get_attribute("#clock", "data-limit") == "45"

    # Both traces drawn on one time scale; zooming one moves the other.
    page.wait_for_selector("#timeline-left canvas")
    page.wait_for_selector("#timeline-right canvas")
    left, right = views(page)
    assert left == right
    page.hover("#timeline-left canvas.tt-canvas")
    page.keyboard.press("w")
    page.keyboard.press("w")
    zoomed_left, zoomed_right = views(page)
    assert zoomed_left["t1"] - zoomed_left["t0"] < left["t1"] - left["t0"]
    assert zoomed_right == pytest.approx(zoomed_left)
    screenshot(page, "contrast-trial.png")

    # 3. Answer: the right side and a measurement that tells them apart.
    side = contrast.target_side(trial)
    target, other = (
        (trial.trace.key, trial.partner.key)
        if side == contrast.LEFT
        else (trial.partner.key, trial.trace.key)
    )
    page.check(f"input[name=side][value={side}]")
    page.select_option("#id_measurement", contrast.telling_measurements(target, other)[0])
    page.click("#trial-form button[type=submit]")
    page.wait_for_selector("#difference")
    assert page.get_attribute(".truth-side", "data-side") == side
    assert "— correct" in page.inner_text("#reveal .verdict")
    trial.refresh_from_db()
    assert trial.scenario_correct and trial.measurement_correct
    screenshot(page, "contrast-reveal.png")

    # 4. The dashboard shows the pair's discrimination.
    page.goto(f"{live_server.url}/dashboard/")
    row = page.inner_text(f"[data-pair-card='{pair.item}']")
    assert engine.title_of(TRUE) in row and engine.title_of(TWIN) in row
    assert "1 of 1 trial right" in row
    assert page.errors == []


def say_as(page, attempt: Attempt, scenario: str) -> None:
    """The five sentences from the key's graded values, with ``scenario`` as the signature."""
    g = attempt.trace.key["grading"]
    measurement = g["measurements_accepted"][0]
    page.fill("#id_step_ms", f"{g['step_ms']:.3f}")
    page.fill("#id_gap_ms", f"{g['gap_ms']:.3f}")
    page.select_option("#id_scenario", scenario)
    page.select_option("#id_measurement", measurement)
    page.fill("#id_measurement_value", f"{g['measurements'][measurement]['value']:.3f}")
    page.select_option("#id_fix", g["fixes_accepted"][0])
    page.fill("#id_expected_step_ms", f"{g['expected_step_ms']:.3f}")
    page.click("#diagnosis-form button[type=submit]")
