"""Findings: rules with stated thresholds, each naming the likely pathology from the catalogue and
the span of the trace that shows it (in the spirit of Nsight Systems' expert rules).

Every rule reads the analysed steps (the last step is left out when there are two or more) of every
rank. A finding carries: the slug, a title, what was measured against which threshold, a severity
(the share of the step it costs, 0–1) and the evidence span (rank, row kind, start/end in µs)."""

from __future__ import annotations

from statistics import median

# Thresholds (a change here changes what users see: keep the page's wording in step).
INPUT_SHARE = 0.15  # GPU idle while the main thread waits in DataLoader.__next__, share of step
INPUT_STEPS = 0.75  # ... in at least this share of steps
COMPILE_SHARE = 0.20  # GPU idle during compilation in a step
COMPILE_STEPS_MAX = 0.60  # ... in at most this share of steps (every step = not a recompile)
OUTLIER_STEP = 1.8  # a step this many times the median, GPU mostly idle, counts as a recompile
SYNC_REFILL_SHARE = 0.04  # GPU idle after synchronising calls, share of step
SYNC_CALLS_MIN = 2.0  # synchronising calls per step
ALLOC_SHARE = 0.02  # time in cudaMalloc/cudaFree per steady-state step, share of step
# communication that runs after compute (overlap below OVERLAP_MAX): worth a finding from this
# share of the step on (all of it is exposed, so it is all to win back)
EXPOSED_SERIAL_SHARE = 0.05
# comm/compute overlap %, below = the collectives wait for compute to end. A serialised
# all-reduce overlaps nothing (0 % in every exposed-allreduce trace, seeds 1000-1059); a job whose
# buckets start under backward but run long overlaps 29-64 % of its collective time
# (bandwidth-bound, the same seeds; both the key's reading), so the line sits well between
OVERLAP_MAX = 15.0
# communication already overlapped yet still exposed: the collective outlasts the compute it
# hides under. A healthy DDP step leaves its last bucket's tail out: 4-11 % of the step (the key's
# reading, seeds 1000-1059; a high all-reduce share on a short step is the top of it), where a
# bandwidth-bound one leaves 19-48 %
EXPOSED_SHARE = 0.16
# per-rank collective time, slowest rank over fastest: the same bytes over the same link take
# the same time on every rank; a straggler's peers wait inside their collectives (several x)
COMM_SYMMETRY = 1.5
# below this many bytes per call a collective's time is latency, not bandwidth (1 MiB reaches
# only ~10 % of an NVLink's bus bandwidth)
BW_MIN_BYTES = 1024 * 1024
STRAGGLER_RATIO = 1.08  # one rank's compute over the median rank's
STRAGGLER_STEPS = 0.6  # ... the same rank in at least this share of steps
# ... among at least this many ranks of the upload: of two, one is always the slower, their
# median is their mean, and nothing tells a slow rank from a fast other one
STRAGGLER_MIN_RANKS = 3
# bus bandwidth at least this share of the link's achievable figure: the link runs at its
# ceiling; below it the fabric runs slow (both are bandwidth-bound: it only words the finding)
BUSBW_SHARE = 0.60
# bus bandwidth in this band of the GPU's PCIe link: a ring through the hosts at that link's ceiling
PCIE_RING_BAND = (0.6, 0.95)
# GPU idle share of step with point-to-point (pipeline) traffic, not counting idle while the
# host waits for the data loader, the compiler or the allocator (those stall every stage alike)
BUBBLE_SHARE = 0.10
# the bubble a 1F1B schedule of m microbatches through p stages has by construction,
# (p−1)/(m+p−1): a deep schedule (m ≫ p) keeps it near 10 %, and idle beyond it has another
# cause (read-backs, a slow stage); a shallow one (m ≤ p) idles 40 % and more
BUBBLE_SCHEDULE = 0.20
LAUNCH_SHORT = 50.0  # % of kernels shorter than their launch call
LAUNCH_UTIL = 0.60  # GPU busy share of step below which launch overhead matters
# launch gaps are many and short: the longest gap stays below this share of the step's idle
# time (a pipeline stage waiting for its neighbour idles in one long gap instead)
LAUNCH_GAP_SHARE = 0.5
# low-intensity kernels' share of compute-kernel time: realistic traces carry a lot of small
# elementwise work; the pathology is when it dominates
MEMBOUND_SHARE = 0.45
# ... and only on a GPU that is busy most of the step: on one idle most of it, the kernel mix of
# a few stray kernels (50 µs in all on a real trace) is not what holds the job back
MEMBOUND_MAX_IDLE = 0.50
EXPLAINS_IDLE = frozenset(
    {
        "launch-bound",
        "input-starvation",
        "sync-stalls",
        "allocator-stalls",
        "recompilation",
        "pipeline-bubbles",
        "straggler",
        "exposed-allreduce",
        "bandwidth-bound-collective",
    }
)
IDLE_SHARE = 0.30  # generic: GPU idle share of step
PAGEABLE_PER_STEP = 2.0  # generic: pageable copies that move data, per step
# smallest pageable copy counted as moving data: scalar reads (loss.item(), a grad norm) are
# copies of a few bytes that any training loop makes each step; pinning would not change them
PAGEABLE_DATA_BYTES = 64 * 1024

