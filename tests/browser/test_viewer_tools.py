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
    pg.goto(f"{server}/tests/browser/timeline-demo.html?src=/__data/{doc}")
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


def expected_aggregate(tl: dict, rows: list[int], a: float, b: float) -> tuple[dict, dict]:
    by_name: dict[str, dict] = {}
    busy: dict[int, float] = {}
    for r in rows:
        ivs = []
        for s in slices_in_row(r, tl):
            e = s["ts"] + s["dur"]
            if e <= a or s["ts"] >= b:
                continue
            ca, cb = max(a, s["ts"]), min(b, e)
            d = by_name.setdefault(s["name"], {"count": 0, "total": 0.0, "max": 0.0, "sum": 0.0})
            d["count"] += 1
            d["total"] += cb - ca
            d["sum"] += s["dur"]
            d["max"] = max(d["max"], s["dur"])
            if s["depth"] == 0:
                ivs.append((ca, cb))
        tot, upto = 0.0, -1e18
        for ca, cb in sorted(ivs):
            if cb > upto:
                tot += cb - max(ca, upto)
                upto = cb
        busy[r] = tot
    return by_name, busy


def test_drag_over_rows_gives_a_table_by_name_and_busy_idle_per_row(page):
    api0, gpu0 = row_index(0, "cuda_api"), row_index(0, "gpu")
    steps = [s for s in slices_in_row(row_index(0, "cpu")) if s["name"].startswith("ProfilerStep")]
    a, b = steps[1]["ts"], steps[2]["ts"] + steps[2]["dur"]  # two whole steps
    page.evaluate(f"viewer.zoomTo({a - 2000}, {b + 2000})")
    ya = page.evaluate(f"viewer.rowClientY({api0})")
    yb = page.evaluate(f"viewer.rowClientY({gpu0})")
    xa = page.evaluate(f"viewer.timeToClientX({a})")
    xb = page.evaluate(f"viewer.timeToClientX({b})")
    page.keyboard.down("Alt")  # exact edges, no snapping
    page.mouse.move(xa, ya)
    page.mouse.down()
    page.mouse.move((xa + xb) / 2, (ya + yb) / 2, steps=4)
    page.mouse.move(xb, yb, steps=4)
    page.mouse.up()
    page.keyboard.up("Alt")
    agg = page.evaluate("viewer.getAggregate()")
    assert sorted(r["row"] for r in agg["rows"]) == [api0, gpu0]
    a, b = agg["t0"], agg["t1"]
    assert (b - a) == pytest.approx(steps[2]["ts"] + steps[2]["dur"] - steps[1]["ts"], rel=0.02)
    want, busy = expected_aggregate(TL, [api0, gpu0], a, b)
    got = {n["name"]: n for n in agg["names"]}
    assert set(got) == set(want)
    for name, w in want.items():
        g = got[name]
        assert g["count"] == w["count"], name
        assert g["total"] == pytest.approx(w["total"], rel=1e-6), name
        assert g["max"] == pytest.approx(w["max"]), name
        assert g["mean"] == pytest.approx(w["sum"] / w["count"]), name
        assert g["share"] == pytest.approx(w["total"] / (b - a), rel=1e-6), name
    for r in agg["rows"]:
        assert r["busy"] == pytest.approx(busy[r["row"]], rel=1e-6)
        assert r["idle"] == pytest.approx((b - a) - busy[r["row"]], rel=1e-6)
    # the table shows them in ms, largest total first
    table = page.locator(".tt-agg")
    assert table.is_visible()
    top = agg["names"][0]
    first_row = table.locator(".tt-agg-names tbody tr").first.inner_text()
    assert top["name"] in first_row
    assert f"{top['total'] / 1000:.3f}"[:4] in first_row
    gpu_row = table.locator(".tt-agg-rows tbody tr", has_text="stream 7").inner_text()
    idle_ms = (b - a - busy[gpu0]) / 1000
    assert (f"{idle_ms:.3f}" if idle_ms < 10 else f"{idle_ms:.2f}") in gpu_row
    table.scroll_into_view_if_needed()
    shot(page, "selection-table", full_page=True)
    # Esc clears the range and the table
    page.keyboard.press("Escape")
    assert page.evaluate("viewer.getAggregate()") is None
    assert not table.is_visible()


