"""The mental-math trainer (drills/mentalmath): generators, worked steps, unit-aware grading.

Plain pytest, no Django. Every answer is recomputed here, independently, from the numbers the
problem states (``Problem.given``), with the formulas written out again below.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drills.mentalmath import (
    FAMILIES,
    Problem,
    build_problem,
    grade_answer,
    make_problem,
)
from drills.mentalmath.units import UnitError, lookup_unit, parse_answer
from scenarios.engine.hardware import HARDWARE
from tests.conftest import DESIGN_SLUGS

REQUIRED = {
    "allreduce-time",
    "busbw",
    "intensity",
    "kernel-floor",
    "bubble",
    "launch-overhead",
    "exposed-comm",
    "dataloader-workers",
    "mfu",
    "amdahl",
    "checkpoint-interval",
}
SEEDS = range(40)

# ---------------------------------------------------------------------------------------------
# independent oracle: the answer from the stated numbers

SIZE = {"fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4}


def coll(c: str, n: int) -> float:
    return 2 * (n - 1) / n if c == "all-reduce" else (n - 1) / n


def o_allreduce(fr: str, g: dict) -> float:
    gb = g["params_b"] * SIZE[g["dtype"]] if fr == "grads-params" else g["size_gb"]
    return gb * coll(g["collective"], g["n"]) / g["busbw_gbps"] * 1000.0


def o_busbw(fr: str, g: dict) -> float:
    if fr == "nccl-args":
        assert g["nelems"] == g["rows"] * g["cols"]
        nbytes, t = g["nelems"] * SIZE[g["dtype"]], g["dur_us"] / 1e6
    else:
        nbytes, t = g["size_mb"] * 1e6, g["dur_ms"] / 1e3
    bus = nbytes / t / 1e9 * coll(g["collective"], g["n"])
    return bus / g["link_gbps"] * 100 if fr == "link-fraction" else bus


def o_intensity(fr: str, g: dict) -> float:
    if fr == "ridge":
        return g["peak_tflops"] / g["hbm_tbps"]
    if fr == "attainable":
        return min(g["peak_tflops"], g["gflop"] / g["bytes_gb"] * g["hbm_tbps"])
    m, n, k = (g["m"], g["n"], g["k"]) if fr == "gemm" else (g["batch"], g["hidden"], g["hidden"])
    return (2 * m * n * k) / (2 * (m * k + k * n + m * n))


def o_floor(fr: str, g: dict) -> float:
    bw = g["hbm_tbps"] * 1e12
    if fr == "layernorm":
        return 2 * g["rows"] * g["cols"] * SIZE[g["dtype"]] / bw * 1e6
    if fr == "optimizer":
        return g["params_b"] * 1e9 * (g["read_b"] + g["write_b"]) / bw * 1e3
    floor_us = g["bytes_mb"] * 1e6 / bw * 1e6
    return floor_us / g["measured_us"] * 100 if fr == "efficiency" else floor_us


def o_bubble(fr: str, g: dict) -> float:
    p, m = g["p"], g["m"]
    if fr == "share":
        return (p - 1) / (m + p - 1) * 100
    if fr == "relative":
        return (p - 1) / m * 100
    if fr == "interleaved":
        return (p - 1) / (g["v"] * m) * 100
    return (1 + (p - 1) / m) / (1 + (p - 1) / (g["v"] * m))


def o_launch(fr: str, g: dict) -> float:
    cpu = g["kernels"] * g["launch_us"] / 1000
    eager = max(cpu, g["gpu_ms"])
    return {
        "cpu-time": cpu,
        "graph-speedup": eager / g["gpu_ms"],
        "gpu-util": g["gpu_ms"] / eager * 100,
        "launch-share": cpu / g.get("wall_ms", 1.0) * 100,
    }[fr]


def o_exposed(fr: str, g: dict) -> float:
    if fr == "from-bytes":
        comm = g["size_gb"] * coll("all-reduce", g["n"]) / g["busbw_gbps"] * 1000
    else:
        comm = g["comm_ms"]
    exposed = comm * (100 - g["overlap_pct"]) / 100
    if fr == "exposed":
        return exposed
    if fr in ("step", "from-bytes"):
        return g["compute_ms"] + exposed
    return (g["compute_ms"] + exposed) / (g["compute_ms"] + comm * (100 - g["overlap2_pct"]) / 100)


def o_workers(fr: str, g: dict) -> float:
    data = g["batch"] * g["sample_ms"] if fr == "per-sample" else g["data_ms"]
    if fr in ("workers", "per-sample"):
        k = 1
        while k * g["compute_ms"] < data - 1e-9:
            k += 1
        return k
    step = max(g["compute_ms"], data / g["k"])
    return step if fr == "step-with-k" else (data + g["compute_ms"]) / step


def o_mfu(fr: str, g: dict) -> float:
    if fr == "train-days":
        flop = 6 * g["params_b"] * 1e9 * g["tokens_t"] * 1e12
        return flop / (g["gpus"] * g["peak_tflops"] * 1e12 * g["mfu_pct"] / 100) / 86400
    per_gpu_tflops = 6 * g["params_b"] * 1e9 * g["tokens_per_s"] / g["gpus"] / 1e12
    return per_gpu_tflops if fr == "achieved" else per_gpu_tflops / g["peak_tflops"] * 100


def o_amdahl(fr: str, g: dict) -> float:
    if fr == "remove":
        return g["step_ms"] / (g["step_ms"] - g["count"] * g["cost_ms"])
    if fr == "straggler":
        return (1 - 1 / (1 + g["slow_pct"] / 100)) * 100
    f = g["frac_pct"] / 100
    return 1 / (1 - f) if fr == "limit" else 1 / ((1 - f) + f / g["factor"])


def o_ckpt(fr: str, g: dict) -> float:
    c_h = g["ckpt_min"] / 60
    mtbf = g["gpu_mtbf_h"] / g["gpus"] if fr == "cluster" else g["mtbf_h"]
    return math.sqrt(2 * c_h / mtbf) * 100 if fr == "waste" else math.sqrt(2 * mtbf * c_h)


ORACLE = {
    "allreduce-time": o_allreduce,
    "busbw": o_busbw,
    "intensity": o_intensity,
    "kernel-floor": o_floor,
    "bubble": o_bubble,
    "launch-overhead": o_launch,
    "exposed-comm": o_exposed,
    "dataloader-workers": o_workers,
    "mfu": o_mfu,
    "amdahl": o_amdahl,
    "checkpoint-interval": o_ckpt,
}


def all_generated() -> list[Problem]:
    out = []
    for key, fam in FAMILIES.items():
        for fr in fam.framings:
            out += [make_problem(key, s, framing=fr) for s in range(8)]
        out += [make_problem(key, s) for s in SEEDS]
    return out


GENERATED = all_generated()


def final_number(step: str, unit: str) -> float:
    hits = re.findall(r"(\d[\d,]*(?:\.\d+)?)\s*" + re.escape(unit), step)
    assert hits, f"no '<number> {unit}' in the last step {step!r}"
    return float(hits[-1].replace(",", ""))


# ---------------------------------------------------------------------------------------------
# registry


def test_registry_has_the_required_families_with_titles_and_links():
    assert set(FAMILIES) >= REQUIRED
    assert len(FAMILIES) >= 11
    for key, fam in FAMILIES.items():
        assert fam.key == key
        assert fam.title and fam.summary
        assert len(fam.framings) >= 3, key
        assert len(set(fam.framings)) == len(fam.framings)
        assert isinstance(fam.scenario_links, list)
        assert set(fam.scenario_links) <= set(DESIGN_SLUGS), key
    assert set(FAMILIES["allreduce-time"].scenario_links) == {
        "exposed-allreduce",
        "bandwidth-bound-collective",
    }
    assert "pipeline-bubbles" in FAMILIES["bubble"].scenario_links
    assert "launch-bound" in FAMILIES["launch-overhead"].scenario_links
    assert "input-starvation" in FAMILIES["dataloader-workers"].scenario_links


def test_unknown_family_or_framing_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown mental-math family"):
        make_problem("nope", 1)
    with pytest.raises(ValueError, match="framing"):
        make_problem("bubble", 1, framing="nope")
    with pytest.raises(ValueError, match="framing"):
        build_problem("bubble", "nope", {"p": 4, "m": 8})


def test_generator_is_pure():
    """The generator and grader (the package and the modules it imports) use no Django; the
    trainer's views, forms and services beside them do."""
    src = Path(__file__).resolve().parents[2] / "drills" / "mentalmath"
    for name in ("__init__.py", "families.py", "problem.py", "units.py"):
        path = src / name
        text = path.read_text()
        assert "import django" not in text and "from django" not in text, path


