"""How much of a warm "Open in Perfetto" is the trace's size? (not a test)

    python bench/perfetto_trace_size.py [--rounds 4]

The bench trace of ``perfetto_bench.py`` (an 8-rank straggler, 45 MB of Perfetto JSON) served
three ways as static files (gzipped): as exported; without any slice's ``args`` (the profiler's
fields a learner reads in Perfetto's details panel: about a quarter of the bytes); and the
"boot" JSON of ``perfetto_format_bench.py`` (same processes and threads, one slice per thread:
what an open costs when the trace costs nothing). Each is opened in a learner's browser (on-disk
profile, site by host name, as ``perfetto_bench.py``) alternating, after one warm-up round:
seconds from ``window.open`` to every process drawn. Also the byte share of each event field.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
from urllib.parse import quote

from common import django_with_static_root, env_defaults, prepare_served_site, setup_database
from server import CHROMIUM_ARGS, Gunicorn, signed_in_session

HOST = "tracetrack.test"


def field_bytes(events: list[dict]) -> dict[str, float]:
    """MB of the JSON each top-level event field takes (key, value and punctuation)."""
    size: collections.Counter[str] = collections.Counter()
    for e in events:
        for k, v in e.items():
            size[k] += len(json.dumps(v, separators=(",", ":"))) + len(k) + 4
    return {k: v / 1e6 for k, v in size.most_common()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("ALLOWED_HOSTS", f"localhost,127.0.0.1,testserver,{HOST}")
    env_defaults()
    _, cleanup = setup_database("tt_perfetto_trace_size")
    static_root = django_with_static_root()
    server = None
    profile = tempfile.mkdtemp(prefix="tracetrack-bench-chromium-")
    try:
        from django.contrib.auth import get_user_model
        from perfetto_boot_profile import one_open
        from perfetto_format_bench import boot_json
        from playwright.sync_api import sync_playwright

        from scenarios import engine
        from scenarios.engine import export

        prepare_served_site()
        seed = next(s for s in range(1, 200) if engine.generate("straggler", s).world == 8)
        trace = engine.generate("straggler", seed)
        full = export.perfetto_bytes(trace)
        doc = json.loads(full)
        print(
            "MB per event field: "
            + ", ".join(f"{k} {mb:.1f}" for k, mb in field_bytes(doc["traceEvents"]).items())
        )
        for e in doc["traceEvents"]:
            if e.get("ph") == "X":
                e.pop("args", None)
        variants = {
            "as exported": full,
            "no slice args": json.dumps(doc, separators=(",", ":")).encode(),
            "boot (1 slice/thread)": boot_json(full),
        }
        (static_root / "t").mkdir()
        for i, body in enumerate(variants.values()):
            (static_root / "t" / f"{i}.json").write_bytes(body)
            (static_root / "t" / f"{i}.json.gz").write_bytes(gzip.compress(body, 6))
        user = get_user_model().objects.create_user("perfetto-size", password="x-bench-pass-1")
        server = Gunicorn(workers=2)
        session = signed_in_session(server.url, user)
        origin = f"http://{HOST}:{server.url.rsplit(':', 1)[1]}"
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile,
                executable_path="/usr/bin/chromium",
                args=[
                    *CHROMIUM_ARGS,
                    f"--host-resolver-rules=MAP {HOST} 127.0.0.1",
                    f"--unsafely-treat-insecure-origin-as-secure={origin}",
                ],
                viewport={"width": 1440, "height": 900},
            )
            context.add_cookies(
                [{"name": "sessionid", "value": session.cookies["sessionid"], "url": origin}]
            )
            page = context.new_page()
            page.goto(f"{origin}/")
            urls = [
                "/perfetto/#!/?url=" + quote(f"{origin}/static/t/{i}.json", safe="")
                for i in range(len(variants))
            ]
            got: dict[str, list[float]] = {name: [] for name in variants}
            for r in range(args.rounds + 1):
                for name, url in zip(variants, urls, strict=True):
                    marks = one_open(context, page, 2 * trace.world, opener=url)
                    if r:
                        got[name].append(marks["every process drawn"])
            context.close()
        print(f"warm opens in a learner's browser, {args.rounds} rounds alternating:")
        for name, body in variants.items():
            ts = got[name]
            print(
                f"  {name:22} {len(body) / 1e6:5.1f} MB: median {statistics.median(ts):.2f} s"
                f" ({' '.join(f'{t:.2f}' for t in ts)})"
            )
        print(f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")
        return 0
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(profile, ignore_errors=True)
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
