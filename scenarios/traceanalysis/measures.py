"""Measurements on a user's trace, computed from its events (per rank and per step).

Conventions (stated to the user on the page):
* A step is a `ProfilerStep#N` annotation; it runs until the next step starts (the last one until
  its own end). Without step annotations the whole trace is one window.
* Whole-trace figures follow Holistic Trace Analysis: with two or more steps the last step is left
  out (the profiler often cuts it), and GPU events count when their launch falls before it.
* GPU time is per device (all streams of a rank together): compute = time any compute kernel runs;
  exposed communication = communication kernels running while no compute kernel does; memcpy =
  copies and memsets not hidden under kernels; idle = nothing runs. Idle gaps shorter than
  `KERNEL_GAP_US` are launch overhead (back-to-back kernels), the rest host wait.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from . import intervals as iv
from .kineto import (
    ANNOT,
    COMM,
    CPU_OP,
    GPU_KINDS,
    KERNEL,
    MEMCPY,
    MEMSET,
    RUNTIME,
    STEP,
    STEP_RE,
    RankTrace,
)

KERNEL_GAP_US = 30.0  # HTA's consecutive_kernel_delay: shorter gaps are launch latency
SYNC_RE = re.compile(
    r"^(cuda|hip)(StreamSynchronize|DeviceSynchronize|EventSynchronize|Memcpy|MemcpyDtoH|"
    r"MemcpyHtoD|Memcpy2D|MemcpyWithStream|ThreadSynchronize)$|^cuCtxSynchronize$|"
    r"^cuStreamSynchronize$"
)
ALLOC_RE = re.compile(
    r"^(cuda|hip)(Malloc|Free|MallocHost|FreeHost|HostAlloc|MallocManaged|MallocAsync|"
    r"FreeAsync|ExtMallocWithFlags)$|^cuMemAlloc|^cuMemFree"
)
# hipExtModuleLaunchKernel: how ROCm launches hipBLASLt / Tensile GEMMs (Cijk_…)
LAUNCH_RE = re.compile(
    r"^(cuda|hip)(LaunchKernel|LaunchKernelExC|LaunchCooperativeKernel|ExtLaunchKernel|"
    r"ModuleLaunchKernel|ExtModuleLaunchKernel|MemcpyAsync|MemsetAsync)$|^cuLaunchKernel"
)
DATALOADER_RE = re.compile(r"DataLoader.*__next__|enumerate\(DataLoader\)")
COMPILE_RE = re.compile(
    r"_compile\.compile_inner|call_user_compiler|compile_fx|TorchDynamo Compile|"
    r"inductor_compile|backend_compile"
)
PAGEABLE_RE = re.compile(r"Pageable", re.I)
# kernel families (first match wins)
FAMILIES: list[tuple[str, re.Pattern[str]]] = [
    ("communication", re.compile(r"nccl|rccl|hccl", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|sdpa|mha_", re.I)),
    ("embedding", re.compile(r"embed", re.I)),  # before gemm: embedding kernels name tiles too
    # "gemm", but not the "fbgemm_gpu::" namespace of TorchRec's permute / quantize kernels
    ("gemm", re.compile(r"(?<!fb)gemm|Cijk_|xmma|cutlass|matmul|_mm_|sm\d+_|wvSplitK|gemv", re.I)),
    ("convolution", re.compile(r"conv|cudnn|implicit_", re.I)),
    ("normalization", re.compile(r"norm", re.I)),
    ("softmax", re.compile(r"softmax", re.I)),
    ("optimizer", re.compile(r"multi_tensor|adam|sgd|optimizer", re.I)),
    ("reduction", re.compile(r"reduce|_sum|mean", re.I)),
    ("triton (fused)", re.compile(r"triton", re.I)),
    ("embedding", re.compile(r"embed|index|gather|scatter", re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|pointwise|copy|fill", re.I)),
    ("memcpy", re.compile(r"^Memcpy", re.I)),
    ("memset", re.compile(r"^Memset", re.I)),
]
DTYPE_BYTES = {
    "float": 4, "float32": 4, "fp32": 4, "float16": 2, "half": 2, "fp16": 2, "bfloat16": 2,
    "bf16": 2, "float64": 8, "double": 8, "int8": 1, "uint8": 1, "int8_t": 1, "char": 1,
    "int32": 4, "int": 4, "int64": 8, "long": 8, "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1,
}  # fmt: skip
BUS_FACTOR = {"allreduce": "2(n-1)/n", "allgather": "(n-1)/n", "reducescatter": "(n-1)/n",
              "alltoall": "(n-1)/n", "broadcast": "1", "reduce": "1", "sendrecv": "1"}  # fmt: skip
COLL_FROM_NAME = re.compile(
    r"(AllReduce|AllGather|ReduceScatter|AllToAll|Broadcast|Reduce|SendRecv|Send|Recv)", re.I
)
# the process-group op on the CPU that launched a collective kernel: "c10d::alltoall_base_",
# "nccl:all_reduce", "c10d::send"
COLL_OP = re.compile(r"^(?:c10d::|nccl:)_?(.+)$")


def family(name: str) -> str:
    for fam, rx in FAMILIES:
        if rx.search(name):
            return fam
    return "other"


def _r(x: float, nd: int = 3) -> float:
    return round(float(x), nd)


def _pct(a: float, b: float) -> float | None:
    return _r(100.0 * a / b, 2) if b > 0 else None


def bus_factor(coll: str, n: int) -> float:
    k = BUS_FACTOR.get(coll, "1")
    if n <= 1:
        return 1.0
    return {"2(n-1)/n": 2 * (n - 1) / n, "(n-1)/n": (n - 1) / n}.get(k, 1.0)


def _norm_coll(name: str) -> str:
    s = re.sub(r"[^a-z]", "", name.lower())
    for k in ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"):
        if k in s:
            return k
    if s.startswith(("send", "recv")):  # "send", "recv_", "recv_any_source_"
        return "sendrecv"
    if "reduce" in s:
        return "reduce"
    return s or "unknown"


class RankView:
    """Index sets and merged GPU interval sets of one rank, built once."""

    def __init__(self, r: RankTrace):
        self.r = r
        names = np.array(r.names, dtype=object)
        self.nm = names[r.name] if r.n else np.zeros(0, dtype=object)
        end = r.ts + r.dur
        self.end = end
        k = r.kind
        rt = k == RUNTIME
        rt_names = dict(enumerate(r.names))
        used_rt = set(r.name[rt].tolist())
        sync_ids = {i for i in used_rt if SYNC_RE.search(rt_names[i])}
        alloc_ids = {i for i in used_rt if ALLOC_RE.search(rt_names[i])}
        launch_ids = {i for i in used_rt if LAUNCH_RE.search(rt_names[i])}
        self.is_sync = rt & np.isin(r.name, list(sync_ids))
        self.is_alloc = rt & np.isin(r.name, list(alloc_ids))
        self.is_launch = rt & np.isin(r.name, list(launch_ids))
        cpu_named = (k == ANNOT) | (k == CPU_OP)
        dl_ids = {i for i, n in enumerate(r.names) if DATALOADER_RE.search(n)}
        cp_ids = {i for i, n in enumerate(r.names) if COMPILE_RE.search(n)}
        self.is_dataloader = cpu_named & np.isin(r.name, list(dl_ids))
        self.is_compile = cpu_named & np.isin(r.name, list(cp_ids))
        self.gpu = np.isin(k, GPU_KINDS)
        # steps (one per number; on the thread that has them)
        st = np.flatnonzero(k == STEP)
        steps: dict[int, tuple[float, float]] = {}
        for i in st.tolist():
            m = STEP_RE.match(r.names[r.name[i]])
            num = int(m.group(1)) if m else len(steps)
            a, b = float(r.ts[i]), float(end[i])
            if num in steps:
                a, b = min(a, steps[num][0]), max(b, steps[num][1])
            steps[num] = (a, b)
        self.steps = sorted(steps.items(), key=lambda kv: kv[1][0])
        # runtime ts by correlation (for launch delay / host wait)
        rt_i = np.flatnonzero(rt & (r.corr >= 0))
        self.rt_by_corr: dict[int, int] = dict(
            zip(r.corr[rt_i].tolist(), rt_i.tolist(), strict=True)
        )
        # kept GPU events (HTA's filter)
        keep = self.gpu.copy()
        self.cut = None
        if len(self.steps) >= 2:
            cut = self.steps[-1][1][0]
            self.cut = cut
            ok_corr = set(r.corr[rt_i[r.ts[rt_i] < cut]].tolist())
            keep &= np.isin(r.corr, list(ok_corr))
        self.kept = keep
        self.sets = self._sets(keep)
        self.sets_all = self._sets(self.gpu)

    def _sets(self, mask: np.ndarray) -> dict[str, iv.Iv]:
        r, end = self.r, self.end
        out = {}
        for key, kinds in (("compute", (KERNEL,)), ("comm", (COMM,)), ("mem", (MEMCPY, MEMSET))):
            m = mask & np.isin(r.kind, kinds)
            out[key] = iv.merge(r.ts[m], end[m])
        out["busy"] = iv.union(out["compute"], out["comm"], out["mem"])
        return out

    def cpu_set(self, mask: np.ndarray) -> iv.Iv:
        return iv.merge(self.r.ts[mask], self.end[mask])

    def windows(self) -> list[dict]:
        """Step windows: [start, next start) and the last step to its own end."""
        if not self.steps:
            busy = self.sets_all["busy"]
            if not len(busy[0]):
                return []
            return [
                {"step": None, "start": float(busy[0][0]), "end": float(busy[1][-1]), "last": False}
            ]
        out = []
        for j, (num, (a, b)) in enumerate(self.steps):
            nxt = self.steps[j + 1][1][0] if j + 1 < len(self.steps) else None
            out.append(
                {
                    "step": num,
                    "start": a,
                    "end": nxt if nxt is not None else b,
                    "last": nxt is None and len(self.steps) >= 2,
                }
            )
        return out


def step_breakdown(v: RankView, w: dict) -> dict:
    a, b = w["start"], w["end"]
    S = v.sets_all
    comp = iv.clip(S["compute"], a, b)
    comm = iv.clip(S["comm"], a, b)
    mem = iv.clip(S["mem"], a, b)
    busy = iv.clip(S["busy"], a, b)
    exposed = iv.subtract(comm, comp)
    mem_only = iv.subtract(mem, iv.union(comp, comm))
    idle = iv.complement(busy, a, b)
    gaps = idle[1] - idle[0]
    short = gaps < KERNEL_GAP_US
    # what the CPU was doing while the GPU sat idle
    attrib = {}
    for key, mask in (
        ("input", v.is_dataloader),
        ("compile", v.is_compile),
        ("sync", v.is_sync),
        ("allocator", v.is_alloc),
    ):
        attrib[key] = iv.length(iv.intersect(idle, iv.clip(v.cpu_set(mask), a, b)))
    r = v.r
    inw = (r.ts >= a) & (r.ts < b)
    sync_m = v.is_sync & inw
    alloc_m = v.is_alloc & inw
    launches = v.is_launch & inw
    step_us = b - a
    # GPU idle that follows a synchronising call that waited for the GPU (busy when the call
    # began, idle when it returned: the call drained the queue): from its return to the next
    # GPU start
    refill = 0.0
    bs, be = S["busy"]
    starts, ends = r.ts[sync_m], v.end[sync_m]
    if len(ends) and len(bs):
        i0 = np.searchsorted(bs, starts, side="right") - 1
        nxt = np.searchsorted(bs, ends)
        for st_, e, j, ni in zip(starts.tolist(), ends.tolist(), i0.tolist(), nxt.tolist(),
                                 strict=True):  # fmt: skip
            waited = j >= 0 and float(be[j]) > st_
            if not waited or ni >= len(bs) or (ni > 0 and float(be[ni - 1]) > e):
                continue
            refill += max(0.0, min(float(bs[ni]), b) - e)
    return {
        "step": w["step"],
        "last": w["last"],
        "start_us": _r(a),
        "end_us": _r(b),
        "step_ms": _r(step_us / 1e3),
        "compute_ms": _r(iv.length(comp) / 1e3),
        "comm_ms": _r(iv.length(comm) / 1e3),
        "exposed_comm_ms": _r(iv.length(exposed) / 1e3),
        "memcpy_ms": _r(iv.length(mem_only) / 1e3),
        "launch_overhead_ms": _r(float(gaps[short].sum()) / 1e3),
        "host_wait_ms": _r(float(gaps[~short].sum()) / 1e3),
        "idle_ms": _r(float(gaps.sum()) / 1e3),
        "idle_input_ms": _r(attrib["input"] / 1e3),
        "idle_compile_ms": _r(attrib["compile"] / 1e3),
        "idle_sync_ms": _r(attrib["sync"] / 1e3),
        "idle_allocator_ms": _r(attrib["allocator"] / 1e3),
        "sync_refill_ms": _r(refill / 1e3),
        "longest_gap_ms": _r(float(gaps.max()) / 1e3 if len(gaps) else 0.0),
        "longest_gap_at_us": _r(float(idle[0][np.argmax(gaps)]) if len(gaps) else a),
        "sync_calls": int(sync_m.sum()),
        "sync_ms": _r(float(r.dur[sync_m].sum()) / 1e3),
        "alloc_calls": int(alloc_m.sum()),
        "alloc_ms": _r(float(r.dur[alloc_m].sum()) / 1e3),
        "launches": int(launches.sum()),
        "launch_api_ms": _r(float(r.dur[launches].sum()) / 1e3),
        "input_ms": _r(iv.length(iv.clip(v.cpu_set(v.is_dataloader), a, b)) / 1e3),
        "compile_ms": _r(iv.length(iv.clip(v.cpu_set(v.is_compile), a, b)) / 1e3),
    }


def temporal(v: RankView) -> dict:
    """HTA's temporal breakdown over the kept GPU events."""
    S = v.sets
    busy = S["busy"]
    if not len(busy[0]):
        return {"idle_pct": None, "compute_pct": None, "non_compute_pct": None, "span_ms": 0.0}
    span = float(busy[1][-1] - busy[0][0])
    comp = iv.length(S["compute"])
    idle = span - iv.length(busy)
    return {
        "span_ms": _r(span / 1e3),
        "idle_pct": _pct(idle, span),
        "compute_pct": _pct(comp, span),
        "non_compute_pct": _pct(span - idle - comp, span),
    }


