"""Columnar event store and the small vectorised simulator the workloads are built from.

All times are integer nanoseconds internally (exported as microseconds with three decimals), so
nesting computed here survives export exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from .hardware import Hardware

# thread codes inside one rank
MAIN, WORKER0, WORKER1, COMPUTE, NCCL = 0, 1, 2, 3, 4
STREAM_OF = {COMPUTE: 7, NCCL: 20}

CATS = ["user_annotation", "cpu_op", "cuda_runtime", "kernel", "gpu_memcpy", "gpu_memset"]
C_ANN, C_OP, C_RT, C_KERN, C_MEMCPY, C_MEMSET = range(6)

COLS = ("rank", "tid", "ts", "dur", "name", "cat", "depth", "corr", "aid")
DTYPES = {
    "rank": np.int16,
    "tid": np.int8,
    "ts": np.int64,
    "dur": np.int64,
    "name": np.int32,
    "cat": np.int8,
    "depth": np.int8,
    "corr": np.int64,
    "aid": np.int32,
}


class Interner:
    """Names and argument templates, interned per trace."""

    def __init__(self, names: list[str] | None = None, args: list[dict] | None = None):
        self.names: list[str] = list(names or [])
        self._nidx = {n: i for i, n in enumerate(self.names)}
        self.args: list[dict] = list(args or [])
        self._aidx = {
            orjson.dumps(a, option=orjson.OPT_SORT_KEYS): i for i, a in enumerate(self.args)
        }

    def n(self, name: str) -> int:
        i = self._nidx.get(name)
        if i is None:
            i = self._nidx[name] = len(self.names)
            self.names.append(name)
        return i

    def a(self, args: dict | None) -> int:
        if not args:
            return -1
        k = orjson.dumps(args, option=orjson.OPT_SORT_KEYS)
        i = self._aidx.get(k)
        if i is None:
            i = self._aidx[k] = len(self.args)
            self.args.append(args)
        return i


class Recorder:
    def __init__(self) -> None:
        self.parts: dict[str, list[np.ndarray]] = {c: [] for c in COLS}
        self.rows: list[tuple] = []  # scalar events, converted in one go at the end

    def add(self, rank, tid, ts, dur, name, cat, depth, corr=0, aid=-1) -> None:
        vals = (rank, tid, ts, dur, name, cat, depth, corr, aid)
        shapes = [v.shape for v in vals if isinstance(v, np.ndarray) and v.size != 1]
        if not shapes:
            self.rows.append(tuple(int(np.asarray(v).reshape(-1)[0]) for v in vals))
            return
        shape = shapes[0] if all(x == shapes[0] for x in shapes) else np.broadcast_shapes(*shapes)
        n = int(np.prod(shape))
        for c, v in zip(COLS, vals, strict=True):
            if isinstance(v, np.ndarray) and v.ndim:
                if v.shape != shape:
                    v = np.broadcast_to(v, shape)
                self.parts[c].append(v.ravel().astype(DTYPES[c], copy=False))
            else:
                self.parts[c].append(np.full(n, v, DTYPES[c]))

    def finish(self) -> dict[str, np.ndarray]:
        if self.rows:
            arr = np.array(self.rows, dtype=np.int64)
            for k, c in enumerate(COLS):
                self.parts[c].append(arr[:, k].astype(DTYPES[c]))
            self.rows = []
        cols = {
            c: np.concatenate(self.parts[c]) if self.parts[c] else np.zeros(0, DTYPES[c])
            for c in COLS
        }
        order = np.lexsort((cols["depth"], -cols["dur"], cols["ts"], cols["tid"], cols["rank"]))
        return {c: np.ascontiguousarray(v[order]) for c, v in cols.items()}


@dataclass
class Units:
    """A template of CPU ops, each launching one GPU event."""

    outer: np.ndarray  # name id of the outer cpu op / annotation
    ocat: np.ndarray  # category of the outer slice
    oaid: np.ndarray  # args of the outer slice
    inner: np.ndarray  # name id of the nested cpu op, -1 = none
    iaid: np.ndarray
    launch: np.ndarray  # runtime call name id
    kname: np.ndarray  # GPU event name id
    kcat: np.ndarray
    kaid: np.ndarray
    stream: np.ndarray  # COMPUTE | NCCL
    cpu_us: np.ndarray  # framework overhead around the launch
    gpu_us: np.ndarray  # GPU duration (nccl: transfer time of the collective)

    @staticmethod
    def build(rows: list[tuple]) -> Units:
        cols = list(zip(*rows, strict=True))
        ints = [np.asarray(c, dtype=np.int64) for c in cols[:10]]
        return Units(*ints, np.asarray(cols[10], float), np.asarray(cols[11], float))

    def __len__(self) -> int:
        return len(self.outer)

    def concat(self, other: Units) -> Units:
        return Units(*[np.concatenate([getattr(self, f), getattr(other, f)]) for f in _UF])

    def scaled_gpu(self, mask: np.ndarray, factor: float) -> Units:
        g = self.gpu_us.copy()
        g[mask] *= factor
        return Units(*[getattr(self, f) for f in _UF[:-1]], g)


_UF = (
    "outer",
    "ocat",
    "oaid",
    "inner",
    "iaid",
    "launch",
    "kname",
    "kcat",
    "kaid",
    "stream",
    "cpu_us",
    "gpu_us",
)


@dataclass
class Sim:
    """State of a lock-step multi-rank simulation (vectors over ranks)."""

    R: int
    hw: Hardware
    rng: np.random.Generator
    it: Interner
    rec: Recorder = field(default_factory=Recorder)
    launch_us: float = 8.0
    cpu: np.ndarray = None  # type: ignore[assignment]
    free_c: np.ndarray = None  # type: ignore[assignment]
    free_n: np.ndarray = None  # type: ignore[assignment]
    corr: np.ndarray = None  # type: ignore[assignment]
    gpu_scale: np.ndarray = None  # type: ignore[assignment]
    nccl_end: np.ndarray = None  # type: ignore[assignment]
    ranks: np.ndarray = None  # type: ignore[assignment]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        z = np.full(self.R, 1_000_000, np.int64)  # traces start at 1 ms
        self.cpu, self.free_c, self.free_n = z.copy(), z.copy(), z.copy()
        self.nccl_end = z.copy()
        self.corr = np.zeros(self.R, np.int64)
        self.gpu_scale = np.ones(self.R)
        self.ranks = np.arange(self.R)
        self.launch_us = self.hw.launch_us

    # ---- primitive slices -------------------------------------------------------------------
    def slice(self, tid, start, dur, name: str, cat: int, depth: int, aid: int = -1) -> None:
        self.rec.add(self.ranks, tid, start, dur, self.it.n(name), cat, depth, 0, aid)

    def next_corr(self, n: int = 1) -> np.ndarray:
        c = self.corr[:, None] + np.arange(1, n + 1)[None, :]
        self.corr += n
        return c

    def launch_lat(self, shape) -> np.ndarray:
        v = self.launch_us * self.rng.lognormal(0.0, 0.22, shape)
        return (np.clip(v, 4.6, 38.0) * 1000).astype(np.int64)

    # ---- a block of launches ----------------------------------------------------------------
    def block(
        self,
        u: Units,
        *,
        depth: int,
        ann: str | None = None,
        wait_nccl: bool = False,
        gpu_not_before: np.ndarray | None = None,
    ) -> None:
        R, n = self.R, len(u)
        rng, _it = self.rng, self.it
        t0 = self.cpu + (1000 if ann else 0)
        d = depth + (1 if ann else 0)
        cpu = u.cpu_us[None, :] * rng.lognormal(0.0, 0.12, (R, n))
        pre = (cpu * 600).astype(np.int64) + 1000
        post = (cpu * 400).astype(np.int64) + 1000
        L = self.launch_lat((R, n))
        gap = rng.integers(1500, 5000, (R, n))
        dur_o = pre + L + post
        stp = dur_o + gap
        start = t0[:, None] + np.cumsum(stp, axis=1) - stp
        ls = start + pre
        corr = self.next_corr(n)
        rk = np.broadcast_to(self.ranks[:, None], (R, n))
        rec = self.rec
        rec.add(rk, MAIN, start, dur_o, u.outer[None, :], u.ocat[None, :], d, 0, u.oaid[None, :])
        has_in = u.inner >= 0
        if has_in.any():
            i0 = start[:, has_in] + pre[:, has_in] // 2
            i1 = ls[:, has_in] + L[:, has_in] + post[:, has_in] // 2
            rec.add(
                rk[:, has_in],
                MAIN,
                i0,
                i1 - i0,
                u.inner[None, has_in],
                C_OP,
                d + 1,
                0,
                u.iaid[None, has_in],
            )
        ldepth = np.where(has_in, d + 2, d + 1)[None, :]
        rec.add(rk, MAIN, ls, L, u.launch[None, :], C_RT, ldepth, corr, -1)
        # GPU side
        g = u.gpu_us[None, :] * self.gpu_scale[:, None] * rng.lognormal(0.0, 0.03, (R, n))
        g = np.maximum((g * 1000).astype(np.int64), 1500)
        ready = ls + (L * 6) // 10
        comp = u.stream == COMPUTE
        free0 = self.free_c.copy()
        if wait_nccl:
            free0 = np.maximum(free0, self.nccl_end + 2000)
        if gpu_not_before is not None:
            free0 = np.maximum(free0, gpu_not_before)
        if comp.any():
            gc, ac = g[:, comp], ready[:, comp].copy()
            kg = rng.integers(900, 2600, gc.shape)
            sg = gc + kg
            G = np.cumsum(sg, axis=1) - sg
            ac[:, 0] = np.maximum(ac[:, 0], free0)
            st = G + np.maximum.accumulate(ac - G, axis=1)
            en = st + gc
            rec.add(
                rk[:, comp],
                COMPUTE,
                st,
                gc,
                u.kname[None, comp],
                u.kcat[None, comp],
                0,
                corr[:, comp],
                u.kaid[None, comp],
            )
            self.free_c = en[:, -1] + kg[:, -1]
        else:
            en = np.zeros((R, 0), np.int64)
        nidx = np.flatnonzero(~comp)
        if len(nidx):
            ncomp_before = np.cumsum(comp)  # compute units up to and including j
            for j in nidx:
                k = ncomp_before[j]
                ready_r = en[:, k - 1] if k > 0 else free0
                s = np.maximum(np.maximum(ready[:, j], ready_r), self.free_n)
                T = int(u.gpu_us[j] * 1000 * rng.lognormal(0.0, 0.01))
                end = s.max() + max(T, 1500)
                rec.add(
                    self.ranks, NCCL, s, end - s, u.kname[j], u.kcat[j], 0, corr[:, j], u.kaid[j]
                )
                self.free_n = end + rng.integers(1000, 3000, R)
                self.nccl_end = np.full(R, end)
        end_cpu = start[:, -1] + dur_o[:, -1]
        if ann:
            self.slice(MAIN, self.cpu, end_cpu + 1000 - self.cpu, ann, C_ANN, depth)
            end_cpu = end_cpu + 1000
        self.cpu = end_cpu + rng.integers(2000, 6000, R)

    # ---- host/device synchronisation --------------------------------------------------------
    def sync_item(
        self,
        depth: int,
        *,
        host_after_us: float = 0.0,
        op: str = "aten::item",
        inner: str = "aten::_local_scalar_dense",
        dims=None,
    ) -> np.ndarray:
        """`.item()`-style read back: tiny DtoH copy, then block until the stream drains.

        Returns the CPU time the sync returned (per rank)."""
        it, rng, R = self.it, self.rng, self.R
        amd = self.hw.vendor == "amd"
        s = self.cpu
        pre = rng.integers(3000, 8000, R)
        L = self.launch_lat(R)
        ls = s + pre
        corr = self.next_corr(1)[:, 0]
        kst = np.maximum(ls + (L * 6) // 10, self.free_c)
        kd = rng.integers(1500, 2600, R)
        self.free_c = kst + kd + 1000
        sync_s = ls + L + rng.integers(500, 1500, R)
        sync_e = np.maximum(sync_s, kst + kd) + int(self.hw.sync_us * 1000 * 0.6)
        sync_e = np.maximum(sync_e, sync_s + 2000)
        post = rng.integers(2000, 5000, R)
        end = sync_e + post
        oaid = it.a({"Input Dims": dims or [[]], "Input type": ["c10::BFloat16"]}) if dims else -1
        self.slice(MAIN, s, end - s, op, C_OP, depth, oaid)
        self.slice(MAIN, s + 1000, end - 1000 - (s + 1000), inner, C_OP, depth + 1)
        rec = self.rec
        rec.add(
            self.ranks,
            MAIN,
            ls,
            L,
            it.n("hipMemcpyAsync" if amd else "cudaMemcpyAsync"),
            C_RT,
            depth + 2,
            corr,
            -1,
        )
        rec.add(
            self.ranks,
            COMPUTE,
            kst,
            kd,
            it.n("Memcpy DtoH (Device -> Pageable)"),
            C_MEMCPY,
            0,
            corr,
            it.a({"bytes": 4, "memory bandwidth (GB/s)": 0.002}),
        )
        self.slice(
            MAIN,
            sync_s,
            sync_e - sync_s,
            "hipStreamSynchronize" if amd else "cudaStreamSynchronize",
            C_RT,
            depth + 2,
        )
        self.cpu = end + int(host_after_us * 1000) + rng.integers(2000, 5000, R)
        return sync_e

    def cpu_op(
        self,
        name: str,
        dur_ns: np.ndarray,
        depth: int,
        cat: int = C_OP,
        tid: int = MAIN,
        aid: int = -1,
    ) -> None:
        dur_ns = np.maximum(np.asarray(dur_ns, np.int64), 1000)
        self.slice(tid, self.cpu, dur_ns, name, cat, depth, aid)
        self.cpu = self.cpu + dur_ns + self.rng.integers(1000, 3000, self.R)
