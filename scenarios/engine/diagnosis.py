"""The five-sentence diagnosis: what a learner commits, the values it is graded against, and the
grading rule. Pure (numpy + stdlib).

The interview script the drill trains: state the step time → quantify the gap → name the
signature → name the one measurement that confirms it and its value on this trace → give the fix
and the step time after it (with arithmetic). Every number is graded against a value measured
here on the trace's own events, so the answer has to come from reading the trace.

Catalogues. Every measurement has a value on *every* trace (0 where the thing it counts is
absent), and several are plausible for several scenarios, so naming one is a decision and not a
giveaway; the fix list carries plausible wrong fixes too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .catalog import ANSWERS, FIXES, THEORY_TEXT
from .kernels import DTYPE_BYTES
from .measure import is_gemm_kernel, merge, per_args, row_name
from .model import C_KERN, COMPUTE, MAIN, NCCL

# --------------------------------------------------------------------------- tolerances

STEP_TOLERANCE = 0.10  # step time: ±10 %
GAP_TOLERANCE = 0.10  # gap: ±10 % ...
GAP_FLOOR_OF_STEP = 0.02  # ... or ±2 % of the step time, whichever is larger
EXPECTED_TOLERANCE = 0.10  # expected step time after the fix: ±10 % ...
WIN_AT_LEAST = 0.01  # ... and, where the fix saves at least this share of the step, a saving
VALUE_TOLERANCE = 0.15  # a measurement's value: ±15 % or its own band (a share: its band in points)
HARD_AFTER_S = 90.0  # right but slow
LIMIT_S = 120.0  # the clock

SENTENCES: tuple[tuple[str, str], ...] = (
    ("step", "Step time"),
    ("gap", "Gap (GPU compute idle per step)"),
    ("signature", "Signature"),
    ("measurement", "Confirming measurement"),
    ("value", "Its value on this trace"),
    ("fix", "Fix"),
    ("expected", "Expected step time after the fix"),
)


@dataclass(frozen=True, slots=True)
class Measurement:
    key: str
    label: str
    unit: str  # "%", "ms", "GB/s", "×", "per step"
    how: str  # how to take it with the viewer's instruments (static/js/timeline.js)
    floor: float = 0.0  # the band's half-width in the unit, when ±15 % is narrower
    floor_of_step: float = 0.0  # for times: the band is at least this share of the step

    def band(self, value: float, step_ms: float) -> float:
        """The half-width of the accepted band around ``value``. A share (%) is read to the
        same few points whatever its size, so it is graded in points: ±15 % of an 80 % share
        (±12 points) let a typical number pass without reading the trace."""
        if self.unit == "%":
            return self.floor
        return max(
            VALUE_TOLERANCE * abs(value),
            self.floor,
            self.floor_of_step * step_ms,
        )

    def band_text(self) -> str:
        if self.floor_of_step:
            return f"±15 % or ±{self.floor_of_step * 100:.0f} % of the step time"
        if self.unit == "%":
            return f"±{self.floor:g} points"
        return f"±15 % or ±{self.floor:g} {self.unit}"


_M = [
    Measurement(
        "gpu_idle_share",
        "GPU compute-stream idle share of the step",
        "%",
        "Drag along the time axis from the first step's start to the last step's end (find "
        "ProfilerStep to see where they are). In the range table a compute row's Busy "
        "percentage is its busy share of the selection; the idle share is 100 % minus it "
        "(any rank's value is accepted).",
        floor=3,
    ),
    Measurement(
        "exposed_comm",
        "Comm/compute overlap: NCCL time per step with the compute stream idle (exposed)",
        "ms",
        "Drag along the time axis over whole steps. A rank's NCCL row shows Exposed (ms): its "
        "communication time while that rank's compute stream is idle; divide it by the "
        "number of steps selected.",
        floor_of_step=0.02,
    ),
    Measurement(
        "busbw",
        "Bus bandwidth of the all-reduce vs the link",
        "GB/s",
        "Find nccl and press Enter to step through one step's collectives on every rank. For a "
        "large one the details give bytes (In msg nelems × the dtype's size), Group size n and "
        "Duration: an all-reduce's bus bandwidth is bytes × 2(n−1)/n ÷ duration in µs ÷ 1000 "
        "GB/s ((n−1)/n for all-gather or reduce-scatter). Use each collective's shortest copy "
        "across ranks (the longer ones include waiting for the others) and compare with the "
        "link in the framing. A pipeline has only sends and receives: a send and its receive "
        "end together, and the one that starts first waits inside for the other, so divide a "
        "large send's bytes by the shorter Duration of the two.",
        floor=5,
    ),
    Measurement(
        "nccl_rank_spread",
        "NCCL kernel time spread across ranks: (max − min) ÷ max per step",
        "%",
        "Drag along the time axis over whole steps; read every rank's NCCL row in the range "
        "table: 100 % × (largest Busy (ms) − smallest) ÷ largest.",
        floor=5,
    ),
    Measurement(
        "rank_compute_skew",
        "Slowest rank's compute time per step over the median rank's",
        "%",
        "Drag along the time axis over whole steps; read every rank's compute row in the range "
        "table: 100 % × (largest Busy (ms) − the median rank's) ÷ the median rank's.",
        floor=3,
    ),
    Measurement(
        "launch_ratio",
        "Launch cadence vs kernel time: median time between two kernel launches ÷ median "
        "kernel duration",
        "×",
        "Zoom into the middle of a step, find LaunchKernel and press Enter through a few dozen "
        "launches, noting each Start: the median gap between two starts is the launch cadence. "
        "Then drag across the compute row over whole steps: its Median (ms) in the range table "
        "is the typical kernel (and its Slices ÷ steps the kernels and copies per step). "
        "Cadence ÷ that median far above 1 (tens) means the GPU finishes each kernel long "
        "before the CPU launches the next. (The CUDA API row's Slices count every runtime "
        "call, not only launches: no cadence from them.)",
        floor=0.05,
    ),
    Measurement(
        "syncs_per_step",
        "Host–device synchronisations (…Synchronize calls) per step",
        "per step",
        "Drag down one rank's CPU rows (its threads and CUDA API rows) over whole steps; in the "
        "by-name table, the Count of the …Synchronize calls ÷ the number of steps.",
        floor=1,
    ),
    Measurement(
        "alloc_per_step",
        "Device malloc/free calls per step",
        "per step",
        "Drag down one rank's CPU rows (its threads and CUDA API rows) over whole steps; in the "
        "by-name table, the Counts of cudaMalloc and cudaFree (hipMalloc, hipFree) ÷ the "
        "number of steps.",
        floor=1,
    ),
    Measurement(
        "non_gemm_share",
        "Non-GEMM kernels' share of GPU kernel time (elementwise, norm, softmax, optimizer)",
        "%",
        "Drag across one compute row over whole steps. Its kernel time is the row's Busy (ms) "
        "minus the Memcpy and Memset Totals in the by-name table; add the Totals of the GEMM "
        "and flash-attention kernels (gemm, Cijk_, gemv, wvSplitK, flash, fmha in the name). "
        "Non-GEMM share = 100 % × (1 − GEMM ÷ kernel time).",
        floor=5,
    ),
    Measurement(
        "loader_wait",
        "Time waiting for the DataLoader (__next__) per step",
        "ms",
        "Drag along the time axis over whole steps; in the by-name table the Total of "
        "enumerate(DataLoader)… ÷ (steps × ranks), 0 when it is absent.",
        floor_of_step=0.02,
    ),
    Measurement(
        "step_spread",
        "Step-time spread: slowest step ÷ median step",
        "×",
        "Find ProfilerStep and press Enter through the steps, reading each Duration (or drag "
        "along the time axis over all steps: each ProfilerStep#… row's Max in the by-name table "
        "is that step on its slowest rank). The slowest step ÷ the median step.",
        floor=0.1,
    ),
]
MEASUREMENTS: dict[str, Measurement] = {m.key: m for m in _M}

FIX_CATALOGUE: dict[str, str] = {
    **FIXES,
    "faster_links": "Buy a faster interconnect (more NVLink / InfiniBand bandwidth)",
    "activation_checkpointing": "Turn on activation checkpointing to cut memory",
    "more_ranks": "Scale out to more data-parallel ranks",
}

# scenario -> measurements that confirm it (the first one is the reference answer)
ACCEPTED_MEASUREMENTS: dict[str, tuple[str, ...]] = {
    "exposed-allreduce": ("exposed_comm",),
    "input-starvation": ("loader_wait",),
    "launch-bound": ("launch_ratio",),
    "straggler": ("rank_compute_skew", "nccl_rank_spread"),
    "memory-bound-kernel": ("non_gemm_share",),
    "sync-stalls": ("syncs_per_step",),
    "pipeline-bubbles": ("gpu_idle_share",),
    "allocator-stalls": ("alloc_per_step",),
    "bandwidth-bound-collective": ("busbw",),
    "recompilation": ("step_spread",),
    "healthy": ("gpu_idle_share", "exposed_comm"),
}


def accepted_fixes(slug: str) -> tuple[str, ...]:
    _meas, _ok, fix, fix_ok, _fam = ANSWERS[slug]
    return tuple(dict.fromkeys([fix, *fix_ok]))


# What a healthy trace's framing makes look wrong, and why it is normal (for the reveal). Each
# symptom of catalog.SYMPTOMS and each theory of catalog.THEORY_TEXT gets its own answer, written
# with the trace's own numbers (``_HealthyFacts``): the framing the learner read is the one the
# reveal answers, never a stock line about some other framing.
HEALTHY_RED_HERRINGS: dict[str, str] = {
    "dips": "The once-per-step dip is the last gradient bucket's all-reduce and the optimizer: "
    "every data-parallel job has it, and here it is a few per cent of the step.",
    "comm": "Communication is large in a per-rank summary because the summary adds up NCCL "
    "kernel time, most of which runs under backward; only the exposed part costs step time: "
    "{exposed_ms} ms of the {step_ms} ms step here.",
    "estimate": "A team's estimate is usually peak FLOP/s; a dense compute stream at a "
    "realistic MFU is what this hardware delivers (the GPU is busy {busy} % of the step).",
    "mfu": "MFU counts only the model's FLOPs against peak: attention, norms, activations, the "
    "optimizer and communication take their share of a GPU that is busy {busy} % of the step. "
    "A higher MFU needs other kernels or another batch size, not the removal of a stall.",
    "scaling": "The only time more GPUs add to a step is the communication left exposed: "
    "{exposed_ms} ms of the {step_ms} ms step here, the rest runs under backward. The "
    "shortfall in throughput is not in these steps.",
    "config": "Nothing in these steps stalls the GPU (busy {busy} % of the step): compare with a "
    "trace from before the change; the slowdown is not in what this one shows.",
    "scale": "Nothing stalls (the GPU is busy {busy} % of the step), so scaling out changes "
    "throughput, not efficiency.",
    "smi": "The trace says otherwise: a kernel runs on the GPU {busy} % of the step (the "
    "compute stream alone is busy {compute_busy} %). "
    "The utilisation tool samples its own window, which takes in whatever runs between the "
    "profiled steps (evaluation, checkpoints, start-up).",
    "bubble": "A pipeline always has a warm-up and a drain; with many microbatches per stage "
    "they are the small (p−1)/(m+p−1) share the formula predicts.",
    "per-gpu": "Each stage idles at its own moments of the warm-up and drain, so a per-GPU "
    "counter reads a little differently on each rank: {idle_lo}–{idle_hi} % idle here, "
    "and no rank's compute holds the others back.",
    "faster-gpu": "Decode at a small batch reads every weight once per token: HBM bandwidth, "
    "not FLOP/s, sets the token rate, so a GPU with more compute and similar bandwidth decodes "
    "at about the same speed. The GPU is busy {busy} % of the step: nothing stalls it.",
    "weight-streaming": "A weight-streaming estimate divides the bytes by peak HBM bandwidth; "
    "real kernels reach part of that peak, and attention, norms and sampling add their time. "
    "The GPU is busy {busy} % of every token's step, so no stall adds to it.",
    "decode-util": "A kernel runs on the GPU {busy} % of every decode step in this trace; a "
    "server-wide utilisation counter also counts the time between requests.",
    "traffic": "The second opinion: the GPU is busy {busy} % of every step and nothing stalls "
    "it; there is nothing to fix before it takes traffic.",
    "serving-loop": "Nothing in these steps stalls the GPU (busy {busy} % of the step): compare "
    "with a trace from before the change; the regression is not in what this one shows.",
    "cpu-core": "A decode loop's Python thread is always busy: it launches the next kernels "
    "while the GPU runs the last ones, then waits for the token. A busy core beside a GPU that "
    "is busy {busy} % of the step is a loop that keeps up, not a bottleneck.",
}
# what each colleague's theory (catalog.THEORY_TEXT, by the scenario it names) gets in reply
HEALTHY_THEORY_REPLIES: dict[str, str] = {
    "exposed-allreduce": "DDP does overlap: {exposed_ms} ms per step of NCCL time is exposed, "
    "{exposed_pct} % of the step; the rest runs under backward.",
    "input-starvation": "The loader keeps up: waiting for the next batch takes {loader_ms} ms "
    "per step.",
    "launch-bound": "Launch overhead hides behind the GPU: the queue stays full and the GPU is "
    "busy {busy} % of the step, so CUDA graphs would save microseconds, not milliseconds.",
    "straggler": "No slow node: the ranks' compute per step differs by {skew} %, and no rank "
    "waits on another.",
    "memory-bound-kernel": "No unfused chain dominates: non-GEMM kernels take {nongemm} % of GPU "
    "kernel time, the usual share for norms, activations and the optimizer.",
    "sync-stalls": "No read-back stalls the step: its synchronising calls ({syncs} per step) come "
    "at its end, none inside it.",
    "pipeline-bubbles": "The schedule is fine: the warm-up and drain are the small "
    "(p−1)/(m+p−1) share of the step that any pipeline has.",
    "allocator-stalls": "The caching allocator serves every block from its cache: no device "
    "malloc or free call inside the steps.",
    "bandwidth-bound-collective": "The all-reduce's size costs only what stays exposed: "
    "{exposed_ms} ms per step; the rest runs under backward.",
    "recompilation": "Nothing recompiles: no compilation runs between the steps.",
    "healthy": "The colleague is right: nothing stalls the GPU (busy {busy} % of the step).",
}
# symptom wording (a fragment of one catalog.SYMPTOMS line) -> its HEALTHY_RED_HERRINGS entry
_SYMPTOM_REPLY: tuple[tuple[str, str], ...] = (
    ("dips once per step", "dips"),
    ("communication time looks large", "comm"),
    ("weight-streaming estimate", "weight-streaming"),
    ("team's estimate", "estimate"),
    ("mfu is poor", "mfu"),
    ("scaling from 1 to", "scaling"),
    ("touched only configuration", "config"),
    ("launched at scale", "scale"),
    ("-smi shows the gpus", "smi"),  # nvidia-smi, or rocm-smi on AMD
    ("adding pipeline stages", "bubble"),
    ("differs between ranks", "per-gpu"),
    ("faster gpu", "faster-gpu"),
    ("lower than expected for a decode server", "decode-util"),
    ("takes traffic", "traffic"),
    ("serving loop", "serving-loop"),
    ("cpu core", "cpu-core"),
)


def _healthy_numbers(facts: Mapping[str, Any]) -> dict[str, str]:
    """The figures the healthy reveal's lines quote, printed as the rest of the key prints them."""

    def num(key: str, scale: float = 1.0) -> float:
        try:
            return float(facts.get(key) or 0.0) * scale
        except (TypeError, ValueError):
            return 0.0

    step = num("step_ms")
    idle = [float(x) * 100 for x in facts.get("idle_frac_per_rank") or [num("gpu_idle_frac")]]
    # the compute stream alone (the idle share the reveal's measurement row reads), which idles
    # more than the GPU when NCCL kernels run on their own stream
    c_idle = facts.get("compute_idle_frac_per_rank") or [num("gpu_idle_frac")]
    compute_idle = 100 * sum(float(x) for x in c_idle) / len(c_idle)
    d = 2 if step < 10 else 1
    return {
        "busy": f"{100 - num('gpu_idle_frac', 100):.0f}",
        "compute_busy": f"{100 - compute_idle:.0f}",
        "step_ms": f"{step:.{d}f}",
        "exposed_ms": f"{num('exposed_comm_ms'):.{d}f}",
        "exposed_pct": f"{100 * num('exposed_comm_ms') / step:.0f}" if step else "0",
        "loader_ms": f"{num('loader_ms_per_step'):.2f}",
        "skew": f"{num('compute_skew_pct'):.1f}",
        "nongemm": f"{num('nongemm_share', 100):.0f}",
        "syncs": f"{num('syncs_per_step'):.0f}",
        "idle_lo": f"{min(idle):.1f}",
        "idle_hi": f"{max(idle):.1f}",
    }


