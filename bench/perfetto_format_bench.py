"""Would a protobuf trace open faster in Perfetto than the JSON export? (not a test)

    python bench/perfetto_format_bench.py [--rounds 5] [--browser]

The bench trace of ``perfetto_bench.py`` (an 8-rank straggler) written three ways: the Perfetto
JSON export, the same events as Perfetto protobuf (``perfetto_proto.py``, a prototype), and a
"boot" JSON with the same processes and threads but one slice per thread (what opening costs
when the trace itself costs nothing).

  * Node: Perfetto v52's trace_processor.wasm (tests/scenarios/readers/perfetto_tp.py) loads each
    file ``--rounds`` times, alternating; medians of load_ms, and the slice / flow / thread-track
    counts of JSON and protobuf side by side (they must match).
  * ``--browser``: the served Perfetto UI in headless Chromium (gunicorn + whitenoise, signed in)
    opens each file from a static URL, alternating, in one browser context (so every open after
    the first is warm): seconds until every process is drawn; plus the bare home page.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson
from common import ROOT, django_with_static_root, env_defaults, prepare_served_site, setup_database

PROBE = """() => [...document.querySelectorAll('.pf-track-tree .pf-track')]
  .map(t => t.getAttribute('ref'))"""
HOME = "() => !!document.querySelector('.pf-home-page')"
COUNTS = {
    "slices": "select count(*) as n from slice",
    "flows": "select count(*) as n from flow",
    "thread tracks": "select count(*) as n from thread_track",
}


def boot_json(full: bytes) -> bytes:
    """The trace's metadata and the first slice of each thread only."""
    doc = orjson.loads(full)
    seen: set[tuple[int, int]] = set()
    keep = []
    for e in doc["traceEvents"]:
        if e["ph"] == "M":
            keep.append(e)
        elif e["ph"] == "X" and (e["pid"], e["tid"]) not in seen:
            seen.add((e["pid"], e["tid"]))
            keep.append(e)
    doc["traceEvents"] = keep
    return orjson.dumps(doc)


def node_rounds(files: dict[str, Path], rounds: int) -> None:
    from tests.scenarios.readers import perfetto_tp

    jobs = [(path, COUNTS) for _ in range(rounds) for path in files.values()]
    results = perfetto_tp.run_many(jobs, workers=1, timeout=1800)
    by_path: dict[str, list] = {}
    for r in results:
        if not r.ok:
            raise RuntimeError(f"{r.trace}: {r.error}")
        by_path.setdefault(r.trace, []).append(r)
    print(f"trace_processor.wasm under Node ({perfetto_tp.engine_version()}), {rounds} rounds:")
    for label, path in files.items():
        rs = by_path[str(path)]
        counts = ", ".join(f"{k} {rs[0].tables[k][0]['n']}" for k in COUNTS)
        print(
            f"  {label:8s} load_ms median {statistics.median(r.load_ms for r in rs):7.0f} "
            f"{[round(r.load_ms) for r in rs]}; {counts}"
        )


def browser_rounds(files: dict[str, Path], rounds: int, world: int) -> None:
    where, cleanup = setup_database("tt_perfetto_format_bench")
    static_root = django_with_static_root()
    server = None
    try:
        from django.contrib.auth import get_user_model
        from playwright.sync_api import sync_playwright
        from server import Gunicorn, signed_in_browser, signed_in_session

        prepare_served_site()
        (static_root / "t").mkdir()
        for path in files.values():  # whitenoise sends the .gz sibling to a gzip client
            (static_root / "t" / path.name).write_bytes(path.read_bytes())
            (static_root / "t" / f"{path.name}.gz").write_bytes(gzip.compress(path.read_bytes()))
        server = Gunicorn(workers=2)
        user = get_user_model().objects.create_user("format-bench", password="x-bench-pass-1")
        session = signed_in_session(server.url, user)
        opens: list[tuple[str, str | None]] = [("home", None), *files.items()]  # type: ignore[list-item]
        times: dict[str, list[float]] = {label: [] for label, _ in opens}
        with sync_playwright() as p:
            browser, context = signed_in_browser(p, server.url, session)
            for i in range(rounds + 1):
                for label, path in opens:
                    url = f"{server.url}/perfetto/"
                    if path is not None:
                        url += f"#!/?url={server.url}/static/t/{Path(path).name}"
                    tab = context.new_page()
                    start = time.perf_counter()
                    tab.goto(url, wait_until="commit")
                    while time.perf_counter() < start + 60:
                        try:
                            if path is None:
                                done = tab.evaluate(HOME)
                            else:
                                done = len(tab.evaluate(PROBE)) >= 2 * world
                        except Exception:  # navigating
                            done = False
                        if done:
                            break
                        time.sleep(0.02)
                    else:
                        raise RuntimeError(f"{label}: not drawn within 60 s")
                    took = time.perf_counter() - start
                    tab.close()
                    if i:  # round 0 fills the cache
                        times[label].append(took)
            browser.close()
        print(f"Perfetto UI in headless Chromium ({where}), warm cache, {rounds} rounds:")
        for label, ts in times.items():
            what = "home page shown" if label == "home" else "every process drawn"
            print(
                f"  {label:8s} {what}: median {statistics.median(ts):.2f} s "
                f"{[round(t, 2) for t in ts]}"
            )
        print(f"  ({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")
    finally:
        if server is not None:
            server.stop()
        cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--browser", action="store_true", help="also open each in the served UI")
    args = parser.parse_args()
    env_defaults()
    from perfetto_proto import perfetto_proto_bytes

    from scenarios import engine

    seed = next(s for s in range(1, 200) if engine.generate("straggler", s).world == 8)
    trace = engine.generate("straggler", seed)
    out = Path(tempfile.mkdtemp(prefix="tracetrack-format-bench-"))
    t0 = time.perf_counter()
    js = engine.perfetto_bytes(trace)
    t1 = time.perf_counter()
    pb = perfetto_proto_bytes(trace)
    t2 = time.perf_counter()
    files = {"json": out / "trace.json", "protobuf": out / "trace.pb", "boot": out / "boot.json"}
    files["json"].write_bytes(js)
    files["protobuf"].write_bytes(pb)
    files["boot"].write_bytes(boot_json(js))
    print(
        f"trace: {trace.world} ranks, {len(trace.cols['ts'])} events; JSON {len(js) / 1e6:.1f} MB "
        f"(gzip {len(gzip.compress(js)) / 1e6:.2f} MB, built in {t1 - t0:.2f} s), protobuf "
        f"{len(pb) / 1e6:.1f} MB (gzip {len(gzip.compress(pb)) / 1e6:.2f} MB, built in "
        f"{t2 - t1:.2f} s)"
    )
    sys.path.insert(0, str(ROOT))
    node_rounds(files, args.rounds)
    if args.browser:
        browser_rounds(files, args.rounds, trace.world)
    return 0


if __name__ == "__main__":
    sys.exit(main())