THRESHOLDS = {k: v for k, v in globals().items() if k.isupper() and isinstance(v, (int, float))}


def _steps(a: dict) -> list[tuple[int, dict]]:
    out: list[tuple[int, dict]] = []
    for pr in a["per_rank"]:
        st = [s for s in pr["steps"] if not s["last"]]
        # first profiled step often carries warm-up; keep it (a recompile can be there too)
        out.extend((pr["rank"], s) for s in st)
    return out


def _steady_steps(steps: list[tuple[int, dict]]) -> list[tuple[int, dict]]:
    """The steps after the first profiled one, which may carry warm-up (the caching allocator's
    first cudaMalloc calls); the first itself when it is the only one analysed (the profiler's
    schedule records steps after its own warm-up). None without step annotations: the whole
    trace is one window then, set-up and warm-up included (AlexNet's benchmark trace, no
    ProfilerStep, spent 8.5 s of warm-up in cudaMalloc/cudaFree and was said to stall in
    steady-state steps)."""
    numbered = [x for x in steps if x[1]["step"] is not None]
    if not numbered:
        return []
    first = min(s["step"] for _, s in numbered)
    return [(r, s) for r, s in numbered if s["step"] != first] or numbered


def _window_words(stepped: bool) -> dict[str, str]:
    """How a finding names the span it measured: the step, or without ``ProfilerStep`` the one
    window the whole trace is (from its first GPU event to its last), which is no step."""
    if stepped:
        return {"of": "of the step", "per": "per step", "every": " every step"}
    return {"of": "of the trace window", "per": "in the trace window", "every": ""}


NO_STEPS = "no ProfilerStep: the trace is one window, from its first GPU event to its last"


def _no_steps(n_windows: int) -> str:
    """What a finding on a trace without steps adds: what the window is, and that a figure is
    the median of the ranks' windows when there are several."""
    return f" ({NO_STEPS}" + (f"; median of {n_windows} ranks)" if n_windows > 1 else ")")


def _share(s: dict, key: str) -> float:
    return s[key] / s["step_ms"] if s["step_ms"] > 0 else 0.0


def _busy_enough(s: dict) -> bool:
    """The GPU is busy most of this step (or window): what its kernels are made of can be what
    holds the job back."""
    return _share(s, "idle_ms") < MEMBOUND_MAX_IDLE


def _ev(rank: int, row: str, a: float, b: float, label: str) -> dict:
    return {
        "rank": rank,
        "row": row,
        "start_us": round(a, 3),
        "end_us": round(b, 3),
        "label": label,
    }