def red_herring(prompt: Mapping[str, Any] | None, facts: Mapping[str, Any]) -> list[str]:
    """For a healthy reveal: what in the framing the learner read looked wrong (its symptom, and
    the colleague's theory if there was one), and why it is normal on this trace."""
    prompt = prompt or {}
    numbers = _healthy_numbers(facts)
    out = []
    symptom = str(prompt.get("symptom") or "").lower()
    for fragment, entry in _SYMPTOM_REPLY:
        if fragment in symptom:
            out.append(HEALTHY_RED_HERRINGS[entry].format(**numbers))
            break
    theory = str(prompt.get("theory") or "")
    for slug, text in THEORY_TEXT.items():
        if text == theory:
            out.append(HEALTHY_THEORY_REPLIES[slug].format(**numbers))
            break
    if not out:
        out.append(HEALTHY_RED_HERRINGS["estimate"].format(**numbers))
    return out


# --------------------------------------------------------------------------- measuring


def _covered(ms: np.ndarray, me: np.ndarray, w0: np.ndarray, w1: np.ndarray) -> np.ndarray:
    """Length of the disjoint intervals (ms, me) inside each window [w0, w1)."""
    if len(ms) == 0:
        return np.zeros(len(w0))
    cum = np.r_[0, np.cumsum(me - ms)]

    def before(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(ms, t, "right")
        last = np.maximum(i - 1, 0)
        over = np.where(i > 0, np.maximum(me[last] - t, 0), 0)
        return cum[i] - over

    return before(w1) - before(w0)


@dataclass
class _Rank:
    w0: np.ndarray  # step windows (ns)
    w1: np.ndarray
    comp: tuple[np.ndarray, np.ndarray]  # merged compute-stream busy intervals
    both: tuple[np.ndarray, np.ndarray]  # merged compute ∪ NCCL


@dataclass
class Values:
    """Graded values measured on one trace's events."""

    step_ms: float
    gap_ms: float
    gap_range: tuple[float, float]
    measurements: dict[str, dict[str, float]] = field(default_factory=dict)
    evidence: dict[str, list[dict]] = field(default_factory=dict)


_ALLOC_CALLS = ("cudaMalloc", "cudaFree", "hipMalloc", "hipFree")


def _named(name: np.ndarray, names: Sequence[str], pred) -> np.ndarray:
    """Which events' names satisfy `pred`: decided once per name, then looked up per event."""
    lut = np.fromiter((bool(pred(n)) for n in names), bool, len(names))
    return lut[name] if len(names) else np.zeros(len(name), bool)


def measure(cols: Mapping[str, np.ndarray], names: Sequence[str], args: Sequence[dict]) -> Values:
    """Every graded value, measured on the columnar events (times in integer ns)."""
    rank_c, tid, cat, name = cols["rank"], cols["tid"], cols["cat"], cols["name"]
    ts = cols["ts"].astype(np.int64)
    te = ts + cols["dur"].astype(np.int64)
    dur = te - ts
    is_step = _named(name, names, lambda n: n.startswith("ProfilerStep#")) & (tid == MAIN)
    ranks = sorted(set(rank_c.tolist()))
    R: dict[int, _Rank] = {}
    for r in ranks:
        m = is_step & (rank_c == r)
        o = np.argsort(ts[m])
        w0, w1 = ts[m][o], te[m][o]
        cm = (rank_c == r) & (tid == COMPUTE)
        nm = (rank_c == r) & (tid == NCCL)
        comp = merge(ts[cm], te[cm])
        both = merge(np.r_[ts[cm], ts[nm]], np.r_[te[cm], te[nm]])
        R[r] = _Rank(w0, w1, comp, both)
    n_steps = min(len(R[r].w0) for r in ranks)
    nR = len(ranks)
    S = max(n_steps, 1)
    step = np.array([(R[r].w1 - R[r].w0)[:n_steps] for r in ranks], float)  # (R, S) ns
    comp_busy = np.array([_covered(*R[r].comp, R[r].w0, R[r].w1)[:n_steps] for r in ranks])
    both_busy = np.array([_covered(*R[r].both, R[r].w0, R[r].w1)[:n_steps] for r in ranks])
    idle = step - comp_busy
    exposed = both_busy - comp_busy
    step_ms = float(step.max(axis=0).mean() / 1e6)
    gap_rank = idle.mean(axis=1) / 1e6
    v = Values(
        step_ms=step_ms,
        gap_ms=float(idle.mean() / 1e6),
        gap_range=(float(gap_rank.min()), float(gap_rank.max())),
    )

    def put(key: str, value: float, lo: float | None = None, hi: float | None = None) -> None:
        lo = value if lo is None else lo
        hi = value if hi is None else hi
        v.measurements[key] = {
            "value": float(value),
            "lo": float(min(lo, value)),
            "hi": float(max(hi, value)),
        }

    share_rank = 100 * idle.sum(axis=1) / step.sum(axis=1)
    put("gpu_idle_share", 100 * idle.sum() / step.sum(), share_rank.min(), share_rank.max())
    exp_rank = exposed.mean(axis=1) / 1e6
    put("exposed_comm", exposed.mean() / 1e6, exp_rank.min(), exp_rank.max())

    # events that start inside a step window of their rank, per rank
    def in_steps(mask: np.ndarray) -> np.ndarray:
        ok = np.zeros(len(ts), bool)
        for r in ranks:
            idx = np.flatnonzero(mask & (rank_c == r))
            if not len(idx):
                continue
            w0, w1 = R[r].w0[:n_steps], R[r].w1[:n_steps]
            k = np.searchsorted(w0, ts[idx], "right") - 1
            inside = (k >= 0) & (ts[idx] < w1[np.maximum(k, 0)])
            ok[idx[inside]] = True
        return ok

    kern = (cat == C_KERN) & (tid == COMPUTE)
    nccl = (cat == C_KERN) & (tid == NCCL)
    kern_s = in_steps(kern)
    kern_ns_rank = np.array([dur[kern_s & (rank_c == r)].sum() for r in ranks], float)
    nccl_s = in_steps(nccl)
    nccl_ns_rank = np.array([dur[nccl_s & (rank_c == r)].sum() for r in ranks], float)

    # collectives: bus bandwidth of the large ones
    nccl_idx = np.flatnonzero(nccl & (cols["aid"] >= 0))
    if len(nccl_idx):
        a = cols["aid"][nccl_idx]
        nel = per_args(args, a, lambda x: float(x.get("In msg nelems", 0)))
        db = per_args(args, a, lambda x: DTYPE_BYTES.get(str(x.get("dtype", "BFloat16")), 2))
        grp = per_args(args, a, lambda x: float(x.get("Group size", 1)))
        coll = per_args(args, a, lambda x: str(x.get("Collective name", "")), object).tolist()
        fac = np.array(
            [
                2 * (g - 1) / g
                if c == "allreduce"
                else (g - 1) / g
                if c in ("allgather", "reduce_scatter", "_allgather_base", "reduce_scatter_base")
                else 1.0
                for c, g in zip(coll, np.maximum(grp, 1), strict=True)
            ]
        )
        nbytes = nel * db
        bw = nbytes * fac / np.maximum(dur[nccl_idx], 1)  # bytes per ns = GB/s
        rk = rank_c[nccl_idx]
        p2p = np.array([c in ("send", "recv") for c in coll])
        # a pipeline's bytes move in its sends and receives (the loss it broadcasts at the end
        # of a step is one float): read it on those, a data-parallel job on its collectives
        if not p2p.any():
            # collectives: the same collective has the same index on every rank; its shortest
            # copy is the transfer (the others include waiting for the last rank)
            sel = ~p2p
            big = nbytes >= np.median(nbytes[sel])
            per = [np.flatnonzero(sel & (rk == r)) for r in ranks]
            n_c = min(len(p) for p in per)
        else:
            # a pipeline's sends and receives pair different ranks, so no index lines them up
            # across ranks; a send and its receive end together, and the first of the two to
            # start waits inside for the other: a pair's shorter kernel is its transfer
            ends, pair = np.unique(te[nccl_idx], return_inverse=True)
            short = np.full(len(ends), np.iinfo(np.int64).max)
            np.minimum.at(short, pair, dur[nccl_idx])
            bw = nbytes * fac / np.maximum(short[pair], 1)
            sel = np.array([c == "send" for c in coll])
            big = nbytes >= np.median(nbytes[sel]) if sel.any() else np.zeros(len(coll), bool)
            per, n_c = [], 0
        if n_c:
            mat = np.stack([bw[p[:n_c]] for p in per])  # (R, collectives) in issue order
            bigc = np.stack([big[p[:n_c]] for p in per]).all(axis=0)
            fastest = mat.max(axis=0)[bigc] if bigc.any() else mat.max(axis=0)
            rank_med = [float(np.median(mat[i][bigc] if bigc.any() else mat[i])) for i in range(nR)]
            put("busbw", float(np.median(fastest)), min(rank_med), max(rank_med))
        elif (sel & big).any():
            on = sel & big
            rank_med = [
                float(np.median(bw[on & (rk == r)])) for r in ranks if (on & (rk == r)).any()
            ]
            put("busbw", float(np.median(bw[on])), min(rank_med), max(rank_med))
        else:
            put("busbw", 0.0)
    else:
        put("busbw", 0.0)

    nccl_ms = nccl_ns_rank / S / 1e6
    spread = 100 * (nccl_ms.max() - nccl_ms.min()) / nccl_ms.max() if nccl_ms.max() > 0 else 0.0
    put("nccl_rank_spread", spread)
    comp_ms = kern_ns_rank / S
    med = float(np.median(comp_ms))
    put("rank_compute_skew", 100 * (comp_ms.max() - med) / med if med > 0 else 0.0)

    # Launch cadence: how long the host takes between two kernel launches, against how long a
    # kernel runs (medians: a few big GEMMs do not hide a stream of tiny kernels). Far above 1
    # the GPU finishes each kernel long before the next one is launched.
    k_total = float(dur[kern_s].sum())
    launch = in_steps(_named(name, names, lambda n: n.endswith("LaunchKernel")))
    ratio_rank = []
    for r in ranks:
        lt = np.sort(ts[launch & (rank_c == r)])
        kd = dur[kern_s & (rank_c == r)]
        if len(lt) > 1 and len(kd):
            ratio_rank.append(float(np.median(np.diff(lt)) / max(float(np.median(kd)), 1.0)))
    if ratio_rank:
        put("launch_ratio", float(np.median(ratio_rank)), min(ratio_rank), max(ratio_rank))
    else:
        put("launch_ratio", 0.0)
    is_sync = _named(name, names, lambda n: n.endswith("Synchronize"))
    syncs = in_steps(is_sync & (tid == MAIN))
    put("syncs_per_step", syncs.sum() / S / nR)
    is_alloc = _named(name, names, lambda n: n in _ALLOC_CALLS)
    allocs = in_steps(is_alloc)
    put("alloc_per_step", allocs.sum() / S / nR)
    is_gemm = _named(name, names, is_gemm_kernel)
    non_gemm = kern_s & ~is_gemm
    put("non_gemm_share", 100 * float(dur[non_gemm].sum()) / k_total if k_total else 0.0)
    is_loader = _named(name, names, lambda n: n.startswith("enumerate(DataLoader)"))
    loader = in_steps(is_loader)
    lr = np.array([dur[loader & (rank_c == r)].sum() for r in ranks], float) / S / 1e6
    put("loader_wait", float(lr.mean()), float(lr.min()), float(lr.max()))
    series = step.max(axis=0)
    put("step_spread", float(series.max() / np.median(series)) if len(series) else 1.0)

    masks = {
        "exposed_comm": nccl,
        "busbw": nccl,
        "syncs_per_step": is_sync & (tid == MAIN),
        "alloc_per_step": is_alloc,
        "loader_wait": is_loader,
        "non_gemm_share": kern & ~is_gemm,
    }
    v.evidence = _evidence(ts, te, rank_c, tid, ranks, R, n_steps, series, comp_ms, nccl_ms, masks)
    return v


def _span(rank: int, tid: int, s_ns: float, e_ns: float, label: str) -> dict:
    return {
        "rank": int(rank),
        "row": row_name(rank, tid),
        "start_us": round(float(s_ns) / 1000, 3),
        "end_us": round(float(e_ns) / 1000, 3),
        "label": label,
    }


def _evidence(ts, te, rank_c, tid, ranks, R, n_steps, series, comp_ms, nccl_ms, masks):
    """Where each number can be read ("show me" in the reveal): a few spans per sentence."""
    if not n_steps:
        return {}
    r0 = ranks[0]
    k = min(2, n_steps - 1)

    def step_of(r: int, i: int, row: int, label: str) -> dict:
        return _span(r, row, R[r].w0[i], R[r].w1[i], label)

    def inside(mask: np.ndarray, r: int, label: str, limit: int = 4) -> list[dict]:
        w0, w1 = R[r].w0[k], R[r].w1[k]
        idx = np.flatnonzero(mask & (rank_c == r) & (ts < w1) & (te > w0))
        if not len(idx):
            return [step_of(r, k, MAIN, f"step {k}: none in this step")]
        idx = idx[np.argsort(-(te[idx] - ts[idx]), kind="stable")][:limit]
        row = int(tid[idx[0]])
        return [_span(r, row, ts[i], te[i], label) for i in sorted(idx, key=lambda i: ts[i])]

    w0, w1 = R[r0].w0[k], R[r0].w1[k]
    step = [step_of(r0, k, MAIN, f"step {k}")]
    ms, me = R[r0].comp
    sel = (me > w0) & (ms < w1)
    gs = np.r_[w0, np.clip(me[sel], w0, w1)]
    ge = np.r_[np.clip(ms[sel], w0, w1), w1]
    i = int(np.argmax(ge - gs))
    gap = [_span(r0, COMPUTE, gs[i], ge[i], "longest idle stretch of the compute stream")]
    slow = ranks[int(np.argmax(comp_ms))]
    mid = ranks[int(np.argsort(comp_ms)[len(comp_ms) // 2])]
    most, least = ranks[int(np.argmax(nccl_ms))], ranks[int(np.argmin(nccl_ms))]
    longest = int(np.argmax(series))
    median = int(np.argsort(series)[len(series) // 2])
    return {
        "step": step,
        "gap": gap,
        "gpu_idle_share": [step_of(r0, k, COMPUTE, f"compute stream, step {k}"), *gap],
        "exposed_comm": inside(masks["exposed_comm"], r0, "NCCL kernel", 3),
        "busbw": inside(masks["busbw"], r0, "NCCL kernel: bytes ÷ duration", 1),
        "nccl_rank_spread": inside(masks["busbw"], most, "most NCCL time", 1)
        + inside(masks["busbw"], least, "least NCCL time", 1),
        "rank_compute_skew": [
            step_of(slow, k, COMPUTE, "slowest rank's compute"),
            step_of(mid, k, COMPUTE, "median rank's compute"),
        ],
        "launch_ratio": [step_of(r0, k, MAIN, "launch calls"), step_of(r0, k, COMPUTE, "kernels")],
        "syncs_per_step": inside(masks["syncs_per_step"], r0, "synchronize call", 6),
        "alloc_per_step": inside(masks["alloc_per_step"], r0, "device malloc/free", 6),
        "non_gemm_share": inside(masks["non_gemm_share"], r0, "non-GEMM kernel", 4),
        "loader_wait": inside(masks["loader_wait"], r0, "waiting for the next batch", 2),
        "step_spread": [
            step_of(r0, longest, MAIN, "longest step"),
            step_of(r0, median, MAIN, "median step"),
        ],
    }


# --------------------------------------------------------------------------- the key block


def key_block(
    cols: Mapping[str, np.ndarray],
    names: Sequence[str],
    args: Sequence[dict],
    slug: str,
    expected_step_ms: float,
) -> dict[str, Any]:
    """The ``grading`` block of the answer key: every value a diagnosis is graded against."""
    v = measure(cols, names, args)
    # the key's expected step time is the mean step after the fix; put it on this block's scale
    return {
        "step_ms": round(v.step_ms, 3),
        "gap_ms": round(v.gap_ms, 3),
        "gap_range_ms": [round(v.gap_range[0], 3), round(v.gap_range[1], 3)],
        "measurements": {
            k: {kk: round(x, 4) for kk, x in m.items()} for k, m in v.measurements.items()
        },
        "measurements_accepted": list(ACCEPTED_MEASUREMENTS[slug]),
        "fixes_accepted": list(accepted_fixes(slug)),
        "expected_step_ms": round(float(expected_step_ms), 3),
        "evidence": v.evidence,
    }


# --------------------------------------------------------------------------- grading


@dataclass(frozen=True, slots=True)
class Answer:
    step_ms: float
    gap_ms: float
    scenario: str
    measurement: str
    measurement_value: float
    fix: str
    expected_step_ms: float
    arithmetic: str = ""


@dataclass(frozen=True, slots=True)
class Sentence:
    key: str
    correct: bool | None  # None: this trace carries no value to grade it against
    said: Any
    truth: Any
    tolerance: str


@dataclass(frozen=True, slots=True)
class Graded:
    sentences: tuple[Sentence, ...]
    scenario_correct: bool
    elapsed_s: float
    over_time: bool
    practice: bool

    def get(self, key: str) -> Sentence:
        return next(s for s in self.sentences if s.key == key)

    @property
    def numbers_right(self) -> bool:
        """Every sentence other than the signature is right (or could not be graded)."""
        return all(s.correct is not False for s in self.sentences if s.key != "signature")

    @property
    def all_right(self) -> bool:
        return self.scenario_correct and self.numbers_right and not self.over_time

    def as_dict(self) -> dict[str, bool | None]:
        return {s.key: s.correct for s in self.sentences}


def within(
    said: float, truth: float, band: float, lo: float | None = None, hi: float | None = None
) -> bool:
    """``said`` lies within ``band`` of ``truth`` (or of the span [lo, hi] around it)."""
    if not (isinstance(said, int | float) and math.isfinite(said) and math.isfinite(truth)):
        return False
    lo = truth if lo is None else min(lo, truth)
    hi = truth if hi is None else max(hi, truth)
    return lo - band - 1e-9 <= said <= hi + band + 1e-9


def _pct(x: float) -> str:
    return f"±{x * 100:.0f} %"


def fix_saves_time(step_ms: float, expected_step_ms: float) -> bool:
    """The key's fix shortens the step (by at least ``WIN_AT_LEAST`` of it): then the expected
    step time must say so, not repeat the current one (a healthy trace's fix saves nothing)."""
    return step_ms > 0 and expected_step_ms < step_ms * (1 - WIN_AT_LEAST)


def expected_correct(
    said_ms: float, expected_ms: float, step_ms: float, said_step_ms: float
) -> bool:
    """The step time after the fix is within ±10 % of the key's; where the fix saves time it must
    also be below the step time (the trace's, or the learner's own reading if that is larger):
    "nothing changes" is not a step time after a fix that saves 5 %, even inside ±10 %."""
    if not within(said_ms, expected_ms, EXPECTED_TOLERANCE * expected_ms):
        return False
    if fix_saves_time(step_ms, expected_ms):
        own = said_step_ms if math.isfinite(said_step_ms) else 0.0
        return said_ms < max(step_ms, own)
    return True


def expected_tolerance_text(step_ms: float, expected_step_ms: float) -> str:
    text = _pct(EXPECTED_TOLERANCE)
    if fix_saves_time(step_ms, expected_step_ms):
        text += ", below the step time (the fix saves time)"
    return text


def grade_diagnosis(
    key: Mapping[str, Any],
    answer: Answer,
    *,
    elapsed_s: float,
    limit_s: float = LIMIT_S,
    grace_s: float = 0.0,
    practice: bool = False,
) -> Graded:
    """Grade the five sentences against the key. ``key`` is the answer key (a dict) with its
    ``grading`` block; a key without one (an older trace) grades only what it carries."""
    g: Mapping[str, Any] = key.get("grading") or {}
    true = key["scenario"]
    step = float(g.get("step_ms") or key.get("step_ms") or 0.0)
    out: list[Sentence] = []

    out.append(
        Sentence(
            "step",
            within(answer.step_ms, step, STEP_TOLERANCE * step) if step > 0 else None,
            answer.step_ms,
            step,
            _pct(STEP_TOLERANCE),
        )
    )
    if "gap_ms" in g:
        gap = float(g["gap_ms"])
        lo, hi = (g.get("gap_range_ms") or [gap, gap])[:2]
        band = max(GAP_TOLERANCE * gap, GAP_FLOOR_OF_STEP * step)
        ok: bool | None = within(answer.gap_ms, gap, band, lo, hi)
    else:
        gap, ok = float("nan"), None
    out.append(
        Sentence(
            "gap",
            ok,
            answer.gap_ms,
            gap,
            f"{_pct(GAP_TOLERANCE)} or ±{GAP_FLOOR_OF_STEP * 100:.0f} % of the step, any rank",
        )
    )
    scenario_ok = answer.scenario == true
    out.append(Sentence("signature", scenario_ok, answer.scenario, true, "exact"))
    accepted = g.get("measurements_accepted")
    meas_ok = answer.measurement in accepted if accepted else None
    out.append(
        Sentence(
            "measurement",
            meas_ok,
            answer.measurement,
            list(accepted or []),
            "one of the accepted measurements",
        )
    )
    m_def = MEASUREMENTS.get(answer.measurement)
    m_val = (g.get("measurements") or {}).get(answer.measurement)
    if m_def is not None and m_val is not None:
        band = m_def.band(float(m_val["value"]), step)
        val_ok: bool | None = within(
            answer.measurement_value, float(m_val["value"]), band, m_val.get("lo"), m_val.get("hi")
        )
        truth = float(m_val["value"])
        tol = m_def.band_text()
    else:
        val_ok, truth, tol = None, float("nan"), ""
    out.append(Sentence("value", val_ok, answer.measurement_value, truth, tol))
    fixes = g.get("fixes_accepted") or list(
        dict.fromkeys([key.get("fix"), *(key.get("fixes_accepted") or [])])
    )
    out.append(Sentence("fix", answer.fix in fixes, answer.fix, list(fixes), "exact"))
    expected = float(g.get("expected_step_ms") or key.get("expected_step_ms") or 0.0)
    out.append(
        Sentence(
            "expected",
            expected_correct(answer.expected_step_ms, expected, step, answer.step_ms)
            if expected > 0
            else None,
            answer.expected_step_ms,
            expected,
            expected_tolerance_text(step, expected),
        )
    )
    over = False if practice else elapsed_s > limit_s + grace_s
    return Graded(tuple(out), scenario_ok, float(elapsed_s), over, practice)


# --------------------------------------------------------------------------- rating

AGAIN, HARD, GOOD = 1, 2, 3  # FSRS ratings (Easy is never given)


def rating(
    scenario_correct: bool,
    numbers_right: bool,
    elapsed_s: float,
    over_time: bool,
    *,
    practice: bool = False,
) -> int:
    """The FSRS rating of a whole answer: scenario wrong or past the clock → Again; scenario right
    but a number off, or slow (> 90 s) → Hard; everything right in time → Good. Practice has no
    clock, so its time never lowers the rating."""
    if not scenario_correct:
        return AGAIN
    if not practice and (over_time or elapsed_s > LIMIT_S):
        return AGAIN
    if not practice and elapsed_s > HARD_AFTER_S:
        return HARD
    if not numbers_right:
        return HARD
    return GOOD


def rate(graded: Graded) -> int:
    return rating(
        graded.scenario_correct,
        graded.numbers_right,
        graded.elapsed_s,
        graded.over_time,
        practice=graded.practice,
    )
