"""Load test: 50 learners sign in, drill and submit for 60 s against the full stack on loopback.

Starts, itself: gunicorn (2 workers × 4 threads) on the PostgreSQL database in DATABASE_URL and
Redis in REDIS_URL, and one Celery worker that keeps the pool topped up. Then N threads (plain
`requests` sessions) each sign in once (timed) and loop: start a drill (timed), open it, submit
a diagnosis, open a trivial authenticated page (timed, the baseline). At the end it checks the
database against what the clients did: every attempt a client was dealt exists exactly once, is
graded when the client submitted it, and no learner has an attempt no client saw.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/tt_hardening \\
    REDIS_URL=redis://127.0.0.1:6379/6 .venv/bin/python bench/load_test.py [--users 50]

It wipes the bench users (``load-*``) and their attempts first; run it on a database of its own.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, env_defaults

PASSWORD = "load-test-password-1729"
ATTEMPT_RE = re.compile(r"/drill/attempts/([0-9a-f-]{36})/")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] * 1000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 60) -> None:
    import requests

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if requests.get(url, timeout=2).status_code < 500:
                return
        except requests.RequestException:
            pass
        time.sleep(0.3)
    raise SystemExit(f"server at {url} did not come up")


def setup(n_users: int) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from drills.models import Attempt, Card

    call_command("migrate", verbosity=0)
    User = get_user_model()
    old = User.objects.filter(username__startswith="load-")
    Attempt.objects.filter(user__in=old).delete()
    Card.objects.filter(user__in=old).delete()
    old.delete()
    for i in range(n_users):
        User.objects.create_user(f"load-{i}", password=PASSWORD)
    print(f"pool before the run: {sum(_stock().values())} unclaimed traces; filling…", flush=True)
    call_command("fill_pool", verbosity=0)
    print(f"pool: {sum(_stock().values())} unclaimed traces", flush=True)


def _stock() -> dict[str, int]:
    from scenarios import pool

    return pool.stock()


class Client(threading.Thread):
    def __init__(self, base: str, username: str, until: float, stats: dict, lock) -> None:
        super().__init__(daemon=True)
        self.base, self.username, self.until = base, username, until
        self.stats, self.lock = stats, lock
        self.dealt: list[str] = []
        self.submitted: set[str] = set()
        self.errors: list[str] = []

    def _record(self, kind: str, seconds: float) -> None:
        with self.lock:
            self.stats[kind].append(seconds)

    def _expect(self, response, codes, what: str) -> bool:
        if response.status_code not in codes:
            self.errors.append(f"{what}: {response.status_code}")
            return False
        return True

    def run(self) -> None:
        import requests

        s = requests.Session()
        try:
            s.get(f"{self.base}/accounts/login/", timeout=60)
            token = s.cookies["csrftoken"]
            t0 = time.perf_counter()
            r = s.post(
                f"{self.base}/accounts/login/",
                {"username": self.username, "password": PASSWORD, "csrfmiddlewaretoken": token},
                allow_redirects=False,
                timeout=60,
            )
            self._record("sign-in", time.perf_counter() - t0)
            if not self._expect(r, (302,), "sign-in"):
                return
            token = s.cookies["csrftoken"]
            while time.monotonic() < self.until:
                t0 = time.perf_counter()
                r = s.post(
                    f"{self.base}/drill/next/",
                    {"mode": random.choice(["timed", "practice"]), "csrfmiddlewaretoken": token},
                    allow_redirects=False,
                    timeout=60,
                )
                self._record("drill-start", time.perf_counter() - t0)
                if not self._expect(r, (302,), "drill-start"):
                    continue
                attempt = ATTEMPT_RE.search(r.headers["Location"])
                attempt_id = attempt.group(1)
                if attempt_id not in self.dealt:
                    self.dealt.append(attempt_id)
                r = s.get(f"{self.base}/drill/attempts/{attempt_id}/", timeout=60)
                self._expect(r, (200,), "attempt page")
                r = (
                    s.get(
                        f"{self.base}/traces/" + self._trace_id(r.text) + "/timeline.json",
                        timeout=60,
                    )
                    if self._trace_id(r.text)
                    else r
                )
                self._expect(r, (200,), "timeline")
                answer = {
                    "scenario": random.choice(["straggler", "healthy", "launch-bound"]),
                    "measurement": "nccl_share",
                    "fix": "overlap_comm",
                    "step_ms": "120",
                    "gap_ms": "10",
                    "measurement_value": "30",
                    "expected_step_ms": "100",
                    "arithmetic": "",
                    "csrfmiddlewaretoken": token,
                }
                r = s.post(
                    f"{self.base}/drill/attempts/{attempt_id}/diagnosis/",
                    answer,
                    allow_redirects=False,
                    timeout=60,
                )
                if r.status_code == 302:
                    self.submitted.add(attempt_id)
                elif r.status_code == 400:
                    # The form contract changed under us: give the drill up instead (also a
                    # graded close), so the learner can go on.
                    r = s.post(
                        f"{self.base}/drill/attempts/{attempt_id}/abandon/",
                        {"csrfmiddlewaretoken": token},
                        allow_redirects=False,
                        timeout=60,
                    )
                    if self._expect(r, (302,), "abandon"):
                        self.submitted.add(attempt_id)
                else:
                    self._expect(r, (302,), "diagnosis")
                t0 = time.perf_counter()
                r = s.get(f"{self.base}/accounts/password_change/", timeout=60)
                self._record("trivial view", time.perf_counter() - t0)
                self._expect(r, (200,), "trivial view")
        except Exception as exc:  # a dropped connection is an error the run reports
            self.errors.append(f"{type(exc).__name__}: {exc}")

    @staticmethod
    def _trace_id(html: str) -> str | None:
        m = re.search(r"/traces/([0-9a-f-]{36})/timeline\.json", html)
        return m.group(1) if m else None


def verify(clients: list[Client]) -> list[str]:
    from drills.models import Attempt

    problems = []
    for c in clients:
        rows = list(
            Attempt.objects.filter(user__username=c.username).values_list("id", "submitted_at")
        )
        ids = [str(i) for i, _ in rows]
        if sorted(ids) != sorted(c.dealt):
            problems.append(f"{c.username}: db {len(ids)} attempts, client saw {len(c.dealt)}")
        graded = {str(i) for i, at in rows if at is not None}
        if not c.submitted <= graded:
            problems.append(f"{c.username}: {len(c.submitted - graded)} submitted but ungraded")
        if sum(1 for _, at in rows if at is None) > 1:
            problems.append(f"{c.username}: more than one open attempt")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL") or not os.environ.get("REDIS_URL"):
        raise SystemExit("set DATABASE_URL (PostgreSQL) and REDIS_URL")
    env_defaults()
    os.environ.update(
        {
            "DRILL_CLAIMS_PER_HOUR": "10000",
            "POOL_TARGET": "12",
            "POOL_LOW_WATER": "4",
            "CELERY_QUEUE": f"tracetrack-load-{os.getpid()}",
        }
    )
    setup(args.users)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    procs = []
    logs = Path(os.environ.get("TRACETRACK_VAR_DIR", ROOT / "var")) / "load-test"
    logs.mkdir(parents=True, exist_ok=True)
    try:
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "tracetrack",
                    "worker",
                    "-Q",
                    os.environ["CELERY_QUEUE"],
                    "--concurrency",
                    "1",
                    "-l",
                    "warning",
                ],
                cwd=ROOT,
                stdout=(logs / "worker.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        )
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "tracetrack.wsgi",
                    "-b",
                    f"127.0.0.1:{port}",
                    "--workers",
                    str(args.workers),
                    "--threads",
                    str(args.threads),
                    "--timeout",
                    "120",
                    # Idle keep-alive connections outlive the clients' think time: no race
                    # between the server closing one and a client reusing it.
                    "--keep-alive",
                    "75",
                ],
                cwd=ROOT,
                stdout=(logs / "gunicorn.log").open("w"),
                stderr=subprocess.STDOUT,
            )
        )
        wait_http(f"{base}/healthz")
        stats: dict[str, list[float]] = {"sign-in": [], "drill-start": [], "trivial view": []}
        lock = threading.Lock()
        until = time.monotonic() + args.seconds
        clients = [Client(base, f"load-{i}", until, stats, lock) for i in range(args.users)]
        started = time.monotonic()
        for c in clients:
            c.start()
        for c in clients:
            c.join(args.seconds + 180)
        wall = time.monotonic() - started
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
    errors = [e for c in clients for e in c.errors]
    problems = verify(clients)
    dealt = sum(len(c.dealt) for c in clients)
    submitted = sum(len(c.submitted) for c in clients)
    print(
        f"{args.users} learners, {args.seconds:.0f} s (wall {wall:.0f} s), gunicorn "
        f"{args.workers} workers x {args.threads} threads, 1 Celery worker"
    )
    print(
        f"attempts dealt {dealt}, graded {submitted}; errors {len(errors)}; "
        f"lost/duplicated attempts {len(problems)}"
    )
    for kind, values in stats.items():
        print(
            f"  {kind:13s} n={len(values):5d}  p50 {pct(values, 0.5):7.0f} ms  "
            f"p99 {pct(values, 0.99):7.0f} ms"
        )
    base50 = pct(stats["trivial view"], 0.5)
    print(
        f"  drill-start p50 / trivial p50 = {pct(stats['drill-start'], 0.5) / base50:.1f}x; "
        f"sign-in p50 / trivial p50 = {pct(stats['sign-in'], 0.5) / base50:.1f}x"
    )
    for line in errors[:10] + problems[:10]:
        print("  !", line)


if __name__ == "__main__":
    main()
