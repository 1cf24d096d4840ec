"""A learner's written reading rules: from the numbers the viewer's instruments show to the five
sentences. Pure (no browser, no Django, no engine): the browser test collects the readings through
the page and hands them here. Nothing in here looks at the answer key, the framing text or the
server; names are used only as the measurements define them (the kernel families, the launch and
synchronize calls, the DataLoader wait), never as a marker of one scenario.

Readings (times in ms):
- ``steps``: every ``ProfilerStep`` slice found by search and stepped through: rank, start, dur.
- ``rows``: the range table over whole steps, every row: rank, kind, busy, idle, exposed.
- ``all_names`` / ``cpu0_names`` / ``gpu0_names``: the range table's names (count, total, mean)
  over every row / rank 0's CPU rows / rank 0's compute row.
- ``launch_starts``: starts of consecutive launch calls stepped through inside one step.
- ``kernel_median``: the range table's median slice on rank 0's compute row (whole steps).
- ``collectives``: the NCCL kernels of one step on every rank (rank, start, duration, args),
  found by search and stepped through.
- ``refill_gaps``: when a step has many synchronize calls, the compute stream's idle time from
  each one's end to the next kernel (one step, rank 0).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field

GEMM = re.compile(r"gemm|Cijk_|gemv|wvSplitK|flash|fmha", re.I)
MOSTLY_IDLE = 0.25  # a compute stream idle this share of the time: measure the launch cadence
MANY_SYNCS = 4  # synchronize calls per step that make a learner measure the refill gaps
DTYPE_BYTES = {"BFloat16": 2, "Half": 2, "Float": 4, "Double": 8, "Float8_e4m3fn": 1}


@dataclass
class Readings:
    steps: list[dict]
    rows: list[dict]
    all_names: dict[str, dict]
    cpu0_names: dict[str, dict]
    gpu0_names: dict[str, dict]
    launch_starts: list[float] = field(default_factory=list)
    kernel_median: float = 0.0
    collectives: list[dict] = field(default_factory=list)  # NCCL kernels of one step
    refill_gaps: list[float] = field(default_factory=list)  # after each sync of one step


@dataclass
class Reading:
    """What the learner works out, and the five sentences."""

    numbers: dict[str, float]
    scenario: str
    measurement: str
    value: float
    fix: str
    expected_step_ms: float
    arithmetic: str


FIX = {
    "exposed-allreduce": "ddp_overlap",
    "input-starvation": "loader_workers",
    "launch-bound": "cuda_graphs",
    "straggler": "replace_node",
    "memory-bound-kernel": "fuse_kernels",
    "sync-stalls": "remove_syncs",
    "pipeline-bubbles": "more_microbatches",
    "allocator-stalls": "allocator_conf",
    "bandwidth-bound-collective": "fewer_comm_bytes",
    "recompilation": "pad_shapes",
    "healthy": "none",
}


def _count(names: dict[str, dict], pred) -> float:
    return sum(d["count"] for n, d in names.items() if pred(n))


def _total(names: dict[str, dict], pred) -> float:
    return sum(d["total"] for n, d in names.items() if pred(n))


def _busbw(c: dict) -> tuple[float, float]:
    """(bytes, bus bandwidth in GB/s) of one collective from its details."""
    a = c["args"]
    n = max(1.0, float(a.get("Group size", 1) or 1))
    coll = str(a.get("Collective name", ""))
    if coll == "allreduce":
        fac = 2 * (n - 1) / n
    elif "gather" in coll or "scatter" in coll:
        fac = (n - 1) / n
    else:
        fac = 1.0
    nbytes = float(a.get("In msg nelems", 0) or 0) * DTYPE_BYTES.get(str(a.get("dtype")), 2)
    return nbytes, nbytes * fac / (c["dur"] * 1e6)  # bytes per ms → GB/s


def numbers(r: Readings) -> dict[str, float]:
    """Every number the rules use, from the readings."""
    ranks = sorted({s["rank"] for s in r.steps})
    per = {
        k: sorted((s for s in r.steps if s["rank"] == k), key=lambda s: s["start"]) for k in ranks
    }
    n_steps = min(len(p) for p in per.values())
    series = [max(per[k][i]["dur"] for k in ranks) for i in range(n_steps)]
    step = statistics.fmean(series)
    comp = {x["rank"]: x for x in r.rows if x["kind"] == "gpu"}
    comm = {x["rank"]: x for x in r.rows if x["kind"] == "nccl"}
    gaps = [comp[k]["idle"] / n_steps for k in ranks]
    busy = [comp[k]["busy"] / n_steps for k in ranks]
    med_busy = statistics.median(busy)
    nccl = [comm[k]["busy"] / n_steps for k in ranks if k in comm]
    exposed = [comm[k]["exposed"] / n_steps for k in ranks if k in comm]
    kern = {n: d for n, d in r.gpu0_names.items() if not n.startswith(("Memcpy", "Memset"))}
    k_total = sum(d["total"] for d in kern.values())
    non_gemm = {n: d for n, d in kern.items() if not GEMM.search(n)}
    hot = sum(d["total"] for d in non_gemm.values() if d["total"] / n_steps >= 0.03 * step)
    out = {
        "ranks": len(ranks),
        "steps": n_steps,
        "step": step,
        "gap": statistics.fmean(gaps),
        "idle_share": 100 * statistics.fmean(gaps) / step,
        "spread": max(series) / statistics.median(series),
        "median_step": statistics.median(series),
        "loader": _total(r.all_names, lambda n: n.startswith("enumerate(DataLoader)"))
        / n_steps
        / len(ranks),
        "syncs": _count(r.cpu0_names, lambda n: n.endswith("Synchronize")) / n_steps,
        "allocs": _count(r.cpu0_names, lambda n: n.endswith(("Malloc", "Free"))) / n_steps,
        "compute_busy": statistics.fmean(busy),
        "skew": 100 * (max(busy) - med_busy) / med_busy if med_busy else 0.0,
        "skew_ms": max(busy) - med_busy,
        "nccl": statistics.fmean(nccl) if nccl else 0.0,
        "exposed": statistics.fmean(exposed) if exposed else 0.0,
        "non_gemm": 100 * sum(d["total"] for d in non_gemm.values()) / k_total if k_total else 0.0,
        "hot_family": hot / n_steps,
        "kernels": _count(r.cpu0_names, lambda n: n.endswith("LaunchKernel")) / n_steps,
        "nccl_kernels": sum(
            d["count"] for n, d in r.all_names.items() if n.lower().startswith("nccl")
        )
        / n_steps
        / len(ranks),
    }
    if len(r.launch_starts) > 2 and r.kernel_median > 0:
        diffs = [b - a for a, b in zip(r.launch_starts, r.launch_starts[1:], strict=False)]
        out["launch_ratio"] = statistics.median(diffs) / r.kernel_median
    # bus bandwidth: each collective's fastest copy across ranks moved the bytes without
    # waiting for the others; the median over the large collectives
    per_rank: dict[int, list[dict]] = {}
    for c in sorted(r.collectives, key=lambda c: c["start"]):
        per_rank.setdefault(c["rank"], []).append(c)
    out["p2p"] = float(
        any(
            "SendRecv" in c["name"]
            or str(c["args"].get("Collective name", "")).lower() in ("send", "recv", "sendrecv")
            for c in r.collectives
        )
    )
    if per_rank:
        n_c = min(len(v) for v in per_rank.values())
        best = []
        for i in range(n_c):
            bws = [_busbw(v[i]) for v in per_rank.values()]
            best.append(max(bws, key=lambda b: b[1]))
        if best:
            big = statistics.median(b[0] for b in best)
            out["busbw"] = statistics.median(b[1] for b in best if b[0] >= big)
        if n_c:
            # the step's last bucket: its fastest copy across ranks is its pure transfer time
            out["last_coll"] = min(v[n_c - 1]["dur"] for v in per_rank.values())
    return out


def read(r: Readings) -> Reading:
    """The written reading rules, in the order a learner checks them."""
    x = numbers(r)
    step, gap = x["step"], x["gap"]

    def say(slug: str, meas: str, value: float, expected: float, arith: str) -> Reading:
        return Reading(x, slug, meas, value, FIX[slug], expected, arith)

    # 1. a few steps far longer than the median: intermittent stalls → recompilation
    if x["spread"] >= 2.0:
        stalls = [s for s in r.steps if s["dur"] >= 2 * x["median_step"]]
        # a padded job runs every step like the ordinary ones: their mean, not the median
        # (with a few long steps in seven, the median is the longest ordinary step)
        plain = [s["dur"] for s in r.steps if s["dur"] < 2 * x["median_step"]]
        usual = statistics.fmean(plain) if plain else x["median_step"]
        ranks = x["ranks"]
        lost = sum(s["dur"] - usual for s in stalls) / ranks / x["steps"]
        return say(
            "recompilation",
            "step_spread",
            x["spread"],
            step - lost,
            f"{step:.1f} − {lost:.1f} lost to the long steps per step",
        )
    # 2. device malloc/free every step in steady state → allocator stalls
    if x["allocs"] >= 1:
        am = _total(r.cpu0_names, lambda n: n.endswith(("Malloc", "Free"))) / x["steps"]
        return say(
            "allocator-stalls",
            "alloc_per_step",
            x["allocs"],
            step - am,
            f"{step:.1f} − {am:.1f} ms of malloc/free",
        )
    # 3. a quarter of every step waiting for the next batch → input starvation
    if x["loader"] >= 0.25 * step:
        return say(
            "input-starvation",
            "loader_wait",
            x["loader"],
            step - x["loader"],
            f"{step:.1f} − {x['loader']:.1f} ms of DataLoader wait",
        )
    # 4. many host-device syncs per step → sync stalls
    if x["syncs"] >= MANY_SYNCS:
        # the typical refill gap times the gaps in a step (a pipeline stage's gap after a read-back
        # sometimes also holds a wait for the neighbouring stage: the median leaves those out)
        n_gaps = len(r.refill_gaps)
        typical = statistics.median(r.refill_gaps) if r.refill_gaps else 0.0
        refill = n_gaps * typical
        return say(
            "sync-stalls",
            "syncs_per_step",
            x["syncs"],
            step - refill,
            f"{step:.1f} − {n_gaps} refill gaps × {typical:.2f} ms ({refill:.1f} ms)",
        )
    # 5. one rank computes longer than the others → straggler
    if x["ranks"] > 1 and x["skew"] >= 8:
        return say(
            "straggler",
            "rank_compute_skew",
            x["skew"],
            step - x["skew_ms"],
            f"{step:.1f} − {x['skew_ms']:.1f} ms the others wait",
        )
    # 6. non-GEMM kernels dominate GPU time → memory-bound kernels
    if x["non_gemm"] >= 50:
        return say(
            "memory-bound-kernel",
            "non_gemm_share",
            x["non_gemm"],
            step - x["hot_family"],
            f"{step:.1f} − {x['hot_family']:.1f} ms of the hot elementwise family",
        )
    # 7. one GPU idle a quarter of the step with tiny kernels launched far apart → launch-bound
    if x["ranks"] == 1 and x["idle_share"] >= 100 * MOSTLY_IDLE:
        busy = step - gap
        expected = busy + x["kernels"] * 0.0015 + 0.03
        return say(
            "launch-bound",
            "launch_ratio",
            x.get("launch_ratio", 0.0),
            expected,
            f"GPU {busy:.2f} + {x['kernels']:.0f} × 1.5 µs + one graph launch",
        )
    # 8. point-to-point comm between stages: pipeline bubbles when the stages idle a third of
    #    the step; a thin warm-up and drain is what every pipeline has
    if x["ranks"] > 1 and x.get("p2p"):
        if x["idle_share"] < 30:
            return say("healthy", "gpu_idle_share", x["idle_share"], step, "nothing to fix")
        idle = x["idle_share"] / 100
        p = x["ranks"]
        m = (p - 1) * (1 - idle) / idle  # idle = (p−1)/(m+p−1)
        work = step * (1 - idle)
        expected = work * (2 * m + p - 1) / (2 * m)  # each microbatch split in two
        return say(
            "pipeline-bubbles",
            "gpu_idle_share",
            x["idle_share"],
            expected,
            f"m ≈ {m:.1f}; {work:.1f} × (2m+p−1)/(2m)",
        )
    # 9. data-parallel all-reduce: is the comm exposed, and how much of it? Nearly all of it
    # after compute, and enough of the step to matter: serialised. Overlapped, yet a sixth of
    # the step or more still out: the transfer outlasts the compute (a healthy step's last
    # bucket leaves up to about a tenth out).
    serial = x["exposed"] >= 0.85 * x["nccl"] and x["exposed"] >= 0.05 * step
    if x["ranks"] > 1 and x["nccl"] > 0 and (serial or x["exposed"] >= 0.16 * step):
        if serial:
            nb = max(1.0, round(x["nccl_kernels"]))
            expected = step - x["exposed"] + x["nccl"] / nb
            return say(
                "exposed-allreduce",
                "exposed_comm",
                x["exposed"],
                expected,
                f"{step:.1f} − {x['exposed']:.1f} + {x['nccl']:.1f}/{nb:.0f}",
            )
        # Half the bytes: the queue of collectives ends half its transfer sooner, but the last
        # bucket (itself halved) still runs after backward.
        half = x["nccl"] / 2
        tail = x.get("last_coll", 0.0) / 2
        after = max(tail, x["exposed"] - half)
        expected = step - x["exposed"] + after
        return say(
            "bandwidth-bound-collective",
            "busbw",
            x.get("busbw", 0.0),
            expected,
            f"half the bytes halves {x['nccl']:.1f} ms of comm; exposed → max({tail:.1f}, "
            f"{x['exposed']:.1f} − {half:.1f}) = {after:.1f}",
        )
    return say("healthy", "gpu_idle_share", x["idle_share"], step, "nothing to fix")
