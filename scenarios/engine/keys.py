"""The answer key: signature, confirming measurement (with this trace's value), fix, expected step
time after the fix and the arithmetic — all from facts measured on the events."""

from __future__ import annotations

import numpy as np

from .catalog import ANSWERS, FIXES, MEASUREMENTS, SCENARIOS
from .hardware import Hardware
from .measure import Measured, row_name
from .model import C_RT, COMPUTE, MAIN, NCCL


def _r(x: float, n: int = 1) -> float:
    return round(float(x), n)


def _span(M: Measured, rank: int, tid: int, mask, label: str, limit: int = 1) -> list[dict]:
    m = mask & (M.c["rank"] == rank)
    idx = np.flatnonzero(m)
    if not len(idx):
        return []
    o = idx[np.argsort(-M.dur[idx])][:limit]
    return [
        {
            "rank": int(rank),
            "row": row_name(rank, tid),
            "start_us": _r(M.ts[i], 3),
            "end_us": _r(M.end[i], 3),
            "label": label,
        }
        for i in sorted(o.tolist())
    ]


def _step_span(M: Measured, rank: int, k: int, tid: int, label: str) -> dict:
    s, e = M.steps[rank]
    k = min(k, len(s) - 1)
    return {
        "rank": int(rank),
        "row": row_name(rank, tid),
        "start_us": _r(s[k], 3),
        "end_us": _r(e[k], 3),
        "label": label,
    }


