"""What the reveal's words claim about a trace is true of the exported events: read here from the
Perfetto JSON a learner downloads, with no engine code in between. Pure: no Django."""

from __future__ import annotations

import functools

import orjson

from scenarios import engine as E


@functools.cache
def gen(slug: str, seed: int, hw: str):
    return E.generate(slug, seed, hardware=hw)


def nccl_kernels(trace) -> list[dict]:
    doc = orjson.loads(E.perfetto_bytes(trace))
    return [e for e in doc["traceEvents"] if e.get("cat") == "kernel" and e.get("tid") == 20]


def test_a_pipeline_straggler_names_no_all_reduce():
    """A pipeline's stages wait for a slow stage in sends and receives: the key may not send the
    learner to an all-reduce the trace does not have."""
    t = gen("straggler", 1, "mi300x")
    names = {e["args"]["Collective name"] for e in nccl_kernels(t)}
    assert names == {"send", "recv"}
    for text in (t.key.signature, t.key.fix_text, *t.key.arithmetic):
        assert "all-reduce" not in text, text
        assert "start last" not in text, text
    assert "sends and receives" in t.key.fix_text


def test_a_data_parallel_straggler_still_waits_in_the_all_reduce():
    t = gen("straggler", 3, "h200")
    assert {e["args"]["Collective name"] for e in nccl_kernels(t)} == {"allreduce"}
    assert "inside the all-reduce" in t.key.fix_text
    assert "start last" in t.key.signature
