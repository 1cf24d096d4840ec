"""The analysis on hand-made Kineto traces whose numbers are known by construction."""

from __future__ import annotations

import io

import orjson
import pytest

from scenarios.traceanalysis import analyse, assemble, parse, to_perfetto, to_timeline
from scenarios.traceanalysis.measures import bus_factor

STEP = 1000.0
DATALOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


def job(
    *,
    comm_at=500.0,
    dataloader=0.0,
    malloc=0.0,
    ranks=2,
    steps=4,
    slow_rank=None,
    pageable=(),
    comm_nelems=1_000_000,
):
    """Per step (1000 µs): compute kernels [0,300) and [310,600), an all-reduce [comm_at,+300),
    a 20 µs memcpy at 850. Optional: a DataLoader wait at the step start (kernels shifted after
    it), a cudaMalloc, one rank's compute slower, device-to-pageable copies of the given sizes
    (bytes) at 870, 890, ..."""
    docs = []
    for r in range(ranks):
        ev: list[dict] = []
        corr = 1
        for i in range(steps):
            t = i * STEP
            ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}",
                       "pid": 10, "tid": 10, "ts": t, "dur": STEP - 1})  # fmt: skip
            off = dataloader
            if dataloader:
                ev.append({"ph": "X", "cat": "user_annotation", "pid": 10, "tid": 10, "ts": t,
                           "dur": dataloader, "name": DATALOADER})  # fmt: skip
            if malloc:
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 10,
                           "tid": 10, "ts": t + off + 1, "dur": malloc})  # fmt: skip
            k = 1.2 if slow_rank == r else 1.0
            spans = [
                ("kernel", "sm90_xmma_gemm_bf16", 7, off, 300 * k, {}),
                ("kernel", "sm90_xmma_gemm_bf16", 7, off + 300 * k + 10, 290 * k, {}),
                ("kernel", "ncclKernel_AllReduce_RING_LL_Sum_bfloat16(ncclDevComm*)", 20,
                 comm_at + off, 300 if slow_rank is None or slow_rank == r else 360,
                 {"Collective name": "allreduce", "In msg nelems": comm_nelems,
                  "dtype": "BFloat16", "Group size": ranks}),
                ("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 7, 850, 20, {}),
            ]  # fmt: skip
            spans += [
                ("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", 7, 870 + 20 * j, 10,
                 {"bytes": nbytes})
                for j, nbytes in enumerate(pageable)
            ]  # fmt: skip
            for cat, name, stream, ts, dur, args in spans:
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 10, "tid": 10, "ts": t + 0.1 * corr, "dur": 5,
                           "args": {"correlation": corr}})  # fmt: skip
                ev.append({"ph": "X", "cat": cat, "name": name, "pid": r, "tid": stream,
                           "ts": t + ts, "dur": dur,
                           "args": {"stream": stream, "correlation": corr, **args}})  # fmt: skip
                corr += 1
        docs.append(
            {"distributedInfo": {"rank": r, "world_size": ranks},
             "deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}], "traceEvents": ev}
        )  # fmt: skip
    return assemble([parse(d, source=f"rank-{i}.json") for i, d in enumerate(docs)])


def test_step_breakdown_adds_up_to_known_numbers():
    a = analyse(job())
    s = a["per_rank"][0]["steps"][1]
    assert s["step_ms"] == pytest.approx(1.0)
    assert s["compute_ms"] == pytest.approx(0.590)
    assert s["comm_ms"] == pytest.approx(0.300)
    assert s["exposed_comm_ms"] == pytest.approx(0.200)  # comm from 600 to 800 has no compute
    assert s["memcpy_ms"] == pytest.approx(0.020)
    assert s["launch_overhead_ms"] == pytest.approx(0.010)  # the 10 µs gap between kernels
    assert s["host_wait_ms"] == pytest.approx(0.180)  # 800→850 and 870→1000
    parts = ("compute_ms", "exposed_comm_ms", "memcpy_ms", "launch_overhead_ms", "host_wait_ms")
    assert sum(s[k] for k in parts) == pytest.approx(s["step_ms"])
    assert [x["last"] for x in a["per_rank"][0]["steps"]] == [False, False, False, True]


def test_overlap_collectives_and_link():
    a = analyse(job())
    pr = a["per_rank"][0]
    assert pr["overlap_pct"] == pytest.approx(100 / 3, abs=0.01)
    (c,) = pr["collectives"]
    assert c["collective"] == "allreduce" and c["bytes"] == 2_000_000 and c["group_size"] == 2
    assert c["busbw_gbps"] == pytest.approx(2e6 / 300e-6 / 1e9 * 1.0, abs=0.1)  # 2(n-1)/n = 1
    assert a["link"]["name"] == "NVLink4" and c["link_gbps"] == 450.0


def test_a_rate_above_the_link_is_not_passed_off_as_a_bandwidth():
    assert analyse(job())["per_rank"][0]["collectives"][0]["above_link"] is False
    # 1 GB in 300 µs: 3,333 GB/s over a 450 GB/s link
    (c,) = analyse(job(comm_nelems=500_000_000))["per_rank"][0]["collectives"]
    assert c["link_pct"] > 100 and c["above_link"] is True


def test_hidden_comm_raises_no_collective_finding():
    # the all-reduce [250, 550) runs under the compute kernels (10 µs of it exposed): nothing
    # about communication; what is left is the step's GPU idling 38 % waiting on the host
    f = analyse(job(comm_at=250.0))["findings"]
    assert [x["slug"] for x in f] == ["launch-bound"]
    assert f[0]["title"] == "Low GPU utilisation: the GPU waits on the host"


def test_overlapped_comm_that_outlasts_compute_is_bandwidth_bound():
    # the default job: a third of the all-reduce under compute, 200 µs of 1000 exposed, the same
    # on both ranks, 6.7 GB/s of bus bandwidth on a 450 GB/s link
    f = analyse(job())["findings"]
    assert f and f[0]["slug"] == "bandwidth-bound-collective"
    assert "below" in f[0]["measured"] and "20%" in f[0]["measured"]


def test_a_bandwidth_at_the_pcie_links_ceiling_says_the_ring_runs_through_the_hosts():
    # 6.6M bf16 elements (13.2 MB) in 300 µs on 2 ranks: 44 GB/s of bus bandwidth, 80 % of an
    # H100's 55 GB/s PCIe link, 10 % of NVLink4's 450
    a = analyse(job(comm_nelems=6_600_000))
    (c,) = a["per_rank"][0]["collectives"]
    assert c["busbw_gbps"] == pytest.approx(44, rel=0.02)
    f = a["findings"]
    assert f and f[0]["slug"] == "bandwidth-bound-collective"
    assert "80% of the GPU's 55 GB/s PCIe link" in f[0]["measured"]
    assert "through the hosts" in f[0]["measured"]
    # 6.7 GB/s is far under any PCIe link's ring ceiling: no such reading
    assert "PCIe" not in analyse(job())["findings"][0]["measured"]


def test_a_collective_that_starts_under_compute_but_outlasts_it_is_not_serialised():
    # a sixth of the all-reduce under compute (50 of 300 µs), 250 µs of 1000 exposed: its
    # buckets start during backward, so the wait is the transfer's length, not its order
    f = analyse(job(comm_at=550.0))["findings"]
    assert f and f[0]["slug"] == "bandwidth-bound-collective", [x["slug"] for x in f]
    assert "exposed-allreduce" not in [x["slug"] for x in f]


def test_a_healthy_last_bucket_tail_raises_no_collective_finding():
    # 170 of 300 µs under compute, the last 130 µs (13 % of the step) after it: the tail a
    # healthy DDP step with a large all-reduce share leaves, not a bandwidth-bound step
    slugs = [x["slug"] for x in analyse(job(comm_at=430.0))["findings"]]
    assert not {"bandwidth-bound-collective", "exposed-allreduce"} & set(slugs), slugs


def test_serialised_allreduce_is_exposed():
    f = analyse(job(comm_at=610.0))["findings"]  # comm only after compute: overlap 0 %
    assert f and f[0]["slug"] == "exposed-allreduce"
    assert f[0]["evidence"][0]["row"] == "nccl"


def test_dataloader_wait_every_step_is_starvation():
    a = analyse(job(dataloader=400.0, comm_at=100.0))
    # 3 analysed steps, each idle for the 400 µs the main thread waits on the loader
    assert a["per_rank"][0]["idle_while_cpu_in"]["input"] == pytest.approx(1.2)
    f = a["findings"]
    assert f[0]["slug"] == "input-starvation"
    ev = f[0]["evidence"][0]
    assert ev["end_us"] - ev["start_us"] == pytest.approx(401, abs=1)


def test_steady_state_malloc_is_allocator_stalls():
    f = analyse(job(malloc=60.0))["findings"]
    assert "allocator-stalls" in [x["slug"] for x in f]


def test_slow_rank_is_a_straggler():
    f = analyse(job(ranks=4, slow_rank=2))["findings"]
    assert f and f[0]["slug"] == "straggler" and f[0]["evidence"][0]["rank"] == 2


def test_timeline_is_the_viewer_format():
    tl = to_timeline(job())
    s = tl["slices"]
    n = len(s["ts"])
    assert all(len(s[k]) == n for k in ("row", "dur", "depth", "name", "cat", "corr"))
    assert [r["rank"] for r in tl["rows"]] == sorted(r["rank"] for r in tl["rows"])
    kinds = {r["kind"] for r in tl["rows"]}
    assert {"cpu", "cuda_api", "gpu", "nccl"} <= kinds
    keys = list(zip(s["row"], s["ts"], strict=True))
    assert keys == sorted(keys)
    # every kernel's correlation has its launch in the same rank's CUDA API row
    api = {(tl["rows"][r]["rank"], c) for r, c in zip(s["row"], s["corr"], strict=True)
           if c and tl["rows"][r]["kind"] == "cuda_api"}  # fmt: skip
    gpu = {(tl["rows"][r]["rank"], c) for r, c in zip(s["row"], s["corr"], strict=True)
           if c and tl["rows"][r]["kind"] in ("gpu", "nccl")}  # fmt: skip
    assert gpu and gpu <= api


def test_perfetto_export_keeps_ranks_apart():
    doc = orjson.loads(to_perfetto(job()))
    ev = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("name") == "process_name"}
    assert len(names) == 4 and len(set(names)) == 4  # CPU and GPU per rank, no pid shared
    starts = [e["id"] for e in ev if e.get("ph") == "s"]
    assert len(starts) == len(set(starts))  # flow ids unique across ranks


