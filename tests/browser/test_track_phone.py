"""Track pages (and a contrast trial) on a phone: the page never scrolls sideways (a long inline
command or path wraps), and the page's own text comes before the track's 33-entry contents, which
fold under a summary that opens from the keyboard. At 1280 px the contents stay open beside the
page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.browser.test_phone_pages import signed_in, sticking_out

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# pages whose inline code (a long command, a path, a metric name) is wider than a phone
LONG_INLINE_CODE = [
    "/track/signature-input-starvation/",
    "/track/signature-allocator-stalls/",
    "/track/lab-a-torch-profiler/",
    "/track/tool-ncu/",
    "/track/tool-torch-profiler-hta/",
]


def test_track_pages_fit_a_phone(browser, live_server, learner):
    ctx, page = signed_in(browser, live_server, learner.username, 390)
    too_wide = {}
    for url in LONG_INLINE_CODE:
        page.goto(live_server.url + url)
        sw, inner = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        if sw > inner:
            too_wide[url] = (sw, inner, sticking_out(page))
    ctx.close()
    assert not too_wide, too_wide


def test_on_a_phone_the_page_comes_before_the_contents(browser, live_server, learner):
    ctx, page = signed_in(browser, live_server, learner.username, 390)
    page.goto(live_server.url + "/track/reading-order/")
    h1 = page.locator("main h1")
    assert h1.inner_text() == "The fixed reading order"
    assert h1.bounding_box()["y"] < 844, "the page's title is below the first screen"
    nav_link = page.locator(".track-nav a", has_text="Signature: straggler rank")
    assert not nav_link.is_visible()
    # the contents open from the keyboard
    summary = page.locator(".track-nav summary")
    assert summary.inner_text() == "Track contents"
    summary.focus()
    page.keyboard.press("Enter")
    assert nav_link.is_visible()
    ctx.close()


def test_on_a_desktop_the_contents_stay_open(browser, live_server, learner):
    ctx, page = signed_in(browser, live_server, learner.username, 1280)
    page.goto(live_server.url + "/track/reading-order/")
    assert page.locator(".track-nav a", has_text="Signature: straggler rank").is_visible()
    assert not page.locator(".track-nav summary").is_visible()
    ctx.close()


def test_every_tab_stop_on_a_track_page_is_visible(browser, live_server, learner):
    """Tabbing through a track page never lands on something invisible (the headings' "#"
    permalinks were transparent tab stops, and read as "link #" after every heading)."""
    ctx, page = signed_in(browser, live_server, learner.username, 1280)
    page.goto(live_server.url + "/track/tool-ncu/")
    assert page.locator(".prose h2").count() >= 3
    hidden, seen = [], 0
    for _ in range(120):
        page.keyboard.press("Tab")
        info = page.evaluate(
            """() => { const e = document.activeElement; if (!e || e === document.body) return null;
            let o = 1; for (let a = e; a; a = a.parentElement) o *= +getComputedStyle(a).opacity;
            const r = e.getBoundingClientRect();
            return {tag: e.tagName, text: (e.textContent || '').trim().slice(0, 30),
                    cls: e.className, visible: o > 0.2 && r.width > 0 && r.height > 0}; }"""
        )
        if info is None:
            break
        seen += 1
        if not info["visible"]:
            hidden.append(info)
    ctx.close()
    assert seen > 20
    assert not hidden, hidden[:5]


def test_a_contrast_trial_fits_a_phone(browser, live_server, learner, no_refill):
    """A trial past its clock on a phone: the page does not scroll sideways (the clock's
    "Over time — still commit, it counts as a miss" did not wrap, 46 px past a 375 px screen)."""
    from drills.models import Attempt
    from tests.drills.test_contrast import confuse

    confuse(learner, "launch-bound", "healthy")
    ctx, page = signed_in(browser, live_server, learner.username, 375)
    page.goto(live_server.url + "/drill/")
    page.click("#start-drill")
    page.wait_for_url("**/drill/trials/**")
    assert Attempt.objects.filter(kind=Attempt.Kind.CONTRAST).exists()
    # past its 45 s: the clock says so at length ("Over time — still commit, it counts as a miss")
    Attempt.objects.filter(kind=Attempt.Kind.CONTRAST).update(
        served_at=timezone.now() - timedelta(minutes=5)
    )
    page.reload()
    page.wait_for_selector("#timeline-right canvas")
    assert "Over time" in page.locator("#clock").inner_text()
    sw, inner = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    wide = sticking_out(page)
    ctx.close()
    assert sw <= inner, (sw, inner, wide)
