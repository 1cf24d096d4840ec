"""Exports: Perfetto (all ranks), HTA (one Kineto-shaped object per rank), the viewer timeline,
and the compact storage payload."""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import orjson

from .measure import row_name
from .model import (
    AUTOGRAD,
    CATS,
    COLS,
    COMPUTE,
    DTYPES,
    MAIN,
    NCCL,
    STREAM_OF,
    WATCHDOG,
    WORKER0,
    WORKER1,
)

if TYPE_CHECKING:
    from . import Trace

FLOW_STRIDE = 1 << 24  # flow ids: rank * stride + correlation (unique across ranks)
FWDBWD_OFF = 1 << 23  # fwdbwd flow ids: rank * stride + offset + sequence number
# correlation ids as a profiler numbers them, well past the first thousands (HTA 0.5 keeps them in
# the smallest integer type that fits and then writes event indices into a column of that type)
CORR_BASE = 1 << 16
CPU_PID_BASE = 41_000
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


def _us(ns: np.ndarray) -> list[float]:
    return (ns / 1000.0).round(3).tolist()


_TID_OFF = {MAIN: 0, WORKER0: 11, WORKER1: 12, AUTOGRAD: 31, WATCHDOG: 58}
# thread names as torch sets them (Kineto writes "thread <tid> (<name>)")
THREAD_LABEL = {
    MAIN: "pt_main_thread",
    WORKER0: "pt_data_worker_0",
    WORKER1: "pt_data_worker_1",
    AUTOGRAD: "pt_autograd_0",
    WATCHDOG: "pt_nccl_watchdg",
}


def _tid_os(rank: int, tid: int) -> int:
    return CPU_PID_BASE + 97 * rank + _TID_OFF[tid]


def _fwdbwd(trace: Trace, idx: np.ndarray) -> np.ndarray:
    """Which of the rank's events start or end a `fwdbwd` flow: forward ops on the main thread
    and backward nodes on the autograd thread that share a sequence number (corr column)."""
    c = trace.cols
    cpu = (c["cat"][idx] <= 1) & (c["corr"][idx] != 0)
    t = c["tid"][idx]
    f, b = cpu & (t == MAIN), cpu & (t == AUTOGRAD)
    if not b.any():
        return np.zeros(len(idx), bool)
    s = c["corr"][idx]
    both = np.intersect1d(s[f], s[b])
    return cpu & ((t == MAIN) | (t == AUTOGRAD)) & np.isin(s, both)


def _rank_idx(trace: Trace, rank: int, workers: bool) -> np.ndarray:
    """Event indices of one rank; without DataLoader worker rows for a Kineto-shaped export (the
    workers are other processes, which torch.profiler does not trace)."""
    c = trace.cols
    m = c["rank"] == rank
    if not workers:
        m &= (c["tid"] != WORKER0) & (c["tid"] != WORKER1)
    return np.flatnonzero(m)


