"""Where does a warm "Open in Perfetto" spend its time? (not a test)

    python bench/perfetto_boot_profile.py [--rounds 3] [--chrome-trace out.json]

Same setup as ``perfetto_bench.py`` (gunicorn + whitenoise, one 8-rank straggler claimed by a
learner, signed-in headless Chromium). After one cold open, each warm open is timed from the
click with milestones read from the new tab (polled every 20 ms) and the network log:
  * tab committed / index.html / frontend_bundle.js / engine / trace_processor.wasm requests,
  * the UI's DOM replacing the loading spinner (``#app_load`` gone), the first track group,
    every process drawn;
and with ``--chrome-trace`` one more warm open under Chromium's own tracing, summarised per
thread (main thread of the tab, the engine's worker): the biggest V8 / wasm / layout slices.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from collections import defaultdict

from common import django_with_static_root, env_defaults, prepare_served_site, setup_database
from server import Gunicorn, signed_in_browser, signed_in_session

MILESTONES = """() => ({
  ready: document.readyState,
  spinner: !!document.getElementById('app_load'),
  ui: !!document.querySelector('.pf-sidebar, .pf-topbar, main'),
  tree: !!document.querySelector('.pf-track-tree'),
  tracks: document.querySelectorAll('.pf-track-tree .pf-track').length,
  status: (window.app && window.app.omnibox && window.app.omnibox.statusMessage) || '',
})"""


PLUGINS = """() => window.app.plugins.getAllPlugins().filter(p => p.traceContext)
  .map(p => [p.desc.id, p.traceContext.loadTimeMs]).sort((a, b) => b[1] - a[1])"""


def one_open(
    context, page, n_processes: int, opener: str | None = None, plugins: bool = False
) -> dict[str, float]:
    """Click "Open in Perfetto" (or open ``opener``); seconds from the click to each milestone."""
    marks: dict[str, float] = {}
    log: list[tuple[float, str]] = []
    start = time.perf_counter()

    def at(name: str) -> None:
        marks.setdefault(name, time.perf_counter() - start)

    def on_request(request) -> None:
        log.append((time.perf_counter() - start, "req " + request.url.split("/")[-1][:60]))

    def on_done(request) -> None:
        log.append((time.perf_counter() - start, "done " + request.url.split("/")[-1][:60]))

    def on_console(msg) -> None:
        log.append((time.perf_counter() - start, f"console {msg.type}: {msg.text[:100]}"))

    context.on("request", on_request)
    context.on("requestfinished", on_done)
    context.on(
        "requestfailed",
        lambda r: log.append((time.perf_counter() - start, f"FAILED {r.url[:80]} {r.failure}")),
    )
    with context.expect_page() as info:
        if opener:
            page.evaluate("u => window.open(u, '_blank')", opener)
        else:
            page.locator("#open-perfetto").click()
    tab = info.value
    tab.on("console", on_console)
    at("tab object")
    while time.perf_counter() - start < 60:
        try:
            m = tab.evaluate(MILESTONES)
        except Exception:
            continue
        if m["status"]:
            at("status: " + m["status"][:70])
        if m["ready"] == "complete":
            at("document complete")
        if not m["spinner"] and m["ready"] != "loading":
            at("spinner gone (UI bootstrapped)")
        if m["tree"]:
            at("track tree shown")
        if m["tracks"]:
            at("first track group")
        if m["tracks"] >= n_processes:
            at("every process drawn")
            break
        time.sleep(0.02)
    context.remove_listener("request", on_request)
    context.remove_listener("requestfinished", on_done)
    slow = tab.evaluate(PLUGINS)
    total = sum(ms for _, ms in slow)
    marks["plugins' onTraceLoad (s)"] = total / 1e3
    marks["plugins active"] = len(slow)
    if plugins:
        print(f"  plugins' onTraceLoad: {len(slow)} plugins, {total:.0f} ms in all; slowest:")
        for name, ms in slow[:15]:
            print(f"    {ms:7.0f} ms  {name}")
    tab.close()
    for t, what in sorted(log):
        marks.setdefault(what, t)
    return marks


def summarise_chrome_trace(path: str, top: int = 25) -> None:
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    names: dict[tuple[int, int], str] = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    per_thread: dict[tuple[int, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    busy: dict[tuple[int, int], float] = defaultdict(float)
    t0 = min(e["ts"] for e in events if e.get("ts"))
    first_last: dict[tuple[int, int], list[float]] = {}
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        key = (e["pid"], e["tid"])
        per_thread[key][e["name"]] += e["dur"] / 1e3
        if e["name"] in ("RunTask", "ThreadControllerImpl::RunTask"):
            busy[key] += e["dur"] / 1e3
        fl = first_last.setdefault(key, [e["ts"], e["ts"] + e["dur"]])
        fl[0] = min(fl[0], e["ts"])
        fl[1] = max(fl[1], e["ts"] + e["dur"])
    for key, slices in sorted(per_thread.items(), key=lambda kv: -busy.get(kv[0], 0))[:8]:
        name = names.get(key, "?")
        fl = first_last[key]
        print(
            f"  thread {name} {key}: busy {busy.get(key, 0):.0f} ms, active "
            f"{(fl[0] - t0) / 1e3:.0f}-{(fl[1] - t0) / 1e3:.0f} ms after trace start"
        )
        for sname, ms in sorted(slices.items(), key=lambda kv: -kv[1])[:top]:
            if ms >= 20:
                print(f"      {ms:8.0f} ms  {sname}")


# Before: Perfetto's defaults (every default plugin runs). After: the served index's defaults.
BEFORE = """([flags, marker, version]) => {
  localStorage.setItem(flags, '{}'); localStorage.setItem(marker, version); }"""
AFTER = (
    """([flags, marker]) => { localStorage.removeItem(flags); localStorage.removeItem(marker); }"""
)


def compare(context, page, base: str, world: int, rounds: int, timelines: bool) -> None:
    from urllib.parse import quote

    from scenarios import perfetto_ui

    keys = [perfetto_ui.FLAGS_KEY, perfetto_ui.DEFAULTS_KEY, perfetto_ui.defaults_version()]
    boot_url = "/perfetto/#!/?url=" + quote(f"{base}/static/t/boot.json", safe="")
    variants = {
        "click, before (all plugins)": (None, BEFORE),
        "click, after (quiet plugins off)": (None, AFTER),
        "boot trace, before": (boot_url, BEFORE),
        "boot trace, after": (boot_url, AFTER),
    }
    got: dict[str, list[dict[str, float]]] = {k: [] for k in variants}
    for url, flags in variants.values():  # one warm-up each (the boot trace's first fetch)
        page.evaluate(flags, keys)
        one_open(context, page, 2 * world, opener=url)
    for name, (url, flags) in variants.items() if timelines else ():  # one timeline each
        page.evaluate(flags, keys)
        marks = one_open(context, page, 2 * world, opener=url)
        print(f"timeline of one warm open, {name}:")
        for k, t in sorted(marks.items(), key=lambda kv: kv[1]):
            if not k.startswith(("req ", "done ", "plugins")):
                print(f"  {t:6.2f}  {k}")
    for _ in range(rounds):
        for name, (url, flags) in variants.items():
            page.evaluate(flags, keys)
            got[name].append(one_open(context, page, 2 * world, opener=url))
    cols = ["spinner gone (UI bootstrapped)", "every process drawn", "plugins' onTraceLoad (s)"]
    print(f"side by side, {rounds} warm rounds alternating, medians in s from the click:")
    print(f"  {'':32} {'UI up':>7} {'drawn':>7} {'plugins':>8} {'n plugins':>9}")
    for name, runs in got.items():
        med = [statistics.median(r[c] for r in runs) for c in cols]
        n = runs[0]["plugins active"]
        print(f"  {name:32} {med[0]:7.2f} {med[1]:7.2f} {med[2]:8.2f} {n:9.0f}")
        print("      drawn: " + " ".join(f"{r['every process drawn']:.2f}" for r in runs))


HOST = "tracetrack.test"  # a name for loopback: Perfetto treats it as a deployment, not localhost


def compare_browsers(p, base: str, session, attempt, world: int, rounds: int) -> None:
    """Warm opens of the drill's trace in three browsers, alternating: the bench's (Playwright's
    in-memory profile), a profile on disk (what a learner's browser has: V8's code cache), and
    the bench's reached by a host name (Perfetto streams the trace instead of fetching it whole
    and caching it in Cache Storage, which it does for localhost / 127.0.0.1 URLs only)."""
    import tempfile

    from server import CHROMIUM_ARGS

    port = base.rsplit(":", 1)[1]
    named = f"http://{HOST}:{port}"
    cookie = session.cookies["sessionid"]
    launch = {"executable_path": "/usr/bin/chromium", "args": CHROMIUM_ARGS}
    viewport = {"width": 1440, "height": 900}
    setups = []
    b1 = p.chromium.launch(**launch)
    setups.append(("in-memory profile (the bench's)", b1.new_context(viewport=viewport), base))
    disk = tempfile.mkdtemp(prefix="tt-chromium-profile-")
    setups.append(
        (
            "profile on disk",
            p.chromium.launch_persistent_context(disk, viewport=viewport, **launch),
            base,
        )
    )
    b3 = p.chromium.launch(
        executable_path="/usr/bin/chromium",
        args=[
            *CHROMIUM_ARGS,
            f"--host-resolver-rules=MAP {HOST} 127.0.0.1",
            f"--unsafely-treat-insecure-origin-as-secure={named}",
        ],
    )
    setups.append((f"host name ({HOST}), in-memory", b3.new_context(viewport=viewport), named))
    pages = []
    for label, ctx, origin in setups:
        ctx.add_cookies([{"name": "sessionid", "value": cookie, "url": origin}])
        page = ctx.new_page()
        page.goto(f"{origin}/drill/attempts/{attempt.pk}/")
        page.wait_for_load_state("networkidle")
        for _ in range(2):  # cold, then once warm (V8 caches code on a script's later loads)
            one_open(ctx, page, 2 * world)
        pages.append((label, ctx, page))
    got: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in pages}
    for _ in range(rounds):
        for label, ctx, page in pages:
            got[label].append(one_open(ctx, page, 2 * world))

    def caching(r: dict[str, float]) -> float:
        start = r.get("status: Caching trace...")
        if start is None:
            return 0.0
        after = [t for k, t in r.items() if k.startswith("status: ") and t > start]
        return min(after, default=start) - start

    for runs in got.values():
        for r in runs:
            r["caching"] = caching(r)
    print(f"browsers side by side, {rounds} warm rounds alternating, medians in s from the click:")
    cols = ["spinner gone (UI bootstrapped)", "caching", "every process drawn"]
    print(f"  {'':36} {'UI up':>7} {'caching':>8} {'drawn':>7}")
    for label, runs in got.items():
        med = [statistics.median(r.get(c, float("nan")) for r in runs) for c in cols]
        print(f"  {label:36} {med[0]:7.2f} {med[1]:8.2f} {med[2]:7.2f}")
        print("      drawn: " + " ".join(f"{r['every process drawn']:.2f}" for r in runs))
    for _, ctx, _ in pages:
        ctx.close()
    b1.close()
    b3.close()
    shutil.rmtree(disk, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chrome-trace", default="")
    parser.add_argument("--compare", type=int, default=0, help="rounds of the side-by-side")
    parser.add_argument("--timelines", action="store_true", help="one timeline per variant")
    parser.add_argument(
        "--browsers",
        type=int,
        default=0,
        help="rounds of in-memory vs on-disk profile vs host name",
    )
    args = parser.parse_args()
    os.environ.setdefault("ALLOWED_HOSTS", f"localhost,127.0.0.1,testserver,{HOST}")
    env_defaults()
    _, cleanup = setup_database("tt_perfetto_profile")
    static_root = django_with_static_root()
    server = None
    try:
        from django.contrib.auth import get_user_model
        from playwright.sync_api import sync_playwright

        from drills.trainer import services
        from scenarios import engine, pool
        from scenarios.models import Trace

        prepare_served_site()
        pool.schedule_refill = lambda scenario: None
        seed = next(s for s in range(1, 200) if engine.generate("straggler", s).world == 8)
        pool.build_trace("straggler", seed).save(force_insert=True)
        user = get_user_model().objects.create_user("perfetto-prof", password="x-bench-pass-1")
        attempt = services.start_drill(user, scenario="straggler")
        world = Trace.objects.get(pk=attempt.trace_id).load().world
        import gzip

        from perfetto_format_bench import boot_json

        from scenarios import exports

        full = gzip.decompress(bytes(Trace.objects.get(pk=attempt.trace_id).perfetto_gz))
        del exports
        (static_root / "t").mkdir()
        boot = boot_json(full)
        (static_root / "t" / "boot.json").write_bytes(boot)
        (static_root / "t" / "boot.json.gz").write_bytes(gzip.compress(boot))
        server = Gunicorn(workers=2)
        session = signed_in_session(server.url, user)
        with sync_playwright() as p:
            browser, context = signed_in_browser(p, server.url, session)
            page = context.new_page()
            page.goto(f"{server.url}/drill/attempts/{attempt.pk}/")
            page.wait_for_load_state("networkidle")
            cold = one_open(context, page, 2 * world)
            print(f"cold: every process drawn {cold['every process drawn']:.2f} s")
            rounds = [
                one_open(context, page, 2 * world, plugins=i == 0) for i in range(args.rounds)
            ]
            keys = sorted(rounds[0], key=lambda k: statistics.median(r.get(k, 99) for r in rounds))
            print(f"warm, {args.rounds} rounds, seconds from the click (median, min, max):")
            for k in keys:
                ts = [r[k] for r in rounds if k in r]
                print(f"  {statistics.median(ts):6.2f} {min(ts):6.2f} {max(ts):6.2f}  {k}")
            if args.browsers:
                compare_browsers(p, server.url, session, attempt, world, args.browsers)
            if args.compare:
                compare(context, page, server.url, world, args.compare, args.timelines)
            if args.chrome_trace:
                cats = (
                    "devtools.timeline,v8,v8.execute,disabled-by-default-v8.compile,"
                    "disabled-by-default-devtools.timeline,blink.user_timing,loading,"
                    "disabled-by-default-v8.wasm.detailed,v8.wasm,toplevel"
                )
                browser.start_tracing(path=args.chrome_trace, categories=cats.split(","))
                marks = one_open(context, page, 2 * world)
                browser.stop_tracing()
                print(f"traced open: every process drawn {marks['every process drawn']:.2f} s")
                summarise_chrome_trace(args.chrome_trace)
            browser.close()
        print(f"({os.cpu_count()} cores, load average {os.getloadavg()})")
        return 0
    finally:
        if server is not None:
            server.stop()
        cleanup()


if __name__ == "__main__":
    sys.exit(main())
