"""Read one PyTorch-profiler (Kineto) JSON object into flat numpy columns.

Tolerant of what real files do: `ts`/`dur` as strings or floats, missing fields, string pids and
tids, `ProfilerStep#N` annotations, `ac2g` flows (ignored: the `correlation` arg carries the same
link), NCCL args on kernels, `deviceProperties`. Events that cannot be placed on a timeline (no
usable `ts`, an `X` without a duration) are counted and skipped, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import TraceError

# Event kinds (one small int per slice)
STEP, ANNOT, CPU_OP, RUNTIME, KERNEL, COMM, MEMCPY, MEMSET, GPU_ANNOT, GPU_SYNC = range(10)
KIND_NAMES = (
    "step",
    "user_annotation",
    "cpu_op",
    "cuda_runtime",
    "kernel",
    "nccl",
    "gpu_memcpy",
    "gpu_memset",
    "gpu_user_annotation",
    "cuda_sync",
)
GPU_KINDS = (KERNEL, COMM, MEMCPY, MEMSET)
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
COMM_RE = re.compile(r"(^nccl)|(^rccl)|(^hccl)|(ncclKernel)|(ncclDevKernel)", re.I)
KERNEL_CATS = {"kernel", "Kernel", "mtia_ccp_events"}
MEMCPY_CATS = {"gpu_memcpy", "Memcpy"}
MEMSET_CATS = {"gpu_memset", "Memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "hip_runtime", "runtime"}
ANNOT_CATS = {"user_annotation"}
GPU_ANNOT_CATS = {"gpu_user_annotation"}
SYNC_CATS = {"cuda_sync"}
SKIP_CATS = {"Trace", "ac2g", "fwdbwd", "async_cpu_to_gpu"}
# Kernel args worth keeping (the rest of a kernel's args are launch geometry we don't analyse).
KEEP_ARGS = (
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "In msg size",
    "Out msg size",
    "Group size",
    "dtype",
    "Process Group Name",
    "bytes",
    "memory bandwidth (GB/s)",
    "grid",
    "block",
    "stream",
    "correlation",
    "est. achieved occupancy %",
)


def _num(v: Any) -> float | None:
    t = type(v)
    if t is float:
        return v if v == v and v not in (_INF, -_INF) else None
    if t is int:
        return float(v)
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return None
    else:
        return None
    return f if np.isfinite(f) else None


_INF = float("inf")
MAX_WORLD = 1 << 20  # ranks in one job (the largest run today have some 10^5 GPUs)


def check_job_size(source: str, rank: int, world: int) -> None:
    """TraceError for a rank or world size no job has (from distributedInfo, a file name or a
    process name): a rank of 10^15 made process ids past 64 bits and the upload failed with
    "something went wrong"; a world size of 10^17 was printed as the job's rank count."""
    if rank >= MAX_WORLD or world > MAX_WORLD:
        raise TraceError(
            f"{source}: rank {rank:,}" + (f" of {world:,}" if world > 0 else "") + "; no job "
            f"has more than {MAX_WORLD:,} ranks, so the file or its name is damaged."
        )


_BIG = 1 << 62  # ids beyond this do not fit the int64 columns
# Times no profiler writes: a timestamp beyond 2^53 µs (year 2255 counted from 1970; past it a
# double no longer holds every µs) or a slice longer than a day. One such event stretched a
# step to 10^27 ms, or moved a ProfilerStep out of the trace with every figure of it read 0.
MAX_TS_US = float(1 << 53)
MAX_DUR_US = 86_400e6


def usable_time(ts: float, dur: float) -> bool:
    """Whether a slice's ts and dur place it on a timeline (a negative or impossible value does
    not: the event is counted and skipped, never guessed, as one with no ts is)."""
    return abs(ts) <= MAX_TS_US and 0 <= dur <= MAX_DUR_US


def _int(v: Any, default: int = -1) -> int:
    if type(v) is int and -_BIG < v < _BIG:
        return v
    f = _num(v)
    return int(f) if f is not None and -_BIG < f < _BIG else default


@dataclass
class RankTrace:
    """One rank: every slice as columns; times in µs as read (alignment happens later)."""

    rank: int
    world_size: int | None
    device_name: str | None
    source: str
    ts: np.ndarray
    dur: np.ndarray
    kind: np.ndarray  # int8, one of the kinds above
    pid: np.ndarray  # int64, interned
    tid: np.ndarray  # int64, interned (for GPU events: the stream)
    name: np.ndarray  # int32 index into names
    corr: np.ndarray  # int64, -1 = none
    aid: np.ndarray  # int32 index into args, -1 = none
    names: list[str]
    args: list[dict]
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    process_labels: dict[int, str] = field(default_factory=dict)
    skipped: int = 0
    process_names: dict[int, str] = field(default_factory=dict)
    sort_index: dict[int, int] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.ts)

    def shift(self, t0: float) -> None:
        self.ts = self.ts - t0