def overlap(v: RankView) -> float | None:
    comm = v.sets["comm"]
    c = iv.length(comm)
    if c <= 0:
        return None
    return _pct(iv.length(iv.intersect(comm, v.sets["compute"])), c)


def idle_breakdown(v: RankView) -> dict:
    """Per stream: host_wait (the launch came after the previous kernel ended), kernel_wait (gap
    under KERNEL_GAP_US), other (the GPU waited on something else: another stream, an event)."""
    r = v.r
    out: dict[str, dict] = {}
    m = v.kept
    for s in sorted(set(r.tid[m].tolist())):
        idx = np.flatnonzero(m & (r.tid == s))
        idx = idx[np.argsort(r.ts[idx], kind="stable")]
        ts, end = r.ts[idx], v.end[idx]
        prev_end = end[:-1]
        gap = ts[1:] - prev_end
        launch = np.array(
            [
                r.ts[v.rt_by_corr[c]] if c in v.rt_by_corr else -np.inf
                for c in r.corr[idx[1:]].tolist()
            ]
        )
        host = launch > prev_end
        kw = ~host & (gap < KERNEL_GAP_US)
        other = ~host & ~kw
        g = np.maximum(gap, 0.0)
        tot = float(g.sum())
        out[str(s)] = {
            "host_wait_ms": _r(float(g[host].sum()) / 1e3),
            "kernel_wait_ms": _r(float(g[kw].sum()) / 1e3),
            "other_ms": _r(float(g[other].sum()) / 1e3),
            "idle_ms": _r(tot / 1e3),
        }
    return out