# ---------------------------------------------------------------------------------------------
# every generated problem against the independent oracle


def check_answer_matches_independent_recomputation(p: Problem) -> None:
    expected = ORACLE[p.family](p.framing, p.given)
    assert math.isclose(p.answer, expected, rel_tol=1e-9), (p.prompt, p.answer, expected)
    assert math.isfinite(p.answer) and p.answer > 0


def check_prompt_states_the_numbers_and_steps_end_on_the_answer(p: Problem) -> None:
    for key, value in p.given.items():
        if key == "stall" or isinstance(value, str):
            continue
        forms = {f"{value}", f"{value:,}", f"{value:g}"}
        if float(value) == int(value):
            forms |= {f"{int(value)}", f"{int(value):,}"}
        assert any(f in p.prompt for f in forms), (key, value, p.prompt)
    assert p.unit in p.prompt
    assert p.steps and all(isinstance(s, str) and s for s in p.steps)
    last = final_number(p.steps[-1], p.unit)
    assert math.isclose(last, p.answer, rel_tol=0.01), (p.steps[-1], p.answer)
    # The worked number itself is graded correct.
    assert p.steps[-1].rstrip().endswith(p.unit), p.steps[-1]
    assert grade_answer(p, f"{last} {p.unit}").correct or p.tolerance == 0