YELLOW_JS = """() => { const c = document.querySelector('.tt-base');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let n = 0;
  for (let i = 0; i < d.length; i += 4)
    if (d[i] > 240 && d[i+1] > 195 && d[i+1] < 230 && d[i+2] < 60) n++;
  return n; }"""


def test_find_by_name_highlights_counts_and_steps_through_matches(page):
    want = sorted(
        (s["ts"], i)
        for i, s in enumerate(slice_at(TL, i) for i in range(len(TL["slices"]["ts"])))
        if "layer_norm" in s["name"].lower()
    )
    assert page.evaluate(YELLOW_JS) == 0
    box = page.locator(".tt-search")
    box.fill("LAYER_norm")  # case-insensitive
    page.wait_for_function(
        f"document.querySelector('.tt-match-count').textContent.includes('{len(want):,}')"
    )
    next_frame(page)
    assert page.evaluate(YELLOW_JS) > 200  # the matches are marked
    shot(page, "find-matches")
    box.press("Enter")
    first = page.evaluate("viewer.getSelection()")
    assert "layer_norm" in first["name"]
    assert page.locator(".tt-match-count").inner_text() == f"1 / {len(want):,}"
    assert first["index"] == want[0][1]
    box.press("Enter")
    second = page.evaluate("viewer.getSelection()")
    assert second["index"] == want[1][1] and second["start"] >= first["start"]
    v = page.evaluate("viewer.getView()")
    assert v["t0"] <= second["start"] and second["end"] <= v["t1"]  # brought into view
    box.press("Shift+Enter")
    assert page.evaluate("viewer.getSelection()")["index"] == want[0][1]
    assert page.locator(".tt-match-count").inner_text() == f"1 / {len(want):,}"
    box.press("Escape")
    next_frame(page)
    assert page.evaluate(YELLOW_JS) == 0


def test_longest_kernel_whole_trace_and_in_a_selection(page):
    # a kernel is a compute or an NCCL kernel (memcpy and memset are not): the whole trace's
    # longest is here an all-reduce, whose time includes waiting for the other ranks
    kernels = [
        slice_at(TL, i)
        for i, c in enumerate(TL["slices"]["cat"])
        if TL["cats"][c] in ("kernel", "nccl")
    ]
    top = max(kernels, key=lambda k: k["dur"])
    assert top["cat"] == "nccl"
    page.get_by_role("button", name="Longest kernel").first.click()
    sel = page.evaluate("viewer.getSelection()")
    assert sel["index"] == top["index"] and sel["dur"] == pytest.approx(top["dur"])
    assert sel["rowKind"] == "nccl"
    v = page.evaluate("viewer.getView()")
    assert v["t0"] <= top["ts"] and top["ts"] + top["dur"] <= v["t1"]
    assert (v["t1"] - v["t0"]) < 5 * top["dur"]
    # within a range over rank 2's compute stream, the L key picks that range's longest
    # compute kernel (a copy on that stream is never picked, however long)
    gpu2 = row_index(2, "gpu")
    span = TL["span"][1]
    a, b = span * 0.3, span * 0.4
    inside = [
        k
        for k in slices_in_row(gpu2)
        if k["cat"] == "kernel" and k["ts"] < b and k["ts"] + k["dur"] > a
    ]
    page.evaluate(f"viewer.setRange({a}, {b}, [{gpu2}])")
    box = page.evaluate("viewer.canvas.getBoundingClientRect().toJSON()")
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 100)
    page.keyboard.press("l")
    sel = page.evaluate("viewer.getSelection()")
    assert sel["index"] == max(inside, key=lambda k: k["dur"])["index"]
    assert sel["cat"] == "kernel"
    # and over rank 1's NCCL stream, that stream's longest collective
    nccl1 = row_index(1, "nccl")
    colls = [k for k in slices_in_row(nccl1) if k["ts"] < b and k["ts"] + k["dur"] > a]
    assert colls
    page.evaluate(f"viewer.setRange({a}, {b}, [{nccl1}])")
    assert page.evaluate("viewer.longestKernel()") == max(colls, key=lambda k: k["dur"])["index"]
    assert page.evaluate("viewer.getSelection()")["rowIndex"] == nccl1
    # a selection with no kernel in it (the CPU thread only) selects nothing new
    cpu0 = row_index(0, "cpu")
    page.evaluate(f"viewer.setRange({a}, {b}, [{cpu0}])")
    assert page.evaluate("viewer.longestKernel()") == -1


