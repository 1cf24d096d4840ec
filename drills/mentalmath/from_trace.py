""" "Practise this calculation": a mental-math problem built from one trace's answer key.

The reveal of a graded drill offers the calculation behind its diagnosis as a math drill. The
numbers come from the key the server stored for that trace (its measured ``facts``, its step time,
the workload line of its prompt) and nothing else: the request names only the attempt.

    problem = problem_from_key(key, prompt, hardware="h100", choice=0)

``choice`` picks among the framings a trace supports (the first is the one its reveal's arithmetic
does); asking again for the same trace gives the next one. Pure: stdlib and the mental-math
families only. A key without the numbers a calculation needs raises ``NoPractice``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from scenarios.engine.hardware import get_hardware

from .families import FAMILIES, build_problem
from .problem import Given, Problem

__all__ = ["NoPractice", "framings_for", "problem_from_key"]

Key = dict[str, Any]
Prompt = dict[str, Any]


class NoPractice(ValueError):
    """This trace's key has no calculation to practise (or lacks a number it needs)."""


def _sig(x: float, n: int = 3) -> float:
    """A measured number as a person reads it off the trace: ``n`` significant figures."""
    if not math.isfinite(x):
        raise NoPractice("a measured number is not finite")
    return float(f"{x:.{n}g}") if x else 0.0


def _fact(key: Key, name: str) -> float:
    facts = key.get("facts") or {}
    value = facts.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise NoPractice(f"this trace's key has no usable {name!r}")
    return float(value)


def _positive(key: Key, name: str) -> float:
    value = _fact(key, name)
    if value <= 0:
        raise NoPractice(f"this trace's key has no positive {name!r}")
    return value


def _step(key: Key) -> float:
    value = key.get("step_ms")
    if not isinstance(value, int | float) or not value > 0:
        raise NoPractice("this trace's key has no step time")
    return float(value)


_PP_RE = re.compile(r"(\d+) stages \(one per rank\)")
_CHUNKS_RE = re.compile(r"\((\d+) model chunks per stage\)")
_MFU_RE = re.compile(r"6 × ([\d.]+)e9 × (\d+) ÷")


# Each builder: (key, prompt) -> [(family, framing, given), …], the reveal's own calculation
# first. The families and framings are the trainer's; only the numbers are this trace's.
Built = list[tuple[str, str, Given]]


def _exposed(key: Key, prompt: Prompt) -> Built:
    base: Given = {
        "compute_ms": _sig(_positive(key, "compute_ms")),
        "comm_ms": _sig(_positive(key, "comm_ms")),
        "overlap_pct": float(round(max(0.0, min(100.0, _fact(key, "overlap_pct"))))),
        "n": int(_positive(key, "world")),
    }
    return [("exposed-comm", "exposed", base), ("exposed-comm", "step", base)]


def _starvation(key: Key, prompt: Prompt) -> Built:
    # the compute (or pipeline schedule) the reveal says the loading must hide under: the step
    # less its loader wait on the rank that waits longest, as fed ranks start together (the
    # reveal's expected step); the average rank's wait left 74.4 ms beside the reveal's 65.6
    expected = key.get("expected_step_ms")
    if isinstance(expected, int | float) and 0 < expected < _step(key):
        compute = _sig(float(expected))
    else:
        compute = _sig(_step(key) - _positive(key, "loader_ms_per_step"))
    if compute <= 0:
        raise NoPractice("this trace's step is all loader wait")
    data = _sig(_positive(key, "loader_fetch_ms"))
    return [
        ("dataloader-workers", "step-with-k", {"data_ms": data, "compute_ms": compute, "k": 8}),
        ("dataloader-workers", "workers", {"data_ms": data, "compute_ms": compute}),
    ]


def _launch(key: Key, prompt: Prompt) -> Built:
    given: Given = {
        "kernels": round(_positive(key, "kernels_per_step")),
        "launch_us": _sig(_positive(key, "launch_us_mean"), 2),
        "gpu_ms": _sig(_positive(key, "gpu_per_step_ms")),
        "wall_ms": _sig(_step(key)),
    }
    return [("launch-overhead", "launch-share", given), ("launch-overhead", "cpu-time", given)]


def _straggler(key: Key, prompt: Prompt) -> Built:
    facts = key.get("facts") or {}
    rc = facts.get("rank_compute_ms")
    if not isinstance(rc, list) or len(rc) < 2:
        raise NoPractice("this trace's key has no per-rank compute times")
    ordered = sorted(float(x) for x in rc)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    if median <= 0:
        raise NoPractice("this trace's per-rank compute times are empty")
    slow = round((ordered[-1] - median) / median * 100)
    if slow <= 0:
        raise NoPractice("no rank of this trace is slower than the median")
    return [("amdahl", "straggler", {"ranks": len(rc), "slow_pct": float(slow)})]


def _removal(stall: int, count: int, cost: float, step: float, **extra: Any) -> Given:
    if count < 1 or cost <= 0 or count * cost >= step:
        raise NoPractice("this trace's stalls do not fit inside its step")
    return {"stall": stall, "count": count, "cost_ms": cost, "step_ms": step, **extra}


def _removed(key: Key) -> float:
    """What the reveal's expected step takes off the step (its arithmetic's last line: step −
    loss = expected): the stall on the critical path, which on several ranks, or with gaps
    that refill slowly, is more than the average rank's sum of the stalls."""
    expected = key.get("expected_step_ms")
    if not isinstance(expected, int | float) or not 0 < expected < _step(key):
        raise NoPractice("this trace's reveal removes nothing from its step")
    return _step(key) - float(expected)


def _sync(key: Key, prompt: Prompt) -> Built:
    n = round(_positive(key, "inner_syncs_per_step"))
    per = _sig(_removed(key) / max(n, 1))
    return [("amdahl", "remove", _removal(2, n, per, _sig(_step(key))))]