def build_key(slug: str, M: Measured, f: dict, hw: Hardware, p: dict) -> dict:
    meas, meas_ok, fix, fix_ok, family = ANSWERS[slug]
    sc = SCENARIOS[slug]
    step = f["step_ms"]
    ev: list[dict] = []
    k_mid = min(2, M.n_steps - 1)
    r0 = M.ranks[0]
    if slug == "exposed-allreduce":
        exp = f["exposed_comm_ms"]
        expected = step - exp
        sig = (
            f"Every rank runs its all-reduce after backward: {f['comm_ms']:.1f} ms of NCCL per "
            f"step with only {f['overlap_pct']:.0f} % under compute, so {exp:.1f} ms of each "
            f"{step:.1f} ms step is exposed; ranks are symmetric."
        )
        value = f"overlap {f['overlap_pct']:.0f} % of {f['comm_ms']:.1f} ms comm per step"
        arith = [
            f"exposed comm ≈ comm × (1 − overlap) = {f['comm_ms']:.1f} × "
            f"(1 − {f['overlap_pct'] / 100:.2f}) ≈ {exp:.1f} ms",
            "backward compute is long enough to hide it once buckets launch during backward",
            f"expected step ≈ {step:.1f} − {exp:.1f} = {expected:.1f} ms ({step / expected:.2f}×)",
        ]
        ev += _span(M, r0, NCCL, M.mask(tid=NCCL), "all-reduce after backward", 3)
    elif slug == "input-starvation":
        wait = f["loader_ms_per_step"]
        compute = max(step - wait, f["gpu_per_step_ms"])
        expected = max(compute, 0.0)
        sig = (
            f"Every step on every rank opens with {wait:.1f} ms inside the DataLoader __next__ "
            f"(min {f['loader_ms_min']:.1f}, max {f['loader_ms_max']:.1f} ms) while the GPU idles; "
            f"GPU idle {100 * f['gpu_idle_frac']:.0f} % of the step."
        )
        value = f"{wait:.1f} ms of {step:.1f} ms per step waiting in DataLoader __next__"
        arith = [
            f"step = data wait + compute = {wait:.1f} + {step - wait:.1f} ms",
            "with enough workers prefetching, step ≈ max(compute, data ÷ workers)",
            f"expected step ≈ {expected:.1f} ms ({step / expected:.2f}×)",
        ]
        ev += _span(
            M,
            r0,
            MAIN,
            M.mask(names=lambda n: n.startswith("enumerate(DataLoader)")),
            "waiting for the next batch",
            3,
        )
    elif slug == "launch-bound":
        gpu = f["gpu_per_step_ms"]
        n_k = f["kernels_per_step"]
        expected = gpu + n_k * 0.0015 + 0.03
        sig = (
            f"{n_k:.0f} kernels per step, median {f['kernel_us_median']:.1f} µs on the GPU, "
            f"each launched in {f['launch_us_mean']:.1f} µs plus framework overhead; "
            f"{100 * f['short_kernel_frac']:.0f} % of kernels run shorter than their launch and "
            f"the GPU idles {100 * f['gpu_idle_frac']:.0f} % of the step."
        )
        value = (
            f"{100 * f['short_kernel_frac']:.0f} % of kernels shorter than their launch; GPU busy "
            f"{gpu:.2f} of {step:.2f} ms"
        )
        arith = [
            f"GPU work per step = {gpu:.2f} ms; CPU launch path sets the step at {step:.2f} ms",
            f"graph replay ≈ GPU time + ~1.5 µs per kernel + one launch = {gpu:.2f} + "
            f"{n_k * 0.0015:.2f} + 0.03 ms",
            f"expected step ≈ {expected:.2f} ms ({step / expected:.1f}×)",
        ]
        ev += [_step_span(M, r0, k_mid, COMPUTE, "tiny kernels with gaps between them")]
    elif slug == "straggler":
        rc = f["rank_compute_ms"]
        slow = f["slowest_rank"]
        med = float(np.median(rc))
        extra = max(rc) - med
        expected = step - extra
        sig = (
            f"Rank {slow} computes {max(rc):.1f} ms per step against a median of {med:.1f} ms "
            f"(+{f['compute_skew_pct']:.0f} %); its NCCL kernels start last and are the shortest "
            f"({f['rank_nccl_ms'][slow]:.1f} ms/step vs up to {max(f['rank_nccl_ms']):.1f} ms on "
            f"the ranks waiting for it)."
        )
        value = f"rank {slow} compute +{f['compute_skew_pct']:.0f} % over the median rank"
        arith = [
            f"synchronous step = slowest rank: {max(rc):.1f} ms compute vs median {med:.1f} ms",
            f"removing the straggler saves ≈ {extra:.1f} ms per step",
            f"expected step ≈ {step:.1f} − {extra:.1f} = {expected:.1f} ms",
        ]
        ev += [_step_span(M, slow, k_mid, COMPUTE, "slow rank's compute")]
        fast = next(r for r in M.ranks if r != slow)
        ev += _span(M, fast, NCCL, M.mask(tid=NCCL), "waiting inside the collective", 1)
    elif slug == "memory-bound-kernel":
        fam = f["score_chain_ms_per_step"]
        expected = step - fam
        sig = (
            f"Unfused elementwise kernels over the attention score matrix take "
            f"{100 * f['score_chain_share']:.0f} % of GPU time ({fam:.1f} ms per step) and run at "
            f"{f['score_chain_tbps']:.2f} TB/s, {100 * f['score_chain_tbps'] / hw.hbm_tbps:.0f} % "
            f"of HBM peak."
        )
        value = (
            f"{100 * f['score_chain_share']:.0f} % of GPU time at {f['score_chain_tbps']:.2f} TB/s "
            f"of {hw.hbm_tbps} TB/s"
        )
        arith = [
            f"score-matrix passes cost {fam:.1f} ms per step at ~HBM speed",
            "a fused attention keeps the scores on chip: those passes disappear",
            f"expected step ≈ {step:.1f} − {fam:.1f} = {expected:.1f} ms ({step / expected:.2f}×)",
        ]
        ev += [_step_span(M, r0, k_mid, COMPUTE, "score-matrix elementwise chain")]
    elif slug == "sync-stalls":
        refill = f["sync_refill_ms_per_step"]
        expected = step - refill
        sig = (
            f"{f['syncs_per_step']:.0f} synchronizing calls per step "
            f"({f['sync_ms_per_step']:.1f} ms blocked); after each in-step sync the GPU sits idle "
            f"while the CPU relaunches — {refill:.1f} ms per step."
        )
        value = (
            f"{f['syncs_per_step']:.0f} cudaStreamSynchronize per step, {refill:.1f} ms GPU "
            "refill gap per step"
        )
        arith = [
            f"cost ≈ in-step syncs × refill gap = {f['inner_syncs_per_step']:.0f} × "
            f"{refill / max(f['inner_syncs_per_step'], 1):.2f} ms = {refill:.1f} ms",
            f"expected step ≈ {step:.1f} − {refill:.1f} = {expected:.1f} ms "
            f"({step / expected:.2f}×)",
        ]
        ev += _span(
            M,
            r0,
            MAIN,
            M.mask(names=lambda n: n.endswith("StreamSynchronize")),
            "host blocked until the GPU drains",
            3,
        )
    elif slug == "pipeline-bubbles":
        P, m = p["stages"], p["micro"]
        theory = (P - 1) / (m + P - 1)
        idle = float(np.mean(f["compute_idle_frac_per_rank"]))
        busy = step * (1 - idle)
        m2 = 4 * m
        expected = busy * (1 + (P - 1) / m2)
        sig = (
            f"{P} stages, {m} microbatches: warm-up and drain leave every stage idle "
            f"{100 * idle:.0f} % of the step (theory (p−1)/(m+p−1) = {100 * theory:.0f} %), "
            f"in a staircase that repeats every step."
        )
        value = f"stage idle {100 * idle:.0f} % vs (p−1)/(m+p−1) = {100 * theory:.0f} %"
        arith = [
            f"bubble share = (p−1)/(m+p−1) = {P - 1}/{m + P - 1} = {theory:.2f}",
            f"useful work per stage ≈ {busy:.1f} ms; with m = {m2} microbatches the bubble "
            f"is (p−1)/m = {(P - 1) / m2:.2f} of it",
            f"expected step ≈ {busy:.1f} × {1 + (P - 1) / m2:.2f} = {expected:.1f} ms",
        ]
        ev += [_step_span(M, M.ranks[-1], k_mid, COMPUTE, "last stage idles in the warm-up")]
        ev += [_step_span(M, r0, k_mid, COMPUTE, "first stage idles in the drain")]
    elif slug == "allocator-stalls":
        am = f["alloc_ms_per_step"]
        expected = step - am
        sig = (
            f"{f['alloc_calls_per_step']:.0f} device malloc/free calls per step in steady state, "
            f"{am:.1f} ms per step; the GPU is idle while they run."
        )
        value = f"{f['alloc_calls_per_step']:.0f} malloc/free per step, {am:.1f} ms"
        arith = [
            f"stall ≈ Σ malloc + free per step = {am:.1f} ms",
            f"expected step ≈ {step:.1f} − {am:.1f} = {expected:.1f} ms ({step / expected:.2f}×)",
        ]
        ev += _span(
            M,
            r0,
            MAIN,
            M.mask(names=lambda n: n.endswith(("Malloc", "Free"))) & (M.c["cat"] == C_RT),
            "device allocation in steady state",
            3,
        )
    elif slug == "bandwidth-bound-collective":
        comm, exp = f["comm_ms"], f["exposed_comm_ms"]
        hidden = comm - exp
        new_exp = max(0.0, comm / 2 - hidden)
        expected = step - exp + new_exp
        sig = (
            f"All-reduce busbw {f['busbw_gbps']:.0f} GB/s on every rank "
            f"({f['busbw_min_rank_gbps']:.0f}–{f['busbw_max_rank_gbps']:.0f} GB/s), "
            f"{100 * f['busbw_gbps'] / hw.scaleup_gbps:.0f} % of {hw.scaleup_link}'s "
            f"{hw.scaleup_gbps:.0f} GB/s; collectives start together and last the same on all "
            f"ranks; {comm:.1f} ms of comm per step outlasts backward, {exp:.1f} ms exposed."
        )
        value = (
            f"busbw {f['busbw_gbps']:.0f} GB/s ≈ "
            f"{100 * f['busbw_gbps'] / hw.scaleup_gbps:.0f} % of "
            f"{hw.scaleup_gbps:.0f} GB/s link on every rank"
        )
        arith = [
            f"bytes per step {f['coll_bytes_per_step'] / 1e9:.2f} GB; t = S·2(n−1)/n ÷ busbw "
            f"≈ {comm:.1f} ms",
            f"halving the bytes (bf16 grads) → {comm / 2:.1f} ms comm, {hidden:.1f} ms of it "
            f"hidden under backward → exposed {new_exp:.1f} ms",
            f"expected step ≈ {step:.1f} − {exp:.1f} + {new_exp:.1f} = {expected:.1f} ms",
        ]
        ev += _span(M, r0, NCCL, M.mask(tid=NCCL), "all-reduce at link speed", 2)
    elif slug == "recompilation":
        steady = f["steady_step_ms"]
        expected = steady
        cs = f["compile_steps"]
        sig = (
            f"Only steps {', '.join(map(str, cs))} stall — "
            f"{f['compile_step_ms'] / 1000:.1f} s each "
            f"inside the compiler as a new sequence length arrives; the other steps take "
            f"{steady:.1f} ms."
        )
        value = (
            f"{len(cs)} of {M.n_steps} steps take {f['compile_step_ms']:.0f} ms "
            f"vs {steady:.1f} ms, "
            "each on a new input shape"
        )
        arith = [
            f"lost time = compiles × compile time = {len(cs)} × "
            f"{f['compile_ms_total'] / max(len(cs), 1) / 1000:.1f} s",
            f"mean step {step:.1f} ms → steady {steady:.1f} ms once shapes are padded to a "
            "few buckets (compiled up front)",
        ]
        if cs:
            ev += [_step_span(M, r0, cs[0], MAIN, "step with a new shape: compile")]
        ev += _span(M, r0, MAIN, M.mask(names=lambda n: n.startswith("_compile")), "compiling", 1)
    else:  # healthy
        expected = step
        sig = (
            f"GPU idle {100 * f['gpu_idle_frac']:.0f} % of a {step:.1f} ms step, communication "
            f"{f['overlap_pct']:.0f} % overlapped, ranks within {f['compute_skew_pct']:.1f} %; "
            "no stalls — nothing to fix."
        )
        value = f"GPU idle {100 * f['gpu_idle_frac']:.0f} %, overlap {f['overlap_pct']:.0f} %"
        arith = [f"no avoidable time found: expected step = current step = {step:.1f} ms"]
        ev += [_step_span(M, r0, k_mid, COMPUTE, "dense compute stream")]
    return {
        "scenario": slug,
        "title": sc.title,
        "twin": sc.twin,
        "signature": sig,
        "measurement": meas,
        "measurements_accepted": meas_ok,
        "measurement_label": MEASUREMENTS[meas],
        "measurement_value": value,
        "measurement_text": _HOW[meas],
        "fix": fix,
        "fixes_accepted": fix_ok,
        "fix_text": _FIX_TEXT[fix],
        "step_ms": round(step, 3),
        "expected_step_ms": round(float(expected), 3),
        "arithmetic": arith,
        "facts": dict(f.items()),
        "evidence": ev,
        "mentalmath_family": family,
    }