def _events_for_rank(
    trace: Trace, rank: int, pid_gpu: int, flow_base: int, workers: bool = True
) -> list[dict]:
    c = trace.cols
    idx = _rank_idx(trace, rank, workers)
    names, args = trace.names, trace.args
    ts = _us(c["ts"][idx])
    dur = _us(c["dur"][idx])
    tid = c["tid"][idx].tolist()
    nm = c["name"][idx].tolist()
    cat = c["cat"][idx].tolist()
    corr = c["corr"][idx].tolist()
    aid = c["aid"][idx].tolist()
    pid_cpu = CPU_PID_BASE + 97 * rank
    out: list[dict] = []
    ext = 0
    linked = _fwdbwd(trace, idx).tolist()
    for i in range(len(idx)):
        t = tid[i]
        ev: dict = {
            "ph": "X",
            "cat": CATS[cat[i]],
            "name": names[nm[i]],
            "ts": ts[i],
            "dur": dur[i],
        }
        a = dict(args[aid[i]]) if aid[i] >= 0 else {}
        if t >= COMPUTE:
            ev["pid"], ev["tid"] = pid_gpu, STREAM_OF[t]
            k = corr[i] + CORR_BASE if corr[i] else 0
            a.update(
                {
                    "External id": k,
                    "device": rank,
                    "context": 1,
                    "stream": STREAM_OF[t],
                    "correlation": k,
                }
            )
            if corr[i]:
                out.append(
                    {
                        "ph": "f",
                        "id": flow_base + k,
                        "pid": pid_gpu,
                        "tid": STREAM_OF[t],
                        "ts": ts[i],
                        "cat": "ac2g",
                        "name": "ac2g",
                        "bp": "e",
                    }
                )
        else:
            ev["pid"], ev["tid"] = pid_cpu, _tid_os(rank, t)
            if cat[i] == 2 and corr[i]:
                k = corr[i] + CORR_BASE
                a.update({"External id": k, "cbid": 211, "correlation": k})
                out.append(
                    {
                        "ph": "s",
                        "id": flow_base + k,
                        "pid": pid_cpu,
                        "tid": ev["tid"],
                        "ts": ts[i],
                        "cat": "ac2g",
                        "name": "ac2g",
                    }
                )
            elif cat[i] <= 1:
                ext += 1
                a["External id"] = ext
                if corr[i]:
                    a["Sequence number"] = corr[i]
                if linked[i]:
                    fl = {"ph": "s" if t == MAIN else "f", "id": flow_base + FWDBWD_OFF + corr[i],
                          "pid": pid_cpu, "tid": ev["tid"], "ts": ts[i], "cat": "fwdbwd",
                          "name": "fwdbwd"}  # fmt: skip
                    if t != MAIN:
                        fl["bp"] = "e"
                    out.append(fl)
        if a:
            ev["args"] = a
        out.append(ev)
    present = set(np.unique(c["tid"][idx]).tolist())
    out.extend(_meta_events(rank, pid_gpu, present))
    if not workers:  # the per-rank Kineto files only (see _profiler_marks)
        out.extend(_profiler_marks(trace, rank))
    return out


