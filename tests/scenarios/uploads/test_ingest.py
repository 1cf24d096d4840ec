"""Safe ingestion: every kind of bad upload gets a clear TraceError and nothing half-read."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scenarios.traceanalysis import analyse, to_perfetto, to_timeline
from scenarios.traceanalysis.errors import TraceError
from scenarios.traceanalysis.ingest import Limits, load, read_files

SMALL = Limits(
    max_upload_bytes=1 << 20, max_unpacked_bytes=4 << 20, max_ratio=50, max_ranks=4,
    max_events=5000,
)  # fmt: skip


def rank_doc(rank: int, world: int = 2, *, gpu: bool = True) -> dict:
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
         "ts": 1000.0 * i, "dur": 900.0} for i in range(3)
    ]  # fmt: skip
    for i in range(3):
        ev.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": 1000.0 * i + 10,
                "dur": 5,
                "args": {"correlation": 10 + i},
            }
        )
        if gpu:
            ev.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": "gemm_kernel",
                    "pid": 0,
                    "tid": 7,
                    "ts": str(1000.0 * i + 20),
                    "dur": 500.5,
                    "args": {"stream": 7, "correlation": 10 + i},
                }
            )
    return {
        "distributedInfo": {"rank": rank, "world_size": world},
        "deviceProperties": [{"name": "NVIDIA H100 80GB HBM3"}],
        "traceEvents": ev,
    }


def js(d) -> bytes:
    return json.dumps(d).encode()


def zipped(members: dict[str, bytes], method=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def targz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def run(data: bytes, name="trace.json", limits=SMALL):
    return load(name, io.BytesIO(data), limits)


def test_plain_gz_zip_and_targz_all_read():
    assert [r.rank for r in run(js(rank_doc(0)))] == [0]
    assert [r.rank for r in run(gzip.compress(js(rank_doc(0))), "t.json.gz")] == [0]
    two = {"rank-0.json": js(rank_doc(0)), "rank-1.json.gz": gzip.compress(js(rank_doc(1)))}
    assert [r.rank for r in run(zipped(two), "t.zip")] == [0, 1]
    assert [r.rank for r in run(targz(two), "t.tar.gz")] == [0, 1]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"hello, not json", "not valid JSON"),
        (js(rank_doc(0))[:-40], "not valid JSON"),
        (gzip.compress(js(rank_doc(0)))[:-30], "truncated"),
        (js({"foo": 1}), 'no "traceEvents"'),
        (js(rank_doc(0, gpu=False)), "no GPU events"),
        (b"", "empty"),
    ],
    ids=["not-json", "cut-json", "truncated-gzip", "wrong-schema", "no-gpu", "empty"],
)
def test_bad_single_files(data, message):
    with pytest.raises(TraceError, match=message):
        run(data)


def test_a_gz_name_on_data_that_is_not_gzip_says_so():
    with pytest.raises(
        TraceError, match=r"t\.json\.gz: the name ends in \.gz but the file is not gzip"
    ):
        run(b"hello, not json", "t.json.gz")
    # plain JSON under a .gz name is read as it is
    assert [r.rank for r in run(js(rank_doc(0)), "t.json.gz")] == [0]


def test_gpu_events_with_unreadable_times_are_named_not_called_missing():
    doc = rank_doc(0, gpu=False)
    doc["traceEvents"].append(
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "abc", "dur": -5}
    )
    with pytest.raises(TraceError, match=r'1 event had no usable "ts" or "dur"'):
        run(js(doc))


def test_zip_bomb_rejected_before_decompressing():
    bomb = zipped({"rank-0.json": b"{" + b" " * (8 << 20) + b"}"})
    assert len(bomb) < SMALL.max_upload_bytes
    with pytest.raises(TraceError, match="unpacks to more than 4 MiB"):
        run(bomb, "bomb.zip")  # the declared size is over the cap
    roomy = Limits(max_upload_bytes=1 << 20, max_unpacked_bytes=64 << 20, max_ratio=50,
                   max_ranks=4, max_events=5000)  # fmt: skip
    with pytest.raises(TraceError, match="decompression bomb"):
        run(bomb, "bomb.zip", roomy)  # the declared ratio is over the cap


def test_gzip_bomb_stopped_while_decompressing():
    bomb = gzip.compress(b" " * (3 << 20))  # 3 MiB of spaces: under the size cap, over the ratio
    with pytest.raises(TraceError, match="bomb"):
        run(bomb, "bomb.json.gz")
    big = Limits(max_upload_bytes=1 << 20, max_unpacked_bytes=2 << 20, max_ratio=10_000,
                 max_ranks=4, max_events=5000)  # fmt: skip
    with pytest.raises(TraceError, match="more than 2 MiB"):
        run(bomb, "bomb.json.gz", big)


def test_zip_that_lies_about_sizes_is_capped_while_reading():
    data = zipped({"rank-0.json": b" " * (6 << 20)}, zipfile.ZIP_DEFLATED)
    # rewrite the declared sizes in the central directory to look tiny
    lie = data.replace((6 << 20).to_bytes(4, "little"), (100).to_bytes(4, "little"))
    with pytest.raises(TraceError):
        run(lie, "liar.zip")


@pytest.mark.parametrize("evil", ["../rank-0.json", "/etc/rank-0.json", "a/../../rank-0.json"])
def test_path_traversal_in_archives_rejected(evil):
    with pytest.raises(TraceError, match="unsafe path"):
        run(zipped({evil: js(rank_doc(0))}), "evil.zip")
    with pytest.raises(TraceError, match="unsafe path"):
        run(targz({evil: js(rank_doc(0))}), "evil.tar.gz")


def test_symlink_in_tar_rejected():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        info = tarfile.TarInfo("rank-0.json")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        t.addfile(info)
    with pytest.raises(TraceError, match="link"):
        run(buf.getvalue(), "link.tar.gz")


def test_mismatched_ranks():
    with pytest.raises(TraceError, match="both say they are rank 0"):
        run(zipped({"a.json": js(rank_doc(0)), "b.json": js(rank_doc(0))}), "dup.zip")
    with pytest.raises(TraceError, match="disagree on the world size"):
        run(zipped({"a.json": js(rank_doc(0, 2)), "b.json": js(rank_doc(1, 4))}), "w.zip")
    with pytest.raises(TraceError, match="world size is 2"):
        run(zipped({"a.json": js(rank_doc(0, 2)), "b.json": js(rank_doc(5, 2))}), "w.zip")


def test_oversize_limits():
    with pytest.raises(TraceError, match="upload limit"):
        run(b" " * ((1 << 20) + 10))
    many = {f"rank-{i}.json": js(rank_doc(i, 8)) for i in range(6)}
    with pytest.raises(TraceError, match="ranks are accepted"):
        run(zipped(many), "many.zip")
    doc = rank_doc(0)
    doc["traceEvents"] = doc["traceEvents"] * 600
    with pytest.raises(TraceError, match="events"):
        run(js(doc))


def test_archive_with_nothing_in_it():
    with pytest.raises(TraceError, match="no files"):
        run(zipped({"__MACOSX/._x": b"x", ".hidden": b"{}"}), "e.zip")


# ---- fuzz: whatever the bytes, the outcome is ranks or a TraceError, never another exception

GOOD = [js(rank_doc(0)), gzip.compress(js(rank_doc(0))),
        zipped({"rank-0.json": js(rank_doc(0)), "rank-1.json": js(rank_doc(1))}),
        targz({"rank-0.json": js(rank_doc(0))})]  # fmt: skip


@st.composite
def mangled(draw):
    base = bytearray(draw(st.sampled_from(GOOD)))
    op = draw(st.sampled_from(["truncate", "flip", "insert", "garbage", "swap"]))
    if op == "truncate" and base:
        del base[draw(st.integers(0, len(base) - 1)) :]
    elif op == "flip" and base:
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(base) - 1))
            base[i] = draw(st.integers(0, 255))
    elif op == "insert":
        i = draw(st.integers(0, len(base)))
        base[i:i] = draw(st.binary(max_size=64))
    elif op == "garbage":
        return draw(st.binary(max_size=2048))
    else:
        doc = rank_doc(0)
        ev = draw(st.sampled_from(doc["traceEvents"]))
        key = draw(st.sampled_from(["ts", "dur", "args", "ph", "cat", "name", "pid"]))
        ev[key] = draw(st.one_of(st.none(), st.text(max_size=5), st.integers(), st.floats(),
                                 st.lists(st.integers(), max_size=2)))  # fmt: skip
        return js(doc)
    return bytes(base)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mangled())
def test_fuzz_any_bytes_give_ranks_or_a_clear_error(data):
    try:
        ranks = run(data, "fuzz.bin")
    except TraceError as e:
        assert str(e).strip()
    else:
        assert ranks and all(r.n > 0 for r in ranks)
        # what reads back also converts and analyses whole (what the worker stores)
        assert to_timeline(ranks) and to_perfetto(ranks)
        assert len(analyse(ranks)["per_rank"]) == len(ranks)


def test_read_files_reports_member_names():
    files = read_files("t.zip", io.BytesIO(zipped({"dir/rank-3.json": b"{}"})), SMALL)
    assert files == [("dir/rank-3.json", b"{}")]


def test_a_json_file_saved_with_a_utf8_byte_order_mark_is_read():
    """Saved by a Windows editor or PowerShell's Out-File: the upload failed with "UTF-8 byte
    order mark (BOM) is not supported"."""
    ranks = load("t.json", io.BytesIO(b"\xef\xbb\xbf" + json.dumps(rank_doc(0)).encode()), SMALL)
    assert [r.rank for r in ranks] == [0] and ranks[0].n == 9


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_a_stray_file_beside_the_ranks_in_an_archive_is_named_with_what_to_do(kind):
    """It failed with "README.txt: not valid JSON: unexpected character, expected a JSON value:
    line 1 column 1 (char 0)"."""
    members = {"rank-0.json": js(rank_doc(0)), "notes/README.txt": b"profiled on node 7\n"}
    buf = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buf, "w") as z:
            for n, b in members.items():
                z.writestr(n, b)
    else:
        with tarfile.open(fileobj=buf, mode="w:gz") as t:
            for n, b in members.items():
                info = tarfile.TarInfo(n)
                info.size = len(b)
                t.addfile(info, io.BytesIO(b))
    with pytest.raises(TraceError) as e:
        load(f"job.{kind}", io.BytesIO(buf.getvalue()), SMALL)
    assert str(e.value) == (
        "notes/README.txt in the archive is not a trace (it is not JSON). An archive holds only "
        "the trace files, one per rank: take README.txt out and upload it again."
    )


