"""Independent reader #1: Perfetto's trace processor (v52 wasm, offline) imports every scenario.

For each scenario and a few seeds we write ``engine.perfetto_bytes(trace)``, import it in a
fresh trace-processor instance and check that:
  * no import stat of severity error/data_loss is non-zero;
  * slices, threads, processes and flows match what ``engine.to_perfetto`` wrote;
  * every flow joins exactly the launch and kernel the engine paired, none crosses ranks.
All traces are imported in one Node process (the wasm is compiled once).
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Any

import orjson
import pytest

from tests.scenarios.readers import perfetto_tp

engine = pytest.importorskip("scenarios.engine")
if not hasattr(engine, "generate"):  # pragma: no cover - only while the engine is being built
    pytest.skip("scenarios.engine has no generate() yet", allow_module_level=True)

_reason = perfetto_tp.unavailable_reason()
if _reason:  # pragma: no cover
    pytest.skip(_reason, allow_module_level=True)

SEEDS = (1, 2)
CASES = [(slug, seed) for slug in engine.SCENARIOS for seed in SEEDS]

QUERIES = {
    "bad_stats": (
        "select name, idx, severity, source, value from stats "
        "where severity in ('error', 'data_loss') and value > 0"
    ),
    "slices_per_track": (
        "select track_id, category, count(*) as n from slice group by track_id, category"
    ),
    "thread_tracks": "select id, utid from thread_track",
    "threads": "select utid, tid, upid, name from thread",
    "processes": "select upid, pid, name from process",
    "flows": (
        "select so.ts as ts_out, so.track_id as track_out, si.ts as ts_in, "
        "si.track_id as track_in from flow f "
        "join slice so on so.id = f.slice_out join slice si on si.id = f.slice_in"
    ),
    "unfinished": "select count(*) as n from slice where dur < 0",
}


class Imported:
    """Perfetto's view of one trace, joined in Python (cheap queries, no multi-way SQL joins)."""

    def __init__(self, tables: dict[str, list[dict[str, Any]]]):
        procs = {r["upid"]: r for r in tables["processes"]}
        self.threads = {r["utid"]: r for r in tables["threads"]}
        self.track_thread = {}
        for r in tables["thread_tracks"]:
            th = self.threads[r["utid"]]
            pid = procs[th["upid"]]["pid"] if th["upid"] is not None else None
            self.track_thread[r["id"]] = (pid, th["tid"])
        self.slices = sum(r["n"] for r in tables["slices_per_track"])
        self.by_cat = Counter()
        self.slice_threads = set()
        self.non_thread = 0
        for r in tables["slices_per_track"]:
            self.by_cat[r["category"]] += r["n"]
            if r["track_id"] in self.track_thread:
                self.slice_threads.add(self.track_thread[r["track_id"]])
            else:
                self.non_thread += r["n"]
        self.process_names = {r["pid"]: r["name"] for r in procs.values() if r["name"]}
        self.named_threads = {
            (procs[t["upid"]]["pid"], t["tid"])
            for t in self.threads.values()
            if t["name"] and t["upid"] is not None
        }
        self.flows = [
            (
                *self.track_thread[r["track_out"]],
                r["ts_out"],
                *self.track_thread[r["track_in"]],
                r["ts_in"],
            )
            for r in tables["flows"]
        ]


def _us_to_ns(ts: float) -> int:
    # Perfetto's JSON importer converts µs to integer ns; round like it (to the nearest ns).
    return round(ts * 1000)


