"""Columnar event store and the small vectorised simulator the workloads are built from.

All times are integer nanoseconds internally (exported as microseconds with three decimals), so
nesting computed here survives export exactly.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from .hardware import Hardware

# thread codes inside one rank: CPU threads first (main, DataLoader workers, the autograd engine's
# device thread, the NCCL watchdog), then GPU streams (every `tid >= COMPUTE` is a stream)
MAIN, WORKER0, WORKER1, AUTOGRAD, WATCHDOG, COMPUTE, NCCL = range(7)
STREAM_OF = {COMPUTE: 7, NCCL: 20}
BWD_PREFIX = "autograd::engine::evaluate_function: "
GEMM_NAME = re.compile(r"gemm|Cijk_|gemv|wvSplitK", re.I)

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


# the backward nodes of a matmul, which transpose a saved operand before each gradient's GEMM
_TRANSPOSING_NODES = ("MmBackward0", "AddmmBackward0")


class Forest:
    """What real traces carry around every launch, by kernel kind (name-id lookup tables).

    Per unit: the backward node between the autograd engine's `evaluate_function` and the aten op
    (`AddmmBackward0`, with the forward op's sequence number), and the runtime calls before the
    launch (the caching allocator's capture check; `cudaFuncSetAttribute` for cuBLAS and flash
    kernels, plus the occupancy query for flash; for NCCL the `cudaEventRecord` on the compute
    stream and the comm stream's `cudaStreamWaitEvent` on it; for a pinned copy the stream
    priority look-ups) and after it (`cudaEventRecord`: NCCL's work-end event, the pinned host
    block's release event)."""

    def __init__(self, it: Interner, hw: Hardware) -> None:
        self.it = it
        pre = "hip" if hw.vendor == "amd" else "cuda"
        self.empty, self.reshape, self.view = (it.n(x) for x in ("aten::empty", "aten::reshape",
                                                                 "aten::view"))  # fmt: skip
        rt = {k: it.n(pre + k) for k in ("StreamIsCapturing", "FuncSetAttribute",
              "OccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "EventRecord",
              "StreamWaitEvent", "StreamGetPriority", "DeviceGetStreamPriorityRange")}  # fmt: skip
        self.rt = rt
        self._klut = np.zeros((0, 5), np.int64)  # per kernel name: 3 pre calls, post call, view?
        # per outer: node id, backward?, linked?, in place?, transposes a weight?
        self._olut = np.zeros((0, 5), np.int64)
        self.t, self.transpose, self.as_strided = (
            it.n(x) for x in ("aten::t", "aten::transpose", "aten::as_strided")
        )
        self.to_copy, self.copy_ = it.n("aten::_to_copy"), it.n("aten::copy_")

    def _kind(self, name: str) -> tuple[int, int, int, int, int]:
        rt = self.rt
        if name.startswith("nccl"):
            return rt["EventRecord"], rt["StreamWaitEvent"], -1, rt["EventRecord"], 0
        if name.startswith("Memcpy HtoD"):
            return (rt["StreamIsCapturing"], rt["StreamGetPriority"],
                    rt["DeviceGetStreamPriorityRange"], rt["EventRecord"], 1)  # fmt: skip
        if "flash" in name or "fmha" in name:
            return (rt["StreamIsCapturing"], rt["FuncSetAttribute"],
                    rt["OccupancyMaxActiveBlocksPerMultiprocessorWithFlags"], -1, 1)  # fmt: skip
        if GEMM_NAME.search(name):  # a matmul's 3-D input goes through reshape → view
            return rt["StreamIsCapturing"], rt["FuncSetAttribute"], -1, -1, 2
        return rt["StreamIsCapturing"], -1, -1, -1, 1

    def _outer(self, name: str) -> tuple[int, int, int, int, int]:
        """(backward node id, backward?, has a forward op?, writes in place / into `out`?,
        transposes a weight?): `aten::linear` takes its weight through `aten::t` (a transposed
        view: `aten::transpose` → `aten::as_strided`) before the matmul, and so do the matmul
        backward nodes before each gradient's mm; a compiled graph (`aten::mm` under Inductor)
        hands the library call a transposed view it made up front."""
        # (Inductor's launcher records a Triton kernel's launch under the kernel's own name;
        # the graph allocated its buffers up front)
        inplace = int(name.endswith(("_", "mul_out")) or name.startswith("triton_"))
        if not name.startswith(BWD_PREFIX):
            return -1, 0, 0, inplace, int(name == "aten::linear")
        node = name[len(BWD_PREFIX) :]
        acc = "AccumulateGrad" in node
        return self.it.n(node), 1, int(not acc), int(acc), int(node in _TRANSPOSING_NODES)

    def _grow(self) -> None:
        names = self.it.names
        for attr, fn in (("_klut", self._kind), ("_olut", self._outer)):
            lut = getattr(self, attr)
            if len(lut) < len(names):
                add = np.array([fn(n) for n in names[len(lut) :]], np.int64)
                setattr(self, attr, np.concatenate([lut, add.reshape(len(add), -1)]))

    def plan(self, u: Units) -> tuple[np.ndarray, np.ndarray]:
        """(kernel plan (n, 5), outer plan (n, 4)) for the units of `u`, kept on the template
        (templates are reused every step; their names are interned before they are built)."""
        got = getattr(u, "_plan", None)
        if got is not None and got[0] is self:
            return got[1], got[2]
        if len(self._klut) < len(self.it.names) or len(self._olut) < len(self.it.names):
            self._grow()
        kp, op = self._klut[u.kname], self._olut[u.outer]
        u._plan = (self, kp, op)  # type: ignore[attr-defined]
        return kp, op


class Recorder:
    """Columnar events appended in batches; columns are materialised once in `finish`."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, tuple, tuple]] = []  # (n, shape, value per column)
        self.rows: list[tuple] = []  # scalar events, converted in one go at the end
        # the op forest around every launch (set by the simulator; None records launches bare)
        self.forest: Forest | None = None
        # called once before the columns are built (threads that run beside the step loop)
        self.on_finish: Callable[[], None] | None = None

    def add(self, rank, tid, ts, dur, name, cat, depth, corr=0, aid=-1) -> None:
        vals = (rank, tid, ts, dur, name, cat, depth, corr, aid)
        shapes = [v.shape for v in vals if isinstance(v, np.ndarray) and v.size != 1]
        if not shapes:
            self.rows.append(tuple(int(np.asarray(v).reshape(-1)[0]) for v in vals))
            return
        shape = shapes[0] if all(x == shapes[0] for x in shapes) else np.broadcast_shapes(*shapes)
        n = math.prod(shape)
        if n:
            # kept by reference and broadcast in finish(): callers never mutate them afterwards
            self.parts.append((n, shape, vals))

    def finish(self) -> dict[str, np.ndarray]:
        if self.on_finish is not None:
            hook, self.on_finish = self.on_finish, None
            hook()
        N = sum(p[0] for p in self.parts) + len(self.rows)
        cols = {c: np.empty(N, DTYPES[c]) for c in COLS}
        arrs = [cols[c] for c in COLS]
        o = 0
        for n, shape, vals in self.parts:
            for a, v in zip(arrs, vals, strict=True):
                a[o : o + n].reshape(shape)[...] = v
            o += n
        if self.rows:
            rows = np.array(self.rows, dtype=np.int64)
            for k, a in enumerate(arrs):
                a[o:] = rows[:, k]
        self.parts, self.rows = [], []
        # order: rank, tid, ts, then longer (outer) slices first, then depth
        key = (cols["rank"].astype(np.int64) << 59) | (cols["tid"].astype(np.int64) << 56)
        key |= cols["ts"] - (cols["ts"].min() if N else 0)  # loader fetches may start < 0
        order = np.argsort(key)
        ks = key[order]
        eq = ks[1:] == ks[:-1]
        if eq.any():  # same start on one row: longer first, then depth, then insertion order
            run = np.r_[False, eq] | np.r_[eq, False]
            sel = np.flatnonzero(run)
            grp = np.cumsum(np.r_[True, ~eq])[sel]
            oi = order[sel]
            tie = -cols["dur"][oi] * 256 + cols["depth"][oi]
            order[sel] = oi[np.lexsort((oi, tie, grp))]
        return {c: v[order] for c, v in cols.items()}


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
        arrs = [np.asarray(c, dtype=np.int64) for c in cols[:10]]
        arrs += [np.asarray(cols[10], float), np.asarray(cols[11], float)]
        return Units(**dict(zip(_UF, arrs, strict=True)))

    def __len__(self) -> int:
        return len(self.outer)

    def concat(self, other: Units) -> Units:
        return Units(**{f: np.concatenate([getattr(self, f), getattr(other, f)]) for f in _UF})

    def scaled_gpu(self, mask: np.ndarray, factor: float) -> Units:
        g = self.gpu_us.copy()
        g[mask] *= factor
        return Units(**{**{f: getattr(self, f) for f in _UF[:-1]}, "gpu_us": g})

    def with_cpu(self, cpu_us: np.ndarray) -> Units:
        return Units(**{**{f: getattr(self, f) for f in _UF}, "cpu_us": np.asarray(cpu_us, float)})


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


def emit_units(
    rec: Recorder,
    u: Units,
    rk: np.ndarray,
    start: np.ndarray,
    pre: np.ndarray,
    L: np.ndarray,
    post: np.ndarray,
    depth: int,
    corr: np.ndarray,
    seq: np.ndarray | int = 0,
    link: np.ndarray | int = 0,
) -> int:
    """The CPU side of a block of units (arrays of shape `(..., n)`): each unit's outer op, its
    nested aten op, the op forest around the launch and the launch itself. Backward units (and
    the whole block they are in, DDP's reducer hooks included) run on the autograd thread from
    depth 0, with the backward node (`link`: the sequence number of the forward op it belongs
    to) between the engine's `evaluate_function` and the aten op. Forward ops carry their own
    sequence number (`seq`) in the corr column. Returns the thread used."""
    ls = start + pre
    end = ls + L + post
    rk = np.broadcast_to(rk, start.shape)
    fx = rec.forest
    has_in = u.inner >= 0
    if fx is None:  # bare: outer op, nested op, launch
        rec.add(rk, MAIN, start, end - start, u.outer, u.ocat, depth, 0, u.oaid)
        if has_in.any():
            s_ = start[..., has_in] + pre[..., has_in] // 2
            rec.add(rk[..., has_in], MAIN, s_, end[..., has_in] - 150 - s_, u.inner[has_in],
                    C_OP, depth + 1, 0, u.iaid[has_in])  # fmt: skip
        rec.add(rk, MAIN, ls, L, u.launch, C_RT, depth + 1 + has_in, corr)
        return MAIN
    kp, op = fx.plan(u)
    bw = op[:, 1] == 1
    alloc = op[:, 3] == 0  # in-place and out= ops allocate nothing: no aten::empty, no view
    tid = AUTOGRAD if bw.any() else MAIN
    d = 0 if tid == AUTOGRAD else depth
    rec.add(rk, tid, start, end - start, u.outer, u.ocat, d, seq, u.oaid)
    mid = op[:, 0] >= 0
    if mid.any():
        lk = link[..., mid] if isinstance(link, np.ndarray) else link
        rec.add(rk[..., mid], tid, start[..., mid] + 50, (end - start)[..., mid] - 100,
                op[mid, 0], C_OP, d + 1, lk)  # fmt: skip
    d1 = d + 1 + mid
    h = pre // 2
    # before the nested op: the output's allocation, or a matmul's transposed weight view
    tw = (op[:, 4] == 1) & (kp[:, 4] == 2)  # (a bias gradient's sum transposes nothing)
    em = alloc & ~tw
    rec.add(rk[..., em], tid, (start + 100)[..., em], (h - 200)[..., em], fx.empty, C_OP, d1[em])
    if tw.any():
        s0, w0 = (start + 100)[..., tw], np.maximum(h - 200, 400)[..., tw]
        for k, nm in enumerate((fx.t, fx.transpose, fx.as_strided)):
            rec.add(rk[..., tw], tid, s0 + 60 * k, w0 - 120 * k, nm, C_OP, d1[tw] + k)
    if has_in.any():
        s_ = start[..., has_in] + h[..., has_in]
        rec.add(rk[..., has_in], tid, s_, end[..., has_in] - 150 - s_, u.inner[has_in], C_OP,
                d1[has_in], 0, u.iaid[has_in])  # fmt: skip
    ld = d1 + has_in
    # runtime calls before the launch, packed into the time between the op's start and it
    n_pre = np.maximum((kp[:, :3] >= 0).sum(1), 1)
    w = (pre - h - 200) // n_pre
    base = start + h + 100
    for k in range(3):
        mk = kp[:, k] >= 0
        if mk.any():
            wk = w[..., mk]
            rec.add(rk[..., mk], tid, base[..., mk] + k * wk, (wk * 3) // 4, kp[mk, k], C_RT,
                    ld[mk])  # fmt: skip
    # a copy (`aten::_to_copy`: a dtype cast, a host-to-device batch) launches from the
    # `aten::copy_` it makes into its new tensor
    cp = u.inner == fx.to_copy
    if cp.any():
        rec.add(rk[..., cp], tid, (ls - 60)[..., cp], np.broadcast_to(L, ls.shape)[..., cp] + 100,
                fx.copy_, C_OP, ld[cp])  # fmt: skip
    rec.add(rk, tid, ls, L, u.launch, C_RT, ld + cp, corr)
    p4 = post // 4
    mp = kp[:, 3] >= 0
    if mp.any():
        rec.add(rk[..., mp], tid, (ls + L + 50)[..., mp], (p4 - 100)[..., mp], kp[mp, 3], C_RT,
                ld[mp])  # fmt: skip
    # the result's view in forward ops (a matmul's through `aten::reshape`)
    mv = (kp[:, 4] >= 1) & alloc & (tid == MAIN)  # (the backward engine hands results on)
    if mv.any():
        rs = (ls + L + p4 + 50)[..., mv]
        rw = (post - p4 - 300)[..., mv]
        deep = has_in[mv] & ~mid[mv] & (kp[mv, 4] == 2)
        rec.add(rk[..., mv], tid, rs + 100, rw - 200, fx.view, C_OP, ld[mv] + deep)
        if deep.any():
            rec.add(rk[..., mv][..., deep], tid, rs[..., deep], rw[..., deep], fx.reshape, C_OP,
                    ld[mv][deep])  # fmt: skip
    return tid


def link_backward(fwd_seq: np.ndarray, linked: np.ndarray) -> np.ndarray:
    """Sequence numbers for the backward nodes of a block (`linked`: units whose node has a
    forward op), from the forward ops' numbers `fwd_seq` (lead + (nf,)): backward runs the
    forward in reverse, so node j takes forward op nf-1-j·nf/nb, each forward op at most once."""
    n = len(linked)
    out = np.zeros((*fwd_seq.shape[:-1], n), np.int64)
    nf, cols = fwd_seq.shape[-1], np.flatnonzero(linked)
    nb = len(cols)
    if not nf or not nb:
        return out
    fi = nf - 1 - (np.arange(nb) * nf) // nb
    first = np.r_[True, fi[1:] != fi[:-1]]
    out[..., cols[first]] = fwd_seq[..., fi[first]]
    return out


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
    seq: np.ndarray = None  # type: ignore[assignment]
    _fwd_seq: list = field(default_factory=list)  # forward ops' sequence numbers, not yet linked

    def __post_init__(self) -> None:
        z = np.full(self.R, 1_000_000, np.int64)  # traces start at 1 ms
        self.cpu, self.free_c, self.free_n = z.copy(), z.copy(), z.copy()
        self.nccl_end = z.copy()
        self.corr = np.zeros(self.R, np.int64)
        self.gpu_scale = np.ones(self.R)
        self.ranks = np.arange(self.R)
        self.launch_us = self.hw.launch_us
        self.seq = np.zeros(self.R, np.int64)
        self.rec.forest = Forest(self.it, self.hw)
        self.rec.on_finish = self._side_threads

    def _side_threads(self) -> None:
        """Threads that run beside the step loop: a multi-rank job's NCCL watchdog. It wakes on
        a fixed wall-clock cadence (about every 100 ms, whatever the step length) and queries the
        end event (`cudaEventQuery`) of every work in its list at that moment. A work joins the
        list when the host enqueues the collective (right after its launch returns, which is
        long before the kernel runs when the host is ahead of the GPU) and leaves it at the
        first wake-up that sees its end event complete. So each work is queried about
        1 + (its GPU end − its host enqueue) / period times: its queries follow how long the
        collective is outstanding from the host's point of view, not when its kernel starts; a
        long step with no collective in flight (a compile, a loader wait) shows the thread idle."""
        if self.R < 2:
            return
        rng, R = self.rng, self.R
        t_end = int(self.cpu.max())
        # the NCCL kernels recorded so far (rank, corr, start, end): the works the watchdog tracks
        rk_l, c_l, s_l, e_l = [], [], [], []
        for _n, shape, vals in self.rec.parts:
            if np.ndim(vals[1]) == 0 and int(vals[1]) == NCCL:
                rk_l.append(np.broadcast_to(vals[0], shape).ravel())
                c_l.append(np.broadcast_to(vals[7], shape).ravel())
                s_l.append(np.broadcast_to(vals[2], shape).ravel())
                e_l.append(np.broadcast_to(vals[2] + vals[3], shape).ravel())
        rows = [r for r in self.rec.rows if r[1] == NCCL]
        if rows:
            a = np.asarray(rows, np.int64)
            rk_l.append(a[:, 0])
            c_l.append(a[:, 7])
            s_l.append(a[:, 2])
            e_l.append(a[:, 2] + a[:, 3])
        if not rk_l:
            return
        wr = np.concatenate(rk_l).astype(np.int64)
        we = np.concatenate(e_l)
        ws = self._enqueue_times(wr, np.concatenate(c_l).astype(np.int64), np.concatenate(s_l))
        n = int((t_end - 1_000_000) // 95_000_000 + 2)
        # the thread started with the process group, long before the profiler: its first
        # wake-up inside the window falls anywhere in the first period
        gaps = rng.integers(99_000_000, 103_000_000, (R, n))
        gaps[:, 0] = 0
        polls = 1_000_000 + rng.integers(0, 100_000_000, (R, 1)) + np.cumsum(gaps, axis=1)
        # each work is queried at the first wake-up at or after its enqueue and at every one
        # after that up to the first wake-up after its end (which sees it complete)
        parts_r, parts_i, parts_w = [], [], []
        for r in range(R):
            m = wr == r
            w0 = ws[m]
            i0 = np.searchsorted(polls[r], w0)
            i1 = np.minimum(np.searchsorted(polls[r], we[m]), n - 1)
            cnt = np.maximum(i1 - i0 + 1, 0)
            tot = int(cnt.sum())
            off = np.arange(tot) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            parts_r.append(np.full(tot, r, np.int64))
            parts_i.append(np.repeat(i0, cnt) + off)
            parts_w.append(np.repeat(w0, cnt))
        qr, qi, qw = (np.concatenate(x) for x in (parts_r, parts_i, parts_w))
        if not len(qr):
            return
        o = np.lexsort((qw, qi, qr))
        qr, qi = qr[o], qi[o]
        key = qr * (n + 1) + qi
        first = np.r_[True, key[1:] != key[:-1]]
        grp = np.cumsum(first) - 1
        pos = np.arange(len(key)) - np.flatnonzero(first)[grp]  # place among the wake-up's queries
        ts = polls[qr, qi] + pos * 14_000 + rng.integers(0, 3000, len(qr))
        dur = rng.integers(1800, 9000, len(qr))
        keep = ts + dur < t_end
        name = self.it.n(("hip" if self.hw.vendor == "amd" else "cuda") + "EventQuery")
        self.rec.add(qr[keep], WATCHDOG, ts[keep], dur[keep], name, C_RT, 0)

    def _enqueue_times(self, wr: np.ndarray, wc: np.ndarray, ws: np.ndarray) -> np.ndarray:
        """When the host enqueued each NCCL work (rank `wr`, correlation id `wc`, kernel start
        `ws`): the end of the launch call with the same correlation id. A kernel whose launch is
        not found (none recorded) counts as enqueued just before it started."""
        key = (wr << 40) | wc
        order = np.argsort(key)
        sk = key[order]
        out = ws - self.rng.integers(20_000, 200_000, len(ws))
        for _n, shape, vals in self.rec.parts:
            corr = vals[7]
            launch = np.ndim(vals[5]) == 0 and int(vals[5]) == C_RT
            if not (launch and isinstance(corr, np.ndarray)):
                continue
            rk = np.broadcast_to(vals[0], shape).astype(np.int64).ravel()
            k = (rk << 40) | np.broadcast_to(corr, shape).ravel()
            i = np.minimum(np.searchsorted(sk, k), len(sk) - 1)
            hit = sk[i] == k
            if hit.any():
                t = np.broadcast_to(vals[2] + vals[3], shape).ravel()
                out[order[i[hit]]] = t[hit]
        return out

    # ---- primitive slices -------------------------------------------------------------------
    def slice(self, tid, start, dur, name: str, cat: int, depth: int, aid: int = -1) -> None:
        self.rec.add(self.ranks, tid, start, dur, self.it.n(name), cat, depth, 0, aid)

    def next_corr(self, n: int = 1) -> np.ndarray:
        c = self.corr[:, None] + np.arange(1, n + 1)[None, :]
        self.corr += n
        return c

    def launch_lat(self, shape) -> np.ndarray:
        v = self.launch_us * self.rng.lognormal(0.0, 0.22, shape)
        # a rare slow launch (module load, lock contention): the long tail of real traces
        slow = self.rng.random(shape) < 0.012
        v = np.where(slow, v * self.rng.uniform(2.5, 12.0, shape), np.clip(v, 4.6, 38.0))
        return (v * 1000).astype(np.int64)

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
        seq, link = self._seq_for(u, track=depth >= 2 or (ann is not None and "forward" in ann))
        emit_units(rec, u, rk, start, pre, L, post, d, corr, seq, link)
        # GPU side
        g = u.gpu_us[None, :] * self.gpu_scale[:, None] * rng.lognormal(-0.036, 0.27, (R, n))
        g = np.maximum((g * 1000).astype(np.int64), 1800)
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

    def _seq_for(self, u: Units, track: bool) -> tuple[np.ndarray | int, np.ndarray | int]:
        """(forward sequence numbers, backward links) for the units of a block: a backward block
        links its nodes to the forward ops recorded since the last backward; a forward block
        (`track`) numbers its ops."""
        fx = self.rec.forest
        if fx is None:
            return 0, 0
        _kp, op = fx.plan(u)
        if (op[:, 1] == 1).any():
            f = np.concatenate(self._fwd_seq, axis=1) if self._fwd_seq else np.zeros((self.R, 0))
            self._fwd_seq = []
            return 0, link_backward(f.astype(np.int64), (op[:, 2] == 1) & (op[:, 0] >= 0))
        if not track:
            return 0, 0
        fwd = u.ocat == C_OP
        seq = np.where(fwd, self.seq[:, None] + np.cumsum(fwd), 0)
        self.seq = self.seq + int(fwd.sum())
        self._fwd_seq.append(seq[:, fwd])
        return seq, 0

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


# ---- batched compute blocks ------------------------------------------------------------------
@dataclass
class Batch:
    """Many instances of one compute-only `Units` template, drawn at once.

    Arrays have shape `lead + (n,)` (per op) or `lead` (per instance); times are ns relative to
    the instance's first CPU op (`start`, `ready`) or to its first kernel (`G`). Kernel k of an
    instance whose ops start at CPU time t0 on a stream free from f0 starts at
    `G[k] + max(f0, t0 + cumD[k])` (the block recurrence of `Sim.block`, unrolled), and the
    stream is free again at `gtot + max(f0, t0 + cumD[-1])`.
    """

    u: Units
    start: np.ndarray  # CPU start of each outer op
    pre: np.ndarray
    L: np.ndarray  # launch call duration
    post: np.ndarray
    g: np.ndarray  # kernel duration
    G: np.ndarray  # kernel start offset when the stream never waits for the CPU
    cumD: np.ndarray  # running max of (ready − G)
    cpu_len: np.ndarray  # CPU time from the first op's start to the last op's end
    gtot: np.ndarray  # GPU time from the first kernel's start to the stream being free

    @property
    def dmax(self) -> np.ndarray:
        return self.cumD[..., -1]


def draw_batch(
    sim: Sim,
    u: Units,
    lead: tuple,
    scale: np.ndarray | float = 1.0,
    *,
    sigma: float | np.ndarray = 0.27,
    unit_f: np.ndarray | None = None,
) -> Batch:
    """Random draws and relative layout for `lead` instances of `u` (compute units only).

    `scale` (broadcastable to `lead`) multiplies GPU durations, like `Sim.gpu_scale`. Each
    kernel's duration varies by `sigma` (lognormal) per instance; `unit_f` (one factor per unit)
    sets each unit's own speed, the same in every instance (a kernel's time follows its shape
    and tile choice: spread across a name's shapes, steady across repeats)."""
    if (u.stream != COMPUTE).any():
        raise ValueError("draw_batch takes compute-only templates")
    rng = sim.rng
    shape = (*lead, len(u))
    cpu = u.cpu_us * rng.lognormal(0.0, 0.12, shape)
    pre = (cpu * 600).astype(np.int64) + 1000
    post = (cpu * 400).astype(np.int64) + 1000
    L = sim.launch_lat(shape)
    gap = rng.integers(1500, 5000, shape)
    dur_o = pre + L + post
    stp = dur_o + gap
    start = np.cumsum(stp, axis=-1) - stp
    ready = start + pre + (L * 6) // 10
    sc = np.asarray(scale, float)[..., None]
    g = u.gpu_us * sc * rng.lognormal(-0.036 * (sigma / 0.27) ** 2, sigma, shape)
    if unit_f is not None:
        g = g * unit_f
    g = np.maximum((g * 1000).astype(np.int64), 1800)
    kg = rng.integers(900, 2600, shape)
    sg = g + kg
    G = np.cumsum(sg, axis=-1) - sg
    cumD = np.maximum.accumulate(ready - G, axis=-1)
    return Batch(
        u,
        start,
        pre,
        L,
        post,
        g,
        G,
        cumD,
        start[..., -1] + dur_o[..., -1],
        G[..., -1] + sg[..., -1],
    )


def emit_batch(
    rec: Recorder,
    b: Batch,
    rank: np.ndarray,
    t0: np.ndarray,
    free0: np.ndarray,
    corr0: np.ndarray,
    depth: int,
    sel: np.ndarray | None = None,
    seq0: np.ndarray | None = None,
    fwd_n: int = 0,
) -> None:
    """Record the CPU ops, launches and kernels of the instances (optionally only `sel`, a
    boolean mask over the lead shape). Arguments have the lead shape; ops sit at `depth`, launch
    correlations are `corr0 + 1 .. corr0 + n`. With `seq0` (lead shape), a forward template's
    ops are numbered `seq0 + 1 ..` and a backward template's nodes link to the forward ops
    numbered from the same `seq0` (the same instance's forward pass, `fwd_n` ops)."""
    u = b.u
    arrs = [b.start, b.pre, b.L, b.post, b.g, b.G, b.cumD]
    lead = [rank, t0, free0, corr0] + ([] if seq0 is None else [seq0])
    if sel is not None:
        arrs = [a[sel] for a in arrs]
        lead = [np.broadcast_to(a, sel.shape)[sel] for a in lead]
    start, pre, L, post, g, G, cumD = arrs
    rank, t0, free0, corr0, *sq = (np.asarray(a)[..., None] for a in lead)
    n = len(u)
    rk = np.broadcast_to(rank, start.shape)
    st = t0 + start
    corr = corr0 + np.arange(1, n + 1)
    seq: np.ndarray | int = 0
    link: np.ndarray | int = 0
    if sq and rec.forest is not None:
        _kp, op = rec.forest.plan(u)
        if (op[:, 1] == 1).any():
            nf = fwd_n or n
            f = sq[0] + np.arange(1, nf + 1)
            link = link_backward(np.broadcast_to(f, (*start.shape[:-1], nf)),
                                 (op[:, 2] == 1) & (op[:, 0] >= 0))  # fmt: skip
        else:
            fwd = u.ocat == C_OP
            seq = np.where(fwd, sq[0] + np.cumsum(fwd), 0)
    emit_units(rec, u, rk, st, pre, L, post, depth, corr, seq, link)
    kst = G + np.maximum(free0, t0 + cumD)
    rec.add(rk, COMPUTE, kst, g, u.kname, u.kcat, 0, corr, u.kaid)


def emit_sync_items(
    sim: Sim,
    rank: np.ndarray,
    s: np.ndarray,
    ls: np.ndarray,
    L: np.ndarray,
    kst: np.ndarray,
    kd: np.ndarray,
    sync_s: np.ndarray,
    sync_e: np.ndarray,
    end: np.ndarray,
    corr: np.ndarray,
    depth: int,
    op: str,
    inner: str | None,
    dims=None,
) -> None:
    """The events of many `Sim.sync_item` calls whose times were computed in bulk (with no
    `inner` op, the copy and the synchronize sit right under `op`)."""
    it, rec = sim.it, sim.rec
    amd = sim.hw.vendor == "amd"
    rk = np.broadcast_to(rank, s.shape)
    oaid = it.a({"Input Dims": dims or [[]], "Input type": ["c10::BFloat16"]}) if dims else -1
    rec.add(rk, MAIN, s, end - s, it.n(op), C_OP, depth, 0, oaid)
    if inner is not None:
        rec.add(rk, MAIN, s + 1000, end - 2000 - s, it.n(inner), C_OP, depth + 1)
    rt = depth + (2 if inner is not None else 1)
    memcpy = it.n("hipMemcpyAsync" if amd else "cudaMemcpyAsync")
    rec.add(rk, MAIN, ls, L, memcpy, C_RT, rt, corr, -1)
    dtoh = it.n("Memcpy DtoH (Device -> Pageable)")
    aid = it.a({"bytes": 4, "memory bandwidth (GB/s)": 0.002})
    rec.add(rk, COMPUTE, kst, kd, dtoh, C_MEMCPY, 0, corr, aid)
    sync = it.n("hipStreamSynchronize" if amd else "cudaStreamSynchronize")
    rec.add(rk, MAIN, sync_s, sync_e - sync_s, sync, C_RT, rt)


def sync_chain(
    sim: Sim,
    ua: Units,
    um: Units,
    n: int,
    depth: int,
    host_after_us: np.ndarray,
    *,
    op: str,
    inner: str,
    dims=None,
) -> None:
    """n × [block(ua), sync_item, block(um)] without the last block(um), on every rank at once:
    the same timing rules as calling `Sim.block` / `Sim.sync_item` in a loop, but the per-layer
    loop only advances two clocks per rank and every event is recorded in bulk afterwards."""
    R, rng = sim.R, sim.rng
    scale = sim.gpu_scale[:, None]
    A = draw_batch(sim, ua, (R, n), scale)
    B = draw_batch(sim, um, (R, n - 1), scale)
    gap_a = rng.integers(2000, 6000, (R, n))
    gap_b = rng.integers(2000, 6000, (R, n - 1))
    pre = rng.integers(3000, 8000, (R, n))
    Ls = sim.launch_lat((R, n))
    kd = rng.integers(1500, 2600, (R, n))
    lag = rng.integers(500, 1500, (R, n))
    post = rng.integers(2000, 5000, (R, n))
    gap_s = rng.integers(2000, 5000, (R, n))
    host = (np.asarray(host_after_us, float) * 1000).astype(np.int64)
    sync_ns = int(sim.hw.sync_us * 1000 * 0.6)
    t0a, f0a = np.zeros((R, n), np.int64), np.zeros((R, n), np.int64)
    t0b, f0b = np.zeros((R, n - 1), np.int64), np.zeros((R, n - 1), np.int64)
    s0, kst, ss, se = (np.zeros((R, n), np.int64) for _ in range(4))
    cpu, free = sim.cpu.copy(), sim.free_c.copy()
    a_len, a_dmax, a_gtot = A.cpu_len + gap_a, A.dmax, A.gtot
    b_len, b_dmax, b_gtot = B.cpu_len + gap_b, B.dmax, B.gtot
    for li in range(n):
        t0a[:, li], f0a[:, li] = cpu, free
        free = a_gtot[:, li] + np.maximum(free, cpu + a_dmax[:, li])
        cpu = cpu + a_len[:, li]
        # the read-back: a tiny DtoH copy, then the host blocks until the stream drains
        s0[:, li] = cpu
        ls = cpu + pre[:, li]
        k = np.maximum(ls + (Ls[:, li] * 6) // 10, free)
        kst[:, li] = k
        free = k + kd[:, li] + 1000
        a = ls + Ls[:, li] + lag[:, li]
        e = np.maximum(np.maximum(a, k + kd[:, li]) + sync_ns, a + 2000)
        ss[:, li], se[:, li] = a, e
        cpu = e + post[:, li] + host[li] + gap_s[:, li]
        if li < n - 1:
            t0b[:, li], f0b[:, li] = cpu, free
            free = b_gtot[:, li] + np.maximum(free, cpu + b_dmax[:, li])
            cpu = cpu + b_len[:, li]
    na, nb = len(ua), len(um)
    per = na + 1 + nb
    base = sim.corr[:, None] + per * np.arange(n)[None, :]
    rk = sim.ranks[:, None]
    # forward ops numbered in time order: layer li's A ops, then its B ops
    fa, fb = int((ua.ocat == C_OP).sum()), int((um.ocat == C_OP).sum())
    sbase = sim.seq[:, None] + (fa + fb) * np.arange(n)[None, :]
    emit_batch(sim.rec, A, rk, t0a, f0a, base, depth, seq0=sbase)
    emit_batch(sim.rec, B, rk, t0b, f0b, base[:, : n - 1] + na + 1, depth,
               seq0=sbase[:, : n - 1] + fa)  # fmt: skip
    if sim.rec.forest is not None:
        allf = sbase[:, :, None] + 1 + np.arange(fa + fb)[None, None, :]
        sim._fwd_seq.append(allf.reshape(R, -1)[:, : n * (fa + fb) - fb])
        sim.seq = sim.seq + n * (fa + fb) - fb
    ls_all = s0 + pre
    emit_sync_items(sim, rk, s0, ls_all, Ls, kst, kd, ss, se, se + post, base + na + 1, depth,
                    op, inner, dims)  # fmt: skip
    sim.corr = sim.corr + per * n - nb
    sim.cpu, sim.free_c = cpu, free


@dataclass
class Segments:
    """A compute-only template cut into consecutive blocks (`bounds`: unit index where each
    block starts, then len(u)), drawn for `lead` instances at once: unit times are relative to
    their own block, as if each block were a separate `Sim.block` call (see `Batch`). Per unit
    (`lead + (n,)`): start, G, cumD; per block (`lead + (nb,)`): cpu_len, gtot, dmax."""

    b: Batch
    seg: np.ndarray  # block of each unit
    start: np.ndarray
    G: np.ndarray
    cumD: np.ndarray
    cpu_len: np.ndarray
    gtot: np.ndarray
    dmax: np.ndarray


def draw_segments(
    sim: Sim, u: Units, lead: tuple, bounds: list[int], scale: np.ndarray | float = 1.0
) -> Segments:
    """`draw_batch` for a template run as consecutive blocks (`Sim.block` per block)."""
    b = draw_batch(sim, u, lead, scale)
    first = np.asarray(bounds[:-1], np.int64)
    last = np.asarray(bounds[1:], np.int64) - 1
    seg = np.repeat(np.arange(len(first)), np.diff(bounds))
    s0, g0 = b.start[..., first], b.G[..., first]
    start = b.start - s0[..., seg]
    G = b.G - g0[..., seg]
    # the running max restarts at each block: shift block k up by k·span (span > the range)
    x = b.start + b.pre + (b.L * 6) // 10 - b.G
    span = int(x.max() - x.min()) + 1 if x.size else 1
    off = seg * span
    cumD = np.maximum.accumulate(x + off, axis=-1) - off - (s0 - g0)[..., seg]
    dur_o = b.pre + b.L + b.post
    cpu_len = start[..., last] + dur_o[..., last]
    g_end = np.concatenate([b.G[..., first[1:]], b.gtot[..., None]], axis=-1)
    gtot = g_end - g0
    return Segments(b, seg, start, G, cumD, cpu_len, gtot, cumD[..., last])


def emit_segments(
    rec: Recorder,
    sg: Segments,
    rank: np.ndarray,
    t0: np.ndarray,
    free0: np.ndarray,
    corr: np.ndarray,
    depth: int,
    seq: np.ndarray | int = 0,
) -> None:
    """Record the CPU ops, launches and kernels of drawn segments: block k of an instance starts
    on the CPU at `t0[..., k]` with the stream free from `free0[..., k]`; `corr` and `seq` are
    per unit (`lead + (n,)`)."""
    b = sg.b
    T0, F0 = t0[..., sg.seg], free0[..., sg.seg]
    rk = np.broadcast_to(rank, b.start.shape)
    emit_units(rec, b.u, rk, T0 + sg.start, b.pre, b.L, b.post, depth, corr, seq, 0)
    kst = sg.G + np.maximum(F0, T0 + sg.cumD)
    rec.add(rk, COMPUTE, kst, b.g, b.u.kname, b.u.kcat, 0, corr, b.u.kaid)
