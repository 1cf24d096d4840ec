"""Scenarios, the measurement and fix catalogues, and the framing texts."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import kernels as K


@dataclass(frozen=True)
class Signature:
    """What in a trace is this scenario's story, and nothing else.

    `names`: event names whose presence or count is the signature (a name also covers the
    names it opens with a suffix: "Torch-Compiled Region: 0/" every compile id,
    "_compile.compile_inner" its " (dynamo_timed)" form, never "aten::mul" "aten::mul_");
    `categories`: event categories whose counts are signature (may be empty); `per`: an event
    name whose number per step is the signature (the scenario's cause is how many of them a step
    holds: every per-step count and the step time are then read per one of them); `note`: the
    pattern a reader looks for. Every other name, argument, dtype, thread, count, rank count or
    size is drawn from the same distributions in every scenario of a workload family."""

    names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    per: str = ""
    note: str = ""


@dataclass(frozen=True, slots=True)
class Scenario:
    slug: str
    title: str
    twin: str | None
    weight: int
    summary: str
    signature: Signature = field(default_factory=Signature)


_S = [
    (
        "exposed-allreduce",
        "Unoverlapped all-reduce",
        None,
        1,
        "Gradient all-reduce runs after backward instead of under it; "
        "every rank idles while it runs.",
    ),
    (
        "input-starvation",
        "Input / dataloader starvation",
        None,
        1,
        "Every step begins with the GPU waiting for the next batch from too few loader workers.",
    ),
    (
        "launch-bound",
        "Launch-bound inference",
        None,
        1,
        "Tiny kernels; the CPU spends longer launching each one than the GPU spends running it.",
    ),
    (
        "straggler",
        "Straggler rank",
        None,
        1,
        "One rank computes slower; the others sit inside their collectives waiting for it.",
    ),
    (
        "memory-bound-kernel",
        "Memory-bound dominant kernel",
        None,
        1,
        "A chain of elementwise kernels over a huge tensor dominates GPU time at HBM speed.",
    ),
    (
        "sync-stalls",
        "Host–device sync stalls",
        None,
        1,
        "Read-backs inside the step drain the GPU queue; the GPU idles while the CPU refills it.",
    ),
    (
        "pipeline-bubbles",
        "Pipeline-parallel bubbles",
        None,
        1,
        "Too few microbatches for the number of stages: warm-up and drain idle every stage.",
    ),
    (
        "allocator-stalls",
        "Caching-allocator stalls",
        None,
        1,
        "Device malloc/free calls in steady state stall the CPU and leave the GPU idle.",
    ),
    (
        "bandwidth-bound-collective",
        "Genuinely bandwidth-bound collective",
        "straggler",
        1,
        "The all-reduce moves its bytes at the ceiling of the link its ring runs on, alike on "
        "every rank, and outlasts backward; no rank is late.",
    ),
    (
        "recompilation",
        "Recompilation gaps",
        "input-starvation",
        1,
        "Steps that bring a new input shape stall for seconds in the compiler; "
        "the others are fine.",
    ),
    (
        "healthy",
        "Healthy trace",
        None,
        2,
        "GPU busy, communication hidden, no stalls: nothing to fix.",
    ),
]
SIGNATURES: dict[str, Signature] = {
    "exposed-allreduce": Signature(
        note="all-reduce kernels start only after the last backward kernel; the compute stream "
        "idles under them on every rank alike"
    ),
    "input-starvation": Signature(
        # the loader's own rows: a starved loader's workers never stop (a fetch in flight when
        # the window opens, back to back after it, one cut when it closes), where a loader that
        # keeps up starts one short fetch per step; how many fetch slices a step holds follows
        # from that, so their count is signature too
        names=("DataLoader worker: fetch batch", "collate_fn"),
        note="every step opens with a long DataLoader __next__ on the main thread while every "
        "GPU stream idles; the loader's workers fetch back to back",
    ),
    "launch-bound": Signature(
        note="launch calls take longer than the kernels they launch; the stream shows short "
        "kernels separated by gaps, every step"
    ),
    "straggler": Signature(
        note="one rank's compute kernels run longer; the other ranks' NCCL kernels stretch "
        "waiting for it"
    ),
    "memory-bound-kernel": Signature(
        # the unfused chain over the score tensor (its ops, their backward and their kernels):
        # healthy jobs with unfused attention run it too, on sequences short enough not to matter
        names=(
            "aten::matmul",
            "aten::bmm",
            "autograd::engine::evaluate_function: BmmBackward0",
            "aten::mul",
            "aten::masked_fill",
            "aten::softmax",
            "aten::_softmax",
            "aten::dropout",
            "aten::native_dropout",
            "autograd::engine::evaluate_function: MulBackward0",
            "autograd::engine::evaluate_function: SoftmaxBackward0",
            "autograd::engine::evaluate_function: NativeDropoutBackward0",
            # the backward nodes' own ops
            "aten::_softmax_backward_data",
            "aten::masked_fill_",
            "aten::native_dropout_backward",
            # the same backward nodes as the autograd thread names them
            "BmmBackward0",
            "MulBackward0",
            "SoftmaxBackward0",
            "NativeDropoutBackward0",
            *(
                fn(k)
                for k in (K.MUL, K.MASKED_FILL, K.SOFTMAX, K.SOFTMAX_BWD, K.DROPOUT, K.MASKED_SCALE)
                for fn in (str, K.as_fp32)  # bf16 scores, or scores upcast to fp32
            ),
        ),
        note="an elementwise chain over the attention score tensor is the hottest kernel family "
        "(>= half the GPU time) at near-HBM bandwidth",
    ),
    "sync-stalls": Signature(
        # the read-backs themselves: their ops and their device-to-host copies (host-to-device
        # input copies, which every trace has, stay counted)
        names=("aten::nonzero", "aten::count_nonzero", "Memcpy DtoH (Device -> Pageable)"),
        note="DtoH read-backs with a stream synchronize inside every layer; the GPU drains and "
        "idles after each",
    ),
    "pipeline-bubbles": Signature(
        # the cause is the microbatch count: m ≤ p microbatches per step where a healthy
        # schedule has m ≫ p (with an interleaved schedule of v chunks per stage, v·m forward
        # blocks per step: 2p where a healthy one runs 6p). A reader confirms the bubble by
        # counting them (forward blocks per step on a stage) against the stages, so that count
        # is signature; and since every
        # kernel, launch, op and send/recv of a step is repeated per microbatch, per-step counts
        # (and the step time) follow it: the audit reads them per microbatch instead. Microbatch
        # sizes, stages, widths and everything else come from the healthy job's distributions.
        per="## forward ##",
        note="warm-up and drain idle on every stage, near (p-1)/(v*m+p-1) of the step (v model "
        "chunks per stage, 1 without interleaving), with the stage waiting in receive kernels",
    ),
    "allocator-stalls": Signature(
        names=("cudaMalloc", "cudaFree", "hipMalloc", "hipFree"),
        note="device malloc/free calls in the steady-state step, milliseconds each, GPU idle "
        "under them",
    ),
    "bandwidth-bound-collective": Signature(
        note="all-reduce longer than backward on every rank alike; bytes / kernel time gives "
        "one bus bandwidth on every rank, the ceiling of the link the ring runs on (here the "
        "hosts' PCIe, not NVLink)"
    ),
    "recompilation": Signature(
        names=(
            "_compile.compile_inner",
            "call_user_compiler",
            "Torch-Compiled Region: 0/",  # the frame's compile id: 0/0, then one per recompile
            # Inductor's call of a compiled graph names the graph by its cache key: one key in
            # a job that compiled before the window, one more per recompile (compiled decode)
            "## Call CompiledFxGraph",
        ),
        note="compile spans of seconds on the steps that bring a new input shape; the other "
        "steps are fast",
    ),
    "healthy": Signature(note="busy GPU, hidden communication, no stall: nothing stands out"),
}
# Each lookalike pair is declared once above (the third field) and holds both ways: a straggler
# trace looks like a bandwidth-bound collective exactly as much as the reverse.
_LOOKALIKE: dict[str, str] = {}
for _slug, _title, _twin, _weight, _summary in _S:
    if _twin is not None:
        _LOOKALIKE[_slug], _LOOKALIKE[_twin] = _twin, _slug
SCENARIOS: dict[str, Scenario] = {
    s[0]: Scenario(s[0], s[1], _LOOKALIKE.get(s[0]), s[3], s[4], signature=SIGNATURES[s[0]])
    for s in _S
}


def signature_of(slug: str) -> Signature:
    """The declared signature of scenario `slug` (ValueError for an unknown slug)."""
    try:
        return SIGNATURES[slug]
    except KeyError:
        raise ValueError(f"unknown scenario {slug!r}") from None


def lookalike_of(slug: str | None) -> str | None:
    """The scenario built to look like ``slug`` (the relation is symmetric), or None."""
    return _LOOKALIKE.get(slug) if slug else None


def lookalike_pairs() -> list[tuple[str, str]]:
    """Each lookalike pair once, as declared (scenario, its twin), in catalogue order."""
    return [(s[0], s[2]) for s in _S if s[2] is not None]


def title_of(slug: str | None) -> str:
    """The scenario's title; an unknown slug (or a blank answer) is shown as it is."""
    scenario = SCENARIOS.get(slug) if slug else None
    return scenario.title if scenario is not None else (slug or "(blank)")


