"""Browser-test fixtures: Debian's Chromium through Playwright (never `playwright install`)."""

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the session."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("TRACETRACK_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{CHROMIUM} is missing and CI requires the browser tests to run")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(autouse=True)
def _background_work_in_the_request(tasks_inline):
    """No worker runs beside the live server: the twin and a prepared trial are made in the
    request that committed them, after its commit, so nothing is still writing when a test ends
    and its database is flushed."""


@pytest.fixture
def open_page(browser):
    """Open a page in a fresh browser context: ``open_page(width=..., timeout_ms=...)``. Script
    errors are collected on ``page.errors``; the contexts close when the test ends."""
    contexts = []

    def _open(*, width: int = 1280, height: int = 900, timeout_ms: int = 30_000, **context_args):
        context = browser.new_context(viewport={"width": width, "height": height}, **context_args)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(timeout_ms)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.errors = errors
        return page

    yield _open
    for context in contexts:
        context.close()
