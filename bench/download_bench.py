"""perfetto.json download vs the same stored bytes as a static file, under gunicorn (not a test).

    python bench/download_bench.py [--samples 200] [--other /path/to/another/checkout]

A throwaway database gets one default-size 8-rank pool trace claimed by a learner; its stored
gzip export is also put under STATIC_ROOT (with its inflated sibling, as collectstatic would
leave it), so whitenoise serves the very same bytes. gunicorn (2 sync workers, sendfile on)
serves this checkout; with ``--other``, a second gunicorn serves another checkout of the project
(say an export of main) on the same database, static folder and export spool, and the requests
alternate between the two servers, so both ratios come from the same minutes of a noisy box.

Each sample is one GET with gzip accepted on a new connection, timed until the last byte is
read (not inflated). Printed: median, p90, the ratio of medians against the static file
(target <= 1.2x), the median of each round's ratio (the static file is fetched just before),
and that a matching If-None-Match answers 304.
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from common import env_defaults, gzip_download, setup_database
from server import VENV_BIN, free_port, signed_in_session

BENCH = Path(__file__).resolve().parent


def serve(root: Path) -> tuple[subprocess.Popen, str]:
    """gunicorn on loopback serving the checkout at ``root`` (with its bench_wsgi)."""
    port = free_port()
    cmd = [
        str(VENV_BIN / "gunicorn"),
        "bench_wsgi:application",
        *("--bind", f"127.0.0.1:{port}", "--workers", "2", "--log-level", "warning"),
        *("--chdir", str(root), "--pythonpath", f"{root},{root / 'bench'}"),
    ]
    proc = subprocess.Popen(cmd, env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            requests.get(f"{url}/healthz", timeout=2)
            return proc, url
        except requests.RequestException:
            time.sleep(0.3)
    proc.terminate()
    raise RuntimeError(f"gunicorn for {root} did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--other", type=Path, help="another checkout to serve side by side")
    args = parser.parse_args()
    env_defaults()
    where, cleanup = setup_database("tt_download_bench")
    work = Path(tempfile.mkdtemp(prefix="tracetrack-download-bench-"))
    static_root = work / "static"
    os.environ["STATIC_ROOT"] = str(static_root)
    os.environ["EXPORT_SPOOL"] = str(work / "exports")  # one spool for both checkouts
    import django

    django.setup()
    procs: list[subprocess.Popen] = []
    try:
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.utils import timezone

        from scenarios import engine, pool

        call_command("migrate", verbosity=0)
        seed = next(s for s in range(1, 200) if engine.generate("straggler", s).world == 8)
        trace = pool.build_trace("straggler", seed)
        user = get_user_model().objects.create_user("download-bench", password="x-bench-pass-1")
        trace.claimed_by, trace.claimed_at = user, timezone.now()
        trace.save(force_insert=True)
        stored = bytes(trace.perfetto_gz)
        (static_root / "bench").mkdir(parents=True)
        (static_root / "bench" / "trace.json").write_bytes(gzip.decompress(stored))
        (static_root / "bench" / "trace.json.gz").write_bytes(stored)
        print(f"database: {where}; stored export {len(stored) / 1e6:.2f} MB (gzip)")

        roots = {"this checkout": BENCH.parent}
        if args.other:
            roots["other"] = args.other.resolve()
        servers = {}
        for label, root in roots.items():
            proc, url = serve(root)
            procs.append(proc)
            servers[label] = url
        session = signed_in_session(next(iter(servers.values())), user)
        session.headers["Accept-Encoding"] = "gzip"
        targets = {
            (label, name): url + path
            for label, url in servers.items()
            for name, path in (
                ("static file", "/static/bench/trace.json"),
                ("perfetto.json", f"/traces/{trace.pk}/perfetto.json"),
            )
        }
        times: dict[tuple[str, str], list[float]] = {key: [] for key in targets}
        for i in range(args.samples + 3):  # the first download of each puts it in the spool
            for key, url in targets.items():
                took = gzip_download(session, url, stored)
                if i >= 3:
                    times[key].append(took)
        load = os.getloadavg()[0]
        print(f"{args.samples} samples each, alternating; {os.cpu_count()} cores, load {load:.1f}")
        for label, url in servers.items():
            med = {}
            for name in ("static file", "perfetto.json"):
                ts = sorted(times[(label, name)])
                med[name] = statistics.median(ts)
                p90 = ts[int(len(ts) * 0.9) - 1]
                print(
                    f"  {label:<14} {name:<14} median {med[name] * 1e3:6.2f} ms"
                    f"  p90 {p90 * 1e3:6.2f} ms"
                )
            ratio = med["perfetto.json"] / med["static file"]
            # each round's perfetto.json over the static file fetched just before it: drift in
            # the box's load between rounds cancels out
            paired = statistics.median(
                j / f
                for f, j in zip(
                    times[(label, "static file")], times[(label, "perfetto.json")], strict=True
                )
            )
            url_json = f"{url}/traces/{trace.pk}/perfetto.json"
            tag = session.get(url_json, stream=True, timeout=60).headers["ETag"]
            revalidated = session.get(url_json, headers={"If-None-Match": tag}, timeout=60)
            print(
                f"  {label:<14} perfetto.json / static file: {ratio:.2f}x (target <= 1.2x), "
                f"median of paired ratios {paired:.2f}x; If-None-Match -> {revalidated.status_code}"
            )
        return 0
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=20)
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
