"""A measurement prototype, not wired into the app: the Perfetto export as Perfetto's own
protobuf trace (TracePacket / TrackEvent), to compare how fast Perfetto loads each
(``perfetto_format_bench.py``). It measured slower than the JSON; see that script.

The same events, tracks, names, categories, arguments and flows as the Perfetto JSON
(``export.perfetto_bytes``), in the format Perfetto's trace processor reads fastest: strings are
interned once (event names, categories, argument names), each slice is a begin and an end packet
on its thread's track, arguments are debug annotations and the launch -> kernel (``ac2g``) and
forward -> backward (``fwdbwd``) arrows are flow ids on the slices they join.

No protobuf library: the few messages used are written by hand. The bulk (one packet per slice
edge) is encoded with numpy, a rank at a time: each packet is a row of byte columns with a mask
of the bytes present (varints vary in length), rows are ordered, and the masked bytes read out in
row order are the packets back to back.

Field numbers used (perfetto/trace/*.proto, v52):
  Trace.packet 1
  TracePacket: timestamp 8, trusted_packet_sequence_id 10, track_event 11, interned_data 12,
      sequence_flags 13, track_descriptor 60
  TrackDescriptor: uuid 1, name 2, process 3, thread 4, parent_uuid 5
  ProcessDescriptor: pid 1, legacy_sort_index 3, process_name 6, process_labels 8
  ThreadDescriptor: pid 1, tid 2, legacy_sort_index 3, thread_name 5
  TrackEvent: category_iids 3, debug_annotations 4, type 9, name_iid 10, track_uuid 11,
      flow_ids 47, terminating_flow_ids 48
  DebugAnnotation: name_iid 1, int_value 4, double_value 5, string_value 6, array_values 12
  InternedData: event_categories 1, event_names 2, debug_annotation_names 3 (each: iid 1, name 2)
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

import numpy as np

from scenarios.engine.export import (
    CORR_BASE,
    CPU_PID_BASE,
    FLOW_STRIDE,
    FWDBWD_OFF,
    THREAD_LABEL,
    _fwdbwd,
    _rank_idx,
    _tid_os,
)
from scenarios.engine.model import CATS, COMPUTE, MAIN, STREAM_OF

if TYPE_CHECKING:
    from scenarios.engine import Trace

SEQ = 1  # the one packet sequence every packet is written on
SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE = 1, 2
SLICE_BEGIN, SLICE_END = 1, 2
# argument names the export adds to the stored ones (in the JSON's order)
DYNAMIC_ARGS = ("External id", "device", "context", "stream", "correlation", "cbid",
                "Sequence number")  # fmt: skip


# ---------------------------------------------------------------- scalar writer (the few messages)
def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1  # negative int64 values as ten bytes, two's complement
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint((field << 3) | wire)


def _uint(field: int, v: int) -> bytes:
    return _key(field, 0) + _varint(v)


def _msg(field: int, body: bytes) -> bytes:
    return _key(field, 2) + _varint(len(body)) + body


def _str(field: int, s: str) -> bytes:
    return _msg(field, s.encode())


def _packet(body: bytes) -> bytes:
    return _msg(1, _uint(10, SEQ) + body)


def _annotation_value(v: object) -> bytes:
    """The value fields of a DebugAnnotation (lists as array_values of nameless annotations)."""
    if isinstance(v, bool):
        return _uint(2, int(v))
    if isinstance(v, int):
        return _uint(4, v)
    if isinstance(v, float):
        return _key(5, 1) + struct.pack("<d", v)
    if isinstance(v, str):
        return _str(6, v)
    if isinstance(v, list | tuple):
        return b"".join(_msg(12, _annotation_value(x)) for x in v)
    return _str(6, str(v))


# ------------------------------------------------------------- vector writer (one row per packet)
Piece = tuple[np.ndarray, np.ndarray]  # (bytes n x w uint8, present n x w bool)


def _const(b: bytes, n: int) -> Piece:
    row = np.frombuffer(b, np.uint8)
    return np.broadcast_to(row, (n, len(b))), np.ones((n, len(b)), bool)


def _varints(v: np.ndarray) -> Piece:
    x = np.asarray(v).astype(np.uint64)
    n = len(x)
    cols, present = [], []
    more = np.ones(n, bool)
    while True:
        low = (x & np.uint64(0x7F)).astype(np.uint8)
        x = x >> np.uint64(7)
        nxt = x != 0
        cols.append(np.where(nxt, low | 0x80, low).astype(np.uint8))
        present.append(more)
        more = nxt
        if not more.any():
            break
    return np.stack(cols, 1), np.stack(present, 1)


def _fixed64(v: np.ndarray) -> Piece:
    b = np.ascontiguousarray(np.asarray(v).astype("<u8")).view(np.uint8).reshape(-1, 8)
    return b, np.ones(b.shape, bool)


def _when(p: Piece, keep: np.ndarray) -> Piece:
    return p[0], p[1] & keep[:, None]


def _cat(pieces: list[Piece]) -> Piece:
    return np.hstack([p[0] for p in pieces]), np.hstack([p[1] for p in pieces])


def _sized(field: int, body: Piece) -> list[Piece]:
    """A length-delimited field around ``body``: key, length varint, body."""
    n = len(body[0])
    return [_const(_key(field, 2), n), _varints(body[1].sum(1)), body]


def _gather(rows: list[bytes], which: np.ndarray) -> Piece:
    """Per event, one of a few byte strings (``rows[which[i]]``)."""
    w = max((len(r) for r in rows), default=0)
    mat = np.zeros((len(rows), max(w, 1)), np.uint8)
    pres = np.zeros((len(rows), max(w, 1)), bool)
    for i, r in enumerate(rows):
        mat[i, : len(r)] = np.frombuffer(r, np.uint8)
        pres[i, : len(r)] = True
    return mat[which], pres[which]


def _int_annotation(name_iid: int, values: np.ndarray) -> list[Piece]:
    n = len(values)
    body = _cat([_const(_uint(1, name_iid) + _key(4, 0), n), _varints(values)])
    return _sized(4, body)


# ------------------------------------------------------------------------------------ the trace
class _Interned:
    def __init__(self, trace: Trace):
        self.names = {i: i + 1 for i in range(len(trace.names))}
        self.cats = {c: i + 1 for i, c in enumerate(CATS)}
        keys: dict[str, int] = {}
        for k in DYNAMIC_ARGS:
            keys.setdefault(k, len(keys) + 1)
        for a in trace.args:
            for k in a:
                keys.setdefault(k, len(keys) + 1)
        self.arg = keys

    def packet(self, trace: Trace) -> bytes:
        def entries(field: int, items: list[tuple[int, str]]) -> bytes:
            return b"".join(_msg(field, _uint(1, iid) + _str(2, s)) for iid, s in items)

        body = (
            entries(1, [(iid, c) for c, iid in self.cats.items()])
            + entries(2, [(iid, trace.names[i]) for i, iid in self.names.items()])
            + entries(3, [(iid, k) for k, iid in self.arg.items()])
        )
        return _packet(_uint(13, SEQ_INCREMENTAL_STATE_CLEARED) + _msg(12, body))


def _tracks(trace: Trace, rank: int, present: list[int], first_uuid: int) -> tuple[bytes, dict]:
    """Track descriptors of one rank, as the JSON's metadata names them: a CPU process (threads
    ``thread <tid> (<torch name>)``) and a GPU process (threads ``stream <n> ``), both
    ``python3``, labelled CPU / GPU <rank>, with the JSON's sort indices."""
    pid_cpu, pid_gpu = CPU_PID_BASE + 97 * rank, rank
    uuid = first_uuid
    out = b""
    for pid, label, sort in ((pid_cpu, "CPU", rank * 2), (pid_gpu, f"GPU {rank}", 16777216 + rank)):
        proc = _uint(1, pid) + _uint(3, sort) + _str(6, "python3") + _str(8, label)
        out += _packet(_msg(60, _uint(1, uuid) + _msg(3, proc)))
        uuid += 1
    track_of: dict[int, int] = {}
    for t in present:
        if t >= COMPUTE:
            pid, tid, name, sort = pid_gpu, STREAM_OF[t], f"stream {STREAM_OF[t]} ", STREAM_OF[t]
        else:
            pid, tid = pid_cpu, _tid_os(rank, t)
            name, sort = f"thread {tid} ({THREAD_LABEL[t]})", t
        thread = _uint(1, pid) + _uint(2, tid) + _uint(3, sort) + _str(5, name)
        out += _packet(_msg(60, _uint(1, uuid) + _msg(4, thread)))
        track_of[t] = uuid
        uuid += 1
    return out, track_of