def test_a_chrome_trace_of_another_program_is_named_as_such_not_sent_to_record_cuda():
    """A browser's Chrome trace was told to "Record the trace with ProfilerActivity.CUDA", as if
    it were a PyTorch trace without its GPU side."""
    chrome = {
        "traceEvents": [
            {"ph": "X", "cat": "toplevel", "name": "ThreadControllerImpl::RunTask", "pid": 1,
             "tid": 2, "ts": 1000 + 100 * i, "dur": 50, "args": {}} for i in range(50)
        ] + [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Renderer"}}]
    }  # fmt: skip
    with pytest.raises(TraceError, match="this is not a PyTorch profiler trace"):
        run(js(chrome))
    # a CPU-only torch.profiler trace is PyTorch's: it is told to record the GPU side
    cpu_only = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1,
                                 "tid": 1, "ts": 0, "dur": 5}]}  # fmt: skip
    with pytest.raises(TraceError, match=r"Record the trace with ProfilerActivity\.CUDA"):
        run(js(cpu_only))


@pytest.mark.parametrize(("rank", "world"), [(10**15, 10**15 + 1), (3, 10**17)])
def test_a_rank_or_world_size_no_job_has_is_a_clear_error(rank, world):
    """Rank 10^15 made process ids past 64 bits in the export ("Something went wrong while
    reading this trace"); a world size of 10^17 was printed as the job's rank count."""
    doc = rank_doc(0)
    doc["distributedInfo"] = {"rank": rank, "world_size": world}
    with pytest.raises(TraceError, match="no job has more than 1,048,576 ranks"):
        run(js(doc))


def test_a_rank_no_job_has_in_a_file_name_is_a_clear_error():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in ("rank_0.json", "rank_99999999999999999999999.json"):
            doc = rank_doc(0)
            del doc["distributedInfo"]
            z.writestr(name, js(doc))
    with pytest.raises(TraceError, match="no job has more than 1,048,576 ranks"):
        run(buf.getvalue(), "job.zip")
