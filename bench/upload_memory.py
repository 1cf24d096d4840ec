"""Memory of a worker processing the largest upload the default limits allow.

Builds a Kineto job (8 ranks, events tiled from an engine export) sized to the event limit, zips
it, then converts it (read + parse + timeline + Perfetto + analysis, exactly what the Celery task
does) in a fresh child process and reports the child's peak RSS next to the upload's sizes.

    python bench/upload_memory.py [--events N]
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from scenarios import engine  # noqa: E402
from scenarios.traceanalysis.ingest import Limits  # noqa: E402

CHILD = """
import io, sys, gzip, resource, time, orjson
sys.path.insert(0, {root!r})
from scenarios.traceanalysis import analyse, to_perfetto, to_timeline
from scenarios.traceanalysis.ingest import Limits, load
data = open({path!r}, 'rb').read()
t = time.perf_counter()
ranks = load('job.zip', io.BytesIO(data), Limits())
tl = gzip.compress(orjson.dumps(to_timeline(ranks)), 6)
pf = gzip.compress(to_perfetto(ranks), 6)
a = analyse(ranks)
print(orjson.dumps({{"s": time.perf_counter() - t, "events": sum(r.n for r in ranks),
  "timeline_gz": len(tl), "perfetto_gz": len(pf),
  "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}).decode())
"""


def build(target_events: int) -> bytes:
    tr = engine.generate("healthy", 1, hardware="h100")
    files = engine.hta_bytes(tr)
    per_rank = target_events // len(files)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for r, data in files.items():
            doc = orjson.loads(data)
            ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
            span = max(e["ts"] + e["dur"] for e in ev) - min(e["ts"] for e in ev) + 1000
            out, k = [], 0
            while len(out) < per_rank:
                for e in ev:
                    e2 = dict(e, ts=round(e["ts"] + k * span, 3))
                    if "args" in e2 and "correlation" in e2["args"]:
                        e2["args"] = dict(
                            e2["args"], correlation=e2["args"]["correlation"] + k * 10**7
                        )
                    if e2["name"].startswith("ProfilerStep#"):
                        e2["name"] = f"ProfilerStep#{int(e2['name'][13:]) + k * 100}"
                    out.append(e2)
                    if len(out) >= per_rank:
                        break
                k += 1
            doc["traceEvents"] = out
            head = {x: y for x, y in doc.items() if x != "traceEvents"}
            text = json.dumps(head)[:-1] + ', "traceEvents": ' + orjson.dumps(out).decode() + "}"
            z.writestr(f"rank-{r}.json", text)
    return buf.getvalue()


def main() -> int:
    lim = Limits()
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=lim.max_events - 1000)
    args = ap.parse_args()
    t = time.perf_counter()
    data = build(args.events)
    path = Path("/tmp/tt_upload_memory.zip")
    path.write_bytes(data)
    with zipfile.ZipFile(path) as z:
        unpacked = sum(i.file_size for i in z.infolist())
    print(f"built in {time.perf_counter() - t:.0f} s: {len(data) / 2**20:.1f} MiB zip, "
          f"{unpacked / 2**20:.0f} MiB of JSON (limits {lim.max_upload_bytes >> 20} / "
          f"{lim.max_unpacked_bytes >> 20} MiB, {lim.max_events:,} events)")  # fmt: skip
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(ROOT), path=str(path))],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    r = orjson.loads(out.stdout.strip().splitlines()[-1])
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"processed {r['events']:,} events in {r['s']:.0f} s; stored timeline "
        f"{r['timeline_gz'] / 2**20:.1f} MiB + Perfetto {r['perfetto_gz'] / 2**20:.1f} MiB (gzip)"
    )
    print(
        f"worker peak RSS {r['rss_mib']:.0f} MiB = {r['rss_mib'] * 2**20 / unpacked:.1f}x the "
        f"unpacked JSON (this builder process: {base:.0f} MiB)"
    )
    path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
