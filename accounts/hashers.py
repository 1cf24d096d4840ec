"""Password hashing: Argon2id at parameters measured on this deployment's hardware.

Django's default PBKDF2 (1.5 M iterations in Django 6) costs hundreds of ms of CPU per sign-in,
and under concurrent sign-ins everything queues behind it. Argon2id with OWASP's minimum
(19 MiB, 2 passes, 1 lane) costs ~46 ms of CPU on one core here (``bench/hasher_bench.py``) and is
memory-hard, which PBKDF2 is not. PBKDF2 stays in ``PASSWORD_HASHERS`` after it, so accounts
hashed before sign in as usual and are re-hashed with Argon2id on that sign-in.
"""

from __future__ import annotations

from django.contrib.auth.hashers import Argon2PasswordHasher


class TraceTrackArgon2Hasher(Argon2PasswordHasher):
    # The algorithm name stays "argon2": stored hashes carry their own parameters, and Django
    # re-hashes on sign-in whenever they differ from these (must_update).
    time_cost = 2
    memory_cost = 19 * 1024  # KiB
    parallelism = 1