def test_quirks_string_ts_missing_fields_bare_array():
    doc = [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": "GPU 0", "tid": "stream 7",
         "ts": "100.5", "dur": "10", "args": {"stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "no-dur", "pid": 0, "tid": 7, "ts": 1},
        {"ph": "X", "name": "no-cat", "ts": 5, "dur": 1, "pid": 2**70,
         "args": {"correlation": 2**80}},
        {"ph": "i", "name": "instant", "ts": 3},
        "not an event",
    ]  # fmt: skip
    (r,) = assemble([parse(doc, source="bare.json")])
    assert r.n == 2 and r.skipped == 2  # ids too big for int64 (found by the fuzz test) are kept
    tl = to_timeline([r])
    assert tl["span"][1] == pytest.approx(110.5 - 5)  # times start at the first event (ts 5)


@pytest.mark.parametrize("name", ["event_sync_a100.json.gz", "mi250_minitoy.json.gz"])
def test_a_mostly_idle_real_gpu_is_reported_idle_first_not_only_by_its_kernel_mix(name):
    """Real traces whose GPU is busy a few % of the time: a kernel-mix finding (memory-bound)
    must not stand in for the idle GPU, which is the first thing to fix."""
    from pathlib import Path

    from scenarios.traceanalysis.findings import evaluate
    from scenarios.traceanalysis.ingest import Limits, load

    real = Path(__file__).resolve().parents[2] / "data" / "real" / name
    with open(real, "rb") as f:
        found = evaluate(analyse(load(name, f, Limits())))
    assert found[0]["title"].startswith("Low GPU utilisation")
    # nor beside it: a few stray kernels (tens of µs in all) on an idle GPU are no kernel mix
    assert "memory-bound-kernel" not in [x["slug"] for x in found]


def _elementwise_job(busy_us: float):
    """One rank, 4 steps of 1000 µs: an elementwise kernel of ``busy_us`` µs and a GEMM a
    third of its length, launched at the step's start."""
    ev: list[dict] = []
    for i in range(4):
        t = i * STEP
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}",
                   "pid": 10, "tid": 10, "ts": t, "dur": STEP - 1})  # fmt: skip
        spans = [
            ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
             "<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
             "at::detail::Array<char*, 3>)", 1, busy_us),
            ("sm90_xmma_gemm_bf16", busy_us + 2, busy_us / 3),
        ]  # fmt: skip
        for k, (name, ts, dur) in enumerate(spans):
            corr = 10 * i + k + 1
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                       "pid": 10, "tid": 10, "ts": t + k, "dur": 0.5,
                       "args": {"correlation": corr}})  # fmt: skip
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                       "ts": t + ts, "dur": dur,
                       "args": {"stream": 7, "correlation": corr}})  # fmt: skip
    doc = {"deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}], "traceEvents": ev}
    return assemble([parse(doc, source="rank-0.json")])


def test_a_kernel_mix_finding_needs_a_gpu_busy_most_of_the_step():
    """The same mix, elementwise three times the GEMM: named memory-bound on a GPU busy 93 % of
    the step, not on one busy 7 % of it (idle is what holds that job back)."""
    busy = [x["slug"] for x in analyse(_elementwise_job(700.0))["findings"]]
    assert "memory-bound-kernel" in busy
    idle = [x["slug"] for x in analyse(_elementwise_job(50.0))["findings"]]
    assert "memory-bound-kernel" not in idle


def test_copies_of_data_to_pageable_memory_are_found_and_scalar_reads_are_not():
    # three 1 MiB device-to-pageable copies per step: each blocks the host until it is done
    big = analyse(job(comm_at=250.0, pageable=(1 << 20,) * 3))
    assert big["per_rank"][0]["pageable_memcpy_data"] == 9  # 3 per step, 3 analysed steps
    assert any(x["title"] == "Copies to pageable host memory" for x in big["findings"])
    # the same number of 4-byte reads (.item()): every loop makes them, pinning cannot help
    small = analyse(job(comm_at=250.0, pageable=(4,) * 3))
    assert small["per_rank"][0]["pageable_memcpy"] == 9
    assert small["per_rank"][0]["pageable_memcpy_data"] == 0
    assert not any(x["title"] == "Copies to pageable host memory" for x in small["findings"])


def test_a_collectives_bandwidth_is_shown_with_the_duration_it_is_taken_at():
    """The page showed the median duration beside a bus bandwidth taken at the 10th
    percentile: 16 MB ÷ 998 µs is 16 GB/s, not the 198 GB/s printed next to it."""
    (c,) = analyse(job())["per_rank"][0]["collectives"]
    assert c["p10_us"] > 0
    factor = bus_factor(c["collective"], c["group_size"])
    rate = c["bytes"] / (c["p10_us"] * 1e-6) / 1e9 * factor
    assert rate == pytest.approx(c["busbw_gbps"], rel=0.01)


@pytest.mark.parametrize("name", ["sampled_rank-0.json.gz", "sampled_rank-1.json.gz"])
def test_collectives_run_as_sendrecv_kernels_are_named_by_the_op_that_launched_them(name):
    """On these 128-rank TorchRec traces every NCCL kernel is ``ncclKernel_SendRecv_…``, but
    the ops that launch them are ``c10d::alltoall_base_``, ``c10d::allreduce_`` and
    ``c10d::_allgather_base_``: no point-to-point traffic, so no pipeline. The page called them
    send/recv and found "2 microbatches through 128 stages" of pipeline bubbles."""
    from pathlib import Path

    from scenarios.traceanalysis.ingest import Limits, load

    real = Path(__file__).resolve().parents[2] / "data" / "real" / name
    with open(real, "rb") as f:
        a = analyse(load(name, f, Limits()))
    colls = {c["collective"] for c in a["per_rank"][0]["collectives"]}
    assert colls == {"alltoall", "allreduce", "allgather"}
    assert "pipeline-bubbles" not in {x["slug"] for x in a["findings"]}


def test_a_send_launched_by_c10d_send_stays_point_to_point():
    """The launching op names a kernel that carries no "Collective name" either way: a
    ``c10d::send`` is point-to-point, a ``nccl:all_reduce`` an all-reduce."""
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 0, "dur": 1000},
        {"ph": "X", "cat": "cpu_op", "name": "c10d::send", "pid": 1, "tid": 1, "ts": 10,
         "dur": 30},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 20, "dur": 5, "args": {"correlation": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "nccl:all_reduce", "pid": 1, "tid": 1, "ts": 100,
         "dur": 30},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 110, "dur": 5, "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgs)",
         "pid": 0, "tid": 7, "ts": 40, "dur": 50, "args": {"stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevKernelArgs)",
         "pid": 0, "tid": 7, "ts": 140, "dur": 50, "args": {"stream": 7, "correlation": 2}},
    ]  # fmt: skip
    a = analyse(assemble([parse({"traceEvents": ev}, source="t.json")]))
    assert sorted(c["collective"] for c in a["per_rank"][0]["collectives"]) == [
        "allreduce",
        "sendrecv",
    ]