MEASUREMENTS: dict[str, str] = {
    "comm_overlap": "Comm/compute overlap per rank (share of NCCL time that runs under compute)",
    "loader_wait": "Time in the DataLoader __next__ per step against the step time",
    "launch_vs_kernel": "Per-launch CPU time vs GPU kernel time (launch stats, queue length)",
    "rank_skew": "Per-rank compute time and collective start skew (straggler ranking)",
    "hot_kernel_bw": (
        "Hottest kernel family's share of compute-kernel time and its achieved HBM bandwidth"
    ),
    "sync_api_time": "Count and duration of synchronizing CUDA calls per step",
    "stage_idle": "Idle share per pipeline stage against (p−1)/(m+p−1)",
    "alloc_api_time": "Steady-state cudaMalloc/cudaFree count and time per step",
    "busbw_vs_link": "Collective bytes ÷ kernel time → bus bandwidth against the link's peak",
    "step_series_shapes": "Step-time series against new input shapes (recompile log)",
    "gpu_idle_breakdown": "GPU idle share and its breakdown (host wait / kernel wait / other)",
    "kernel_top_list": "Top kernels by total GPU time",
    "mfu": "Achieved model FLOPs utilisation against the achievable matmul peak",
    "none": "No further measurement needed: the trace shows no bottleneck",
}

