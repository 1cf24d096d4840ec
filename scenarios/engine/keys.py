"""The answer key: signature, confirming measurement (with this trace's value), fix, expected step
time after the fix and the arithmetic — all from facts measured on the events."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import numpy as np

from . import diagnosis
from .catalog import ANSWERS, MEASUREMENTS, SCENARIOS
from .hardware import Hardware
from .measure import Measured, row_name
from .model import C_KERN, C_RT, COMPUTE, MAIN, NCCL


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


def _per_step_spans(
    M: Measured, ranks: list[int], tid: int, mask, label: str, unit_ms: bool = True
) -> list[dict]:
    """The longest event of ``mask`` in every step of every rank in ``ranks``: one evidence item
    per (rank, step), each labelled with its own duration, so the reveal marks every instance
    (every step's wait on every rank) and the short labels fit the viewer's label lanes."""
    out: list[dict] = []
    c = M.c
    for r in ranks:
        m = mask & (c["rank"] == r)
        idx = np.flatnonzero(m)
        if not len(idx):
            continue
        s, e = M.steps[r]
        starts = M.ts[idx]
        step = np.searchsorted(s, starts, "right") - 1  # the step each event starts in
        inside = (step >= 0) & (starts < e[np.clip(step, 0, len(e) - 1)])
        idx, step = idx[inside], step[inside]
        for k in np.unique(step).tolist():
            cand = idx[step == k]
            i = int(cand[np.argmax(M.dur[cand])])
            out.append(
                {
                    "rank": int(r),
                    "row": row_name(r, tid),
                    "start_us": _r(M.ts[i], 3),
                    "end_us": _r(M.end[i], 3),
                    "label": f"{label} {M.dur[i] / 1000:.1f} ms" if unit_ms else label,
                }
            )
    return out


def _half_up(x: float, digits: int) -> str:
    """``x`` to ``digits`` decimals, halves rounded up as a reader does (5/8 = 0.625 → "0.63"),
    not to even as Python's formatting does ("0.62")."""
    q = Decimal(1).scaleb(-digits)
    return str(Decimal(repr(float(x))).quantize(q, rounding=ROUND_HALF_UP))


def _bubble_share(stages: int, units: int) -> float:
    """The share of a 1F1B step its warm-up and drain idle: (p−1)/(u+p−1), u the forward blocks
    a stage runs per step (the microbatches, times the model chunks when interleaved)."""
    return (stages - 1) / (units + stages - 1)


def _steady(M: Measured, mask: np.ndarray, trim: int) -> np.ndarray:
    """The events of ``mask`` that are neither among the first nor the last ``trim`` of their
    rank's step: a pipeline's steady state, where every stage waits only for its neighbours (the
    fill and the drain wait for the whole pipeline on every stage)."""
    out = np.zeros(len(mask), bool)
    for r in M.ranks:
        idx = np.flatnonzero(mask & (M.c["rank"] == r))
        idx = idx[np.argsort(M.ts[idx], kind="stable")]
        s, e = M.steps[r]
        k = np.searchsorted(s, M.ts[idx], "right") - 1
        k[(k >= 0) & (M.ts[idx] >= e[np.maximum(k, 0)])] = -1  # between two steps
        for kk in np.unique(k[k >= 0]).tolist():
            ii = idx[k == kk]
            out[ii[trim : len(ii) - trim]] = True
    return out


class _Fmt:
    """One rounding per key: every number is printed, and then used, at the precision the
    reader sees (0.01 ms for sub-10 ms steps, else 0.1 ms), so each line's arithmetic adds up."""

    def __init__(self, step_ms: float):
        self.d = 2 if step_ms < 10 else 1

    def q(self, x: float, d: int | None = None) -> float:
        return round(float(x), self.d if d is None else d) + 0.0  # + 0.0: never "-0"

    def s(self, x: float, d: int | None = None) -> str:
        d = self.d if d is None else d
        return f"{self.q(x, d):.{d}f}"


def _pct(x: float) -> str:
    """A percentage, clamped at zero (no "-0 %")."""
    return f"{max(0.0, round(float(x))) + 0.0:.0f}"


def _moving(F: _Fmt, kernels_ms: float, transfer_ms: float) -> str:
    """What part of a step's collective kernel time moves bytes: the kernels also wait inside
    for the rank that starts them last, so the key's two figures differ by that wait."""
    if F.q(kernels_ms) <= F.q(transfer_ms):
        return "all of it moving bytes"
    return f"{F.s(transfer_ms)} ms of it moving bytes, the rest waiting inside the kernels"


def _range(a: float, b: float) -> str:
    a_, b_ = f"{a:.0f}", f"{b:.0f}"
    return a_ if a_ == b_ else f"{a_}–{b_}"


def _x(step: float, expected: float) -> str:
    return f"{step / expected:.2f}×" if expected > 0 else "∞"


def _pp_fixed_ms(M: Measured, short_us: float = 10.0) -> float:
    """A pipeline stage's per-step GPU time that does not scale with the microbatch size: the
    kernels shorter than `short_us` and the launch gaps between back-to-back kernels (each
    kernel's count times the median gap), mean over stages and steps (ms)."""
    c = M.c
    comp = (c["tid"] == COMPUTE) & (c["cat"] == C_KERN)  # in (rank, time) order per stream
    ts, du, rk = M.ts[comp], M.dur[comp], c["rank"][comp]
    if len(ts) < 2:
        return 0.0
    gaps = ts[1:] - (ts[:-1] + du[:-1])
    g = gaps[(rk[1:] == rk[:-1]) & (gaps > 0) & (gaps < short_us)]
    gap = float(np.median(g)) if len(g) else 0.0
    per = len(M.ranks) * max(M.n_steps, 1)
    return (float(du[du < short_us].sum()) + len(du) * gap) / per / 1000


def _bucket_text(p: dict) -> str:
    """A DDP job's gradient buckets as its all-reduces carry them (`In msg nelems`): how many,
    and their sizes in MiB (whole layers each, far over DDP's 25 MiB default cap)."""
    gsize = 4 if p["grad_dtype"] == "Float" else 2
    layer_mib = p["params"] / p["layers"] * gsize / 2**20  # the workload's own parameter count
    plan = p.get("bucket_plan") or [1]
    lo, hi = round(min(plan) * layer_mib), round(max(plan) * layer_mib)
    return f"{len(plan)} buckets of " + (f"{lo}" if lo == hi else f"{lo}-{hi}") + " MiB"


def build_key(slug: str, M: Measured, f: dict, hw: Hardware, p: dict) -> dict:
    meas, meas_ok, fix, fix_ok, family = ANSWERS[slug]
    sc = SCENARIOS[slug]
    F = _Fmt(f["step_ms"])
    q, s = F.q, F.s
    step = q(f["step_ms"])
    ev: list[dict] = []
    k_mid = min(2, M.n_steps - 1)
    r0 = M.ranks[0]
    sync_api = "hipStreamSynchronize" if hw.vendor == "amd" else "cudaStreamSynchronize"
    how = _HOW[meas]
    pp = "stages" in p  # a pipeline-parallel job (no all-reduce; stages, sends and receives)
    if slug == "exposed-allreduce":
        comm, ov = q(f["comm_ms"]), max(0.0, round(f["overlap_pct"])) / 100
        exp = q(comm * (1 - ov))
        nb = max(1, round(f["colls_per_step"]))
        xfer = q(f["coll_transfer_ms_per_step"])
        last = q(f["coll_transfer_last_ms"])
        comp = q(f["compute_ms"])
        bwd = q(comp * 2 / 3)  # from the printed compute
        expected = q(step - xfer + last)
        sig = (
            f"Every rank runs its {nb} gradient all-reduces back to back after backward: "
            f"{s(comm)} ms of NCCL per step with "
            + (f"only {_pct(100 * ov)} %" if _pct(100 * ov) != "0" else "none of it")
            + " under compute, so "
            f"{s(exp)} ms of each {s(step)} ms step is exposed; ranks are symmetric."
        )
        value = f"overlap {_pct(100 * ov)} % of {s(comm)} ms comm per step"
        arith = [
            f"exposed comm = comm × (1 − overlap) = {s(comm)} × (1 − {ov:.2f}) = {s(exp)} ms",
            f"after the slowest rank's backward the {nb} all-reduces move their bytes back to "
            f"back: transfer = Σ each collective's shortest kernel across ranks = {s(xfer)} ms",
            f"backward ≈ ⅔ of {s(comp)} ms compute = {s(bwd)} ms, enough to hide all "
            f"but the last bucket, whose {s(last)} ms stays after backward",
            f"expected step ≈ {s(step)} − {s(xfer)} + {s(last)} = {s(expected)} ms "
            f"({_x(step, expected)})",
        ]
        fix_text = (
            "Drop the manual all-reduce after backward and let DDP's bucket hooks launch each "
            f"bucket during backward (its {_bucket_text(p)}, a raised bucket_cap_mb, "
            "gradient_as_bucket_view=True): "
            f"{s(q(xfer - last))} of {s(xfer)} ms of transfer hides under backward, step "
            f"{s(step)} → {s(expected)} ms."
        )
        ev += _span(M, r0, NCCL, M.mask(tid=NCCL), "all-reduce after backward", 3)
    elif slug == "input-starvation":
        wait = q(f["loader_ms_per_step"])
        wait_c = q(f.get("loader_ms_crit", wait))
        rest = q(step - wait_c)
        # data parallel: the rank that waits longest is not always the slowest GPU; once the
        # batches arrive on time every rank starts together and each step waits for its slowest
        # GPU (a pipeline's stages are not interchangeable: there the rest is the compute)
        late_c = q(f.get("loader_crit_rank_compute_ms", 0.0))
        slow_c = q(f.get("slowest_rank_compute_ms", 0.0))
        skew = "stages" not in p and p["world"] > 1 and slow_c > late_c > 0
        compute = q(rest + slow_c - late_c) if skew else rest
        fetch = q(f["loader_fetch_ms"])
        w = max(1, int(f["loader_worker_rows"]))
        per = q(fetch / w)
        k = 8
        fetch_k = q(fetch / k)
        expected = max(compute, fetch_k)
        sig = (
            f"Every step on every rank opens with {s(wait)} ms on average inside the DataLoader "
            f"__next__ (min {s(f['loader_ms_min'])}, max {s(f['loader_ms_max'])} ms over all "
            f"ranks and steps) while the GPU idles: {_pct(100 * wait / step)} % of each "
            f"{s(step)} ms step; "
            + (f"{w} loader workers each need" if w > 1 else "a single loader worker needs")
            + f" {s(fetch)} ms per batch."
        )
        value = f"{s(wait)} ms of {s(step)} ms per step waiting in DataLoader __next__"
        # a pipeline's rest of the step is its schedule: the stages compute part of it and wait
        # in the warm-up, the drain and their sends and receives the rest
        what, under = (
            ("schedule", "the {} ms schedule") if pp else ("compute", "the {} ms of compute")
        )
        if pp:
            comp_pp = q(f["compute_ms"])
            arith = [
                f"step = data wait on the stage that waits longest + the rest of the step = "
                f"{s(wait_c)} + {s(rest)} = {s(step)} ms; the rest is the pipeline schedule, of "
                f"which each stage's GPU computes {s(comp_pp)} ms on average and waits "
                f"{s(q(rest - comp_pp))} ms in the warm-up, the drain and its sends and receives",
            ]
        else:
            arith = [
                f"step = data wait on the rank that waits longest + "
                f"{'the rest of its step' if skew else 'compute'} = {s(wait_c)} + "
                f"{s(rest)} = {s(step)} ms",
            ]
        if skew:
            arith.append(
                f"that rank's GPU computes {s(late_c)} ms per step; fed on time, all ranks start "
                f"together and each step waits for its slowest GPU, {s(slow_c)} ms: compute = "
                f"{s(rest)} + {s(slow_c)} − {s(late_c)} = {s(compute)} ms"
            )
        arith += [
            f"loading keeps up at {s(fetch)} ms per batch ÷ {w} worker{'s' if w > 1 else ''} = "
            f"{s(per)} ms per step, slower than " + under.format(s(compute)),
            f"with {k} workers prefetching: step ≈ max({what}, load ÷ {k}) = max({s(compute)}, "
            f"{s(fetch_k)}) = {s(expected)} ms ({_x(step, expected)})",
        ]
        fix_text = (
            f"DataLoader(num_workers={w} → {k}, prefetch_factor=2, persistent_workers=True, "
            f"pin_memory=True): {s(fetch)} ms per batch ÷ {k} = {s(fetch_k)} ms, hidden under "
            + under.format(s(compute))
            + f"; step {s(step)} → {s(expected)} ms."
        )
        ev += _per_step_spans(
            M,
            M.ranks,
            MAIN,
            M.mask(names=lambda n: n.startswith("enumerate(DataLoader)")),
            "batch wait",
        )
    elif slug == "launch-bound":
        gpu = q(f["gpu_per_step_ms"])
        n_k = round(f["kernels_per_step"])
        per_k = q(n_k * 0.0015, 2)
        expected = q(gpu + per_k + 0.03)
        sig = (
            f"{n_k} kernels per step, median {f['kernel_us_median']:.1f} µs on the GPU, "
            f"each launched in {f['launch_us_mean']:.1f} µs plus framework overhead; "
            f"{_pct(100 * f['short_kernel_frac'])} % of kernels run shorter than their launch "
            f"and the GPU idles {_pct(100 * f['gpu_idle_frac'])} % of the step."
        )
        value = (
            f"{_pct(100 * f['short_kernel_frac'])} % of kernels shorter than their launch; GPU "
            f"busy {s(gpu)} of {s(step)} ms"
        )
        arith = [
            f"GPU work per step = {n_k} kernels, {s(gpu)} ms; the CPU launch path stretches "
            f"the step to {s(step)} ms, so the GPU is busy {_pct(100 * gpu / step)} %",
            f"graph replay ≈ GPU time + {n_k} × 1.5 µs + one graph launch = {s(gpu)} + "
            f"{per_k:.2f} + 0.03 = {s(expected)} ms ({_x(step, expected)})",
        ]
        g = "hipGraphLaunch" if hw.vendor == "amd" else "cudaGraphLaunch"
        fix_text = (
            "Capture the decode step in a CUDA graph (torch.compile(mode='reduce-overhead') or "
            f"torch.cuda.CUDAGraph with static buffers): {n_k} launches of "
            f"~{f['launch_us_mean']:.0f} µs become one {g}, step {s(step)} → {s(expected)} ms."
        )
        if hw.vendor == "amd":
            how = (
                "Count hipLaunchKernel time against kernel time per step in the trace (or rocprof "
                "--hip-trace); HTA 0.5's launch stats pair only cudaLaunchKernel, so use the "
                "trace itself on ROCm. Queue depth stays near zero."
            )
        ev += [_step_span(M, r0, k_mid, COMPUTE, "tiny kernels with gaps between them")]
    elif slug == "straggler":
        rc = f["rank_compute_ms"]
        slow = f["slowest_rank"]
        mx, med = q(max(rc)), q(float(np.median(rc)))
        nxt = q(f.get("slowest_other_rank_ms", med))
        extra = q(mx - nxt)
        expected = q(step - extra)
        # a pipeline has no all-reduce: its stages wait for the slow one in sends and receives
        who, where = (
            ("stages", "in their sends and receives") if pp else ("ranks", "inside the all-reduce")
        )
        sig = (
            f"Rank {slow} computes {s(mx)} ms per step against a median of {s(med)} ms "
            f"(+{_pct(100 * (mx - med) / med)} %); its NCCL kernels "
            + ("are the " if pp else "start last and are the ")
            + f"shortest ({s(f['rank_nccl_ms'][slow])} ms/step vs up to "
            f"{s(max(f['rank_nccl_ms']))} ms on the {who} waiting for it)."
        )
        value = f"rank {slow} compute +{_pct(100 * (mx - med) / med)} % over the median rank"
        arith = [
            f"synchronous step = slowest rank of each step: rank {slow} computes {s(mx)} ms per "
            f"step; without it each step waits for the slowest of the other ranks in that step, "
            f"{s(nxt)} ms on average (median rank {s(med)} ms)",
            f"waiting saved = {s(mx)} − {s(nxt)} = {s(extra)} ms per step",
            f"expected step ≈ {s(step)} − {s(extra)} = {s(expected)} ms ({_x(step, expected)})",
        ]
        fix_text = (
            f"Cordon rank {slow}'s node (check clocks and thermals, ECC/Xid errors) and rerun on "
            f"a healthy GPU: the other {len(rc) - 1} {who} stop waiting {s(extra)} ms per step "
            f"{where}, step {s(step)} → {s(expected)} ms."
        )
        ev += [_step_span(M, slow, k_mid, COMPUTE, "slow rank's compute")]
        waiting = [r for r in M.ranks if r != slow]
        nccl = M.mask(tid=NCCL)
        if pp:  # a pipeline: the receives of the steady state, not the fill's
            # (an interleaved schedule's warm-up and drain run every chunk: v times longer)
            nccl = nccl & _steady(M, nccl, 2 * p["stages"] * int(p.get("chunks", 1)))
        ev += _per_step_spans(M, waiting, NCCL, nccl, "waits")
    elif slug == "memory-bound-kernel":
        tbps = round(f["score_chain_tbps"], 2)
        gb = round(f["score_chain_ms_per_step"] * f["score_chain_tbps"], 1)  # ms × TB/s = GB
        fam = q(gb / tbps)
        comp = q(f["compute_ms"])
        exp_c = q(f.get("exposed_comm_ms", 0.0))
        last = q(min(exp_c, f.get("coll_transfer_last_ms", 0.0)))
        share = (comp - fam) / comp if comp > 0 else 1.0
        drift = q((exp_c - last) * (1 - share))
        expected = q(step - fam - drift)
        # a job with interleaved layers runs eager only in its local (windowed) ones
        eager = list(p.get("eager_layers") or [])
        n_eager = sum(bool(e) for e in eager)
        local = 0 < n_eager < len(eager)
        where = f" in {n_eager} of its {len(eager)} layers" if local else ""
        sig = (
            f"Unfused elementwise kernels over the attention score matrix{where} take "
            f"{_pct(100 * f['score_chain_share'])} % of the compute stream's kernel time "
            f"({s(fam)} ms per step) and run at {tbps:.2f} TB/s, "
            f"{_pct(100 * tbps / hw.hbm_tbps)} % of HBM peak."
        )
        value = (
            f"{_pct(100 * f['score_chain_share'])} % of compute-kernel time at {tbps:.2f} TB/s of "
            f"{hw.hbm_tbps} TB/s"
        )
        arith = [
            f"score-matrix passes move {gb:.1f} GB per step ÷ {tbps:.2f} TB/s = {s(fam)} ms",
            f"a fused attention keeps the scores on chip, those passes disappear: compute = "
            f"{s(comp)} − {s(fam)} = {s(q(comp - fam))} ms",
        ]
        if p["world"] > 1 and drift > 0:
            arith.append(
                f"ranks drift apart in proportion to their compute, so the wait in the last "
                f"all-reduce beyond its {s(last)} ms transfer shrinks with it: "
                f"({s(exp_c)} − {s(last)}) × {s(fam)} ÷ {s(comp)} = {s(drift)} ms"
            )
        arith.append(
            f"expected step ≈ {s(step)} − {s(fam)}"
            + (f" − {s(drift)}" if p["world"] > 1 and drift > 0 else "")
            + f" = {s(expected)} ms ({_x(step, expected)})"
        )
        fix_text = (
            (
                "Give the sliding-window layers' band mask to a fused kernel that takes a window "
                "(flash-attn window_size, or FlexAttention) instead of materialising the scores "
                "through matmul → scale → mask → softmax → dropout → matmul: the "
                if local
                else "Replace the explicit matmul → scale → mask → softmax → dropout → matmul "
                "chain with F.scaled_dot_product_attention (flash kernel) or torch.compile it: "
                "the "
            )
            + f"{gb:.1f} GB per step of score-matrix traffic stays on chip, step {s(step)} → "
            f"{s(expected)} ms."
        )
        ev += [_step_span(M, r0, k_mid, COMPUTE, "score-matrix elementwise chain")]
    elif slug == "sync-stalls":
        n_in = round(f["inner_syncs_per_step"])
        per = round(f["sync_refill_ms_per_step"] / max(n_in, 1), 2)
        refill = q(n_in * per)
        # a pipeline stage idles between its read-backs in the schedule's own waits too: there
        # only the refill gaps count
        crit = f.get("sync_refill_gap_ms_crit" if pp else "sync_refill_ms_crit", refill)
        refill_c = q(max(refill, crit))
        expected = q(step - refill_c)
        sig = (
            f"{f['syncs_per_step']:.0f} {sync_api} calls per step "
            f"({s(f['sync_ms_per_step'])} ms blocked); after each of the {n_in} in-step "
            f"read-backs the GPU sits idle while the CPU relaunches — {s(refill)} ms per step."
        )
        value = (
            f"{f['syncs_per_step']:.0f} {sync_api} per step, {s(refill)} ms GPU refill gap per step"
        )
        # two bases: the gap right after each read-back (the product), and, off a pipeline,
        # every GPU gap from the step's first read-back to one layer past its last (the queue
        # refills slowly behind each one), on the rank that loses most: the step's loss
        cost = f"cost = in-step syncs × refill gap = {n_in} × {per:.2f} ms = {s(refill)} ms "
        every = "every GPU gap from the step's first read-back to one layer past its last"
        if int(f["world"]) == 1:
            loss = f"{s(refill_c)} ms per step"
            cost += "per step, the gaps right after each read-back; " + (
                f"counting {every} (the queue refills slowly behind each), the GPU idles "
                f"{s(refill_c)} ms per step, and one GPU has no rank to wait for: the step "
                "loses all of it"
                if refill_c > refill
                else "one GPU has no rank to wait for: the step loses all of it"
            )
        elif pp:
            loss = f"{s(refill_c)} ms per step on the stage that loses most"
            cost += (
                f"per stage on average; {s(refill_c)} ms on the stage that loses most (the step "
                "waits for it)"
            )
        else:
            loss = f"{s(refill_c)} ms per step on the rank that loses most"
            cost += (
                "per rank on average, the gaps right after each read-back; counting "
                f"{every}, {s(refill_c)} ms on the rank that loses most (the step waits for it)"
            )
        arith = [
            cost,
            f"expected step ≈ {s(step)} − {s(refill_c)} = {s(expected)} ms ({_x(step, expected)})",
        ]
        fix_text = (
            f"Remove the {n_in} per-layer .nonzero() read-backs (keep routing on the GPU with a "
            "static-shape mask) and log the loss every N steps: the CPU runs ahead again and "
            f"the GPU idle they open goes ({loss}), step {s(step)} → {s(expected)} ms."
        )
        ev += _span(
            M,
            r0,
            MAIN,
            M.mask(names=lambda n: n.endswith("StreamSynchronize")),
            "host blocked until the GPU drains",
            3,
        )
    elif slug == "pipeline-bubbles" or (slug == "healthy" and pp):
        P, m, v = p["stages"], p["micro"], int(p.get("chunks", 1))
        # an interleaved schedule runs v model chunks per stage: the bubble is (p−1)/(v·m+p−1)
        vm, vtxt = v * m, (f"{v}·" if v > 1 else "")
        den = f"({vtxt}m)" if v > 1 else "m"  # (2·m+p−1)/(2·m), never "/2·m"
        mtxt = f"{m} microbatches × {v} model chunks" if v > 1 else f"{m} microbatches"
        theory = _bubble_share(P, vm)
        th2, th_pct = _half_up(theory, 2), _half_up(100 * theory, 0)  # as printed
        idle = round(float(np.mean(f["compute_idle_frac_per_rank"])), 2)
        busy = q(step * (1 - idle))
        if slug == "healthy":
            expected = step
            i_pct, t_pct = _pct(100 * idle), th_pct
            # the formula counts the warm-up and drain only: say how the measured idle compares
            if i_pct == t_pct:
                vs, why = "matches", ""
            elif abs(idle - theory) < 0.015:  # within rounding of the two-digit share
                vs, why = "close to", ""
            else:
                pts = abs(int(i_pct) - int(t_pct))
                vs = f"{pts} point{'s' if pts > 1 else ''} " + (
                    "above" if int(i_pct) > int(t_pct) else "below"
                )
                # the formula's schedule: the work plus its warm-up and drain; the rest of
                # the step is where the extra idle lies
                rest = q(max(0.0, step - busy * (vm + P - 1) / vm))
                why = (
                    f"; the formula counts the warm-up and drain only, and {s(rest)} ms of "
                    "each step lies outside that ideal schedule (batch input, optimizer, loss "
                    "read-back, waits between stages)"
                    if int(i_pct) > int(t_pct)
                    else ""
                )
            formula = f"(p−1)/({vtxt}m+p−1) = {t_pct} %"
            sig = (
                f"{P} stages, {mtxt}: a thin warm-up and drain, every stage idle "
                f"{i_pct} % of a {s(step)} ms step, {vs} the bubble's {formula}{why}; no "
                "stalls — nothing worth fixing."
            )
            value = f"stage idle {i_pct} %, {vs} {formula}"
            arith = [
                f"bubble share = (p−1)/({vtxt}m+p−1) = {P - 1}/{vm + P - 1} = {th2}; "
                f"measured idle {idle:.2f}",
                f"no avoidable time found: expected step = current step = {s(step)} ms",
            ]
            fix_text = (
                f"Nothing to change: with {vtxt}m = {vm} ≫ p = {P} the warm-up and drain take "
                f"only {t_pct} % of the step in theory ({i_pct} % idle measured)."
            )
        else:
            m2 = 2 * m
            new2 = _half_up(_bubble_share(P, v * m2), 2)
            sched = q(busy * (vm + P - 1) / vm)
            other = q(max(0.0, step - sched))
            # half-size microbatches halve the big kernels, not the small ones or the launch
            # gaps between kernels: twice the microbatches pay those twice
            fixed = q(_pp_fixed_ms(M))
            new_sched = q((busy + fixed) * (v * m2 + P - 1) / (v * m2))
            expected = q(new_sched + other)
            mb2 = p["mb_tokens"] // 2
            sig = (
                f"{P} stages, {mtxt}: warm-up and drain leave every stage idle "
                f"{_pct(100 * idle)} % of the step (theory (p−1)/({vtxt}m+p−1) = "
                f"{th_pct} %), in a staircase that repeats every step."
            )
            value = f"stage idle {_pct(100 * idle)} % vs (p−1)/({vtxt}m+p−1) = {th_pct} %"
            arith = [
                f"bubble share = (p−1)/({vtxt}m+p−1) = {P - 1}/{vm + P - 1} = {th2}; "
                f"measured {idle:.2f}",
                f"useful work per stage = step × (1 − idle) = {s(step)} × {1 - idle:.2f} = "
                f"{s(busy)} ms; the schedule takes work × ({vtxt}m+p−1)/{den} = {s(sched)} ms, "
                + (
                    f"the rest of the step (batch, optimizer, loss) {s(other)} ms"
                    if sched <= step
                    # measured idle under the formula's: the schedule is the whole step
                    else f"a little over the {s(step)} ms step (the measured idle is under "
                    "the formula's), so no time lies outside the schedule"
                ),
                f"small kernels and launch gaps per step {s(fixed)} ms do not shrink with the "
                f"microbatch: work at m = {m2} ≈ {s(busy)} + {s(fixed)} ms",
                f"m = {m2} microbatches of {mb2} tokens (same global batch): step "
                f"≈ ({s(busy)} + {s(fixed)}) × {v * m2 + P - 1}/{v * m2} + {s(other)} = "
                f"{s(expected)} ms ({_x(step, expected)})",
            ]
            more = "" if v > 1 else " or interleave 2 model chunks per stage"
            fix_text = (
                f"Split each microbatch in two (m {m} → {m2}, {mb2} tokens each, "
                f"same global batch){more}: the bubble falls "
                f"from {th2} to {new2} of the step, "
                f"{s(step)} → {s(expected)} ms."
            )
        ev += [_step_span(M, M.ranks[-1], k_mid, COMPUTE, "last stage idles in the warm-up")]
        ev += [_step_span(M, r0, k_mid, COMPUTE, "first stage idles in the drain")]
    elif slug == "allocator-stalls":
        mal, fre = q(f["malloc_ms_per_step"]), q(f["free_ms_per_step"])
        am = q(mal + fre)
        idle = q(f.get("alloc_idle_ms_per_step", am))
        # what the step loses: the stall on its critical path, measured on the events (the
        # GPU idle the calls open, rank by rank, and where the ranks wait for each other); a
        # data-parallel step loses two printed terms, and the loss is their printed sum
        sooner, after = q(f.get("alloc_meet_sooner_ms", 0.0)), q(f.get("alloc_post_meet_ms", 0.0))
        if "alloc_meet_sooner_ms" in f:
            am_c = q(sooner + after)
        else:
            am_c = q(f["alloc_stall_crit_ms"]) if "alloc_stall_crit_ms" in f else am
        nm, nf = round(f["malloc_calls_per_step"]), round(f["free_calls_per_step"])
        expected = q(step - am_c)
        api = "hip" if hw.vendor == "amd" else "cuda"
        sig = (
            f"{nm} {api}Malloc and {nf} {api}Free calls per step in steady state, {s(am)} ms per "
            f"step ({_pct(100 * am / step)} %); the GPU is idle while they run."
        )
        value = f"{nm + nf} {api}Malloc/{api}Free per step, {s(am)} ms"
        if int(f["world"]) == 1:
            crit = f"one GPU, no rank to wait for: the step loses all of it = {s(am_c)} ms per step"
        else:
            lo, hi = f.get("alloc_idle_ms_range", (idle, idle))
            uneven = f"the {'stages' if p.get('family') == 'pp' else 'ranks'} stall unevenly, "
            uneven += f"{s(lo)}–{s(hi)} ms in a step; "
            if p.get("family") == "pp":
                crit = uneven + (
                    "the step ends when its slowest stage does: loss = each step's longest "
                    f"stage stall, averaged over the steps = {s(am_c)} ms per step"
                )
            else:
                crit = uneven + (
                    "the ranks meet every step in the gradient all-reduce, which waits for the "
                    "last one out of backward; without the stalls since the last meeting it "
                    "waits for the last one then: meeting sooner by max(arrival) − "
                    f"max(arrival − stall) = {s(sooner)} ms; each rank's step also ends "
                    "sooner by its own stalls after the meeting, less the last step's (already "
                    "counted in its meeting): max(window) − max(window − after + last step's "
                    f"after) = {s(after)} ms; the step loses {s(sooner)} "
                    f"{'+' if after >= 0 else '−'} {s(abs(after))} = {s(am_c)} ms per step"
                )
        arith = [
            f"stall = Σ malloc + Σ free per step = {s(mal)} + {s(fre)} = {s(am)} ms; the GPU "
            f"sits idle through them, {s(idle)} ms per step"
            + (" per rank" if int(f["world"]) > 1 else ""),
            crit,
            f"expected step ≈ {s(step)} − {s(am_c)} = {s(expected)} ms ({_x(step, expected)})",
        ]
        fix_text = (
            "Remove the per-step torch.cuda.empty_cache() and set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so the caching allocator reuses "
            f"its blocks: the {nm + nf} {api}Malloc/{api}Free calls ({s(am)} ms per step) stop "
            f"after warm-up, step {s(step)} → {s(expected)} ms."
        )
        ev += _span(
            M,
            r0,
            MAIN,
            M.mask(names=lambda n: n.endswith(("Malloc", "Free"))) & (M.c["cat"] == C_RT),
            "device allocation in steady state",
            3,
        )
    elif slug == "bandwidth-bound-collective":
        comm, exp = q(f["comm_ms"]), q(f["exposed_comm_ms"])
        n = int(f["world"])
        gb = round(f["coll_bytes_per_step"] / 1e9, 2)
        # one large collective, its shortest copy across ranks (the others include waiting)
        gb1 = round(f.get("coll_ref_bytes", f["coll_bytes_each"]) / 1e9, 3)
        t1 = round(f.get("coll_ref_ms", f["coll_ms_each"]), 2)
        fac = round(2 * (n - 1) / n, 2)  # as printed
        bw = round(gb1 * fac / t1 * 1000)
        xfer = q(f["coll_transfer_ms_per_step"])
        half = q(xfer / 2)
        last = q(f["coll_transfer_last_ms"] / 2)
        # the last bucket starts only when the slowest rank of the step ends backward
        c_avg = q(f["compute_ms"])
        c_max = q(max(f.get("slowest_rank_compute_ms", c_avg), c_avg))
        lag = q(c_max - c_avg)
        tail = q(last + lag)
        new_exp = q(max(tail, exp - half))
        expected = q(step - exp + new_exp)
        fp32 = "Float" in str(f.get("coll_dtypes", "")) or p.get("grad_dtype") == "Float"
        how_half = (
            "bf16 gradients halve the bytes"
            if fp32
            else "a compression hook that sends half the bytes"
        )
        pcie = hw.pcie_gbps
        sig = (
            f"All-reduce busbw {bw:.0f} GB/s on every rank "
            f"(per-rank medians {_range(f['busbw_min_rank_gbps'], f['busbw_max_rank_gbps'])} "
            f"GB/s): {_pct(100 * bw / pcie)} % of the {pcie:.0f} GB/s a GPU's PCIe link moves, "
            f"{_pct(100 * bw / hw.scaleup_gbps)} % of {hw.scaleup_link}'s rated "
            f"{hw.scaleup_gbps:.0f} GB/s: the ring runs through the hosts over PCIe, at that "
            "link's ceiling, alike on every rank; collectives start together and last the same "
            f"on all ranks; {s(comm)} ms of all-reduce kernels per step "
            f"({_moving(F, comm, xfer)}) outlasts backward, {s(exp)} ms exposed."
        )
        value = (
            f"busbw {bw:.0f} GB/s ≈ {_pct(100 * bw / pcie)} % of the {pcie:.0f} GB/s PCIe link "
            f"({_pct(100 * bw / hw.scaleup_gbps)} % of {hw.scaleup_link}) on every rank"
        )
        arith = [
            f"one large all-reduce, its shortest copy across ranks: busbw = S × 2(n−1)/n ÷ t = "
            f"{gb1:.3f} GB × {fac:.2f} ÷ {t1:.2f} ms "
            f"= {bw:.0f} GB/s, {_pct(100 * bw / pcie)} % of the {pcie:.0f} GB/s PCIe link "
            f"(a ring reaches about {100 * hw.achievable_bus_fraction:.0f} % of its link), "
            f"{_pct(100 * bw / hw.scaleup_gbps)} % of "
            f"{hw.scaleup_link}'s {hw.scaleup_gbps:.0f} GB/s",
            f"{round(f['colls_per_step'])} all-reduces per step move {gb:.2f} GB of gradients "
            f"in all: transfer per step = {s(xfer)} ms, queued back to back past the end of "
            "backward",
            f"the last bucket waits for the slowest rank of each step to finish backward: lag = "
            f"its GPU compute − the average rank's = {s(c_max)} − {s(c_avg)} = {s(lag)} ms",
            f"{how_half}: {s(xfer)} ÷ 2 = {s(half)} ms of transfer, the queue ends "
            f"{s(half)} ms sooner → exposed max(last bucket {s(last)} + {s(lag)}, {s(exp)} − "
            f"{s(half)}) = {s(new_exp)} ms",
            f"expected step ≈ {s(step)} − {s(exp)} + {s(new_exp)} = {s(expected)} ms "
            f"({_x(step, expected)})",
        ]
        fix_text = (
            (
                "Reduce gradients in bf16 instead of fp32 (DDP bf16_compress_hook, or bf16 grads)"
                if fp32
                else "Register a gradient compression hook that sends half the bytes"
            )
            + f": {gb:.2f} → {gb / 2:.2f} GB per step, transfer {s(xfer)} → {s(half)} ms, "
            f"exposed {s(exp)} → {s(new_exp)} ms, step {s(step)} → {s(expected)} ms. "
            f"A faster path does more where it can be had: NCCL_DEBUG=INFO names the transport "
            f"each ring uses, and a ring over {hw.scaleup_link} (peer-to-peer on, "
            f"NCCL_P2P_DISABLE unset) reaches about {hw.achievable_busbw_gbps:.0f} GB/s, "
            f"{hw.achievable_busbw_gbps / max(bw, 1):.0f}× this one."
        )
        ev += _span(M, r0, NCCL, M.mask(tid=NCCL), "all-reduce at the PCIe link's rate", 2)
    elif slug == "recompilation":
        steady = q(f["steady_step_ms"])
        cs = f["compile_steps"]
        nc, S = len(cs), M.n_steps
        cstep = q(f["compile_step_ms"])
        lost = q(f["compile_ms_total"])
        stall = q(lost / max(nc, 1))
        per = q(f.get("compile_ms_crit", lost / S))
        expected = q(step - per)
        # a decode server's new shape is a KV-cache length bucket; a training job's a sequence
        # length
        dec = p.get("family") == "decode_compile"
        shape = "KV-cache length" if dec else "sequence length"
        sig = (
            f"Only steps {', '.join(map(str, cs))} stall: they take {s(cstep)} ms each, most "
            f"of it inside the compiler as a new {shape} arrives; the other steps take "
            f"{s(steady)} ms."
        )
        value = f"{nc} of {S} steps take {s(cstep)} ms vs {s(steady)} ms, each on a new input shape"
        arith = [
            f"each new shape opens a compile span (_compile.compile_inner): {s(lost)} ms in all "
            f"÷ {nc} = {s(stall)} ms each",
            (
                f"one GPU, no rank to wait for: {s(q(per * S))} ms lost over {S} steps = "
                f"{s(per)} ms per step"
                if int(f["world"]) == 1
                else "ranks compile at slightly different speeds and the step waits for the "
                f"slowest: {s(q(per * S))} ms lost over {S} steps = {s(per)} ms per step"
            ),
            f"expected mean step ≈ {s(step)} − {s(per)} = {s(expected)} ms once "
            + (
                "the cache length stops being a new shape"
                if dec
                else "shapes are padded to a few buckets compiled up front"
            )
            + f" ({_x(step, expected)})",
        ]
        fix_text = (
            "Compile with the cache length dynamic (torch.compile(dynamic=True), or "
            "mark_dynamic on the KV cache's length dim), or allocate one max-length static "
            "cache so its shape never changes: the "
            if dec
            else "Pad sequence lengths to a few buckets (e.g. multiples of 512) and warm each "
            "up, or torch.compile(dynamic=True) / mark_dynamic on the sequence dim: the "
        ) + f"{nc} recompiles ({s(lost)} ms) go, mean step {s(step)} → {s(expected)} ms."
        if cs:
            ev += [_step_span(M, r0, cs[0], MAIN, "step with a new shape: compile")]
        ev += _span(M, r0, MAIN, M.mask(names=lambda n: n.startswith("_compile")), "compiling", 1)
    else:  # healthy
        expected = step
        if p["world"] > 1:
            # two idle shares: no kernel on either stream (NCCL counts as busy), and the compute
            # stream alone (the graded gap and idle share): say which is which
            c_idle = _pct(100 * float(np.mean(f["compute_idle_frac_per_rank"])))
            sig = (
                f"GPU idle {_pct(100 * f['gpu_idle_frac'])} % of a {s(step)} ms step with no "
                f"kernel on either stream (the compute stream alone idles {c_idle} %), "
                f"communication {_pct(f['overlap_pct'])} % overlapped, ranks within "
                f"{f['compute_skew_pct']:.1f} %; no stalls — nothing to fix."
            )
            value = (
                f"GPU idle {_pct(100 * f['gpu_idle_frac'])} % (compute stream {c_idle} %), "
                f"overlap {_pct(f['overlap_pct'])} %"
            )
            nb = round(p["params"] / 1e9, 1)
            tok = p["batch"] * p["seq"]
            mfu = 6 * nb * 1e9 * tok / (step / 1000) / (hw.bf16_tflops * 1e12)
            arith = [
                f"MFU ≈ 6 × params × tokens ÷ step ÷ peak = 6 × {nb:.1f}e9 × {tok} ÷ "
                f"{s(step)} ms ÷ {hw.bf16_tflops:.0f} TFLOPS = {_pct(100 * mfu)} %",
                f"no avoidable time found: expected step = current step = {s(step)} ms",
            ]
            fix_text = (
                "Nothing to change: a kernel runs on the GPU "
                f"{_pct(100 - 100 * f['gpu_idle_frac'])} % of the step at ~{_pct(100 * mfu)} % "
                f"MFU and {_pct(f['overlap_pct'])} % of the all-reduce hides under backward."
            )
        else:
            b_frac = round(1 - f["gpu_idle_frac"], 2)  # as printed
            busy = q(step * b_frac)
            sig = (
                f"GPU busy {_pct(100 - 100 * f['gpu_idle_frac'])} % of a {s(step)} ms decode "
                "step with large batched kernels and the launch queue full; no stalls — nothing "
                "to fix."
            )
            value = f"GPU idle {_pct(100 * f['gpu_idle_frac'])} %"
            arith = [
                f"GPU busy = step × (1 − idle) = {s(step)} × {b_frac:.2f} = {s(busy)} ms",
                f"no avoidable time found: expected step = current step = {s(step)} ms",
            ]
            fix_text = (
                f"Nothing to change: the GPU is busy {_pct(100 - 100 * f['gpu_idle_frac'])} % "
                "of every decode step; CUDA graphs would save microseconds, not milliseconds."
            )
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
        "measurement_text": how,
        "fix": fix,
        "fixes_accepted": fix_ok,
        "fix_text": fix_text,
        "step_ms": step,
        "expected_step_ms": float(expected),
        "arithmetic": arith,
        "facts": dict(f.items()),
        "evidence": ev,
        "mentalmath_family": family,
        "grading": diagnosis.key_block(M.c, M.names, M.args, slug, float(expected)),
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
    "get_potential_stragglers on data-parallel ranks; on a pipeline, the kernel breakdown per "
    "stage, since every stage's receives wait in the fill and drain).",
    "hot_kernel_bw": "Kernel breakdown to find the hot family, then bytes moved ÷ time against HBM "
    "peak (ncu: dram throughput high, SM throughput low).",
    "sync_api_time": "nsys analyze cuda_api_sync / cuda_api_sum: count and time of "
    "cudaStreamSynchronize per step; set_sync_debug_mode('warn') finds the line.",
    "stage_idle": "Per-stage temporal breakdown: idle share per rank against (p−1)/(m+p−1).",
    "alloc_api_time": "nsys cuda_api_sum or the trace: cudaMalloc/cudaFree count and time per "
    "steady-state step; memory_stats()['num_alloc_retries'].",
    "busbw_vs_link": "bytes = In msg nelems × dtype size; busbw = bytes ÷ time × 2(n−1)/n; compare "
    "with the achievable bandwidth of the link the ring runs on (NVLink, or PCIe through the "
    "hosts: a ring reaches about 80 % of either), on every rank.",
    "step_series_shapes": "Plot step time per step against the input shape; TORCH_LOGS=recompiles "
    "names the guard that failed.",
    "gpu_idle_breakdown": "HTA temporal and idle-time breakdown per rank.",
    "kernel_top_list": "HTA get_gpu_kernel_breakdown / nsys cuda_gpu_kern_sum.",
    "mfu": "Model FLOPs per step ÷ step time ÷ peak.",
    "none": "Idle share and overlap already show a busy GPU; no further measurement is needed.",
}