def test_a_trace_without_steps_is_not_said_to_stall_in_steady_state_steps():
    """AlexNet's benchmark trace has no ProfilerStep: its 8.5 s of cudaMalloc / cudaFree are the
    warm-up's, and its 8 large host-to-device copies load the weights once. The page said
    "cudaMalloc / cudaFree in steady-state steps" and "8.0 pageable memcpy … per step"; what the
    trace does show is a GPU idle 99 % of the time."""
    from pathlib import Path

    from scenarios.traceanalysis.ingest import Limits, load

    name = "alexnet_a100.json.gz"
    real = Path(__file__).resolve().parents[2] / "data" / "real" / name
    with open(real, "rb") as f:
        a = analyse(load(name, f, Limits()))
    assert [s["step"] for s in a["per_rank"][0]["steps"]] == [None]
    titles = [x["title"] for x in a["findings"]]
    assert "cudaMalloc / cudaFree in steady-state steps" not in titles
    assert "Copies to pageable host memory" not in titles
    assert titles[0].startswith("Low GPU utilisation")
    # and it does not call the whole trace "the step"
    assert a["findings"][0]["measured"].startswith(
        "GPU idle 99% of the trace window (no ProfilerStep: the trace is one window, from its "
        "first GPU event to its last)"
    )
    assert a["findings"][0]["threshold"] == "idle >= 30% of the trace window"


