"""Trace engine benchmark (not a test).

For each scenario at default size, side by side in one run:
  * traces/s of `engine.generate`,
  * ratio of generation time to a plain orjson dump of the same events (the Perfetto event dicts),
  * stored bytes per event (`engine.dumps` size ÷ n_events),
  * export time (`perfetto_bytes`) for reference.

Each timing is the best of --repeat runs (default 3), so a busy machine skews the ratio less.

Usage: .venv/bin/python bench/engine_bench.py [--seeds N] [--repeat K]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scenarios import engine


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"{'scenario':28} {'events':>7} {'traces/s':>9} {'gen/dump':>9} {'B/event':>8} "
          f"{'export ms':>9}")  # fmt: skip
    ratios = []
    for slug in engine.SCENARIOS:
        gen_t, dump_t, exp_t, bpe, nev = [], [], [], [], []
        for seed in range(1, a.seeds + 1):
            g, dmp, ex = [], [], []
            for _ in range(max(1, a.repeat)):
                t0 = time.perf_counter()
                tr = engine.generate(slug, seed)
                t1 = time.perf_counter()
                evs = engine.to_perfetto(tr)["traceEvents"]
                t2 = time.perf_counter()
                orjson.dumps(evs)
                t3 = time.perf_counter()
                engine.perfetto_bytes(tr)
                t4 = time.perf_counter()
                g.append(t1 - t0)
                dmp.append(t3 - t2)
                ex.append(t4 - t3)
            gen_t.append(min(g))
            dump_t.append(min(dmp))
            exp_t.append(min(ex))
            bpe.append(len(engine.dumps(tr)) / tr.n_events)
            nev.append(tr.n_events)
        r = sum(gen_t) / sum(dump_t)
        ratios.append(r)
        ev_ms = 1000 * statistics.mean(exp_t)
        print(f"{slug:28} {int(statistics.mean(nev)):>7} {len(gen_t) / sum(gen_t):>9.2f} "
              f"{r:>9.2f} {statistics.mean(bpe):>8.2f} {ev_ms:>9.1f}")  # fmt: skip
    print(f"median gen/dump ratio {statistics.median(ratios):.2f}, max {max(ratios):.2f}")


if __name__ == "__main__":
    main()
