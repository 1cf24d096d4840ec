"""One reader for the benches that look at traces (`realism.py`, `audit_features.py`).

`Events` is a columnar table of one trace's complete (`X`) events as a reader of the Kineto file
sees them: names, categories, threads (with the names Kineto gives them), times in µs, argument
templates, plus what lies around the events (the header, flow categories, instants, thread
names). It is built either from a real Kineto file (`from_kineto`, .json or .json.gz) or from a
generated trace (`from_trace`), straight from the engine's columns (no JSON round trip, so the
audit stays fast) but with the export's own names for threads, header and marks, and without the
DataLoader worker rows a Kineto file of the training process does not have (`kineto=True`).
Pure: numpy, orjson and the engine.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@dataclass
class Events:
    names: list[str]
    name: np.ndarray  # index into names
    cats: list[str]
    cat: np.ndarray  # index into cats
    threads: list[str]  # one label per thread ("<pid>/<tid> (<thread name>)" or a GPU stream)
    thread: np.ndarray  # index into threads
    gpu_thread: np.ndarray  # per thread: a GPU stream?
    ts: np.ndarray  # µs
    dur: np.ndarray  # µs
    args: list[dict]
    aid: np.ndarray  # index into args, -1 = none
    rank: np.ndarray  # rank of each event (0 for a single Kineto file)
    header: dict[str, Any] = field(default_factory=dict)
    flow_cats: set[str] = field(default_factory=set)
    marks: set[str] = field(default_factory=set)  # profiler span and instants
    thread_names: set[str] = field(default_factory=set)
    depth: np.ndarray | None = None  # nesting depth when known (generated traces)

    def __len__(self) -> int:
        return len(self.ts)

    def cat_mask(self, *cats: str) -> np.ndarray:
        ids = [i for i, c in enumerate(self.cats) if c in cats]
        return np.isin(self.cat, ids)

    def name_mask(self, pred) -> np.ndarray:
        return np.array([bool(pred(n)) for n in self.names], bool)[self.name]

    @property
    def is_gpu(self) -> np.ndarray:
        return self.gpu_thread[self.thread] & self.cat_mask(*GPU_CATS)


def load(path: str | Path) -> dict:
    raw = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        raw = gzip.decompress(raw)
    return orjson.loads(raw)


def _intern(values: list) -> tuple[list, np.ndarray]:
    idx: dict = {}
    out = np.fromiter((idx.setdefault(v, len(idx)) for v in values), np.int64, len(values))
    return list(idx), out


def from_kineto(doc: dict) -> Events:
    """A Kineto trace (one rank's file) as `Events`."""
    evs = doc.get("traceEvents", [])
    xs = [e for e in evs if e.get("ph") == "X"]
    names, name = _intern([str(e.get("name", "")) for e in xs])
    cats, cat = _intern([str(e.get("cat", "")) for e in xs])
    tkeys, thread = _intern([(e.get("pid"), e.get("tid")) for e in xs])
    tname = {
        (e.get("pid"), e.get("tid")): str((e.get("args") or {}).get("name", ""))
        for e in evs
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    gpu_keys = {(e.get("pid"), e.get("tid")) for e in xs if e.get("cat") in GPU_CATS}
    args: list[dict] = []
    aidx: dict[bytes, int] = {}
    aid = np.full(len(xs), -1, np.int64)
    for i, e in enumerate(xs):
        a = e.get("args")
        if a:
            k = orjson.dumps(a, option=orjson.OPT_SORT_KEYS)
            j = aidx.get(k)
            if j is None:
                j = aidx[k] = len(args)
                args.append(a)
            aid[i] = j
    return Events(
        names=names,
        name=name,
        cats=cats,
        cat=cat,
        threads=[f"{p}/{t} ({tname.get((p, t), '')})" for p, t in tkeys],
        thread=thread,
        gpu_thread=np.array([k in gpu_keys for k in tkeys], bool),
        ts=np.array([float(e.get("ts", 0)) for e in xs]),
        dur=np.array([float(e.get("dur", 0)) for e in xs]),
        args=args,
        aid=aid,
        rank=np.zeros(len(xs), np.int64),
        header={k: v for k, v in doc.items() if k != "traceEvents"},
        flow_cats={str(e.get("cat")) for e in evs if e.get("ph") in ("s", "f", "t")},
        marks={
            str(e.get("name", ""))
            for e in evs
            if e.get("ph") in ("i", "I") or (e.get("ph") == "X" and e.get("cat") == "Trace")
        },
        thread_names=set(tname.values()),
    )


def from_trace(trace: Any, rank: int | None = None, kineto: bool = True) -> Events:
    """A generated trace (one rank, or every rank when `rank` is None) as `Events`, read the way
    the Kineto export writes it."""
    from scenarios.engine import export
    from scenarios.engine.model import CATS, COMPUTE, STREAM_OF, WORKER0, WORKER1

    c = trace.cols
    m = np.ones(len(c["ts"]), bool) if rank is None else c["rank"] == rank
    if kineto:
        m &= (c["tid"] != WORKER0) & (c["tid"] != WORKER1)
    idx = np.flatnonzero(m)
    tid = c["tid"][idx].astype(np.int64)
    rk = c["rank"][idx].astype(np.int64)
    tkey = rk * 16 + tid
    ukeys, thread = np.unique(tkey, return_inverse=True)
    labels, gpu = [], []
    for k in ukeys.tolist():
        r, t = divmod(k, 16)
        if t >= COMPUTE:
            labels.append(f"{r}/{STREAM_OF[t]} (stream {STREAM_OF[t]} )")
        else:
            labels.append(f"{r}/{export._tid_os(r, t)} ({export.THREAD_LABEL[t]})")
        gpu.append(t >= COMPUTE)
    head = export._hta_head(trace, 0 if rank is None else rank)
    present = set(np.unique(tid).tolist())
    flows = {"ac2g"} if (c["corr"][idx] != 0).any() else set()
    if export._fwdbwd(trace, idx).any():
        flows.add("fwdbwd")
    marks = export._profiler_marks(trace, 0 if rank is None else rank) if kineto else []
    return Events(
        names=trace.names,
        name=c["name"][idx].astype(np.int64),
        cats=list(CATS),
        cat=c["cat"][idx].astype(np.int64),
        threads=labels,
        thread=thread.reshape(-1),
        gpu_thread=np.array(gpu, bool),
        ts=c["ts"][idx] / 1000.0,
        dur=c["dur"][idx] / 1000.0,
        args=trace.args,
        aid=c["aid"][idx].astype(np.int64),
        rank=rk,
        header=head,
        flow_cats=flows,
        marks={m_["name"] for m_ in marks},
        thread_names={export.THREAD_LABEL[t] for t in present if t < COMPUTE},
        depth=c["depth"][idx].astype(np.int64),
    )