def test_of_two_ranks_the_slower_one_is_not_named_a_straggler():
    """Two ranks of the 128-rank TorchRec job, one analysed step: rank 1 computed 27 % longer
    than rank 0 and the page said "Rank 1 is slower and the others wait for it … in 1 of 1
    steps". Of two ranks one is always the slower (their median is their mean); the same
    slowdown among four ranks is a straggler."""
    import zipfile
    from pathlib import Path

    from scenarios.traceanalysis.ingest import Limits, load

    real = Path(__file__).resolve().parents[2] / "data" / "real"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for r in (0, 1):
            z.write(real / f"sampled_rank-{r}.json.gz", f"rank-{r}.json.gz")
    a = analyse(load("job.zip", io.BytesIO(buf.getvalue()), Limits()))
    assert a["ranks"] == [0, 1] and a["skew"]["steps"]
    assert "straggler" not in [x["slug"] for x in a["findings"]]
    assert "straggler" not in [x["slug"] for x in analyse(job(ranks=2, slow_rank=1))["findings"]]
    assert analyse(job(ranks=4, slow_rank=1))["findings"][0]["slug"] == "straggler"


def test_rocm_gemms_launched_by_hipextmodulelaunchkernel_count_as_launches():
    """On ROCm the hipBLASLt / Tensile GEMMs (Cijk_…) go out through hipExtModuleLaunchKernel:
    the MI250 trace's 14 kernels read as 12 launches, its two GEMMs left out of every launch
    figure; and its blocking hipMemcpyWithStream calls were not counted as synchronising."""
    from pathlib import Path

    from scenarios.traceanalysis.ingest import Limits, load

    name = "mi250_minitoy.json.gz"
    real = Path(__file__).resolve().parents[2] / "data" / "real" / name
    with open(real, "rb") as f:
        a = analyse(load(name, f, Limits()))
    pr = a["per_rank"][0]
    gemms = [k for k in pr["top_kernels"] if k["name"].startswith("Cijk_")]
    assert sum(k["count"] for k in gemms) == 2
    assert pr["launch"]["kernel_launches"] == 14  # 12 hipLaunchKernel + 2 hipExtModuleLaunchKernel
    # step #1's two hipMemcpyWithStream (its hipDeviceSynchronize comes after the last step)
    assert pr["steps"][0]["sync_calls"] == 2