def test_pinned_rows_stay_at_the_top(page):
    gpu3 = row_index(3, "gpu")
    cpu0 = row_index(0, "cpu")
    top = page.evaluate("viewer.canvas.getBoundingClientRect().top")
    assert (
        page.evaluate(f"viewer.rowClientY({gpu3})") is None
        or page.evaluate(f"viewer.rowClientY({gpu3})") > top + 500
    )
    page.evaluate(f"viewer.pinRow({gpu3}, true)")
    y_pin = page.evaluate(f"viewer.rowClientY({gpu3})")
    assert top + 30 < y_pin < top + 30 + 60  # right under the time axis
    y_cpu = page.evaluate(f"viewer.rowClientY({cpu0})")
    assert y_cpu > y_pin
    page.evaluate("viewer.scrollBy(300)")
    assert page.evaluate(f"viewer.rowClientY({gpu3})") == pytest.approx(y_pin)
    assert page.evaluate(f"viewer.rowClientY({cpu0})") == pytest.approx(y_cpu - 300)
    next_frame(page)
    shot(page, "pinned-row")
    # its slices are hit where they are drawn
    k = next(k for k in slices_in_row(gpu3) if k["dur"] > 100)
    page.evaluate(f"viewer.zoomTo({k['ts'] - k['dur']}, {k['ts'] + 2 * k['dur']})")
    kb = page.evaluate(f"viewer.sliceBox({k['index']})")
    page.mouse.click(kb["x"] + kb["w"] / 2, kb["y"] + kb["h"] / 2)
    assert page.evaluate("viewer.getSelection()")["index"] == k["index"]
    # the pin at the right end of the label unpins it; P over a row pins that row
    x_label_end = page.evaluate("viewer.timeToClientX(viewer.getView().t0)")
    page.mouse.click(x_label_end - 8, y_pin)
    assert page.evaluate("viewer.pinnedRows()") == []
    page.evaluate("viewer.scrollBy(-10000)")
    page.mouse.move(x_label_end + 200, page.evaluate(f"viewer.rowClientY({cpu0})"))
    page.keyboard.press("p")
    assert page.evaluate("viewer.pinnedRows()") == [cpu0]


def touch(cdp, kind: str, points: list[tuple[float, float]]) -> None:
    cdp.send(
        "Input.dispatchTouchEvent",
        {
            "type": kind,
            "touchPoints": [{"x": x, "y": y, "id": i} for i, (x, y) in enumerate(points)],
        },
    )


