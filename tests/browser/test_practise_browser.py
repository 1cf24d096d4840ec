"""In Chromium: a straggler's reveal marks every waiting rank's wait, with labels that never
overlap, and "Practise this calculation" opens a math drill stated in this trace's numbers."""

from __future__ import annotations

import statistics

import pytest

from drills.models import MathAttempt
from drills.trainer import services
from tests.browser.test_drill_e2e import commit, page, sign_up, start_drill  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_straggler_reveal_marks_every_wait_and_practises_its_numbers(
    page,  # noqa: F811
    live_server,
    monkeypatch,
):
    monkeypatch.setattr(services, "next_scenario", lambda user, now=None, **_: "straggler")
    sign_up(page, live_server, "hopper")
    attempt = start_drill(page, live_server, mode="practice")
    key = attempt.trace.key
    commit(page, attempt)
    page.wait_for_function("() => document.querySelector('#timeline').viewer")

    page.click('tr.sentence[data-sentence="3"] button.show-me')
    layout = page.evaluate("() => document.querySelector('#timeline').viewer.highlightLayout()")
    evidence = key["evidence"]
    waits = [e for e in evidence if e["rank"] != key["facts"]["slowest_rank"]]
    facts = key["facts"]
    assert len(waits) >= (facts["world"] - 1) * facts["n_steps"]  # every waiting rank, every step
    assert len(layout["spans"]) == len(evidence)  # the whole trace in view: all of them drawn
    boxes = layout["labels"]
    assert boxes
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (
                a["x"] + a["w"] <= b["x"]
                or b["x"] + b["w"] <= a["x"]
                or a["y"] + a["h"] <= b["y"]
                or b["y"] + b["h"] <= a["y"]
            )
            assert apart, (a, b)

    page.click("#practise-math")
    page.wait_for_selector("#math-prompt")
    math = MathAttempt.objects.get(user__username="hopper")
    given = math.problem["given"]
    rc = key["facts"]["rank_compute_ms"]
    median = statistics.median(rc)
    assert math.family == "amdahl" and given["ranks"] == len(rc)
    assert given["slow_pct"] == round((max(rc) - median) / median * 100)
    prompt = page.locator("#math-prompt").inner_text()
    assert f"{len(rc)} ×" in prompt and f"{given['slow_pct']:g} %" in prompt
    answer = 100 * (1 - 1 / (1 + given["slow_pct"] / 100))
    page.fill("#id_answer", f"{answer:.3g} %")
    page.click("#math-answer-form button[type=submit]")
    page.wait_for_selector(".math-drill.revealed")
    math.refresh_from_db()
    assert math.correct is True
    assert not page.errors, page.errors
