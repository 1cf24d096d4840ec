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


def stream_timeline(busy_us: list[float], period_us: float = 14.0, n: int = 2000) -> dict:
    """One rank per entry, each with a compute stream running an n-kernel loop: a kernel of
    busy_us[rank] every period_us (a launch-bound stream is mostly idle)."""
    rows, sl = [], {k: [] for k in ("row", "ts", "dur", "depth", "name", "cat", "corr")}
    for rank, b in enumerate(busy_us):
        rows.append({"rank": rank, "kind": "gpu", "name": f"GPU {rank} · stream 7", "depth": 1})
        for j in range(n):
            for k, v in (("row", rank), ("ts", 5.0 + j * period_us), ("dur", b), ("depth", 0)):
                sl[k].append(v)
            sl["name"].append(j % 3)
            sl["cat"].append(3)
            sl["corr"].append(0)
    return {
        "v": 1,
        "span": [0.0, 10.0 + n * period_us],
        "ranks": [{"rank": r, "label": f"rank {r}"} for r in range(len(busy_us))],
        "rows": rows,
        "names": ["gemm_a", "gemm_b", "elementwise"],
        "cats": TL["cats"],
        "slices": sl,
        "args": {},
    }


SPARSE = stream_timeline([2.0, 13.0])


def util_strip_fill(pg, row: int) -> float:
    """Fraction of the utilisation strip under `row` painted in the utilisation colour."""
    return pg.evaluate(
        """(row) => {
      const c = document.querySelector('.tt-base'), r = window.devicePixelRatio || 1;
      const b = c.getBoundingClientRect();
      const x0 = viewer.timeToClientX(Math.max(0, viewer.getView().t0)) - b.left + 1;
      const x1 = viewer.timeToClientX(Math.min(viewer.getView().t1, 28000)) - b.left - 1;
      const yc = viewer.rowClientY(row) - b.top;            // row centre
      const top = yc + 3, h = 12;                           // the strip sits in the lower half
      const d = c.getContext('2d').getImageData(x0 * r, top * r, (x1 - x0) * r, h * r).data;
      let fill = 0, all = 0;
      for (let i = 0; i < d.length; i += 4) {
        all++;
        const [R, G, B] = [d[i], d[i+1], d[i+2]];  // the strip's colour, #3b6e8f
        if (Math.abs(R - 59) < 25 && Math.abs(G - 110) < 25 && Math.abs(B - 143) < 25) fill++;
      }
      return fill / all; }""",
        row,
    )


def test_utilisation_track_makes_a_sparse_gpu_look_sparse(browser, server):
    with serve({"sparse.json": SPARSE}) as (base, _):
        ctx, pg, errors = open_demo(browser, base, "sparse.json")
        pg.evaluate("viewer.zoomTo(-1e12, 1e12)")
        next_frame(pg)
        sparse = pg.evaluate("viewer.utilisation(0)")
        dense = pg.evaluate("viewer.utilisation(1)")
        assert sparse["busy"] == pytest.approx(2 / 14, rel=0.03)
        assert dense["busy"] == pytest.approx(13 / 14, rel=0.03)
        # per pixel, not just on average: every column of the sparse stream is ~1/7 busy
        cols = [c for c in sparse["columns"][5:-5] if c > 0]
        assert max(cols) < 0.3, max(cols)
        # and it is what the strip shows: a low fill for the sparse stream, a high one for the dense
        f_sparse, f_dense = util_strip_fill(pg, 0), util_strip_fill(pg, 1)
        assert f_sparse < 0.3 and f_dense > 0.7, (f_sparse, f_dense)
        shot(pg, "utilisation-sparse-vs-dense")
        assert not errors, errors
        ctx.close()
