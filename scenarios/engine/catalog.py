"""Scenarios, the measurement and fix catalogues, and the framing texts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Scenario:
    slug: str
    title: str
    twin: str | None
    weight: int
    summary: str


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
        "The all-reduce moves its bytes at the link's achievable peak on every rank; "
        "it is just big.",
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
# Each lookalike pair is declared once above (the third field) and holds both ways: a straggler
# trace looks like a bandwidth-bound collective exactly as much as the reverse.
_LOOKALIKE: dict[str, str] = {}
for _slug, _title, _twin, _weight, _summary in _S:
    if _twin is not None:
        _LOOKALIKE[_slug], _LOOKALIKE[_twin] = _twin, _slug
SCENARIOS: dict[str, Scenario] = {
    s[0]: Scenario(s[0], s[1], _LOOKALIKE.get(s[0]), s[3], s[4]) for s in _S
}


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
    "hot_kernel_bw": "Hottest kernel family's share of GPU time and its achieved HBM bandwidth",
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
    "pad_shapes": "Pad or bucket input shapes (or mark them dynamic) so the compiler stops",
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

# neutral symptom wordings (none may name the cause) and colleague theories (often wrong)
SYMPTOMS: dict[str, list[str]] = {
    "exposed-allreduce": [
        "Scaling from 1 to {world} GPUs gave well under {world}x throughput.",
        "Step time is noticeably longer than the forward+backward time measured on one GPU.",
        "GPU utilisation dips once per step on every rank at the same moment.",
    ],
    "input-starvation": [
        "nvidia-smi shows the GPUs well under full utilisation throughout the run.",
        "Throughput is far below what the model's FLOPs suggest this hardware should reach.",
        "Every rank reports the same disappointing samples/s; nothing looks broken.",
    ],
    "launch-bound": [
        "Tokens per second barely changed after moving to a faster GPU.",
        "Per-token latency is several times what the weight-streaming estimate predicts.",
        "GPU utilisation reads low while one CPU core is pinned at 100 %.",
    ],
    "straggler": [
        "The job got slower this week with no code change.",
        "Step time is higher than the same job on a different allocation.",
        "Communication time looks large in the per-rank summary.",
    ],
    "memory-bound-kernel": [
        "The GPU is busy all the time, yet achieved TFLOP/s is a fraction of peak.",
        "Step time grows much faster than expected when the sequence length doubles.",
        "Utilisation is near 100 % but MFU is poor.",
    ],
    "sync-stalls": [
        "A feature added last sprint made steps noticeably slower.",
        "GPU utilisation looks choppy rather than solid in nvidia-smi.",
        "Throughput dropped after a routing change; the FLOPs did not change.",
    ],
    "pipeline-bubbles": [
        "Adding pipeline stages did not speed the job up as much as hoped.",
        "Per-GPU utilisation differs a lot between ranks of the same job.",
        "MFU is poor although every kernel on the timeline looks efficient.",
    ],
    "allocator-stalls": [
        "Steps occasionally take much longer, and the job sits close to the memory limit.",
        "After a memory-saving change, throughput dropped.",
        "GPU utilisation shows gaps that do not line up with data loading.",
    ],
    "bandwidth-bound-collective": [
        "Communication time looks large in the per-rank summary.",
        "Scaling from 1 to {world} GPUs gave well under {world}x throughput.",
        "Step time is higher than the team's estimate for this model size.",
    ],
    "recompilation": [
        "Throughput numbers for this run are erratic; the average is far below the best steps.",
        "nvidia-smi shows the GPUs well under full utilisation throughout the run.",
        "Every rank reports the same disappointing samples/s; nothing looks broken.",
    ],
    "healthy": [
        "A teammate wants a second opinion before the job is launched at scale.",
        "Step time is higher than the team's estimate for this model size.",
        "Communication time looks large in the per-rank summary.",
        "GPU utilisation dips once per step on every rank at the same moment.",
    ],
}

THEORIES: dict[str, list[str | None]] = {
    "exposed-allreduce": [
        None,
        "A colleague thinks the interconnect is saturated and wants faster links.",
        "A colleague suspects one slow node.",
    ],
    "input-starvation": [
        None,
        "A colleague blames torch.compile recompiling on new shapes.",
        "A colleague thinks the kernels are memory-bound.",
    ],
    "launch-bound": [
        None,
        "A colleague wants to buy faster GPUs.",
        "A colleague thinks the attention kernel is memory-bound.",
    ],
    "straggler": [
        None,
        "A colleague is sure the all-reduce is simply too big for NVLink.",
        "A colleague thinks the network is saturated.",
    ],
    "memory-bound-kernel": [
        None,
        "A colleague thinks the GEMMs are badly tuned.",
        "A colleague suspects kernel launch overhead.",
    ],
    "sync-stalls": [
        None,
        "A colleague suspects launch overhead.",
        "A colleague thinks data loading got slower.",
    ],
    "pipeline-bubbles": [
        None,
        "A colleague thinks stage 0 is a straggler.",
        "A colleague blames the point-to-point sends.",
    ],
    "allocator-stalls": [
        None,
        "A colleague thinks the data loader is the problem.",
        "A colleague suspects host-device syncs.",
    ],
    "bandwidth-bound-collective": [
        None,
        "A colleague suspects one slow node is holding everyone back.",
        "A colleague thinks DDP is not overlapping.",
    ],
    "recompilation": [
        None,
        "A colleague thinks the data loader cannot keep up.",
        "A colleague suspects the allocator.",
    ],
    "healthy": [
        None,
        "A colleague thinks the all-reduce is exposed.",
        "A colleague is sure there is a straggler.",
    ],
}
