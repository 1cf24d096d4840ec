"""Shared plumbing for the benchmarks: a throwaway database and side-by-side view timings.

Benchmarks print ratios measured in one run (these machines are noisy, absolute times mean little).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent


def env_defaults() -> None:
    """Production-like settings (DEBUG off: no query logging) over plain HTTP on loopback."""
    sys.path.insert(0, str(ROOT))
    defaults = {
        "SECRET_KEY": "bench-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFG",
        "DEBUG": "false",
        "ALLOWED_HOSTS": "localhost,127.0.0.1,testserver",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "SECURE_HSTS_SECONDS": "0",
        "STATIC_MANIFEST": "false",
        "LOG_LEVEL": "WARNING",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tracetrack.settings")


def _pg_admin(url: str, sql: str) -> None:
    import psycopg

    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql)


def setup_database(name: str) -> tuple[str, Callable[[], None]]:
    """Point settings at a throwaway database: a PostgreSQL database ``name`` on the server of
    DATABASE_URL when that is set (created here, dropped by the cleanup), else a temporary SQLite
    file. Call before ``django.setup()``. Returns (description, cleanup)."""
    url = os.environ.get("DATABASE_URL")
    if url and url.startswith(("postgres://", "postgresql://")):
        # Several checkouts may bench on one server at once: BENCH_DB_SUFFIX keeps them apart.
        if suffix := os.environ.get("BENCH_DB_SUFFIX", ""):
            name = f"{name}_{suffix}"
        _pg_admin(url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        _pg_admin(url, f"CREATE DATABASE {name}")
        os.environ["DATABASE_URL"] = urlunsplit(urlsplit(url)._replace(path=f"/{name}"))

        def cleanup() -> None:
            from django.db import connections

            connections.close_all()
            _pg_admin(url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

        return f"PostgreSQL ({name}, dropped afterwards)", cleanup
    tmp = tempfile.mkdtemp(prefix="tracetrack-bench-")
    os.environ.pop("DATABASE_URL", None)
    os.environ["TRACETRACK_VAR_DIR"] = tmp

    def cleanup_sqlite() -> None:
        from django.db import connections

        connections.close_all()
        shutil.rmtree(tmp, ignore_errors=True)

    return f"SQLite (temp file in {tmp})", cleanup_sqlite


def trivial_urlconf() -> types.ModuleType:
    """The project's URLs plus ``/bench/trivial/``, a signed-in view that returns "ok", and
    ``/bench/page/``, a bare signed-in page: the site's layout (``base.html``), nothing in it."""
    from django.http import HttpResponse
    from django.shortcuts import render
    from django.urls import include, path

    def trivial(request):
        return HttpResponse("ok", content_type="text/plain")

    def bare_page(request):
        return render(request, "base.html")

    module = types.ModuleType("bench_urls")
    module.urlpatterns = [
        path("bench/trivial/", trivial),
        path("bench/page/", bare_page),
        path("", include("tracetrack.urls")),
    ]
    return module


def print_table(times: dict[str, list[float]], queries: dict[str, int] | None = None) -> None:
    """Median, p90 and min per view, and each median as a multiple of the trivial view's."""
    med = {name: statistics.median(ts) for name, ts in times.items()}
    base = med.get("trivial") or min(med.values())
    head = ("view", "median ms", "p90 ms", "min ms", "queries", "x trivial")
    print(f"{head[0]:<26} {head[1]:>10} {head[2]:>8} {head[3]:>8} {head[4]:>8} {head[5]:>10}")
    for name, ts in times.items():
        p90 = sorted(ts)[max(0, int(len(ts) * 0.9) - 1)]
        q = "" if queries is None else str(queries.get(name, ""))
        print(
            f"{name:<26} {med[name] * 1000:>10.1f} {p90 * 1000:>8.1f} {min(ts) * 1000:>8.1f} "
            f"{q:>8} {med[name] / base:>10.1f}"
        )


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def gzip_download(session, url: str, stored: bytes) -> float:
    """Seconds to GET ``url`` as a gzip-accepting client, checking the body on the wire is the
    stored gzip export byte for byte."""
    start = time.perf_counter()
    r = session.get(url, stream=True, timeout=60)
    body = r.raw.read(decode_content=False)
    took = time.perf_counter() - start
    assert r.status_code == 200 and r.headers["Content-Encoding"] == "gzip", url
    assert body == stored, url
    return took


def django_with_static_root() -> Path:
    """Django set up for a served bench: a fresh STATIC_ROOT (returned) for collectstatic and the
    bench's own static files, and the compressed Perfetto UI kept between runs."""
    static_root = Path(tempfile.mkdtemp(prefix="tracetrack-bench-static-"))
    os.environ["STATIC_ROOT"] = str(static_root)
    os.environ.setdefault("PERFETTO_UI_CACHE", "/tmp/tracetrack-bench-perfetto-ui")
    import django

    django.setup()
    return static_root


def prepare_served_site() -> float:
    """The database migrated, the Perfetto UI compressed and the static files collected, as a
    deploy does before serving; returns the seconds the compression took."""
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    t0 = time.perf_counter()
    call_command("compress_perfetto_ui", verbosity=0)
    took = time.perf_counter() - t0
    call_command("collectstatic", verbosity=0, interactive=False)
    return took
