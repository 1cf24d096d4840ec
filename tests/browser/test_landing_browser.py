"""The landing page in Chromium: the picture loads, the favicon resolves, nothing 404s."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def test_landing_page_loads_its_trace_picture_and_favicon_without_a_404(browser, live_server):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(f"{live_server.url}/")
    page.wait_for_load_state("networkidle")
    assert page.locator("h1").inner_text().startswith("Read a GPU trace")
    width = page.evaluate("document.querySelector('.landing-shot img').naturalWidth")
    assert width > 500
    icon = page.evaluate(
        "fetch('/favicon.ico').then(r => [r.status, r.headers.get('content-type')])"
    )
    assert icon[0] == 200 and "svg" in icon[1]
    assert not failed, failed
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "landing.png"), full_page=True)
    # A phone: the page does not scroll sideways.
    page.set_viewport_size({"width": 390, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    context.close()