def _rank_packets(trace: Trace, rank: int, it: _Interned, track_of: dict[int, int]) -> bytes:
    """Every slice of one rank as a begin and an end packet, in time order per track (at one
    instant: ends before begins, deeper ends first, shallower begins first)."""
    c = trace.cols
    idx = _rank_idx(trace, rank, workers=True)
    n = len(idx)
    if not n:
        return b""
    tid = c["tid"][idx].astype(np.int64)
    nm = c["name"][idx].astype(np.int64)
    cat = c["cat"][idx].astype(np.int64)
    corr = c["corr"][idx].astype(np.int64)
    aid = c["aid"][idx].astype(np.int64)
    ts = c["ts"][idx].astype(np.int64)
    end = ts + c["dur"][idx].astype(np.int64)
    depth = c["depth"][idx].astype(np.int64)
    gpu = tid >= COMPUTE
    rt = ~gpu & (cat == 2) & (corr != 0)
    cpu = ~gpu & (cat <= 1)
    flow_base = rank * FLOW_STRIDE
    # static part per (name, cat, thread, args): type, track, name, category, stored args
    key = (nm << 30) | ((aid + 1) << 10) | (cat << 6) | (tid << 2)
    ukey, inv = np.unique(key, return_inverse=True)
    inv = inv.reshape(-1)
    heads = []
    for k in ukey.tolist():
        nmi, ai, ki, ti = k >> 30, ((k >> 10) & ((1 << 20) - 1)) - 1, (k >> 6) & 15, (k >> 2) & 15
        h = _uint(9, SLICE_BEGIN) + _uint(11, track_of[ti]) + _uint(10, it.names[nmi])
        h += _uint(3, it.cats[CATS[ki]])
        for name, v in (trace.args[ai] if ai >= 0 else {}).items():
            h += _msg(4, _uint(1, it.arg[name]) + _annotation_value(v))
        heads.append(h)
    pieces: list[Piece] = [_gather(heads, inv)]
    # the args the export adds, in the JSON's order, present only where the JSON has them
    k_gpu = np.where(corr != 0, corr + CORR_BASE, 0)
    ext = np.cumsum(cpu)
    ext_val = np.where(gpu | rt, k_gpu, ext)
    pieces += [_when(p, gpu | rt | cpu) for p in _int_annotation(it.arg["External id"], ext_val)]
    stream_args = {
        t: b"".join(
            _msg(4, _uint(1, it.arg[k]) + _uint(4, v))
            for k, v in (("device", rank), ("context", 1), ("stream", STREAM_OF[t]))
        )
        for t in STREAM_OF
    }
    rows = [b""] + [stream_args[t] for t in sorted(STREAM_OF)]
    lut = np.zeros(8, np.int64)
    for i, t in enumerate(sorted(STREAM_OF)):
        lut[t] = i + 1
    pieces.append(_gather(rows, np.where(gpu, lut[tid], 0)))
    pieces.append(_gather([b"", _msg(4, _uint(1, it.arg["cbid"]) + _uint(4, 211))], rt * 1))
    pieces += [_when(p, gpu | rt) for p in _int_annotation(it.arg["correlation"], k_gpu)]
    seq = cpu & (corr != 0)
    pieces += [_when(p, seq) for p in _int_annotation(it.arg["Sequence number"], corr)]
    # flows: a launch starts its ac2g arrow, the kernel ends it; a forward op starts its fwdbwd
    # arrow, the backward node on the autograd thread ends it
    linked = _fwdbwd(trace, idx)
    flow_id = np.where(linked, flow_base + FWDBWD_OFF + corr, flow_base + corr + CORR_BASE)
    starts = rt | (linked & (tid == MAIN))
    ends = (gpu & (corr != 0)) | (linked & (tid != MAIN))
    fid = _fixed64(flow_id)
    pieces += [_when(_const(_key(47, 1), n), starts), _when(fid, starts)]
    pieces += [_when(_const(_key(48, 1), n), ends), _when(fid, ends)]
    begin = _event_packets(ts, _cat(pieces))
    end_heads = [_uint(9, SLICE_END) + _uint(11, track_of[t]) for t in range(8) if t in track_of]
    t_row = np.zeros(8, np.int64)
    for i, t in enumerate(t for t in range(8) if t in track_of):
        t_row[t] = i
    finish = _event_packets(end, _gather(end_heads, t_row[tid]))
    # order: by time; at one instant ends (deepest first) before begins (shallowest first)
    when = np.concatenate([ts, end])
    phase = np.concatenate([np.ones(n, np.int64), np.zeros(n, np.int64)])
    level = np.concatenate([depth, -depth])
    order = np.lexsort((level, phase, when))
    w = max(begin[0].shape[1], finish[0].shape[1])
    mat = np.zeros((2 * n, w), np.uint8)
    pres = np.zeros((2 * n, w), bool)
    mat[:n, : begin[0].shape[1]], pres[:n, : begin[1].shape[1]] = begin
    mat[n:, : finish[0].shape[1]], pres[n:, : finish[1].shape[1]] = finish
    mat, pres = mat[order], pres[order]
    return mat[pres].tobytes()


def _event_packets(ts: np.ndarray, event: Piece) -> Piece:
    """One TracePacket per row: timestamp, sequence, flags, and the TrackEvent ``event``."""
    n = len(ts)
    body = _cat(
        [_const(_key(8, 0), n), _varints(ts),
         _const(_uint(10, SEQ) + _uint(13, SEQ_NEEDS_INCREMENTAL_STATE), n), *_sized(11, event)]
    )  # fmt: skip
    return _cat(_sized(1, body))


def perfetto_proto_bytes(trace: Trace) -> bytes:
    """The Perfetto export as a protobuf ``Trace`` (see the module docstring)."""
    it = _Interned(trace)
    head = it.packet(trace)
    tracks = b""
    body = []
    uuid = 1
    for r in range(trace.world):
        idx = _rank_idx(trace, r, workers=True)
        present = sorted(set(np.unique(trace.cols["tid"][idx]).tolist()))
        desc, track_of = _tracks(trace, r, present, uuid)
        uuid += 2 + len(present)
        tracks += desc
        body.append(_rank_packets(trace, r, it, track_of))
    return head + tracks + b"".join(body)
