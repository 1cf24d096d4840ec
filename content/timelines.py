"""Engine traces shown on track pages, generated once and stored as files under var/.

Walkthroughs and inline timelines use fixed (scenario, seed, hardware) triples named by the
content pages; the engine is deterministic in them, so each is generated on first use, written
under ``VAR_DIR/content-traces/<generator version>/`` (atomically) and read from there ever after,
by every worker. No cache is involved: a Redis outage changes nothing here. Only the triples the
pages reference are ever generated (the views 404 the rest), so storage is bounded by content.
"""

from __future__ import annotations

import gzip
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings

from scenarios import engine

GZIP_LEVEL = 3  # a few MB of JSON: level 3 is ~3x faster than 6 for a slightly larger body
_lock = threading.Lock()


def store_dir() -> Path:
    return Path(settings.VAR_DIR) / "content-traces" / engine.GENERATOR_VERSION


def _path(kind: str, scenario: str, seed: int, hardware: str | None) -> Path:
    return store_dir() / f"{scenario}-{int(seed)}-{hardware or 'any'}.{kind}"


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)  # readers see the old file or the whole new one, never a part
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _generate(scenario: str, seed: int, hardware: str | None) -> None:
    trace = engine.generate(scenario, seed, hardware=hardware)
    key = trace.key.to_dict()
    timeline = engine.to_timeline(trace)
    # The viewer ignores fields it does not know; track.js reads `evidence` for evidence:K focus.
    timeline = {**timeline, "evidence": key.get("evidence", [])}
    gz = gzip.compress(orjson.dumps(timeline), compresslevel=GZIP_LEVEL, mtime=0)
    _write(_path("timeline.json.gz", scenario, seed, hardware), gz)
    meta = orjson.dumps({"key": key, "prompt": trace.prompt})
    _write(_path("meta.json", scenario, seed, hardware), meta)


def bundle(scenario: str, seed: int, hardware: str | None = None) -> dict[str, Any]:
    """{"timeline_gz": bytes, "key": dict, "prompt": dict} for one deterministic trace."""
    tl, meta = (_path(k, scenario, seed, hardware) for k in ("timeline.json.gz", "meta.json"))
    if not (tl.exists() and meta.exists()):
        with _lock:
            if not (tl.exists() and meta.exists()):
                _generate(scenario, seed, hardware)
    info = orjson.loads(meta.read_bytes())
    return {"timeline_gz": tl.read_bytes(), "key": info["key"], "prompt": info["prompt"]}


def perfetto_gz(scenario: str, seed: int, hardware: str | None = None) -> bytes:
    """The Chrome-trace JSON (gzipped) for one trace; built on first download, then stored."""
    path = _path("perfetto.json.gz", scenario, seed, hardware)
    if not path.exists():
        with _lock:
            if not path.exists():
                trace = engine.generate(scenario, seed, hardware=hardware)
                body = engine.perfetto_bytes(trace)
                _write(path, gzip.compress(body, compresslevel=GZIP_LEVEL, mtime=0))
    return path.read_bytes()