def launch_stats(v: RankView) -> dict:
    r = v.r
    g = np.flatnonzero(v.kept & (r.corr >= 0))
    pairs = [
        (i, v.rt_by_corr[c])
        for i, c in zip(g.tolist(), r.corr[g].tolist(), strict=True)
        if c in v.rt_by_corr and LAUNCH_RE.search(r.names[r.name[v.rt_by_corr[c]]])
    ]
    if not pairs:
        return {"launches": 0}
    gi = np.array([p[0] for p in pairs])
    ci = np.array([p[1] for p in pairs])
    gd, cd = r.dur[gi], r.dur[ci]
    delay = r.ts[gi] - r.ts[ci]
    kern = np.isin(r.kind[gi], (KERNEL, COMM))
    return {
        "launches": len(pairs),
        "kernel_launches": int(kern.sum()),
        "short_compute_kernel_pct": _pct(float((gd[kern] < cd[kern]).sum()), int(kern.sum())),
        "cpu_median_us": _r(float(np.median(cd))),
        "gpu_median_us": _r(float(np.median(gd))),
        "short_kernels": int((gd < cd).sum()),
        "short_kernel_pct": _pct(float((gd < cd).sum()), len(pairs)),
        "launch_delay_median_us": _r(float(np.median(delay))),
        "launch_delay_p95_us": _r(float(np.percentile(delay, 95))),
        "cpu_total_ms": _r(float(cd.sum()) / 1e3),
        "gpu_total_ms": _r(float(gd.sum()) / 1e3),
    }


