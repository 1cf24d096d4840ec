"""The timeline viewer's reading instruments in headless Chromium: merged-pixel colours, keys on
hover, the utilisation track, range aggregates, search, longest kernel, pinned rows, touch,
and evidence labels. Plain pytest on the static demo page (no Django).
Screenshots go to test-artifacts/viewer/ (git-ignored)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.timeline_fixture import make_symmetric_timeline, make_timeline, serve, slice_at

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "viewer"
TL = make_timeline(20_000, n_ranks=4, seed=3)
SYM = make_symmetric_timeline()
ROWS = TL["rows"]


def row_index(rank: int, kind: str, tl: dict = TL) -> int:
    return next(i for i, r in enumerate(tl["rows"]) if r["rank"] == rank and r["kind"] == kind)


def slices_in_row(row: int, tl: dict = TL) -> list[dict]:
    return [slice_at(tl, i) for i, r in enumerate(tl["slices"]["row"]) if r == row]


@pytest.fixture(scope="module")
def server():
    with serve({"trace.json": TL, "sym.json": SYM}) as (base, _store):
        yield base


def open_demo(browser, server, doc="trace.json", **ctx_args):
    ctx = browser.new_context(**({"viewport": {"width": 1280, "height": 800}} | ctx_args))
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"{server}/static/timeline-demo.html?src=/__data/{doc}")
    pg.wait_for_function("window.__ttDemo && window.__ttDemo.ready", timeout=20_000)
    return ctx, pg, errors


@pytest.fixture
def page(browser, server):
    ctx, pg, errors = open_demo(browser, server)
    yield pg
    assert not errors, errors
    ctx.close()


def shot(pg, name: str, **kw) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path), **kw)
    return path


def next_frame(pg) -> None:
    pg.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


# Classify the base canvas's pixels in a horizontal strip: kernel green vs memcpy red.
STRIP_JS = """([x0, x1, y, h]) => {
  const c = document.querySelector('.tt-base');
  const r = window.devicePixelRatio || 1;
  const b = c.getBoundingClientRect();
  const d = c.getContext('2d').getImageData((x0 - b.left) * r, (y - b.top) * r,
                                            (x1 - x0) * r, h * r).data;
  let green = 0, red = 0, other = 0;
  for (let i = 0; i < d.length; i += 4) {
    const [R, G, B] = [d[i], d[i+1], d[i+2]];
    if (G > R + 40 && G > B + 20) green++;
    else if (R > G + 60 && R > B + 60) red++;
    else other++;
  }
  return {green, red, other};
}"""


def strip(pg, y: float, h: float = 4) -> dict:
    x0 = pg.evaluate("viewer.timeToClientX(viewer.getView().t0)") + 2
    end = SYM["span"][1]
    x1 = pg.evaluate(f"viewer.timeToClientX(Math.min(viewer.getView().t1, {end}))")
    return pg.evaluate(STRIP_JS, [x0, x1 - 4, y - h / 2, h])


def test_merged_pixels_take_the_dominant_category_not_the_first(browser, server):
    ctx, pg, errors = open_demo(browser, server, "sym.json")
    pg.evaluate("viewer.zoomTo(-1e12, 1e12)")
    next_frame(pg)
    rows = [row_index(r, "gpu", SYM) for r in (0, 1)]
    # rank 0's stream starts with a 1 µs memcpy; one kernel in ten is a memcpy on both ranks
    first = slices_in_row(rows[0], SYM)[0]
    assert first["cat"] == "gpu_memcpy"
    got = [strip(pg, pg.evaluate(f"viewer.rowClientY({r})")) for r in rows]
    for g in got:
        assert g["green"] > 20 * max(1, g["red"]), got  # kernel-coloured, not memcpy-red
    assert abs(got[0]["green"] - got[1]["green"]) < 0.05 * got[0]["green"], got
    shot(pg, "merged-dominant-expanded")
    # "Collapse all": the two ranks' summary strips look the same
    pg.get_by_role("button", name="Collapse or expand every rank").click()
    next_frame(pg)
    got = [strip(pg, pg.evaluate(f"viewer.rankClientY({r})") - 5, 3) for r in (0, 1)]
    for g in got:
        assert g["green"] > 20 * max(1, g["red"]), got
    assert abs(got[0]["green"] - got[1]["green"]) < 0.05 * got[0]["green"], got
    shot(pg, "merged-dominant-collapsed")
    assert not errors, errors
    ctx.close()


def view_span(pg) -> float:
    v = pg.evaluate("viewer.getView()")
    return v["t1"] - v["t0"]


def test_keys_work_while_the_pointer_is_over_the_timeline_without_a_click(page):
    # the keyboard focus is elsewhere: nothing on the timeline was clicked
    page.locator("h1").click()
    assert "tt-canvas" not in page.evaluate("document.activeElement.className")
    box = page.evaluate("viewer.canvas.getBoundingClientRect().toJSON()")
    # pointer elsewhere on the page: W does nothing to the timeline
    page.mouse.move(box["x"] + 200, box["y"] - 40)
    s0 = view_span(page)
    page.keyboard.press("w")
    assert view_span(page) == pytest.approx(s0)
    # pointer over the timeline: W zooms, S zooms out, D pans, without any click
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 200)
    page.keyboard.press("w")
    s1 = view_span(page)
    assert s1 < s0 * 0.9
    t0 = page.evaluate("viewer.getView().t0")
    page.keyboard.press("d")
    assert page.evaluate("viewer.getView().t0") > t0
    page.keyboard.press("s")
    assert view_span(page) > s1
    assert "no click needed" in page.locator(".tt-legend").inner_text()
    # the pointer leaves: the keys go back to the page
    page.mouse.move(box["x"] + 200, box["y"] - 40)
    s2 = view_span(page)
    page.keyboard.press("w")
    assert view_span(page) == pytest.approx(s2)