def _profiler_marks(trace: Trace, rank: int) -> list[dict]:
    """Kineto's profiler span and its instants: the capture window, one per rank file as torch
    writes them. The merged all-ranks Perfetto file leaves them out: its string pids and global
    instants would stand for one rank's capture on a file that holds every rank."""
    c = trace.cols
    # each rank's profiler opens and closes at its own step boundary: the span covers the events
    # of its own file
    mine = _rank_idx(trace, rank, workers=False)
    t0 = int(c["ts"][mine].min()) - 1_000_000
    t1 = int((c["ts"][mine] + c["dur"][mine]).max()) + 500_000
    a, b = round(t0 / 1000, 3), round(t1 / 1000, 3)
    return [
        {"ph": "X", "cat": "Trace", "ts": a, "dur": round(b - a, 3), "pid": "Spans",
         "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
        {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "cat": "Trace",
         "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": a},
        {"name": "Record Window End", "ph": "i", "s": "g", "cat": "Trace", "pid": "", "tid": "",
         "ts": b},
    ]  # fmt: skip


def _meta_events(rank: int, pid_gpu: int, present: set[int]) -> list[dict]:
    pid_cpu = CPU_PID_BASE + 97 * rank
    out: list[dict] = []
    gpu_label = f"GPU {rank}"
    meta = [
        ("process_name", pid_cpu, 0, {"name": "python3"}),
        ("process_labels", pid_cpu, 0, {"labels": "CPU"}),
        ("process_sort_index", pid_cpu, 0, {"sort_index": rank * 2}),
        ("process_name", pid_gpu, 0, {"name": "python3"}),
        ("process_labels", pid_gpu, 0, {"labels": gpu_label}),
        ("process_sort_index", pid_gpu, 0, {"sort_index": 16777216 + rank}),
    ]
    for t in sorted(present):
        if t >= COMPUTE:
            meta.append(("thread_name", pid_gpu, STREAM_OF[t], {"name": f"stream {STREAM_OF[t]} "}))
            meta.append(("thread_sort_index", pid_gpu, STREAM_OF[t], {"sort_index": STREAM_OF[t]}))
        else:
            os_tid = _tid_os(rank, t)
            label = THREAD_LABEL[t]
            meta.append(("thread_name", pid_cpu, os_tid, {"name": f"thread {os_tid} ({label})"}))
            meta.append(("thread_sort_index", pid_cpu, os_tid, {"sort_index": t}))
    for name, pid, tid_, a in meta:
        out.append({"name": name, "ph": "M", "ts": 0, "pid": pid, "tid": tid_, "args": a})
    return out


def _dist_info(trace: Trace, rank: int) -> dict:
    w = trace.world
    return {
        "backend": "nccl",
        "rank": rank,
        "world_size": w,
        "pg_count": 1,
        "pg_config": [
            {
                "pg_name": "0",
                "pg_desc": "default_pg",
                "backend_config": "cuda:nccl",
                "pg_size": w,
                "ranks": list(range(w)),
            }
        ],
        # the kernel names are NCCL's pre-2.19 ones (ncclKernel_AllReduce_RING_LL_Sum_float)
        "nccl_version": NCCL_VERSION,
    }


NCCL_VERSION = "2.18.3"
# deviceProperties as the CUDA / HIP runtime reports them (cudaGetDeviceProperties)
_DEVICE = {
    "a100": ("NVIDIA A100-SXM4-80GB", 85_031_714_816, 8, 0, 108, 49152, 166912, 167936, 2048),
    "h100": ("NVIDIA H100 80GB HBM3", 85_045_870_592, 9, 0, 132, 49152, 232448, 233472, 2048),
    "h200": ("NVIDIA H200", 150_110_011_392, 9, 0, 132, 49152, 232448, 233472, 2048),
    "mi300x": ("AMD Instinct MI300X", 206_141_652_992, 9, 4, 304, 65536, 65536, 65536, 2048),
}


def _device_props(trace: Trace, rank: int) -> list[dict]:
    hw = trace.hw
    name, mem, major, minor, sms, smem_blk, smem_optin, smem_sm, thr_sm = _DEVICE[hw.key]
    return [
        {
            "id": rank,
            "name": name,
            "totalGlobalMem": mem,
            "computeMajor": major,
            "computeMinor": minor,
            "maxThreadsPerBlock": 1024,
            "maxThreadsPerMultiprocessor": thr_sm,
            "regsPerBlock": 65536,
            "warpSize": 64 if hw.vendor == "amd" else 32,
            "sharedMemPerBlock": smem_blk,
            "numSms": sms,
            "regsPerMultiprocessor": 65536,
            "sharedMemPerBlockOptin": smem_optin,
            "sharedMemPerMultiprocessor": smem_sm,
        }
    ]


def _base_time_ns(trace: Trace) -> int:
    """A capture time that differs per trace and says nothing about the scenario."""
    h = zlib.crc32(f"{trace.seed}/{trace.hardware}/{trace.framing}".encode())
    return 1_710_000_000_000_000_000 + (h % 40_000_000) * 1_000_000_000


def _perfetto_head(trace: Trace) -> dict:
    return {
        "schemaVersion": 1,
        "deviceProperties": [_device_props(trace, r)[0] for r in range(trace.world)],
        "distributedInfo": _dist_info(trace, 0),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": _base_time_ns(trace),
    }


def _hta_head(trace: Trace, r: int) -> dict:
    return {
        "schemaVersion": 1,
        "distributedInfo": _dist_info(trace, r),
        "deviceProperties": _device_props(trace, r),
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": _base_time_ns(trace),
    }


def to_perfetto(trace: Trace) -> dict:
    events: list[dict] = []
    for r in range(trace.world):
        events.extend(_events_for_rank(trace, r, pid_gpu=r, flow_base=r * FLOW_STRIDE))
    return {**_perfetto_head(trace), "traceEvents": events}


def to_hta(trace: Trace) -> dict[int, dict]:
    return {
        r: {
            **_hta_head(trace, r),
            "traceEvents": _events_for_rank(trace, r, pid_gpu=r, flow_base=0, workers=False),
        }
        for r in range(trace.world)
    }


def _dumps_spaced(obj: dict) -> bytes:
    """orjson for the bulk, with the top-level distributedInfo written with ': ' separators so
    that readers which find the rank by regex see `"rank": N`."""
    head = {k: v for k, v in obj.items() if k != "traceEvents"}
    head_txt = json.dumps(head, ensure_ascii=False, separators=(", ", ": "))
    ev = orjson.dumps(obj["traceEvents"])
    return head_txt[:-1].encode() + b', "traceEvents": ' + ev + b"}"


def _json_list(a: np.ndarray) -> list[str]:
    if not len(a):
        return []
    return orjson.dumps(a.tolist())[1:-1].decode().split(",")


def _events_json(
    trace: Trace, rank: int, pid_gpu: int, flow_base: int, workers: bool = True
) -> list[str]:
    """The same events as `_events_for_rank`, written straight to JSON text.

    No dict per event: names and argument templates are encoded once per trace, the static
    head of each event ("ph", "cat", "name", "pid", "tid", the args template) is gathered per
    event with numpy from one string per (name, cat, thread, args) combination, and each class
    of event is one comprehension over column lists. Parses to exactly what `_events_for_rank`
    returns (a test pins this)."""
    c = trace.cols
    idx = _rank_idx(trace, rank, workers)
    n = len(idx)
    dumps_ = orjson.dumps
    tid = c["tid"][idx].astype(np.int64)
    nm = c["name"][idx].astype(np.int64)
    cat = c["cat"][idx].astype(np.int64)
    corr = c["corr"][idx]
    aid = c["aid"][idx].astype(np.int64)
    gpu = tid >= COMPUTE
    rt = ~gpu & (cat == 2) & (corr != 0)
    cpu = ~gpu & (cat <= 1)
    other = ~gpu & ~rt & ~cpu
    # static head per (name, cat, tid, aid, class)
    cls = np.where(gpu, 0, np.where(rt, 1, np.where(cpu, 2, 3)))
    # one int64 key per (name, args, cat, thread, class); 1-D unique sorts far faster than axis=0
    key = (nm << 30) | ((aid + 1) << 10) | (cat << 6) | (tid << 2) | cls
    ukey, inv = np.unique(key, return_inverse=True)
    inv = inv.reshape(-1)
    uk = np.stack(
        [
            ukey >> 30,
            (ukey >> 6) & 15,
            (ukey >> 2) & 15,
            ((ukey >> 10) & ((1 << 20) - 1)) - 1,
            ukey & 3,
        ],
        axis=1,
    )
    drop = {
        0: ("External id", "device", "context", "stream", "correlation"),
        1: ("External id", "cbid", "correlation"),
        2: ("External id",),
        3: (),
    }
    pid_cpu = CPU_PID_BASE + 97 * rank
    heads = []
    for nmi, ki, ti, ai, cl in uk.tolist():
        a = trace.args[ai] if ai >= 0 else {}
        rest = {k: v for k, v in a.items() if k not in drop[cl]}
        body = dumps_(rest).decode()[1:-1]
        pid, t_ = (pid_gpu, STREAM_OF[ti]) if ti >= COMPUTE else (pid_cpu, _tid_os(rank, ti))
        h = f'"cat":"{CATS[ki]}","name":{dumps_(trace.names[nmi]).decode()},"pid":{pid},"tid":{t_}'
        if cl == 3:
            h += f',"args":{{{body}}}' if body else ""
        else:
            h += f',"args":{{{body}{"," if body else ""}'
        heads.append(h)
    head = np.array(heads, dtype=object)[inv]
    # numbers as JSON text in one orjson call each (its float formatting is C, not per-event repr)
    ts = np.array(_json_list((c["ts"][idx] / 1000.0).round(3)), dtype=object)
    dur = np.array(_json_list((c["dur"][idx] / 1000.0).round(3)), dtype=object)
    corr_n = c["corr"][idx]
    corr = np.array(_json_list(np.where(cpu | (corr_n == 0), corr_n, corr_n + CORR_BASE)),
                    dtype=object)  # fmt: skip
    corr_f = corr_n + CORR_BASE  # ac2g flow ids
    ext = np.array(_json_list(np.cumsum(cpu)), dtype=object)
    slots = np.empty(2 * n, dtype=object)
    # GPU events (+ their flow-end arrows)
    g = np.flatnonzero(gpu)
    st = np.array([STREAM_OF.get(int(t), 0) for t in range(8)])[tid[g]]
    slots[2 * g + 1] = [
        f'{{"ph":"X","ts":{t},"dur":{d},{h}"External id":{cr},"device":{rank},"context":1,'
        f'"stream":{s_},"correlation":{cr}}}}}'
        for h, t, d, cr, s_ in zip(
            head[g].tolist(),
            ts[g].tolist(),
            dur[g].tolist(),
            corr[g].tolist(),
            st.tolist(),
            strict=True,
        )
    ]
    gf = g[corr_n[g] != 0]
    stf = np.array([STREAM_OF.get(int(t), 0) for t in range(8)])[tid[gf]]
    slots[2 * gf] = [
        f'{{"ph":"f","id":{cr},"pid":{pid_gpu},"tid":{s_},"ts":{t},"cat":"ac2g",'
        '"name":"ac2g","bp":"e"}'
        for cr, s_, t in zip(
            (flow_base + corr_f[gf]).tolist(), stf.tolist(), ts[gf].tolist(), strict=True
        )
    ]
    # runtime calls with a correlation (+ flow-start arrows)
    r_ = np.flatnonzero(rt)
    ot_lut = np.array([_tid_os(rank, t) if t < COMPUTE else 0 for t in range(8)])
    ot = ot_lut[tid[r_]]
    slots[2 * r_] = [
        f'{{"ph":"s","id":{cr},"pid":{pid_cpu},"tid":{o},"ts":{t},"cat":"ac2g","name":"ac2g"}}'
        for cr, o, t in zip(
            (flow_base + corr_f[r_]).tolist(), ot.tolist(), ts[r_].tolist(), strict=True
        )
    ]
    slots[2 * r_ + 1] = [
        f'{{"ph":"X","ts":{t},"dur":{d},{h}"External id":{cr},"cbid":211,"correlation":{cr}}}}}'
        for h, t, d, cr in zip(
            head[r_].tolist(), ts[r_].tolist(), dur[r_].tolist(), corr[r_].tolist(), strict=True
        )
    ]
    # cpu ops and annotations: External id counts them in order; forward ops and backward
    # nodes carry their sequence number, and the linked ones a fwdbwd flow end
    p_ = np.flatnonzero(cpu & (corr_n == 0))
    slots[2 * p_ + 1] = [
        f'{{"ph":"X","ts":{t},"dur":{d},{h}"External id":{e}}}}}'
        for h, t, d, e in zip(
            head[p_].tolist(), ts[p_].tolist(), dur[p_].tolist(), ext[p_].tolist(), strict=True
        )
    ]
    q_ = np.flatnonzero(cpu & (corr_n != 0))
    slots[2 * q_ + 1] = [
        f'{{"ph":"X","ts":{t},"dur":{d},{h}"External id":{e},"Sequence number":{cr}}}}}'
        for h, t, d, e, cr in zip(
            head[q_].tolist(),
            ts[q_].tolist(),
            dur[q_].tolist(),
            ext[q_].tolist(),
            corr[q_].tolist(),
            strict=True,
        )
    ]
    fb = np.flatnonzero(_fwdbwd(trace, idx))
    fb_tid = tid[fb]
    slots[2 * fb] = [
        f'{{"ph":"s","id":{i},"pid":{pid_cpu},"tid":{o},"ts":{t},"cat":"fwdbwd","name":"fwdbwd"}}'
        if m
        else f'{{"ph":"f","id":{i},"pid":{pid_cpu},"tid":{o},"ts":{t},"cat":"fwdbwd",'
        '"name":"fwdbwd","bp":"e"}'
        for i, o, t, m in zip(
            (flow_base + FWDBWD_OFF + corr_n[fb]).tolist(),
            ot_lut[fb_tid].tolist(),
            ts[fb].tolist(),
            (fb_tid == MAIN).tolist(),
            strict=True,
        )
    ]
    o_ = np.flatnonzero(other)
    slots[2 * o_ + 1] = [
        f'{{"ph":"X","ts":{t},"dur":{d},{h}}}'
        for h, t, d in zip(head[o_].tolist(), ts[o_].tolist(), dur[o_].tolist(), strict=True)
    ]
    keep = np.zeros(2 * n, bool)
    keep[2 * np.arange(n) + 1] = True
    keep[2 * gf] = True
    keep[2 * r_] = True
    keep[2 * fb] = True
    return slots[keep].tolist()


def _meta_json(trace: Trace, rank: int, pid_gpu: int, workers: bool = True) -> list[str]:
    # metadata rows are few: reuse the dict path for them (they come last in the event list)
    idx = _rank_idx(trace, rank, workers)
    sub = _meta_events(rank, pid_gpu, set(np.unique(trace.cols["tid"][idx]).tolist()))
    if not workers:  # the per-rank Kineto files only (see _profiler_marks)
        sub += _profiler_marks(trace, rank)
    return [orjson.dumps(e).decode() for e in sub]


def _head_json(obj: dict) -> bytes:
    head_txt = json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))
    return head_txt[:-1].encode() + b', "traceEvents": ['


