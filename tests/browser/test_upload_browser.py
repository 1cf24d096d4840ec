"""Bring your own trace in Chromium: upload a real Kineto trace, wait for processing, read it in
the viewer, use a finding's "Show me", open it in Perfetto, delete it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from scenarios import perfetto_ui
from scenarios.uploads import Upload
from tests.browser.test_drill_e2e import sign_up
from tests.browser.test_perfetto_ui import ARTIFACTS, PROBE, watch
from tests.browser.test_phone_pages import sticking_out

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
REAL = Path(__file__).resolve().parents[1] / "data" / "real" / "sampled_rank-0.json.gz"


@pytest.fixture
def process_inline(monkeypatch):
    """Process the upload in the server's own thread, as embedded mode does: with a broker
    configured (CI) no worker runs beside the live server."""
    from scenarios.tasks import process_upload

    monkeypatch.setattr(process_upload, "delay", lambda *a: process_upload.apply(args=a))


def test_upload_view_perfetto_delete(browser, live_server, process_inline):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    sign_up(page, live_server, "hopper")
    page.click("nav >> text=My traces")
    page.set_input_files("#id_trace", str(REAL))
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r"/traces/upload/[0-9a-f-]{36}/$"))
    # processing finishes (in-process here); the page shows the viewer and the overview
    page.wait_for_selector("#timeline canvas", timeout=60_000)
    assert page.locator("#overview-table tbody tr").count() >= 2
    assert page.locator("#findings li, #no-findings").count() >= 1
    if page.locator("button.show-me").count():
        before = page.evaluate("document.getElementById('timeline').viewer.getView()")
        page.locator("button.show-me").first.click()
        after = page.evaluate("document.getElementById('timeline').viewer.getView()")
        assert after["t1"] - after["t0"] < before["t1"] - before["t0"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "upload-detail.png"), full_page=True)
    if perfetto_ui.available():
        with context.expect_page() as info:
            page.locator("#open-perfetto").click()
        tab = info.value
        dialogs = watch(tab)
        deadline = time.monotonic() + 150
        refs: list[str] = []
        while time.monotonic() < deadline and not any(r.startswith("rank 0 GPU") for r in refs):
            state = tab.evaluate(PROBE)
            assert not dialogs and state["modal"] is None and state["failure"] is None, state
            refs = [r for r in state["refs"] if r]
            time.sleep(0.5)
        assert any(r.startswith("rank 0 GPU") for r in refs), refs
        tab.close()
    # deleting asks first, naming the file: answering Cancel keeps the trace
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.click("#delete-upload")
    page.wait_for_timeout(300)
    assert asked and asked[0].startswith(f"Delete {REAL.name}?"), asked
    assert Upload.objects.exists() and re.search(r"/traces/upload/[0-9a-f-]{36}/$", page.url)
    page.once("dialog", lambda d: d.accept())
    page.click("#delete-upload")
    page.wait_for_url(f"{live_server.url}/traces/upload/")
    assert not Upload.objects.exists()
    assert "No uploads yet" in page.content()
    context.close()


def test_an_analysed_upload_fits_a_phone(browser, live_server, process_inline):
    """Its wide tables scroll inside their cards; a visually hidden column label positioned
    outside its scrolling box made the whole page scroll sideways (1176 px on a 390 px phone)."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_up(page, live_server, "liskov")
    page.goto(f"{live_server.url}/traces/upload/")
    page.set_input_files("#id_trace", str(REAL))
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r"/traces/upload/[0-9a-f-]{36}/$"))
    page.wait_for_selector("#overview-table tbody tr", timeout=60_000)
    width, inner = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert width <= inner, (width, inner, sticking_out(page), hidden_past_the_edge(page))
    context.close()


def hidden_past_the_edge(page) -> list[str]:
    return page.evaluate(
        """() => [...document.querySelectorAll('body *')].filter((e) =>
            e.getBoundingClientRect().right > innerWidth + 1).slice(-6).map((e) =>
            e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""
    )