def test_touch_drag_pans_pinch_zooms_tap_selects(browser, server):
    ctx, pg, errors = open_demo(
        browser, server, viewport={"width": 390, "height": 800}, has_touch=True, is_mobile=True
    )
    assert pg.evaluate("document.documentElement.scrollWidth") <= 390
    cdp = ctx.new_cdp_session(pg)
    box = pg.evaluate("viewer.canvas.getBoundingClientRect().toJSON()")
    label_w = pg.evaluate("viewer.timeToClientX(viewer.getView().t0)") - box["x"]
    assert label_w <= 0.3 * box["width"]
    y = box["y"] + 150
    xm = box["x"] + label_w + (box["width"] - label_w) / 2
    # pinch out: the fingers move apart around the middle → zoom in about 3×
    v0 = pg.evaluate("viewer.getView()")
    touch(cdp, "touchStart", [(xm - 20, y), (xm + 20, y)])
    for k in range(1, 6):
        touch(cdp, "touchMove", [(xm - 20 - 8 * k, y), (xm + 20 + 8 * k, y)])
    touch(cdp, "touchEnd", [])
    v1 = pg.evaluate("viewer.getView()")
    assert (v1["t1"] - v1["t0"]) == pytest.approx((v0["t1"] - v0["t0"]) / 3, rel=0.1)
    # one finger drags the timeline to the left → later times come into view
    touch(cdp, "touchStart", [(xm + 60, y)])
    for k in range(1, 6):
        touch(cdp, "touchMove", [(xm + 60 - 24 * k, y)])
    touch(cdp, "touchEnd", [])
    v2 = pg.evaluate("viewer.getView()")
    assert v2["t0"] > v1["t0"]
    assert (v2["t1"] - v2["t0"]) == pytest.approx(v1["t1"] - v1["t0"])
    assert pg.evaluate("viewer.getRange()") is None  # a drag is not a selection on touch
    # a tap on a slice shows its details
    k = next(k for k in slices_in_row(row_index(0, "gpu")) if k["dur"] > 100)
    pg.evaluate(f"viewer.zoomTo({k['ts'] - k['dur']}, {k['ts'] + 2 * k['dur']})")
    pg.evaluate(f"viewer.scrollToRow({row_index(0, 'gpu')})")
    kb = pg.evaluate(f"viewer.sliceBox({k['index']})")
    pg.touchscreen.tap(kb["x"] + kb["w"] / 2, kb["y"] + kb["h"] / 2)
    assert pg.evaluate("viewer.getSelection()")["index"] == k["index"]
    # with "Select" on, a one-finger drag over two rows selects a range and shows its table
    pg.get_by_role("button", name="Touch: drag to select a range (instead of panning)").click()
    sel_btn = pg.locator(".tt-touch-select")
    assert sel_btn.get_attribute("aria-pressed") == "true", sel_btn.get_attribute("aria-pressed")
    pg.evaluate(f"viewer.scrollToRow({row_index(0, 'cuda_api')})")
    v3 = pg.evaluate("viewer.getView()")
    ya = pg.evaluate(f"viewer.rowClientY({row_index(0, 'cuda_api')})")
    yb = pg.evaluate(f"viewer.rowClientY({row_index(0, 'gpu')})")
    xa, xb = xm - 60, xm + 60
    touch(cdp, "touchStart", [(xa, ya)])
    for k in range(1, 6):
        touch(cdp, "touchMove", [(xa + (xb - xa) * k / 5, ya + (yb - ya) * k / 5)])
    touch(cdp, "touchEnd", [])
    assert pg.evaluate("viewer.getView()") == v3  # it did not pan
    agg = pg.evaluate("viewer.getAggregate()")
    assert agg and sorted(r["row"] for r in agg["rows"]) == [
        row_index(0, "cuda_api"),
        row_index(0, "gpu"),
    ]
    assert pg.locator(".tt-agg").is_visible()
    assert pg.evaluate("document.documentElement.scrollWidth") <= 390
    shot(pg, "touch-390px", full_page=True)
    assert not errors, errors
    ctx.close()


def engine_case(slug: str, seed: int) -> tuple[dict, list[dict]]:
    from scenarios.engine import generate
    from scenarios.engine.export import to_timeline

    t = generate(slug, seed=seed)
    return to_timeline(t), list(t.key.evidence)


def boxes_intersect(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and (b["y"] < a["y"] + a["h"])
    )


SYNTHETIC_EVIDENCE = [  # overlapping spans on one row, as the recompilation key gives
    {
        "rank": 0,
        "row": "python main thread",
        "start_us": 5000,
        "end_us": 60000,
        "label": "a new shape: compile",
    },
    {
        "rank": 0,
        "row": "python main thread",
        "start_us": 5200,
        "end_us": 55000,
        "label": "compiling",
    },
    {"rank": 0, "row": "python main thread", "start_us": 5400, "end_us": 9000, "label": "third"},
    {"rank": "*", "row": None, "start_us": 5100, "end_us": 7000, "label": "every rank"},
    {"rank": 1, "row": "nccl", "start_us": 20000, "end_us": 21000, "label": "rank 1 waits"},
    {"rank": 9, "row": "gpu", "start_us": 30000, "end_us": 31000, "label": "a rank not here"},
]


@pytest.mark.parametrize("case", ["synthetic", "recompilation", "straggler", "input-starvation"])
def test_evidence_labels_never_overlap_and_every_span_is_drawn(browser, case):
    if case == "synthetic":
        tl, evidence = TL, SYNTHETIC_EVIDENCE
    else:
        tl, evidence = engine_case(case, seed=1)
    assert evidence
    with serve({"t.json": tl}) as (base, _):
        ctx, pg, errors = open_demo(browser, base, "t.json")
        pg.evaluate("(ev) => viewer.highlight(ev)", evidence)
        # the drill page's framing: zoom to all the evidence
        t0 = min(e["start_us"] for e in evidence)
        t1 = max(e["end_us"] for e in evidence)
        pad = (t1 - t0) * 0.4 + 1
        pg.evaluate(f"viewer.zoomTo({max(0, t0 - pad)}, {t1 + pad})")
        lay = pg.evaluate("viewer.highlightLayout()")
        assert sorted(s["index"] for s in lay["spans"]) == list(range(len(evidence)))
        assert all(s["bands"] >= 1 for s in lay["spans"]), lay["spans"]
        labels = lay["labels"]
        assert len(labels) == sum(1 for e in evidence if e.get("label"))
        for i, a in enumerate(labels):
            for b in labels[i + 1 :]:
                assert not boxes_intersect(a, b), (a, b)
        shot(pg, f"evidence-labels-{case}")
        assert not errors, errors
        ctx.close()