_HOW = {
    "comm_overlap": "HTA get_comm_comp_overlap() per rank, or nsys nccl_gpu_overlap_trace: "
    "the share "
    "of NCCL time that runs while compute kernels run.",
    "loader_wait": "Sum the DataLoader __next__ annotation per step (profiler key_averages) and "
    "compare with the step; HTA idle breakdown shows it as host wait.",
    "launch_vs_kernel": "HTA get_cuda_kernel_launch_stats(): CPU launch duration against "
    "GPU kernel "
    "duration per correlation; queue length stays near zero.",
    "rank_skew": "Compare per-rank compute time and collective start times (HTA "
    "get_potential_stragglers, kernel breakdown per rank).",
    "hot_kernel_bw": "Kernel breakdown to find the hot family, then bytes moved ÷ time against HBM "
    "peak (ncu: dram throughput high, SM throughput low).",
    "sync_api_time": "nsys analyze cuda_api_sync / cuda_api_sum: count and time of "
    "cudaStreamSynchronize per step; set_sync_debug_mode('warn') finds the line.",
    "stage_idle": "Per-stage temporal breakdown: idle share per rank against (p−1)/(m+p−1).",
    "alloc_api_time": "nsys cuda_api_sum or the trace: cudaMalloc/cudaFree count and time per "
    "steady-state step; memory_stats()['num_alloc_retries'].",
    "busbw_vs_link": "bytes = In msg nelems × dtype size; busbw = bytes ÷ time × 2(n−1)/n; compare "
    "with the link's achievable bandwidth on every rank.",
    "step_series_shapes": "Plot step time per step against the input shape; TORCH_LOGS=recompiles "
    "names the guard that failed.",
    "gpu_idle_breakdown": "HTA temporal and idle-time breakdown per rank.",
    "kernel_top_list": "HTA get_gpu_kernel_breakdown / nsys cuda_gpu_kern_sum.",
    "mfu": "Model FLOPs per step ÷ step time ÷ peak.",
    "none": "Idle share and overlap already show a busy GPU; no further measurement is needed.",
}
_FIX_TEXT = dict(FIXES.items())
