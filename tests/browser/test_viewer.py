"""The timeline viewer (static/js/timeline.js) in headless Chromium, on a synthetic trace.

Plain pytest (no Django): a local static server on 127.0.0.1 serves the repository and the
generated timeline; tests/browser/timeline-demo.html mounts the viewer as `window.viewer`.
Screenshots go to test-artifacts/viewer/ (git-ignored).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.browser.timeline_fixture import make_timeline, serve, slice_at

pytestmark = pytest.mark.browser

SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "viewer"
TL = make_timeline(20_000, n_ranks=4, seed=3)
ROWS = TL["rows"]


def row_index(rank: int, kind: str) -> int:
    return next(i for i, r in enumerate(ROWS) if r["rank"] == rank and r["kind"] == kind)


def slices_in_row(row: int) -> list[dict]:
    s = TL["slices"]
    return [slice_at(TL, i) for i, r in enumerate(s["row"]) if r == row]


GPU0 = row_index(0, "gpu")
API0 = row_index(0, "cuda_api")
KERNELS0 = [k for k in slices_in_row(GPU0) if k["cat"] == "kernel"]


@pytest.fixture(scope="module")
def server():
    with serve({"trace.json": TL}) as (base, _store):
        yield base


@pytest.fixture
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(f"{server}/tests/browser/timeline-demo.html?src=/__data/trace.json")
    pg.wait_for_function("window.__ttDemo && window.__ttDemo.ready", timeout=20_000)
    pg.evaluate(
        "window.__events = {select: [], range: []};"
        "viewer.on('select', (e) => window.__events.select.push(e));"
        "viewer.on('range', (e) => window.__events.range.push(e)); 0"
    )
    yield pg
    assert not errors, errors
    ctx.close()


def shot(pg, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / f"{name}.png"))


def view(pg) -> tuple[float, float]:
    v = pg.evaluate("viewer.getView()")
    return v["t0"], v["t1"]


def focus(pg) -> None:
    pg.evaluate("viewer.canvas.focus()")


def zoom_around(pg, t0: float, t1: float) -> None:
    pg.evaluate(f"viewer.zoomTo({t0}, {t1})")


def next_frame(pg) -> None:
    pg.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


# JS that summarises a canvas region: how much of it is not a background colour, and how many
# distinct (quantised) colours cover at least `minPx` pixels each.
PIXELS_JS = """([sel, x, y, w, h, minPx]) => {
  const c = document.querySelector(sel);
  const r = window.devicePixelRatio || 1;
  const d = c.getContext('2d').getImageData(x * r, y * r, w * r, h * r).data;
  const bg = [[255,255,255],[246,248,250],[227,231,236],[240,242,245],[201,209,217]];
  let fg = 0; const hist = new Map();
  for (let i = 0; i < d.length; i += 4) {
    const [R, G, B, A] = [d[i], d[i+1], d[i+2], d[i+3]];
    if (A < 20) continue;
    if (bg.some(([a, b, cc]) => Math.abs(a-R) + Math.abs(b-G) + Math.abs(cc-B) < 12)) continue;
    if (Math.abs(R-G) < 10 && Math.abs(G-B) < 10 && R > 200) continue;  // grid lines
    fg++;
    const q = (R >> 4) * 256 + (G >> 4) * 16 + (B >> 4);
    hist.set(q, (hist.get(q) || 0) + 1);
  }
  const colours = [...hist.values()].filter((v) => v >= minPx).length;
  return {fraction: fg / (d.length / 4), colours};
}"""


def track_box(pg) -> dict:
    return pg.evaluate(
        "(() => { const b = viewer.canvas.getBoundingClientRect();"
        " return {left: viewer.timeToClientX(viewer.getView().t0) - b.left,"
        " right: viewer.timeToClientX(viewer.getView().t1) - b.left, top: 30, bottom: b.height,"
        " x: b.left, y: b.top}; })()"
    )


def test_canvas_is_a_real_timeline_not_blank(page):
    """Fails on a blank (or single-colour) canvas: sample the drawn pixels."""
    b = track_box(page)
    w, h = int(b["right"] - b["left"]) - 2, int(b["bottom"] - b["top"]) - 2
    res = page.evaluate(PIXELS_JS, [".tt-base", int(b["left"]) + 1, 31, w, h, 200])
    shot(page, "01-full-20k")
    assert res["fraction"] > 0.15, res
    assert res["colours"] >= 5, res
    # the element shown is the canvas that holds the pixels
    visible = page.evaluate(
        "(() => { const r = document.querySelector('.tt-base').getBoundingClientRect();"
        " return r.width > 600 && r.height > 300; })()"
    )
    assert visible


def test_axis_labels_have_units(page):
    assert "ms" in page.locator(".tt-view").inner_text()
    zoom_around(page, 1000.0, 1040.0)
    assert "µs" in page.locator(".tt-view").inner_text()


def test_w_zooms_in_and_s_zooms_out(page):
    focus(page)
    a0, a1 = view(page)
    page.keyboard.press("w")
    b0, b1 = view(page)
    assert (b1 - b0) < (a1 - a0) * 0.9
    assert a0 <= b0 and b1 <= a1
    page.keyboard.press("w")
    page.keyboard.press("w")
    c0, c1 = view(page)
    assert (c1 - c0) < (b1 - b0)
    page.keyboard.press("s")
    d0, d1 = view(page)
    assert (d1 - d0) > (c1 - c0)


def test_a_and_d_pan(page):
    mid = (TL["span"][0] + TL["span"][1]) / 2
    zoom_around(page, mid - 5000, mid + 5000)
    focus(page)
    a0, a1 = view(page)
    page.keyboard.press("d")
    b0, b1 = view(page)
    assert b0 > a0 and b1 > a1
    assert abs((b1 - b0) - (a1 - a0)) < 1e-6
    page.keyboard.press("a")
    page.keyboard.press("a")
    c0, _ = view(page)
    assert c0 < a0


def test_wheel_zooms_and_shift_wheel_pans(page):
    b = track_box(page)
    page.mouse.move(b["x"] + (b["left"] + b["right"]) / 2, b["y"] + 200)
    a0, a1 = view(page)
    page.mouse.wheel(0, -300)
    next_frame(page)
    b0, b1 = view(page)
    assert (b1 - b0) < (a1 - a0)
    page.keyboard.down("Shift")
    page.mouse.wheel(0, 200)
    page.keyboard.up("Shift")
    c0, c1 = view(page)
    assert c0 > b0 and abs((c1 - c0) - (b1 - b0)) < 1e-6


def gap_between_kernels() -> tuple[dict, dict]:
    for a, b in itertools.pairwise(slices_in_row(GPU0)):
        if b["ts"] - (a["ts"] + a["dur"]) > 20:
            return a, b
    raise AssertionError("no gap in the fixture")


def test_drag_select_reports_the_gap_duration(page):
    a, b = gap_between_kernels()
    a_end = a["ts"] + a["dur"]
    gap = b["ts"] - a_end
    zoom_around(page, a_end - gap * 2, b["ts"] + gap * 2)
    y = page.evaluate(f"viewer.rowClientY({GPU0})")
    xa = page.evaluate(f"viewer.timeToClientX({a_end})")
    xb = page.evaluate(f"viewer.timeToClientX({b['ts']})")
    assert xb - xa > 100
    top = page.evaluate("viewer.canvas.getBoundingClientRect().top")
    # start and end a couple of pixels off: the edges snap to the kernels
    page.mouse.move(xa + 2, y)
    page.mouse.down()
    page.mouse.move((xa + xb) / 2, y, steps=4)
    page.mouse.move(xb - 2, y, steps=4)
    page.mouse.up()
    ranges = page.evaluate("window.__events.range")
    assert len(ranges) == 1
    assert ranges[0]["dur"] == pytest.approx(gap, abs=1e-6)
    assert ranges[0]["t0"] == pytest.approx(a_end, abs=1e-6)
    readout = page.locator(".tt-range-out").inner_text()
    assert "Δ" in readout
    # the readout does not shift the layout under the pointer
    assert page.evaluate("viewer.canvas.getBoundingClientRect().top") == top
    shot(page, "02-drag-select-gap")
    # without snapping (Alt) the duration follows the pointer
    page.keyboard.press("Escape")
    assert page.evaluate("viewer.getRange()") is None
    page.keyboard.down("Alt")
    page.mouse.move(xa + 10, y)
    page.mouse.down()
    page.mouse.move(xb - 10, y, steps=5)
    page.mouse.up()
    page.keyboard.up("Alt")
    r = page.evaluate("window.__events.range.at(-1)")
    us_per_px = (b["ts"] - a_end) / (xb - xa)
    assert r["dur"] == pytest.approx(gap - 20 * us_per_px, abs=2 * us_per_px)


def test_click_slice_shows_details(page):
    k = next(k for k in KERNELS0 if k["args"] and "grid" in k["args"] and k["dur"] > 40)
    zoom_around(page, k["ts"] - k["dur"], k["ts"] + 2 * k["dur"])
    box = page.evaluate(f"viewer.sliceBox({k['index']})")
    assert box and box["w"] > 50
    page.mouse.click(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
    ev = page.evaluate("window.__events.select")
    assert len(ev) == 1
    assert ev[0]["name"] == k["name"]
    assert ev[0]["start"] == pytest.approx(k["ts"])
    assert ev[0]["dur"] == pytest.approx(k["dur"])
    assert ev[0]["args"]["grid"] == k["args"]["grid"]
    details = page.locator(".tt-details").inner_text()
    assert k["name"] in details
    assert " × ".join(str(v) for v in k["args"]["grid"]) in details
    assert ROWS[GPU0]["name"] in details
    assert str(k["corr"]) in details
    shot(page, "03-click-details")


def test_hover_launch_shows_its_kernel(page):
    api = slices_in_row(API0)
    launch = next(s for s in api if s["name"] == "cudaLaunchKernel" and s["corr"])
    kernel = next(k for k in slices_in_row(GPU0) if k["corr"] == launch["corr"])
    t0 = launch["ts"] - 20
    t1 = kernel["ts"] + kernel["dur"] + 20
    zoom_around(page, t0, t1)
    box = page.evaluate(f"viewer.sliceBox({launch['index']})")
    assert box
    page.mouse.move(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2)
    tip = page.locator(".tt-tooltip")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert launch["name"] in text
    assert kernel["name"] in text
    assert page.evaluate(f"viewer.partnerOf({launch['index']})") == kernel["index"]
    next_frame(page)
    # the connector is drawn in the flow colour on the overlay canvas
    red = page.evaluate(
        """() => { const c = document.querySelector('.tt-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4)
          if (d[i+3] > 200 && d[i] > 180 && d[i+1] < 70 && d[i+2] < 80) n++;
        return n; }"""
    )
    assert red > 30
    shot(page, "04-hover-launch")
    # and the other way round: hovering the kernel names its launch
    kb = page.evaluate(f"viewer.sliceBox({kernel['index']})")
    page.mouse.move(kb["x"] + min(kb["w"] / 2, 5), kb["y"] + kb["h"] / 2)
    page.wait_for_function("document.querySelector('.tt-tooltip').innerText.includes('launched')")
    assert "cudaLaunchKernel" in tip.inner_text()


def test_collapsing_a_rank(page):
    rank1_cpu = row_index(1, "cpu")
    y_rank2 = page.evaluate("viewer.rankClientY(2)")
    y = page.evaluate("viewer.rankClientY(1)")
    b = track_box(page)
    page.mouse.click(b["x"] + 40, y)
    assert page.evaluate("viewer.isCollapsed(1)")
    assert page.evaluate(f"viewer.rowClientY({rank1_cpu})") is None
    assert page.evaluate("viewer.rankClientY(2)") < y_rank2 - 100
    next_frame(page)
    shot(page, "05-rank1-collapsed")
    # keyboard: the click left the row cursor on rank 1's header; up, down again, Enter
    focus(page)
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    assert not page.evaluate("viewer.isCollapsed(1)")
    page.keyboard.press("ArrowUp")
    # back on a row of rank 0: ←/→ step through its slices and select them
    page.keyboard.press("ArrowRight")
    sel = page.evaluate("viewer.getSelection()")
    assert sel and sel["rank"] == 0


def test_highlight_draws_bands_and_clears(page):
    nccl0 = slices_in_row(row_index(0, "nccl"))
    ar = nccl0[1]
    zoom_around(page, ar["ts"] - 3000, ar["ts"] + ar["dur"] + 3000)
    ev = [
        {
            "rank": 0,
            "row": "nccl",
            "start_us": ar["ts"],
            "end_us": ar["ts"] + ar["dur"],
            "label": "exposed all-reduce",
        },
        {
            "rank": 1,
            "row": "*",
            "start_us": ar["ts"],
            "end_us": ar["ts"] + ar["dur"],
            "label": "rank 1",
        },
    ]
    page.evaluate("(ev) => viewer.highlight(ev)", ev)
    next_frame(page)
    count_js = """() => { const c = document.querySelector('.tt-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 0; i < d.length; i += 4)
          if (d[i+3] > 20 && d[i] > 150 && d[i+1] > 60 && d[i+1] < 200 && d[i+2] < 60) n++;
        return n; }"""
    n = page.evaluate(count_js)
    assert n > 500
    shot(page, "06-highlight")
    page.evaluate("viewer.clearHighlight()")
    next_frame(page)
    assert page.evaluate(count_js) < n / 10


def test_keyboard_reachable_with_visible_focus(page):
    page.locator("body").click(position={"x": 5, "y": 5})
    focused = []
    for _ in range(12):
        page.keyboard.press("Tab")
        focused.append(page.evaluate("document.activeElement.className"))
        if "tt-canvas" in focused[-1]:
            break
    assert any("tt-canvas" in f for f in focused), focused
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    # F fits the selection, M marks it as the range, Esc clears both
    k = KERNELS0[5]
    page.evaluate(f"viewer.select({k['index']})")
    page.keyboard.press("m")
    r = page.evaluate("viewer.getRange()")
    assert r["dur"] == pytest.approx(k["dur"])
    page.keyboard.press("f")
    t0, t1 = view(page)
    assert t0 <= k["ts"] and k["ts"] + k["dur"] <= t1 and (t1 - t0) < 2 * k["dur"]
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    assert page.evaluate("viewer.getRange()") is None
    assert page.evaluate("viewer.getSelection()") is None


def test_hidpi_and_zoomed_shot(browser, server):
    ctx = browser.new_context(viewport={"width": 1440, "height": 900}, device_scale_factor=2)
    pg = ctx.new_page()
    pg.goto(f"{server}/tests/browser/timeline-demo.html?src=/__data/trace.json")
    pg.wait_for_function("window.__ttDemo && window.__ttDemo.ready", timeout=20_000)
    assert pg.evaluate("document.querySelector('.tt-base').width") >= 2 * 1300
    k = KERNELS0[40]
    pg.evaluate(f"viewer.zoomTo({k['ts'] - 600}, {k['ts'] + 900})")
    pg.evaluate(f"viewer.select({k['index']})")
    next_frame(pg)
    shot(pg, "07-hidpi-zoomed")
    ctx.close()
