"""Password hashing cost per sign-in: CPU time on one core for the configured Argon2id hasher
against Django's PBKDF2 default, measured side by side in one run.

    .venv/bin/python bench/hasher_bench.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tracetrack.settings")

import django

django.setup()

from django.contrib.auth.hashers import PBKDF2PasswordHasher  # noqa: E402

from accounts.hashers import TraceTrackArgon2Hasher  # noqa: E402


def cpu_ms(hasher, encoded: str, n: int = 9) -> tuple[float, float]:
    times = []
    for _ in range(n):
        t0 = time.process_time()
        assert hasher.verify("correct-horse-battery-42", encoded)
        times.append((time.process_time() - t0) * 1000)
    return statistics.median(times), max(times)


def main() -> None:
    argon, pbkdf2 = TraceTrackArgon2Hasher(), PBKDF2PasswordHasher()
    a = cpu_ms(argon, argon.encode("correct-horse-battery-42", argon.salt()))
    p = cpu_ms(pbkdf2, pbkdf2.encode("correct-horse-battery-42", pbkdf2.salt()), n=3)
    print(
        f"argon2id (t={argon.time_cost}, m={argon.memory_cost} KiB, p={argon.parallelism}): "
        f"verify {a[0]:.1f} ms CPU median, {a[1]:.1f} max"
    )
    print(
        f"pbkdf2_sha256 ({pbkdf2.iterations} iterations): verify {p[0]:.1f} ms CPU median, "
        f"{p[1]:.1f} max"
    )
    print(f"ratio pbkdf2 / argon2id: {p[0] / a[0]:.1f}x  (budget: argon2id <= 100 ms)")


if __name__ == "__main__":
    main()