def expected_from(doc: dict[str, Any]) -> dict[str, Any]:
    """What a correct importer must show, counted from the exported Chrome-trace object."""
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    xs = [e for e in events if e.get("ph") == "X"]
    thread_instants = [e for e in events if e.get("ph") in ("i", "I") and e.get("s", "t") == "t"]
    begins = [e for e in events if e.get("ph") == "B"]
    on_threads = xs + thread_instants + begins
    flow_s: dict[Any, dict] = {}
    flow_f: dict[Any, dict] = {}
    for e in events:
        if e.get("ph") == "s":
            key = (e.get("cat"), e.get("name"), e["id"])
            assert key not in flow_s, f"duplicate flow start id {key}"
            flow_s[key] = e
        elif e.get("ph") == "f":
            key = (e.get("cat"), e.get("name"), e["id"])
            assert key not in flow_f, f"duplicate flow end id {key}"
            flow_f[key] = e
    pairs = []
    for key, s in flow_s.items():
        f = flow_f.get(key)
        if f is not None:
            pairs.append((s, f))
    process_names = {
        e["pid"]: e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    thread_names = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    return {
        "slices": len(on_threads),
        "by_cat": Counter(e.get("cat") or None for e in on_threads),
        "threads": {(e["pid"], e["tid"]) for e in on_threads},
        "processes": {e["pid"] for e in on_threads},
        "flow_pairs": pairs,
        "process_names": process_names,
        "thread_names": thread_names,
    }


def _innermost_start(xs_by_thread, pid, tid, ts_ns):
    """Start (ns) of the innermost X slice on (pid, tid) enclosing ts_ns (Perfetto's binding).

    ``xs_by_thread`` values are (starts, ends) sorted by (start, -end); slices nest, so walking
    back from the last slice starting at or before ts_ns, the first one that encloses it is
    the innermost.
    """
    starts, ends = xs_by_thread.get((pid, tid), ((), ()))
    i = bisect.bisect_right(starts, ts_ns) - 1
    while i >= 0:
        if ends[i] >= ts_ns:
            return starts[i]
        i -= 1
    return None


def rank_of_pid(trace) -> dict[int, int]:
    """Ground truth pid -> rank from the per-rank HTA export (one file per rank)."""
    out: dict[int, int] = {}
    for rank, rdoc in engine.to_hta(trace).items():
        for e in rdoc["traceEvents"]:
            # (each rank file also carries torch's own profiler span on the string pid "Spans")
            if e.get("ph") == "X" and e.get("cat") != "Trace":
                assert out.setdefault(e["pid"], rank) == rank, f"pid {e['pid']} in two ranks"
    return out


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> dict[tuple[str, int], dict[str, Any]]:
    folder = tmp_path_factory.mktemp("perfetto")
    jobs = []
    meta = {}
    for slug, seed in CASES:
        trace = engine.generate(slug, seed)
        data = engine.perfetto_bytes(trace)
        path = folder / f"trace-{len(jobs)}.json"
        path.write_bytes(data)
        jobs.append((path, QUERIES))
        meta[(slug, seed)] = {"trace": trace, "path": path, "mb": len(data) / 1e6}
    results = perfetto_tp.run_many(jobs, timeout=900)
    for m, res in zip(meta.values(), results, strict=True):
        m["result"] = res
        if res.ok and not res.query_errors:
            m["tp"] = Imported(res.tables)
    return meta


def _expected(case) -> dict[str, Any]:
    """Counts and flow endpoints from the written file, computed once per case."""
    if "exp" not in case:
        doc = orjson.loads(case["path"].read_bytes())
        exp = expected_from(doc)
        spans: dict[tuple, list] = {}
        for e in doc["traceEvents"]:
            if e.get("ph") == "X":
                spans.setdefault((e["pid"], e["tid"]), []).append(
                    (_us_to_ns(e["ts"]), -_us_to_ns(e["ts"] + e["dur"]))
                )
        xs_by_thread = {}
        for key, v in spans.items():
            v.sort()
            xs_by_thread[key] = ([a for a, _ in v], [-b for _, b in v])
        flows = Counter()
        for s, f in exp["flow_pairs"]:
            ts_out = _innermost_start(xs_by_thread, s["pid"], s["tid"], _us_to_ns(s["ts"]))
            ts_in = _innermost_start(xs_by_thread, f["pid"], f["tid"], _us_to_ns(f["ts"]))
            flows[(s["pid"], s["tid"], ts_out, f["pid"], f["tid"], ts_in)] += 1
        exp["flow_keys"] = flows
        exp["n_flow_pairs"] = len(exp.pop("flow_pairs"))
        case["exp"] = exp
    return case["exp"]


@pytest.mark.parametrize(("slug", "seed"), CASES)
def test_imports_without_error_stats(imported, slug, seed):
    res = imported[(slug, seed)]["result"]
    assert res.ok, f"{slug}/{seed}: trace processor failed to load: {res.error}"
    assert not res.query_errors, res.query_errors
    bad = res.tables["bad_stats"]
    assert bad == [], f"{slug}/{seed}: Perfetto import stats: " + ", ".join(
        f"{r['name']}[{r['severity']}]={r['value']}" for r in bad
    )
    assert res.tables["unfinished"][0]["n"] == 0


@pytest.mark.parametrize(("slug", "seed"), CASES)
def test_slice_thread_process_counts(imported, slug, seed):
    case = imported[(slug, seed)]
    assert "tp" in case, case["result"].error or case["result"].query_errors
    tp: Imported = case["tp"]
    exp = _expected(case)
    assert tp.slices == exp["slices"], (
        f"{slug}/{seed}: Perfetto kept {tp.slices} slices of {exp['slices']} written"
    )
    assert tp.by_cat == exp["by_cat"]
    assert tp.non_thread == 0
    assert tp.slice_threads == exp["threads"]
    assert {pid for pid, _ in tp.slice_threads} == exp["processes"]
    assert exp["thread_names"] <= tp.named_threads
    for pid, name in exp["process_names"].items():
        assert tp.process_names.get(pid) == name, f"process {pid}: {tp.process_names.get(pid)!r}"


@pytest.mark.parametrize(("slug", "seed"), CASES)
def test_flows_match_launches_and_stay_in_rank(imported, slug, seed):
    case = imported[(slug, seed)]
    assert "tp" in case, case["result"].error or case["result"].query_errors
    tp: Imported = case["tp"]
    exp = _expected(case)
    assert len(tp.flows) == exp["n_flow_pairs"], (
        f"{slug}/{seed}: {len(tp.flows)} flows imported, {exp['n_flow_pairs']} s/f pairs written"
    )
    # Every imported flow must join the slices enclosing the engine's s and f events.
    expected = exp["flow_keys"]
    got = Counter(tp.flows)
    missing, extra = expected - got, got - expected
    assert not missing and not extra, (
        f"{slug}/{seed}: flows differ; missing {list(missing)[:3]}, unexpected {list(extra)[:3]}"
    )
    ranks = rank_of_pid(case["trace"])
    cross = [fl for fl in tp.flows if ranks.get(fl[0], -1) != ranks.get(fl[3], -2)]
    assert cross == [], f"{slug}/{seed}: {len(cross)} flows cross ranks, e.g. {cross[:2]}"


def test_import_cost_is_bounded(imported):
    per_mb = [
        m["result"].load_ms / m["mb"] for m in imported.values() if m["result"].load_ms is not None
    ]
    assert per_mb
    # ~0.2-0.5 s/MB on one core of this machine; a 10x regression means something broke.
    assert max(per_mb) < 5000, f"slowest import {max(per_mb):.0f} ms/MB"