def check_numbers_come_from_the_hardware_profile(p: Problem) -> None:
    hw = HARDWARE[p.hardware]
    g = p.given
    if "peak_tflops" in g:
        assert g["peak_tflops"] == hw.bf16_tflops
    if "hbm_tbps" in g:
        assert g["hbm_tbps"] == hw.hbm_tbps
    if "busbw_gbps" in g:
        assert 10 <= g["busbw_gbps"] <= hw.scaleup_gbps
    if "link_gbps" in g:
        assert g["link_gbps"] == hw.scaleup_gbps
    assert hw.name in p.prompt


def check_round_trip_through_json(p: Problem) -> None:
    data = json.loads(json.dumps(p.to_dict()))
    q = Problem.from_dict(data)
    assert q == p
    assert grade_answer(q, str(p.answer)).correct


@pytest.mark.parametrize("key", sorted(FAMILIES))
def test_every_generated_problem_of_the_family_checks_out(key):
    """Each framing x 8 seeds and 40 free seeds: the answer against the oracle, the prompt and
    worked steps, the hardware numbers, the JSON round trip (the failing problem is named)."""
    problems = [p for p in GENERATED if p.family == key]
    assert problems
    for p in problems:
        try:
            check_answer_matches_independent_recomputation(p)
            check_prompt_states_the_numbers_and_steps_end_on_the_answer(p)
            check_numbers_come_from_the_hardware_profile(p)
            check_round_trip_through_json(p)
        except AssertionError as exc:
            raise AssertionError(f"{p.family}/{p.framing}/seed {p.seed}: {exc}") from exc


def test_tolerances_are_the_documented_ones():
    by_unit: dict[str, set[float]] = {}
    for p in GENERATED:
        by_unit.setdefault(p.unit, set()).add(p.tolerance)
        assert p.tolerance in {0.0, 0.05, 0.15, 0.25}
        if p.tolerance == 0.25:
            assert "25 %" in p.prompt
    assert by_unit["workers"] == {0.0}
    assert by_unit["×"] == {0.05}
    assert 0.15 in by_unit["ms"]
    assert {p.unit for p in GENERATED} >= {"ms", "µs", "GB/s", "%", "FLOP/B", "TFLOP/s", "h"}


# ---------------------------------------------------------------------------------------------
# hand-worked cases (domain-facts examples) through the internal constructor


def test_allreduce_7b_bf16_on_8_h100():
    p = build_problem(
        "allreduce-time",
        "grads-bytes",
        {"collective": "all-reduce", "n": 8, "busbw_gbps": 360.0, "size_gb": 14},
        hardware="h100",
    )
    # 14 GB x 1.75 = 24.5 GB; / 360 GB/s = 68.06 ms
    assert p.answer == pytest.approx(68.0556, rel=1e-4)
    assert p.unit == "ms" and p.tolerance == 0.15
    assert "14 GB × 1.75 = 24.5 GB" in p.steps[-2]
    assert p.steps[-1].endswith("≈ 68.1 ms")
    p2 = build_problem(
        "allreduce-time",
        "grads-params",
        {"collective": "all-reduce", "n": 8, "busbw_gbps": 360.0, "params_b": 7, "dtype": "bf16"},
    )
    assert p2.answer == pytest.approx(p.answer)
    ag = build_problem(
        "allreduce-time",
        "fsdp-allgather",
        {"collective": "all-gather", "n": 4, "busbw_gbps": 240.0, "size_gb": 16},
        hardware="a100",
    )
    assert ag.answer == pytest.approx(16 * 0.75 / 240 * 1000)  # 50 ms


def test_busbw_tp_allreduce_example():
    # [8192, 6144] bf16 = 100.66 MB; 4 ranks: 2*3/4 = 1.5; 992 us -> algbw 101.5, busbw 152 GB/s
    g = {
        "collective": "all-reduce",
        "rows": 8192,
        "cols": 6144,
        "nelems": 8192 * 6144,
        "dtype": "bf16",
        "n": 4,
        "dur_us": 992.0,
    }
    p = build_problem("busbw", "nccl-args", g)
    assert p.answer == pytest.approx(100_663_296 / 992e-6 / 1e9 * 1.5)
    assert p.answer == pytest.approx(152.2, rel=1e-3)
    assert "50,331,648" in p.prompt
    frac = build_problem(
        "busbw",
        "link-fraction",
        {"collective": "all-reduce", "size_mb": 1024, "n": 8, "dur_ms": 5.0, "link_gbps": 450.0},
    )
    assert frac.unit == "%"
    assert frac.answer == pytest.approx(1.024e9 / 5e-3 / 1e9 * 1.75 / 450 * 100)  # 79.6 %


