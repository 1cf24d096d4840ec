"""Put parsed ranks together (rank numbers, one clock) and convert them to what we store: the
viewer's columnar timeline (docs/contracts.md §2) and one Chrome-trace JSON with every rank that
Perfetto opens."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import orjson

from .errors import TraceError
from .kineto import (
    ANNOT,
    COMM,
    CPU_OP,
    GPU_ANNOT,
    GPU_KINDS,
    GPU_SYNC,
    KERNEL,
    KIND_NAMES,
    MEMCPY,
    MEMSET,
    RUNTIME,
    STEP,
    RankTrace,
    check_job_size,
)

RANK_IN_NAME = re.compile(r"rank[-_ ]?(\d+)", re.I)
TL_CATS = [
    "user_annotation",
    "cpu_op",
    "cuda_runtime",
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "nccl",
    "dataloader",
]
# kind -> index into TL_CATS
TL_CAT_OF = np.array([0, 0, 1, 2, 3, 6, 4, 5, 0, 2], np.int64)
PID_STRIDE = 1 << 20


def assemble(parsed: list[RankTrace]) -> list[RankTrace]:
    """Give every file its rank, check the files belong together, align them on one clock.

    Raises TraceError for a set of files that cannot be one job: two files with the same rank,
    files that disagree on the world size, a rank with no GPU events."""
    if not parsed:
        raise TraceError("The upload holds no trace file.")
    if len(parsed) == 1:
        p = parsed[0]
        if p.rank < 0:
            m = RANK_IN_NAME.search(p.source)
            p.rank = int(m.group(1)) if m else 0
    else:
        for p in parsed:
            if p.rank < 0:
                m = RANK_IN_NAME.search(p.source.rsplit("/", 1)[-1])
                if not m:
                    raise TraceError(
                        f"{p.source}: no distributedInfo.rank and no rank number in the file name, "
                        "so it cannot be placed among the other ranks."
                    )
                p.rank = int(m.group(1))
        seen: dict[int, str] = {}
        for p in parsed:
            if p.rank in seen:
                raise TraceError(
                    f"{seen[p.rank]} and {p.source} both say they are rank {p.rank}; "
                    "upload one file per rank."
                )
            seen[p.rank] = p.source
        worlds = {p.world_size for p in parsed if p.world_size is not None}
        if len(worlds) > 1:
            raise TraceError(
                "The files disagree on the world size ("
                + ", ".join(str(w) for w in sorted(worlds))
                + "): they are not from the same job."
            )
        if worlds:
            (world,) = worlds
            bad = [p for p in parsed if p.rank >= world]
            if bad:
                raise TraceError(
                    f"{bad[0].source} says rank {bad[0].rank} but the world size is {world}."
                )
    for p in parsed:
        check_job_size(p.source, p.rank, p.world_size or 0)
    for p in parsed:
        if not np.isin(p.kind, GPU_KINDS).any():
            if p.skipped:
                # the GPU events may be there with fields we could not read: say so, not "record
                # it again with CUDA on"
                raise TraceError(
                    f"{p.source}: no usable GPU events (kernels, memcpy or memset); "
                    f"{p.skipped:,} event{'s' if p.skipped != 1 else ''} had no usable "
                    '"ts" or "dur" (missing, not a number, negative, or beyond any real clock) '
                    "and were left out."
                )
            if not from_pytorch(p):
                raise TraceError(
                    f"{p.source}: this is not a PyTorch profiler trace: it has no PyTorch ops "
                    "(aten::…), no ProfilerStep, no CUDA or HIP runtime calls and no GPU events "
                    "(a Chrome trace of another program?). Upload what torch.profiler wrote, "
                    "recorded with ProfilerActivity.CUDA."
                )
            raise TraceError(
                f"{p.source}: no GPU events (kernels, memcpy or memset). Record the trace with "
                "ProfilerActivity.CUDA so the GPU side is in it."
            )
    parsed.sort(key=lambda p: p.rank)
    t0 = min(float(p.ts.min()) for p in parsed)
    for p in parsed:
        p.shift(t0)
    return parsed


PYTORCH_NAME = re.compile(r"^(aten::|autograd::|torch\.|c10d::|nccl:|Optimizer\.|ProfilerStep#)")


def from_pytorch(r: RankTrace) -> bool:
    """Whether a rank's events are the PyTorch profiler's: runtime calls, a ProfilerStep, or an
    op of PyTorch's own (a CPU-only torch.profiler trace has aten:: ops and no GPU side)."""
    if np.isin(r.kind, (RUNTIME, STEP)).any():
        return True
    used = set(r.name.tolist())
    return any(PYTORCH_NAME.match(r.names[i]) for i in used)


