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


def _cache_key(kind: str, scenario: str, seed: int, hardware: str | None) -> str:
    return f"content:trace:{engine.GENERATOR_VERSION}:{kind}:{scenario}:{seed}:{hardware or '-'}"


def _generate(scenario: str, seed: int, hardware: str | None) -> dict[str, Any]:
    trace = engine.generate(scenario, seed, hardware=hardware)
    key = trace.key.to_dict()
    timeline = engine.to_timeline(trace)
    # The viewer ignores fields it does not know; track.js reads `evidence` for evidence:K focus.
    timeline = {**timeline, "evidence": key.get("evidence", [])}
    bundle = {
        "timeline_gz": gzip.compress(orjson.dumps(timeline), compresslevel=6, mtime=0),
        "key": key,
        "prompt": trace.prompt,
    }
    cache.set(
        _cache_key("perfetto", scenario, seed, hardware),
        gzip.compress(engine.perfetto_bytes(trace), compresslevel=6, mtime=0),
        TIMEOUT,
    )
    cache.set(_cache_key("bundle", scenario, seed, hardware), bundle, TIMEOUT)
    return bundle


def bundle(scenario: str, seed: int, hardware: str | None = None) -> dict[str, Any]:
    """{"timeline_gz": bytes, "key": dict, "prompt": dict} for one deterministic trace."""
    found = cache.get(_cache_key("bundle", scenario, seed, hardware))
    return found if found is not None else _generate(scenario, seed, hardware)


def perfetto_gz(scenario: str, seed: int, hardware: str | None = None) -> bytes:
    found = cache.get(_cache_key("perfetto", scenario, seed, hardware))
    if found is None:
        _generate(scenario, seed, hardware)
        found = cache.get(_cache_key("perfetto", scenario, seed, hardware))
    if found is None:  # a cache that refuses large values: regenerate without caching
        trace = engine.generate(scenario, seed, hardware=hardware)
        found = gzip.compress(engine.perfetto_bytes(trace), compresslevel=6, mtime=0)
    return found