def test_intensity_cases():
    h100 = {"peak_tflops": 989.4, "hbm_tbps": 3.35}
    ridge = build_problem("intensity", "ridge", h100, hardware="h100")
    assert ridge.answer == pytest.approx(295.3, rel=1e-3) and ridge.unit == "FLOP/B"
    gemm = build_problem("intensity", "gemm", {**h100, "m": 4096, "n": 4096, "k": 4096})
    assert gemm.answer == pytest.approx(4096 / 3)
    assert "compute-bound" in gemm.steps[-1]
    gemv = build_problem("intensity", "decode", {**h100, "batch": 1, "hidden": 8192})
    assert gemv.answer == pytest.approx(8192 / (2 + 8192))  # ~1 FLOP/B
    assert "memory-bound" in gemv.steps[-1]
    att = build_problem("intensity", "attainable", {**h100, "gflop": 1, "bytes_gb": 0.5})
    assert att.answer == pytest.approx(2 * 3.35) and att.unit == "TFLOP/s"


def test_kernel_floor_cases():
    ln = build_problem(
        "kernel-floor",
        "layernorm",
        {"hbm_tbps": 3.35, "rows": 8192, "cols": 8192, "dtype": "bf16"},
    )
    assert ln.unit == "µs"
    assert ln.answer == pytest.approx(268_435_456 / 3.35e12 * 1e6)  # 80.1 us
    eff = build_problem(
        "kernel-floor", "efficiency", {"hbm_tbps": 3.35, "bytes_mb": 268, "measured_us": 160}
    )
    assert eff.answer == pytest.approx(268e6 / 3.35e12 * 1e6 / 160 * 100)  # 50 %
    opt = build_problem(
        "kernel-floor",
        "optimizer",
        {"hbm_tbps": 2.039, "params_b": 1.0, "read_b": 16, "write_b": 12},
        hardware="a100",
    )
    assert opt.unit == "ms" and opt.answer == pytest.approx(28e9 / 2.039e12 * 1e3)


@pytest.mark.parametrize(
    ("framing", "given", "expected", "unit"),
    [
        ("share", {"p": 4, "m": 4}, 300 / 7, "%"),
        ("share", {"p": 8, "m": 32}, 700 / 39, "%"),
        ("share", {"p": 8, "m": 64}, 700 / 71, "%"),
        ("relative", {"p": 8, "m": 8}, 87.5, "%"),
        ("interleaved", {"p": 8, "m": 8, "v": 2}, 43.75, "%"),
        ("interleave-speedup", {"p": 8, "m": 8, "v": 2}, 1.875 / 1.4375, "×"),
    ],
)
def test_bubble_cases(framing, given, expected, unit):
    p = build_problem("bubble", framing, given)
    assert p.answer == pytest.approx(expected)
    assert p.unit == unit


def test_launch_overhead_cases():
    g = {"kernels": 600, "launch_us": 8.0, "gpu_ms": 1.5}
    assert build_problem("launch-overhead", "cpu-time", g).answer == pytest.approx(4.8)
    assert build_problem("launch-overhead", "graph-speedup", g).answer == pytest.approx(3.2)
    assert build_problem("launch-overhead", "gpu-util", g).answer == pytest.approx(31.25)
    share = build_problem("launch-overhead", "launch-share", {**g, "wall_ms": 6.0})
    assert share.answer == pytest.approx(80.0)
    # GPU-bound: graphs buy nothing, and 1.0x is the answer.
    gpu_bound = build_problem(
        "launch-overhead", "graph-speedup", {"kernels": 200, "launch_us": 7.0, "gpu_ms": 5.0}
    )
    assert gpu_bound.answer == pytest.approx(1.0)
    assert "GPU-bound" in gpu_bound.steps[1]


def test_exposed_comm_cases():
    base = {"compute_ms": 400.0, "comm_ms": 68.0, "overlap_pct": 0.0}
    assert build_problem("exposed-comm", "exposed", base).answer == pytest.approx(68.0)
    assert build_problem("exposed-comm", "step", base).answer == pytest.approx(468.0)
    sp = build_problem("exposed-comm", "overlap-speedup", {**base, "overlap2_pct": 90.0})
    assert sp.answer == pytest.approx(468 / 406.8)  # ~1.15x
    fb = build_problem(
        "exposed-comm",
        "from-bytes",
        {"compute_ms": 400.0, "overlap_pct": 50.0, "size_gb": 14, "n": 8, "busbw_gbps": 350.0},
    )
    assert fb.answer == pytest.approx(400 + 14 * 1.75 / 350 * 1000 * 0.5)  # 435 ms
    assert fb.tolerance == 0.05