def perfetto_bytes(trace: Trace) -> bytes:
    parts: list[str] = []
    for r in range(trace.world):
        parts += _events_json(trace, r, pid_gpu=r, flow_base=r * FLOW_STRIDE)
        parts += _meta_json(trace, r, pid_gpu=r)
    return _head_json(_perfetto_head(trace)) + ",".join(parts).encode() + b"]}"


def hta_bytes(trace: Trace) -> dict[int, bytes]:
    out = {}
    for r in range(trace.world):
        parts = _events_json(trace, r, pid_gpu=r, flow_base=0, workers=False)
        parts += _meta_json(trace, r, pid_gpu=r, workers=False)
        out[r] = _head_json(_hta_head(trace, r)) + ",".join(parts).encode() + b"]}"
    return out


# ------------------------------------------------------------------------------------------------
API, API_AG = -1, -2  # timeline rows of the runtime calls made by the main / autograd thread
_TL_ROWS = [MAIN, API, AUTOGRAD, API_AG, WATCHDOG, WORKER0, WORKER1, COMPUTE, NCCL]
_TL_KIND = {
    MAIN: "cpu",
    AUTOGRAD: "cpu",
    WATCHDOG: "cpu",
    WORKER0: "dataloader",
    WORKER1: "dataloader",
    API: "cuda_api",
    API_AG: "cuda_api",
    COMPUTE: "gpu",
    NCCL: "nccl",
}
_TL_NAME = {
    AUTOGRAD: "autograd thread (pt_autograd_0)",
    API_AG: "CUDA API (autograd thread)",
    WATCHDOG: "NCCL watchdog (pt_nccl_watchdg)",
}