def comm_timeline() -> dict:
    """One rank: a compute stream with kernels of 10, 20, 30 µs (every 100 µs) and an NCCL
    stream whose collectives (60 µs, every 200 µs) start 5 µs before a kernel."""
    rows = [
        {"rank": 0, "kind": "gpu", "name": "GPU 0 · stream 7 (compute)", "depth": 1},
        {"rank": 0, "kind": "nccl", "name": "GPU 0 · stream 20 (NCCL)", "depth": 1},
    ]
    sl = {k: [] for k in ("row", "ts", "dur", "depth", "name", "cat", "corr")}

    def add(row, ts, dur, name):
        for k, v in (("row", row), ("ts", ts), ("dur", dur), ("depth", 0), ("name", name)):
            sl[k].append(v)
        sl["cat"].append(3)
        sl["corr"].append(0)

    for j in range(100):
        add(0, 100.0 * j, (10.0, 20.0, 30.0)[j % 3], j % 3)
    for j in range(50):
        add(1, 200.0 * j - 5.0 + 200.0, 60.0, 3)
    return {
        "v": 1,
        "span": [0.0, 10_300.0],
        "ranks": [{"rank": 0, "label": "rank 0"}],
        "rows": rows,
        "names": ["gemm_a", "gemm_b", "elementwise", "ncclKernel_AllReduce"],
        "cats": TL["cats"],
        "slices": sl,
        "args": {},
    }


def test_range_table_gives_exposed_comm_and_the_typical_kernel(browser):
    """The rows table: an NCCL row's exposed time (busy while the compute stream is idle), and
    each row's slice count and median duration, as a learner reads them off the page."""
    tl = comm_timeline()
    with serve({"comm.json": tl}) as (base, _):
        ctx, pg, errors = open_demo(browser, base, "comm.json")
        pg.evaluate("viewer.zoomTo(0, 10300)")
        ya = pg.evaluate("viewer.rowClientY(0)")
        yb = pg.evaluate("viewer.rowClientY(1)")
        xa = pg.evaluate("viewer.timeToClientX(0)")
        xb = pg.evaluate("viewer.timeToClientX(10000)")
        pg.keyboard.down("Alt")
        pg.mouse.move(xa, ya)
        pg.mouse.down()
        pg.mouse.move(xb, yb, steps=5)
        pg.mouse.up()
        pg.keyboard.up("Alt")
        agg = pg.evaluate("viewer.getAggregate()")
        a, b = agg["t0"], agg["t1"]
        comp = [(100.0 * j, 100.0 * j + (10.0, 20.0, 30.0)[j % 3]) for j in range(100)]
        comm = [(200.0 * j + 195.0, 200.0 * j + 255.0) for j in range(50)]

        def clip(iv):
            return [(max(s, a), min(e, b)) for s, e in iv if e > a and s < b]

        under = sum(max(0.0, min(e, d) - max(s, c)) for s, e in clip(comm) for c, d in clip(comp))
        busy = sum(e - s for s, e in clip(comm))
        nccl = next(r for r in agg["rows"] if r["row"] == 1)
        gpu = next(r for r in agg["rows"] if r["row"] == 0)
        assert nccl["exposed"] == pytest.approx(busy - under, rel=1e-6)
        assert 0 < nccl["exposed"] < nccl["busy"]
        assert "exposed" not in gpu
        in_range = [e - s for s, e in comp if e > a and s < b]
        assert gpu["count"] == len(in_range)
        assert gpu["median"] == pytest.approx(sorted(in_range)[len(in_range) // 2])
        # the page shows them: the NCCL row's last cell is its exposed time in ms
        cells = pg.locator(".tt-agg-rows tbody tr", has_text="NCCL").locator("td").all_inner_texts()
        assert cells[-1] == f"{nccl['exposed'] / 1000:.3f}", cells
        assert cells[-3] == "50" and cells[-2] == "0.0600", cells
        assert not errors, errors
        ctx.close()