def test_dataloader_cases():
    g = {"data_ms": 120.0, "compute_ms": 80.0}
    w = build_problem("dataloader-workers", "workers", g)
    assert w.answer == 2 and w.unit == "workers" and w.tolerance == 0
    exact = build_problem("dataloader-workers", "workers", {"data_ms": 160.0, "compute_ms": 80.0})
    assert exact.answer == 2  # exactly 2x: two workers suffice, no rounding up past it
    k4 = {**g, "k": 4}
    assert build_problem("dataloader-workers", "step-with-k", k4).answer == pytest.approx(80.0)
    assert build_problem("dataloader-workers", "serial-speedup", k4).answer == pytest.approx(2.5)
    ps = build_problem(
        "dataloader-workers", "per-sample", {"batch": 64, "sample_ms": 4, "compute_ms": 100.0}
    )
    assert ps.answer == 3  # 256 ms / 100 ms -> 2.56 -> 3


def test_mfu_cases():
    g = {"params_b": 7, "gpus": 8, "peak_tflops": 989.4, "tokens_per_s": 100_000}
    # 6 x 7e9 x 1e5 = 4.2e15 FLOP/s / 8 = 525 TFLOP/s per GPU = 53.1 % of 989.4
    assert build_problem("mfu", "achieved", g).answer == pytest.approx(525.0)
    assert build_problem("mfu", "mfu", g).answer == pytest.approx(525 / 989.4 * 100)
    days = build_problem(
        "mfu",
        "train-days",
        {"params_b": 70, "gpus": 1024, "peak_tflops": 989.4, "tokens_t": 15, "mfu_pct": 40},
    )
    assert days.answer == pytest.approx(6.3e24 / (1024 * 989.4e12 * 0.4) / 86400)
    assert days.tolerance == 0.25 and days.unit == "days"


def test_amdahl_cases():
    rm = {"stall": 0, "count": 4, "cost_ms": 2.0, "step_ms": 100.0}
    assert build_problem("amdahl", "remove", rm).answer == pytest.approx(100 / 92)
    st_ = build_problem("amdahl", "straggler", {"ranks": 64, "slow_pct": 15.0})
    assert st_.answer == pytest.approx((1 - 1 / 1.15) * 100)  # 13 %
    assert build_problem("amdahl", "limit", {"frac_pct": 30.0}).answer == pytest.approx(1 / 0.7)
    acc = build_problem("amdahl", "accelerate", {"frac_pct": 40.0, "factor": 4.0})
    assert acc.answer == pytest.approx(1 / 0.7)


def test_checkpoint_cases():
    p = build_problem("checkpoint-interval", "interval", {"ckpt_min": 5, "mtbf_h": 3})
    assert p.answer == pytest.approx(math.sqrt(0.5)) and p.unit == "h"
    fleet = build_problem(
        "checkpoint-interval", "cluster", {"ckpt_min": 5, "gpu_mtbf_h": 50_000, "gpus": 16384}
    )
    assert fleet.answer == pytest.approx(math.sqrt(2 * 50_000 / 16384 * 5 / 60))
    assert fleet.tolerance == 0.25
    waste = build_problem("checkpoint-interval", "waste", {"ckpt_min": 6, "mtbf_h": 5})
    assert waste.answer == pytest.approx(math.sqrt(2 * 0.1 / 5) * 100)  # 20 %


# ---------------------------------------------------------------------------------------------
# determinism, variety, storage


@pytest.mark.parametrize("key", sorted(FAMILIES))
def test_deterministic_per_seed(key):
    for seed in (0, 1, 12345, 2**40):
        assert make_problem(key, seed).to_dict() == make_problem(key, seed).to_dict()


@pytest.mark.parametrize("key", sorted(FAMILIES))
def test_variety_across_seeds(key):
    problems = [make_problem(key, s) for s in range(60)]
    assert len({p.prompt for p in problems}) >= 30
    assert len({round(p.answer, 6) for p in problems}) >= 15
    assert {p.framing for p in problems} == set(FAMILIES[key].framings)
    assert len({p.hardware for p in problems}) >= 3


def test_hardware_and_framing_can_be_pinned():
    p = make_problem("intensity", 5, hardware="a100", framing="ridge")
    assert p.hardware == "a100" and p.framing == "ridge"
    assert p.answer == pytest.approx(312.0 / 2.039)


# ---------------------------------------------------------------------------------------------
# grading: units


