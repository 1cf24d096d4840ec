"""Engine traces shown on track pages, cached in Django's cache.

Walkthroughs and inline timelines use fixed (scenario, seed, hardware) triples; the engine is
deterministic in them, so a generated trace is cached under its arguments and the generator
version and never needs invalidating.
"""

from __future__ import annotations

import gzip
from typing import Any

import orjson
from django.core.cache import cache

from scenarios import engine

TIMEOUT = 7 * 24 * 3600
GZIP_LEVEL = 3  # a few MB of JSON: level 3 is ~3x faster than 6 for a slightly larger body


def _cache_key(kind: str, scenario: str, seed: int, hardware: str | None) -> str:
    return f"content:trace:{engine.GENERATOR_VERSION}:{kind}:{scenario}:{seed}:{hardware or '-'}"


def _generate(scenario: str, seed: int, hardware: str | None) -> dict[str, Any]:
    trace = engine.generate(scenario, seed, hardware=hardware)
    key = trace.key.to_dict()
    timeline = engine.to_timeline(trace)
    # The viewer ignores fields it does not know; track.js reads `evidence` for evidence:K focus.
    timeline = {**timeline, "evidence": key.get("evidence", [])}
    bundle = {
        "timeline_gz": gzip.compress(orjson.dumps(timeline), compresslevel=GZIP_LEVEL, mtime=0),
        "key": key,
        "prompt": trace.prompt,
    }
    cache.set(_cache_key("bundle", scenario, seed, hardware), bundle, TIMEOUT)
    return bundle


def bundle(scenario: str, seed: int, hardware: str | None = None) -> dict[str, Any]:
    """{"timeline_gz": bytes, "key": dict, "prompt": dict} for one deterministic trace."""
    found = cache.get(_cache_key("bundle", scenario, seed, hardware))
    return found if found is not None else _generate(scenario, seed, hardware)


def perfetto_gz(scenario: str, seed: int, hardware: str | None = None) -> bytes:
    """The Chrome-trace JSON (gzipped) for one trace; built on first download, then cached."""
    key = _cache_key("perfetto", scenario, seed, hardware)
    found = cache.get(key)
    if found is None:
        trace = engine.generate(scenario, seed, hardware=hardware)
        found = gzip.compress(engine.perfetto_bytes(trace), compresslevel=GZIP_LEVEL, mtime=0)
        cache.set(key, found, TIMEOUT)
    return found