def _classify(cat: str, name: str, args: dict) -> int | None:
    if cat in SKIP_CATS:
        return None
    if cat in KERNEL_CATS:
        return COMM if COMM_RE.search(name) else KERNEL
    if cat in MEMCPY_CATS:
        return MEMCPY
    if cat in MEMSET_CATS:
        return MEMSET
    if cat in RUNTIME_CATS:
        return RUNTIME
    if cat in GPU_ANNOT_CATS:
        return GPU_ANNOT
    if cat in SYNC_CATS:
        return GPU_SYNC
    if cat in ANNOT_CATS:
        return STEP if STEP_RE.match(name) else ANNOT
    if not cat and isinstance(args, dict) and "stream" in args and "correlation" in args:
        # an old or stripped trace without categories: a GPU event still carries its stream
        if name.startswith("Memcpy"):
            return MEMCPY
        if name.startswith("Memset"):
            return MEMSET
        return COMM if COMM_RE.search(name) else KERNEL
    return CPU_OP


def parse(obj: Any, *, source: str = "trace", max_events: int | None = None) -> RankTrace:
    """Columns for one rank's Kineto object (the JSON object form, or a bare event array)."""
    events: list
    if isinstance(obj, list):
        head: dict = {}
        events = obj
    elif isinstance(obj, dict):
        head = obj
        maybe = obj.get("traceEvents")
        if not isinstance(maybe, list):
            raise TraceError(
                f'{source}: this JSON has no "traceEvents" list, so it is not a PyTorch profiler '
                "(Kineto) or Chrome trace."
            )
        events = maybe
    else:
        raise TraceError(f"{source}: the JSON is a {type(obj).__name__}, not a trace object.")
    if max_events is not None and len(events) > max_events:
        raise TraceError(
            f"{source}: {len(events):,} events is more than the {max_events:,} this server accepts."
        )

    dist_raw = head.get("distributedInfo")
    dist: dict = dist_raw if isinstance(dist_raw, dict) else {}
    rank = _int(dist.get("rank"), -1)
    world = _int(dist.get("world_size"), -1)
    device_name = None
    props = head.get("deviceProperties")
    if isinstance(props, list):
        for p in props:
            if isinstance(p, dict) and isinstance(p.get("name"), str):
                device_name = p["name"]
                break

    pid_ids: dict[Any, int] = {}
    tid_ids: dict[Any, int] = {}

    def intern_id(table: dict[Any, int], v: Any) -> int:
        if isinstance(v, bool) or v is None:
            v = str(v)
        if isinstance(v, (int, float)) and float(v).is_integer() and -_BIG < v < _BIG:
            return int(v)
        key = str(v)
        if key not in table:
            table[key] = -(len(table) + 2)  # negative, so never equal to a numeric id
        return table[key]

    name_ids: dict[str, int] = {}
    names: list[str] = []
    args_out: list[dict] = []
    ts_l: list[float] = []
    dur_l: list[float] = []
    kind_l: list[int] = []
    pid_l: list[int] = []
    tid_l: list[int] = []
    name_l: list[int] = []
    corr_l: list[int] = []
    aid_l: list[int] = []
    thread_names: dict[tuple[int, int], str] = {}
    labels: dict[int, str] = {}
    pnames: dict[int, str] = {}
    sort_index: dict[int, int] = {}
    skipped = 0
    kind_cache: dict[tuple[str, str], int | None] = {}

    for ev in events:
        if not isinstance(ev, dict):
            skipped += 1
            continue
        ph = ev.get("ph")
        if ph == "M":
            a_raw = ev.get("args")
            a: dict = a_raw if isinstance(a_raw, dict) else {}
            nm = ev.get("name")
            pid = intern_id(pid_ids, ev.get("pid"))
            if nm == "thread_name" and isinstance(a.get("name"), str):
                thread_names[(pid, intern_id(tid_ids, ev.get("tid")))] = a["name"]
            elif nm == "process_labels" and isinstance(a.get("labels"), str):
                labels[pid] = a["labels"]
            elif nm == "process_name" and isinstance(a.get("name"), str):
                pnames[pid] = a["name"]
            elif nm == "process_sort_index":
                sort_index[pid] = _int(a.get("sort_index"), 0)
            continue
        if ph != "X":
            continue
        ts = _num(ev.get("ts"))
        dur = _num(ev.get("dur"))
        if ts is None or dur is None or not usable_time(ts, dur):
            skipped += 1
            continue
        name = ev.get("name")
        name = name if isinstance(name, str) else str(name)
        cat = ev.get("cat")
        cat = cat if isinstance(cat, str) else ""
        args_raw = ev.get("args")
        args: dict = args_raw if isinstance(args_raw, dict) else {}
        ck = (cat, name)
        kind = kind_cache.get(ck, -1) if cat else -1
        if kind == -1:
            kind = _classify(cat, name, args)
            if cat:
                kind_cache[ck] = kind
        if kind is None:
            continue
        ni = name_ids.get(name)
        if ni is None:
            ni = name_ids[name] = len(names)
            names.append(name)
        corr = _int(args.get("correlation"), -1)
        pid = intern_id(pid_ids, ev.get("pid"))
        if kind in GPU_KINDS or kind in (GPU_SYNC, GPU_ANNOT):
            stream = _int(args.get("stream"), -1)
            tid = stream if stream >= 0 else intern_id(tid_ids, ev.get("tid"))
        else:
            tid = intern_id(tid_ids, ev.get("tid"))
        aid = -1
        if kind in GPU_KINDS or (kind == CPU_OP and name == "record_param_comms"):
            kept = {k: args[k] for k in KEEP_ARGS if k in args}
            if kept:
                aid = len(args_out)
                args_out.append(kept)
        ts_l.append(ts)
        dur_l.append(dur)
        kind_l.append(kind)
        pid_l.append(pid)
        tid_l.append(tid)
        name_l.append(ni)
        corr_l.append(corr)
        aid_l.append(aid)

    return RankTrace(
        rank=rank,
        world_size=world if world > 0 else None,
        device_name=device_name,
        source=source,
        ts=np.asarray(ts_l, np.float64),
        dur=np.asarray(dur_l, np.float64),
        kind=np.asarray(kind_l, np.int8),
        pid=np.asarray(pid_l, np.int64),
        tid=np.asarray(tid_l, np.int64),
        name=np.asarray(name_l, np.int32),
        corr=np.asarray(corr_l, np.int64),
        aid=np.asarray(aid_l, np.int32),
        names=names,
        args=args_out,
        thread_names=thread_names,
        process_labels=labels,
        skipped=skipped,
        process_names=pnames,
        sort_index=sort_index,
    )