def ms_problem() -> Problem:
    return build_problem(
        "allreduce-time",
        "grads-bytes",
        {"collective": "all-reduce", "n": 8, "busbw_gbps": 360.0, "size_gb": 14},
    )


@pytest.mark.parametrize(
    "text",
    [
        "68",
        "68 ms",
        "68ms",
        "0.068 s",
        "0.068s",
        "6.8e1ms",
        "6.8e1 ms",
        "68,000 µs",
        "68000us",
        "68,000 μs",  # Greek mu
        "68000000 ns",
        "68 msec",
        "68 milliseconds",
        "~68 ms",
        "≈ 68ms",
        "about 68 ms",
        "  68.06  ",
        "+68",
    ],
)
def test_time_answers_in_any_time_unit(text):
    g = grade_answer(ms_problem(), text)
    assert g.parsed and g.correct, (text, g.message)
    assert g.value == pytest.approx(68.0, rel=0.01)
    assert g.unit == "ms"


def test_microseconds_are_not_milliseconds():
    g = grade_answer(ms_problem(), "68 µs")
    assert g.parsed and not g.correct
    assert g.value == pytest.approx(0.068)
    assert "1,000×" in g.message


def bw_problem() -> Problem:  # 152.2 GB/s
    return build_problem(
        "busbw",
        "nccl-args",
        {
            "collective": "all-reduce",
            "rows": 8192,
            "cols": 6144,
            "nelems": 8192 * 6144,
            "dtype": "bf16",
            "n": 4,
            "dur_us": 992.0,
        },
    )


@pytest.mark.parametrize(
    ("text", "gbps"),
    [
        ("152 GB/s", 152.0),
        ("152GB/s", 152.0),
        ("152 GBps", 152.0),
        ("0.152 TB/s", 152.0),
        ("152,000 MB/s", 152.0),
        ("141.75 GiB/s", 141.75 * 2**30 / 1e9),
        ("1218 Gb/s", 1218 / 8),
        ("1218 Gbps", 1218 / 8),
        ("1.218 Tb/s", 1218 / 8),
        ("152 gb/s", 19.0),  # lower-case b is a bit
    ],
)
def test_bandwidth_units_bytes_bits_and_binary(text, gbps):
    g = grade_answer(bw_problem(), text)
    assert g.parsed, g.message
    assert g.value == pytest.approx(gbps, rel=1e-9)


def test_bits_vs_bytes_gets_a_hint():
    g = grade_answer(bw_problem(), "152 Gb/s")
    assert g.parsed and not g.correct
    assert "bit" in g.message


def test_gib_vs_gb_is_a_real_difference():
    assert lookup_unit("GiB") == ("bytes", 2**30)
    assert lookup_unit("GB") == ("bytes", 1e9)
    assert lookup_unit("MiB") == ("bytes", 2**20)
    assert lookup_unit("MB") == ("bytes", 1e6)
    assert lookup_unit("Gb") == ("bytes", 1e9 / 8)
    assert lookup_unit("GiB/s") == ("bandwidth", 2**30)
    # A 25 MiB DDP bucket is 26.2 MB.
    assert 25 * lookup_unit("MiB")[1] / lookup_unit("MB")[1] == pytest.approx(26.214, rel=1e-4)


def test_flop_rate_units():
    p = build_problem(
        "mfu", "achieved", {"params_b": 7, "gpus": 8, "peak_tflops": 989.4, "tokens_per_s": 1e5}
    )
    for text in (
        "525",
        "525 TFLOP/s",
        "525 TFLOPS",
        "525 tflops",
        "0.525 PFLOP/s",
        "525e12 FLOP/s",
    ):
        g = grade_answer(p, text)
        assert g.correct and g.value == pytest.approx(525.0), text
    g = grade_answer(p, "525 TFLOP")  # an amount, not a rate
    assert not g.parsed and "FLOP" in g.message


def pct_problem() -> Problem:  # 12.5 %
    return build_problem("bubble", "interleaved", {"p": 5, "m": 8, "v": 4})


@pytest.mark.parametrize("text", ["12.5", "12.5 %", "12.5%", "12.5 percent", "13", "0.125e2"])
def test_percent_answers(text):
    g = grade_answer(pct_problem(), text)
    assert g.parsed and g.correct, (text, g.message)


def test_bare_fraction_for_a_percent_is_read_as_percent_and_hinted():
    g = grade_answer(pct_problem(), "0.125")
    assert g.parsed and not g.correct
    assert g.value == pytest.approx(0.125)
    assert "fraction" in g.message


@pytest.mark.parametrize("text", ["0.71 h", "0.71", "42.4 min", "42 minutes", "2546 s", "0.0295 d"])
def test_interval_units(text):
    p = build_problem("checkpoint-interval", "interval", {"ckpt_min": 5, "mtbf_h": 3})
    g = grade_answer(p, text)
    assert g.parsed and g.correct, (text, g.message)


