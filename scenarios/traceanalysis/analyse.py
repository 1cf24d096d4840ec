"""Everything the upload page shows about a trace: per rank and step, whole-trace measurements,
rank skew and the findings."""

from __future__ import annotations

import numpy as np

from .findings import PAGEABLE_DATA_BYTES, evaluate
from .hardware import link_for
from .kineto import RankTrace
from .measures import (
    RankView,
    collectives,
    idle_breakdown,
    kernel_table,
    launch_stats,
    overlap,
    step_breakdown,
    temporal,
)

TOP_KERNELS = 15


def rank_skew(per_rank: list[dict]) -> dict:
    """Per step present on every rank: the spread of compute and step time across ranks."""
    if len(per_rank) < 2:
        return {"ranks": len(per_rank), "steps": []}
    by_step: dict = {}
    for pr in per_rank:
        for s in pr["steps"]:
            if s["last"] or s["step"] is None:
                continue
            by_step.setdefault(s["step"], {})[pr["rank"]] = s
    rows = []
    for num, d in sorted(by_step.items()):
        if len(d) != len(per_rank):
            continue
        ranks = sorted(d)
        comp = np.array([d[r]["compute_ms"] for r in ranks])
        comm = np.array([d[r]["comm_ms"] for r in ranks])
        start = np.array([d[r]["start_us"] for r in ranks])
        med = float(np.median(comp))
        slow = int(np.argmax(comp))
        rows.append(
            {
                "step": num,
                "slowest_rank": ranks[slow],
                "compute_max_over_median": round(float(comp.max() / med), 3) if med > 0 else None,
                "compute_spread_ms": round(float(comp.max() - comp.min()), 3),
                "slowest_comm_ms": round(float(comm[slow]), 3),
                "others_comm_median_ms": round(float(np.median(np.delete(comm, slow))), 3),
                "start_spread_ms": round(float(start.max() - start.min()) / 1e3, 3),
            }
        )
    return {"ranks": len(per_rank), "steps": rows}


def _nbytes(r: RankTrace, i: int) -> int:
    a = r.args[r.aid[i]] if r.aid[i] >= 0 else {}
    b = a.get("bytes")
    return int(b) if isinstance(b, (int, float)) else 0


def analyse(ranks: list[RankTrace]) -> dict:
    worlds = [r.world_size for r in ranks if r.world_size]
    world = max(worlds) if worlds else len(ranks)
    device = next((r.device_name for r in ranks if r.device_name), None)
    link = link_for(device)
    per_rank = []
    for r in ranks:
        v = RankView(r)
        steps = [step_breakdown(v, w) for w in v.windows()]
        kernels, families = kernel_table(v)
        counted = [s for s in steps if not s["last"]] or steps
        idle_while = {
            k: round(sum(s[f"idle_{k}_ms"] for s in counted), 3)
            for k in ("input", "compile", "sync", "allocator")
        }
        idle_while["total"] = round(sum(s["idle_ms"] for s in counted), 3)
        pageable = [
            _nbytes(r, i)
            for i in np.flatnonzero(v.kept).tolist()
            if "Pageable" in r.names[r.name[i]]
        ]
        per_rank.append(
            {
                "rank": r.rank,
                "source": r.source,
                "device": r.device_name,
                "events": r.n,
                "skipped_events": r.skipped,
                "steps": steps,
                "temporal": temporal(v),
                "overlap_pct": overlap(v),
                "idle_by_stream": idle_breakdown(v),
                "idle_while_cpu_in": idle_while,
                "launch": launch_stats(v),
                "top_kernels": kernels[:TOP_KERNELS],
                "kernel_families": families,
                "collectives": collectives(v, link.gbps if link else None, world),
                "pageable_memcpy": len(pageable),
                # copies that move data (a batch, a tensor), not a scalar read such as .item()
                "pageable_memcpy_data": sum(1 for b in pageable if b >= PAGEABLE_DATA_BYTES),
                "trace_end_us": round(float(v.end.max()), 3) if r.n else 0.0,
            }
        )
    out = {
        "version": 1,
        "world_size": world,
        "ranks": [r.rank for r in ranks],
        "device": device,
        "link": (
            {
                "name": link.name,
                "gbps": link.gbps,
                "achievable_fraction": link.achievable_fraction,
                "pcie_gbps": link.pcie_gbps,
            }
            if link
            else None
        ),
        "per_rank": per_rank,
        "skew": rank_skew(per_rank),
    }
    out["findings"] = evaluate(out)
    return out