def _allocator(key: Key, prompt: Prompt) -> Built:
    calls = round(_positive(key, "alloc_calls_per_step"))
    per = _sig(_removed(key) / max(calls, 1))
    return [("amdahl", "remove", _removal(3, calls, per, _sig(_step(key))))]


def _recompilation(key: Key, prompt: Prompt) -> Built:
    facts = key.get("facts") or {}
    compiles = facts.get("compile_steps")
    steps = int(_positive(key, "n_steps"))
    if not isinstance(compiles, list) or not compiles:
        raise NoPractice("this trace's key lists no recompiling steps")
    stall = _sig(_positive(key, "compile_step_ms") - _positive(key, "steady_step_ms"))
    total = _sig(_step(key) * steps)
    return [("amdahl", "remove", _removal(4, len(compiles), stall, total, steps=steps))]


def _memory_bound(key: Key, prompt: Prompt) -> Built:
    hw_tbps = _positive(key, "hbm_tbps")
    ms = _positive(key, "score_chain_ms_per_step")
    tbps = _positive(key, "score_chain_tbps")
    given: Given = {
        "hbm_tbps": hw_tbps,
        "bytes_mb": _sig(ms * tbps * 1000),  # ms × TB/s = GB; × 1000 = MB
        "measured_us": _sig(ms * 1000),
        "what": "The chain of unfused elementwise kernels over the attention scores in one step",
    }
    return [("kernel-floor", "efficiency", given), ("kernel-floor", "bytes", given)]


def _bubble(key: Key, prompt: Prompt) -> Built:
    found = _PP_RE.search(str(prompt.get("workload", "")))
    if not found:
        raise NoPractice("this trace's workload names no pipeline schedule")
    # The stage count is in the workload line; the microbatches are counted on the timeline.
    p, m = int(found.group(1)), int(_positive(key, "microbatches"))
    if p < 2 or m < 1:
        raise NoPractice("this trace's pipeline has fewer than two stages")
    chunks = _CHUNKS_RE.search(str(prompt.get("workload", "")))
    if chunks:
        # an interleaved schedule: the timeline's forward blocks are v per microbatch
        v = int(chunks.group(1))
        given: Given = {"p": p, "m": max(1, m // v), "v": v}
        return [("bubble", "interleaved", given), ("bubble", "interleave-speedup", given)]
    return [("bubble", "share", {"p": p, "m": m}), ("bubble", "relative", {"p": p, "m": m})]


def _busbw(key: Key, prompt: Prompt) -> Built:
    given: Given = {
        "collective": "all-reduce",
        "size_mb": _sig(_positive(key, "coll_bytes_each") / 1e6),
        "n": int(_positive(key, "world")),
        "dur_ms": _sig(_positive(key, "coll_ms_each")),
        "link_gbps": _positive(key, "link_gbps"),
    }
    return [("busbw", "link-fraction", given), ("busbw", "bytes-duration", given)]


def _healthy(key: Key, prompt: Prompt) -> Built:
    if _PP_RE.search(str(prompt.get("workload", ""))):
        return _bubble(key, prompt)  # a healthy pipeline's arithmetic is its bubble share
    world = int(_positive(key, "world"))
    lines = " ".join(str(x) for x in key.get("arithmetic") or [])
    found = _MFU_RE.search(lines)
    if world == 1 or not found:
        return _launch(key, prompt)  # a healthy decode loop: how little the launches cost
    params, tokens = float(found.group(1)), int(found.group(2))
    step_s = _step(key) / 1000
    given: Given = {
        "params_b": params,
        "gpus": world,
        "tokens_per_s": _sig(world * tokens / step_s),
    }
    return [("mfu", "mfu", given), ("mfu", "achieved", given)]


_BUILDERS: dict[str, Callable[[Key, Prompt], Built]] = {
    "exposed-allreduce": _exposed,
    "input-starvation": _starvation,
    "launch-bound": _launch,
    "straggler": _straggler,
    "memory-bound-kernel": _memory_bound,
    "sync-stalls": _sync,
    "pipeline-bubbles": _bubble,
    "allocator-stalls": _allocator,
    "bandwidth-bound-collective": _busbw,
    "recompilation": _recompilation,
    "healthy": _healthy,
}


def framings_for(key: Key, prompt: Prompt) -> Built:
    """Every (family, framing, given) this trace supports, its reveal's calculation first."""
    if not key.get("arithmetic"):
        raise NoPractice("this trace's reveal has no arithmetic to practise")
    builder = _BUILDERS.get(str(key.get("scenario", "")))
    if builder is None:
        raise NoPractice("this trace's scenario has no calculation to practise")
    try:
        built = builder(key, prompt)
    except (TypeError, KeyError, ValueError) as exc:
        if isinstance(exc, NoPractice):
            raise
        raise NoPractice("this trace's key lacks a number its calculation needs") from exc
    for family, framing, _ in built:
        if framing not in FAMILIES[family].framings:  # a programming error, not bad input
            raise AssertionError(f"{family} has no framing {framing}")
    return built


def problem_from_key(key: Key, prompt: Prompt, *, hardware: str, choice: int = 0) -> Problem:
    """The ``choice``-th calculation of this trace (cycling), with this trace's numbers."""
    built = framings_for(key, prompt)
    family, framing, given = built[choice % len(built)]
    hw = get_hardware(hardware)
    if family == "mfu":
        given = {**given, "peak_tflops": hw.bf16_tflops}  # the hardware's spec, not measured
    problem = build_problem(family, framing, given, hardware=hw.key)
    if not (math.isfinite(problem.answer) and problem.answer > 0):
        raise NoPractice("this trace's numbers give no answer to practise")
    return problem