@pytest.mark.parametrize("text", ["1.3", "1.3x", "1.3 x", "1.3×", "1.3 times", "1.3X"])
def test_speedup_answers(text):
    p = build_problem("bubble", "interleave-speedup", {"p": 8, "m": 8, "v": 2})
    assert grade_answer(p, text).correct


def test_workers_are_exact():
    p = build_problem("dataloader-workers", "workers", {"data_ms": 120.0, "compute_ms": 80.0})
    for ok in ("2", "2 workers", "2.0", "2 worker"):
        assert grade_answer(p, ok).correct, ok
    for wrong in ("3", "1", "1.5", "2.01"):
        g = grade_answer(p, wrong)
        assert g.parsed and not g.correct, wrong


# ---------------------------------------------------------------------------------------------
# grading: tolerance edges (inclusive)


def fixed(answer: float, tolerance: float, unit: str = "ms") -> Problem:
    return Problem("amdahl", "remove", "h100", None, "", answer, unit, tolerance, ["x"], {})


@pytest.mark.parametrize(
    ("text", "correct"),
    [
        ("100", True),
        ("115", True),  # exactly +15 %: inside (inclusive)
        ("85", True),  # exactly -15 %: inside
        ("114.99", True),
        ("85.01", True),
        ("115.01", False),
        ("84.99", False),
        ("0.115 s", True),
        ("115.1 ms", False),
    ],
)
def test_tolerance_edges_are_inclusive(text, correct):
    g = grade_answer(fixed(100.0, 0.15), text)
    assert g.parsed
    assert g.correct is correct, (text, g.error)


def test_error_is_relative_and_in_the_canonical_unit():
    g = grade_answer(fixed(100.0, 0.15), "0.115 s")
    assert g.value == pytest.approx(115.0)
    assert g.error == pytest.approx(0.15)
    assert grade_answer(fixed(100.0, 0.0), "100").correct
    assert not grade_answer(fixed(100.0, 0.0), "100.001").correct


@pytest.mark.parametrize("p", GENERATED[::3], ids=lambda p: f"{p.family}-{p.framing}-{p.seed}")
def test_generated_tolerance_edges(p: Problem):
    if p.tolerance == 0:
        assert grade_answer(p, repr(p.answer)).correct
        assert not grade_answer(p, repr(p.answer + 1)).correct
        return
    inside_hi = p.answer * (1 + p.tolerance * 0.999)
    inside_lo = p.answer * (1 - p.tolerance * 0.999)
    outside_hi = p.answer * (1 + p.tolerance * 1.001)
    outside_lo = p.answer * (1 - p.tolerance * 1.001)
    assert grade_answer(p, repr(inside_hi)).correct
    assert grade_answer(p, repr(inside_lo)).correct
    assert not grade_answer(p, repr(outside_hi)).correct
    assert not grade_answer(p, repr(outside_lo)).correct


# ---------------------------------------------------------------------------------------------
# grading: bad input is not a wrong answer


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "couldn't read a number"),
        ("   ", "couldn't read a number"),
        ("ms", "couldn't read a number"),
        ("sixty-eight", "couldn't read a number"),
        ("about", "couldn't read a number"),
        ("68,5 ms", "decimals"),
        ("68 furlongs", "recognise"),
        ("68 GB/s", "that's a bandwidth unit, the answer is a time"),
        ("68 %", "percentage"),
        ("68 GB", "size"),
        ("68 FLOP/B", "intensity"),
        ("68x", "speedup"),
        ("-68 ms", "a time can't be negative"),
        ("-1", "can't be negative"),
    ],
)
def test_bad_input_is_not_graded(text, fragment):
    g = grade_answer(ms_problem(), text)
    assert g.parsed is False
    assert g.correct is False and g.value is None and g.error is None
    assert fragment.lower() in g.message.lower(), g.message


def test_graded_to_dict():
    g = grade_answer(ms_problem(), "70 ms")
    d = g.to_dict()
    assert d["parsed"] and d["correct"] and d["unit"] == "ms"
    assert json.loads(json.dumps(d)) == d


def test_parse_answer_raises_unit_error():
    with pytest.raises(UnitError):
        parse_answer("68 GB/s", "ms")
    assert parse_answer("68,000 µs", "ms").value == pytest.approx(68.0)
    assert parse_answer("+1.5x", "x").value == pytest.approx(1.5)
    assert parse_answer("0 %", "%").value == 0.0
    with pytest.raises(UnitError, match="a speedup can't be negative"):
        parse_answer("-1 ×", "x")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_grading_never_crashes(text):
    g = grade_answer(ms_problem(), text)
    assert isinstance(g.message, str) and g.message
    assert g.parsed or (g.value is None and not g.correct)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(FAMILIES)), st.integers(min_value=0, max_value=10**9))
