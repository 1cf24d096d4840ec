"""Facts measured on the generated events (never copied from generation parameters)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .hardware import Hardware
from .kernels import DTYPE_BYTES
from .model import AUTOGRAD, C_KERN, C_RT, COMPUTE, MAIN, NCCL, WORKER0, WORKER1

GEMM_RE = re.compile(r"gemm|Cijk_|gemv|wvSplitK|flash|fmha", re.I)


@functools.lru_cache(maxsize=8192)
def is_gemm_kernel(name: str) -> bool:
    """A matmul or fused-attention kernel (names repeat from trace to trace: decided once each)."""
    return bool(GEMM_RE.search(name))


ROW_NAMES = {
    MAIN: "python main thread",
    WORKER0: "dataloader worker 0",
    WORKER1: "dataloader worker 1",
}


def row_name(rank: int, tid: int) -> str:
    if tid == COMPUTE:
        return f"GPU {rank} · stream 7 (compute)"
    if tid == NCCL:
        return f"GPU {rank} · stream 20 (NCCL)"
    if tid == -1:
        return "CUDA API"
    return ROW_NAMES[tid]


def per_args(
    args: Sequence[dict], aids: np.ndarray, fn: Callable[[dict], Any], dtype: Any = float
) -> np.ndarray:
    """`fn` of each event's args entry, for events whose args ids are `aids`: args are interned,
    so it runs once per distinct entry and the events look their value up."""
    u, inv = np.unique(aids, return_inverse=True)
    vals = np.array([fn(args[a]) for a in u.tolist()], dtype=dtype)
    return vals[inv] if len(aids) else np.zeros(0, dtype)


def merge(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(s) == 0:
        return s, e
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    ce = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > ce[:-1]]
    idx = np.flatnonzero(new)
    return s[idx], np.maximum.reduceat(e, idx)


def ulen(s, e) -> float:
    ms, me = merge(s, e)
    return float((me - ms).sum())


def clip(s, e, w0, w1):
    s2, e2 = np.maximum(s, w0), np.minimum(e, w1)
    k = e2 > s2
    return s2[k], e2[k]


def _union_by_group(s: np.ndarray, e: np.ndarray, g: np.ndarray, n: int) -> np.ndarray:
    """Length of the union of intervals [s, e) (integer ns) per group 0..n-1."""
    if len(s) == 0:
        return np.zeros(n)
    off = g.astype(np.int64) << 42  # groups far apart: one running max merges all of them
    s2, e2 = s + off, e + off
    o = np.argsort(s2, kind="stable")
    s2, e2 = s2[o], e2[o]
    ce = np.maximum.accumulate(e2)
    new = np.r_[True, s2[1:] > ce[:-1]]
    idx = np.flatnonzero(new)
    lens = np.maximum.reduceat(e2, idx) - s2[idx]
    return np.bincount(g[o][idx], lens.astype(float), n)


def inter_len(a, b) -> float:
    (as_, ae), (bs, be) = a, b
    return ulen(as_, ae) + ulen(bs, be) - ulen(np.r_[as_, bs], np.r_[ae, be])


class Measured:
    """Per-trace measurement helper over the columnar events."""

    def __init__(
        self,
        cols: dict[str, np.ndarray],
        names: list[str],
        args: list[dict],
        hw: Hardware,
        world: int,
    ):
        self.c, self.names, self.args, self.hw, self.world = cols, names, args, hw, world
        self.nm = np.array(names, dtype=object)
        self.ts = cols["ts"] / 1000.0
        self.end = (cols["ts"] + cols["dur"]) / 1000.0
        self.dur = cols["dur"] / 1000.0
        name = cols["name"]
        step_ids = [i for i, n in enumerate(names) if n.startswith("ProfilerStep#")]
        lut = np.zeros(len(names), bool)
        lut[step_ids] = True
        self.is_step = lut[name]
        self.ranks = sorted(set(cols["rank"].tolist()))
        self.steps = {}  # rank -> (starts, ends) in µs
        self.steps_ns = {}  # the same in integer ns
        for r in self.ranks:
            m = self.is_step & (cols["rank"] == r)
            o = np.argsort(self.ts[m])
            self.steps[r] = (self.ts[m][o], self.end[m][o])
            t = cols["ts"][m][o]
            self.steps_ns[r] = (t, t + cols["dur"][m][o])
        self.n_steps = len(self.steps[self.ranks[0]][0])

    def mask(self, rank=None, tid=None, names=None, cat=None) -> np.ndarray:
        c = self.c
        m = np.ones(len(c["ts"]), bool)
        if rank is not None:
            m &= c["rank"] == rank
        if tid is not None:
            m &= c["tid"] == tid
        if cat is not None:
            m &= c["cat"] == cat
        if names is not None:
            ids = [
                i for i, n in enumerate(self.names) if (names(n) if callable(names) else n in names)
            ]
            lut = np.zeros(len(self.names), bool)  # a lookup, not np.isin's sort: O(events)
            lut[ids] = True
            m &= lut[c["name"]]
        return m

    def per_step(self, r: int, m: np.ndarray):
        """Yield (k, w0, w1, s, e) of events in mask m clipped to each step window of rank r."""
        s, e = self.ts[m], self.end[m]
        for k, (w0, w1) in enumerate(zip(*self.steps[r], strict=True)):
            cs, ce = clip(s, e, w0, w1)
            yield k, w0, w1, cs, ce

    def crit_ms(self, m: np.ndarray) -> float:
        """Mean over steps of the largest per-rank sum of the durations in mask `m` (ms): the
        rank that stalls longest sets a synchronous step's time."""
        return float(self.per_rank_step_ms(m).max(0).mean())

    def per_rank_step_ms(self, m: np.ndarray) -> np.ndarray:
        """(ranks, steps): the summed durations (ms) of the events in mask `m` that start in
        each step of each rank."""
        S = max(self.n_steps, 1)
        tot = np.zeros((len(self.ranks), S))
        for i, r in enumerate(self.ranks):
            mr = m & (self.c["rank"] == r)
            st_s, st_e = self.steps[r]
            ts, du = self.ts[mr], self.dur[mr]
            k = np.searchsorted(st_s, ts, "right") - 1
            ok = (k >= 0) & (ts < st_e[np.maximum(k, 0)])
            np.add.at(tot[i], k[ok], du[ok])
        return tot / 1000

    def _windowed(
        self, m: np.ndarray, ri: np.ndarray, w0: np.ndarray, w1: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Events in mask m clipped to every step window of their rank they overlap:
        (start_ns, end_ns, group = rank index × n_steps + step)."""
        S = w0.shape[1]
        ts, te, r = self.c["ts"][m], self.c["ts"][m] + self.c["dur"][m], ri[m]
        out_s, out_e, out_g = [], [], []
        for i in range(w0.shape[0]):
            k = r == i
            s, e = ts[k], te[k]
            first = np.searchsorted(w1[i], s, "right")  # first window ending after s
            last = np.searchsorted(w0[i], e, "left") - 1  # last window starting before e
            cnt = np.maximum(last - first + 1, 0)
            idx = np.repeat(np.arange(len(s)), cnt)
            win = np.repeat(first, cnt) + (
                np.arange(len(idx)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            )
            s2 = np.maximum(s[idx], w0[i][win])
            e2 = np.minimum(e[idx], w1[i][win])
            ok = e2 > s2
            out_s.append(s2[ok])
            out_e.append(e2[ok])
            out_g.append(i * S + win[ok])
        return np.concatenate(out_s), np.concatenate(out_e), np.concatenate(out_g)

    # ------------------------------------------------------------------------------------------
    def facts(self) -> dict:
        _c, _hw = self.c, self.hw
        f: dict = {}
        R = self.ranks
        step_durs = np.array([self.steps[r][1] - self.steps[r][0] for r in R])  # (R, S)
        f["n_steps"] = self.n_steps
        f["world"] = len(R)
        f["step_ms_series"] = [round(float(x) / 1000, 3) for x in step_durs.max(axis=0)]
        f["step_ms"] = float(step_durs.max(axis=0).mean() / 1000)
        # pipeline microbatches per step: forward blocks on the first stage's main thread
        fwd_ann = self.mask(rank=R[0], tid=MAIN, names=lambda n: n == "## forward ##")
        f["microbatches"] = round(float(fwd_ann.sum()) / max(self.n_steps, 1), 2)
        # GPU busy time inside every (rank, step) window, all windows at once
        S = self.n_steps
        nR = len(R)
        ri = np.searchsorted(np.asarray(R), self.c["rank"])
        w0 = np.array([self.steps_ns[r][0] for r in R])  # (R, S)
        w1 = np.array([self.steps_ns[r][1] for r in R])
        tid = self.c["tid"]
        gc = self._windowed(tid == COMPUTE, ri, w0, w1)
        gn = self._windowed(tid == NCCL, ri, w0, w1)
        both = tuple(np.concatenate([a, b]) for a, b in zip(gc, gn, strict=True))
        comp, comm, busy = (
            _union_by_group(iv[0], iv[1], iv[2], nR * S).reshape(nR, S) / 1000.0
            for iv in (gc, gn, both)
        )
        idle = step_durs - busy
        ovl = comp + comm - busy
        exposed = comm - ovl
        comp_sum = np.bincount(gc[2], gc[1] - gc[0], nR * S).reshape(nR, S) / 1000.0
        nccl_sum = np.bincount(gn[2], gn[1] - gn[0], nR * S).reshape(nR, S) / 1000.0
        f["gpu_idle_ms"] = float(idle.mean() / 1000)
        f["gpu_idle_frac"] = float((idle / step_durs).mean())
        f["compute_ms"] = float(comp.mean() / 1000)
        f["comm_ms"] = float(comm.mean() / 1000)
        f["exposed_comm_ms"] = float(exposed.mean() / 1000)
        f["overlap_pct"] = (
            float(min(100.0, max(0.0, 100 * ovl.sum() / comm.sum()))) if comm.sum() > 0 else 0.0
        )
        f["overlap_pct_per_rank"] = [
            round(float(100 * o / max(cm, 1e-9)), 1)
            for o, cm in zip(ovl.sum(1), comm.sum(1), strict=True)
        ]
        rc = comp_sum.mean(axis=1) / 1000
        f["rank_compute_ms"] = [round(float(x), 3) for x in rc]
        med = float(np.median(rc))
        f["compute_skew_pct"] = float(100 * (rc.max() - med) / med) if med > 0 else 0.0
        f["slowest_rank"] = int(R[int(np.argmax(rc))])
        # a synchronous step waits, every step, for the slowest rank of that step: without the
        # slowest rank, for the slowest of the others (per-step maxima, not the median rank)
        others = np.delete(comp, int(np.argmax(rc)), axis=0) if nR > 1 else comp
        f["slowest_other_rank_ms"] = float(others.max(axis=0).mean() / 1000)
        rn = nccl_sum.mean(axis=1) / 1000
        f["rank_nccl_ms"] = [round(float(x), 3) for x in rn]
        f["idle_frac_per_rank"] = [round(float(x), 4) for x in (idle / step_durs).mean(axis=1)]
        cidle = (step_durs - comp) / step_durs
        f["compute_idle_frac_per_rank"] = [round(float(x), 4) for x in cidle.mean(axis=1)]
        self._comp_rs_ms = comp / 1000  # GPU compute busy per (rank, step), ms
        # a synchronous step waits for the slowest GPU of each step
        f["slowest_rank_compute_ms"] = float(self._comp_rs_ms.max(0).mean())
        self._collectives(f)
        self._host(f)
        self._kernels(f)
        return f

    def _collectives(self, f: dict) -> None:
        c = self.c
        m = self.mask(tid=NCCL, cat=C_KERN) & (c["aid"] >= 0)
        if not m.any():
            f.update(
                coll_bytes_per_step=0.0,
                busbw_gbps=0.0,
                busbw_rank_gbps=[],
                coll_count=0,
                nccl_allreduce_frac=0.0,
            )
            return
        aids = c["aid"][m]
        A = self.args
        nel = per_args(A, aids, lambda a: a.get("In msg nelems", 0))
        db = per_args(A, aids, lambda a: DTYPE_BYTES.get(a.get("dtype", "BFloat16"), 2), np.int64)
        grp = per_args(A, aids, lambda a: a.get("Group size", 1))
        is_ar = per_args(A, aids, lambda a: a.get("Collective name") == "allreduce", bool)
        nbytes = nel * db
        dur_s = self.dur[m] / 1e6
        factor = np.where(is_ar, 2 * (grp - 1) / np.maximum(grp, 1), 1.0)
        busbw = nbytes * factor / np.maximum(dur_s, 1e-12) / 1e9
        ranks = c["rank"][m]
        f["coll_count"] = int(m.sum())
        # share of NCCL kernel time in all-reduces (vs point-to-point send/recv of a pipeline)
        d_all = self.dur[m]
        f["nccl_allreduce_frac"] = float(d_all[is_ar].sum() / max(d_all.sum(), 1e-9))
        per_rank_bytes = [nbytes[ranks == r].sum() for r in self.ranks]
        f["coll_bytes_per_step"] = float(np.mean(per_rank_bytes) / max(self.n_steps, 1))
        f["coll_bytes_each"] = float(np.median(nbytes))
        big = nbytes >= np.median(nbytes)
        # a collective's transfer time is the shortest of its per-rank kernels (the last rank to
        # arrive does not wait); per-rank medians show who waited
        per_n = [np.sort(np.flatnonzero(ranks == r)) for r in self.ranks]
        n_c = min(len(x) for x in per_n)
        bb = np.stack([busbw[x[:n_c]] for x in per_n]) if n_c else np.zeros((1, 1))
        bigc = np.stack([big[x[:n_c]] for x in per_n]).all(0) if n_c else np.ones(1, bool)
        f["busbw_gbps"] = float(np.median(bb.max(0)[bigc])) if bigc.any() else 0.0
        # one large collective to show the arithmetic on: the one at the median of the fastest
        # copies' bus bandwidths, its bytes and its shortest copy across ranks
        if n_c and bigc.any():
            cand = np.flatnonzero(bigc)
            j = int(cand[np.argsort(bb.max(0)[cand], kind="stable")[len(cand) // 2]])
            f["coll_ref_bytes"] = float(nbytes[per_n[0][j]])
            f["coll_ref_ms"] = float(min(self.dur[m][x[j]] for x in per_n) / 1000)
        # pure transfer time per collective (its shortest per-rank kernel), per step and for the
        # step's last collective (what stays after backward once the others overlap)
        tr_ms = (
            np.stack([self.dur[m][x[:n_c]] for x in per_n]).min(0) / 1000 if n_c else np.zeros(0)
        )
        S = max(self.n_steps, 1)
        f["coll_transfer_ms_per_step"] = float(tr_ms.sum() / S)
        per_step = n_c // S if n_c and n_c % S == 0 else 0
        f["coll_transfer_last_ms"] = (
            float(tr_ms.reshape(S, per_step)[:, -1].mean()) if per_step else 0.0
        )
        f["busbw_rank_gbps"] = [
            round(float(np.median(busbw[big & (ranks == r)])), 1)
            if (big & (ranks == r)).any()
            else 0.0
            for r in self.ranks
        ]
        f["busbw_min_rank_gbps"] = float(min(f["busbw_rank_gbps"]))
        f["busbw_max_rank_gbps"] = float(max(f["busbw_rank_gbps"]))
        f["link_gbps"] = self.hw.scaleup_gbps
        f["link_achievable_gbps"] = self.hw.achievable_busbw_gbps
        f["pcie_gbps"] = self.hw.pcie_gbps
        f["coll_ms_each"] = float(np.median(self.dur[m][big]) / 1000)
        # start skew of each collective across ranks (same index on every rank)
        per = [np.sort(self.ts[m][ranks == r]) for r in self.ranks]
        n = min(len(x) for x in per)
        if len(self.ranks) > 1 and n:
            st = np.stack([x[:n] for x in per])
            f["coll_start_skew_ms"] = float(np.median(st.max(0) - st.min(0)) / 1000)
            durs = np.stack([np.sort(self.dur[m][ranks == r])[:n] for r in self.ranks])
            f["coll_dur_cv"] = float(np.median(durs.std(0) / np.maximum(durs.mean(0), 1e-9)))
        else:
            f["coll_start_skew_ms"] = 0.0
            f["coll_dur_cv"] = 0.0

    def _host(self, f: dict) -> None:
        c = self.c
        S = max(self.n_steps, 1)
        nR = len(self.ranks)
        launch = self.mask(names=lambda n: n.endswith("LaunchKernel"))
        f["launch_us_mean"] = float(self.dur[launch].mean()) if launch.any() else 0.0
        gpu = self.mask(cat=C_KERN) & (c["tid"] == COMPUTE)
        f["kernel_us_median"] = float(np.median(self.dur[gpu])) if gpu.any() else 0.0
        f["kernels_per_step"] = float(gpu.sum() / S / nR)
        # pair launches with kernels by (rank, corr)
        lk = launch & (c["corr"] > 0)
        key_l = c["rank"][lk].astype(np.int64) * (1 << 40) + c["corr"][lk]
        key_k = c["rank"][gpu].astype(np.int64) * (1 << 40) + c["corr"][gpu]
        o = np.argsort(key_l)
        pos = np.searchsorted(key_l[o], key_k)
        pos = np.clip(pos, 0, max(len(o) - 1, 0))
        if len(o):
            ok = key_l[o][pos] == key_k
            ldur = self.dur[lk][o][pos][ok]
            kdur = self.dur[gpu][ok]
            f["short_kernel_frac"] = float((kdur < ldur).mean()) if len(kdur) else 0.0
            f["gpu_per_step_ms"] = float(kdur.sum() / S / nR / 1000)
            f["launch_per_step_ms"] = float(ldur.sum() / S / nR / 1000)
        else:
            f["short_kernel_frac"] = 0.0
            f["gpu_per_step_ms"] = f["launch_per_step_ms"] = 0.0
        sync = self.mask(names=lambda n: n.endswith("StreamSynchronize"))
        f["syncs_per_step"] = float(sync.sum() / S / nR)
        f["sync_ms_per_step"] = float(self.dur[sync].sum() / S / nR / 1000)
        # GPU refill gap after each sync other than the last one of a step
        gaps: list[float] = []
        gap_tot = np.zeros((nR, S))
        sync_idle = np.zeros((nR, S))
        for ri_, r in enumerate(self.ranks):
            ks, ke = self.ts[gpu & (c["rank"] == r)], self.end[gpu & (c["rank"] == r)]
            o2 = np.argsort(ks)
            ks, ke = ks[o2], np.maximum.accumulate(ke[o2])
            se = np.sort(self.end[sync & (c["rank"] == r)])
            st_s, st_e = self.steps[r]
            if not len(se) or not len(ks):
                continue
            k = np.maximum(np.searchsorted(st_s, se) - 1, 0)
            j = np.searchsorted(se, se, "right")  # first sync ending after this one
            later = (j < len(se)) & (se[np.minimum(j, len(se) - 1)] <= st_e[k])
            i = np.searchsorted(ks, se)
            # not the step's final read-back, and the kernel it waits for runs in the same step
            ok = later & (i > 0) & (i < len(ks))
            ok &= ks[np.minimum(i, len(ks) - 1)] < st_e[k]
            i = i[ok]
            gaps.extend((ks[i] - ke[i - 1]).tolist())
            np.add.at(gap_tot[ri_], k[ok], ks[i] - ke[i - 1])
            # every GPU gap after a step's first in-step read-back (the queue refills slowly
            # when the CPU launches no faster than the kernels run)
            for kk in np.unique(k[ok]):
                sk = se[ok][k[ok] == kk]
                # from the first in-step read-back to one layer past the last one
                sk = np.sort(sk)
                d = float(np.median(np.diff(sk))) if len(sk) > 1 else 0.0
                while len(sk) > 2 and sk[-1] - sk[-2] > 3 * d:  # a read-back at the step's end
                    sk = sk[:-1]
                t0, t1 = sk[0], sk[-1] + d
                j = np.flatnonzero((ks > t0) & (ks < min(t1, st_e[kk])))
                j = j[j > 0]
                idle = np.maximum(ks[j] - ke[j - 1] - 3.0, 0).sum()  # µs
                sync_idle[ri_, kk] = max(sync_idle[ri_, kk], idle)
        f["sync_refill_ms_per_step"] = float(np.sum(gaps) / S / nR / 1000) if gaps else 0.0
        f["inner_syncs_per_step"] = float(len(gaps) / S / nR)
        f["sync_refill_ms_crit"] = float(np.maximum(gap_tot, sync_idle).max(0).mean() / 1000)
        # the refill gaps alone on the rank that loses most (a pipeline stage also idles in its
        # schedule's waits between read-backs, which the fix does not remove)
        f["sync_refill_gap_ms_crit"] = float(gap_tot.max(0).mean() / 1000)
        alloc = self.mask(names=lambda n: n in ("cudaMalloc", "cudaFree", "hipMalloc", "hipFree"))
        f["alloc_calls_per_step"] = float(alloc.sum() / S / nR)
        f["alloc_ms_per_step"] = float(self.dur[alloc].sum() / S / nR / 1000)
        mal = self.mask(names=lambda n: n in ("cudaMalloc", "hipMalloc"))
        f["malloc_calls_per_step"] = float(mal.sum() / S / nR)
        f["malloc_ms_per_step"] = float(self.dur[mal].sum() / S / nR / 1000)
        fre = alloc & ~mal
        f["free_calls_per_step"] = float(fre.sum() / S / nR)
        f["free_ms_per_step"] = float(self.dur[fre].sum() / S / nR / 1000)
        if alloc.any():
            self._alloc_stall(f, alloc)
        fetch = self.mask(names=["DataLoader worker: fetch batch"])
        f["loader_worker_rows"] = len(np.unique(c["tid"][fetch])) if fetch.any() else 0
        # a batch's fetch time: from the fetches that start and finish inside the window (the
        # ones running when the profiler starts or stops are cut short by it, and would shorten
        # the mean)
        R = np.asarray(self.ranks)
        at = np.searchsorted(R, c["rank"][fetch])  # the fetches' own ranks only
        first = np.array([self.steps_ns[r][0].min() for r in R])[at]
        last = np.array([self.steps_ns[r][1].max() for r in R])[at]
        ts = c["ts"][fetch]
        inside = (ts > first) & (ts + c["dur"][fetch] <= last)
        durs = self.dur[fetch]
        durs = durs[inside] if inside.any() else durs
        f["loader_fetch_ms"] = float(durs.mean() / 1000) if durs.size else 0.0
        nk = self.mask(tid=NCCL, cat=C_KERN)
        f["colls_per_step"] = float(nk.sum() / S / nR)
        loader = self.mask(names=lambda n: n.startswith("enumerate(DataLoader)"))
        f["loader_ms_per_step"] = float(self.dur[loader].sum() / S / nR / 1000)
        f["loader_ms_crit"] = self.crit_ms(loader)
        # the GPU compute of the rank that waits longest for its batch (each step), and of the
        # slowest rank: once batches arrive on time, ranks start together and each step waits
        # for its slowest GPU instead
        lw_rs = self.per_rank_step_ms(loader)
        crs = self._comp_rs_ms
        if loader.any() and crs.shape == lw_rs.shape:
            late = lw_rs.argmax(0)
            f["loader_crit_rank_compute_ms"] = float(crs[late, np.arange(crs.shape[1])].mean())
        comp = self.mask(names=lambda n: n.startswith("_compile.compile_inner"))
        f["compile_ms_total"] = float(self.dur[comp].sum() / nR / 1000)
        f["compile_ms_crit"] = self.crit_ms(comp)  # per step, the rank that compiles longest
        # steps (rank 0) that contain a compile
        r0 = self.ranks[0]
        cs = self.ts[comp & (c["rank"] == r0)]
        st_s, st_e = self.steps[r0]
        hit = np.zeros(self.n_steps, bool)
        for x in cs:
            hit[(st_s <= x) & (x < st_e)] = True
        f["compile_steps"] = [int(i) for i in np.flatnonzero(hit)]
        series = np.array(f["step_ms_series"])
        f["steady_step_ms"] = float(series[~hit].mean()) if (~hit).any() else f["step_ms"]
        f["compile_step_ms"] = float(series[hit].mean()) if hit.any() else 0.0
        # per-step loader wait spread (every step vs some steps), over every rank
        if loader.any():
            lw = self.dur[loader] / 1000
            f["loader_ms_min"] = float(lw.min())
            f["loader_ms_max"] = float(lw.max())
        else:
            f["loader_ms_min"] = f["loader_ms_max"] = 0.0
        _ = C_RT

    def _alloc_stall(self, f: dict, alloc: np.ndarray) -> None:
        """The GPU idle that the device allocator's calls open, and the step time without them.

        A rank's stall: within one idle gap of its GPU (no kernel or copy on any stream), from the
        start of the first cudaMalloc/cudaFree to the end of the last one; the host sits in the
        allocator with nothing queued, so the GPU waits as long. A data-parallel job loses only
        what delays its meeting: every step its ranks meet in the gradient all-reduce, which
        waits for the last rank out of backward. Each rank's stalls since the previous meeting
        (the last step's frees, this step's mallocs) delay its arrival; without them the meeting
        waits for whichever rank is then the last. A rank's step window also ends after its own
        stalls past the meeting (its frees), which the fix takes off too. A job with no
        all-reduce (one GPU, a pipeline) loses, each step, the stall of the rank that stalls
        longest in its step window."""
        c = self.c
        R, S = self.ranks, self.n_steps
        tid, rank = c["tid"], c["rank"]
        gi = np.flatnonzero((tid == COMPUTE) | (tid == NCCL))  # GPU events, then by rank
        ts, te, g_rank, g_tid = c["ts"][gi], c["ts"][gi] + c["dur"][gi], rank[gi], tid[gi]
        g_aid = c["aid"][gi]
        ar_ids = {
            int(a)
            for a in np.unique(g_aid[(g_tid == NCCL) & (g_aid >= 0)])
            if self.args[int(a)].get("Collective name") == "allreduce"
        }
        is_ar = (g_tid == NCCL) & np.isin(g_aid, list(ar_ids))
        ai = np.flatnonzero(alloc)
        a_ts, a_te, a_rank = c["ts"][ai], c["ts"][ai] + c["dur"][ai], rank[ai]
        dur = np.zeros((len(R), S))  # each rank's step window, then without the stalls (ns)
        pre = np.zeros((len(R), S))  # stall before the rank reaches the step's meeting
        post = np.zeros((len(R), S))  # stall after it, inside the rank's window
        meet = np.zeros((len(R), S))  # when the rank's backward ends (its arrival)
        win = np.zeros((len(R), S))  # stall inside the rank's step window
        for i, r in enumerate(R):
            w0, w1 = self.steps_ns[r]
            dur[i] = w1 - w0
            g = g_rank == r
            gs, ge = merge(ts[g], te[g])
            m = a_rank == r
            a, b = a_ts[m], a_te[m]
            o = np.argsort(a, kind="stable")
            a, b = a[o], b[o]
            j = np.searchsorted(ge, a, "right")  # the GPU gap each call starts in (or busy j)
            busy = (j < len(gs)) & (gs[np.minimum(j, len(gs) - 1)] <= a)
            a = np.where(busy, ge[np.minimum(j, len(ge) - 1)], a)  # its idle part starts after
            j = j + busy
            b = np.minimum(b, np.where(j < len(gs), gs[np.minimum(j, len(gs) - 1)], b))
            ok = b > a
            a, b, j = a[ok], b[ok], j[ok]
            if not len(a):
                continue
            grp = np.flatnonzero(np.r_[True, j[1:] != j[:-1]])  # one run per GPU gap
            r0, r1 = a[grp], np.maximum.reduceat(b, grp)
            idle = (r1 - r0).astype(float)
            k = np.searchsorted(w0, r0, "right") - 1  # the step window each run starts in
            inw = (k >= 0) & (r0 < w1[np.maximum(k, 0)])
            np.add.at(win[i], k[inw], idle[inw])
            ar = is_ar & g
            if ar_ids and ar.any():
                t_ar = te[ar]
                kc = g & (g_tid == COMPUTE)
                ks, ke = ts[kc], te[kc]
                for kk in range(S):
                    t = t_ar[(t_ar > w0[kk]) & (t_ar <= w1[kk])]
                    if not len(t):
                        meet[i, kk] = w1[kk]
                        continue
                    T = t.max()  # the step's last all-reduce ends: the optimizer may start
                    bwd = (ks >= w0[kk]) & (ks < T)
                    meet[i, kk] = ke[bwd].max() if bwd.any() else T
                # each run belongs to the meeting it delays (the first one not before it)
                km = np.searchsorted(meet[i], r0, "left")
                np.add.at(pre[i], km[km < S], idle[km < S])
                aft = inw & (r0 > meet[i][np.maximum(k, 0)])
                np.add.at(post[i], k[aft], idle[aft])
            else:
                np.add.at(pre[i], k[inw], idle[inw])
                meet[i] = w1
        # the stall inside the step windows (what a step can lose), per step per rank
        f["alloc_idle_ms_per_step"] = float(win.mean() / 1e6)
        f["alloc_idle_ms_range"] = [float(win.min() / 1e6), float(win.max() / 1e6)]
        if ar_ids:
            # each meeting comes this much sooner (any common shift of the ranks cancels)
            soon = meet.max(0) - (meet - pre).max(0)
            # and each rank's window ends sooner by its own stalls after the meeting, less the
            # last step's (already in `soon`: they delayed this meeting, outside this window)
            prev = np.c_[np.zeros((len(R), 1)), post[:, :-1]]
            after = dur.max(0) - (dur - post + prev).max(0)
            f["alloc_meet_sooner_ms"] = float(soon.mean() / 1e6)
            f["alloc_post_meet_ms"] = float(after.mean() / 1e6)
            loss = soon + after  # = step − max over ranks of (dur − soon − post + prev)
        else:  # the step ends when its slowest rank does: that rank's stall comes off
            loss = pre.max(0)
        # what the step loses to the stalls (ms): the step without them is step_ms − this
        f["alloc_stall_crit_ms"] = float(loss.mean() / 1e6)

    def _kernels(self, f: dict) -> None:
        c = self.c
        S, nR = max(self.n_steps, 1), len(self.ranks)
        k = self.mask(cat=C_KERN) & (c["tid"] == COMPUTE)
        total = self.dur[k].sum()
        names = c["name"][k]
        uniq, inv = np.unique(names, return_inverse=True)
        sums = np.bincount(inv, weights=self.dur[k])
        is_gemm = np.array([is_gemm_kernel(self.names[u]) for u in uniq])
        f["nongemm_share"] = float(sums[~is_gemm].sum() / total) if total else 0.0
        order = np.argsort(-sums)
        f["top_kernels"] = [
            [self.names[uniq[i]][:80], round(float(sums[i] / total), 4)] for i in order[:5]
        ]
        # score-matrix elementwise chain: kernels whose launching op carries 4-D Input Dims
        # the ops that launch them: forward on the main thread, backward on the autograd thread
        outer = (self.mask(tid=MAIN) | self.mask(tid=AUTOGRAD)) & (c["aid"] >= 0) & (c["cat"] == 1)
        dims4 = per_args(
            self.args, c["aid"][outer], lambda a: len((a.get("Input Dims") or [[]])[0]) == 4, bool
        )
        fam_ms, fam_bytes, fam_time = 0.0, 0.0, 0.0
        if dims4.any():
            os_, oe = self.ts[outer][dims4], self.end[outer][dims4]
            orank = c["rank"][outer][dims4]
            oaid = c["aid"][outer][dims4]
            # the launch inside each op gives the correlation of its kernel
            la = self.mask(names=lambda n: n.endswith("LaunchKernel"))
            lts, lr, lc = self.ts[la], c["rank"][la], c["corr"][la]
            # kernel duration by (rank, correlation)
            kkey = (c["rank"][k].astype(np.int64) << 40) | c["corr"][k]
            ko = np.argsort(kkey, kind="stable")
            kkey_s, kdur_s = kkey[ko], self.dur[k][ko]
            # bytes each pass moves at least: the score tensor read once and written once, in
            # its own dtype (fp32 scores move twice the bytes of bf16 ones)
            nel_of = {
                int(a): float(np.prod(self.args[a]["Input Dims"][0]))
                * (2.0 if (self.args[a].get("Input type") or [""])[0] == "float" else 1.0)
                for a in np.unique(oaid)
            }
            nel = np.array([nel_of[int(a)] for a in oaid]) if len(oaid) else np.zeros(0)
            for r in self.ranks:
                mr = lr == r
                lt_r, lc_r = lts[mr], lc[mr]
                o2 = np.argsort(lt_r)
                lt_r, lc_r = lt_r[o2], lc_r[o2]
                sel = orank == r
                if not len(lt_r) or not sel.any():
                    continue
                i = np.searchsorted(lt_r, os_[sel])
                i2 = np.minimum(i, len(lt_r) - 1)
                ok = (i < len(lt_r)) & (lt_r[i2] < oe[sel])
                key = (np.int64(r) << 40) | lc_r[i2]
                pk = np.minimum(np.searchsorted(kkey_s, key), max(len(kkey_s) - 1, 0))
                ok &= kkey_s[pk] == key
                kd = np.where(ok, kdur_s[pk], 0.0)
                ok &= kd != 0
                fam_ms += float(kd[ok].sum()) / 1000
                fam_time += float(kd[ok].sum())
                fam_bytes += float((nel[sel][ok] * 4).sum())
        f["score_chain_ms_per_step"] = fam_ms / S / nR
        f["score_chain_share"] = float(fam_time / total) if total else 0.0
        f["score_chain_tbps"] = float(fam_bytes / (fam_time / 1e6) / 1e12) if fam_time else 0.0
        f["hbm_tbps"] = self.hw.hbm_tbps
