"""Evidence-lane benchmark (not a test): the reveal's highlight frame with every instance marked.

Starvation and straggler keys mark every step's wait on every (waiting) rank: up to ~70 evidence
spans on an 8-rank trace, each with its own label laid out in lanes. This generates such traces
with the engine, serves their viewer timeline, opens tests/browser/timeline-demo.html in headless
Chromium and prints, measured in the page with performance.now(): the overlay frame with the
evidence drawn (labels laid out) at the whole-trace zoom the reveal opens with, against the same
frame with the old 3-span evidence and with none (median and best of --reps: the machine is
shared, so the best is the cost and the median shows the noise), plus whether any two label boxes
intersect.

    .venv/bin/python bench/evidence_bench.py [--seeds 2] [--reps 20]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scenarios import engine
from tests.browser.timeline_fixture import encode, serve

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARGS.append("--no-first-run")

FRAME = """(ev) => { viewer.zoomTo(-1e12, 1e12); viewer.highlight(ev); const t = [];
  for (let i = 0; i < REPS; i++) { const s = performance.now(); viewer.highlightLayout();
    t.push(performance.now() - s); }
  const L = viewer.highlightLayout().labels; let hits = 0;
  for (let i = 0; i < L.length; i++) for (let j = i + 1; j < L.length; j++) {
    const a = L[i], b = L[j];
    if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) hits++; }
  t.sort((a, b) => a - b);
  return {median: t[t.length >> 1], min: t[0], labels: L.length,
          overlaps: hits}; }"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    from playwright.sync_api import sync_playwright

    cases = []
    for slug in ("input-starvation", "straggler"):
        found = 0
        for seed in range(1, 40):
            tr = engine.generate(slug, seed)
            if tr.world < 8:
                continue
            cases.append((slug, seed, tr))
            found += 1
            if found >= a.seeds:
                break
    data = {f"{s}-{seed}": encode(engine.to_timeline(tr)) for s, seed, tr in cases}
    with serve(data) as (base, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        print(f"{'trace':<22}{'spans':>6}{'labels':>7}{'frame ms med':>14}{'min':>7}"
              f"{'  3 spans med':>14}{'  none med':>11}{'  overlaps':>10}")  # fmt: skip
        for slug, seed, tr in cases:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"{base}/tests/browser/timeline-demo.html?src=/__data/{slug}-{seed}")
            page.wait_for_function("window.__ttDemo && window.__ttDemo.ready", timeout=60_000)
            js = FRAME.replace("REPS", str(a.reps))
            ev = tr.key.evidence
            full = page.evaluate(js, ev)
            few = page.evaluate(js, ev[:3])
            none = page.evaluate(js, [])
            print(
                f"{slug + ' ' + str(seed):<22}{len(ev):>6}{full['labels']:>7}"
                f"{full['median']:>14.2f}{full['min']:>7.2f}{few['median']:>14.2f}"
                f"{none['median']:>11.2f}{full['overlaps']:>10}"
            )
            page.close()
        browser.close()


if __name__ == "__main__":
    main()