def test_any_seed_grades_its_own_answer_correct(key, seed):
    p = make_problem(key, seed)
    check_answer_matches_independent_recomputation(p)
    check_prompt_states_the_numbers_and_steps_end_on_the_answer(p)
    assert grade_answer(p, f"{p.answer!r} {p.unit}").correct


def test_drawn_numbers_stay_realistic():
    for seed in range(150):
        mfu = make_problem("mfu", seed)
        hw = HARDWARE[mfu.hardware]
        assert mfu.given["gpus"] * hw.hbm_gb >= 20 * mfu.given["params_b"]
        if mfu.framing == "train-days":
            assert 2 <= mfu.answer <= 200
        else:
            assert (
                15
                <= mfu.given["tokens_per_s"]
                * 6
                * mfu.given["params_b"]
                * 1e9
                / (mfu.given["gpus"] * hw.bf16_tflops * 1e12)
                * 100
                <= 60
            )
        w = make_problem("dataloader-workers", seed)
        if w.unit == "workers":
            assert 1 <= w.answer <= 16
        b = make_problem("bubble", seed)
        if b.framing in ("interleaved", "interleave-speedup"):
            assert b.given["m"] >= b.given["p"]
        bw = make_problem("busbw", seed)
        if bw.unit == "GB/s":
            assert bw.answer <= HARDWARE[bw.hardware].scaleup_gbps
        for key in FAMILIES:
            p = make_problem(key, seed)
            if p.unit == "×":
                assert p.answer == pytest.approx(1.0) or p.answer >= 1.08


@pytest.mark.parametrize("key", sorted(FAMILIES))
def test_every_framing_draws_a_finite_positive_answer_for_hundreds_of_seeds(key):
    """A learner presses "next problem" many times: no seed may divide by zero or ask for a
    nonsense answer (a stall that outlasts its step, a negative remainder)."""
    for framing in FAMILIES[key].framings:
        for seed in range(300):
            p = make_problem(key, seed, framing=framing)
            assert math.isfinite(p.answer) and p.answer > 0, (key, framing, seed, p.answer)


def test_removed_stalls_are_a_slice_of_the_step_not_all_of_it():
    for seed in range(500):
        p = make_problem("amdahl", seed, framing="remove")
        removed = p.given["count"] * p.given["cost_ms"]
        assert removed <= 0.4 * p.given["step_ms"], p.given
        assert 1 < p.answer <= 1 / 0.6 + 1e-9


def test_a_percentage_answer_says_how_many_points_it_is_off():
    """A wrong percentage reads as points apart plus the relative error the tolerance is on,
    not as "1 % is 98 % from 50 %"."""
    p = Problem("mfu", "x", "a100", None, "What share?", 50.0, "%", 0.1)
    g = grade_answer(p, "1 %")
    assert not g.correct
    assert "1 % is 49 points from 50 %, a 98 % relative error" in g.message
    assert "80 ms is 18 % from 68.1 ms (" in grade_answer(ms_problem(), "80 ms").message


def test_the_number_before_round_up_is_not_printed_as_the_whole_number_it_rounds_up_from():
    """2,048 ms of loading per batch against a 170 ms step is 12.05 workers' worth: the steps
    printed "= 12 → round up → 13 workers", which reads as an arithmetic slip."""
    from drills.mentalmath.families import build_problem

    p = build_problem(
        "dataloader-workers", "per-sample", {"batch": 256, "sample_ms": 8, "compute_ms": 170.0}
    )
    assert p.answer == 13
    assert p.steps[-1] == "2,048 ÷ 170 = 12.05 → round up → 13 workers"
    exact = build_problem("dataloader-workers", "workers", {"data_ms": 500, "compute_ms": 250.0})
    assert exact.steps[-1] == "500 ÷ 250 = 2 → round up → 2 workers"


def test_a_run_of_steps_is_not_called_a_step_in_the_worked_answer():
    """A trace's recompiles are asked about over its whole run (3,460 ms for 5 steps): the
    steps said "new step = 3,460 − 3,200 = 260 ms", a run's total under a mean step's name."""
    from drills.mentalmath.families import build_problem

    given = {"stall": 4, "count": 2, "cost_ms": 1600.0, "step_ms": 3460.0, "steps": 5}
    p = build_problem("amdahl", "remove", given, hardware="h100")
    assert p.answer == pytest.approx(3460 / 260)
    assert p.steps[1] == "new run = 3,460 − 3,200 = 260 ms"
    assert p.steps[2] == "3,460 ÷ 260 ≈ 13.3 × (the mean step: 692 → 52 ms)"
    assert not any(s.startswith("new step") for s in p.steps)