FIXES: dict[str, str] = {
    "ddp_overlap": "Let DDP overlap: bucketed all-reduce launched during backward",
    "loader_workers": "More loader workers, prefetch, persistent workers, pinned memory",
    "cuda_graphs": "Capture the step in CUDA graphs (torch.compile mode='reduce-overhead')",
    "replace_node": "Cordon or replace the slow node / rebalance its work",
    "fuse_kernels": "Fuse the bandwidth-bound chain (fused attention / torch.compile)",
    "remove_syncs": "Remove in-step read-backs (.item(), .nonzero(), .cpu()); read every N steps",
    "more_microbatches": "More microbatches per step or an interleaved schedule",
    "allocator_conf": "Stop churning the allocator: expandable segments, no empty_cache() per step",
    "fewer_comm_bytes": "Send fewer bytes: bf16 gradients / compression / more compute per byte",
    "pad_shapes": "Pad or bucket input shapes (or mark them dynamic) to stop recompiles",
    "bigger_batch": "Raise the per-GPU batch size",
    "faster_kernels": "Swap in faster GEMM kernels / tune matmul precision",
    "none": "No change: the job is healthy",
}

# (measurement, accepted measurements, fix, accepted fixes, mental-math family)
ANSWERS: dict[str, tuple[str, list[str], str, list[str], str | None]] = {
    "exposed-allreduce": (
        "comm_overlap",
        ["comm_overlap"],
        "ddp_overlap",
        ["ddp_overlap"],
        "exposed-comm",
    ),
    "input-starvation": (
        "loader_wait",
        ["loader_wait", "gpu_idle_breakdown"],
        "loader_workers",
        ["loader_workers"],
        "dataloader-workers",
    ),
    "launch-bound": (
        "launch_vs_kernel",
        ["launch_vs_kernel"],
        "cuda_graphs",
        ["cuda_graphs"],
        "launch-overhead",
    ),
    "straggler": ("rank_skew", ["rank_skew"], "replace_node", ["replace_node"], "amdahl"),
    "memory-bound-kernel": (
        "hot_kernel_bw",
        ["hot_kernel_bw"],
        "fuse_kernels",
        ["fuse_kernels"],
        "kernel-floor",
    ),
    "sync-stalls": (
        "sync_api_time",
        ["sync_api_time"],
        "remove_syncs",
        ["remove_syncs"],
        "amdahl",
    ),
    "pipeline-bubbles": (
        "stage_idle",
        ["stage_idle"],
        "more_microbatches",
        ["more_microbatches"],
        "bubble",
    ),
    "allocator-stalls": (
        "alloc_api_time",
        ["alloc_api_time"],
        "allocator_conf",
        ["allocator_conf"],
        "amdahl",
    ),
    "bandwidth-bound-collective": (
        "busbw_vs_link",
        ["busbw_vs_link"],
        "fewer_comm_bytes",
        ["fewer_comm_bytes"],
        "busbw",
    ),
    "recompilation": (
        "step_series_shapes",
        ["step_series_shapes"],
        "pad_shapes",
        ["pad_shapes"],
        "amdahl",
    ),
    "healthy": ("none", ["none", "mfu"], "none", ["none"], "mfu"),
}


