"""The reveal's table at desktop width: its columns keep whole words however short the answers."""

from __future__ import annotations

import json

import pytest

from tests.browser.test_drill_e2e import sign_up, start_drill

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_given_up_drills_reveal_keeps_the_you_said_column_readable(open_page, live_server):
    """Giving up leaves every answer blank ("—"); the table squeezed the "You said" column to
    a letter or two, its heading wrapping as "You sai / d"."""
    page = open_page(width=1280, height=800, timeout_ms=20_000)
    sign_up(page, live_server, "lamport")
    start_drill(page, live_server, mode="practice")
    page.once("dialog", lambda d: d.accept())
    page.click("text=Give up this drill")
    page.wait_for_selector("#sentences")
    heading = page.locator("#sentences thead th").nth(1)
    assert heading.inner_text().strip() == "You said"
    box = heading.bounding_box()
    line = page.evaluate(
        "el => parseFloat(getComputedStyle(el).lineHeight) || 24", heading.element_handle()
    )
    assert box["height"] < 2 * line, "the heading 'You said' wraps inside its word"
    said = page.locator("#sentences td.said").first.bounding_box()
    assert said["width"] >= 90


def test_show_me_from_the_keyboard_says_what_it_did(open_page, live_server):
    """'Show me' zooms the timeline further down the page; a screen-reader user heard nothing.
    Pressed with Enter, it now says the timeline is zoomed to the evidence, and names it."""
    page = open_page(width=1280, height=800, timeout_ms=20_000)
    sign_up(page, live_server, "liskov")
    start_drill(page, live_server, mode="practice")
    page.once("dialog", lambda d: d.accept())
    page.click("text=Give up this drill")
    page.wait_for_selector("#timeline canvas")
    announce = page.locator("#evidence-announce")
    assert announce.get_attribute("aria-live") == "polite" and announce.inner_text() == ""
    button = page.locator("button.show-me").first
    label = json.loads(button.get_attribute("data-evidence"))[0].get("label", "")
    button.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("document.getElementById('evidence-announce').textContent !== ''")
    said = announce.inner_text()
    assert said.startswith("The timeline is zoomed to the evidence") and label in said
    assert page.evaluate("document.activeElement.classList.contains('show-me')")