def _depths(ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Nesting depth of slices on one row (sorted by ts, then longer first)."""
    depth = np.zeros(len(ts), np.int64)
    stack: list[float] = []
    for i, (a, b) in enumerate(zip(ts.tolist(), end.tolist(), strict=True)):
        while stack and stack[-1] <= a:
            stack.pop()
        # a slice that starts inside but ends after its parent goes one level down anyway
        depth[i] = len(stack)
        stack.append(b)
    return depth


def _main_tid(r: RankTrace, cpu: np.ndarray) -> int | None:
    steps = r.tid[r.kind == STEP]
    if len(steps):
        return int(Counter(steps.tolist()).most_common(1)[0][0])
    if cpu.any():
        return int(Counter(r.tid[cpu].tolist()).most_common(1)[0][0])
    return None


def _thread_label(r: RankTrace, pid: int, tid: int, main: int | None) -> tuple[str, str]:
    name = r.thread_names.get((pid, tid), "")
    if tid == main:
        return "cpu", "python main thread"
    low = name.lower()
    if "dataloader" in low or "data_worker" in low or "pt_data" in low:
        return "dataloader", name.strip() or f"thread {tid}"
    return "cpu", (name.strip() or f"thread {tid}")


def to_timeline(ranks: list[RankTrace]) -> dict:
    rows: list[dict] = []
    row_parts: list[np.ndarray] = []
    ts_parts: list[np.ndarray] = []
    dur_parts: list[np.ndarray] = []
    depth_parts: list[np.ndarray] = []
    name_parts: list[np.ndarray] = []
    cat_parts: list[np.ndarray] = []
    corr_parts: list[np.ndarray] = []
    args: dict[str, dict] = {}
    all_names: dict[str, int] = {}
    n_done = 0
    span_end = 0.0
    for r in ranks:
        name_map = np.array([all_names.setdefault(nm, len(all_names)) for nm in r.names], np.int64)
        gpu = np.isin(r.kind, (*GPU_KINDS, GPU_SYNC, GPU_ANNOT))
        rt = r.kind == RUNTIME
        cpu = ~gpu & ~rt
        main = _main_tid(r, cpu)
        groups: list[tuple[str, str, np.ndarray]] = []
        cpu_tids = sorted(set(r.tid[cpu].tolist()), key=lambda t: (t != main, t))
        for t in cpu_tids:
            m = cpu & (r.tid == t)
            pid = int(Counter(r.pid[m].tolist()).most_common(1)[0][0])
            kind, label = _thread_label(r, pid, t, main)
            groups.append((kind, label, m))
        if rt.any():
            groups.append(("cuda_api", "CUDA API", rt))
        for s in sorted(set(r.tid[gpu].tolist())):
            m = gpu & (r.tid == s)
            comm_share = (r.kind[m] == COMM).mean()
            dev = f"GPU {r.rank}"
            sname = f"stream {s}" if s >= 0 else "stream ?"
            if comm_share > 0.5:
                groups.append(("nccl", f"{dev} · {sname} (NCCL)", m))
            else:
                groups.append(("gpu", f"{dev} · {sname}", m))
        for kind, label, m in groups:
            idx = np.flatnonzero(m)
            o = idx[np.lexsort((-r.dur[idx], r.ts[idx]))]
            ts = r.ts[o]
            end = ts + r.dur[o]
            depth = _depths(ts, end) if kind != "cuda_api" else np.zeros(len(o), np.int64)
            row_i = len(rows)
            rows.append(
                {
                    "rank": r.rank,
                    "kind": kind,
                    "name": label,
                    "depth": int(depth.max()) + 1 if len(depth) else 1,
                }
            )
            row_parts.append(np.full(len(o), row_i, np.int64))
            ts_parts.append(ts)
            dur_parts.append(r.dur[o])
            depth_parts.append(depth)
            name_parts.append(name_map[r.name[o]])
            cats = TL_CAT_OF[r.kind[o].astype(np.int64)]
            if kind == "dataloader":
                cats = np.full(len(o), 7, np.int64)
            cat_parts.append(cats)
            corr = r.corr[o]
            corr_parts.append(np.where(np.isin(r.kind[o], (RUNTIME, *GPU_KINDS)), corr, -1) + 0)
            aids = r.aid[o]
            for j in np.flatnonzero(aids >= 0).tolist():
                a = dict(r.args[int(aids[j])])
                if kind in ("gpu", "nccl"):
                    a.setdefault("stream", int(r.tid[o[j]]))
                args[str(n_done + j)] = a
            n_done += len(o)
            if len(o):
                span_end = max(span_end, float(end.max()))
    names = [""] * len(all_names)
    for nm, i in all_names.items():
        names[i] = nm
    cat = np.concatenate(cat_parts) if cat_parts else np.zeros(0, np.int64)
    corr = np.concatenate(corr_parts) if corr_parts else np.zeros(0, np.int64)
    corr = np.where(corr < 0, 0, corr)
    return {
        "v": 1,
        "span": [0.0, round(span_end, 3)],
        "ranks": [{"rank": r.rank, "label": f"rank {r.rank}"} for r in ranks],
        "rows": rows,
        "names": names,
        "cats": TL_CATS,
        "slices": {
            "row": np.concatenate(row_parts).tolist() if row_parts else [],
            "ts": np.concatenate(ts_parts).round(3).tolist() if ts_parts else [],
            "dur": np.concatenate(dur_parts).round(3).tolist() if dur_parts else [],
            "depth": np.concatenate(depth_parts).tolist() if depth_parts else [],
            "name": np.concatenate(name_parts).tolist() if name_parts else [],
            "cat": cat.tolist(),
            "corr": corr.tolist(),
        },
        "args": args,
    }


PERFETTO_CAT = {
    STEP: "user_annotation",
    ANNOT: "user_annotation",
    CPU_OP: "cpu_op",
    RUNTIME: "cuda_runtime",
    KERNEL: "kernel",
    COMM: "kernel",
    MEMCPY: "gpu_memcpy",
    MEMSET: "gpu_memset",
    GPU_ANNOT: "gpu_user_annotation",
    GPU_SYNC: "cuda_sync",
}


def to_perfetto(ranks: list[RankTrace]) -> bytes:
    """One Chrome-trace JSON with every rank: each rank gets its own pids (CPU and GPU) and its
    own flow ids, so Perfetto neither merges processes nor links launches across ranks."""
    parts: list[bytes] = []
    dumps = orjson.dumps
    next_flow = 1
    for r in ranks:
        cpu_pid = (2 * r.rank + 1) * PID_STRIDE
        gpu_pid = (2 * r.rank + 2) * PID_STRIDE
        flow, next_flow = flow_ids(r.corr, next_flow)
        gpu = np.isin(r.kind, (*GPU_KINDS, GPU_SYNC, GPU_ANNOT))
        meta = [
            {
                "ph": "M",
                "name": "process_name",
                "pid": cpu_pid,
                "tid": 0,
                "args": {"name": f"rank {r.rank} CPU"},
            },
            {
                "ph": "M",
                "name": "process_sort_index",
                "pid": cpu_pid,
                "tid": 0,
                "args": {"sort_index": 2 * r.rank},
            },
            {
                "ph": "M",
                "name": "process_name",
                "pid": gpu_pid,
                "tid": 0,
                "args": {
                    "name": f"rank {r.rank} GPU" + (f" ({r.device_name})" if r.device_name else "")
                },
            },
            {
                "ph": "M",
                "name": "process_sort_index",
                "pid": gpu_pid,
                "tid": 0,
                "args": {"sort_index": 2 * r.rank + 1},
            },
        ]
        for (_pid, tid), tname in r.thread_names.items():
            if tid >= 0:
                meta.append(
                    {
                        "ph": "M",
                        "name": "thread_name",
                        "pid": gpu_pid if tname.strip().startswith("stream") else cpu_pid,
                        "tid": tid,
                        "args": {"name": tname},
                    }
                )
        # one dumps per rank: a small orjson.dumps per event keeps ~1 KiB of buffer each
        evs: list[dict] = meta
        ts = r.ts.round(3).tolist()
        dur = r.dur.round(3).tolist()
        kinds = r.kind.tolist()
        tids = r.tid.tolist()
        nms = r.name.tolist()
        corr = r.corr.tolist()
        aids = r.aid.tolist()
        isgpu = gpu.tolist()
        for i in range(r.n):
            k = kinds[i]
            ev: dict = {
                "ph": "X",
                "cat": PERFETTO_CAT[k],
                "name": r.names[nms[i]],
                "pid": gpu_pid if isgpu[i] else cpu_pid,
                "tid": tids[i] if tids[i] >= 0 else 1_000_000 - tids[i],
                "ts": ts[i],
                "dur": dur[i],
            }
            a = dict(r.args[aids[i]]) if aids[i] >= 0 else {}
            c = corr[i]
            if c >= 0 and (k == RUNTIME or k in GPU_KINDS):
                a["correlation"] = c
                fl: dict = {
                    "ph": "s" if k == RUNTIME else "f",
                    "id": flow[c],
                    "pid": ev["pid"],
                    "tid": ev["tid"],
                    "ts": ts[i],
                    "cat": "ac2g",
                    "name": "ac2g",
                }
                if k != RUNTIME:
                    fl["bp"] = "e"
                evs.append(fl)
            if a:
                ev["args"] = a
            evs.append(ev)
        parts.append(dumps(evs)[1:-1])
        del evs
    head = dumps(perfetto_header(ranks))[1:-1]
    return b"{" + head + b', "traceEvents": [' + b",".join(parts) + b"]}"


def flow_ids(corr: np.ndarray, first: int) -> tuple[dict[int, int], int]:
    """One rank's flow ids, its correlation ids numbered densely from ``first``, and the next
    free id: unique across ranks whatever the correlation ids are (they were offset by
    rank × 2^24, and a long job's ids pass 2^24, so rank 0's launches were tied to rank 1's
    kernels)."""
    uniq = np.unique(corr[corr >= 0]).tolist()
    return {c: first + i for i, c in enumerate(uniq)}, first + len(uniq)


def perfetto_header(ranks: list[RankTrace]) -> dict:
    """The export's Kineto header: what an upload of the export needs to read the job as it
    was read the first time. Without it the export of rank 1 of a 2-rank job came back as
    rank 0 of a 1-rank job on an unknown device (no link, so no bus bandwidth against it)."""
    worlds = [r.world_size for r in ranks if r.world_size]
    dist: dict = {"world_size": max([*worlds, len(ranks), max(r.rank for r in ranks) + 1])}
    if len(ranks) == 1:
        dist["rank"] = ranks[0].rank  # a merged file's ranks are in its process names
    head: dict = {"schemaVersion": 1, "displayTimeUnit": "ms", "distributedInfo": dist}
    devices = [{"id": r.rank, "name": r.device_name} for r in ranks if r.device_name]
    if devices:
        head["deviceProperties"] = devices
    return head


def kind_name(k: int) -> str:
    return KIND_NAMES[k]
