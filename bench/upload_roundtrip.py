"""Round trip: our own HTA exports (every scenario, several seeds) read back by the upload
analysis. Prints, per scenario, how often the top finding names the injected scenario (healthy:
how often no finding fires), and the share where any finding names it.

    python bench/upload_roundtrip.py [--seeds N] [--first-seed S]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scenarios import engine
from scenarios.traceanalysis import analyse
from scenarios.traceanalysis.ingest import Limits, load


def upload_bytes(slug: str, seed: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for r, data in engine.hta_bytes(engine.generate(slug, seed)).items():
            z.writestr(f"rank-{r}.json", data)
    return buf.getvalue()


def verdict(slug: str, seed: int) -> tuple[bool, bool, list[str]]:
    """(top finding right / healthy silent, any finding right, slugs found)"""
    data = upload_bytes(slug, seed)
    found = [f["slug"] for f in analyse(load("job.zip", io.BytesIO(data), Limits()))["findings"]]
    if slug == "healthy":
        return not found, not found, found
    return bool(found) and found[0] == slug, slug in found, found


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=int(os.environ.get("SEEDS", 10)))
    ap.add_argument("--first-seed", type=int, default=1000)
    args = ap.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    t0 = time.perf_counter()
    tot_top = tot_any = n_all = 0
    print(f"{'scenario':28s} {'top':>6s} {'any':>6s}  wrong answers")
    for slug in engine.SCENARIOS:
        top = anyhit = 0
        wrong: Counter[str] = Counter()
        for seed in seeds:
            ok_top, ok_any, found = verdict(slug, seed)
            top += ok_top
            anyhit += ok_any
            if not ok_top:
                wrong[found[0] if found else "(none)"] += 1
        n = len(seeds)
        tot_top, tot_any, n_all = tot_top + top, tot_any + anyhit, n_all + n
        print(f"{slug:28s} {top / n:6.0%} {anyhit / n:6.0%}  {dict(wrong) or ''}")
    print(f"{'all':28s} {tot_top / n_all:6.0%} {tot_any / n_all:6.0%}  "
          f"({n_all} traces, {time.perf_counter() - t0:.0f} s)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
