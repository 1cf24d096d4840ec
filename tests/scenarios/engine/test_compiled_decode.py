"""The compiled decode family (issue 12, the family floor): a decode server under torch.compile
hosts every decode scenario and recompilation, so neither launch-bound inference nor
recompilation names its workload family. Read from the Perfetto export, as a learner would.
Pure: no Django."""

from __future__ import annotations

import collections
import functools
import re

import pytest

from scenarios import engine as E
from scenarios.engine.catalog import HOSTS, SYMPTOMS, THEORIES


@functools.cache
def gen(slug: str, seed: int, fixed: bool = False):
    return E.generate(slug, seed, fixed=fixed)


def _seeds(slug: str, n: int, family: str = "decode_compile") -> list[int]:
    got = [s for s in range(1, 200) if E._family(slug, s) == family][:n]
    assert len(got) == n, (slug, family, got)
    return got


def _events(tr) -> list[dict]:
    evs = [e for e in E.to_perfetto(tr)["traceEvents"] if e.get("ph") == "X"]
    return sorted(evs, key=lambda e: (e["ts"], -e["dur"]))


def _steps(evs: list[dict]) -> list[dict]:
    return [e for e in evs if e["name"].startswith("ProfilerStep#")]


def _inside(e: dict, w: dict) -> bool:
    return w["ts"] <= e["ts"] and e["ts"] + e["dur"] <= w["ts"] + w["dur"]


def test_compiled_decode_hosts_every_decode_scenario_and_recompilation():
    """Whatever an eager decode server can show, a compiled one can too; recompilation happens
    in compiled training and compiled decode alike, and launch-bound decode runs eager or
    compiled, each as often as a healthy job lands there relative to the other (launch-bound:
    half and half; recompilation: twice as often in training, as healthy jobs are)."""
    decode = {s for s, h in HOSTS.items() if "decode" in h}
    compiled = {s for s, h in HOSTS.items() if "decode_compile" in h}
    assert decode == {"launch-bound", "sync-stalls", "allocator-stalls", "healthy"}
    assert compiled == decode | {"recompilation"}
    expected = {
        "launch-bound": {"decode": 1 / 2, "decode_compile": 1 / 2},
        "recompilation": {"ddp_compile": 2 / 3, "decode_compile": 1 / 3},
    }
    for slug, shares in expected.items():
        got = collections.Counter(E._family(slug, s) for s in range(2000))
        assert set(got) == set(shares), (slug, got)
        assert all(abs(got[f] / 2000 - w) < 0.05 for f, w in shares.items()), (slug, got)
    # a compiled decode is drawn by every scenario it hosts, the healthy one included
    for slug in compiled:
        assert _seeds(slug, 1), slug
    assert SYMPTOMS["decode_compile"] == SYMPTOMS["decode"]
    assert set(THEORIES["decode_compile"]) > set(THEORIES["decode"])


def test_a_compiled_decode_step_runs_triton_kernels_inside_one_compiled_graph():
    """Healthy, compiled: every step enters the compiled region through Dynamo's cache lookup
    and runs one FX graph (the same key every step), whose launches are Triton kernels beside
    the library matmuls and attention; nothing compiles in the window."""
    (seed,) = _seeds("healthy", 1)
    tr = gen("healthy", seed)
    assert tr.family == "decode_compile" and tr.prompt["workload"].endswith("torch.compile")
    evs = _events(tr)
    names = {e["name"] for e in evs}
    assert not [n for n in names if n.startswith(("_compile.", "call_user_compiler"))]
    assert not [n for n in names if n.startswith("vllm::")]  # eager's custom ops are gone
    keys = {n for n in names if n.startswith("## Call CompiledFxGraph ")}
    assert len(keys) == 1 and re.fullmatch(r"## Call CompiledFxGraph f[a-z2-7]{51} ##", *keys)
    for st in _steps(evs):
        inside = [e for e in evs if _inside(e, st) and e["cat"] == "user_annotation"]
        assert [e["name"] for e in inside if e["name"].startswith("Torch-Compiled")] == [
            "Torch-Compiled Region: 0/0"
        ]
        (call,) = [e for e in inside if e["name"] in keys]
        launched = [e for e in evs if e["cat"] == "cpu_op" and _inside(e, call)]
        tri = [e for e in launched if e["name"].startswith("triton_")]
        assert len(tri) >= 5 * int(re.search(r"(\d+) layers", tr.prompt["workload"]).group(1))
    kernels = {e["name"] for e in evs if e["cat"] == "kernel"}
    assert any(k.startswith("triton_red_fused") for k in kernels)
    assert tr.key.facts["compile_steps"] == [] and tr.key.fix == "none"


