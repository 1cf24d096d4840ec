"""A real gunicorn (+ whitenoise) on loopback for the benchmarks, and process RSS sampling.

The benchmark process prepares a throwaway database (``common.setup_database``), then
``Gunicorn(...)`` serves the project from a subprocess with the same environment. The WSGI module
``bench_wsgi`` adds ``/bench/trivial/`` (a signed-in view running one small query) beside the
project's URLs, so a trivial view and the real ones go through the same server and middleware.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import requests

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gunicorn:
    def __init__(self, workers: int = 2, threads: int = 1, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [
            str(VENV_BIN / "gunicorn"),
            "bench_wsgi:application",
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(workers),
            "--threads",
            str(threads),
            "--log-level",
            "warning",
            "--chdir",
            str(ROOT),
            "--pythonpath",
            f"{ROOT},{BENCH}",
        ]
        self.proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})})
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                requests.get(f"{self.url}/healthz", timeout=2)
                return
            except requests.RequestException:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("gunicorn did not start")

    def workers(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class PeakRSS:
    """Samples the RSS of processes every 0.2 s in a thread; ``peak_mb`` per process."""

    def __init__(self, processes: callable):
        self.processes = processes
        self.peak: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            for p in self.processes():
                with contextlib.suppress(psutil.Error):
                    self.peak[p.pid] = max(self.peak.get(p.pid, 0), p.memory_info().rss)
            time.sleep(0.2)

    def stop(self) -> dict[int, float]:
        self._stop.set()
        self._thread.join()
        return {pid: rss / 2**20 for pid, rss in self.peak.items()}


def signed_in_session(base_url: str, user) -> requests.Session:
    """A requests session carrying ``user``'s session cookie and a CSRF token."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    session.get(f"{base_url}/drill/", timeout=30).raise_for_status()
    session.headers["X-CSRFToken"] = session.cookies.get("csrftoken")
    session.headers["Referer"] = f"{base_url}/drill/"
    return session


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
CHROMIUM_ARGS.append("--no-first-run")


def signed_in_browser(playwright, base_url: str, session: requests.Session):
    """Debian's headless Chromium and a 1440×900 context carrying ``session``'s sign-in cookie."""
    browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_cookies(
        [{"name": "sessionid", "value": session.cookies["sessionid"], "url": base_url}]
    )
    return browser, context