def test_the_exports_flows_stay_within_their_rank_whatever_the_correlation_ids():
    """Flow ids were rank × 2^24 + correlation: a long job's correlation ids pass 2^24 (the
    TorchRec trace's reach 7.2 million at step 552), and then rank 0's launch arrows landed on
    rank 1's kernels in Perfetto."""
    docs = []
    for rank in (0, 1):
        ev = []
        # each process counts its own: rank 0's (1 << 24) + 5 was rank 1's 5, offset by 1 << 24
        for i, corr in enumerate((5, (1 << 24) + 5)):
            t = 100.0 * i
            ev.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": t,
                    "dur": 5,
                    "args": {"correlation": corr},
                }
            )
            ev.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7,
                       "ts": t + 10, "dur": 50,
                       "args": {"stream": 7, "correlation": corr}})  # fmt: skip
        docs.append({"distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": ev})
    doc = orjson.loads(
        to_perfetto(assemble([parse(d, source=f"r{i}") for i, d in enumerate(docs)]))
    )
    rank_of = {}
    for e in doc["traceEvents"]:
        if e.get("name") == "process_name":
            rank_of[e["pid"]] = int(e["args"]["name"].split()[1])
    by_id: dict[int, set[int]] = {}
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f"):
            by_id.setdefault(e["id"], set()).add(rank_of[e["pid"]])
    assert len(by_id) == 4 and all(len(v) == 1 for v in by_id.values()), by_id