def _tl_row_name(rank: int, t: int, amd: bool = False) -> str:
    name = _TL_NAME.get(t) or row_name(rank, t)
    # ROCm's runtime is HIP: its calls are hipLaunchKernel & co, and rocprof calls the row HIP API
    return name.replace("CUDA API", "HIP API") if amd else name


def to_timeline(trace: Trace) -> dict:
    """Nsight-style rows per rank: main thread and its CUDA API calls, the autograd thread and
    its calls, the NCCL watchdog, the DataLoader workers, then the GPU streams."""
    c = trace.cols
    rows: list[dict] = []
    row_of: dict[tuple[int, int], int] = {}
    amd = trace.hw.vendor == "amd"
    tid = c["tid"].astype(np.int64)
    is_rt = (c["cat"] == 2) & ((tid == MAIN) | (tid == AUTOGRAD))
    rowkey_tid = np.where(is_rt, np.where(tid == AUTOGRAD, API_AG, API), tid)
    depth = c["depth"].astype(np.int64).copy()
    depth[is_rt] = 0
    for r in range(trace.world):
        mr = c["rank"] == r
        present = set(np.unique(rowkey_tid[mr]).tolist())
        for t in _TL_ROWS:
            if t in present:
                row_of[(r, t)] = len(rows)
                md = int(depth[mr & (rowkey_tid == t)].max()) + 1
                rows.append(
                    {"rank": r, "kind": _TL_KIND[t], "name": _tl_row_name(r, t, amd), "depth": md}
                )
    lut = np.full((trace.world, 10), -1, np.int64)
    for (r, t), i in row_of.items():
        lut[r, t + 2] = i
    row = lut[c["rank"].astype(np.int64), rowkey_tid + 2]
    cat = c["cat"].astype(np.int64).copy()
    cat[c["tid"] == NCCL] = 6
    cat[(c["tid"] == WORKER0) | (c["tid"] == WORKER1)] = 7
    o = np.lexsort((depth, c["ts"], row))
    # names: only those used
    used, name_idx = np.unique(c["name"][o], return_inverse=True)
    corr = np.where(np.isin(c["cat"], [2, 3, 4, 5]), c["corr"], 0)[o]
    args: dict[str, dict] = {}
    aid = c["aid"][o]
    for i in np.flatnonzero(aid >= 0).tolist():
        a = dict(trace.args[aid[i]])
        if "In msg nelems" in a:
            from .kernels import DTYPE_BYTES

            a["bytes"] = int(a["In msg nelems"]) * DTYPE_BYTES.get(a.get("dtype", ""), 2)
        if c["tid"][o[i]] >= COMPUTE:
            a["stream"] = STREAM_OF[int(c["tid"][o[i]])]
        args[str(i)] = a
    span_end = float((c["ts"] + c["dur"]).max() / 1000.0) if len(c["ts"]) else 0.0
    return {
        "v": 1,
        "span": [0.0, round(span_end, 3)],
        "ranks": [{"rank": r, "label": f"rank {r}"} for r in range(trace.world)],
        "rows": rows,
        "names": [trace.names[u] for u in used.tolist()],
        "cats": TL_CATS,
        "slices": {
            "row": row[o].tolist(),
            "ts": _us(c["ts"][o]),
            "dur": _us(c["dur"][o]),
            "depth": depth[o].tolist(),
            "name": name_idx.tolist(),
            "cat": cat[o].tolist(),
            "corr": corr.tolist(),
        },
        "args": args,
    }


