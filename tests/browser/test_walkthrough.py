"""A walkthrough in Chromium: the timeline draws, Prev/Next (buttons and keys) move the view."""

from __future__ import annotations

import os

import pytest

from tests.conftest import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WALKTHROUGH = "/walkthroughs/walkthrough-exposed-allreduce/"


@pytest.fixture
def page(browser, live_server, make_user):
    make_user("grace")
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on(
        "console",
        lambda m: (
            m.type == "error"
            and not m.text.startswith("Failed to load resource")
            and errors.append(m.text)
        ),
    )
    page.on(
        "response",
        lambda r: (
            r.status >= 400
            and not r.url.endswith("/favicon.ico")
            and errors.append(f"{r.status} {r.url}")
        ),
    )
    page.errors = errors
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "grace")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    yield page
    context.close()


def canvas_ink(page) -> float:
    """Share of sampled pixels of the timeline's canvases that differ from the background."""
    return page.evaluate(
        """() => {
        let ink = 0, n = 0;
        for (const c of document.querySelectorAll('#timeline canvas')) {
          const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
          const bg = [d[0], d[1], d[2]];
          for (let i = 0; i < d.length; i += 4 * 89) {
            n++;
            const diff = Math.abs(d[i] - bg[0]) + Math.abs(d[i + 1] - bg[1])
              + Math.abs(d[i + 2] - bg[2]);
            if (diff > 24) ink++;
          }
        }
        return n ? ink / n : 0;
    }"""
    )


def view(page) -> list[float]:
    return page.evaluate(
        "() => { const v = document.querySelector('#timeline').viewer.getView();"
        " return [v.t0, v.t1]; }"
    )


def wait_view_settled(page) -> list[float]:
    last = None
    for _ in range(40):
        cur = view(page)
        if cur == last:
            return cur
        last = cur
        page.wait_for_timeout(100)
    return last


def shot(page, name: str) -> None:
    folder = os.environ.get("TRACK_SCREENSHOTS")
    if folder:
        page.screenshot(path=os.path.join(folder, name), full_page=False)


def test_walkthrough_draws_and_next_moves_the_view(page, live_server):
    page.goto(f"{live_server.url}{WALKTHROUGH}")
    page.wait_for_function("() => document.querySelector('#timeline').viewer !== undefined")
    page.wait_for_timeout(400)
    assert canvas_ink(page) > 0.02, "the timeline canvas is blank"

    first = wait_view_settled(page)
    assert page.locator(".wt-step.current").get_attribute("data-index") == "0"
    assert page.locator(".wt-prev").is_disabled()
    page.click(".wt-next")
    second = wait_view_settled(page)
    assert page.locator(".wt-step.current").get_attribute("data-index") == "1"
    assert second != first, "Next did not move the timeline"
    assert second[1] - second[0] < first[1] - first[0], "step focus should zoom in"
    assert page.locator(".wt-step.current .step-body").is_visible()
    assert not page.locator("#step-1 .step-body").is_visible()
    shot(page, "walkthrough.png")

    page.keyboard.press("ArrowRight")
    third = wait_view_settled(page)
    assert page.locator(".wt-step.current").get_attribute("data-index") == "2"
    assert third != second
    page.keyboard.press("ArrowLeft")
    assert page.locator(".wt-step.current").get_attribute("data-index") == "1"
    assert wait_view_settled(page) == second
    assert not page.errors, page.errors


def test_vocabulary_page_mounts_its_inline_timeline(page, live_server):
    page.goto(f"{live_server.url}/track/signature-exposed-allreduce/")
    host = page.locator(".inline-timeline .timeline-host")
    host.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => document.querySelector('.inline-timeline .timeline-host').viewer !== undefined"
    )
    assert host.locator("canvas").count() >= 1
    shot(page, "vocabulary.png")
    assert not page.errors, page.errors


def test_track_index_shows_progress_and_read_marks(page, live_server):
    page.goto(f"{live_server.url}/track/reading-order/")
    page.click(".readmark-btn")
    page.wait_for_selector(".readmark-btn.is-read")
    page.goto(f"{live_server.url}/track/")
    assert page.locator("#section-vocabulary .is-read").count() == 1
    assert page.evaluate("() => document.querySelector('.progress-bar').style.width") != "0%"
    shot(page, "index.png")
    assert not page.errors, page.errors


@pytest.mark.parametrize("width", [1280, 1440])
def test_the_toolbar_readout_shows_whole_in_a_walkthroughs_column(page, live_server, width):
    """The walkthrough's timeline sits in a column narrower than a drill's: the readout ("View …",
    "Drag to measure") takes a line of its own there rather than being cut."""
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}{WALKTHROUGH}")
    page.wait_for_selector("#timeline .tt-readout")
    cut = page.evaluate(
        """() => [...document.querySelectorAll('#timeline .tt-readout > span')]
        .filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().left <
                     e.closest('.tt-toolbar').getBoundingClientRect().left)
        .map(e => e.textContent)"""
    )
    assert cut == [], cut
    assert page.locator("#timeline .tt-range-out").inner_text() == "Drag to measure"