def test_torchrec_kernels_in_the_fbgemm_namespace_are_not_gemms():
    """ "fbgemm_gpu::permute_2D_data_kernel", the FP8 quantize / dequantize kernels and an
    embedding bounds check matched "gemm" in their namespace: the TorchRec trace's memory-bound
    kernels were counted as high-intensity GEMM time."""
    from scenarios.traceanalysis.measures import family

    for name in (
        "void fbgemm_gpu::permute_2D_data_kernel<false, int, int, decltype(nullptr)>(int, int)",
        "void fbgemm_gpu::(anonymous namespace)::_compute_FP8_quantize_cuda_kernel<float>(float)",
        "void bounds_check_indices_kernel<long, false>(fbgemm_gpu::TensorAccessor<long, 1>)",
    ):
        assert family(name) != "gemm", name
    for name in (
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x64_32x6_nt_align1>(Params)",
        "ampere_sgemm_128x64_nn",
        "void fbgemm_gpu::gemm_f8f8bf16_rowwise_kernel<float>(float)",
    ):
        assert family(name) == "gemm", name


def test_an_engine_trace_read_back_has_its_keys_step_times_and_no_other_traces():
    """How an upload is recognised as a drill's trace: its steps, read back from the Perfetto
    export, match its own key step by step, and not the key of the next seed."""
    from scenarios import engine
    from scenarios.engine.export import to_perfetto as engine_perfetto
    from scenarios.traceanalysis.ingest import Limits, load
    from scenarios.traceanalysis.measures import same_steps

    for slug in ("pipeline-bubbles", "launch-bound", "healthy"):
        t = engine.generate(slug, seed=5, hardware="h100")
        other = engine.generate(slug, seed=6, hardware="h100")
        a = analyse(load("t.json", io.BytesIO(orjson.dumps(engine_perfetto(t))), Limits()))
        assert same_steps(a, t.key.facts["step_ms_series"]), slug
        assert not same_steps(a, other.key.facts["step_ms_series"]), slug
        assert not same_steps(a, [x * 1.01 for x in t.key.facts["step_ms_series"]]), slug


