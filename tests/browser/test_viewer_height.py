"""The timeline is as tall as its rows: a one-rank trace leaves no empty band under its last row,
a many-rank trace stops at the height its page asks for and scrolls, and folding a rank still
works on the shorter timeline."""

from __future__ import annotations

import pytest

from tests.browser.timeline_fixture import make_timeline, serve

pytestmark = pytest.mark.browser

ONE_RANK = make_timeline(600, n_ranks=1, seed=5)
FOUR_RANKS = make_timeline(2_000, n_ranks=4, seed=5)


@pytest.fixture(scope="module")
def server():
    with serve({"one.json": ONE_RANK, "four.json": FOUR_RANKS}) as (base, _store):
        yield base


def mounted(browser, server, name: str):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"{server}/tests/browser/timeline-demo.html?src=/__data/{name}&height=520")
    pg.wait_for_function("window.__ttDemo && window.__ttDemo.ready", timeout=20_000)
    return ctx, pg, errors


def stage_height(pg) -> float:
    return pg.evaluate("viewer.canvas.getBoundingClientRect().height")


def last_row_bottom(pg, rows: list[dict]) -> float:
    """Client y of the bottom of the last row, relative to the top of the canvas."""
    last = len(rows) - 1
    return pg.evaluate(f"viewer.rowClientY({last}) - viewer.canvas.getBoundingClientRect().top")


def test_one_rank_timeline_is_as_tall_as_its_rows(browser, server):
    ctx, pg, errors = mounted(browser, server, "one.json")
    h = stage_height(pg)
    bottom = last_row_bottom(pg, ONE_RANK["rows"])
    assert 200 <= h < 520, h
    # the last row (its middle) is on screen, and under it there is at most a little margin
    assert bottom < h, (bottom, h)
    assert h - bottom < 60, (bottom, h)
    # fold and unfold the rank with the keyboard: the rows go and come back
    pg.evaluate("viewer.canvas.focus()")
    pg.keyboard.press("Enter")
    assert pg.evaluate("viewer.isCollapsed(0)")
    assert pg.evaluate(f"viewer.rowClientY({len(ONE_RANK['rows']) - 1})") is None
    pg.keyboard.press("Enter")
    assert not pg.evaluate("viewer.isCollapsed(0)")
    assert last_row_bottom(pg, ONE_RANK["rows"]) == pytest.approx(bottom)
    assert stage_height(pg) == h
    assert not errors, errors
    ctx.close()


def test_many_ranks_keep_the_asked_height_and_scroll(browser, server):
    ctx, pg, errors = mounted(browser, server, "four.json")
    assert stage_height(pg) == 520
    # rank 3 is below the fold until the timeline is scrolled
    assert pg.evaluate("viewer.rankClientY(3) - viewer.canvas.getBoundingClientRect().top") > 520
    assert not errors, errors
    ctx.close()