# ---- several ranks in one file ------------------------------------------------------------------
RANK_IN_PROCESS = re.compile(r"\brank\s*(\d+)", re.I)
GPU_IN_PROCESS = re.compile(r"\bGPU\s*(\d+)\b")


def split_ranks(r: RankTrace) -> list[RankTrace]:
    """The ranks of a file that holds several, as merged exports do (TraceTrack's own Perfetto
    download, or another tool's merge): one RankTrace each. A file whose GPU events sit on one
    process is one rank and comes back as it is; so does one whose processes cannot be told
    apart by rank (one process driving several GPUs).

    A process is placed by the rank in its name or label ("rank 3 GPU"); else the GPU
    processes go by their device number ("GPU 3") and the host processes, in the file's own
    order (``process_sort_index``, then pid), pair with them one to one."""
    gpu_mask = np.isin(r.kind, GPU_KINDS)
    gpu_pids = sorted(set(r.pid[gpu_mask].tolist()))
    if len(gpu_pids) < 2:
        return [r]
    host_pids = sorted(set(r.pid[~gpu_mask].tolist()) - set(gpu_pids))

    def named_rank(pid: int) -> int | None:
        for text in (r.process_names.get(pid, ""), r.process_labels.get(pid, "")):
            if m := RANK_IN_PROCESS.search(text):
                return int(m.group(1))
        return None

    rank_of: dict[int, int] = {}
    for pid in gpu_pids + host_pids:
        if (n := named_rank(pid)) is not None:
            rank_of[pid] = n
    if len(rank_of) < len(gpu_pids) + len(host_pids):
        gpus = [p for p in gpu_pids if p not in rank_of]
        hosts = [p for p in host_pids if p not in rank_of]
        found = [GPU_IN_PROCESS.search(r.process_labels.get(p, "")) for p in gpus]
        numbers = [int(m.group(1)) if m else -1 for m in found]
        if -1 in numbers or len(set(numbers)) < len(numbers):
            numbers = list(range(len(gpus)))  # no device number, or the same one twice
        order = sorted(zip(numbers, gpus, strict=True))
        hosts.sort(key=lambda p: (r.sort_index.get(p, 0), p))
        if len(hosts) != len(order):
            return [r]  # not one host process per GPU: nothing says which is whose
        for (n, gpu), host in zip(order, hosts, strict=True):
            rank_of[gpu] = rank_of[host] = n
    ranks = sorted(set(rank_of.values()))
    if len(ranks) < 2:
        return [r]
    world = max(r.world_size or 0, ranks[-1] + 1)
    out = []
    for n in ranks:
        pids = [p for p, k in rank_of.items() if k == n]
        m = np.isin(r.pid, pids)
        out.append(
            RankTrace(
                rank=n,
                world_size=world,
                device_name=r.device_name,
                source=f"{r.source} (rank {n})",
                ts=r.ts[m],
                dur=r.dur[m],
                kind=r.kind[m],
                pid=r.pid[m],
                tid=r.tid[m],
                name=r.name[m],
                corr=r.corr[m],
                aid=r.aid[m],
                names=r.names,
                args=r.args,
                thread_names={k: v for k, v in r.thread_names.items() if k[0] in pids},
                process_labels={p: v for p, v in r.process_labels.items() if p in pids},
                skipped=r.skipped if n == ranks[0] else 0,
                process_names={p: v for p, v in r.process_names.items() if p in pids},
                sort_index={p: v for p, v in r.sort_index.items() if p in pids},
            )
        )
    return out