def test_every_recompile_of_a_decode_server_brings_a_cache_length_bucket_of_its_own():
    """The cache grows in 128-token buckets, so two lengths in one bucket are one shape: a server
    around 512 tokens once drew 384 and 448 (one bucket) and 576 (the base's), and compiled a
    fourth region whose graph was the second's. Every compile is a new bucket and a new graph."""
    for seed in _seeds("recompilation", 14):
        tr = gen("recompilation", seed)
        evs = _events(tr)
        regions = {e["name"] for e in evs if e["name"].startswith("Torch-Compiled Region")}
        graphs = {e["name"] for e in evs if e["name"].startswith("## Call CompiledFxGraph")}
        n = len(tr.key.facts["compile_steps"])
        assert n >= 2 and len(regions) == len(graphs) == n + 1, (seed, regions, graphs)


def test_recompiling_decode_compiles_on_the_steps_with_a_new_cache_length_only():
    """A compiled decode server specialised on its KV cache's length recompiles on the steps
    that bring a length for the first time: seconds in the compiler there, milliseconds on the
    other steps; each recompile is a new compile id and a new graph. Its fixed twin (the length
    dynamic) runs the same steps with nothing compiling."""
    for seed in _seeds("recompilation", 3):
        tr = gen("recompilation", seed)
        f, k = tr.key.facts, tr.key
        cs = f["compile_steps"]
        assert 0 < len(cs) < f["n_steps"] / 2, (seed, cs)
        evs = _events(tr)
        steps = _steps(evs)
        comp = [e for e in evs if e["name"].startswith("_compile.compile_inner")]
        assert sorted({i for i, st in enumerate(steps) for c in comp if _inside(c, st)}) == cs
        assert min(c["dur"] for c in comp) > 1e6  # seconds, in µs
        assert min(steps[i]["dur"] for i in cs) > 20 * max(
            st["dur"] for i, st in enumerate(steps) if i not in cs
        )
        regions = {e["name"] for e in evs if e["name"].startswith("Torch-Compiled Region")}
        graphs = {e["name"] for e in evs if e["name"].startswith("## Call CompiledFxGraph")}
        assert len(regions) == len(graphs) == len(cs) + 1, (seed, regions, graphs)
        # the reveal speaks of one GPU and a cache length, not of ranks or sequence lengths
        assert "KV-cache length" in k.signature and "ranks" not in " ".join(k.arithmetic)
        assert "dynamic" in k.fix_text and k.expected_step_ms < 0.1 * k.step_ms
        fx = gen("recompilation", seed, fixed=True)
        fevs = _events(fx)
        assert not [e for e in fevs if e["name"].startswith("_compile")]
        assert {e["name"] for e in fevs if e["name"].startswith("Torch-Compiled")} == {
            "Torch-Compiled Region: 0/0"
        }
        assert abs(fx.key.step_ms / k.expected_step_ms - 1) < 0.05, (seed, fx.key.step_ms)


@pytest.mark.parametrize("slug", ["launch-bound", "sync-stalls", "allocator-stalls"])
def test_compiled_decode_keeps_the_decode_scenarios_and_their_fixes(slug):
    """Under torch.compile without CUDA graphs a decode loop still launches tiny kernels one by
    one, reads back and allocates as eager does: each scenario keeps its measurement and fix
    (CUDA graphs for launch-bound), and its fixed twin runs at the key's expected step."""
    for seed in _seeds(slug, 2):
        tr, fx = gen(slug, seed), gen(slug, seed, fixed=True)
        k, f = tr.key, tr.key.facts
        assert tr.family == "decode_compile" and k.scenario == slug
        assert k.fix == E.generate(slug, _seeds(slug, 1, "decode")[0]).key.fix
        if slug == "launch-bound":
            assert k.fix == "cuda_graphs"
            assert f["short_kernel_frac"] > 0.35 and f["gpu_idle_frac"] > 0.3, (seed, f)
        assert fx.key.step_ms < 0.9 * tr.key.step_ms
        assert abs(fx.key.step_ms / k.expected_step_ms - 1) < 0.06, (seed, fx.key.step_ms)