def _median_step(steps: list[tuple[int, dict]], rank: int | None = None) -> tuple[int, dict]:
    cand = [x for x in steps if rank is None or x[0] == rank] or steps
    cand = sorted(cand, key=lambda x: x[1]["step_ms"])
    return cand[len(cand) // 2]


def _finding(slug, title, measured, threshold, severity, evidence, detail=""):
    return {
        "slug": slug,
        "title": title,
        "measured": measured,
        "threshold": threshold,
        "severity": round(max(0.0, min(1.0, severity)), 4),
        "evidence": evidence,
        "detail": detail,
    }


def _schedule_bubble(a: dict) -> tuple[int, int, int, float] | None:
    """(p, m, v, (p−1)/(v·m+p−1)) of a pipeline trace: p the world size (one stage per rank), m
    the microbatches per step and v the model chunks per stage, read from the send/recv kernels
    of the steps analysed. A middle stage moves 4 per microbatch and chunk; the first and last
    stages 2 fewer per microbatch (the model's first forward and last backward stay on the
    device), so m = (most − fewest) ÷ 2 and v = most ÷ 4m: v = 1 for plain 1F1B, 2 and more for
    an interleaved schedule. With two stages (no middle one), v is taken as 1. None when it
    cannot be read."""
    p = int(a.get("world_size") or 0)
    per: list[float] = []
    for pr in a["per_rank"]:
        n_steps = sum(1 for s in pr["steps"] if not s["last"])
        n = sum(c["count"] for c in pr["collectives"] if c["collective"] == "sendrecv")
        if n_steps and n:
            per.append(n / n_steps)
    if p < 2 or not per:
        return None
    m, v = max(1, round(min(per) / 2)), 1
    if p >= 3 and len(per) == p:
        m2 = round((max(per) - min(per)) / 2)
        if m2 >= 1:
            m, v = m2, max(1, round(max(per) / (4 * m2)))
    return p, m, v, (p - 1) / (v * m + p - 1)


def _host_path(busbw: float, link: dict) -> str:
    """A bus bandwidth near the ceiling of the GPU's PCIe link (a ring reaches about 80 % of its
    link) says where the ring runs: through the hosts, not over the scale-up link."""
    pcie = link.get("pcie_gbps")
    if not pcie or not PCIE_RING_BAND[0] * pcie <= busbw <= PCIE_RING_BAND[1] * pcie:
        return ""
    return (
        f"; {100 * busbw / pcie:.0f}% of the GPU's {pcie:.0f} GB/s PCIe link, a PCIe link's "
        "ring ceiling: the ring likely runs through the hosts (NCCL_DEBUG=INFO names the transport)"
    )


def evaluate(a: dict) -> list[dict]:
    steps = _steps(a)
    if not steps:
        return []
    out: list[dict] = []
    n = len(steps)
    stepped = any(s["step"] is not None for _, s in steps)  # else one window: the whole trace
    w = _window_words(stepped)
    med_step = median(s["step_ms"] for _, s in steps)

    # input starvation: every step waits on the data loader with the GPU idle
    inp = [_share(s, "idle_input_ms") for _, s in steps]
    hit = [x >= INPUT_SHARE for x in inp]
    if sum(hit) >= INPUT_STEPS * n:
        r, s = _median_step(steps)
        out.append(
            _finding(
                "input-starvation",
                f"The GPU waits for the data loader{w['every']}",
                (
                    f"GPU idle inside DataLoader __next__: median {median(inp):.0%} of the step, "
                    f"in {sum(hit)} of {n} steps"
                    if stepped
                    else f"GPU idle inside DataLoader __next__: {median(inp):.0%} of the trace "
                    f"window{_no_steps(n)}"
                ),
                f">= {INPUT_SHARE:.0%} of the step in >= {INPUT_STEPS:.0%} of steps"
                if stepped
                else f">= {INPUT_SHARE:.0%} of the trace window",
                median(inp),
                [
                    _ev(
                        r,
                        "cpu",
                        s["start_us"],
                        s["start_us"] + s["input_ms"] * 1e3 + 1,
                        "waiting for the next batch",
                    )
                ],
            )
        )

    # recompilation: a few steps lose the GPU to compilation (or are outliers with an idle GPU)
    comp_steps = [(r, s) for r, s in steps if _share(s, "idle_compile_ms") >= COMPILE_SHARE]
    outliers = [
        (r, s)
        for r, s in steps
        if s["step_ms"] >= OUTLIER_STEP * med_step and _share(s, "idle_ms") >= 0.5
    ]
    rec = comp_steps or outliers
    if rec and len({x[1]["step"] for x in rec}) <= COMPILE_STEPS_MAX * len(
        {x[1]["step"] for x in steps}
    ):
        r, s = max(rec, key=lambda x: x[1]["idle_ms"])
        lost = sum(x[1]["idle_ms"] for x in rec) / max(1, len(a["per_rank"]))
        total = sum(x[1]["step_ms"] for x in steps) / max(1, len(a["per_rank"]))
        what = "compiling" if comp_steps else "with the GPU idle"
        out.append(
            _finding(
                "recompilation",
                "A few steps stall while the CPU compiles",
                f"{len({x[1]['step'] for x in rec})} of {len({x[1]['step'] for x in steps})} steps "
                f"lose the GPU {what}; {lost:.0f} ms in all",
                f">= {COMPILE_SHARE:.0%} of a step idle while compiling (or a step >= "
                f"{OUTLIER_STEP}x the median, mostly idle), in <= {COMPILE_STEPS_MAX:.0%} of steps",
                lost / total if total else 0.0,
                [_ev(r, "*", s["start_us"], s["end_us"], "compile stall")],
            )
        )

    # sync stalls: synchronising calls drain the queue and the GPU idles until relaunch
    refill = [_share(s, "sync_refill_ms") for _, s in steps]
    calls = [s["sync_calls"] for _, s in steps]
    if median(refill) >= SYNC_REFILL_SHARE and median(calls) >= SYNC_CALLS_MIN:
        r, s = _median_step(steps)
        out.append(
            _finding(
                "sync-stalls",
                "Synchronising calls leave the GPU idle",
                f"{median(calls):.0f} synchronising calls {w['per']}; GPU idle after them "
                f"{median(refill):.1%} {w['of']}" + ("" if stepped else _no_steps(n)),
                f">= {SYNC_CALLS_MIN:.0f} calls and >= {SYNC_REFILL_SHARE:.0%} {w['of']} "
                "idle after them",
                median(refill),
                [_ev(r, "cuda_api", s["start_us"], s["end_us"], "synchronising calls")],
            )
        )

    # allocator stalls: cudaMalloc/cudaFree in steady state
    steady = _steady_steps(steps)
    al = [_share(s, "alloc_ms") for _, s in steady]
    if steady and median(al) >= ALLOC_SHARE:
        r, s = _median_step(steady)
        out.append(
            _finding(
                "allocator-stalls",
                "cudaMalloc / cudaFree in steady-state steps",
                f"median {median(s2['alloc_calls'] for _, s2 in steady):.0f} calls, "
                f"{median(al):.1%} of the step in the allocator",
                f">= {ALLOC_SHARE:.0%} of a steady-state step",
                median(al) * 2,
                [_ev(r, "cuda_api", s["start_us"], s["end_us"], "allocator calls")],
            )
        )

    # collectives: straggler / bandwidth-bound / exposed
    skew = a["skew"]["steps"]
    straggler_rank = None
    if skew and len(a["per_rank"]) >= STRAGGLER_MIN_RANKS:
        slow = [
            x
            for x in skew
            if (x["compute_max_over_median"] or 0) >= STRAGGLER_RATIO
            and x["slowest_comm_ms"] < x["others_comm_median_ms"]
        ]
        if slow:
            top = max(
                {x["slowest_rank"] for x in slow},
                key=lambda rk: sum(1 for x in slow if x["slowest_rank"] == rk),
            )
            k = sum(1 for x in slow if x["slowest_rank"] == top)
            if k >= STRAGGLER_STEPS * len(skew):
                straggler_rank = top
                ratio = median(
                    x["compute_max_over_median"] for x in slow if x["slowest_rank"] == top
                )
                r, s = _median_step(steps, top)
                out.append(
                    _finding(
                        "straggler",
                        f"Rank {top} is slower and the others wait for it",
                        f"rank {top}'s compute is {ratio:.2f}x the median rank's in {k} of "
                        f"{len(skew)} steps, and it spends the least time in collectives",
                        f">= {STRAGGLER_RATIO}x in >= {STRAGGLER_STEPS:.0%} of steps, among "
                        f">= {STRAGGLER_MIN_RANKS} ranks",
                        ratio - 1.0,
                        [_ev(top, "gpu", s["start_us"], s["end_us"], "the slow rank")],
                    )
                )

    colls = [c for pr in a["per_rank"] for c in pr["collectives"]]
    p2p = [c for c in colls if c["collective"] == "sendrecv"]
    exposed = [_share(s, "exposed_comm_ms") for _, s in steps]
    overl = [pr["overlap_pct"] for pr in a["per_rank"] if pr["overlap_pct"] is not None]
    link = a.get("link")
    comm_rank = [sum(c["total_ms"] for c in pr["collectives"]) for pr in a["per_rank"]]
    comm_rank = [x for x in comm_rank if x > 0]
    symmetric = bool(comm_rank) and max(comm_rank) <= COMM_SYMMETRY * min(comm_rank)
    if straggler_rank is None and colls and not p2p and median(exposed) >= EXPOSED_SERIAL_SHARE:
        big = max(colls, key=lambda c: c["total_ms"])
        link_pct = big.get("link_pct")
        at_ceiling = (
            link is not None
            and link_pct is not None
            and link_pct >= 100 * BUSBW_SHARE * link["achievable_fraction"]
        )
        r, s = _median_step(steps)
        if not overl or max(overl) < OVERLAP_MAX:
            out.append(
                _finding(
                    "exposed-allreduce",
                    "Communication runs after compute, not under it",
                    f"comm/compute overlap {min(overl or [0]):.0f}–{max(overl or [0]):.0f}% "
                    "across ranks; "
                    f"exposed communication {median(exposed):.0%} {w['of']}",
                    f"overlap < {OVERLAP_MAX:.0f}% and exposed >= "
                    f"{EXPOSED_SERIAL_SHARE:.0%} {w['of']}",
                    median(exposed),
                    [_ev(r, "nccl", s["start_us"], s["end_us"], "exposed communication")],
                )
            )
        elif (
            overl
            and median(exposed) >= EXPOSED_SHARE
            and symmetric
            and not 0 < big["bytes"] < BW_MIN_BYTES
        ):
            # overlapped, yet it outlasts the compute under it, alike on every rank: the
            # transfer itself is the bottleneck. Bus bandwidth against the link says whether the
            # link runs at its ceiling (send fewer bytes) or below it (the fabric runs slow).
            if big.get("busbw_gbps") is not None and link is not None and link_pct is not None:
                bw = (
                    f"bus bandwidth {big['busbw_gbps']:.0f} GB/s = {link_pct:.0f}% of "
                    f"{link['name']} ({link['gbps']:.0f} GB/s): "
                    + (
                        "the link's achievable ceiling"
                        if at_ceiling
                        else "well below what the link achieves"
                        + (_host_path(big["busbw_gbps"], link) or ", the fabric runs slow")
                    )
                )
            elif big.get("busbw_gbps") is not None:
                bw = f"bus bandwidth {big['busbw_gbps']:.0f} GB/s (link unknown)"
            else:
                bw = "bytes unknown"
            out.append(
                _finding(
                    "bandwidth-bound-collective",
                    "The collective takes longer than the compute it hides under",
                    f"{big['collective']} of {big['bytes'] / 1e6:.1f} MB, {bw}; overlapped "
                    f"{min(overl):.0f}%+ yet still exposed {median(exposed):.0%} {w['of']}, "
                    f"collective time within {max(comm_rank) / min(comm_rank):.2f}x across ranks",
                    f"overlap >= {OVERLAP_MAX:.0f}%, exposed >= {EXPOSED_SHARE:.0%} {w['of']}, "
                    f"per-rank collective time within {COMM_SYMMETRY}x",
                    median(exposed),
                    [_ev(r, "nccl", s["start_us"], s["end_us"], "collective")],
                )
            )

    # pipeline bubbles: point-to-point traffic and a large idle share that differs by stage; a
    # stage that waits inside a receive kernel (exposed communication) computes no more than an
    # idle one, so that wait counts too (an interleaved schedule's stages wait mostly so)
    idle = [
        max(
            0.0,
            s["idle_ms"] - s["idle_input_ms"] - s["idle_compile_ms"] - s["idle_allocator_ms"],
        )
        / s["step_ms"]
        + (s["exposed_comm_ms"] / s["step_ms"] if p2p else 0.0)
        if s["step_ms"] > 0
        else 0.0
        for _, s in steps
    ]
    sched = _schedule_bubble(a) if p2p else None
    if p2p and median(idle) >= BUBBLE_SHARE and (sched is None or sched[3] >= BUBBLE_SCHEDULE):
        r, s = _median_step(steps)
        why = "point-to-point send/recv between ranks; "
        if sched:
            p_, m_, v_, bubble = sched
            chunks = f" × {v_} model chunks" if v_ > 1 else ""
            vm = f"{v_}·m" if v_ > 1 else "m"
            why = (
                f"{m_} microbatches{chunks} through {p_} stages: the schedule alone idles "
                f"(p−1)/({vm}+p−1) = {bubble:.0%} of each stage's step; "
            )
        out.append(
            _finding(
                "pipeline-bubbles",
                "Pipeline stages sit idle waiting for each other",
                f"{why}GPU idle or waiting in receives median {median(idle):.0%} {w['of']} "
                "(besides waits on data, compiler, allocator)",
                f"send/recv present, idle >= {BUBBLE_SHARE:.0%} {w['of']} and a schedule "
                f"bubble (p−1)/(m+p−1) >= {BUBBLE_SCHEDULE:.0%}",
                median(idle),
                [_ev(r, "gpu", s["start_us"], s["end_us"], "bubble")],
            )
        )

    # launch-bound: kernels shorter than their launches and a GPU that is mostly idle
    for pr in a["per_rank"]:
        ls = pr["launch"]
        st = [s for s in pr["steps"] if not s["last"]]
        if not ls.get("launches") or not st:
            continue
        util = median(1 - _share(s, "idle_ms") for s in st)
        short = ls.get("short_compute_kernel_pct") or 0
        # A GPU idling behind synchronising calls is waiting on the host's syncs, not on its
        # launches: the sync-stall rule above speaks for it.
        synced = median(_share(s, "sync_refill_ms") for s in st) >= SYNC_REFILL_SHARE
        spread = (
            median(s["longest_gap_ms"] / s["idle_ms"] if s["idle_ms"] > 0 else 0.0 for s in st)
            < LAUNCH_GAP_SHARE
        )
        if short >= LAUNCH_SHORT and util < LAUNCH_UTIL and not synced and spread:
            s = sorted(st, key=lambda x: x["step_ms"])[len(st) // 2]
            out.append(
                _finding(
                    "launch-bound",
                    "The CPU cannot launch kernels fast enough",
                    f"rank {pr['rank']}: {short:.0f}% of kernels run shorter "
                    "than their "
                    f"launch call (median kernel {ls['gpu_median_us']:.1f} µs, launch "
                    f"{ls['cpu_median_us']:.1f} µs); GPU busy {util:.0%} {w['of']}",
                    f">= {LAUNCH_SHORT:.0f}% short kernels and GPU busy < {LAUNCH_UTIL:.0%}",
                    1 - util,
                    [
                        _ev(
                            pr["rank"],
                            "gpu",
                            s["start_us"],
                            s["start_us"] + min(s["step_ms"] * 1e3, 2000),
                            "tiny kernels",
                        )
                    ],
                )
            )
            break

    # memory-bound kernels: low-arithmetic kernels take a big share of compute-kernel time
    for pr in a["per_rank"]:
        fams = pr["kernel_families"]
        comp_ms = sum(f["total_ms"] for f in fams if f["family"] not in NOT_COMPUTE)
        low = [
            f for f in fams if f["family"] not in HIGH_INTENSITY and f["family"] not in NOT_COMPUTE
        ]
        low_ms = sum(f["total_ms"] for f in low)
        r, s = _median_step(steps, pr["rank"])
        if comp_ms > 0 and low_ms / comp_ms >= MEMBOUND_SHARE and _busy_enough(s):
            mk = [k for k in pr["top_kernels"] if k["family"] not in HIGH_INTENSITY | NOT_COMPUTE]
            top = mk[0]["name"] if mk else low[0]["family"]
            out.append(
                _finding(
                    "memory-bound-kernel",
                    "Low-arithmetic kernels take a big share of the GPU",
                    f"rank {pr['rank']}: {low_ms / comp_ms:.0%} of compute-kernel time is in "
                    f"{', '.join(f['family'] for f in low[:3])} kernels (top: {top[:70]})",
                    f">= {MEMBOUND_SHARE:.0%} of compute-kernel time outside GEMM / attention / "
                    f"convolution, on a GPU idle under {MEMBOUND_MAX_IDLE:.0%} {w['of']}",
                    low_ms / comp_ms / 2,
                    [_ev(pr["rank"], "gpu", s["start_us"], s["end_us"], top[:40])],
                )
            )
            break

    # generic rules when nothing specific explains the GPU's idle time (a kernel-mix finding such
    # as memory-bound says nothing about a GPU that sits idle most of the step)
    if not any(f["slug"] in EXPLAINS_IDLE for f in out):
        hi = [(r, s) for r, s in steps if _share(s, "idle_ms") >= IDLE_SHARE]
        if len(hi) >= 0.5 * n:
            r, s = max(hi, key=lambda x: x[1]["longest_gap_ms"])
            keys = {
                "idle_input_ms": "input-starvation",
                "idle_sync_ms": "sync-stalls",
                "idle_allocator_ms": "allocator-stalls",
                "idle_compile_ms": "recompilation",
            }
            best = max(keys, key=lambda k2: s[k2])
            # nothing the CPU was visibly waiting on: if the GPU mostly waited for launches
            # (HTA's host_wait), the host is too slow to feed it; otherwise it waited on
            # other streams or events
            host = sum(
                b["host_wait_ms"] for p in a["per_rank"] for b in p["idle_by_stream"].values()
            )
            other = sum(b["other_ms"] for p in a["per_rank"] for b in p["idle_by_stream"].values())
            guess = "launch-bound" if host >= other else "sync-stalls"
            slug = keys[best] if s[best] > 0.2 * s["idle_ms"] else guess
            title = "Low GPU utilisation" + (
                ": the GPU waits on the host" if slug == "launch-bound" else ""
            )
            out.append(
                _finding(
                    slug,
                    title,
                    f"GPU idle {median(_share(x, 'idle_ms') for _, x in steps):.0%} of "
                    + ("the step (median); " if stepped else f"the trace window{_no_steps(n)}; ")
                    + f"longest gap {s['longest_gap_ms']:.1f} ms",
                    f"idle >= {IDLE_SHARE:.0%} of the step in half the steps or more"
                    if stepped
                    else f"idle >= {IDLE_SHARE:.0%} of the trace window",
                    median(_share(x, "idle_ms") for _, x in steps),
                    [
                        _ev(
                            r,
                            "gpu",
                            s["longest_gap_at_us"],
                            s["longest_gap_at_us"] + s["longest_gap_ms"] * 1e3,
                            "GPU gap",
                        )
                    ],
                )
            )
        pages = sum(pr.get("pageable_memcpy_data", 0) for pr in a["per_rank"]) / max(1, n)
        # a rate per step needs steps: without them the copies may be the model's weights,
        # loaded once (AlexNet's benchmark trace: 8 copies of up to 151 MB, then no step)
        if pages >= PAGEABLE_PER_STEP and stepped:
            r, s = _median_step(steps)
            out.append(
                _finding(
                    "sync-stalls",
                    "Copies to pageable host memory",
                    f"{pages:.1f} pageable memcpy of >= {PAGEABLE_DATA_BYTES // 1024} KiB per "
                    "step: each one synchronises the host",
                    f">= {PAGEABLE_PER_STEP:.0f} per step",
                    0.01,
                    [_ev(r, "gpu", s["start_us"], s["end_us"], "pageable copies")],
                )
            )
    # Equal severities mean two rules measured the same GPU idle: in a pipeline the host blocks
    # in a synchronising call while its stage waits for a neighbour, so the idle after the sync
    # is the bubble itself; the pipeline is the broader explanation and goes first.
    out.sort(key=lambda f: (-f["severity"], f["slug"] != "pipeline-bubbles"))
    return out


HIGH_INTENSITY = {"gemm", "attention", "convolution"}
NOT_COMPUTE = {"communication", "memcpy", "memset"}
