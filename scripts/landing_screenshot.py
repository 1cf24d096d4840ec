"""Redraw static/img/landing-trace.png: the real timeline viewer on a generated trace.

Run after a change to the engine or the viewer:  .venv/bin/python scripts/landing_screenshot.py
It needs Debian's Chromium (/usr/bin/chromium) and the dev extras (Playwright).
"""

from __future__ import annotations

import functools
import http.server
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scenarios.engine import generate  # noqa: E402
from scenarios.engine.export import to_timeline  # noqa: E402

PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="timeline.css"><style>body{margin:0;background:#fff}</style></head>
<body><div id="host"></div><script src="timeline.js"></script><script>
fetch('trace.json').then(r => r.json()).then(d => {
  window.viewer = TraceTimeline.mount(document.getElementById('host'), d, {height: 420});
  requestAnimationFrame(() => requestAnimationFrame(() => { window.ready = true; }));
});
</script></body></html>"""


def main() -> None:
    from playwright.sync_api import sync_playwright

    trace = generate("healthy", 3, hardware="h100")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "trace.json").write_bytes(orjson.dumps(to_timeline(trace)))
        shutil.copy(ROOT / "static/js/timeline.js", d / "timeline.js")
        shutil.copy(ROOT / "static/css/timeline.css", d / "timeline.css")
        (d / "index.html").write_text(PAGE)
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=tmp)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path="/usr/bin/chromium",
                    args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
                )
                page = browser.new_page(viewport={"width": 1100, "height": 460})
                page.goto(f"http://127.0.0.1:{server.server_port}/index.html")
                page.wait_for_function("window.ready === true")
                out = ROOT / "static/img/landing-trace.png"
                page.locator("#host").screenshot(path=str(out))
                browser.close()
                print(f"wrote {out.relative_to(ROOT)}")
        finally:
            server.shutdown()


if __name__ == "__main__":
    main()
