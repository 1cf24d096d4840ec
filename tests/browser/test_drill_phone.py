"""The drill page on a phone-sized screen (390 px wide): no horizontal page scroll, a narrow
label column, and the timeline answers to touch (drag pans, pinch zooms).
Screenshots go to test-artifacts/viewer/ (git-ignored)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "viewer"
ATTEMPT_URL = re.compile(r"/drill/attempts/([0-9a-f-]{36})/")


@pytest.fixture
def phone(browser, live_server):
    ctx = browser.new_context(
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        has_touch=True,
        is_mobile=True,
    )
    pg = ctx.new_page()
    pg.set_default_timeout(20_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"{live_server.url}/accounts/signup/")
    pg.fill("#id_username", "phoneuser")
    pg.fill("#id_password1", "long-enough-pass-91")
    pg.fill("#id_password2", "long-enough-pass-91")
    pg.click("button[type=submit]")
    pg.wait_for_url(f"{live_server.url}/")
    pg.goto(f"{live_server.url}/drill/")
    pg.check("input[name=mode][value=practice]")
    pg.click("#start-drill")
    pg.wait_for_url(ATTEMPT_URL)
    pg.wait_for_selector("#timeline canvas.tt-canvas")
    yield pg
    assert not errors, errors
    ctx.close()


def overflowing(pg) -> list[str]:
    """Elements whose right edge passes the viewport (what makes a page scroll sideways)."""
    return pg.evaluate(
        """() => { const W = document.documentElement.clientWidth, out = [];
        for (const e of document.querySelectorAll('body *')) {
          const r = e.getBoundingClientRect();
          if (r.width && r.right > W + 1 && getComputedStyle(e).position !== 'fixed')
            out.push(e.tagName + '.' + e.className + ' ' + Math.round(r.right));
        }
        return out.slice(0, 12); }"""
    )


def test_drill_page_fits_390px_with_a_narrow_label_column(phone):
    pg = phone
    sw = pg.evaluate("() => document.documentElement.scrollWidth")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(ARTIFACTS / "drill-390px.png"), full_page=True)
    assert sw <= 390, (sw, overflowing(pg))
    label_w = pg.evaluate(
        "() => { const v = document.querySelector('#timeline').viewer;"
        " return v.timeToClientX(v.getView().t0) - v.canvas.getBoundingClientRect().left; }"
    )
    track_w = pg.evaluate(
        "() => document.querySelector('#timeline').viewer.canvas.getBoundingClientRect().width"
    )
    assert label_w <= 0.3 * track_w, (label_w, track_w)
    # the navigation and the framing are readable, not cut off
    for sel in (".topbar nav", ".framing"):
        box = pg.locator(sel).first.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 391, (sel, box)


def test_the_dashboard_fits_a_phone_and_a_1280_px_window(phone, live_server, browser):
    """Wide tables and charts scroll inside their cards on a phone; at 1280 px the per-scenario
    table's columns all show without scrolling."""
    from drills.models import Attempt
    from drills.trainer import services

    services.close_attempt(Attempt.objects.get(submitted_at__isnull=True), "abandoned")
    pg = phone
    pg.goto(f"{live_server.url}/dashboard/")
    pg.wait_for_selector("table.dash-table")
    sw = pg.evaluate("() => document.documentElement.scrollWidth")
    assert sw <= 390, (sw, overflowing(pg))

    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.add_cookies(pg.context.cookies())
    wide = ctx.new_page()
    wide.goto(f"{live_server.url}/dashboard/")
    box = wide.evaluate(
        """() => { const s = document.querySelector('table.dash-table').parentElement;
        return [s.clientWidth, s.scrollWidth, document.documentElement.scrollWidth]; }"""
    )
    ctx.close()
    assert box[1] <= box[0] and box[2] <= 1280, box
