"""Workloads (data-parallel training, pipeline-parallel training, inference decode) and the
per-scenario injections. Every function returns a finished `Sim` plus a workload description."""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import itertools
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from . import kernels as K
from .hardware import Hardware
from .kernels import UnitBuilder
from .model import (
    C_ANN,
    C_KERN,
    C_MEMCPY,
    C_OP,
    C_RT,
    COMPUTE,
    MAIN,
    NCCL,
    WORKER0,
    WORKER1,
    Interner,
    Sim,
    Units,
    draw_batch,
    draw_segments,
    emit_batch,
    emit_segments,
    emit_sync_items,
    sync_chain,
)

LOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


# ------------------------------------------------------------------------------------------------
# data-parallel training
# ------------------------------------------------------------------------------------------------
def ddp_params(rng: np.random.Generator, hw: Hardware, family: str = "ddp") -> dict:
    """Sizes of a data-parallel decoder job. Rank count, depth, width, per-GPU batch, gradient
    dtype, attention implementation and step count come from one distribution whatever the
    scenario (the scenario's injection, `inject`, changes only what its signature needs)."""
    # width and depth: from a 0.3B model towards DDP's practical ceiling (parameters, gradients and
    # AdamW state replicated on every GPU: ~2.6B parameters), near log-uniform in size
    hidden = int(rng.choice(_HIDDEN))
    max_layers = max(6, min(9, int(2.6e9 // (12 * hidden * hidden))))
    p: dict[str, Any] = {
        "world": 8 if rng.random() < 0.75 else 4,
        "layers": int(rng.integers(6, max_layers + 1)),
        "hidden": hidden,
        "batch": 1,
        "seq": 2048,
        "steps": int(rng.integers(5, 8)),
        "grad_dtype": "Float" if rng.random() < 0.4 else "BFloat16",
        # achieved matmul efficiency: shapes, kernels, clocks and the framework's overheads
        # differ between jobs, from a quarter of the peak (narrow GEMMs on a fast GPU) to 0.7
        "mfu_eff": float(rng.uniform(0.25, 0.7)),
        "busbw_eff": float(rng.uniform(0.96, 1.02)),
        "overlap": True,
        # DataLoader num_workers: small jobs often run one or two (the starving job keeps its own)
        "workers": int(rng.choice([1, 2, 4, 6, 8], p=[0.14, 0.22, 0.2, 0.22, 0.22])),
        "data_ms": 0.0,
        "compiled": family == "ddp_compile",
        "unfused": rng.random() < 0.4,
        "score_fp32": rng.random() < 0.5,
        "loss_sync": rng.random() < 0.5,  # a `.nonzero()` on the labels once per step
        "first_step": int(rng.choice([2, 4, 5, 10, 101, 550, 1009, 2001])),
    }
    # the profiler window: one step fewer for the biggest jobs (nine layers on eight ranks), so
    # that the merged download stays under 5 MB gzipped
    if p["world"] == 8 and p["layers"] * p["steps"] > 56:
        p["steps"] = 56 // p["layers"]
    # the per-GPU batch: tokens such that (all-reduce time) / (compute time) on a healthy link
    # lands in one range for every scenario
    nb = 4 if p["layers"] >= 8 else 3
    base, rem = divmod(p["layers"], nb)
    # DDP's gradient buckets: few, even, the last one no smaller than the others (HTA's straggler
    # analysis only looks at comm kernels >= 1 % of the iteration and takes the last per rank)
    p["bucket_plan"] = [base] * (nb - rem) + [base + 1] * rem
    gsize = 4 if p["grad_dtype"] == "Float" else 2
    busbw = hw.achievable_busbw_gbps * 1e9
    r = float(rng.uniform(0.08, 0.3))
    p["comm_ratio"] = r
    # variable-length batches in most jobs: a few sequence lengths, new ones in the window
    p["shape_f"], p["new_shape_steps"] = (
        _draw_lengths(rng, p["steps"])
        if rng.random() < _VARIABLE_MAIN
        else ([1.0] * p["steps"], [])
    )
    # the job's own length distribution: its drawn lengths, or for a fixed-length job the
    # lengths a variable-length run of it would draw (from a stream of its own, the same for
    # every scenario, so the workload's other draws stay put); a fixed-length job that
    # recompiles (see `inject`) takes its new lengths from here
    p["len_plan"] = (
        (p["shape_f"], p["new_shape_steps"])
        if p["new_shape_steps"]
        else _draw_lengths(np.random.default_rng(_stream_key(rng)), p["steps"])
    )
    # most of the rest run those lengths too (nine jobs in ten vary in all): a recompiling job
    # always sees new lengths, so lengths that vary must not point to it (drawn on a side
    # stream of its own, so the job's other draws stay put)
    if not p["new_shape_steps"] and (
        np.random.default_rng([_stream_key(rng), 29]).random() < _VARIABLE_AFTER_FIXED
    ):
        p["shape_f"], p["new_shape_steps"] = p["len_plan"]
    # the attention heads' width: 128, or 64 as many models of this size have (twice the heads
    # for the same width, so twice the score-matrix elements per token); drawn with the
    # interleave below on a side stream of its own, so the job's other draws stay put
    side = np.random.default_rng([_stream_key(rng), 23])
    p["head_dim"] = int(side.choice([64, 128], p=[0.4, 0.6]))
    tokens = gsize * 1.75 * hw.bf16_tflops * 1e12 * p["mfu_eff"] / (busbw * 6 * r)
    p["seq"] = 2048 if tokens >= 2048 else (1024 if tokens >= 1024 else 512)
    p["batch"] = int(max(1, min(32, round(tokens / p["seq"]))))
    if p["unfused"]:
        _fit_eager_seq(p, hw, 1.0)  # unfused attention that does not dominate
    else:
        # an interleaved local/global decoder in most SDPA jobs: its local (sliding-window)
        # layers, all but every k-th, attend through an explicit band mask that the fused kernel
        # does not take, so they run eager, without dominating (drawn on a side stream of its
        # own, so the job's other draws stay put)
        if side.random() < 0.6:
            k = int(side.choice([4, 6, 8]))
            eager = _interleave(p["layers"], k)
            _fit_eager_seq(p, hw, sum(eager) / p["layers"])
            p["window_every"] = k
            p["eager_layers"] = eager
    # a per-GPU batch whose activations fit beside the weights and optimizer state (no
    # activation checkpointing in this family): fewer sequences where the drawn ones would not
    while p["batch"] > 1 and ddp_memory_share(p, hw) > HBM_USABLE:
        p["batch"] -= 1
    # the all-reduce's share of compute at the drawn tokens
    p["comm_ratio"] = r * tokens / (p["batch"] * p["seq"])
    return p


# the share of a GPU's memory a training job may plan to hold: the rest goes to the CUDA
# context, NCCL's buffers, library workspaces and the caching allocator's fragmentation
HBM_USABLE = 0.85


def ddp_memory_share(p: dict, hw: Hardware) -> float:
    """The share of the GPU's memory a DDP job holds at the peak of a step: bf16 weights, fp32
    master weights, gradients and AdamW state (16 bytes a parameter), and the activations kept
    for backward (34 bytes per token and hidden unit a layer, after Korthikanti et al., plus the
    score matrices of the layers that attend eagerly: softmax output, dropout mask and dropped
    probabilities, 7 bytes an element with fp32 scores, 5 with bf16), at the longest sequence
    the job's own lengths bring."""
    d, L = p["hidden"], p["layers"]
    heads = d // _head_dim(p)
    plan: tuple[list[float], list[int]] = p.get("len_plan") or ([1.0], [])
    seq = int(p["seq"] * max([1.0, *plan[0], *(p.get("shape_f") or [])]))
    scores = sum(_eager_layers(p)) * p["batch"] * heads * seq**2
    act = L * p["batch"] * seq * d * 34 + scores * (7 if p.get("score_fp32") else 5)
    return (16 * 12 * d * d * L + act) / (hw.hbm_gb * 1e9)


# the longest a memory-bound DDP job's step may be, estimated, against the drawn job's: a draw
# whose one sequence at the length the chain needs runs longer (an A100 job of 2k tokens a GPU
# whose chain dominates only at 5-7k) is drawn again, for every scenario alike
MB_STEP_CAP = 2.0


def host_step_ratio(
    slug: str, family: str, p: dict, inj: np.random.Generator, hw: Hardware
) -> float:
    """Whether the drawn workload `p` can host scenario `slug` as `inject` would make it (the
    injection's stream `inj` is consumed; `p` is left as it was), and at what step: infinity
    where it cannot, else the scenario's step over the drawn job's (estimated GPU time a layer;
    1.0 for scenarios whose step is not sized here). A memory-bound DDP job whose score chain
    dominates only at sequences whose score matrices would not fit on the GPU cannot happen;
    one whose step would run over `MB_STEP_CAP` times the drawn job's can, but there the step
    alone would name the scenario (see `_draw_workload`)."""
    if slug != "memory-bound-kernel" or family not in ("ddp", "ddp_compile"):
        return 1.0
    q = copy.deepcopy(p)
    inject(slug, family, q, inj, hw)
    if ddp_memory_share(q, hw) > HBM_USABLE:
        return float("inf")
    L = p["layers"]
    t0 = _layer_seconds(p, hw, p["seq"], p["batch"], sum(_eager_layers(p)) / L)
    t1 = _layer_seconds(q, hw, q["seq"], q["batch"], sum(_eager_layers(q)) / L)
    return t1 / t0


def _fit_eager_seq(p: dict, hw: Hardware, frac: float) -> None:
    """A job whose layers run attention eager in a fraction `frac` of them, sized so the score
    chain does not dominate: the longest sequence (same tokens) whose chain stays under a sixth
    of the GPU time."""
    tok = p["seq"] * p["batch"]
    p["seq"] = next(
        (x for x in (2048, 1024) if x <= tok and _score_chain_share(p, hw, x, frac) <= 0.17),
        512,
    )
    p["batch"] = max(1, tok // p["seq"])


def _eager_layers(p: dict) -> list[bool]:
    """Which layers run attention eager: the job's own per-layer plan, else all or none."""
    return list(p.get("eager_layers") or [bool(p["unfused"])] * p["layers"])


def _interleave(layers: int, k: int) -> list[bool]:
    """Which layers of an interleaved local/global decoder are local (run eager): all but every
    k-th, and never all of them."""
    eager = [(i + 1) % k != 0 for i in range(layers)]
    if all(eager):
        eager[-1] = False
    return eager


def _head_dim(p: dict) -> int:
    """The width of a DDP job's attention heads (jobs drawn before it was drawn: 128)."""
    return int(p.get("head_dim", 128))


# model widths a DDP decoder job draws
_HIDDEN = (2048, 2560, 3072, 4096)


def _stream_key(rng: np.random.Generator) -> int:
    """A seed for a side stream that follows `rng`'s position without drawing from it."""
    return int(rng.bit_generator.state["state"]["state"])


# the share of jobs whose batches vary in length (or whose decode cache grows) in the window:
# a DDP job draws it on its main stream 60 % of the time, and turns the fixed-length rest
# variable on a side stream (so seeds that drew variable lengths before keep their traces)
_VARIABLE_SHARE = 0.9
_VARIABLE_MAIN = 0.6
_VARIABLE_AFTER_FIXED = (_VARIABLE_SHARE - _VARIABLE_MAIN) / (1 - _VARIABLE_MAIN)

_LENGTH_FACTORS = (0.75, 0.875, 1.125, 1.25, 1.375)


def _draw_lengths(
    r: np.random.Generator, steps: int, factors: tuple[float, ...] = _LENGTH_FACTORS
) -> tuple[list[float], list[int]]:
    """Per-step sequence-length factors of a variable-length job and the steps that bring a
    length for the first time (2-3 of them, never step 0, and fewer than half the steps: the
    steps that bring a new length stay the exception)."""
    n_new = min(int(r.integers(2, 4)), (steps - 1) // 2)
    firsts = sorted(int(c) for c in r.choice(np.arange(1, steps), size=n_new, replace=False))
    news = [float(x) for x in r.choice(list(factors), n_new, replace=False)]
    seen, out, k = [1.0], [], 0
    for s in range(steps):
        if k < n_new and s == firsts[k]:
            seen.append(news[k])
            out.append(news[k])
            k += 1
        else:
            out.append(float(r.choice(seen)))
    return out, firsts


# sequence lengths a long-context job trains at (multiples of 512 between the powers of two)
_SEQ_LADDER = (1024, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288,
               14336, 16384)  # fmt: skip


def _attn_costs(p: dict, hw: Hardware, seq: int, b: int) -> tuple[float, float]:
    """Estimated seconds per layer of `b` sequences of `seq` tokens: the unfused attention's
    elementwise score chain, and the matmuls (weights and scores) with the kernels around them."""
    d = p["hidden"]
    eb = 4 if p.get("score_fp32") else 2
    tf = hw.bf16_tflops * 1e12 * p["mfu_eff"]
    hbm = hw.hbm_tbps * 1e12 * 0.82
    hd = _head_dim(p)
    elems = b * (d // hd) * seq * seq
    chain = 16.25 * eb * elems / hbm
    gemm = 72.0 * b * seq * d * d / tf + 12.0 * hd * elems / (0.8 * tf)
    return chain, 1.2 * gemm


def _score_chain_share(p: dict, hw: Hardware, seq: int, frac: float = 1.0) -> float:
    """Estimated share of GPU time of the unfused attention's elementwise chain at `seq` when a
    fraction `frac` of the layers run attention unfused."""
    chain, rest = _attn_costs(p, hw, seq, max(1, p["batch"] * p["seq"] // seq))
    return frac * chain / (frac * chain + rest)


def _layer_seconds(p: dict, hw: Hardware, seq: int, b: int, frac: float) -> float:
    """Estimated GPU seconds per layer (forward) when a fraction `frac` of layers run unfused."""
    chain, rest = _attn_costs(p, hw, seq, b)
    return frac * chain + rest


def _size_starved_ddp(p: dict, inj: np.random.Generator) -> None:
    """A starving DDP job's loader delivers a batch every `starve_ratio` x its compute (of the
    longest batch): the wait is a fifth to over half of every step. The job runs fewer tokens per
    GPU than the drawn one, as many as bring its step (compute plus the wait) near the drawn
    job's, so a long step is not what tells it apart from its family's others. Its gradients are
    the drawn job's, so the all-reduce stays hidden under backward: the tokens shrink no further
    than keeps it under `_STARVED_COMM_MAX` of the compute. The fixed twin runs the same batch."""
    m = float(inj.uniform(1.6, 2.5))
    p["starve_ratio"] = m
    longest = max(p.get("shape_f") or [1.0])
    want = float(inj.uniform(0.8, 1.5))  # starved step / drawn step, before the floors
    # its GEMMs run at the top of the family's efficiency range (0.25-0.7), so it needs fewer
    # tokens cut to get there (its compute per token is then the drawn job's or less)
    eff = float(inj.uniform(0.6, 0.7))
    faster = p["mfu_eff"] / eff
    p["mfu_eff"] = eff
    tok = p["batch"] * p["seq"]
    p["comm_ratio"] /= faster
    g = max(want / (m * longest * faster), p["comm_ratio"] / _STARVED_COMM_MAX)
    if g >= 1.0:
        return
    new = tok * g
    seq = next((s for s in (2048, 1024) if s <= p["seq"] and new >= s), min(512, p["seq"]))
    p["seq"] = seq
    p["batch"] = int(max(1, round(new / seq)))
    p["comm_ratio"] = p["comm_ratio"] * tok / (p["batch"] * seq)


def _resize_tokens(p: dict, want: float) -> None:
    """A DDP job's per-GPU batch set to about `want` tokens: the sequence halved (not below
    512) while one is longer than that, then as many sequences as come nearest."""
    while p["seq"] > 512 and want < p["seq"]:
        p["seq"] //= 2
    p["batch"] = int(max(1, round(want / p["seq"])))


# the least all-reduce per compute an exposed all-reduce job is sized to
_EXPOSED_COMM_MIN = 0.1

# the most all-reduce per compute a starved job is sized to: about the 95th percentile of the
# drawn jobs' own (0.08-0.39), so its overlap stays theirs
_STARVED_COMM_MAX = 0.33


def inject(
    slug: str, family: str, p: dict, inj: np.random.Generator, hw: Hardware, fixed: bool = False
) -> None:
    """The scenario's injection on a drawn workload `p` (in place), from its own random stream
    `inj`; with `fixed`, the same injection with its fix applied. Only what the signature (or
    the fix) needs changes: the workload line stays the drawn one."""
    p["fixed"] = bool(fixed)
    if family in ("ddp", "ddp_compile"):
        if slug == "recompilation" and not p["new_shape_steps"]:
            # the recompiling job sees new lengths in the window: those of the workload's own
            # length draw (the lengths a variable-length run of this job has), not new ones
            p["shape_f"], p["new_shape_steps"] = p["len_plan"]
        if slug == "input-starvation":
            _size_starved_ddp(p, inj)
        if slug == "exposed-allreduce":
            # an all-reduce that waits for backward to end adds its whole length to the step:
            # a job whose all-reduce would be under `_EXPOSED_COMM_MIN` of its compute runs as
            # many fewer tokens as bring it there (the fixed twin too), so the wait stays one a
            # reader sees (a DDP draw's is 0.08-0.3, and on A100, where the draws that host a
            # memory-bound job run long compute, more of them sit near the bottom)
            if p["comm_ratio"] < _EXPOSED_COMM_MIN:
                tok = p["batch"] * p["seq"]
                _resize_tokens(p, tok * p["comm_ratio"] / _EXPOSED_COMM_MIN)
                p["comm_ratio"] *= tok / (p["batch"] * p["seq"])
            if not fixed:
                p["overlap"] = False
        elif slug == "bandwidth-bound-collective":
            # the ring runs through the hosts over PCIe (NVLink peer-to-peer not in use), alike
            # on every rank, at that link's ceiling: its bus bandwidth is what the GPU's PCIe
            # link moves. The same gradients then take 8-12x longer to reduce than over NVLink;
            # the per-GPU batch is the drawn one where that leaves the all-reduce 1.15-1.6x the
            # compute, else as many tokens as bring it into that band (more where the link
            # leaves it longer, fewer where shorter): the step stays a bandwidth-bound one
            # without a step length that names it
            eff = (
                hw.host_ring_busbw_gbps / hw.achievable_busbw_gbps * float(inj.uniform(0.95, 1.03))
            )
            nat = p["comm_ratio"] * p["busbw_eff"] / eff  # all-reduce / compute at that link
            lo, hi = float(inj.uniform(1.15, 1.3)), float(inj.uniform(1.4, 1.6))
            target = min(max(nat, lo), hi)
            tok = p["batch"] * p["seq"]
            _resize_tokens(p, tok * nat / target)
            while p["batch"] > 1 and ddp_memory_share(p, hw) > HBM_USABLE:
                p["batch"] -= 1
            p["busbw_eff"] = eff
            p["comm_ratio"] = nat * tok / (p["batch"] * p["seq"])
            if fixed:  # the fix sends half the bytes: bf16 gradients, or a compression hook
                if p["grad_dtype"] == "Float":
                    p["grad_dtype"] = "BFloat16"
                else:
                    p["comm_bytes_scale"] = 0.5
        elif slug == "memory-bound-kernel":
            # eager attention that upcasts its scores to fp32 before the softmax (as eager
            # decoder attention does), over sequences just long enough that the score chain
            # dominates: the shortest length on a fine ladder that gets there.
            # A job drawn with SDPA attention keeps it in its global layers: its local
            # (sliding-window) layers, all but every k-th, attend through an explicit band mask
            # over the full score matrix, which the fused kernel does not take, so they run
            # eager (as interleaved local/global decoders do when the window falls back).
            L = p["layers"]
            if p["unfused"]:
                eager = [True] * L
            else:  # the job's own interleave where it has one
                k = int(p.get("window_every") or inj.choice([4, 6, 8]))
                eager = _interleave(L, k)
            frac = sum(eager) / L
            seqs = [s for s in _SEQ_LADDER if s >= p["seq"]]
            want = float(inj.uniform(0.515, 0.55))
            # the drawn job's GPU time per layer, with its own attention and score dtype
            t0 = _layer_seconds(p, hw, p["seq"], p["batch"], sum(_eager_layers(p)) / L)
            # its GEMMs run at the top of the family's efficiency range (0.25-0.7): a long
            # sequence makes large, well-shaped weight and score matmuls. The chain then
            # dominates at shorter sequences, so one sequence outlasts the drawn step less often
            p["mfu_eff"] = float(inj.uniform(0.6, 0.7))
            p["score_fp32"] = True
            seq = next((s for s in seqs if _score_chain_share(p, hw, s, frac) >= want), seqs[-1])
            # longer sequences fit fewer of them on a GPU (eager attention keeps a seq² score
            # matrix per head for backward): as many as bring the step to 1.1-1.6x the drawn
            # job's. Fewer tokens per step would leave a shorter step but a smaller batch (its
            # logits, its copies) than the family's; more, a longer step: neither names the
            # trace alone. No fewer than half the drawn job's tokens, so that without the chain
            # the GPU still outruns the host (a fix that leaves the step host-bound is another
            # story). A draw where this does not fit on the GPU cannot host it (see `hosts`).
            per_seq = _layer_seconds(p, hw, seq, 1, frac)
            half = -(-p["seq"] * p["batch"] // (2 * seq))
            p["seq"] = seq
            p["batch"] = max(half, round(t0 * float(inj.uniform(1.1, 1.6)) / per_seq))
            p["unfused"] = not fixed
            # the fix: the eager layers' attention fused (the same score matmuls, on chip)
            p["eager_layers"] = [e and not fixed for e in eager]
            p["fused_like_layers"] = [e and fixed for e in eager]
    elif family in ("decode", "decode_compile"):
        if slug == "recompilation" and p.get("compiled") and not p["new_shape_steps"]:
            # as in DDP: the recompiling server sees the cache lengths of its own length draw
            p["shape_f"], p["new_shape_steps"] = p["len_plan"]
        if slug == "launch-bound":
            # Python between the launches: the host's time per step, this many times the
            # GPU's (see `_launch_bound_host`); the fix replays the step as a graph, with no
            # Python between the kernels. Its kernels run at the top of the family's HBM
            # efficiency range (0.5-0.85; the fixed twin's too), so its step, host-bound at a
            # multiple of its GPU time, lands nearer the family's others: a long step alone
            # does not name it
            p["hbm_eff"] = float(inj.uniform(*LAUNCH_BOUND_HBM_EFF))
            if fixed:
                p["cpu_us"] = 0.5
            else:
                p["host_ratio"] = float(inj.uniform(*LAUNCH_BOUND_HOST_RATIO))
    elif family == "pp" and slug == "pipeline-bubbles":
        # microbatches of the drawn size, too few of them for the stages: m <= p, or with an
        # interleaved schedule m = p, the fewest it runs, where the bubble is still
        # (p−1)/(2p+p−1) ≈ 27-29 % (the count per step is the signature; sizes, stages, chunks and
        # width stay the drawn ones)
        P, mbt, v = p["stages"], p["mb_tokens"], int(p.get("chunks", 1))
        m = int(inj.integers(max(3, P // 2), P + 1)) if v == 1 else P
        p["micro"] = m
        if fixed:  # each microbatch split in two: the same global batch, twice the microbatches
            p["micro"], p["mb_tokens"] = 2 * m, mbt // 2


def _ew(numel: int, compiled: bool = False) -> dict:
    """Launch shape of an elementwise kernel over `numel` elements, as PyTorch launches it: one
    block of 128 threads per 512 elements (a Triton pointwise kernel: 256 threads per 1024), so
    a kernel's grid follows the size of the tensor it touches."""
    per, threads = (1024, 256) if compiled else (512, 128)
    return {"grid": (max(1, -(-int(numel) // per)), 1, 1), "block": (threads, 1, 1)}


def _layer_fwd(
    b: UnitBuilder,
    p: dict,
    hw: Hardware,
    *,
    unfused: bool,
    compiled: bool,
    sync_layer: bool = False,
    fused_like: bool = False,
) -> None:
    d, t = p["hidden"], p["batch"] * p["seq"]
    tf = hw.bf16_tflops * p["mfu_eff"]
    hbm = hw.hbm_tbps * 1e12 * 0.82
    ew = lambda nbytes: nbytes / hbm * 1e6 + 3.0  # noqa: E731
    act = t * d * 2
    # the layer norm's fp32 weight and bias cast for the bf16 autocast region: tiny copies
    for _ in range(2):
        b.k("aten::to", "aten::_to_copy", K.CAST, 1.3 + d * 6 / hbm * 1e6, 7, dims=[[d]],
            itype="float")  # fmt: skip
    ln = K.TRITON["ln"] if compiled else K.LN_FWD
    b.k("aten::layer_norm", "aten::native_layer_norm", ln, ew(2 * act), dims=[[t, d], [d], [d]],
        **_ew(t * d, compiled))  # fmt: skip
    b.gemm("aten::linear", "aten::addmm", t, 3 * d, d, tf, 0)
    if unfused:
        hd = _head_dim(p)
        heads, s = d // hd, p["seq"]
        elems = p["batch"] * heads * s * s
        sb = elems * (4 if p.get("score_fp32") else 2)
        ity = "float" if p.get("score_fp32") else "c10::BFloat16"
        kn = K.as_fp32 if p.get("score_fp32") else str
        tf_bmm = tf * 0.8
        # the score matmuls run the tile config the layer's first GEMM already picked
        b.gemm("aten::matmul", "aten::bmm", p["batch"] * heads * s, s, hd, tf_bmm, 0)
        dims = [[p["batch"], heads, s, s]]
        g = _ew(elems)
        b.k("aten::mul", None, kn(K.MUL), ew(2 * sb), dims=dims, itype=ity, **g)
        b.k("aten::masked_fill", "aten::masked_fill_", kn(K.MASKED_FILL), ew(2.25 * sb),
            dims=dims, itype=ity, **g)  # fmt: skip
        b.k("aten::softmax", "aten::_softmax", kn(K.SOFTMAX), ew(2 * sb), dims=dims, itype=ity,
            grid=(p["batch"] * heads * s, 1, 1), block=(128, 1, 1))  # fmt: skip
        b.k("aten::dropout", "aten::native_dropout", kn(K.DROPOUT), ew(2.5 * sb), dims=dims,
            itype=ity, **g)  # fmt: skip
        b.gemm("aten::matmul", "aten::bmm", p["batch"] * heads * s, hd, s, tf_bmm, 0)
    else:
        fl_us = 4.0 * p["batch"] * p["seq"] ** 2 * d * 0.5 / (tf * 0.8 * 1e12) * 1e6 + 5
        if fused_like:  # the fixed twin: the same score matmuls, fused on chip
            fl_us = 4.0 * p["batch"] * p["seq"] ** 2 * d / (tf * 0.8 * 1e12) * 1e6 + 8
        b.k(
            "aten::scaled_dot_product_attention",
            "aten::_scaled_dot_product_flash_attention",
            K.flash_names(hw)[0],
            fl_us,
            grid=(p["seq"] // 128, d // _head_dim(p), p["batch"]),
            block=(128, 1, 1),
        )
    b.gemm("aten::linear", "aten::addmm", t, d, d, tf, 1)
    b.k("aten::add", None, K.TRITON["add"] if compiled else K.ADD, ew(3 * act),
        **_ew(t * d, compiled))  # fmt: skip
    if sync_layer:
        return  # the router read-back splits the layer here; the caller continues
    _layer_fwd_mlp(b, p, hw, compiled=compiled)


def _layer_fwd_mlp(b: UnitBuilder, p: dict, hw: Hardware, *, compiled: bool) -> None:
    d, t = p["hidden"], p["batch"] * p["seq"]
    tf = hw.bf16_tflops * p["mfu_eff"]
    hbm = hw.hbm_tbps * 1e12 * 0.82
    ew = lambda nbytes: nbytes / hbm * 1e6 + 3.0  # noqa: E731
    act = t * d * 2
    for _ in range(2):  # this layer norm's fp32 weight and bias, cast for autocast too
        b.k("aten::to", "aten::_to_copy", K.CAST, 1.3 + d * 6 / hbm * 1e6, 7, dims=[[d]],
            itype="float")  # fmt: skip
    b.k(
        "aten::layer_norm",
        "aten::native_layer_norm",
        K.TRITON["ln"] if compiled else K.LN_FWD,
        ew(2 * act),
        **_ew(t * d, compiled),
    )
    b.gemm("aten::linear", "aten::addmm", t, 4 * d, d, tf, 0)
    b.k("aten::gelu", None, K.TRITON["gelu"] if compiled else K.GELU, ew(8 * act),
        **_ew(4 * t * d, compiled))  # fmt: skip
    b.gemm("aten::linear", "aten::addmm", t, d, 4 * d, tf, 1)
    b.k("aten::add", None, K.TRITON["add"] if compiled else K.ADD, ew(3 * act),
        **_ew(t * d, compiled))  # fmt: skip


def _layer_bwd(
    b: UnitBuilder,
    p: dict,
    hw: Hardware,
    *,
    unfused: bool,
    compiled: bool,
    fused_like: bool = False,
) -> None:
    d, t = p["hidden"], p["batch"] * p["seq"]
    tf = hw.bf16_tflops * p["mfu_eff"]
    hbm = hw.hbm_tbps * 1e12 * 0.82
    ew = lambda nbytes: nbytes / hbm * 1e6 + 3.0  # noqa: E731
    act = t * d * 2
    ev = "autograd::engine::evaluate_function: "
    b.k(ev + "AddBackward0", None, K.TRITON["add_bwd"] if compiled else K.ADD, ew(3 * act), 10,
        **_ew(t * d, compiled))  # fmt: skip
    for n_out, n_in, v in ((d, 4 * d, 1), (4 * d, d, 0)):
        b.gemm(ev + "AddmmBackward0", "aten::mm", t, n_in, n_out, tf, v, 20)
        b.gemm(ev + "AddmmBackward0", "aten::mm", n_in, n_out, t, tf, 2, 18)
        if n_out == d:
            b.k(
                ev + "GeluBackward0",
                "aten::gelu_backward",
                K.TRITON["gelu_bwd"] if compiled else K.GELU_BWD,
                ew(12 * act),
                **_ew(4 * t * d, compiled),
            )
    b.k(
        ev + "NativeLayerNormBackward0",
        "aten::native_layer_norm_backward",
        K.TRITON["ln_bwd"] if compiled else K.LN_BWD,
        ew(3 * act),
        18,
    )
    b.gemm(ev + "AddmmBackward0", "aten::mm", t, d, d, tf, 1, 20)
    b.gemm(ev + "AddmmBackward0", "aten::mm", d, d, t, tf, 2, 18)
    if unfused:
        hd = _head_dim(p)
        heads, s = d // hd, p["seq"]
        elems = p["batch"] * heads * s * s
        sb = elems * (4 if p.get("score_fp32") else 2)
        ity = "float" if p.get("score_fp32") else "c10::BFloat16"
        kn = K.as_fp32 if p.get("score_fp32") else str
        dims = [[p["batch"], heads, s, s]]
        g = _ew(elems)
        tf_bmm = tf * 0.8
        for _ in range(2):
            b.gemm(ev + "BmmBackward0", "aten::bmm", p["batch"] * heads * s, s, hd, tf_bmm, 0, 18)
        b.k(
            ev + "NativeDropoutBackward0",
            "aten::native_dropout_backward",
            kn(K.MASKED_SCALE),
            ew(2.5 * sb),
            16,
            dims=dims,
            itype=ity,
            **g,
        )
        b.k(
            ev + "SoftmaxBackward0",
            "aten::_softmax_backward_data",
            kn(K.SOFTMAX_BWD),
            ew(3 * sb),
            16,
            dims=dims,
            itype=ity,
            grid=(p["batch"] * heads * s, 1, 1),
            block=(128, 1, 1),
        )
        b.k(ev + "MulBackward0", "aten::mul", kn(K.MUL), ew(2 * sb), 12, dims=dims, itype=ity,
            **g)  # fmt: skip
        for _ in range(2):
            b.gemm(ev + "BmmBackward0", "aten::bmm", p["batch"] * heads * s, hd, s, tf_bmm, 1, 18)
    else:
        fl_us = 2.5 * 4.0 * p["batch"] * p["seq"] ** 2 * d * 0.5 / (tf * 0.7 * 1e12) * 1e6 + 8
        if fused_like:
            fl_us = 8.0 * p["batch"] * p["seq"] ** 2 * d / (tf * 0.8 * 1e12) * 1e6 + 16
        b.k(
            ev + "ScaledDotProductFlashAttentionBackward0",
            "aten::_scaled_dot_product_flash_attention_backward",
            K.flash_names(hw)[1],
            fl_us,
            24,
            grid=(p["seq"] // 128, d // _head_dim(p), p["batch"]),
            block=(256, 1, 1),
        )
    b.gemm(ev + "AddmmBackward0", "aten::mm", t, d, 3 * d, tf, 1, 20)
    b.gemm(ev + "AddmmBackward0", "aten::mm", 3 * d, d, t, tf, 2, 18)
    # bias gradients (small reductions) and the per-parameter gradient accumulation: the tiny
    # kernels of a real backward
    for n in (d, 4 * d, d, 3 * d):  # one per linear, in backward order
        b.k(ev + "AddmmBackward0", "aten::sum", K.BIAS_GRAD, 2.5 + t * n * 2 / hbm * 1e6 * 0.2, 9)
    for _ in range(2):  # each layer norm's weight and bias gradients (a small reduction)
        b.k(ev + "NativeLayerNormBackward0", None, K.LN_GB, 2.0 + d * 4 / hbm * 1e6, 8)
    for _ in range(4):  # the bf16 gradients of the cast norm parameters, back to fp32
        b.k(ev + "ToCopyBackward0", "aten::_to_copy", K.CAST, 1.2 + d * 6 / hbm * 1e6, 6,
            dims=[[d]], itype="c10::BFloat16")  # fmt: skip
    b.vector_grads([3 * d, d, 4 * d, d, d, d, d, d], hbm, p["world"])
    b.k(
        ev + "NativeLayerNormBackward0",
        "aten::native_layer_norm_backward",
        K.TRITON["ln_bwd"] if compiled else K.LN_BWD,
        ew(3 * act),
        18,
    )


def allreduce_us(nbytes: float, world: int, hw: Hardware, eff: float) -> float:
    busbw = hw.achievable_busbw_gbps * 1e9 * eff
    return nbytes * 2 * (world - 1) / world / busbw * 1e6 + 18.0


def build_ddp(
    slug: str,
    rng: np.random.Generator,
    hw: Hardware,
    it: Interner,
    p: dict,
    inj: np.random.Generator | None = None,
) -> Sim:
    """`rng` draws the workload's noise, `inj` (default `rng`) the injection's choices; with
    p["fixed"] the scenario's fix is applied (see `inject`)."""
    inj = rng if inj is None else inj
    fixed = bool(p.get("fixed"))
    R, L, d = p["world"], p["layers"], p["hidden"]
    sim = Sim(R, hw, rng, it)
    compiled = bool(p["compiled"])
    gsize = K.DTYPE_BYTES[p["grad_dtype"]] * float(p.get("comm_bytes_scale", 1.0))
    layer_params = 12 * d * d + 4 * d
    msg = float(p.get("comm_bytes_scale", 1.0))  # elements sent per gradient element
    p["params"] = layer_params * L
    t_layer = allreduce_us(layer_params * gsize, R, hw, p["busbw_eff"])
    ranks = list(range(R))

    def ub() -> UnitBuilder:
        return UnitBuilder(it, hw)

    # templates
    fwd = ub()
    # per layer: attention unfused, and (the fixed twin) fused where it was unfused
    eager = _eager_layers(p)
    fused_like = list(p.get("fused_like_layers") or [False] * L)
    for li in range(L):
        _layer_fwd(fwd, p, hw, unfused=eager[li], compiled=compiled, fused_like=fused_like[li])
    t = p["batch"] * p["seq"]
    vocab_us = 2.0 * t * d * 32000 / (hw.bf16_tflops * p["mfu_eff"] * 1e12) * 1e6
    fwd.gemm("aten::linear", "aten::mm", t, 32000, d, hw.bf16_tflops * p["mfu_eff"], 0)
    fwd.k("aten::cross_entropy_loss", "aten::_log_softmax", K.LOGSOFTMAX, vocab_us * 0.08)
    fwd.k("aten::cross_entropy_loss", "aten::nll_loss_nd", K.NLL, 6.0)
    bwd = ub()
    bwd.loss_bwd(t, vocab_us)
    bwd.gemm(
        "autograd::engine::evaluate_function: MmBackward0",
        "aten::mm",
        t,
        d,
        32000,
        hw.bf16_tflops * p["mfu_eff"],
        1,
        20,
    )
    plan = list(p.get("bucket_plan", [1] * L))
    pending = 0
    for li in range(L):
        _layer_bwd(bwd, p, hw, unfused=eager[L - 1 - li], compiled=compiled,
                   fused_like=fused_like[L - 1 - li])  # fmt: skip
        pending += 1
        if p["overlap"] and pending == plan[0]:
            plan.pop(0)
            t_b = allreduce_us(layer_params * pending * gsize, R, hw, p["busbw_eff"])
            bwd.nccl("allreduce", int(layer_params * pending * msg), p["grad_dtype"], R, t_b, ranks)
            pending = 0
    bwd.embedding_bwd(t, d)
    if not p["overlap"]:
        # the same buckets, all-reduced only once backward is done: DDP's end-of-backward
        # callback (its delayed all-reduce) launches them from the autograd thread, after the
        # last gradient, back to back
        for nl in p["bucket_plan"]:
            t_b = allreduce_us(layer_params * nl * gsize, R, hw, p["busbw_eff"])
            bwd.nccl("allreduce", int(layer_params * nl * msg), p["grad_dtype"], R, t_b, ranks)
    opt = ub()
    opt.clip_grad_norm(12 * L)
    opt_bytes = p["params"] * 16
    for _ in range(4):
        opt.k(
            "aten::_fused_adamw_",
            None,
            K.ADAM,
            opt_bytes / 4 / (hw.hbm_tbps * 1e12 * 0.8) * 1e6,
            22,
            grid=(320, 1, 1),
            block=(512, 1, 1),
        )
    h2d = ub()
    pin_gbps = hw.pcie_gbps * 0.9
    h2d.memcpy(
        "aten::to",
        "aten::_to_copy",
        "Memcpy HtoD (Pinned -> Device)",
        t * 8,
        pin_gbps,
        dims=[[p["batch"], p["seq"]]],
    )
    h2d.memcpy(
        "aten::to",
        "aten::_to_copy",
        "Memcpy HtoD (Pinned -> Device)",
        t * 8,
        pin_gbps,
        dims=[[p["batch"], p["seq"]]],
    )
    zero = ub()
    zero.memset("aten::zero_", 4)
    U = {
        k: Units.build(v.rows)
        for k, v in (("fwd", fwd), ("bwd", bwd), ("opt", opt), ("h2d", h2d), ("zero", zero))
    }

    # scenario knobs
    comp_step_ms = float(
        (
            U["fwd"].gpu_us.sum()
            + U["bwd"].gpu_us[U["bwd"].stream == COMPUTE].sum()
            + U["opt"].gpu_us.sum()
        )
        / 1000
    )
    p["compute_ms_est"] = comp_step_ms
    sim.gpu_scale[:] = 1.0 + rng.normal(0, 0.004, R)
    if slug == "straggler":
        slow = int(inj.integers(0, R))
        slow_by = float(inj.uniform(0.15, 0.35))
        if not fixed:
            sim.gpu_scale[slow] = 1.0 + slow_by
    data_ms = comp_step_ms * 0.6
    workers = p["workers"]
    if slug == "input-starvation":
        # too few workers for the loading cost: the job's own one worker when it was drawn with
        # one, else two (loader rows look as in any job of the family: one row for one worker)
        few = 1 if p["workers"] == 1 else 2
        # the workers together deliver a batch every 1.6-2.5x the compute of the job's longest
        # batch: the wait is a fifth to over half of the step, in every step (a
        # careful reader sees a fifth as plainly as a half; the step grows with the wait)
        longest = max(p.get("shape_f") or [1.0])
        data_ms = comp_step_ms * few * longest * float(p["starve_ratio"])
        workers = 8 if fixed else few  # the fix: eight workers prefetching
        p["workers"] = workers
    p["data_ms"] = data_ms
    # shapes for the compiled workload: new sequence lengths appear on a few steps
    # variable-length batches (drawn with the workload): the sequence length of every step; a
    # recompiling job compiles on the steps that bring a length for the first time, any other
    # (and the fixed twin) runs the same lengths compiled up front or eagerly
    shape_f, new_steps = p.get("shape_f"), p.get("new_shape_steps", [])
    if not shape_f:
        shape_f = [1.0] * p["steps"]
    shapes = [int(p["seq"] * x) // 8 * 8 for x in shape_f]
    compile_steps: set[int] = set()
    if slug == "recompilation" and not fixed:
        compile_steps = {int(c) for c in new_steps}
    p["shapes"] = shapes
    p["compile_steps"] = sorted(compile_steps)
    sync_every_layer = slug == "sync-stalls" and not fixed
    # host work after each read-back (routing on the CPU): enough to show on every step
    sync_host_ms = (
        max(float(inj.uniform(1.0, 3.0)), comp_step_ms * float(inj.uniform(0.015, 0.03)))
        if slug == "sync-stalls"
        else 0.0
    )
    alloc = slug == "allocator-stalls" and not fixed
    n_alloc = int(inj.integers(3, 7))
    # ms-scale cudaMalloc (HTA's AlexNet sample: median 5.5 ms), sized so the stall matters
    alloc_ms = max(2.5, comp_step_ms * float(inj.uniform(0.03, 0.06)))

    # data loader: worker w fetches batch k, at most `depth` batches ahead of the main thread
    nrow = 2 if workers >= 2 else 1
    depth_ahead = 2 * workers
    data_ns = int(data_ms * 1e6)
    starved = slug == "input-starvation" and not fixed
    period = data_ns // workers if starved else 0
    # in steady state a starved loader has no batch buffered: worker w's fetch is in flight
    wfree = np.zeros((nrow, R), np.int64) + sim.cpu[None, :]
    if period:
        for w in range(nrow):
            wfree[w] = sim.cpu - data_ns + (w + 1) * period - int(comp_step_ms * 1e6)
    # a loader that keeps up has its prefetch queue full when profiling starts: its first
    # `depth_ahead` batches were fetched before the window, and from then on a worker starts a
    # batch each time a step takes one (one fetch per step, as in a starved loader, whose
    # workers never stop: what tells them apart is how long a fetch takes, not how many there are)
    t_open = sim.cpu.copy()
    ready_at: list[np.ndarray] = []
    consumed: list[np.ndarray] = []

    def schedule_fetch(
        k: int, r: np.random.Generator = rng, until: np.ndarray | None = None
    ) -> None:
        """Worker k % nrow fetches batch k; with `until` (a batch for a step after the window),
        only on the ranks where it starts before the window ends, cut off there."""
        w = k % nrow
        if not period and k < depth_ahead:
            ready_at.append(t_open)
            return
        # a starved loader's steady cost per batch (its waits are the signature, every step)
        dur = (data_ms * 1e6 * r.lognormal(0, 0.02 if period else 0.05, R)).astype(np.int64)
        if workers > 2:  # each drawn row stands for several workers
            dur = dur * 2 // workers + 1000
        gate = consumed[k - depth_ahead] if 0 <= k - depth_ahead < len(consumed) else wfree[w]
        # a starved loader's gate never binds (each batch is taken the moment it is ready): its
        # workers fetch back to back
        st = np.maximum(wfree[w], gate) + r.integers(20_000, 80_000, R)
        tid = WORKER0 if w == 0 else WORKER1
        wfree[w] = st + dur
        if until is None:
            # a fetch in flight when the profiler starts is recorded from there on (the window
            # opens with the step, as for a loader that keeps up)
            s0 = np.maximum(st, t_open)
            sim.slice(tid, s0, st + dur - s0, "DataLoader worker: fetch batch", C_ANN, 0)
            sim.slice(tid, s0 + 2000, np.maximum(st + dur - s0 - 4000, 1000), "collate_fn", C_OP, 1)
            ready_at.append(st + dur)
            return
        on = st + 10_000 < until
        if on.any():
            rk, s0 = sim.ranks[on], st[on]
            d = np.minimum(dur[on], until[on] - s0)
            sim.rec.add(rk, tid, s0, d, it.n("DataLoader worker: fetch batch"), C_ANN, 0)
            sim.rec.add(rk, tid, s0 + 2000, np.maximum(d - 4000, 1000), it.n("collate_fn"), C_OP, 1)

    if sync_every_layer:  # per-layer templates, built once (they do not depend on the step)
        U_attn: dict[bool, Units] = {}
        for e in set(eager):  # a layer's attention as the job runs it there (eager or fused)
            a_ = UnitBuilder(it, hw)
            _layer_fwd(a_, p, hw, unfused=e, compiled=compiled, sync_layer=True)
            U_attn[e] = Units.build(a_.rows)
        m_ = UnitBuilder(it, hw)
        _layer_fwd_mlp(m_, p, hw, compiled=compiled)
        U_mlp = Units.build(m_.rows)
        U_mlp_last = Units.build(m_.rows + fwd.rows[-3:])
    cl_id = 0
    compile_idx = 0
    seen = {p["seq"]: 0}
    for s in range(p["steps"]):
        step_start = sim.cpu.copy()
        # scaling of work with this step's shape
        f = shapes[s] / p["seq"]
        base_scale = sim.gpu_scale.copy()
        sim.gpu_scale = base_scale * f
        # 1 data
        while len(ready_at) <= s:
            schedule_fetch(len(ready_at))
        wait = np.maximum(ready_at[s] - sim.cpu, 0) + rng.integers(120_000, 400_000, R)
        sim.cpu_op(LOADER, wait, 1, C_ANN)
        consumed.append(sim.cpu.copy())
        # 2 copy in
        h = Units.build(_h2d_rows(it, hw, p, shapes[s]))
        sim.cpu_op("aten::empty_strided", rng.integers(3000, 9000, R), 1)
        sim.block(h, depth=1)
        if alloc:
            for _ in range(n_alloc):
                dur = (alloc_ms * 1e6 * inj.lognormal(0, 0.35, R)).astype(np.int64)
                sim.slice(MAIN, sim.cpu, dur + 4000, "aten::empty_strided", C_OP, 1)
                sim.slice(MAIN, sim.cpu + 2000, dur, K.rt(hw, "Malloc"), C_RT, 2)
                sim.cpu = sim.cpu + dur + 4000 + inj.integers(3000, 9000, R)
        # 3 forward
        if sync_every_layer:
            t_f = sim.cpu.copy()
            sim.cpu = sim.cpu + 1000
            d0 = 2
            if compiled:  # a compiled model: the read-back breaks the graph, layer by layer,
                # but the frame still enters through Dynamo's cache and runs compiled pieces
                sim.cpu_op("TorchDynamo Cache Lookup", rng.integers(25_000, 70_000, R), 2)
                t_c, d0 = sim.cpu.copy(), 3
                sim.cpu = sim.cpu + 1000
            host_us = sync_host_ms * 1000 * rng.uniform(0.7, 1.3, L)
            # one chain per run of layers that attend alike (an interleaved job's local and
            # global layers), the MLP between runs
            i0 = 0
            for e, m in ((e, len(list(g))) for e, g in itertools.groupby(eager)):
                if i0:
                    sim.block(U_mlp, depth=d0)
                sync_chain(
                    sim, U_attn[e], U_mlp, m, d0, host_us[i0 : i0 + m],
                    op="aten::nonzero", inner="aten::count_nonzero", dims=[[t, 8]],
                )  # fmt: skip
                i0 += m
            sim.block(U_mlp_last, depth=d0)
            if compiled:
                sim.slice(MAIN, t_c, sim.cpu - t_c, "CompiledFunction", C_ANN, 2)
            outer = "Torch-Compiled Region: 0/0" if compiled else "DistributedDataParallel.forward"
            sim.slice(MAIN, t_f, sim.cpu - t_f, outer, C_ANN, 1)
            sim.cpu = sim.cpu + 2000
        elif compiled:
            t_reg = sim.cpu.copy()
            sim.cpu = sim.cpu + 1000
            sim.cpu_op("TorchDynamo Cache Lookup", rng.integers(25_000, 70_000, R), 2)
            if s in compile_steps:
                cl_id += 1
                comp_ns = int(max(1.5e9, comp_step_ms * 1e6 * rng.uniform(8, 20)))
                dur = (comp_ns * rng.lognormal(0, 0.03, R)).astype(np.int64)
                sim.slice(MAIN, sim.cpu, dur, "_compile.compile_inner (dynamo_timed)", C_ANN, 2)
                inner = (dur * rng.uniform(0.55, 0.8)).astype(np.int64)
                sim.slice(
                    MAIN,
                    sim.cpu + (dur - inner) // 2,
                    inner,
                    "call_user_compiler (dynamo_timed)",
                    C_ANN,
                    3,
                )
                sim.cpu = sim.cpu + dur + rng.integers(5000, 20000, R)
                seen[shapes[s]] = cl_id
                compile_idx += 1
            sim.block(U["fwd"], depth=2, ann="CompiledFunction")
            region = f"Torch-Compiled Region: 0/{seen.get(shapes[s], 0)}"
            sim.slice(MAIN, t_reg, sim.cpu - t_reg, region, C_ANN, 1)
            sim.cpu = sim.cpu + 2000
        else:
            sim.block(U["fwd"], depth=1, ann="DistributedDataParallel.forward")
        # 4 backward (+ bucketed all-reduce)
        sim.block(U["zero"], depth=1)
        sim.block(U["bwd"], depth=1, ann="## backward ##")
        # 5 optimizer waits for the last all-reduce on the GPU
        sim.gpu_scale = base_scale
        sim.block(U["opt"], depth=1, ann="Optimizer.step#AdamW.step", wait_nccl=True)
        # 6 the one intended read-back per step (loss for logging), and in half the jobs a count
        # of the non-padding labels for the tokens/s log line
        sim.sync_item(1)
        if p["loss_sync"]:
            sim.sync_item(1, op="aten::nonzero", inner="aten::count_nonzero", dims=[[t]])
        if alloc:
            for _ in range(max(2, n_alloc - 1)):
                dur = (alloc_ms * 6e5 * inj.lognormal(0, 0.35, R)).astype(np.int64)
                sim.slice(MAIN, sim.cpu, dur, K.rt(hw, "Free"), C_RT, 1)
                sim.cpu = sim.cpu + dur + inj.integers(3000, 9000, R)
        step_name = f"ProfilerStep#{p['first_step'] + s}"
        sim.slice(MAIN, step_start, sim.cpu - step_start, step_name, C_ANN, 0)
        sim.cpu = sim.cpu + rng.integers(8000, 20000, R)
    # the batches for the steps after the window: every batch the window's steps took freed a
    # prefetch slot, and a worker started the next batch then (a starved loader never stops), so
    # the workers keep fetching until the profiler stops, as they do in a real capture (they used
    # to fall silent once the window's own batches were in). Drawn from a stream of their own.
    tail = np.random.Generator(cast(np.random.PCG64, rng.bit_generator).jumped())
    for k in range(len(ready_at), len(consumed) + depth_ahead):
        schedule_fetch(k, tail, until=sim.cpu)
    p["layer_bytes"] = layer_params * gsize
    p["t_layer_us"] = t_layer
    return sim


def _h2d_rows(it: Interner, hw: Hardware, p: dict, seq: int) -> list[tuple]:
    b = UnitBuilder(it, hw)
    t = p["batch"] * seq
    for _ in range(2):
        b.memcpy(
            "aten::to",
            "aten::_to_copy",
            "Memcpy HtoD (Pinned -> Device)",
            t * 8,
            hw.pcie_gbps * 0.9,
            dims=[[p["batch"], seq]],
        )
    return b.rows


# ------------------------------------------------------------------------------------------------
# inference decode loop (one rank)
# ------------------------------------------------------------------------------------------------
def infer_params(rng: np.random.Generator, hw: Hardware, family: str = "decode") -> dict:
    """A decode server on one GPU: sizes from one distribution whatever the scenario. A lean
    loop pays a few µs of Python per op (a launch-bound one, see `inject`, tens of µs).

    `decode_compile` is the same server with the model under torch.compile (default mode: Triton
    kernels, no CUDA graphs). Its KV cache is a static tensor per length bucket, so most jobs see
    a few cache lengths in the window (requests of other lengths join the batch), new ones on a
    few steps; drawn on a side stream like a DDP job's sequence lengths, so the sizes above stay
    what the eager family draws. A job compiled for each length that arrives recompiles there
    (see `inject`); any other runs them through one graph compiled up front."""
    p: dict[str, Any] = {
        "world": 1,
        "layers": int(rng.integers(20, 65)),
        "hidden": int(rng.choice([5120, 6144, 8192])),
        "batch": int(rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256])),
        "steps": int(rng.integers(8, 12)),
        "cpu_us": float(rng.uniform(4, 8)),
        "first_step": int(rng.choice([2, 4, 10, 101, 550, 1009])),
        "compiled": family == "decode_compile",
        # the context each sequence attends over: at a large batch its KV cache reads rival
        # the weights' (a long-context server's step is slower for the same model)
        "ctx": int(rng.choice([512, 1024, 2048, 4096, 8192])),
        # the share of HBM bandwidth the job's memory-bound kernels reach, which differs from
        # one server's kernels and shapes to another's
        "hbm_eff": float(rng.uniform(0.5, 0.85)),
    }
    # as deep as the weights (16·d² bf16 parameters a layer) fit in 80 % of the GPU's memory,
    # and a KV cache (K and V, d/8 wide, per layer) that fits beside them in 90 %: a shorter
    # context, then a smaller batch, where it would not
    d = p["hidden"]
    layer_bytes = 32 * d**2
    p["layers"] = min(p["layers"], int(0.8 * hw.hbm_gb * 1e9 / layer_bytes))
    room = 0.9 * hw.hbm_gb * 1e9 - layer_bytes * p["layers"]
    kv = lambda: p["layers"] * p["batch"] * p["ctx"] * (d // 8) * 4  # noqa: E731
    while kv() > room and p["ctx"] > 512:
        p["ctx"] //= 2
    while kv() > room and p["batch"] > 1:
        p["batch"] //= 2
    if p["compiled"]:
        side = np.random.default_rng(_stream_key(rng))
        plan = _draw_lengths(side, p["steps"], _cache_length_factors(p["ctx"]))
        p["shape_f"], p["new_shape_steps"] = (
            plan if side.random() < _VARIABLE_SHARE else ([1.0] * p["steps"], [])
        )
        p["len_plan"] = plan
    return p


def _cache_bucket(ctx: int, factor: float) -> int:
    """The KV cache length a compiled decode server runs at: `ctx` × `factor`, down to its
    128-token bucket (the shape the compiled graph is specialised on)."""
    return int(ctx * factor) // 128 * 128


def _cache_length_factors(ctx: int) -> tuple[float, ...]:
    """The length factors a compiled decode server's KV cache takes: the usual ones where each
    lands in a 128-token bucket of its own (a length that shares a bucket with another, or with
    the base length, is the same shape and compiles nothing), else one to three buckets either
    side of the base."""
    buckets = {_cache_bucket(ctx, f) for f in _LENGTH_FACTORS} | {ctx}
    if len(buckets) == len(_LENGTH_FACTORS) + 1:
        return _LENGTH_FACTORS
    return tuple((ctx + 128 * k) / ctx for k in (-2, -1, 1, 2, 3))


def build_infer(
    slug: str,
    rng: np.random.Generator,
    hw: Hardware,
    it: Interner,
    p: dict,
    inj: np.random.Generator | None = None,
) -> Sim:
    inj = rng if inj is None else inj
    fixed = bool(p.get("fixed"))
    sim = Sim(1, hw, rng, it)
    d, bsz = p["hidden"], p["batch"]
    hbm = hw.hbm_tbps * 1e12 * p.get("hbm_eff", 0.75)
    tf = hw.bf16_tflops * 0.55
    cpu = p["cpu_us"]
    compiled = bool(p.get("compiled"))

    def lin(b: UnitBuilder, n_out: int, n_in: int, v: int) -> None:
        wbytes = n_out * n_in * 2
        us = max(wbytes / hbm, 2.0 * bsz * n_out * n_in / (tf * 1e12)) * 1e6 + 2.5
        b.k(
            "aten::mm" if compiled else "aten::linear",  # Inductor calls the library mm itself
            None if compiled else "aten::mm",
            K.gemm_name(hw, v) if bsz > 8 else _gemv(hw),
            us,
            cpu,
            dims=[[bsz, n_in], [n_in, n_out]],
            launch=b._gemm_launch if bsz > 8 else None,
        )

    ctx = p.get("ctx", 1024)
    att_us = bsz * ctx * (d // 8) * 2 * 2 / hbm * 1e6 + 4.0  # GQA: 8x fewer KV heads
    b = UnitBuilder(it, hw)
    if compiled:
        _decode_layers_compiled(b, p, hw, lin, att_us)
    else:
        b.k("aten::embedding", "aten::index_select", K.EMBED, 3.0, cpu)
        for _ in range(p["layers"]):
            b.k("vllm::rms_norm", None, K.RMSNORM, 2.0 + bsz * d * 4 / hbm * 1e6, cpu)
            lin(b, 3 * d, d, 0)
            b.k("vllm::rotary_embedding", None, K.ROTARY, 2.2, cpu)
            b.k(
                "aten::scaled_dot_product_attention",
                "aten::_scaled_dot_product_flash_attention",
                K.flash_names(hw)[0],
                att_us,
                cpu,
            )
            lin(b, d, d, 1)
            b.k("aten::add", None, K.ADD, 1.8, cpu)
            b.k("vllm::rms_norm", None, K.RMSNORM, 2.0 + bsz * d * 4 / hbm * 1e6, cpu)
            lin(b, 8 * d, d, 0)
            b.k("vllm::silu_and_mul", None, K.SILU_MUL, 2.0 + bsz * d * 16 / hbm * 1e6, cpu)
            lin(b, d, 4 * d, 1)
            b.k("aten::add", None, K.ADD, 1.8, cpu)
        b.k("vllm::rms_norm", None, K.RMSNORM, 2.5, cpu)
        lin(b, 32000, d, 2)
        b.k("aten::argmax", None, K.ARGMAX, 3.0 + bsz * 0.05, cpu)
    U = Units.build(b.rows)
    if p.get("host_ratio"):
        U = _launch_bound_host(U, p["host_ratio"], p["cpu_us"], hw)
    p["kernels_per_step"] = len(U)
    # units before the first layer's own (the eager embedding), and per layer
    lead = 0 if compiled else 1
    per_layer = (len(U) - 3 - lead) // p["layers"]
    h = UnitBuilder(it, hw)
    h.memcpy("aten::to", "aten::_to_copy", "Memcpy HtoD (Pinned -> Device)", bsz * 8,
             hw.pcie_gbps * 0.9, dims=[[bsz, 1]])  # fmt: skip
    U_in = Units.build(h.rows)
    # a per-layer read-back (expert routing counts via .item())
    sync = slug == "sync-stalls" and not fixed
    # the KV cache grows through cudaMalloc every step
    alloc = slug == "allocator-stalls" and not fixed
    sync_host_us = float(inj.uniform(150, 400))
    n_alloc = int(inj.integers(3, 6))
    alloc_ms = max(1.5, float(U.gpu_us.sum()) / 1000 * float(inj.uniform(0.04, 0.08)))
    bounds = [0, len(U)]
    if sync:  # the step's blocks: embedding + layer 0, one per layer, then the head
        bounds = sorted({0, *(lead + per_layer * (li + 1) for li in range(p["layers"])), len(U)})
    comp = None
    if compiled:
        comp = _decode_compile_plan(slug, p, U, att_us, inj, fixed)
    _decode_steps(sim, p, U, U_in, bounds, sync, sync_host_us, alloc, n_alloc, alloc_ms, comp)
    return sim


# Inductor's kernels for a decoder layer at decode (one token per sequence): the residual add
# fused into the RMSNorm that follows it (the first layer's with the embedding gather), rotary
# on q, rotary on k written into the KV cache, v written into it, SiLU × gate; matmuls and
# attention stay library calls. Identical code is one kernel, so the layers share these names.
DEC_TRITON = {
    "embed_norm": "triton_red_fused__to_copy_embedding_mean_mul_pow_rsqrt_0",
    "add_norm": "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1",
    "rope_q": "triton_poi_fused__to_copy_cat_clone_mul_stack_sub_2",
    "rope_k": "triton_poi_fused_cat_index_put_mul_stack_sub_3",
    "put_v": "triton_poi_fused_index_put_4",
    "silu": "triton_poi_fused_mul_silu_5",
    "argmax": "triton_red_fused_argmax_6",
}


# a launch-bound loop's host time per step against its GPU time: the GPU idles a third to a
# half of the step, as an eager decode loop of a mid-size model does without CUDA graphs
LAUNCH_BOUND_HOST_RATIO = (1.5, 2.05)
# the HBM efficiency a launch-bound loop's kernels reach (the family draws 0.5-0.85)
LAUNCH_BOUND_HBM_EFF = (0.74, 0.85)


def _launch_bound_host(U: Units, ratio: float, base_us: float, hw: Hardware) -> Units:
    """The step's ops with a launch-bound loop's framework overhead: each op's (a library
    call's companion kernels keep their half) scaled alike, so that the host's time per step
    (overhead, launch and bookkeeping) is `ratio` × the step's GPU time, and never under 20 µs
    for an op."""
    w = U.cpu_us / base_us
    fixed_us = len(U) * (hw.launch_us + 3.5)
    per = max(20.0, (ratio * float(U.gpu_us.sum()) - fixed_us) / float(w.sum()))
    return U.with_cpu(w * per)


def _decode_layers_compiled(b: UnitBuilder, p: dict, hw: Hardware, lin: Any, att_us: float) -> None:
    """The compiled decode step's units: per layer the Triton kernels of `DEC_TRITON` around the
    library matmuls and attention (11 per layer, as eager runs; the norm takes the residual add
    in, rotary and the cache writes come out of it). A Triton kernel's launch sits under the CPU
    event that Inductor's launcher records with the kernel's own name."""
    d, bsz, cpu = p["hidden"], p["batch"], p["cpu_us"]
    hbm = hw.hbm_tbps * 1e12 * p.get("hbm_eff", 0.75)
    T = DEC_TRITON
    norm_us = 2.0 + bsz * d * 4 / hbm * 1e6

    def tri(name: str, us: float, numel: int, red: bool = False) -> None:
        g = {"grid": (bsz, 1, 1), "block": (512, 1, 1)} if red else _ew(numel, True)
        b.k(name, None, name, us, cpu, **g)

    for li in range(p["layers"]):
        tri(T["embed_norm"] if li == 0 else T["add_norm"], norm_us + (1.0 if li else 2.0),
            bsz * d, red=True)  # fmt: skip
        lin(b, 3 * d, d, 0)
        tri(T["rope_q"], 2.0, bsz * d)
        tri(T["rope_k"], 2.2, bsz * d // 8)
        tri(T["put_v"], 1.8, bsz * d // 8)
        b.k(
            "aten::_scaled_dot_product_flash_attention",
            None,
            K.flash_names(hw)[0],
            att_us,
            cpu,
        )
        lin(b, d, d, 1)
        tri(T["add_norm"], norm_us + 1.0, bsz * d, red=True)
        lin(b, 8 * d, d, 0)
        tri(T["silu"], 2.0 + bsz * d * 16 / hbm * 1e6, bsz * 4 * d)
        lin(b, d, 4 * d, 1)
    tri(T["add_norm"], 3.0, bsz * d, red=True)
    lin(b, 32000, d, 2)
    tri(T["argmax"], 3.0 + bsz * 0.05, bsz * 32000, red=True)


def _fx_key(*parts: object) -> str:
    """An FX graph cache key as Inductor prints it ('f' and 51 base-32 characters), one per
    compiled graph: a hash of what the graph was specialised on."""
    h = hashlib.blake2b(repr(parts).encode(), digest_size=32).digest()
    return "f" + base64.b32encode(h).decode().lower()[:51]


def _decode_compile_plan(
    slug: str, p: dict, U: Units, att_us: float, inj: np.random.Generator, fixed: bool
) -> dict:
    """Per step of a compiled decode: the cache length, the GPU time factor it brings (attention
    reads the cache), the compiled graph it runs ('Torch-Compiled Region: 0/k' and its FX graph
    key) and, on a step that brings a length for the first time in a recompiling server, the
    compile's length. A server that does not recompile (and the fixed twin, compiled with the
    cache length dynamic) runs every step through the one graph compiled before the window."""
    S = p["steps"]
    shape_f = list(p.get("shape_f") or [1.0] * S)
    ctx0 = p.get("ctx", 1024)
    ctxs = [_cache_bucket(ctx0, f) for f in shape_f]
    gpu = float(U.gpu_us.sum())
    n_att = p["layers"]
    share = min(0.9, n_att * att_us / gpu) if gpu > 0 else 0.0
    factor = [1.0 + share * (c / ctx0 - 1.0) for c in ctxs]
    recompile = slug == "recompilation" and not fixed
    new_steps = {int(c) for c in p.get("new_shape_steps", [])} if recompile else set()
    graph_of = {ctx0: 0}
    region, key, comp_ns = [], [], []
    base = (p["layers"], p["hidden"], p["batch"])
    for s in range(S):
        if s in new_steps:
            graph_of[ctxs[s]] = len(graph_of)
            # a deeper model is a bigger graph: Inductor takes longer over it
            comp_ns.append(int(inj.uniform(1.5e9, 4.0e9) * max(1.0, p["layers"] / 32)))
        else:
            comp_ns.append(0)
        g = graph_of.get(ctxs[s], 0) if recompile else 0
        region.append(g)
        key.append(_fx_key(*base, ctxs[s] if g else ctx0 if recompile else "dynamic"))
    p["shapes"] = ctxs
    p["compile_steps"] = sorted(new_steps)
    return {"factor": factor, "region": region, "key": key, "comp_ns": comp_ns}


def _decode_steps(
    sim: Sim,
    p: dict,
    U: Units,
    U_in: Units,
    bounds: list[int],
    sync: bool,
    sync_host_us: float,
    alloc: bool,
    n_alloc: int,
    alloc_ms: float,
    comp: dict | None = None,
) -> None:
    """The decode loop, all steps at once. Each step (`ProfilerStep#n`): the token ids' buffer
    (`aten::empty_strided`) and copy to the device; with `alloc`, KV-cache growth through the
    allocator; `## decode ##`: the model's blocks (`bounds` cut the template `U` into them), each
    but the last followed by a read-back when `sync` (expert routing counts: `aten::nonzero` →
    DtoH copy → stream synchronize, then `sync_host_us` of host work on the result); the sampled
    token's `.item()`; the sampler's host work; with `alloc`, blocks freed. A compiled model
    (`comp`, see `_decode_compile_plan`) runs its blocks inside `Torch-Compiled Region: 0/k`:
    Dynamo's cache lookup, on a step that recompiles the compile itself, then Inductor's graph
    call (`## Call CompiledFxGraph <key> ##`) with the launches under it.

    Every random draw is made in bulk; the loop below only advances the CPU clock and the compute
    stream's free time through the steps, with the timing rules of `Sim.block`, `Sim.sync_item`,
    `Sim.cpu_op` and `Sim.slice`, and every event is recorded in bulk afterwards."""
    rng, it, hw, S = sim.rng, sim.it, sim.hw, p["steps"]
    nb = len(bounds) - 1
    ns = nb - 1 if sync else 0  # read-backs inside a step; column ns is the step's `.item()`
    scale0 = float(sim.gpu_scale[0])
    scale: float | np.ndarray = scale0
    if comp is not None:  # the cache length of each step: attention reads more or less of it
        scale = scale0 * np.asarray(comp["factor"], float)
    es_dur, es_gap = rng.integers(3000, 9000, S), rng.integers(1000, 3000, S)
    IN = draw_batch(sim, U_in, (S,), scale0)
    in_gap = rng.integers(2000, 6000, S)
    na = n_alloc if alloc else 0
    a_dur = (alloc_ms * 1e6 * rng.lognormal(0, 0.35, (S, na))).astype(np.int64)
    a_gap = rng.integers(3000, 9000, (S, na))
    SG = draw_segments(sim, U, (S,), bounds, scale)
    b_gap = rng.integers(2000, 6000, (S, nb))
    y_pre, y_L = rng.integers(3000, 8000, (S, ns + 1)), sim.launch_lat((S, ns + 1))
    y_kd, y_lag = rng.integers(1500, 2600, (S, ns + 1)), rng.integers(500, 1500, (S, ns + 1))
    y_post, y_gap = rng.integers(2000, 5000, (S, ns + 1)), rng.integers(2000, 5000, (S, ns + 1))
    sm_dur, sm_gap = rng.integers(40_000, 120_000, S), rng.integers(1000, 3000, S)
    nf = max(na - 1, 0)
    f_dur = (alloc_ms * 6e5 * rng.lognormal(0, 0.35, (S, nf))).astype(np.int64)
    f_gap = rng.integers(3000, 9000, (S, nf))
    st_gap = rng.integers(5000, 15000, S)
    sync_ns = int(hw.sync_us * 1000 * 0.6)
    host = int(sync_host_us * 1000)
    # a compiled model's per-step CPU work around its blocks (drawn last: an eager loop's draws
    # stay what they were)
    dd = 0  # how much deeper the model's ops sit
    if comp is not None:
        dd = 2
        lk_dur = rng.integers(25_000, 70_000, S)
        lk_gap = rng.integers(2000, 6000, S)
        c_ns = np.asarray(comp["comp_ns"], np.int64)
        c_dur = (c_ns * rng.lognormal(0, 0.03, S)).astype(np.int64)
        c_in = (c_dur * rng.uniform(0.55, 0.8, S)).astype(np.int64)
        c_gap = rng.integers(5000, 20000, S)
        c_pre = (lk_dur + lk_gap + np.where(c_ns > 0, c_dur + c_gap, 0) + 2000).tolist()
        t_reg, t_call, call_end = (np.zeros(S, np.int64) for _ in range(3))

    # the clocks, step by step (plain ints: one rank)
    es_g, sm, sg_ = (es_dur + es_gap).tolist(), (sm_dur + sm_gap).tolist(), st_gap.tolist()
    in_len, in_dmax, in_gtot = (IN.cpu_len + in_gap).tolist(), IN.dmax.tolist(), IN.gtot.tolist()
    a_step, f_step = (a_dur + 4000 + a_gap).tolist(), (f_dur + f_gap).tolist()
    b_len, b_dmax, b_gtot = (SG.cpu_len + b_gap).tolist(), SG.dmax.tolist(), SG.gtot.tolist()
    y_rdy, y_kd_ = (y_pre + (y_L * 6) // 10).tolist(), y_kd.tolist()
    y_sync, y_post_, y_g = (y_pre + y_L + y_lag).tolist(), y_post.tolist(), y_gap.tolist()
    t_step, t_in, f_in, t_dec, dec_end, t_samp, t_end = (np.zeros(S, np.int64) for _ in range(7))
    t_alloc, t_free = np.zeros((S, na), np.int64), np.zeros((S, nf), np.int64)
    t_blk, f_blk = np.zeros((S, nb), np.int64), np.zeros((S, nb), np.int64)
    y_s0, y_kst, y_ss, y_se = (np.zeros((S, ns + 1), np.int64) for _ in range(4))

    def read_back(s: int, j: int, cpu: int, free: int) -> tuple[int, int]:
        """`Sim.sync_item`: returns the CPU clock after it and the stream's free time."""
        kst = max(cpu + y_rdy[s][j], free)
        a = cpu + y_sync[s][j]
        e = max(max(a, kst + y_kd_[s][j]) + sync_ns, a + 2000)
        y_s0[s, j], y_kst[s, j], y_ss[s, j], y_se[s, j] = cpu, kst, a, e
        return e + y_post_[s][j] + (host if j < ns else 0) + y_g[s][j], kst + y_kd_[s][j] + 1000

    cpu, free = int(sim.cpu[0]), int(sim.free_c[0])
    for s in range(S):
        t_step[s] = cpu
        cpu += es_g[s]
        t_in[s], f_in[s] = cpu, free
        free = in_gtot[s] + max(free, cpu + in_dmax[s])
        cpu += in_len[s]
        for i, d in enumerate(a_step[s]):
            t_alloc[s, i] = cpu
            cpu += d
        t_dec[s] = cpu
        cpu += 1000
        if comp is not None:  # region, cache lookup (a compile), the graph call
            t_reg[s] = cpu
            cpu += c_pre[s]
            t_call[s] = cpu
            cpu += 1000
        for k in range(nb):
            t_blk[s, k], f_blk[s, k] = cpu, free
            free = b_gtot[s][k] + max(free, cpu + b_dmax[s][k])
            cpu += b_len[s][k]
            if k < ns:
                cpu, free = read_back(s, k, cpu, free)
        if comp is not None:
            call_end[s] = cpu + 500
            cpu += 2000
        dec_end[s] = cpu + 1000
        cpu, free = read_back(s, ns, cpu + 2000, free)
        t_samp[s] = cpu
        cpu += sm[s]
        for i, d in enumerate(f_step[s]):
            t_free[s, i] = cpu
            cpu += d
        t_end[s] = cpu
        cpu += sg_[s]

    # the events, in bulk
    rec, rk = sim.rec, sim.ranks
    sim.slice(MAIN, t_step, es_dur, "aten::empty_strided", C_OP, 1)
    # correlation ids in issue order, per step: the input copy, then the model's launches with
    # a read-back after each block but the last, then the step's `.item()`
    n_in, n = len(U_in), len(U)
    per = n_in + n + ns + 1
    base = sim.corr[0] + per * np.arange(S)[:, None]
    emit_batch(rec, IN, rk, t_in, f_in, base[:, 0], 1)
    u_corr = base + n_in + 1 + np.arange(n) + SG.seg
    fwd = U.ocat == C_OP
    nfw = int(fwd.sum())
    seq = np.where(fwd, sim.seq[0] + nfw * np.arange(S)[:, None] + np.cumsum(fwd), 0)
    emit_segments(rec, SG, rk, t_blk, f_blk, u_corr, 2 + dd, seq)
    cut = np.asarray(bounds[1 : ns + 1], np.int64)
    y_corr = np.concatenate([base + n_in + cut + np.arange(1, ns + 1), base + per], axis=1)
    # inside a compiled graph the read-back is Inductor's fallback to aten::nonzero, whose CUDA
    # kernel counts with cub and copies the count back within the op (no aten::count_nonzero
    # beneath it): as deep as the graph's own launches
    nz_inner = None if comp is not None else "aten::count_nonzero"
    kinds = [(slice(0, ns), 2 + dd, "aten::nonzero", nz_inner, [[p["batch"], 8]]),
             (slice(ns, ns + 1), 1, "aten::item", "aten::_local_scalar_dense", None)]  # fmt: skip
    for c, depth, op, inner, dims in kinds:
        if c.stop > c.start:
            s0, kst, ss, se = y_s0[:, c], y_kst[:, c], y_ss[:, c], y_se[:, c]
            emit_sync_items(sim, rk, s0, s0 + y_pre[:, c], y_L[:, c], kst, y_kd[:, c], ss, se,
                            se + y_post[:, c], y_corr[:, c], depth, op, inner, dims)  # fmt: skip
    sim.slice(MAIN, t_dec, dec_end - t_dec, "## decode ##", C_ANN, 1)
    if comp is not None:
        reg_end = call_end + 1000
        t_lk = t_reg + 1000
        for k in sorted(set(comp["region"])):
            m = np.asarray(comp["region"]) == k
            rec.add(rk, MAIN, t_reg[m], (reg_end - t_reg)[m],
                    it.n(f"Torch-Compiled Region: 0/{k}"), C_ANN, 2)  # fmt: skip
        sim.slice(MAIN, t_lk, lk_dur, "TorchDynamo Cache Lookup", C_OP, 3)
        on = c_ns > 0
        if on.any():
            t_c = (t_lk + lk_dur + lk_gap)[on]
            rec.add(rk, MAIN, t_c, c_dur[on], it.n("_compile.compile_inner (dynamo_timed)"),
                    C_ANN, 3)  # fmt: skip
            rec.add(rk, MAIN, t_c + (c_dur[on] - c_in[on]) // 2, c_in[on],
                    it.n("call_user_compiler (dynamo_timed)"), C_ANN, 4)  # fmt: skip
        keys = np.asarray([it.n(f"## Call CompiledFxGraph {k} ##") for k in comp["key"]])
        rec.add(rk, MAIN, t_call, call_end - t_call, keys, C_ANN, 3)
    sim.slice(MAIN, t_samp, sm_dur, "sampler.update_state", C_ANN, 1)
    if alloc:
        sim.slice(MAIN, t_alloc, a_dur + 4000, "aten::empty_strided", C_OP, 1)
        sim.slice(MAIN, t_alloc + 2000, a_dur, K.rt(hw, "Malloc"), C_RT, 2)
        sim.slice(MAIN, t_free, f_dur, K.rt(hw, "Free"), C_RT, 1)
    steps = np.asarray([it.n(f"ProfilerStep#{p['first_step'] + s}") for s in range(S)])
    rec.add(rk, MAIN, t_step, t_end - t_step, steps, C_ANN, 0)
    sim.corr = sim.corr + per * S
    sim.seq = sim.seq + nfw * S
    sim.cpu, sim.free_c = np.array([cpu], np.int64), np.array([free], np.int64)


def _gemv(hw: Hardware) -> str:
    if hw.vendor == "amd":
        return "void wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 1>(int, int, int, __hip_bfloat16 const*, __hip_bfloat16 const*, __hip_bfloat16*, int, int)"  # noqa: E501
    return "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float>, float, float)"  # noqa: E501


# ------------------------------------------------------------------------------------------------
# pipeline-parallel training (1F1B), ranks = stages
# ------------------------------------------------------------------------------------------------
PP_SIGMA, PP_UNIT_SIGMA = 0.06, 0.2


def pp_params(rng: np.random.Generator, hw: Hardware, family: str = "pp") -> dict:
    """1F1B pipeline training, one stage per rank. Stage count, width, microbatch count and
    length, depth and step count come from one distribution; a healthy schedule has
    m ≫ p (bubble (p−1)/(m+p−1) near 10 %); a bubbly one (see `inject`) runs m ≤ p microbatches of
    the same size. Any scenario the family hosts (loader starvation, a slow stage, in-step
    read-backs, allocator churn) is injected into this same draw."""
    stages = 6 if rng.random() < 0.3 else 4
    p = {
        "world": stages,
        "stages": stages,
        "micro": int(rng.integers(25, 28) if stages == 4 else rng.integers(37, 40)),
        "hidden": int(rng.choice([4096, 5120, 6144])),  # redrawn below, on the side stream
        # one sequence per microbatch (Megatron's usual micro-batch size 1), redrawn below: a
        # stage's elementwise kernels run tens of µs, not hundreds, as in real stage traces;
        # shorter microbatches would leave the P2P hops and the step's fixed work a visible
        # share of the idle time
        "mb_tokens": 2048,
        "layers_per_stage": 1,
        # a profiler window of a few long steps (each runs every microbatch through every
        # stage): four, two on a deep pipeline, whose steps hold twice as many stage-microbatch
        # passes; either way the gzipped download stays under 5 MB
        "steps": 2 if stages == 6 else 4,
        "mfu_eff": float(rng.uniform(0.55, 0.7)),
        "first_step": int(rng.choice([2, 4, 5, 10, 101, 550, 1009, 2001])),
        "workers": int(rng.choice([4, 6, 8])),
    }
    # an interleaved schedule (Megatron's virtual pipeline: two one-layer model chunks per
    # stage) fills the pipeline with a few microbatches, three per stage, where plain 1F1B needs
    # six or seven for the same thin bubble, (p−1)/(v·m+p−1) ≈ 11-12 %. Drawn on a side stream,
    # so a plain job's other draws stay what they were.
    side = np.random.default_rng(_stream_key(rng))
    if side.random() < 0.35:
        p["chunks"], p["micro"], p["layers_per_stage"] = 2, 3 * stages, 2
    # width and microbatch length vary as much across pipeline jobs as a microbatch count does
    # across schedules (a stage's time per microbatch spans about 20x): one sequence of 2k, 4k
    # or 8k tokens per microbatch, hidden 4096-8192. Drawn on the side stream after the
    # schedule, whatever the scenario, so a step's length per microbatch says little by itself
    p["hidden"] = int(side.choice([4096, 5120, 6144, 8192]))
    p["mb_tokens"] = int(side.choice([2048, 4096, 8192], p=[0.45, 0.4, 0.15]))
    return p


# ---- a pipeline stage's kernels: one dense decoder layer (RMSNorm, rotary, grouped-query
# attention, SwiGLU MLP) as a Megatron-style stage runs it per microbatch, apex's fused norm
# and rotary kernels among PyTorch's own
_BF16 = "c10::BFloat16"
PP_RMS_FWD = f"void cuApplyRMSNorm<{_BF16}, float, {_BF16}>({_BF16}*, float*, {_BF16} const*, int, int, float, {_BF16} const*)"  # noqa: E501
PP_RMS_BWD = f"void cuComputeGradInput<{_BF16}, float, {_BF16}>({_BF16} const*, {_BF16} const*, int, int, float const*, float const*, float, {_BF16} const*, {_BF16} const*, {_BF16}*, bool)"  # noqa: E501
PP_RMS_PART = f"void cuComputePartGradGammaBeta<{_BF16}, float, float>({_BF16} const*, {_BF16} const*, int, int, float const*, float const*, float, float*, float*, bool)"  # noqa: E501
PP_RMS_GAMMA = f"void cuComputeGradGammaBeta<float, {_BF16}>(float const*, float const*, int, int, int, {_BF16}*, {_BF16}*, bool)"  # noqa: E501
PP_ROPE_FWD = f"void (anonymous namespace)::fused_rope_forward<{_BF16}, float>(int, int, int, int, int, int, int, int, int, int, int, {_BF16} const*, float const*, {_BF16}*)"  # noqa: E501
PP_ROPE_BWD = f"void (anonymous namespace)::fused_rope_backward<{_BF16}, float>(int, int, int, int, int, int, int, int, int, int, int, {_BF16} const*, float const*, {_BF16}*)"  # noqa: E501
PP_SILU = f"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{{lambda()#1}}::operator()() const::{{lambda()#4}}::operator()() const::{{lambda({_BF16})#1}}, at::detail::Array<char*, 2> >(int, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{{lambda()#1}}::operator()() const::{{lambda()#4}}::operator()() const::{{lambda({_BF16})#1}}, at::detail::Array<char*, 2>)"  # noqa: E501
PP_SILU_BWD = f"void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{{lambda()#1}}::operator()() const::{{lambda()#4}}::operator()() const::{{lambda({_BF16}, {_BF16})#1}}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::silu_backward_kernel(at::TensorIteratorBase&)::{{lambda()#1}}::operator()() const::{{lambda()#4}}::operator()() const::{{lambda({_BF16}, {_BF16})#1}}, at::detail::Array<char*, 3>)"  # noqa: E501
PP_MUL = f"void at::native::vectorized_elementwise_kernel<4, at::native::binary_internal::MulFunctor<{_BF16}>, at::detail::Array<char*, 3> >(int, at::native::binary_internal::MulFunctor<{_BF16}>, at::detail::Array<char*, 3>)"  # noqa: E501
PP_ZERO = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"  # noqa: E501
PP_FOREACH_ZERO = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::ZeroFunctor<float, 1, 1, 0>>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::ZeroFunctor<float, 1, 1, 0>)"  # noqa: E501
PP_FOREACH_COPY = f"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::CopyFunctor<{_BF16}, 2, 1, 1>, at::native::(anonymous namespace)::Copy<{_BF16}, float> >(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::CopyFunctor<{_BF16}, 2, 1, 1>, at::native::(anonymous namespace)::Copy<{_BF16}, float>)"  # noqa: E501
PP_COS = "void at::native::vectorized_elementwise_kernel<4, at::native::cos_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::cos_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)"  # noqa: E501
PP_SIN = "void at::native::vectorized_elementwise_kernel<4, at::native::sin_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::sin_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)"  # noqa: E501
PP_ARANGE = "void (anonymous namespace)::elementwise_kernel_with_index<int, at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(long)#1}>(int, at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(long)#1}, function_traits<at::native::arange_cuda_out(c10::Scalar const&, c10::Scalar const&, c10::Scalar const&, at::Tensor&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(long)#1}>::result_type*)"  # noqa: E501
PP_CAST_LONG = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#4}::operator()() const::{lambda(long)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)"  # noqa: E501
PP_GEMMK1 = "void gemmk1_kernel<int, float, 256, 5, false, false, false, false, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float, 0>(cublasGemmk1Params<float, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float, biasType<cublasGemvTensorStridedBatched<float>::value_type, float>::type>)"  # noqa: E501
PP_ADD_INT = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<int>, at::detail::Array<char*, 2> >(int, at::native::CUDAFunctorOnSelf_add<int>, at::detail::Array<char*, 2>)"  # noqa: E501
PP_FILL_INT = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<int>, at::detail::Array<char*, 1>)"  # noqa: E501
PP_CAT = "void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 3, 64, 64>(at::native::(anonymous namespace)::OpaqueType<4u>*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<at::native::(anonymous namespace)::OpaqueType<4u>, unsigned int, 64, 64>, at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)"  # noqa: E501
# per-kernel duration spread by size: the big GEMMs and attention repeat within a few per cent
# (the schedule's timing rests on them), small elementwise and reduction kernels vary more
# (launch-bound, cache-dependent), as a real trace's short kernels do
PP_SIGMA_SMALL, PP_SIGMA_MID = 0.4, 0.28


def _pp_ffn(d: int) -> int:
    """SwiGLU width: 8/3 of the hidden size, rounded to 256 (4096 -> 11008)."""
    return round(8 * d / 3 / 256) * 256


def _pp_layer(it: Interner, hw: Hardware, p: dict) -> tuple[UnitBuilder, UnitBuilder, int]:
    """Forward and backward templates of one stage's layer per microbatch, and the number of
    forward units in the attention half (the sync-stalls read-back sits after them)."""
    d, t = p["hidden"], p["mb_tokens"]
    f = _pp_ffn(d)
    kv = d // 8  # grouped-query attention: 8 query heads per key/value head
    tf = hw.bf16_tflops * p["mfu_eff"]
    hbm = hw.hbm_tbps * 1e12 * 0.82
    ew = lambda nbytes: nbytes / hbm * 1e6 + 2.5  # noqa: E731
    act = t * d * 2
    dims = [[t, d]]
    rope_dims = [[t, d // 128, 128], [t, 1, 1, 128]]
    fb, bb = UnitBuilder(it, hw), UnitBuilder(it, hw)
    # forward: the rotary tables for this microbatch's positions (inverse frequencies times
    # positions, duplicated, cos and sin, scaled, cast to bf16: tiny kernels), then the layer
    tab = t * 128
    fb.k("aten::arange", None, PP_ARANGE, ew(t * 8), 8, dims=[[]], itype="long", **_ew(t))
    fb.k("aten::to", "aten::_to_copy", PP_CAST_LONG, ew(t * 12), 8, dims=[[1, 1, t]],
         itype="long int", **_ew(t))  # fmt: skip
    if hw.vendor == "amd":
        fb.gemm("aten::matmul", "aten::bmm", 64, t, 1, tf, 2, 12)
    else:  # an inner dimension of 1: cuBLAS runs its k = 1 kernel, not a tiled GEMM
        fb.k("aten::matmul", "aten::bmm", PP_GEMMK1, ew(tab * 4), 12, dims=[[1, 64, 1], [1, 1, t]],
             itype="float", grid=(max(1, t // 256), 1, 1), block=(256, 1, 1))  # fmt: skip
    fb.k("aten::cat", None, PP_CAT, ew(tab * 8), 9, dims=[[t, 64], [t, 64]], itype="float",
         **_ew(tab))  # fmt: skip
    for op, kn in (("aten::cos", PP_COS), ("aten::sin", PP_SIN)):
        fb.k(op, None, kn, ew(tab * 8), 7, dims=[[1, t, 128]], itype="float", **_ew(tab))
        fb.k("aten::mul", None, K.MUL_F32, ew(tab * 8), 7, dims=[[1, t, 128], []],
             itype="float", **_ew(tab))  # fmt: skip
        fb.k("aten::to", "aten::_to_copy", K.CAST, ew(tab * 6), 8, dims=[[1, t, 128]],
             itype="float", **_ew(tab))  # fmt: skip
    fb.k("FusedRMSNormAffineFunction", "aten::empty_like", PP_RMS_FWD, ew(2 * act), 12,
         dims=[*dims, [d]], grid=(t, 1, 1), block=(128, 1, 1))  # fmt: skip
    fb.gemm("aten::linear", "aten::mm", t, d + 2 * kv, d, tf, 0)
    fb.k("FusedRoPEFunc", "aten::empty_like", PP_ROPE_FWD, ew(2 * act), 10, dims=rope_dims,
         grid=(t, d // 128, 1), block=(128, 1, 1))  # fmt: skip
    fb.k("FusedRoPEFunc", "aten::empty_like", PP_ROPE_FWD, ew(2 * t * kv * 2), 10,
         dims=[[t, kv // 128, 128], [t, 1, 1, 128]], grid=(t, kv // 128, 1),
         block=(128, 1, 1))  # fmt: skip
    fb.k("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
         K.flash_names(hw)[0], 2.0 * t * 2048 * d / (tf * 0.8e12) * 1e6 + 5,
         grid=(t // 128, d // 128, 1), block=(128, 1, 1))  # fmt: skip
    fb.gemm("aten::linear", "aten::mm", t, d, d, tf, 1)
    fb.k("aten::add", None, K.ADD, ew(3 * act), dims=[[t, d], [t, d]], **_ew(t * d))
    n_att = len(fb.rows)
    fb.k("FusedRMSNormAffineFunction", "aten::empty_like", PP_RMS_FWD, ew(2 * act), 12,
         dims=[*dims, [d]], grid=(t, 1, 1), block=(128, 1, 1))  # fmt: skip
    fb.gemm("aten::linear", "aten::mm", t, 2 * f, d, tf, 0)
    fb.k("aten::silu", None, PP_SILU, ew(2 * t * f * 2), dims=[[t, f]], **_ew(t * f))
    fb.k("aten::mul", None, PP_MUL, ew(3 * t * f * 2), dims=[[t, f], [t, f]], **_ew(t * f))
    fb.gemm("aten::linear", "aten::mm", t, d, f, tf, 1)
    fb.k("aten::add", None, K.ADD, ew(3 * act), dims=[[t, d], [t, d]], **_ew(t * d))
    # the schedule's token count for the step's loss scaling (Megatron-core's forward_step:
    # `total_num_tokens += num_tokens`, a one-element int add on every stage), once per
    # microbatch. It sits in this layer template, which the pipeline draws exactly once per
    # (step, stage, microbatch): `layers_per_stage` (1) only sizes the parameters and the
    # optimizer, and never repeats the template. If a stage ever emits several layers, move
    # this add out of the template into a per-microbatch unit; moving it now would change the
    # template's unit count and so every random draw after it (the trace would change).
    fb.k("aten::add_", None, PP_ADD_INT, 1.6, 7, dims=[[], []], itype="int", grid=(1, 1, 1),
         block=(64, 1, 1))  # fmt: skip
    # backward, in reverse: the MLP, its norm, attention, rotary, QKV, the input norm
    ev = K.BWD
    bb.gemm(ev + "MmBackward0", "aten::mm", t, f, d, tf, 1, 20)
    bb.gemm(ev + "MmBackward0", "aten::mm", d, f, t, tf, 2, 18)
    for _ in range(2):
        bb.k(ev + "MulBackward0", "aten::mul", PP_MUL, ew(3 * t * f * 2), 10,
             dims=[[t, f], [t, f]], **_ew(t * f))  # fmt: skip
    bb.k(ev + "SiluBackward0", "aten::silu_backward", PP_SILU_BWD, ew(3 * t * f * 2), 10,
         dims=[[t, f], [t, f]], **_ew(t * f))  # fmt: skip
    bb.gemm(ev + "MmBackward0", "aten::mm", t, d, 2 * f, tf, 1, 20)
    bb.gemm(ev + "MmBackward0", "aten::mm", 2 * f, d, t, tf, 2, 18)

    def norm_bwd() -> None:
        nb = ev + "FusedRMSNormAffineFunctionBackward"
        bb.k(nb, None, PP_RMS_BWD, ew(3 * act), 14, dims=dims, grid=(t, 1, 1), block=(128, 1, 1))
        bb.k(nb, None, PP_RMS_PART, ew(act) * 0.6, 6, grid=(d // 32, 16, 1), block=(32, 4, 1))
        bb.k(nb, None, PP_RMS_GAMMA, 2.4 + d * 64 / hbm * 1e6, 6, grid=(d // 32, 1, 1),
             block=(32, 8, 1))  # fmt: skip
        bb.k(ev + "torch::autograd::AccumulateGrad", "aten::add_", K.ACC_GRAD,
             2.2 + d * 12 / hbm * 1e6, 6, dims=[[d], [d]], itype="float")  # fmt: skip
        bb.k(ev + "AddBackward0", "aten::add", K.ADD, ew(3 * act), 8, dims=[[t, d], [t, d]],
             **_ew(t * d))  # fmt: skip

    norm_bwd()
    bb.gemm(ev + "MmBackward0", "aten::mm", t, d, d, tf, 1, 20)
    bb.gemm(ev + "MmBackward0", "aten::mm", d, d, t, tf, 2, 18)
    # the backward's fp32 dQ accumulator starts from zeros
    bb.k(ev + "ScaledDotProductFlashAttentionBackward0", "aten::zeros", PP_ZERO, ew(t * d * 4),
         6, dims=[[1, t, d // 128, 128]], itype="float", **_ew(t * d))  # fmt: skip
    bb.k(ev + "ScaledDotProductFlashAttentionBackward0",
         "aten::_scaled_dot_product_flash_attention_backward", K.flash_names(hw)[1],
         5.0 * t * 2048 * d / (tf * 0.7e12) * 1e6 + 8, 24, grid=(t // 128, d // 128, 1),
         block=(256, 1, 1))  # fmt: skip
    # grouped-query attention: flash's backward writes dK and dV for every query head, then
    # sums each group of 8 into its key/value head (`at::sum_out` in mha_bwd)
    for _ in range(2):
        bb.k(ev + "ScaledDotProductFlashAttentionBackward0", "aten::sum", K.BIAS_GRAD,
             ew(t * d * 2 + t * kv * 2), 8, dims=[[t, kv // 128, 8, 128]],
             **_ew(t * kv))  # fmt: skip
    bb.k(ev + "FusedRoPEFuncBackward", None, PP_ROPE_BWD, ew(2 * act), 10, dims=rope_dims,
         grid=(t, d // 128, 1), block=(128, 1, 1))  # fmt: skip
    bb.k(ev + "FusedRoPEFuncBackward", None, PP_ROPE_BWD, ew(2 * t * kv * 2), 10,
         grid=(t, kv // 128, 1), block=(128, 1, 1))  # fmt: skip
    bb.gemm(ev + "MmBackward0", "aten::mm", t, d, d + 2 * kv, tf, 1, 20)
    bb.gemm(ev + "MmBackward0", "aten::mm", d + 2 * kv, d, t, tf, 2, 18)
    norm_bwd()
    return fb, bb, n_att


def _pp_schedule(
    P: int, m: int, v: int
) -> tuple[list[list[tuple[bool, int]]], list[list[tuple[bool, int, int] | None]], list, list]:
    """Each stage's 1F1B order over its units (forward?, unit), with v model chunks per stage
    (Megatron's interleaved schedule; v = 1 is plain 1F1B): unit u = chunk × m + microbatch.
    Also, per op, what it waits for ((forward?, stage, unit) done, or None) and whether it
    receives and sends: a forward of chunk c comes from the previous stage (from the last stage's
    chunk c − 1 on the first stage), a backward from the next stage (on the last stage, from its
    own forward of the last chunk or the first stage's chunk c + 1)."""
    n = v * m
    # the k-th forward and backward of every stage: microbatches go through the chunks in
    # groups of p (of m, when m < p or does not divide by p); with v = 1 simply k
    g = P if m % P == 0 else m
    fw = [((k // g) % v) * m + (k // (g * v)) * g + k % g for k in range(n)]
    bw = [(v - 1 - (k // g) % v) * m + (k // (g * v)) * g + k % g for k in range(n)]
    orders: list[list[tuple[bool, int]]] = []
    for s in range(P):
        # forwards before the first backward: plain 1F1B fills the stages below; interleaved
        # fills them twice over plus every other chunk's group
        warm = min(P - s - 1 if v == 1 else (P - s - 1) * 2 + (v - 1) * g, n)
        seq = [(True, fw[k]) for k in range(warm)]
        f, bk = warm, 0
        while bk < n:
            if f < n:
                seq.append((True, fw[f]))
                f += 1
            seq.append((False, bw[bk]))
            bk += 1
        orders.append(seq)
    deps: list[list[tuple[bool, int, int] | None]] = []
    recv: list[list[bool]] = []
    send: list[list[bool]] = []
    for s in range(P):
        d_s, r_s, s_s = [], [], []
        for fwd, u in orders[s]:
            c = u // m
            first, last = s == 0 and c == 0, s == P - 1 and c == v - 1
            if fwd:
                d = None if first else (True, s - 1, u) if s > 0 else (True, P - 1, u - m)
                r_s.append(not first)
                s_s.append(not last)
            else:
                d = (True, s, u) if last else (False, s + 1, u) if s < P - 1 else (False, 0, u + m)
                r_s.append(not last)
                s_s.append(not first)
            d_s.append(d)
        deps.append(d_s)
        recv.append(r_s)
        send.append(s_s)
    return orders, deps, recv, send


def _pp_peers(
    orders: list, deps: list, recv: list[list[bool]], send: list[list[bool]]
) -> list[list[tuple[int, int] | None]]:
    """For every op that receives, the (stage, op index) whose send it pairs with: the op its
    dependency names (the sender's forward or backward of the same unit)."""
    j_of = [{(f, u): j for j, (f, u) in enumerate(o)} for o in orders]
    peer: list[list[tuple[int, int] | None]] = []
    for s, d_s in enumerate(deps):
        row: list[tuple[int, int] | None] = []
        for j, d in enumerate(d_s):
            if recv[s][j]:
                assert d is not None and send[d[1]][j_of[d[1]][d[0], d[2]]]
                row.append((d[1], j_of[d[1]][d[0], d[2]]))
            else:
                row.append(None)
        peer.append(row)
    return peer


def pp_stage_flow(
    peer: list[list[tuple[int, int] | None]],
    send: list[list[bool]],
    compute: Callable[[int, int, int, int], tuple[int, int]],
    cpu: dict[str, list[list[int]]],
    xfer: list[list[int]],
    free_c: list[int],
    free_n: list[int],
) -> dict[str, Any]:
    """One step of a pipeline schedule on the GPUs, its point-to-point hops as NCCL runs them.

    A send and its matching receive rendezvous: neither kernel can finish before both have
    started, so both end at max(send start, receive start) + the hop's transfer time (`xfer`,
    per sending op). Each stage's NCCL kernels run one at a time on one stream, in the order
    its CPU posts them, and every stage posts its hops in one global order (no two stages wait
    on each other in opposite orders: no deadlock). That order is built hop by hop: of the hops
    whose send is the sender's next one and whose receive is the receiver's next one, the one
    that can start first. A stage posts its sends in schedule order; a receive goes out in its
    place before its op, or earlier, with a send still waiting on its stage (as Megatron's
    interleaved schedule posts the next receives with the current sends): then it is launched
    right before that send, which moves later on the CPU by the receive's length, as does
    everything up to the receive's own op.

    `compute(s, j, f0, shift)` runs op j's block on stage s once its stream is free at `f0`
    and its CPU is `shift` behind the static layout, and returns (its end, CPU time it added).
    `cpu` holds the static layout per op (P × J): where the receive's and the send's
    annotations start (`rc0`, `sc0`), their lengths (`r_len`), and how far into them the
    launch is ready (`rdel`, `sdel`). Returns per op (P × J lists): the compute stream's free
    time before the block (`F0`), the receive and send kernels' (start, end) (`RK`, `SK`),
    the CPU shift before the block and the time it added (`SH`, `EX`), where the receive and
    send annotations start (`RPOS`, `SPOS`), the op whose send a receive went out before
    (`AT`, -1 in its own place) and its place among the receives there (`ORD`); and the
    streams' free times after the step."""
    rc0, sc0, rdel, sdel, r_len = (cpu[k] for k in ("rc0", "sc0", "rdel", "sdel", "r_len"))
    P = len(send)
    J = len(send[0]) if P else 0
    # each stage's point-to-point posts in schedule order: (send?, op)
    slots = [
        [(k, j) for j in range(J) for k in (0, 1) if (peer[s][j] is not None, send[s][j])[k]]
        for s in range(P)
    ]
    to: list[list[tuple[int, int]]] = [[(-1, -1)] * J for _ in range(P)]  # send -> receive
    for s in range(P):
        for j in range(J):
            pr = peer[s][j]
            if pr is not None:
                to[pr[0]][pr[1]] = (s, j)
    posted = [[False] * len(sl) for sl in slots]
    rslots = [[x for x, (k, _j) in enumerate(sl) if k == 0] for sl in slots]
    rptr = [0] * P  # each stage's first unposted receive (posted in schedule order)
    head = [0] * P
    F0, SH, EX, RPOS, SPOS, ORD = ([[0] * J for _ in range(P)] for _ in range(6))
    AT = [[-1] * J for _ in range(P)]
    RK = [[(0, 0)] * J for _ in range(P)]
    SK = [[(0, 0)] * J for _ in range(P)]
    r_end, cend = [[-1] * J for _ in range(P)], [[0] * J for _ in range(P)]
    s_more = [[0] * J for _ in range(P)]  # CPU time the receives posted before send j add
    absorb = [[0] * J for _ in range(P)]  # an early receive's own slot, left empty
    cur, shift = [0] * P, [0] * P
    start_c = list(free_c)

    def run_to(s: int, j: int) -> None:
        """Compute stage s's blocks up to op j (their receives have all ended)."""
        while cur[s] <= j:
            k = cur[s]
            if peer[s][k] is not None and r_end[s][k] < 0:  # pragma: no cover - by order
                raise RuntimeError("pipeline block computed before its receive")
            shift[s] -= absorb[s][k]
            f0 = max(free_c[s], r_end[s][k])
            F0[s][k], SH[s][k] = f0, shift[s]
            end, ex = compute(s, k, f0, shift[s])
            EX[s][k], cend[s][k] = ex, end
            shift[s] += ex
            free_c[s] = end
            cur[s] += 1

    def ready(s: int) -> list[int]:
        """The slots stage s can post next: its first unposted one and, when that is a send,
        its first unposted receive."""
        h, sl = head[s], slots[s]
        if h >= len(sl):
            return []
        if sl[h][0] == 0 or rptr[s] >= len(rslots[s]):
            return [h]
        return [h, rslots[s][rptr[s]]]

    def send_pos(s: int, j: int) -> int:
        run_to(s, j)
        return sc0[s][j] + SH[s][j] + EX[s][j] + s_more[s][j]

    def recv_at(r: int, jr: int, early: bool) -> tuple[int, int]:
        """(annotation start, kernel start) of op jr's receive on stage r, posted now."""
        if early:  # before the stage's next send, after that op's block
            je = slots[r][head[r]][1]
            pos = send_pos(r, je)
        else:
            je = jr - 1
            run_to(r, je)
            pos = rc0[r][jr] + shift[r]
        ev = cend[r][je] if je >= 0 else start_c[r]  # the stream waits for the block before
        return pos, max(ev, pos + rdel[r][jr], free_n[r])

    left = sum(map(len, slots)) // 2
    while left:
        best: tuple | None = None
        for s in range(P):
            for h in ready(s):
                kind, j = slots[s][h]
                if kind != 1:
                    continue
                r, jr = to[s][j]
                hr = next((x for x in ready(r) if slots[r][x] == (0, jr)), None)
                if hr is None:
                    continue
                sp = send_pos(s, j)
                ss = max(cend[s][j], sp + sdel[s][j], free_n[s])
                rp, rs = recv_at(r, jr, hr != head[r])
                t = max(ss, rs)
                if best is None or t < best[0]:
                    best = (t, s, h, j, r, hr, jr, sp, ss, rp, rs)
        if best is None:  # pragma: no cover - the posting order cannot deadlock
            raise RuntimeError("pipeline point-to-point stalled")
        t, s, h, j, r, hr, jr, sp, ss, rp, rs = best
        end = t + xfer[s][j]
        SK[s][j], RK[r][jr], SPOS[s][j], RPOS[r][jr] = (ss, end), (rs, end), sp, rp
        r_end[r][jr] = end
        free_n[s] = free_n[r] = end + 1500
        if hr != head[r]:  # launched before the stage's next send: that send and every op up
            je = slots[r][head[r]][1]  # to this receive's own move later by its length
            ORD[r][jr] = sum(1 for k in range(J) if AT[r][k] == je)  # receives already there
            AT[r][jr] = je
            s_more[r][je] += r_len[r][jr]
            shift[r] += r_len[r][jr]
            absorb[r][jr] = r_len[r][jr]
        rptr[r] += 1
        for st, x in ((s, h), (r, hr)):
            posted[st][x] = True
            while head[st] < len(slots[st]) and posted[st][head[st]]:
                head[st] += 1
        left -= 1
    for s in range(P):
        run_to(s, J - 1)
    return {"F0": F0, "RK": RK, "SK": SK, "SH": SH, "EX": EX, "RPOS": RPOS, "SPOS": SPOS,
            "AT": AT, "ORD": ORD, "free_c": free_c, "free_n": free_n}  # fmt: skip


def _pp_block(d: dict, s: int, j: int, f0: int, sh: int) -> tuple[int, int]:
    """Op j's block on stage s of one step (`d`: the step's draws, per op or per unit), its
    stream free from f0 and its CPU `sh` behind the static layout: (its end, CPU time it
    added). With in-step read-backs a forward runs its attention, then the read-back: the host
    blocks until the stream drains, routes on the CPU, and only then launches the MLP."""
    fwd, i = d["orders"][s][j]
    if not (d["sync"] and fwd):
        return d["gt"][s][j] + max(f0, d["dm"][s][j] + sh), 0
    t0a = d["bt0"][s][j] + sh
    end_a = d["a_gt"][s][i] + max(f0, t0a + d["a_dm"][s][i])
    s0 = t0a + d["a_ln"][s][i]
    L = d["y_L"][s][i]
    ls = s0 + d["y_pre"][s][i]
    kst = max(ls + L * 6 // 10, end_a)
    kd = d["y_kd"][s][i]
    ss = ls + L + d["y_lag"][s][i]
    se = max(max(ss, kst + kd) + d["sync_ns"], ss + 2000)
    t0b = se + d["y_post"][s][i] + d["y_host"][s][i]
    fb0 = kst + kd + 1000
    d["Y"][s][i] = [s0, ls, kst, ss, se, t0b, fb0]
    return d["b_gt"][s][i] + max(fb0, t0b + d["b_dm"][s][i]), t0b - s0


def _pp_sigma(u: Units) -> np.ndarray:
    """Per-unit duration spread: steady big kernels, noisier small ones."""
    g = u.gpu_us
    return np.where(g >= 80, PP_SIGMA, np.where(g >= 12, PP_SIGMA_MID, PP_SIGMA_SMALL))


def build_pp(
    slug: str,
    rng: np.random.Generator,
    hw: Hardware,
    it: Interner,
    p: dict,
    inj: np.random.Generator | None = None,
) -> Sim:
    inj = rng if inj is None else inj
    fixed = bool(p.get("fixed"))
    # the schedule's unit is one model chunk of one microbatch on one stage: with an interleaved
    # schedule (v chunks per stage) a step runs v × m of them, without one m
    P, V, M_real = p["stages"], int(p.get("chunks", 1)), p["micro"]
    M = V * M_real
    sim = Sim(P, hw, rng, it)
    d, t = p["hidden"], p["mb_tokens"]
    fb, bb, n_att = _pp_layer(it, hw, p)
    UF, UB = Units.build(fb.rows), Units.build(bb.rows)
    # sync stalls: a router read-back (`.nonzero()` on the expert mask) between the attention
    # and the MLP of every forward, on every stage; the host routes on the CPU, then launches
    # the MLP into a drained queue
    sync = slug == "sync-stalls" and not fixed
    UFa = Units.build(fb.rows[:n_att])
    UFb = Units.build(fb.rows[n_att:])
    act_nel = t * d
    p2p_us = act_nel * 2 / (hw.achievable_busbw_gbps * 1e9 * 0.9) * 1e6 + 12.0
    pp_group = ("1", "pp_group")
    send_aid = it.a(K.comm_args("send", act_nel, 2, "BFloat16", pg=pp_group))
    recv_aid = it.a(K.comm_args("recv", act_nel, 2, "BFloat16", pg=pp_group))
    # the loss each stage takes from the last one at the end of a step (see the step loop)
    bc_aid = it.a(K.comm_args("broadcast", 1, P, "Float"))
    bc_name = it.n(K.nccl_name("broadcast", "Float"))
    launch = it.n(K.rt(hw, "LaunchKernel"))
    rcp = it.n("record_param_comms")
    bc_ann, stream_sync = it.n("nccl:broadcast"), it.n(K.rt(hw, "StreamSynchronize"))
    p["p2p_us"] = p2p_us
    p2p_ns = int(p2p_us * 1000)
    S, J = p["steps"], 2 * M
    # 1F1B order per stage: op j of stage s runs forward or backward of unit mb[s, j]; what each
    # op waits for (dep_of), and whether it receives or sends activations or gradients
    orders, dep_of, recv_l, send_l = _pp_schedule(P, M_real, V)
    is_f = np.array([[fw for fw, _ in o] for o in orders])  # (P, J)
    mb = np.array([[i for _, i in o] for o in orders])
    st_ = np.arange(P)[:, None]
    has_recv, has_send = np.array(recv_l), np.array(send_l)
    j_of = np.zeros((2, P, M), np.int64)  # [forward?, stage, microbatch] -> op index
    j_of[is_f.astype(int), np.broadcast_to(st_, (P, J)), mb] = np.arange(J)[None, :]
    jF, jB = j_of[1], j_of[0]

    # every random draw of the run up front: blocks per (step, stage, microbatch), p2p per op;
    # each stage's GPU runs at its own speed (a throttled one, the straggler, slower)
    scale = 1.0 + rng.normal(0, 0.004, P)
    if slug == "straggler":
        slow = int(inj.integers(0, P))
        slow_by = float(inj.uniform(0.15, 0.35))
        if not fixed:
            scale[slow] = 1.0 + slow_by
    sim.gpu_scale = scale
    sc3 = scale[None, :, None]
    # a kernel's time follows its shape: spread across the template's units, a few per cent
    # between repeats of one (microbatches of one size run alike; stages stay balanced)
    u_sd = PP_UNIT_SIGMA
    uf_f, uf_b = (rng.lognormal(-u_sd * u_sd / 2, u_sd, len(u)) for u in (UF, UB))
    sg_f = _pp_sigma(UF)
    if sync:
        FA = draw_batch(sim, UFa, (S, P, M), sc3, sigma=sg_f[:n_att], unit_f=uf_f[:n_att])
        FB = draw_batch(sim, UFb, (S, P, M), sc3, sigma=sg_f[n_att:], unit_f=uf_f[n_att:])
    else:
        FB = draw_batch(sim, UF, (S, P, M), sc3, sigma=sg_f, unit_f=uf_f)
    BB = draw_batch(sim, UB, (S, P, M), sc3, sigma=_pp_sigma(UB), unit_f=uf_b)

    def per_op(a_f: np.ndarray, a_b: np.ndarray) -> np.ndarray:  # (S, P, M) x2 -> (S, P, J)
        return np.where(is_f, a_f[:, st_, mb], a_b[:, st_, mb])

    blk_len = per_op(FB.cpu_len, BB.cpu_len)
    dmax, gtot = per_op(FB.dmax, BB.dmax), per_op(FB.gtot, BB.gtot)
    if sync:
        # the read-back's own draws, per forward (step, stage, microbatch)
        sh3 = (S, P, M)
        sy_gap, sy_pre = rng.integers(2000, 6000, sh3), rng.integers(3000, 8000, sh3)
        sy_L, sy_kd = sim.launch_lat(sh3), rng.integers(1500, 2600, sh3)
        sy_lag, sy_post = rng.integers(500, 1500, sh3), rng.integers(2000, 5000, sh3)
        sy_host = (float(inj.uniform(0.2, 0.4)) * float(np.median(FA.gtot + FB.gtot))
                   * rng.uniform(0.7, 1.3, sh3)).astype(np.int64)  # fmt: skip
        sync_ns = int(hw.sync_us * 1000 * 0.6)
        # the CPU time of a forward without its read-back: both halves back to back
        a_len = FA.cpu_len + sy_gap
        blk_len = per_op(a_len + FB.cpu_len, BB.cpu_len)
        sy_s0, sy_ls, sy_kst, sy_ss, sy_se = (np.zeros(sh3, np.int64) for _ in range(5))
        fb_t0, fb_f0 = np.zeros(sh3, np.int64), np.zeros(sh3, np.int64)
    L_r, L_s = sim.launch_lat((S, P, J)), sim.launch_lat((S, P, J))
    # each hop's transfer time: the link's rate, a few per cent apart from hop to hop, 1 on
    # average (a lognormal of mean 1: mu = -sigma²/2), from a side stream so the schedule's
    # other draws stay put
    x_sd = 0.06
    xfer = np.random.default_rng(_stream_key(rng)).lognormal(-x_sd * x_sd / 2, x_sd, (S, P, J))
    x_p = np.maximum(xfer * p2p_ns, 1500).astype(np.int64)  # per sending op
    r_len = np.where(has_recv, 16_000 + L_r, 0)  # annotation 8 + L + 6 µs, then 2 µs
    b_len = 2000 + blk_len + rng.integers(2000, 6000, (S, P, J))
    s_len = np.where(has_send, 16_000 + L_s, 0)
    op_len = r_len + b_len + s_len
    op_off = np.cumsum(op_len, axis=-1) - op_len  # CPU never waits inside the schedule
    n_fwd_u = len(UF) + (1 if sync else 0)  # the read-back's copy takes a correlation
    n_corr = has_recv + np.where(is_f, n_fwd_u, len(UB)) + has_send
    corr_off = np.cumsum(n_corr, axis=-1) - n_corr
    hs = has_send.tolist()
    c0_all = np.zeros((S, P, J), np.int64)
    corr_all = np.zeros((S, P, J), np.int64)
    f0_all = np.zeros((S, P, J), np.int64)
    ex_all = np.zeros((S, P, J), np.int64)  # CPU time a forward's read-back added to its block
    rk_all = np.zeros((S, P, J, 2), np.int64)  # recv kernel start/end
    sk_all = np.zeros((S, P, J, 2), np.int64)  # send kernel start/end
    # where each receive's and send's annotation starts on the CPU; a receive posted early:
    # the op whose send it went out before (-1: in its own place) and its place there
    rpos_all, spos_all, ord_all = (np.zeros((S, P, J), np.int64) for _ in range(3))
    at_all = np.full((S, P, J), -1, np.int64)
    peer = _pp_peers(orders, dep_of, recv_l, send_l)

    # the step's end: gradient clipping, the fused AdamW over the stage's fp32 master weights,
    # their bf16 copies for the next forward, and the gradients zeroed
    n_par = (d * (d + d // 4) + d * d + 3 * d * _pp_ffn(d) + 2 * d) * p["layers_per_stage"]
    hbm_s = hw.hbm_tbps * 0.8e12
    adam = UnitBuilder(it, hw)
    adam.clip_grad_norm(9 * p["layers_per_stage"])
    adam.k("aten::_fused_adamw_", None, K.ADAM, n_par * 16 / hbm_s * 1e6, 22, itype="float")
    adam.k("aten::_foreach_copy_", None, PP_FOREACH_COPY, n_par * 6 / hbm_s * 1e6 + 3, 14)
    adam.k("aten::_foreach_zero_", None, PP_FOREACH_ZERO, n_par * 4 / hbm_s * 1e6 + 3, 12,
           itype="float")  # fmt: skip
    U_adam = Units.build(adam.rows)
    step_names = [it.n(f"ProfilerStep#{p['first_step'] + k}") for k in range(S)]
    starve = slug == "input-starvation" and not fixed
    alloc = slug == "allocator-stalls" and not fixed
    h2d = UnitBuilder(it, hw)
    # the schedule's token counter for the step (`torch.zeros([], dtype=torch.int)` on device)
    h2d.k("aten::zeros", "aten::zero_", PP_FILL_INT, 1.5, 8, dims=[[]], itype="int",
          grid=(1, 1, 1), block=(64, 1, 1))  # fmt: skip
    for _ in range(M_real):  # each microbatch's token ids and labels, moved at the step's start
        for _ in range(2):
            h2d.memcpy("aten::to", "aten::_to_copy", "Memcpy HtoD (Pinned -> Device)",
                       t * 8, hw.pcie_gbps * 0.9, dims=[[1, t]])  # fmt: skip
    U_in = Units.build(h2d.rows)
    # the step's input copies and optimizer block, drawn for every (step, stage) at once and
    # recorded in bulk after the loop (their times follow the same recurrence as `Sim.block`)
    sc2 = scale[None, :]
    B_in = draw_batch(sim, U_in, (S, P), sc2)
    B_ad = draw_batch(sim, U_adam, (S, P), sc2)
    pad_in, pad_ad = rng.integers(2000, 6000, (2, S, P))
    in_t0, in_f0, in_c0 = (np.zeros((S, P), np.int64) for _ in range(3))
    it_pre, it_kd = rng.integers(3000, 8000, (S, P)), rng.integers(1500, 2600, (S, P))
    it_L, it_lag = sim.launch_lat((S, P)), rng.integers(500, 1500, (S, P))
    it_post, it_pad = rng.integers(2000, 5000, (S, P)), rng.integers(2000, 5000, (S, P))
    it_sync = int(hw.sync_us * 1000 * 0.6)
    it_rows = np.zeros((S, 6, P), np.int64)
    ad_t0, ad_f0, ad_c0 = (np.zeros((S, P), np.int64) for _ in range(3))

    def bulk_block(B: Any, k: int, t0: np.ndarray, T0, F0, C0) -> np.ndarray:
        """One step's instance of a drawn block at CPU time t0: record where it sits, advance
        the stream and the correlation ids, return the CPU time its last launch ends."""
        T0[k], F0[k], C0[k] = t0, sim.free_c, sim.corr
        sim.corr = sim.corr + len(B.u)
        sim.free_c = B.gtot[k] + np.maximum(sim.free_c, t0 + B.cumD[k][:, -1])
        return t0 + B.cpu_len[k]

    alloc_frac = float(inj.uniform(0.03, 0.06))
    n_alloc = int(inj.integers(3, 6))
    # the profiler counts steps on each rank, so each stage's window opens at its own step
    # boundary: the last stage leaves every step's loss broadcast first (see below), so its
    # window opens before the others', by the drain of the step before (each earlier stage's
    # last backward, and the gradient's hop to it), and its first step starts with that wait
    lead = int(gtot[0][: P - 1, -1].sum()) + (p2p_ns + 30_000) * (P - 1)
    for arr in (sim.cpu, sim.free_c, sim.free_n, sim.nccl_end):
        arr[: P - 1] += lead
    for step in range(S):
        t_step = sim.cpu.copy()
        # the batch: the loader's __next__ on the main thread (long when the loader starves)
        sim.cpu = sim.cpu + 1000
        # the schedule's length: a stage's GPU work stretched by the warm-up and drain
        est = float(gtot[step].sum(axis=1).max()) * (M + P - 1) / M
        alloc_ms = max(2.5, est / 1e6 * alloc_frac)
        wait = (
            np.full(P, est * rng.uniform(0.35, 1.1), np.int64)
            if starve
            else rng.integers(120_000, 400_000, P)
        )
        fetch = (wait + est) * (0.9 if starve else 0.5)
        sim.slice(WORKER0, sim.cpu + wait - fetch.astype(np.int64), fetch.astype(np.int64),
                  "DataLoader worker: fetch batch", C_ANN, 0)  # fmt: skip
        sim.cpu_op(LOADER, wait, 1, C_ANN)
        sim.cpu_op("aten::empty_strided", rng.integers(3000, 9000, P), 1)
        # the microbatches' token ids (and labels) to the device
        sim.cpu = bulk_block(B_in, step, sim.cpu, in_t0, in_f0, in_c0) + pad_in[step]
        if alloc:
            for _ in range(n_alloc):
                dur = (alloc_ms * 1e6 * rng.lognormal(0, 0.35, P)).astype(np.int64)
                sim.slice(MAIN, sim.cpu, dur + 4000, "aten::empty_strided", C_OP, 1)
                sim.slice(MAIN, sim.cpu + 2000, dur, K.rt(hw, "Malloc"), C_RT, 2)
                sim.cpu = sim.cpu + dur + 4000 + rng.integers(3000, 9000, P)
        c0 = (sim.cpu + 5000)[:, None] + op_off[step]  # CPU start of every op
        blk_t0 = c0 + r_len[step] + 1000
        c0_all[step] = c0
        corr_all[step] = sim.corr[:, None] + corr_off
        sim.corr = sim.corr + n_corr.sum(axis=1)
        # the GPU side: the schedule's blocks and its hops, as NCCL pairs them (scalars only)
        d = {"dm": (blk_t0 + dmax[step]).tolist(), "gt": gtot[step].tolist(), "sync": sync,
             "orders": orders}  # fmt: skip
        if sync:
            d |= {k: v[step].tolist() for k, v in (("a_dm", FA.dmax), ("a_gt", FA.gtot),
                  ("a_ln", a_len), ("y_pre", sy_pre), ("y_L", sy_L), ("y_kd", sy_kd),
                  ("y_lag", sy_lag), ("y_post", sy_post), ("y_host", sy_host),
                  ("b_dm", FB.dmax), ("b_gt", FB.gtot))}  # fmt: skip
            d |= {"bt0": blk_t0.tolist(), "sync_ns": sync_ns,
                  "Y": [[[0] * 7 for _ in range(M)] for _ in range(P)]}  # fmt: skip
        block = functools.partial(_pp_block, d)
        lay = {"rc0": c0, "sc0": blk_t0 - 1000 + b_len[step], "rdel": 6000 + L_r[step] // 2,
               "sdel": 6000 + L_s[step] // 2, "r_len": r_len[step]}  # fmt: skip
        lay_l = {k: v.tolist() for k, v in lay.items()}
        fl = pp_stage_flow(peer, hs, block, lay_l, x_p[step].tolist(), sim.free_c.tolist(),
                           sim.free_n.tolist())  # fmt: skip
        f0_all[step] = fl["F0"]
        rk_all[step] = fl["RK"]
        sk_all[step] = fl["SK"]
        for arr, k in ((rpos_all, "RPOS"), (spos_all, "SPOS"), (at_all, "AT"), (ord_all, "ORD")):
            arr[step] = fl[k]
        free_c, free_n, SH, EX = fl["free_c"], fl["free_n"], fl["SH"], fl["EX"]
        SHa, EXa = np.array(SH, np.int64), np.array(EX, np.int64)
        c0_all[step] = c0 + SHa
        ex_all[step] = EXa
        if sync:
            Ya = np.array(d["Y"], np.int64)  # (P, M, 7)
            for arr, col in ((sy_s0, 0), (sy_ls, 1), (sy_kst, 2), (sy_ss, 3), (sy_se, 4),
                             (fb_t0, 5), (fb_f0, 6)):  # fmt: skip
                arr[step] = Ya[:, :, col]
        sim.cpu = c0[:, -1] + SHa[:, -1] + EXa[:, -1] + op_len[step][:, -1]
        sim.free_c = np.array(free_c, np.int64)
        sim.free_n = np.array(free_n, np.int64)
        # optimizer + the step's read-back, then a barrier-like alignment of step starts
        sim.cpu = bulk_block(B_ad, step, sim.cpu + 1000, ad_t0, ad_f0, ad_c0) + 1000
        sim.cpu = sim.cpu + pad_ad[step]
        # the step's loss read-back (`.item()`): a tiny copy, then the host waits for the stream
        s0 = sim.cpu
        ls = s0 + it_pre[step]
        kst = np.maximum(ls + (it_L[step] * 6) // 10, sim.free_c)
        sim.free_c = kst + it_kd[step] + 1000
        ss = ls + it_L[step] + it_lag[step]
        se = np.maximum(np.maximum(ss, kst + it_kd[step]) + it_sync, ss + 2000)
        it_rows[step] = (s0, ls, kst, ss, se, sim.corr + 1)
        sim.corr = sim.corr + 1
        sim.cpu = se + it_post[step] + it_pad[step]
        if alloc:
            for _ in range(n_alloc - 1):
                dur = (alloc_ms * 6e5 * rng.lognormal(0, 0.35, P)).astype(np.int64)
                sim.slice(MAIN, sim.cpu, dur, K.rt(hw, "Free"), C_RT, 1)
                sim.cpu = sim.cpu + dur + rng.integers(3000, 9000, P)
        # every stage then takes the loss from the last one (a broadcast of one float, so each
        # can log it) and waits for it on the host. A ring broadcast passes the float on from
        # the root (the last stage) to stage 0, then 1, 2 …: the root's kernel is done once it
        # has sent, and each other stage's once every stage before it on the ring has joined.
        # Stage 0 runs the step's last backward, so it usually joins last and the stages after
        # it wait, visibly, in the broadcast's kernel until it comes; the last stage, done
        # first, goes on to the next step and waits there, in its first receive.
        w0 = sim.cpu + 1000
        lch = w0 + 6000
        lch_d = rng.integers(5000, 9000, P)
        ks = np.maximum(lch + lch_d + rng.integers(3000, 6000, P), sim.free_n)
        ke = ks + rng.integers(8000, 14_000, P)
        hop = rng.integers(2000, 6000, P)
        prev = int(ke[P - 1])  # the root: done once it has sent
        for s_ in range(P - 1):  # then along the ring, from stage 0: one hop after the one before
            prev = ke[s_] = max(int(ke[s_]), prev + int(hop[s_]))
        bc_corr = sim.corr + 1
        sim.corr = sim.corr + 1
        sim.free_n = ke
        sy0 = lch + lch_d + 2000
        sy1 = ke + rng.integers(3000, 6000, P)
        w1 = sy1 + 2000
        sim.rec.add(sim.ranks, MAIN, w0, w1 - w0, bc_ann, C_ANN, 1)
        sim.rec.add(sim.ranks, MAIN, w0 + 2000, lch + lch_d + 1000 - (w0 + 2000), rcp, C_OP, 2,
                    0, bc_aid)  # fmt: skip
        sim.rec.add(sim.ranks, MAIN, lch, lch_d, launch, C_RT, 3, bc_corr)
        sim.rec.add(sim.ranks, NCCL, ks, ke - ks, bc_name, C_KERN, 0, bc_corr, bc_aid)
        sim.rec.add(sim.ranks, MAIN, sy0, sy1 - sy0, stream_sync, C_RT, 2)
        t_end = w1 + rng.integers(10_000, 30_000, P)
        sim.rec.add(sim.ranks, MAIN, t_step, t_end - 5000 - t_step, step_names[step], C_ANN, 0)
        sim.cpu = t_end

    # ---- every event of the schedule, in bulk
    rec = sim.rec
    rk2 = np.broadcast_to(np.arange(P)[None, :], (S, P))
    emit_batch(rec, B_in, rk2, in_t0, in_f0, in_c0, 1)
    emit_batch(rec, B_ad, rk2, ad_t0, ad_f0, ad_c0, 2)
    i0, ils, ikst, iss, ise, icorr = (it_rows[:, k] for k in range(6))
    iend = ise + it_post
    rec.add(rk2, MAIN, i0, iend - i0, it.n("aten::item"), C_OP, 1)
    rec.add(rk2, MAIN, i0 + 1000, iend - i0 - 2000, it.n("aten::_local_scalar_dense"), C_OP, 2)
    rec.add(rk2, MAIN, ils, it_L, it.n(K.rt(hw, "MemcpyAsync")), C_RT, 3, icorr)
    rec.add(rk2, COMPUTE, ikst, it_kd, it.n("Memcpy DtoH (Device -> Pageable)"), C_MEMCPY, 0,
            icorr, it.a({"bytes": 4, "memory bandwidth (GB/s)": 0.002}))  # fmt: skip
    rec.add(rk2, MAIN, iss, ise - iss, it.n(K.rt(hw, "StreamSynchronize")), C_RT, 3)
    ann_end = ad_t0 + B_ad.cpu_len + 1000
    rec.add(rk2, MAIN, ad_t0 - 1000, ann_end - (ad_t0 - 1000), it.n("Optimizer.step#AdamW.step"),
            C_ANN, 1)  # fmt: skip
    rk3 = np.broadcast_to(st_[None], (S, P, J))
    blk_t0 = c0_all + r_len + 1000
    # correlation ids in launch order, per op: its receive (when posted in its own place), its
    # block, the receives posted early before its send, its send
    n_u = np.where(is_f, n_fwd_u, len(UB))
    moved = at_all >= 0
    nat = has_recv & ~moved
    n_st = np.zeros((S, P, J), np.int64)
    sI, pI, _jI = np.nonzero(moved)
    np.add.at(n_st, (sI, pI, at_all[moved]), 1)
    cnt = nat + n_u + n_st + has_send
    base = corr_all[..., :1] + np.cumsum(cnt, axis=-1) - cnt
    blk_corr = base + nat
    recv_corr = base + 1
    at0 = np.maximum(at_all, 0)
    at_base = np.take_along_axis(blk_corr + n_u, at0, axis=-1)
    recv_corr = np.where(moved, at_base + 1 + ord_all, recv_corr)
    send_corr = base + cnt
    # sequence numbers: microbatch i's forward ops, and the backward nodes that link to them
    # (the autograd thread's `fwdbwd` flows back to the forward op of the same microbatch)
    n_fw = int((UF.ocat == C_OP).sum())
    seq0 = np.broadcast_to(
        (np.arange(S)[:, None, None] * M + np.arange(M)[None, None, :]) * n_fw, (S, P, M)
    )
    gF, gB = (slice(None), st_, jF), (slice(None), st_, jB)  # (S, P, M) views of per-op arrays
    if sync:
        na = len(UFa)
        emit_batch(rec, FA, st_[None], blk_t0[gF], f0_all[gF], blk_corr[gF], 2, seq0=seq0)
        emit_batch(rec, FB, st_[None], fb_t0, fb_f0, blk_corr[gF] + na + 1, 2,
                   seq0=seq0 + int((UFa.ocat == C_OP).sum()))  # fmt: skip
        emit_sync_items(sim, st_[None], sy_s0, sy_ls, sy_L, sy_kst, sy_kd, sy_ss, sy_se,
                        sy_se + sy_post, blk_corr[gF] + na + 1, 2, "aten::nonzero",
                        "aten::count_nonzero", dims=[[t, 8]])  # fmt: skip
    else:
        emit_batch(rec, FB, st_[None], blk_t0[gF], f0_all[gF], blk_corr[gF], 2, seq0=seq0)
    emit_batch(rec, BB, st_[None], blk_t0[gB], f0_all[gB], blk_corr[gB], 2, seq0=seq0, fwd_n=n_fw)
    ann_f = np.full(M, it.n("## forward ##"))
    ann_b = np.full(M, it.n("## backward ##"))
    rec.add(rk3, MAIN, blk_t0 - 1000, blk_len + ex_all + 2000,
            np.where(is_f, ann_f[mb], ann_b[mb]), C_ANN, 1)  # fmt: skip
    sr_name = it.n(K.nccl_name("send", "BFloat16"))
    hr3 = np.broadcast_to(has_recv, (S, P, J))
    hs3 = np.broadcast_to(has_send, (S, P, J))
    for m3, cc, L, kk, corr, ann, aid in (
        (hr3, rpos_all, L_r, rk_all, recv_corr, "nccl:recv", recv_aid),
        (hs3, spos_all, L_s, sk_all, send_corr, "nccl:send", send_aid),
    ):  # fmt: skip
        r, c, lat, k, co = rk3[m3], cc[m3], L[m3], kk[m3], corr[m3]
        dur = 14_000 + lat
        rec.add(r, MAIN, c, dur, it.n(ann), C_ANN, 1)
        rec.add(r, MAIN, c + 2000, dur - 4000, rcp, C_OP, 2, 0, aid)
        rec.add(r, MAIN, c + 6000, lat, launch, C_RT, 3, co)
        rec.add(r, NCCL, k[:, 0], k[:, 1] - k[:, 0], sr_name, C_KERN, 0, co, aid)
    return sim


_ = (C_OP, COMPUTE)