# ------------------------------------------------------------------------------------------------
# workload families and the framings: every family hosts every scenario that can happen in it
# (healthy included), and a trace's prompt is drawn from its family's pools, never its scenario's
# ------------------------------------------------------------------------------------------------
FAMILIES = ("ddp", "ddp_compile", "pp", "decode", "decode_compile")
# how often each family is drawn: healthy jobs, and every scenario that every family hosts, land
# in each family this often
FAMILY_WEIGHTS: dict[str, float] = {
    "ddp": 0.25,
    "ddp_compile": 0.25,
    "pp": 0.25,
    "decode": 0.125,
    "decode_compile": 0.125,
}
# scenario -> the families it can physically happen in. A scenario hosted by fewer families than
# healthy lands in each of its own as often as healthy does, relative to the others
# (`engine._family_for`): among DDP jobs, an exposed all-reduce is as often compiled as a healthy
# job is, so a family never leans towards one scenario.
HOSTS: dict[str, tuple[str, ...]] = {
    "exposed-allreduce": ("ddp", "ddp_compile"),
    "input-starvation": ("ddp", "ddp_compile", "pp"),
    "launch-bound": ("decode", "decode_compile"),
    "straggler": ("ddp", "ddp_compile", "pp"),
    "memory-bound-kernel": ("ddp", "ddp_compile"),
    "sync-stalls": FAMILIES,
    "pipeline-bubbles": ("pp",),
    "allocator-stalls": FAMILIES,
    "bandwidth-bound-collective": ("ddp", "ddp_compile"),
    "recompilation": ("ddp_compile", "decode_compile"),
    "healthy": FAMILIES,
}

# neutral symptom wordings per family (none names a cause); every scenario of the family draws
# from the same list
SYMPTOMS: dict[str, list[str]] = {
    "ddp": [
        "Scaling from 1 to {world} GPUs gave well under {world}x throughput.",
        "Step time is higher than the team's estimate for this model size.",
        "Communication time looks large in the per-rank summary.",
        "GPU utilisation dips once per step on every rank.",
        "The job got slower this week; the diff touched only configuration.",
        "MFU is poor although every GEMM on the timeline looks efficient.",
        "A teammate wants a second opinion before the job is launched at scale.",
        "{smi} shows the GPUs well under full utilisation.",
    ],
    "pp": [
        "Adding pipeline stages did not speed the job up as much as hoped.",
        "Per-GPU utilisation differs between ranks of the same job.",
        "MFU is poor although every GEMM on the timeline looks efficient.",
        "Step time is higher than the team's estimate for this model size.",
        "A teammate wants a second opinion before the job is launched at scale.",
        "{smi} shows the GPUs well under full utilisation.",
    ],
    "decode": [
        "Tokens per second barely changed after moving to a faster GPU.",
        "Per-token latency is higher than the weight-streaming estimate predicts.",
        "GPU utilisation reads lower than expected for a decode server.",
        "A teammate wants a second opinion before the server takes traffic.",
        "Latency got worse after last sprint's changes to the serving loop.",
        "One CPU core sits near 100 % while the server runs.",
    ],
}
SYMPTOMS["ddp_compile"] = SYMPTOMS["ddp"]
SYMPTOMS["decode_compile"] = SYMPTOMS["decode"]

# colleague theories, each pointing at one scenario; a family's pool holds the theories of every
# scenario it hosts, and the theory shown is drawn from the pool independently of the scenario,
# so it is right about as often as any other line of the pool
THEORY_TEXT: dict[str, str] = {
    "exposed-allreduce": "A colleague thinks DDP is not overlapping the all-reduce.",
    "input-starvation": "A colleague thinks the data loader cannot keep up.",
    "launch-bound": "A colleague suspects kernel launch overhead.",
    "straggler": "A colleague is sure one slow node holds everyone back.",
    "memory-bound-kernel": "A colleague thinks attention is memory-bound.",
    "sync-stalls": "A colleague suspects host-device syncs.",
    "pipeline-bubbles": "A colleague blames the pipeline schedule.",
    "allocator-stalls": "A colleague suspects the caching allocator.",
    "bandwidth-bound-collective": "A colleague is sure the all-reduce is simply too big.",
    "recompilation": "A colleague blames torch.compile recompiling.",
    "healthy": "A colleague thinks there is nothing left to win here.",
}


def family_scenarios(family: str) -> list[str]:
    return [s for s, hosts in HOSTS.items() if family in hosts]


THEORIES: dict[str, list[str | None]] = {
    fam: [None, *(THEORY_TEXT[s] for s in family_scenarios(fam))] for fam in FAMILIES
}