def kernel_table(v: RankView) -> tuple[list[dict], list[dict]]:
    r = v.r
    idx = np.flatnonzero(v.kept)
    if not len(idx):
        return [], []
    tot: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for ni, d in zip(r.name[idx].tolist(), r.dur[idx].tolist(), strict=True):
        t = tot[r.names[ni]]
        t[0] += 1
        t[1] += d
        t[2] = max(t[2], d)
    all_t = sum(t[1] for t in tot.values())
    rows = sorted(tot.items(), key=lambda kv: -kv[1][1])
    kernels = [
        {
            "name": n,
            "family": family(n),
            "count": int(t[0]),
            "total_ms": _r(t[1] / 1e3),
            "mean_us": _r(t[1] / t[0], 2),
            "max_us": _r(t[2], 2),
            "share_pct": _pct(t[1], all_t),
        }
        for n, t in rows
    ]
    fam: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for n, t in rows:
        f = fam[family(n)]
        f[0] += t[0]
        f[1] += t[1]
    families = [
        {
            "family": f,
            "count": int(t[0]),
            "total_ms": _r(t[1] / 1e3),
            "share_pct": _pct(t[1], all_t),
        }
        for f, t in sorted(fam.items(), key=lambda kv: -kv[1][1])
    ]
    return kernels, families


