"""A short hash of what a cached or stored drawing depends on besides the data."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any


def source_fingerprint(catalogue: Any, sources: tuple[Path, ...]) -> str:
    """A short hash of what a cached drawing depends on besides the data: a catalogue (its
    repr) and the code and template files that draw it. Shared by the dashboard and the cohort
    snapshots, each computing it once per process."""
    h = hashlib.sha256()
    h.update(repr(catalogue).encode())
    for path in sources:
        h.update(path.read_bytes() if path.exists() else path.name.encode())
    return h.hexdigest()[:16]
