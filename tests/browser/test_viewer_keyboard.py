"""Measuring a step's idle time per stream from the keyboard alone: arrow to a ProfilerStep slice,
Shift+M measures its time span on every row (as a drag across the rows does with a mouse), and the
range table lists the GPU compute stream's busy and idle time in that step. Plain M still
measures the slice on its own row."""

from __future__ import annotations

import pytest

from tests.browser.timeline_fixture import make_timeline, serve, slice_at

pytestmark = pytest.mark.browser

TL = make_timeline(600, n_ranks=1, seed=5)
ROWS = TL["rows"]
CPU = next(i for i, r in enumerate(ROWS) if r["kind"] == "cpu")
GPU = next(i for i, r in enumerate(ROWS) if r["kind"] == "gpu")


@pytest.fixture(scope="module")
def server():
    with serve({"one.json": TL}) as (base, _store):
        yield base


def test_shift_m_measures_the_selected_step_on_every_row(browser, server):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"{server}/tests/browser/timeline-demo.html?src=/__data/one.json&height=520")
    pg.wait_for_function("window.__ttDemo && window.__ttDemo.ready", timeout=20_000)
    # the key is listed where the keys are
    assert "on every row" in pg.locator(".tt-keys").inner_text()

    # keyboard only: Tab to the timeline, down to the CPU row, right to its first slice
    pg.locator("body").click(position={"x": 5, "y": 5})
    for _ in range(15):
        pg.keyboard.press("Tab")
        if "tt-canvas" in pg.evaluate("document.activeElement.className"):
            break
    pg.keyboard.press("ArrowDown")
    for _ in range(40):
        pg.keyboard.press("ArrowRight")
        sel = pg.evaluate("viewer.getSelection()")
        if sel and slice_at(TL, sel["index"])["name"].startswith("ProfilerStep#"):
            break
    step = slice_at(TL, sel["index"])
    assert step["name"].startswith("ProfilerStep#"), step

    pg.keyboard.press("m")
    assert pg.evaluate("viewer.getRange()")["rows"] == [CPU]

    pg.keyboard.press("Shift+M")
    r = pg.evaluate("viewer.getRange()")
    assert r["dur"] == pytest.approx(step["dur"])
    assert r["rows"] == list(range(len(ROWS)))
    table = pg.locator(".tt-agg")
    assert table.is_visible()
    assert ROWS[GPU]["name"] in table.inner_text()
    gpu = next(row for row in pg.evaluate("viewer.getAggregate()")["rows"] if row["row"] == GPU)
    assert gpu["idle"] > 0 and gpu["busy"] + gpu["idle"] == pytest.approx(step["dur"], rel=1e-6)
    assert not errors, errors
    ctx.close()
