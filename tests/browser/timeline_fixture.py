"""Synthetic timeline JSON (docs/contracts.md §2) and a tiny static server.

Shared by the browser tests (tests/browser/test_viewer.py) and the viewer benchmark
(bench/viewer_bench.py). Pure Python, deterministic in its arguments, no Django.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import random
import threading
from collections.abc import Iterator
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

CATS = [
    "user_annotation",
    "cpu_op",
    "cuda_runtime",
    "kernel",
    "gpu_memcpy",
    "gpu_memset",
    "nccl",
    "dataloader",
]
_C = {c: i for i, c in enumerate(CATS)}

_OPS = [
    ("aten::linear", "aten::addmm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"),
    ("aten::layer_norm", "aten::native_layer_norm", "vectorized_layer_norm_kernel"),
    ("aten::gelu", "aten::gelu", "vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>"),
    ("aten::softmax", "aten::_softmax", "cunn_SoftMaxForward<4, float, float>"),
    ("aten::add", "aten::add", "vectorized_elementwise_kernel<4, CUDAFunctor_add<c10::BFloat16>>"),
    ("aten::matmul", "aten::mm", "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_tn"),
    ("aten::dropout", "aten::native_dropout", "fused_dropout_kernel_vec<c10::BFloat16, float>"),
    ("aten::copy_", "aten::copy_", "Memcpy HtoD (Pinned -> Device)"),
]


class _Names:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.names)
            self.names.append(name)
        return i


def make_timeline(n_slices: int = 20_000, n_ranks: int = 4, seed: int = 0) -> dict:
    """A multi-rank training trace with about ``n_slices`` slices.

    Per rank: a CPU main thread (ProfilerStep > op > sub-op > aten::empty, depth 4), two
    dataloader workers, a CUDA API row (launches), a compute stream and an NCCL stream.
    Every launch and the kernel it started share a non-zero ``corr`` within the rank.
    """
    rng = random.Random(seed)
    nm = _Names()
    rows: list[dict] = []
    events: list[tuple] = []  # (row, ts, dur, depth, name, cat, corr, args)
    ops_per_step = 40
    per_step = ops_per_step * 5 + 5  # slices one rank adds per step
    n_steps = max(2, round(n_slices / (n_ranks * per_step)))
    corr_next = 1000
    step_len_guess = 0.0
    for rank in range(n_ranks):
        base = len(rows)
        rows += [
            {"rank": rank, "kind": "cpu", "name": "python main thread", "depth": 4},
            {"rank": rank, "kind": "dataloader", "name": "dataloader worker 0", "depth": 1},
            {"rank": rank, "kind": "dataloader", "name": "dataloader worker 1", "depth": 1},
            {"rank": rank, "kind": "cuda_api", "name": "CUDA API", "depth": 1},
            {"rank": rank, "kind": "gpu", "name": f"GPU {rank} · stream 7 (compute)", "depth": 1},
            {"rank": rank, "kind": "nccl", "name": f"GPU {rank} · stream 20 (NCCL)", "depth": 1},
        ]
        r_cpu, r_dl0, r_api, r_gpu, r_nccl = base, base + 1, base + 3, base + 4, base + 5
        slow = 1.0 + (0.35 if (rank == n_ranks - 1 and n_ranks > 1) else 0.0)
        t = 50.0 + rank * 3.0
        gpu_free = 0.0
        nccl_free = 0.0
        for step in range(n_steps):
            step_start = t
            # dataloader worker fetches the next batch while this step runs
            wrow = r_dl0 + (step % 2)
            fetch = rng.uniform(1500, 4000)
            events.append(
                (wrow, t + 20, fetch, 0, nm("DataLoader worker fetch"), _C["dataloader"], 0, None)
            )
            t += 30.0
            for j in range(ops_per_step):
                top, sub, kname = _OPS[(j * 7 + step) % len(_OPS)]
                op_start = t
                op_dur = rng.uniform(25, 90)
                sub_start = op_start + rng.uniform(2, 6)
                sub_dur = op_dur - (sub_start - op_start) - rng.uniform(2, 6)
                emp_dur = rng.uniform(2, 5)
                launch_start = sub_start + emp_dur + rng.uniform(1, 3)
                launch_dur = min(rng.uniform(4, 9), sub_start + sub_dur - launch_start - 0.5)
                events.append((r_cpu, op_start, op_dur, 1, nm(top), _C["cpu_op"], 0, None))
                events.append((r_cpu, sub_start, sub_dur, 2, nm(sub), _C["cpu_op"], 0, None))
                events.append(
                    (r_cpu, sub_start + 0.5, emp_dur, 3, nm("aten::empty"), _C["cpu_op"], 0, None)
                )
                corr = corr_next
                corr_next += 1
                is_copy = kname.startswith("Memcpy")
                api = "cudaMemcpyAsync" if is_copy else "cudaLaunchKernel"
                events.append(
                    (r_api, launch_start, launch_dur, 0, nm(api), _C["cuda_runtime"], corr, None)
                )
                k_start = max(launch_start + rng.uniform(5, 12), gpu_free + rng.uniform(1, 4))
                k_dur = rng.uniform(8, 160) * slow
                if j % 13 == 5:
                    k_dur *= 4
                args: dict = {"stream": 7, "correlation": corr}
                if is_copy:
                    args.update({"bytes": rng.choice([4194304, 16777216]), "kind": "HtoD"})
                    cat = _C["gpu_memcpy"]
                else:
                    args.update({"grid": [rng.choice([128, 256, 512]), 1, 1], "block": [256, 1, 1]})
                    cat = _C["kernel"]
                events.append((r_gpu, k_start, k_dur, 0, nm(kname), cat, corr, args))
                gpu_free = k_start + k_dur
                t = op_start + op_dur + rng.uniform(1, 8)
            # gradient all-reduce at the end of the step, launched from the CPU
            corr = corr_next
            corr_next += 1
            ar_launch = t
            events.append(
                (r_api, ar_launch, 6.0, 0, nm("cudaLaunchKernel"), _C["cuda_runtime"], corr, None)
            )
            ar_start = max(gpu_free + 2.0, ar_launch + 8.0, nccl_free)
            ar_dur = rng.uniform(900, 1300)
            nelems = 6637568
            events.append(
                (
                    r_nccl,
                    ar_start,
                    ar_dur,
                    0,
                    nm("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long)"),
                    _C["nccl"],
                    corr,
                    {
                        "stream": 20,
                        "Collective name": "allreduce",
                        "In msg nelems": nelems,
                        "Out msg nelems": nelems,
                        "dtype": "BFloat16",
                        "Group size": n_ranks,
                        "bytes": nelems * 2,
                    },
                )
            )
            nccl_free = ar_start + ar_dur
            # the CPU waits for the step to finish (sync), then the step annotation closes
            sync_start = t + 8.0
            sync_end = max(nccl_free, gpu_free) + 5.0
            events.append(
                (
                    r_api,
                    sync_start,
                    sync_end - sync_start,
                    0,
                    nm("cudaStreamSynchronize"),
                    _C["cuda_runtime"],
                    0,
                    None,
                )
            )
            t = sync_end + 10.0
            events.append(
                (
                    r_cpu,
                    step_start,
                    t - step_start,
                    0,
                    nm(f"ProfilerStep#{step}"),
                    _C["user_annotation"],
                    0,
                    None,
                )
            )
            t += rng.uniform(20, 60)
        step_len_guess = max(step_len_guess, t)
    events.sort(key=lambda e: (e[0], e[1], e[3]))
    sl: dict[str, list] = {k: [] for k in ("row", "ts", "dur", "depth", "name", "cat", "corr")}
    args_out: dict[str, dict] = {}
    for i, (row, ts, dur, depth, name, cat, corr, args) in enumerate(events):
        sl["row"].append(row)
        sl["ts"].append(round(ts, 3))
        sl["dur"].append(round(dur, 3))
        sl["depth"].append(depth)
        sl["name"].append(name)
        sl["cat"].append(cat)
        sl["corr"].append(corr)
        if args:
            args_out[str(i)] = args
    return {
        "v": 1,
        "span": [0.0, round(step_len_guess + 100.0, 3)],
        "ranks": [{"rank": r, "label": f"rank {r}"} for r in range(n_ranks)],
        "rows": rows,
        "names": nm.names,
        "cats": CATS,
        "slices": sl,
        "args": args_out,
    }


def slice_at(tl: dict, i: int) -> dict:
    """One slice of a timeline as a plain dict (for assertions)."""
    s = tl["slices"]
    return {
        "index": i,
        "row": s["row"][i],
        "ts": s["ts"][i],
        "dur": s["dur"][i],
        "depth": s["depth"][i],
        "name": tl["names"][s["name"][i]],
        "cat": tl["cats"][s["cat"][i]],
        "corr": s["corr"][i],
        "args": tl["args"].get(str(i)),
    }


class _Handler(http.server.SimpleHTTPRequestHandler):
    data: dict[str, bytes] = {}

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path.startswith("/__data/"):
            body = self.data.get(path[len("/__data/") :])
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve(data: dict[str, dict | bytes] | None = None) -> Iterator[tuple[str, dict[str, bytes]]]:
    """Serve the repository root (so /static/... works) on 127.0.0.1, plus JSON documents
    under /__data/<name>. Yields (base_url, store); add more documents to ``store`` later."""
    store: dict[str, bytes] = {}
    for k, v in (data or {}).items():
        store[k] = v if isinstance(v, bytes) else json.dumps(v, separators=(",", ":")).encode()
    handler = type("Handler", (_Handler,), {"data": store})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(REPO_ROOT))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", store
    finally:
        server.shutdown()
        server.server_close()


def encode(tl: dict) -> bytes:
    return json.dumps(tl, separators=(",", ":")).encode()


def make_symmetric_timeline(n_kernels: int = 3000, n_ranks: int = 2) -> dict:
    """Ranks with the same GPU work, only shifted in phase: every tenth slice on each compute
    stream is a 1 µs memcpy; on rank 0 the stream starts with one, on the others it starts with a
    kernel. Kernels are 6-9 µs with 1 µs gaps, so at the fitted zoom many share a pixel."""
    nm = _Names()
    rows: list[dict] = []
    ev: list[tuple] = []  # (row, ts, dur, name, cat)
    for rank in range(n_ranks):
        r_gpu = len(rows)
        rows.append({"rank": rank, "kind": "gpu", "name": f"GPU {rank} · stream 7", "depth": 1})
        t = 10.0
        for j in range(n_kernels):
            if (j + 5 * rank) % 10 == 0:
                ev.append((r_gpu, t, 1.0, nm("Memcpy HtoD (Pinned -> Device)"), _C["gpu_memcpy"]))
                t += 2.0
            else:
                ev.append((r_gpu, t, 6.0 + (j % 4), nm(f"gemm_kernel_{j % 3}"), _C["kernel"]))
                t += 7.0 + (j % 4)
    span_end = max(e[1] + e[2] for e in ev) + 10.0
    sl: dict[str, list] = {k: [] for k in ("row", "ts", "dur", "depth", "name", "cat", "corr")}
    for row, ts, dur, name, cat in sorted(ev):
        sl["row"].append(row)
        sl["ts"].append(ts)
        sl["dur"].append(dur)
        sl["depth"].append(0)
        sl["name"].append(name)
        sl["cat"].append(cat)
        sl["corr"].append(0)
    return {
        "v": 1,
        "span": [0.0, span_end],
        "ranks": [{"rank": r, "label": f"rank {r}"} for r in range(n_ranks)],
        "rows": rows,
        "names": nm.names,
        "cats": CATS,
        "slices": sl,
        "args": {},
    }