def _loop(*, profiler_steps: bool, ranks: int = 1, iters: int = 4):
    """A training loop of 1000 µs iterations: the main thread waits 200 µs in the data loader
    (GPU idle), launches a 300 µs kernel and reads its result back (cudaStreamSynchronize until
    it ends), then launches the next kernel only 100 µs later, which runs 300 µs. With
    profiler_steps each iteration is a ProfilerStep."""
    docs = []
    for r in range(ranks):
        ev: list[dict] = []
        corr = 1
        for i in range(iters):
            t = i * STEP
            if profiler_steps:
                ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}",
                           "pid": 10, "tid": 10, "ts": t, "dur": STEP - 1})  # fmt: skip
            ev.append({"ph": "X", "cat": "user_annotation", "pid": 10, "tid": 10, "ts": t,
                       "dur": 200, "name": DATALOADER})  # fmt: skip
            for at, sync_to in ((200.0, 500.0), (600.0, 900.0)):
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 10, "tid": 10, "ts": t + at - 5, "dur": 4,
                           "args": {"correlation": corr}})  # fmt: skip
                ev.append({"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "pid": r,
                           "tid": 7, "ts": t + at, "dur": 300,
                           "args": {"stream": 7, "correlation": corr}})  # fmt: skip
                ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize",
                           "pid": 10, "tid": 10, "ts": t + at + 10,
                           "dur": sync_to - at - 10})  # fmt: skip
                corr += 1
        docs.append({"distributedInfo": {"rank": r, "world_size": ranks}, "traceEvents": ev})
    return assemble([parse(d, source=f"rank-{i}.json") for i, d in enumerate(docs)])


@pytest.mark.parametrize("ranks", [1, 2])
def test_findings_on_a_trace_without_steps_speak_of_the_trace_window(ranks):
    """Without ProfilerStep the trace is one window, and the findings say so: the data-loader
    and synchronising-call findings said "every step", "of the step" and "per step" of a trace
    that has none."""
    stepped = analyse(_loop(profiler_steps=True, ranks=ranks))["findings"]
    window = analyse(_loop(profiler_steps=False, ranks=ranks))["findings"]
    # the same rules fire on the same loop, steps or not
    assert (
        {f["slug"] for f in window}
        == {f["slug"] for f in stepped}
        >= {
            "input-starvation",
            "sync-stalls",
        }
    )
    by_slug = {f["slug"]: f for f in stepped}
    assert "of the step" in by_slug["input-starvation"]["measured"]
    assert "per step" in by_slug["sync-stalls"]["measured"]
    for f in window:
        text = " ".join((f["title"], f["measured"], f["threshold"]))
        assert "step" not in text.replace("ProfilerStep", ""), text
        assert "of the trace window" in f["measured"], f["measured"]
        assert "no ProfilerStep" in f["measured"]
        assert ("median of 2 ranks" in f["measured"]) == (ranks == 2)