# ------------------------------------------------------------------------------------------------
MAGIC = b"TTE1"
THREAD_LAYOUT = 2  # thread codes: main, 2 workers, autograd, watchdog, compute, NCCL


def dumps(trace: Trace) -> bytes:
    meta = {
        "scenario": trace.scenario,
        "seed": trace.seed,
        "hardware": trace.hardware,
        "framing": trace.framing,
        "world": trace.world,
        "prompt": trace.prompt,
        "key": trace.key.to_dict(),
        "names": trace.names,
        "args": trace.args,
        "n": len(trace.cols["ts"]),
        "version": trace.version,
        "threads": THREAD_LAYOUT,
    }
    mb = orjson.dumps(meta)
    cols = trace.cols
    ts = cols["ts"].copy()
    body = b"".join(np.ascontiguousarray(cols[c]).tobytes() for c in COLS if c != "ts")
    body = ts.tobytes() + body
    return MAGIC + struct.pack("<I", len(mb)) + mb + zlib.compress(body, 3)


def loads(data: bytes) -> Trace:
    from . import AnswerKey, Trace

    if data[:4] != MAGIC:
        raise ValueError("not a stored trace")
    (n_meta,) = struct.unpack("<I", data[4:8])
    meta = orjson.loads(data[8 : 8 + n_meta])
    body = zlib.decompress(data[8 + n_meta :])
    n = meta["n"]
    cols, off = {}, 0
    for c in ("ts", *[c for c in COLS if c != "ts"]):
        dt = np.dtype(DTYPES[c])
        cols[c] = np.frombuffer(body, dt, n, off).copy()
        off += n * dt.itemsize
    cols = {c: cols[c] for c in COLS}
    if meta.get("threads") != THREAD_LAYOUT:  # stored before the autograd and watchdog threads
        cols["tid"] = np.array([MAIN, WORKER0, WORKER1, COMPUTE, NCCL], np.int8)[cols["tid"]]
    return Trace(
        scenario=meta["scenario"],
        seed=meta["seed"],
        hardware=meta["hardware"],
        framing=meta["framing"],
        world=meta["world"],
        prompt=meta["prompt"],
        key=AnswerKey.from_dict(meta["key"]),
        names=meta["names"],
        args=meta["args"],
        cols=cols,
        version=meta.get("version", ""),
    )


def export_to_path(trace: Trace, fmt: str, out_path: str | os.PathLike) -> Path:
    out = Path(out_path)
    if fmt == "perfetto":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(perfetto_bytes(trace))
    elif fmt == "timeline":
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(orjson.dumps(to_timeline(trace)))
    elif fmt == "hta":
        out.mkdir(parents=True, exist_ok=True)
        for r, b in hta_bytes(trace).items():
            (out / f"rank-{r}.json").write_bytes(b)
    else:
        raise ValueError(f"unknown format {fmt!r}; choose perfetto, hta or timeline")
    return out