def launching_collective(v: RankView, idx: list[int]) -> dict[int, str]:
    """The collective each communication kernel in ``idx`` runs, as named by the c10d / NCCL op
    on the CPU that launched it (the innermost such op around its launch call). NCCL runs
    all-to-all as SendRecv kernels, and some builds run every collective so: the kernel's own
    name would call an embedding all-to-all or a gradient all-reduce point-to-point."""
    r = v.r
    op_ids = [n for n, name in enumerate(r.names) if COLL_OP.match(name)]
    if not op_ids:
        return {}
    ops = np.flatnonzero((r.kind == CPU_OP) & np.isin(r.name, op_ids))
    o_ts, o_end, o_pid, o_tid = r.ts[ops], v.end[ops], r.pid[ops], r.tid[ops]
    out: dict[int, str] = {}
    for i in idx:
        j = v.rt_by_corr.get(int(r.corr[i])) if r.corr[i] >= 0 else None
        if j is None:
            continue
        around = np.flatnonzero(
            (o_pid == r.pid[j]) & (o_tid == r.tid[j]) & (o_ts <= r.ts[j]) & (o_end >= v.end[j])
        )
        if len(around):
            inner = ops[around[np.argmax(o_ts[around])]]
            m = COLL_OP.match(r.names[r.name[inner]])
            if m:
                out[i] = m.group(1)
    return out


