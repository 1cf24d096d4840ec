"""Every scenario is readable with the viewer's instruments alone (issue 13).

A learner in Chromium opens a drill of each scenario (all 11 slugs, healthy included) and takes
every number through the page: search "ProfilerStep" and step through the hits reading each
step's start and duration in the details panel; drag across whole steps on the time axis and read
the range table (rows busy/idle/exposed, slices by name); drag over rank 0's CPU rows and its
compute row for their own tables (its typical kernel is the table's median); step through launch
calls by search; after each synchronize call, put the keyboard on the compute row and press → for
the next kernel; step through one step's NCCL kernels by search and read their arguments. The
written rules in ``reading_rules`` turn those readings into the five sentences; the test commits
them and checks the reveal grades each one right. The key is read only after the reveal, to say
what was off when a sentence is wrong.

Seeds: ``TT_INSTRUMENT_SEEDS`` (comma-separated, default "7"). Screenshots of each selection
table and reveal, and the readings, go to test-artifacts/instruments/.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from drills.models import Attempt
from drills.trainer import services
from scenarios import engine, pool
from tests.browser.reading_rules import MANY_SYNCS, MOSTLY_IDLE, Readings, read
from tests.browser.test_drill_e2e import ATTEMPT_URL, sign_up
from tests.conftest import DESIGN_SLUGS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "instruments"
SLUGS = list(DESIGN_SLUGS)
SEEDS = [int(s) for s in os.environ.get("TT_INSTRUMENT_SEEDS", "7").split(",") if s.strip()]
V = "document.querySelector('#timeline').viewer"


def test_the_slugs_are_the_engines():
    assert sorted(SLUGS) == sorted(engine.SCENARIOS)


@pytest.fixture
def page(open_page, live_server):
    return open_page(width=1400)


# --------------------------------------------------------------------------- reading the page

_UNIT = {"µs": 1e-3, "ms": 1.0, "s": 1e3}


def dur_ms(text: str) -> float:
    """'40.2 µs' / '1.2345 ms' / '1.234567 s' (the viewer's own format) → ms."""
    num, unit = text.strip().replace(",", "").split()
    return float(num) * _UNIT[unit]


def number(text: str) -> float:
    return float(text.strip().replace(",", "").replace("%", "") or "nan")


def details(page) -> dict[str, str]:
    """The details panel of the selected slice: its title and every label → value."""
    return page.evaluate(
        """() => { const box = document.querySelector('.tt-details');
        const out = {name: (box.querySelector('.tt-d-title') || {}).textContent || ''};
        for (const it of box.querySelectorAll('.tt-d-item')) {
          const k = it.querySelector('dt').textContent.trim();
          out[k] = it.querySelector('dd').textContent.trim();
        }
        return out; }"""
    )


def table(page) -> tuple[list[dict], dict[str, dict]]:
    """The range table: rows (rank, name, busy, idle, exposed) and names (count, total, mean)."""
    rows_data = page.evaluate(
        """() => [...document.querySelectorAll('.tt-agg-rows tbody tr')].map(
            (tr) => [...tr.children].map((c) => c.textContent))"""
    )
    rows = []
    for cells in rows_data:
        m = re.match(r"rank (\d+) · (.*)", cells[0])
        rank, name = (int(m.group(1)), m.group(2)) if m else (0, cells[0])
        row = {"rank": rank, "name": name, "busy": number(cells[1]), "idle": number(cells[2])}
        row["count"], row["median"] = number(cells[4]), number(cells[5] or "0")
        row["kind"] = "nccl" if "(NCCL)" in name else "gpu" if "(compute)" in name else "cpu"
        if len(cells) > 6 and cells[6].strip():
            row["exposed"] = number(cells[6])
        rows.append(row)
    names_data = page.evaluate(
        """() => [...document.querySelectorAll('.tt-agg-names tbody tr')]
            .filter((tr) => tr.children.length === 6)
            .map((tr) => [tr.children[0].title || tr.children[0].textContent,
                          ...[...tr.children].slice(1).map((c) => c.textContent)])"""
    )
    names = {
        c[0]: {"count": number(c[1]), "total": number(c[2]), "mean": number(c[3])}
        for c in names_data
    }
    return rows, names


class Instruments:
    """The learner's hands on the viewer: search and step, drag to measure, → on a row."""

    def __init__(self, page):
        self.page = page

    def hover_timeline(self) -> dict:
        self.page.locator("#timeline .tt-stage").scroll_into_view_if_needed()
        box = self.page.evaluate(f"{V}.canvas.getBoundingClientRect().toJSON()")
        self.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        return box

    def search_all(self, query: str, limit: int = 10_000, until_ms: float = 1e18) -> list[dict]:
        """Type the query in the find box and step through the hits with Enter (from the start
        of the view), up to `limit` hits or the first one starting after `until_ms`."""
        box = self.page.locator(".tt-search")
        box.fill(query)
        box.press("Enter")
        count_text = self.page.locator(".tt-match-count").inner_text()
        total = int(count_text.split("/")[-1].strip().replace(",", ""))
        hits = [details(self.page)]
        for _ in range(min(total, limit) - 1):
            if dur_ms(hits[-1]["Start"]) > until_ms:
                break
            box.press("Enter")
            hits.append(details(self.page))
        box.press("Escape")
        return hits

    def next_start_after(self, t_ms: float, row: int, span_ms: float) -> float:
        """The start of the first slice on `row` after t: the view starts at t, the row's label
        is clicked (the keyboard cursor goes there) and → selects its next slice."""
        self.page.evaluate(f"{V}.zoomTo({t_ms * 1e3}, {(t_ms + span_ms) * 1e3})")
        self.page.evaluate(f"{V}.scrollToRow({row})")
        self.page.locator("#timeline .tt-stage").scroll_into_view_if_needed()
        x = self.page.evaluate(f"{V}.canvas.getBoundingClientRect().left") + 20
        self.page.mouse.click(x, self.page.evaluate(f"{V}.rowClientY({row})"))
        self.page.keyboard.press("Escape")  # no selection: → starts from the view's start
        self.page.keyboard.press("ArrowRight")
        return dur_ms(details(self.page)["Start"])

    def view(self, t0_ms: float, t1_ms: float) -> None:
        pad = (t1_ms - t0_ms) * 0.02
        self.page.evaluate(f"{V}.zoomTo({(t0_ms - pad) * 1e3}, {(t1_ms + pad) * 1e3})")

    def drag(self, t0_ms: float, t1_ms: float, first: int | None = None, last: int | None = None):
        """Drag from t0 to t1 (holding Alt: no snapping) along the time axis (every row) or from
        row `first` to row `last`, and read the range table."""
        if first is not None:
            self.page.evaluate(f"{V}.scrollToRow({first})")
        self.view(t0_ms, t1_ms)
        self.page.locator("#timeline .tt-stage").scroll_into_view_if_needed()
        x0 = self.page.evaluate(f"{V}.timeToClientX({t0_ms * 1e3})")
        x1 = self.page.evaluate(f"{V}.timeToClientX({t1_ms * 1e3})")
        if first is None:
            y0 = y1 = self.page.evaluate(f"{V}.canvas.getBoundingClientRect().top") + 12
        else:
            y0 = self.page.evaluate(f"{V}.rowClientY({first})") - 2
            y1 = self.page.evaluate(f"{V}.rowClientY({last})") + 2
        m = self.page.mouse
        self.page.keyboard.down("Alt")
        m.move(x0, y0)
        m.down()
        m.move((x0 + x1) / 2, (y0 + y1) / 2, steps=3)
        m.move(x1, y1, steps=3)
        m.up()
        self.page.keyboard.up("Alt")
        self.page.wait_for_selector(".tt-agg:not([hidden])")
        rows, names = table(self.page)
        if first is not None:
            assert len(rows) == last - first + 1, (first, last, [r["name"] for r in rows])
        return rows, names

    def drag_all_rows(self, t0_ms: float, t1_ms: float):
        return self.drag(t0_ms, t1_ms)

    def drag_rows(self, t0_ms: float, t1_ms: float, first: int, last: int):
        return self.drag(t0_ms, t1_ms, first, last)

    def clear(self) -> None:
        self.page.locator(".tt-agg-close").click()


def row_layout(page) -> list[dict]:
    """Each row's rank and label as the row list shows them (the table's first column)."""
    ins = Instruments(page)
    ins.drag_all_rows(0.0, 1.0)  # a sliver: the table lists every row in order
    rows, _ = table(page)
    ins.clear()
    return rows


def rank_windows(steps: list[dict], tol_ms: float = 1.0) -> dict[tuple[float, float], set]:
    """Ranks grouped by the span of their whole steps (first start, last end), spans within
    `tol_ms` of one another counted as one (their union)."""
    span: dict[int, list[float]] = {}
    for s in steps:
        a, b = span.setdefault(s["rank"], [s["start"], s["start"] + s["dur"]])
        span[s["rank"]] = [min(a, s["start"]), max(b, s["start"] + s["dur"])]
    groups: list[tuple[list[float], set]] = []
    for rank, (a, b) in sorted(span.items()):
        near = (g for g in groups if abs(g[0][0] - a) < tol_ms and abs(g[0][1] - b) < tol_ms)
        g = next(near, None)
        if g is None:
            groups.append(([a, b], {rank}))
        else:
            g[0][0], g[0][1] = min(g[0][0], a), max(g[0][1], b)
            g[1].add(rank)
    return {(w[0], w[1]): ranks for w, ranks in groups}


def take_readings(page, name: str = "trace") -> Readings:
    ins = Instruments(page)
    ins.hover_timeline()
    layout = row_layout(page)
    steps = [
        {"rank": int(d["Rank"]), "start": dur_ms(d["Start"]), "dur": dur_ms(d["Duration"])}
        for d in ins.search_all("ProfilerStep")
        if d["Row"] == "python main thread"
    ]
    t0 = min(s["start"] for s in steps)
    t1 = max(s["start"] + s["dur"] for s in steps)
    rows, all_names = ins.drag_all_rows(t0, t1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator(".tt-agg").screenshot(path=str(ARTIFACTS / f"selection-{name}.png"))
    ins.clear()
    # each rank's profiler opens at its own step boundary (a pipeline's last stage runs its steps
    # ahead of the others'): where the ranks' whole steps do not line up, each group of ranks
    # that share a window is read again over its own steps (the names stay the whole drag's)
    for (a, b), ranks in rank_windows(steps).items():
        if a - t0 > 1.0 or t1 - b > 1.0:
            part, _ = ins.drag_all_rows(a, b)
            ins.clear()
            mine = iter([r for r in part if r["rank"] in ranks])
            rows = [next(mine) if r["rank"] in ranks else r for r in rows]
    r0 = [i for i, r in enumerate(layout) if r["rank"] == layout[0]["rank"]]
    cpu = [i for i in r0 if layout[i]["kind"] == "cpu"]
    gpu = next(i for i in r0 if layout[i]["kind"] == "gpu")
    nccl = next((i for i in r0 if layout[i]["kind"] == "nccl"), None)
    steps0 = sorted((s for s in steps if s["rank"] == layout[0]["rank"]), key=lambda s: s["start"])
    a0, b0 = steps0[0]["start"], steps0[-1]["start"] + steps0[-1]["dur"]
    _, cpu0_names = ins.drag_rows(a0, b0, cpu[0], cpu[-1])
    ins.clear()
    gpu0_rows, gpu0_names = ins.drag_rows(a0, b0, gpu, gpu)
    ins.clear()
    readings = Readings(steps, rows, all_names, cpu0_names, gpu0_names)
    readings.kernel_median = gpu0_rows[0]["median"]
    mid = steps0[len(steps0) // 2]
    mid_end = mid["start"] + mid["dur"]
    syncs = sum(d["count"] for n, d in cpu0_names.items() if n.endswith("Synchronize"))
    if syncs / len(steps0) >= MANY_SYNCS:
        # the refill gap after each synchronize of one step: from its end to the next kernel
        ins.view(mid["start"], mid_end)
        ends = [
            dur_ms(d["End"])
            for d in ins.search_all("Synchronize", until_ms=mid_end)
            if int(d["Rank"]) == layout[0]["rank"]
            and mid["start"] <= dur_ms(d["Start"]) < mid_end
            and d["Row"] in {layout[i]["name"] for i in cpu}
        ]
        readings.refill_gaps = [ins.next_start_after(e, gpu, mid["dur"] / 2) - e for e in ends]
    comp0 = next(r for r in rows if r["kind"] == "gpu")
    if len({s["rank"] for s in steps}) == 1 and comp0["idle"] >= MOSTLY_IDLE * (t1 - t0):
        # one GPU idle much of the time: how fast are kernels launched, how long do they run?
        # launch cadence: zoom into the middle of a step, step through launch calls by search
        ins.view(mid["start"] + 0.35 * mid["dur"], mid["start"] + 0.65 * mid["dur"])
        launches = ins.search_all("LaunchKernel", limit=41)
        readings.launch_starts = [
            dur_ms(d["Start"]) for d in launches if int(d["Rank"]) == layout[0]["rank"]
        ]
    if nccl is not None:
        # the collectives of one step, every rank: search and step through them
        ins.view(mid["start"], mid_end)
        hits = ins.search_all("nccl", until_ms=mid_end)
        readings.collectives = [
            {
                "rank": int(d["Rank"]),
                "start": dur_ms(d["Start"]),
                "dur": dur_ms(d["Duration"]),
                "name": d["name"],
                "args": {
                    k: number(v.split("(")[0]) if k in ("In msg nelems", "Group size") else v
                    for k, v in d.items()
                },
            }
            for d in hits
            if "(NCCL)" in d["Row"] and mid["start"] <= dur_ms(d["Start"]) < mid_end
        ]
    return readings


# --------------------------------------------------------------------------- the drill


def commit(page, reading) -> None:
    page.fill("#id_step_ms", f"{reading.numbers['step']:.3f}")
    page.fill("#id_gap_ms", f"{reading.numbers['gap']:.3f}")
    page.select_option("#id_scenario", reading.scenario)
    page.select_option("#id_measurement", reading.measurement)
    page.fill("#id_measurement_value", f"{reading.value:.4f}")
    page.select_option("#id_fix", reading.fix)
    page.fill("#id_expected_step_ms", f"{reading.expected_step_ms:.3f}")
    page.fill("#id_arithmetic", reading.arithmetic)
    page.click("#diagnosis-form button[type=submit]")
    page.wait_for_selector("[data-scenario]")
    # the reveal fetches "after the fix" (regenerated on first view): let it finish, so no
    # request of this test is still writing when the live server's database is flushed
    page.wait_for_selector("#after-fix #step-after", timeout=60_000)
    page.wait_for_selector("#after-fix .compare-side:nth-child(2) canvas", timeout=60_000)
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("slug", SLUGS)
def test_each_scenario_is_read_right_from_the_instruments(
    page, live_server, monkeypatch, slug, seed
):
    pool.build_trace(slug, seed).save()
    monkeypatch.setattr(services, "next_scenario", lambda user, now=None, **_: slug)
    monkeypatch.setattr(pool, "schedule_refill", lambda scenario: None)
    sign_up(page, live_server, f"reader{seed}")
    page.goto(f"{live_server.url}/drill/")
    page.check("input[name=mode][value=practice]")
    page.click("#start-drill")
    page.wait_for_url(ATTEMPT_URL)
    page.wait_for_function(f"() => {V}")
    readings = take_readings(page, f"{slug}-{seed}")
    reading = read(readings)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"readings-{slug}-{seed}.json").write_text(
        json.dumps(
            {
                "numbers": reading.numbers,
                "collectives": len(readings.collectives),
                "answer": [
                    reading.scenario,
                    reading.measurement,
                    reading.value,
                    reading.expected_step_ms,
                ],
            },
            indent=1,
            default=str,
        )
    )
    commit(page, reading)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"reveal-{slug}-{seed}.png"), full_page=True)
    graded = {
        r.get_attribute("data-sentence"): r.get_attribute("data-correct")
        for r in page.locator("tr.sentence").all()
    }
    attempt = Attempt.objects.select_related("trace").get(pk=ATTEMPT_URL.search(page.url).group(1))
    g = attempt.trace.key["grading"]
    said = {k: round(v, 3) for k, v in reading.numbers.items()}
    truth = {k: g[k] for k in ("step_ms", "gap_ms", "expected_step_ms")}
    truth["value"] = g["measurements"].get(reading.measurement)
    where = f"{slug} seed {seed}: read {reading.scenario} {said}; key {truth}"
    assert page.locator("[data-scenario]").get_attribute("data-scenario") == slug, where
    fields = ("scenario", "measurement", "value", "step", "gap", "fix", "expected")
    wrong = [f for f in fields if not getattr(attempt, f"{f}_correct")]
    assert not wrong, (wrong, where)
    assert set(graded.values()) == {"yes"}, (graded, where)
    assert not page.errors, page.errors
