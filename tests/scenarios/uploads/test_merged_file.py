"""One file holding several ranks, as merged exports do (the app's own "Download as Perfetto
JSON", an upload's stored export, another tool's merge): uploaded, it is read as its ranks, each
with its own GPU and host threads, not as one rank with every GPU's streams on top of each other."""

from __future__ import annotations

import io
import json
from collections import Counter

import orjson
import pytest

from scenarios import engine
from scenarios.traceanalysis import analyse, to_perfetto
from scenarios.traceanalysis.ingest import Limits, load
from scenarios.traceanalysis.kineto import GPU_KINDS


def _seed(slug: str, family: str) -> int:
    return next(s for s in range(1, 80) if engine.generate(slug, s).family == family)


def _gpu_events_per_device(data: bytes) -> list[int]:
    doc = orjson.loads(data)
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset"}
    per = Counter(e["pid"] for e in doc["traceEvents"] if e.get("cat") in gpu_cats)
    return [per[p] for p in sorted(per)]


@pytest.mark.parametrize(("slug", "family"), [("pipeline-bubbles", "pp"), ("straggler", "ddp")])
def test_the_apps_own_perfetto_download_uploads_as_its_ranks(slug, family):
    trace = engine.generate(slug, _seed(slug, family))
    data = engine.perfetto_bytes(trace)

    ranks = load("trace.json", io.BytesIO(data), Limits())

    assert [r.rank for r in ranks] == list(range(trace.world))
    # each rank: its own device's GPU events, all of them, on one GPU process
    per_rank = [int(sum(r.kind == k for k in GPU_KINDS).sum()) for r in ranks]
    assert per_rank == _gpu_events_per_device(data)
    for r in ranks:
        gpu_pids = {int(p) for p, k in zip(r.pid, r.kind, strict=True) if k in GPU_KINDS}
        assert len(gpu_pids) == 1
    result = analyse(ranks)
    assert result["world_size"] == trace.world
    assert result["findings"] and result["findings"][0]["slug"] == slug, result["findings"]


def test_an_uploads_stored_export_uploads_again_as_the_same_ranks():
    trace = engine.generate("straggler", _seed("straggler", "ddp"))
    first = load(
        "job.json",
        io.BytesIO(engine.perfetto_bytes(trace)),
        Limits(),
    )
    again = load("export.json", io.BytesIO(to_perfetto(first)), Limits())
    assert [r.rank for r in again] == list(range(trace.world))
    assert [r.rank for r in again] == [r.rank for r in first]
    assert [r.n for r in again] == [r.n for r in first]


def test_one_process_driving_two_gpus_stays_one_rank():
    """Nothing says which host work is whose: read as one rank, as before."""
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 9, "tid": 1,
         "ts": 0.0, "dur": 900.0},
    ]  # fmt: skip
    for i, dev in enumerate((0, 1, 0, 1)):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9,
                   "tid": 1, "ts": 10.0 + i, "dur": 5,
                   "args": {"correlation": 10 + i}})  # fmt: skip
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": dev, "tid": 7,
                   "ts": 30.0 + 100 * i, "dur": 50,
                   "args": {"stream": 7, "correlation": 10 + i, "device": dev}})  # fmt: skip
    for dev in (0, 1):
        ev.append({"ph": "M", "name": "process_labels", "pid": dev, "tid": 0,
                   "args": {"labels": f"GPU {dev}"}})  # fmt: skip
    ev.append({"ph": "M", "name": "process_labels", "pid": 9, "tid": 0, "args": {"labels": "CPU"}})
    ranks = load("one.json", io.BytesIO(json.dumps({"traceEvents": ev}).encode()), Limits())
    assert len(ranks) == 1 and ranks[0].n == len(ev) - 3


@pytest.mark.parametrize(
    ("name", "rank", "world", "device"),
    [
        ("sampled_rank-1.json.gz", 1, 128, None),
        ("nccl_a100_rank0.json.gz", 0, 2, "NVIDIA A100-PG509-200"),
    ],
)
def test_an_uploads_export_of_one_rank_uploads_again_as_that_rank_of_that_job(
    name, rank, world, device
):
    """The export kept no Kineto header: rank 1 of a 128-rank job came back as rank 0 of a
    1-rank job, and the A100 trace on an unknown device (no link to rate its all-reduces
    against)."""
    from pathlib import Path

    real = Path(__file__).resolve().parents[2] / "data" / "real" / name
    first = analyse(load(name, io.BytesIO(real.read_bytes()), Limits()))
    exported = to_perfetto(load(name, io.BytesIO(real.read_bytes()), Limits()))
    again = analyse(load("upload-0123456789ab.json", io.BytesIO(exported), Limits()))
    assert again["ranks"] == first["ranks"] == [rank]
    assert again["world_size"] == first["world_size"] == world
    assert again["device"] == first["device"] == device
    assert again["link"] == first["link"]
    assert [f["slug"] for f in again["findings"]] == [f["slug"] for f in first["findings"]]