MAX_ELEMENTS = 1 << 50  # a message of more elements than this is no real one (a petabyte)
MAX_GROUP = 1 << 20  # ranks in a process group


def count_arg(v: object, limit: int = MAX_ELEMENTS) -> int:
    """A count from a kernel's args (elements, ranks): a whole number from 1 to ``limit``, else
    0 for unknown. A damaged or hand-edited trace's 1e308 elements made an integer no float
    holds, and the upload failed with "something went wrong"; a string made int() raise."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return 0
    return int(v) if 1 <= v <= limit else 0


def collectives(v: RankView, link_gbps: float | None, world: int) -> list[dict]:
    r = v.r
    idx = np.flatnonzero(v.kept & (r.kind == COMM)).tolist()
    launched_by = launching_collective(v, idx)
    groups: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for i in idx:
        a = r.args[r.aid[i]] if r.aid[i] >= 0 else {}
        cname = a.get("Collective name")
        if not isinstance(cname, str):
            cname = launched_by.get(i)
        if not isinstance(cname, str):
            m = COLL_FROM_NAME.search(r.names[r.name[i]])
            cname = m.group(1) if m else "unknown"
        coll = _norm_coll(cname)
        nbytes = 0
        n_el = count_arg(a.get("In msg nelems"))
        if n_el:
            dt = str(a.get("dtype", "")).lower().replace("c10::", "")
            if coll == "allgather":
                n_el = count_arg(a.get("Out msg nelems", n_el))
            nbytes = n_el * DTYPE_BYTES.get(dt, 0)
        n = count_arg(a.get("Group size"), MAX_GROUP) or world
        groups[(coll, nbytes, n)].append(i)
    out = []
    for (coll, nbytes, n), ii in sorted(groups.items(), key=lambda kv: -r.dur[kv[1]].sum()):
        d = r.dur[ii]
        med = float(np.median(d))
        p10 = float(np.percentile(d, 10))
        row: dict = {
            "collective": coll,
            "bytes": nbytes,
            "group_size": n,
            "count": len(ii),
            "total_ms": _r(float(d.sum()) / 1e3),
            "median_us": _r(med, 1),
            "fastest_us": _r(float(d.min()), 1),
            # the duration the bandwidth is taken at, shown beside it so bytes ÷ it checks out
            "p10_us": _r(p10, 1),
        }
        if nbytes and med > 0:
            algbw = (
                nbytes / (p10 * 1e-6) / 1e9
            )  # GB/s at the fast end (waiting inflates the median)
            row["algbw_gbps"] = _r(algbw, 1)
            row["busbw_gbps"] = _r(algbw * bus_factor(coll, n), 1)
            row["bus_factor"] = BUS_FACTOR.get(coll, "1")
            if link_gbps:
                row["link_gbps"] = link_gbps
                row["link_pct"] = _pct(algbw * bus_factor(coll, n), link_gbps)
                # faster than the link carries: these kernels did not span the whole transfer
                # (a receive posted after its data had landed, or a message count that is not
                # the bytes moved), so the figure is not a bandwidth
                row["above_link"] = row["link_pct"] > 100
        out.append(row)
    return out


# how close an upload's steps must come to a generated trace's, step by step, to be that trace:
# TraceTrack's own export read back lands within 0.12 % of the key's step times
SAME_STEPS_REL = 0.005


def same_steps(analysis: dict, series: list[float], rel: float = SAME_STEPS_REL) -> bool:
    """Whether an analysed upload has the step times ``series`` (ms, one per step; a step's
    time is its longest rank's, as an answer key measures it): the same number of steps, two
    at least, each within ``rel`` of its own."""
    per = [[s["step_ms"] for s in pr["steps"]] for pr in analysis.get("per_rank", [])]
    if len(series) < 2 or not per or any(len(p) != len(series) for p in per):
        return False
    longest = [max(p[k] for p in per) for k in range(len(series))]
    return all(abs(a - b) <= rel * b for a, b in zip(longest, series, strict=True))
