"""The drill families: generators of realistic numbers, and the worked solution for each framing.

Each family has several framings (wordings that ask for a different quantity of the same
arithmetic). A problem is built in two halves:

* ``_sample_<family>(rng, hw, framing) -> given``: draws the stated numbers from the hardware
  profile, already rounded to what the prompt prints;
* ``_solve_<family>(framing, given, hw) -> _Solution``: the prompt text, the exact answer computed
  from ``given`` (not from rounded intermediates), and the worked steps.

``build_problem(family, framing, given, hardware=...)`` is the internal constructor tests use to
check hand-worked cases with fixed numbers; ``make_problem(family, seed)`` draws the numbers.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from scenarios.engine.hardware import HARDWARE, Hardware, get_hardware

from .problem import DEFAULT_TOLERANCE, Given, Problem, fmt, show, tolerance_text

__all__ = ["FAMILIES", "GENERATOR_VERSION", "Family", "build_problem", "make_problem"]

GENERATOR_VERSION = "1"  # bump when make_problem's output for a (family, seed) changes

# Tolerances (relative, inclusive). Stated in every prompt.
TOL_DEFAULT = DEFAULT_TOLERANCE  # 15 %: a head-rounded answer
TOL_TIGHT = 0.05  # speedups and step times after a change: the change itself is often ~10-30 %
TOL_ROUGH = 0.25  # order-of-magnitude estimates (training days, fleet-level checkpointing)
TOL_EXACT = 0.0  # whole-number answers (workers)

_MAX_DRAWS = 50  # rejection-sampling bound when a draw must be realistic


@dataclass(frozen=True, slots=True)
class Family:
    key: str
    title: str
    summary: str
    scenario_links: list[str] = field(default_factory=list)
    framings: tuple[str, ...] = ()


@dataclass(slots=True)
class _Solution:
    prompt: str
    answer: float
    unit: str
    steps: list[str]
    tolerance: float = TOL_DEFAULT


Sampler = Callable[[random.Random, Hardware, str], Given]
Solver = Callable[[str, Given, Hardware], _Solution]

_DTYPE_BYTES: dict[str, int] = {"fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4}


# ---------------------------------------------------------------------------------------------
# helpers


def _nice(x: float, sig: int = 2) -> float:
    """Round to ``sig`` significant figures (the numbers a prompt states)."""
    return float(f"{x:.{sig}g}")


def _num(g: Given, key: str) -> float:
    return float(g[key])


def _int(g: Given, key: str) -> int:
    return int(g[key])


def _str(g: Given, key: str) -> str:
    return str(g[key])


_SI = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]


def _si(x: float, unit: str) -> str:
    """``x`` base units written with an SI prefix: _si(1.37e11, "FLOP") -> "137 GFLOP"."""
    for scale, prefix in _SI:
        if abs(x) >= scale * 0.9995:
            return f"{fmt(x / scale)} {prefix}{unit}"
    return f"{fmt(x)} {unit}"


def _busbw(hw: Hardware, rng: random.Random, *, multinode: bool = False) -> float:
    """A measured-looking ring bus bandwidth for this hardware, rounded to 10 GB/s."""
    base = hw.achievable_busbw_gbps * (0.5 if multinode else 1.0)
    f = rng.choice([1.0, 1.0, 0.9, 0.8])
    return max(10.0, round(base * f / 10.0) * 10.0)


def _factor(collective: str, n: int) -> tuple[float, str]:
    if collective == "all-reduce":
        return 2 * (n - 1) / n, f"2(n−1)/n = 2×{n - 1}/{n} = {fmt(2 * (n - 1) / n, 4)}"
    return (n - 1) / n, f"(n−1)/n = {n - 1}/{n} = {fmt((n - 1) / n, 4)}"


def _api(hw: Hardware, call: str) -> str:
    """The runtime call as this hardware's traces name it: cudaLaunchKernel or hipLaunchKernel."""
    return ("hip" if hw.vendor == "amd" else "cuda") + call


def _ccl(hw: Hardware) -> str:
    """The collective library this hardware runs: NCCL on NVIDIA, RCCL on AMD."""
    return "RCCL" if hw.vendor == "amd" else "NCCL"


def _sci(x: float) -> str:
    """Powers-of-ten notation for the huge numbers: 6.3e24."""
    exp = math.floor(math.log10(abs(x)))
    mant = float(f"{x / 10**exp:.2g}")
    if mant >= 10:
        mant, exp = mant / 10, exp + 1
    return f"{fmt(mant, 2)}e{exp}"


def _ms(seconds: float) -> str:
    return f"{fmt(seconds * 1e3)} ms"


# ---------------------------------------------------------------------------------------------
# 1. allreduce-time: t = S · factor / busbw


def _sample_allreduce(rng: random.Random, hw: Hardware, framing: str) -> Given:
    multinode = rng.random() < 0.25
    n = rng.choice([16, 32, 64]) if multinode else rng.choice([4, 8, 8, 8])
    g: Given = {"n": n, "busbw_gbps": _busbw(hw, rng, multinode=multinode)}
    if framing == "grads-bytes":
        g |= {"collective": "all-reduce", "size_gb": rng.choice([0.7, 2.6, 5.4, 14, 16, 26])}
    elif framing == "grads-params":
        g |= {
            "collective": "all-reduce",
            "params_b": rng.choice([1.3, 2.7, 7, 8, 13]),
            "dtype": rng.choice(["bf16", "bf16", "fp32"]),
        }
    elif framing == "fsdp-allgather":
        g |= {"collective": "all-gather", "size_gb": rng.choice([2.6, 14, 16, 26, 68])}
    else:  # zero-reduce-scatter
        g |= {"collective": "reduce-scatter", "size_gb": rng.choice([2.6, 14, 16, 26, 68])}
    return g


def _solve_allreduce(framing: str, g: Given, hw: Hardware) -> _Solution:
    n, bw, coll = _int(g, "n"), _num(g, "busbw_gbps"), _str(g, "collective")
    steps: list[str] = []
    if framing == "grads-params":
        p, dtype = _num(g, "params_b"), _str(g, "dtype")
        size = p * _DTYPE_BYTES[dtype]
        steps.append(f"{show(p)} B params × {_DTYPE_BYTES[dtype]} B ({dtype}) = {fmt(size)} GB")
    else:
        size = _num(g, "size_gb")
    factor, factor_text = _factor(coll, n)
    wire = size * factor
    t = wire / bw
    steps += [
        f"{coll} on n = {n} ranks: factor {factor_text}",
        f"{fmt(size)} GB × {fmt(factor, 4)} = {fmt(wire)} GB through each GPU's link",
        f"{fmt(wire)} GB ÷ {show(bw)} GB/s = {fmt(t, 3)} s ≈ {_ms(t)}",
    ]
    where = f"{n} × {hw.name}" + (" across nodes" if n > 8 else " in one node")
    if framing == "grads-bytes":
        prompt = (
            f"DDP on {where}: after backward, one flat all-reduce of {show(size)} GB of "
            f"gradients. {_ccl(hw).lower()}-tests measured a ring bus bandwidth of {show(bw)} "
            "GB/s on this fabric. How long does the all-reduce take?"
        )
    elif framing == "grads-params":
        p, dtype = _num(g, "params_b"), _str(g, "dtype")
        prompt = (
            f"A model with {show(p)} B parameters trains with DDP on {where}, gradients in "
            f"{dtype}. "
            f"The all-reduce runs at a bus bandwidth of {show(bw)} GB/s. How long does one "
            "all-reduce of all the gradients take?"
        )
    elif framing == "fsdp-allgather":
        prompt = (
            f"FSDP on {where}: the forward pass all-gathers the full bf16 parameters, "
            f"{show(size)} GB in total (the gathered size). Bus bandwidth is {show(bw)} GB/s. "
            "How long do the forward all-gathers take in total?"
        )
    else:
        prompt = (
            f"ZeRO-2 on {where}: gradients ({show(size)} GB in total, before sharding) are "
            f"reduce-scattered at a bus bandwidth of {show(bw)} GB/s. How long does the "
            "reduce-scatter take?"
        )
    return _Solution(prompt, t * 1e3, "ms", steps)


# ---------------------------------------------------------------------------------------------
# 2. busbw: busbw = algbw · factor, algbw = S / t

_SHAPES = [1024, 2048, 4096, 5120, 6144, 8192]


def _sample_busbw(rng: random.Random, hw: Hardware, framing: str) -> Given:
    n = rng.choice([4, 8, 8])
    target = hw.achievable_busbw_gbps * rng.choice([0.35, 0.5, 0.7, 0.85, 0.95, 1.0])
    if framing == "nccl-args":
        rows, cols = rng.choice(_SHAPES), rng.choice(_SHAPES)
        dtype = rng.choice(["bf16", "bf16", "fp32"])
        nbytes = rows * cols * _DTYPE_BYTES[dtype]
        factor, _ = _factor("all-reduce", n)
        dur_us = _nice(nbytes * factor / (target * 1e9) * 1e6, 3)
        return {
            "collective": "all-reduce",
            "rows": rows,
            "cols": cols,
            "nelems": rows * cols,
            "dtype": dtype,
            "n": n,
            "dur_us": dur_us,
        }
    coll = (
        "all-reduce"
        if framing == "link-fraction"
        else rng.choice(["all-reduce", "all-gather", "reduce-scatter"])
    )
    size_mb = rng.choice([64, 128, 256, 512, 1024, 2048])
    factor, _ = _factor(coll, n)
    dur_ms = _nice(size_mb * 1e6 * factor / (target * 1e9) * 1e3, 3)
    g: Given = {"collective": coll, "size_mb": size_mb, "n": n, "dur_ms": dur_ms}
    if framing == "link-fraction":
        g["link_gbps"] = hw.scaleup_gbps
    return g


def _solve_busbw(framing: str, g: Given, hw: Hardware) -> _Solution:
    n, coll = _int(g, "n"), _str(g, "collective")
    factor, factor_text = _factor(coll, n)
    steps: list[str] = []
    if framing == "nccl-args":
        nelems, dtype = _int(g, "nelems"), _str(g, "dtype")
        nbytes = float(nelems * _DTYPE_BYTES[dtype])
        seconds = _num(g, "dur_us") * 1e-6
        steps.append(
            f"S = {fmt(nelems / 1e6)} M elements × {_DTYPE_BYTES[dtype]} B = {_si(nbytes, 'B')}"
        )
        kernel = f"ncclDevKernel_AllReduce_Sum_{dtype}_RING_LL"
        prompt = (
            f"On {n} × {hw.name}, a `{kernel}` kernel carries In msg nelems = "
            f"{nelems:,} (a [{g['rows']}, {g['cols']}] {dtype} tensor), Group size = {n}, and "
            f"runs for {show(_num(g, 'dur_us'))} µs. What bus bandwidth did it reach?"
        )
    else:
        nbytes = _num(g, "size_mb") * 1e6
        seconds = _num(g, "dur_ms") * 1e-3
        what = "the array" if coll == "all-reduce" else "the full (gathered) array"
        prompt = (
            f"On {n} × {hw.name}, an {_ccl(hw)} {coll} of {show(_num(g, 'size_mb'))} MB "
            f"({what}) takes {show(_num(g, 'dur_ms'))} ms."
        )
    algbw = nbytes / seconds / 1e9
    busbw = algbw * factor
    steps += [
        f"algbw = S / t = {_si(nbytes, 'B')} ÷ {fmt(seconds * 1e3)} ms ≈ {fmt(algbw)} GB/s",
        f"{coll} factor {factor_text}",
    ]
    if framing == "link-fraction":
        link = _num(g, "link_gbps")
        pct = busbw / link * 100
        steps += [
            f"busbw = {fmt(algbw)} × {fmt(factor, 4)} ≈ {fmt(busbw)} GB/s",
            f"{fmt(busbw)} ÷ {show(link)} GB/s ≈ {fmt(pct)} %",
        ]
        prompt += (
            f" The {hw.scaleup_link} spec is {show(link)} GB/s per GPU, one direction. What "
            "percentage of the link's spec is its bus bandwidth? "
            "(A big ring usually reaches ~80 %.)"
        )
        return _Solution(prompt, pct, "%", steps)
    steps.append(f"busbw = {fmt(algbw)} GB/s × {fmt(factor, 4)} ≈ {fmt(busbw)} GB/s")
    if framing == "bytes-duration":
        prompt += " What is its bus bandwidth?"
    return _Solution(prompt, busbw, "GB/s", steps)


# ---------------------------------------------------------------------------------------------
# 3. intensity: FLOPs / bytes vs the ridge (peak FLOP/s ÷ HBM B/s)


def _ridge_given(hw: Hardware) -> Given:
    return {"peak_tflops": hw.bf16_tflops, "hbm_tbps": hw.hbm_tbps}


def _sample_intensity(rng: random.Random, hw: Hardware, framing: str) -> Given:
    g = _ridge_given(hw)
    if framing == "gemm":
        g |= {
            "m": rng.choice([128, 512, 2048, 4096, 8192]),
            "n": rng.choice([1024, 4096, 8192]),
            "k": rng.choice([1024, 4096, 8192]),
        }
    elif framing == "decode":
        g |= {"batch": rng.choice([1, 4, 8, 16, 32, 64]), "hidden": rng.choice([4096, 8192])}
    elif framing == "attainable":
        bytes_gb = rng.choice([0.25, 0.5, 1.0, 2.0])
        intensity = rng.choice([0.5, 2, 8, 40, 120, 600, 1500])
        g |= {"gflop": _nice(bytes_gb * intensity, 2), "bytes_gb": bytes_gb}
    return g


def _verdict(intensity: float, ridge: float) -> str:
    if intensity < ridge:
        return f"below the {fmt(ridge)} FLOP/B ridge: memory-bound"
    return f"above the {fmt(ridge)} FLOP/B ridge: compute-bound"


def _solve_intensity(framing: str, g: Given, hw: Hardware) -> _Solution:
    peak, hbm = _num(g, "peak_tflops"), _num(g, "hbm_tbps")
    ridge = peak / hbm
    ridge_step = f"ridge = {show(peak)} TFLOP/s ÷ {show(hbm)} TB/s ≈ {fmt(ridge)} FLOP/B"
    specs = f"{hw.name} ({show(peak)} TFLOP/s dense BF16, {show(hbm)} TB/s HBM)"
    if framing == "ridge":
        prompt = (
            f"{specs}: at what arithmetic intensity does a kernel stop being memory-bound and "
            "become compute-bound (the roofline's ridge point)?"
        )
        return _Solution(prompt, ridge, "FLOP/B", [ridge_step])
    if framing in {"gemm", "decode"}:
        if framing == "gemm":
            m, n, k = _int(g, "m"), _int(g, "n"), _int(g, "k")
            prompt = (
                f"On {specs}, a bf16 GEMM multiplies [{m}, {k}] by [{k}, {n}] into an [{m}, {n}] "
                "output, reading each input and writing the output once. What "
                "is its arithmetic intensity? (Then: memory- or compute-bound?)"
            )
        else:
            m, n = _int(g, "batch"), _int(g, "hidden")
            k = n
            prompt = (
                f"Decoding on {specs}: {m} sequence(s) in the batch go through a bf16 "
                f"[{n}, {n}] projection (one token each: a [{m}, {n}] × [{n}, {n}] GEMM, each "
                "operand read once, output written once). What is its arithmetic intensity? "
                "(Then: memory- or compute-bound?)"
            )
        flop = 2.0 * m * n * k
        nbytes = 2.0 * (m * k + k * n + m * n)
        intensity = flop / nbytes
        steps = [
            f"FLOPs = 2·M·N·K = 2 × {m} × {n} × {k} ≈ {_si(flop, 'FLOP')}",
            f"bytes = 2 B × (M·K + K·N + M·N) = 2 × ({m * k:,} + {k * n:,} + {m * n:,}) "
            f"≈ {_si(nbytes, 'B')}",
            ridge_step,
            f"{_verdict(intensity, ridge)}; "
            f"intensity = {_si(flop, 'FLOP')} ÷ {_si(nbytes, 'B')} ≈ {fmt(intensity)} FLOP/B",
        ]
        return _Solution(prompt, intensity, "FLOP/B", steps)
    # attainable: roofline min(peak, I × BW)
    gflop, bytes_gb = _num(g, "gflop"), _num(g, "bytes_gb")
    intensity = gflop / bytes_gb
    roof = intensity * hbm
    attainable = min(peak, roof)
    prompt = (
        f"On {specs}, a kernel does {show(gflop)} GFLOP of work and moves {show(bytes_gb)} GB "
        "to and from HBM. By the roofline, what is the most TFLOP/s it can reach?"
    )
    steps = [
        f"intensity = {show(gflop)} GFLOP ÷ {show(bytes_gb)} GB = {fmt(intensity)} FLOP/B",
        ridge_step,
        f"memory roof = {fmt(intensity)} FLOP/B × {show(hbm)} TB/s = {fmt(roof)} TFLOP/s",
        f"{_verdict(intensity, ridge)}; "
        f"attainable = min({show(peak)}, {fmt(roof)}) ≈ {fmt(attainable)} TFLOP/s",
    ]
    return _Solution(prompt, attainable, "TFLOP/s", steps)


# ---------------------------------------------------------------------------------------------
# 4. kernel-floor: t >= bytes / HBM bandwidth


def _sample_floor(rng: random.Random, hw: Hardware, framing: str) -> Given:
    g: Given = {"hbm_tbps": hw.hbm_tbps}
    if framing == "layernorm":
        g |= {
            "rows": rng.choice([4096, 8192, 16384]),
            "cols": rng.choice([4096, 8192, 12288]),
            "dtype": rng.choice(["bf16", "bf16", "fp32"]),
        }
    elif framing in {"bytes", "efficiency"}:
        g["bytes_mb"] = rng.choice([64, 134, 268, 512, 805, 1074, 2048])
        if framing == "efficiency":
            floor_us = _num(g, "bytes_mb") * 1e6 / (hw.hbm_tbps * 1e12) * 1e6
            g["measured_us"] = _nice(floor_us / rng.choice([0.3, 0.45, 0.6, 0.75, 0.9]), 2)
    else:  # optimizer
        g |= {"params_b": rng.choice([0.5, 0.9, 1.3, 1.75, 2.7]), "read_b": 16, "write_b": 12}
    return g


def _mb_text(mb: float) -> str:
    """A stated size in MB, written in GB from 10,000 MB on (a trace's 552 GB chain, not
    "552,000 MB")."""
    return f"{show(mb / 1000)} GB" if mb >= 10_000 else f"{show(mb)} MB"


def _us_text(us: float, write: Callable[[float], str] = show, *, in_ms: bool | None = None) -> str:
    """A duration in µs, written in ms from 10,000 µs on ("167 ms", not "167,000 µs");
    ``in_ms`` forces one unit on both sides of a ratio."""
    if in_ms is None:
        in_ms = us >= 10_000
    return f"{write(us / 1000)} ms" if in_ms else f"{write(us)} µs"


def _solve_floor(framing: str, g: Given, hw: Hardware) -> _Solution:
    hbm = _num(g, "hbm_tbps")
    on = f"{hw.name} ({show(hbm)} TB/s HBM)"
    steps: list[str] = []
    if framing == "layernorm":
        rows, cols, dtype = _int(g, "rows"), _int(g, "cols"), _str(g, "dtype")
        size = _DTYPE_BYTES[dtype]
        nbytes = 2.0 * rows * cols * size
        steps.append(f"read + write: 2 × {rows} × {cols} × {size} B ≈ {_si(nbytes, 'B')}")
        prompt = (
            f"A LayerNorm over a [{rows}, {cols}] {dtype} activation on {on} reads the tensor "
            "once and writes the result once (the weights are negligible). What is the fastest "
            "it can possibly run?"
        )
    elif framing in {"bytes", "efficiency"}:
        nbytes = _num(g, "bytes_mb") * 1e6
        what = _str(g, "what") if "what" in g else "A fused elementwise kernel"
        prompt = f"{what} on {on} moves {_mb_text(_num(g, 'bytes_mb'))} in total"
        if framing == "bytes":
            prompt += " (reads plus writes). What is its floor time, the fastest it can run?"
    else:
        p, rd, wr = _num(g, "params_b"), _int(g, "read_b"), _int(g, "write_b")
        nbytes = p * 1e9 * (rd + wr)
        steps.append(f"{show(p)} B params × ({rd} + {wr}) B = {_si(nbytes, 'B')}")
        prompt = (
            f"The fused AdamW step (`multi_tensor_apply`) on one {on} updates this GPU's "
            f"ZeRO shard of {show(p)} B parameters, reading {rd} B and writing {wr} B per "
            "parameter (fp32 weight, grad and two moments). What is the floor time of the "
            "optimizer step?"
        )
    floor_s = nbytes / (hbm * 1e12)
    if framing == "optimizer":
        steps.append(f"{_si(nbytes, 'B')} ÷ {show(hbm)} TB/s ≈ {_ms(floor_s)}")
        return _Solution(prompt, floor_s * 1e3, "ms", steps)
    # one unit for the floor and the measured time: ms once either reaches 10,000 µs
    in_ms = max(floor_s * 1e6, _num(g, "measured_us") if "measured_us" in g else 0) >= 10_000
    floor_text = _us_text(floor_s * 1e6, fmt, in_ms=in_ms)
    floor_step = f"{_si(nbytes, 'B')} ÷ {show(hbm)} TB/s ≈ {floor_text}"
    if framing != "efficiency":
        steps.append(floor_step)
        if in_ms:  # asked in the unit the floor is written in
            return _Solution(prompt, floor_s * 1e3, "ms", steps)
        return _Solution(prompt, floor_s * 1e6, "µs", steps)
    measured = _num(g, "measured_us")
    pct = floor_s * 1e6 / measured * 100
    prompt += (
        " (reads plus writes) and the trace shows it taking "
        f"{_us_text(measured, in_ms=in_ms)}. What percentage of the HBM peak bandwidth does "
        "it achieve?"
    )
    steps += [
        f"floor = {floor_step}",
        f"{floor_text} ÷ {_us_text(measured, in_ms=in_ms)} ≈ {fmt(pct)} %",
    ]
    return _Solution(prompt, pct, "%", steps)


# ---------------------------------------------------------------------------------------------
# 5. bubble: (p−1)/(m+p−1) of the step; (p−1)/m and (p−1)/(v·m) relative to ideal


def _sample_bubble(rng: random.Random, hw: Hardware, framing: str) -> Given:
    p = rng.choice([4, 8, 8, 16])
    # GPipe/1F1B may run fewer microbatches than stages; the interleaved schedule needs m >= p.
    least = p if framing in {"interleaved", "interleave-speedup"} else p // 2
    m = rng.choice([m for m in (4, 8, 16, 32, 64) if m >= least])
    g: Given = {"p": p, "m": m}
    if framing in {"interleaved", "interleave-speedup"}:
        g["v"] = rng.choice([2, 3, 4])
    return g


def _solve_bubble(framing: str, g: Given, hw: Hardware) -> _Solution:
    p, m = _int(g, "p"), _int(g, "m")
    where = f"{p} pipeline stages ({p} × {hw.name}) and {m} microbatches per step"
    if framing == "share":
        frac = (p - 1) / (m + p - 1)
        prompt = (
            f"1F1B pipeline with {where}. What share of each stage's step time is bubble (idle)?"
        )
        steps = [
            f"(p−1)/(m+p−1) = {p - 1}/({m}+{p - 1}) = {p - 1}/{m + p - 1} ≈ {fmt(frac * 100)} %"
        ]
        return _Solution(prompt, frac * 100, "%", steps)
    if framing == "relative":
        frac = (p - 1) / m
        prompt = (
            f"GPipe-style pipeline with {where}. How large is the bubble relative to the ideal "
            "(bubble-free) compute time, t_bubble / t_ideal?"
        )
        steps = [f"(p−1)/m = {p - 1}/{m} ≈ {fmt(frac * 100)} %"]
        return _Solution(prompt, frac * 100, "%", steps)
    v = _int(g, "v")
    plain = (p - 1) / m
    inter = (p - 1) / (v * m)
    if framing == "interleaved":
        prompt = (
            f"Interleaved 1F1B with {where}, {v} model chunks per device. How large is the "
            "bubble relative to the ideal compute time?"
        )
        steps = [f"(p−1)/(v·m) = {p - 1}/({v}×{m}) = {p - 1}/{v * m} ≈ {fmt(inter * 100)} %"]
        return _Solution(prompt, inter * 100, "%", steps)
    speedup = (1 + plain) / (1 + inter)
    prompt = (
        f"A 1F1B pipeline with {where} switches to the interleaved schedule with {v} chunks per "
        "device. Ignoring the extra P2P traffic, how much faster does the step get?"
    )
    steps = [
        f"before: step ∝ 1 + (p−1)/m = 1 + {p - 1}/{m} ≈ {fmt(1 + plain, 4)}",
        f"after: step ∝ 1 + (p−1)/(v·m) = 1 + {p - 1}/{v * m} ≈ {fmt(1 + inter, 4)}",
        f"{fmt(1 + plain, 4)} ÷ {fmt(1 + inter, 4)} ≈ {fmt(speedup)} ×",
    ]
    return _Solution(prompt, speedup, "×", steps, TOL_TIGHT)


# ---------------------------------------------------------------------------------------------
# 6. launch-overhead: N kernels × t_launch vs Σ GPU time


def _sample_launch(rng: random.Random, hw: Hardware, framing: str) -> Given:
    launch_us = rng.choice([hw.launch_us, hw.launch_us, 5.0, 8.0, 10.0, 12.0])
    kernels = rng.randrange(200, 2001, 50)
    cpu_ms = kernels * launch_us / 1e3
    g: Given = {
        "kernels": kernels,
        "launch_us": launch_us,
        "gpu_ms": _nice(cpu_ms * rng.choice([0.2, 0.3, 0.5, 0.8, 1.5]), 2),
    }
    if framing == "launch-share":
        busiest = max(cpu_ms, _num(g, "gpu_ms"))
        g["wall_ms"] = _nice(busiest * rng.choice([1.1, 1.5, 2.5, 6.0]), 2)
    return g


def _solve_launch(framing: str, g: Given, hw: Hardware) -> _Solution:
    kernels, launch_us, gpu_ms = _int(g, "kernels"), _num(g, "launch_us"), _num(g, "gpu_ms")
    cpu_ms = kernels * launch_us / 1e3
    cpu_step = f"CPU: {kernels:,} × {show(launch_us)} µs = {fmt(cpu_ms)} ms of launches"
    setting = (
        f"An eager inference step on {hw.name} launches {kernels:,} kernels; each "
        f"{_api(hw, 'LaunchKernel')} costs {show(launch_us)} µs of CPU time and the kernels "
        f"add up to {show(gpu_ms)} ms of GPU time."
    )
    if framing == "cpu-time":
        prompt = f"{setting} How much CPU time per step goes into launching?"
        final = f"{kernels:,} launches × {show(launch_us)} µs ≈ {fmt(cpu_ms)} ms"
        return _Solution(prompt, cpu_ms, "ms", [final])
    eager = max(cpu_ms, gpu_ms)
    bound = "launch-bound" if cpu_ms > gpu_ms else "GPU-bound"
    eager_step = (
        f"eager step ≈ max(CPU {fmt(cpu_ms)} ms, GPU {show(gpu_ms)} ms) = {fmt(eager)} ms ({bound})"
    )
    if framing == "graph-speedup":
        speedup = eager / gpu_ms
        prompt = (
            f"{setting} Captured in a CUDA graph, the step is one launch and costs about the "
            "GPU time. How much faster is the graphed step?"
        )
        steps = [cpu_step, eager_step, f"{fmt(eager)} ÷ {show(gpu_ms)} ms ≈ {fmt(speedup)} ×"]
        return _Solution(prompt, speedup, "×", steps, TOL_TIGHT)
    if framing == "gpu-util":
        util = gpu_ms / eager * 100
        prompt = (
            f"{setting} The CPU launches back to back and the GPU runs each kernel as soon as it "
            "arrives. What percentage of the step is the GPU busy?"
        )
        steps = [cpu_step, eager_step, f"{show(gpu_ms)} ÷ {fmt(eager)} ms ≈ {fmt(util)} %"]
        return _Solution(prompt, util, "%", steps)
    wall = _num(g, "wall_ms")
    share = cpu_ms / wall * 100
    prompt = (
        f"{setting} The step's wall time is {show(wall)} ms. What share of the wall time is "
        f"{_api(hw, 'LaunchKernel')} (nsys flags more than 10 %)?"
    )
    steps = [cpu_step, f"{fmt(cpu_ms)} ÷ {show(wall)} ms ≈ {fmt(share)} %"]
    return _Solution(prompt, share, "%", steps)


# ---------------------------------------------------------------------------------------------
# 7. exposed-comm: exposed = comm × (1 − overlap); step = compute + exposed


def _sample_exposed(rng: random.Random, hw: Hardware, framing: str) -> Given:
    g: Given = {
        "compute_ms": float(rng.randrange(150, 601, 10)),
        "overlap_pct": float(rng.choice([0, 10, 20, 30, 40, 50, 60])),
    }
    if framing == "from-bytes":
        g |= {
            "size_gb": rng.choice([2.6, 5.4, 14, 16]),
            "n": 8,
            "busbw_gbps": _busbw(hw, rng),
        }
    else:
        g["comm_ms"] = float(rng.randrange(20, 161, 4))
    if framing == "overlap-speedup":
        g["overlap2_pct"] = float(rng.choice([80, 90, 95]))
    return g


def _solve_exposed(framing: str, g: Given, hw: Hardware) -> _Solution:
    compute, o = _num(g, "compute_ms"), _num(g, "overlap_pct") / 100
    steps: list[str] = []
    if framing == "from-bytes":
        size, n, bw = _num(g, "size_gb"), _int(g, "n"), _num(g, "busbw_gbps")
        factor, factor_text = _factor("all-reduce", n)
        comm = size * factor / bw * 1e3
        steps += [
            f"all-reduce factor {factor_text}",
            f"comm = {show(size)} GB × {fmt(factor, 4)} ÷ {show(bw)} GB/s ≈ {fmt(comm)} ms",
        ]
        comm_text = (
            f"all-reduces {show(size)} GB of gradients over {n} ranks at a bus bandwidth of "
            f"{show(bw)} GB/s"
        )
    else:
        comm = _num(g, "comm_ms")
        comm_text = f"spends {show(comm)} ms in gradient all-reduces"
    exposed = comm * (1 - o)
    step = compute + exposed
    exposed_step = f"exposed = {fmt(comm)} ms × (1 − {fmt(o, 3)}) = {fmt(exposed)} ms"
    ranks = _int(g, "n") if "n" in g else 8
    setting = (
        f"A DDP step on {ranks} × {hw.name} has {show(compute)} ms of forward+backward compute and "
        f"{comm_text}; {show(_num(g, 'overlap_pct'))} % of the communication is hidden under "
        "backward compute (HTA's overlap)."
    )
    if framing == "exposed":
        prompt = f"{setting} How many ms of communication are exposed per step?"
        return _Solution(prompt, exposed, "ms", [exposed_step.replace(" = ", " ≈ ", 1)])
    steps.append(exposed_step)
    if framing in {"step", "from-bytes"}:
        prompt = f"{setting} How long is the step (compute + exposed communication)?"
        steps.append(f"step = {show(compute)} + {fmt(exposed)} ≈ {fmt(step)} ms")
        return _Solution(prompt, step, "ms", steps, TOL_TIGHT)
    o2 = _num(g, "overlap2_pct") / 100
    step2 = compute + comm * (1 - o2)
    speedup = step / step2
    prompt = (
        f"{setting} Bucketing lets the overlap rise to {show(_num(g, 'overlap2_pct'))} %. How "
        "much faster is the step?"
    )
    steps += [
        f"before: {show(compute)} + {fmt(exposed)} = {fmt(step)} ms",
        f"after: {show(compute)} + {fmt(comm)} × {fmt(1 - o2, 3)} = {fmt(step2)} ms",
        f"{fmt(step)} ÷ {fmt(step2)} ≈ {fmt(speedup)} ×",
    ]
    return _Solution(prompt, speedup, "×", steps, TOL_TIGHT)


# ---------------------------------------------------------------------------------------------
# 8. dataloader-workers: k = ceil(t_data / t_compute); step = max(t_compute, t_data / k)


def _ceil(x: float) -> int:
    return math.ceil(round(x, 9))


def _before_rounding_up(x: float) -> str:
    """``x`` as the step before "round up" prints it: never a whole number unless it is one
    ("2,048 ÷ 170 = 12.05 → round up → 13", not "= 12 → round up → 13")."""
    for sig in (3, 4, 5, 6):
        text = fmt(x, sig)
        if _ceil(float(text.replace(",", ""))) == _ceil(x):
            return text
    return fmt(x, 9)


def _sample_workers(rng: random.Random, hw: Hardware, framing: str) -> Given:
    compute = float(rng.randrange(40, 301, 10))
    if framing == "per-sample":
        for _ in range(_MAX_DRAWS):
            batch = rng.choice([32, 64, 128, 256])
            sample = rng.choice([1.5, 2, 3, 4, 6, 8, 12])
            if batch * sample <= 16 * compute:  # at most 16 workers: a node's CPU share per GPU
                break
        return {"batch": batch, "sample_ms": sample, "compute_ms": compute}
    data = _nice(compute * rng.choice([0.7, 1.3, 1.8, 2.5, 3.4, 4.6, 7.2]), 2)
    g: Given = {"data_ms": data, "compute_ms": compute}
    if framing in {"step-with-k", "serial-speedup"}:
        g["k"] = rng.choice([2, 4, 8])
    return g


def _solve_workers(framing: str, g: Given, hw: Hardware) -> _Solution:
    compute = _num(g, "compute_ms")
    gpu = f"the training step on {hw.name} takes {show(compute)} ms of GPU compute"
    if framing == "per-sample":
        batch, sample = _int(g, "batch"), _num(g, "sample_ms")
        data = batch * sample
        ratio = data / compute
        k = _ceil(ratio)
        prompt = (
            f"Decoding and augmenting one sample takes {show(sample)} ms of one CPU core; a "
            f"batch is {batch} samples, and {gpu}. How many DataLoader workers (one batch per "
            "worker at a time) keep the GPU fed?"
        )
        steps = [
            f"one batch: {batch} × {show(sample)} ms = {fmt(data, 4)} ms per worker",
            f"{fmt(data, 4)} ÷ {show(compute)} = {_before_rounding_up(ratio)} → round up → "
            f"{k} workers",
        ]
        return _Solution(prompt, float(k), "workers", steps, TOL_EXACT)
    data = _num(g, "data_ms")
    setting = f"One DataLoader worker needs {show(data)} ms to produce a batch, and {gpu}."
    if framing == "workers":
        ratio = data / compute
        k = _ceil(ratio)
        prompt = f"{setting} What is the smallest num_workers that keeps the GPU fed?"
        steps = [
            f"{show(data)} ÷ {show(compute)} = {_before_rounding_up(ratio)} → round up → "
            f"{k} workers"
        ]
        return _Solution(prompt, float(k), "workers", steps, TOL_EXACT)
    k = _int(g, "k")
    step = max(compute, data / k)
    step_line = (
        f"with prefetching: step ≈ max({show(compute)}, {show(data)} ÷ {k}) = "
        f"max({show(compute)}, {fmt(data / k)}) = {fmt(step)} ms"
    )
    if framing == "step-with-k":
        prompt = f"{setting} With num_workers={k} and prefetching, how long is a step?"
        return _Solution(prompt, step, "ms", [step_line], TOL_TIGHT)
    serial = data + compute
    speedup = serial / step
    prompt = (
        f"{setting} Today num_workers=0, so loading and compute run back to back. How much "
        f"faster is a step with num_workers={k} and prefetching?"
    )
    steps = [
        f"now: {show(data)} + {show(compute)} = {fmt(serial)} ms",
        step_line,
        f"{fmt(serial)} ÷ {fmt(step)} ≈ {fmt(speedup)} ×",
    ]
    return _Solution(prompt, speedup, "×", steps, TOL_TIGHT)


# ---------------------------------------------------------------------------------------------
# 9. mfu: 6·N·tokens/s ÷ (GPUs × peak)


def _sample_mfu(rng: random.Random, hw: Hardware, framing: str) -> Given:
    params = rng.choice([1.3, 7, 8, 13, 34, 70])
    # Enough GPUs to hold ~20 B per parameter (weights, grads, Adam states, some activations).
    min_gpus = rng.choice([n for n in (8, 64, 256, 1024) if n * hw.hbm_gb >= 20 * params])
    gpus = min_gpus
    mfu = rng.choice([0.25, 0.32, 0.38, 0.45, 0.52])
    g: Given = {"params_b": params, "gpus": gpus, "peak_tflops": hw.bf16_tflops}
    if framing == "train-days":
        for _ in range(_MAX_DRAWS):
            tokens = rng.choice([0.3, 1, 2, 15])
            gpus = rng.choice([n for n in (256, 1024, 2048, 4096, 16384) if n >= min_gpus])
            days = 6 * params * 1e9 * tokens * 1e12 / (gpus * hw.bf16_tflops * 1e12 * mfu) / 86400
            if 2 <= days <= 200:  # a pretraining run someone would plan
                break
        g |= {"gpus": gpus, "tokens_t": tokens, "mfu_pct": mfu * 100}
    else:
        g["tokens_per_s"] = _nice(gpus * hw.bf16_tflops * 1e12 * mfu / (6 * params * 1e9), 3)
    return g


def _solve_mfu(framing: str, g: Given, hw: Hardware) -> _Solution:
    params, gpus, peak = _num(g, "params_b"), _int(g, "gpus"), _num(g, "peak_tflops")
    cluster_peak = gpus * peak * 1e12
    if framing == "train-days":
        tokens, mfu = _num(g, "tokens_t"), _num(g, "mfu_pct") / 100
        flop = 6 * params * 1e9 * tokens * 1e12
        rate = cluster_peak * mfu
        days = flop / rate / 86400
        prompt = (
            f"Roughly how many days does it take to pretrain a dense model with {show(params)} B "
            f"parameters on {show(tokens)} T tokens with {gpus:,} × {hw.name} "
            f"({show(peak)} TFLOP/s BF16 each) at {show(_num(g, 'mfu_pct'))} % MFU? "
            "(Use 6·N FLOPs per token.)"
        )
        steps = [
            f"work = 6 × {show(params)}e9 × {show(tokens)}e12 ≈ {_sci(flop)} FLOP",
            f"rate = {gpus:,} × {show(peak)} TFLOP/s × {fmt(mfu, 3)} ≈ {_si(rate, 'FLOP/s')}",
            f"{_sci(flop)} ÷ {_sci(rate)} ≈ {_sci(flop / rate)} s",
            f"{_sci(flop / rate)} s ÷ 86,400 s/day ≈ {fmt(days)} days",
        ]
        return _Solution(prompt, days, "days", steps, TOL_ROUGH)
    tps = _num(g, "tokens_per_s")
    achieved = 6 * params * 1e9 * tps
    per_gpu = achieved / gpus
    setting = (
        f"A dense model with {show(params)} B parameters trains at {show(tps)} tokens/s on "
        f"{gpus:,} × {hw.name} ({show(peak)} TFLOP/s dense BF16 each). Count 6·N FLOPs per token."
    )
    steps = [
        f"6 × {show(params)}e9 × {show(tps)} tokens/s ≈ {_si(achieved, 'FLOP/s')}",
        f"per GPU: {_si(achieved, 'FLOP/s')} ÷ {gpus:,} ≈ {fmt(per_gpu / 1e12)} TFLOP/s",
    ]
    if framing == "achieved":
        prompt = f"{setting} How many TFLOP/s does each GPU deliver?"
        return _Solution(prompt, per_gpu / 1e12, "TFLOP/s", steps)
    mfu = per_gpu / (peak * 1e12) * 100
    prompt = f"{setting} What is the MFU?"
    steps.append(f"{fmt(per_gpu / 1e12)} ÷ {show(peak)} TFLOP/s ≈ {fmt(mfu)} %")
    return _Solution(prompt, mfu, "%", steps)


# ---------------------------------------------------------------------------------------------
# 10. amdahl: speedup = 1 / ((1 − f) + f / s)

_STALLS = [
    ("`.item()` host syncs", [1.0, 2.0, 3.0]),
    ("{api}Malloc retries (allocator flush-and-retry)", [8.0, 12.0, 15.0]),
    ("{api}StreamSynchronize calls", [1.5, 2.5, 4.0]),
]
# Stalls only a trace's own numbers bring ("Practise this calculation"): never drawn at random.
_TRACE_STALLS = [
    "{api}Malloc/{api}Free calls in steady state",
    "recompiles (a new input shape each)",
]


def _sample_amdahl(rng: random.Random, hw: Hardware, framing: str) -> Given:
    if framing == "remove":
        idx = rng.randrange(len(_STALLS))
        count = rng.choice([2, 3, 4, 6, 8])
        cost = rng.choice(_STALLS[idx][1])
        # The stalls are a visible slice of the step, never most of it: at most 40 % of it.
        floor = max(100, 20 * math.ceil(count * cost / 0.4 / 20))
        return {
            "stall": idx,
            "count": count,
            "cost_ms": cost,
            "step_ms": float(rng.randrange(floor, max(floor, 400) + 1, 20)),
        }
    if framing == "straggler":
        return {"ranks": rng.choice([16, 64, 256]), "slow_pct": float(rng.choice([8, 15, 25, 40]))}
    g: Given = {"frac_pct": float(rng.choice([20, 30, 40, 55, 65, 80]))}
    if framing == "accelerate":
        g["factor"] = float(rng.choice([1.5, 2, 3, 4]))
    return g


def _solve_amdahl(framing: str, g: Given, hw: Hardware) -> _Solution:
    if framing == "remove":
        names = [s[0] for s in _STALLS] + _TRACE_STALLS
        name = names[_int(g, "stall")].format(api=_api(hw, ""))
        count, cost, step = _int(g, "count"), _num(g, "cost_ms"), _num(g, "step_ms")
        removed = count * cost
        new = step - removed
        speedup = step / new
        if "steps" in g:  # stalls spread over a run of steps: the run stands in for the step
            prompt = (
                f"A run of {_int(g, 'steps')} training steps on {hw.name} takes {show(step)} ms "
                f"and contains {count} {name}, each stalling the GPU for {show(cost)} ms. Remove "
                "them all: how much faster is the mean step?"
            )
        else:
            prompt = (
                f"A {show(step)} ms training step on {hw.name} contains {count} {name}, each "
                f"stalling the GPU for {show(cost)} ms. Remove them all: how much faster is the "
                "step?"
            )
        steps = [f"stall = {count} × {show(cost)} = {fmt(removed)} ms"]
        if "steps" in g:  # the run's total, not a step: say so, and what the mean step becomes
            n = _int(g, "steps")
            steps += [
                f"new run = {show(step)} − {fmt(removed)} = {fmt(new)} ms",
                f"{show(step)} ÷ {fmt(new)} ≈ {fmt(speedup)} × (the mean step: "
                f"{fmt(step / n)} → {fmt(new / n)} ms)",
            ]
        else:
            steps += [
                f"new step = {show(step)} − {fmt(removed)} = {fmt(new)} ms",
                f"{show(step)} ÷ {fmt(new)} ≈ {fmt(speedup)} ×",
            ]
        return _Solution(prompt, speedup, "×", steps, TOL_TIGHT)
    if framing == "straggler":
        n, slow = _int(g, "ranks"), _num(g, "slow_pct")
        shorter = (1 - 1 / (1 + slow / 100)) * 100
        prompt = (
            f"A synchronous job on {n} × {hw.name} has one rank that computes {show(slow)} % "
            "slower than the rest, so every step waits for it. Replace that node: by what "
            "percentage does the step time shrink?"
        )
        steps = [
            f"step ∝ 1 + {fmt(slow / 100, 3)} = {fmt(1 + slow / 100, 4)} now, 1 after",
            f"1 − 1/{fmt(1 + slow / 100, 4)} ≈ {fmt(shorter)} %",
        ]
        return _Solution(prompt, shorter, "%", steps)
    f = _num(g, "frac_pct") / 100
    if framing == "limit":
        speedup = 1 / (1 - f)
        prompt = (
            f"Attention kernels are {show(_num(g, 'frac_pct'))} % of the step on {hw.name}. "
            "If attention became infinitely fast, what is the most the whole step could speed up?"
        )
        steps = [f"1 / (1 − {fmt(f, 3)}) = 1 / {fmt(1 - f, 3)} ≈ {fmt(speedup)} ×"]
        return _Solution(prompt, speedup, "×", steps, TOL_TIGHT)
    s = _num(g, "factor")
    new = (1 - f) + f / s
    speedup = 1 / new
    prompt = (
        f"Memory-bound elementwise and norm kernels are {show(_num(g, 'frac_pct'))} % of the "
        f"step on {hw.name}. torch.compile fuses them and makes that part {show(s)}× faster. "
        "How much faster is the whole step?"
    )
    steps = [
        f"new step = {fmt(1 - f, 3)} + {fmt(f, 3)}/{show(s)} = {fmt(new, 3)} of the old",
        f"1 / {fmt(new, 3)} ≈ {fmt(speedup)} ×",
    ]
    return _Solution(prompt, speedup, "×", steps, TOL_TIGHT)


# ---------------------------------------------------------------------------------------------
# 11. checkpoint-interval: Young/Daly P = √(2·MTBF·C)


def _sample_ckpt(rng: random.Random, hw: Hardware, framing: str) -> Given:
    g: Given = {"ckpt_min": rng.choice([1, 2, 3, 5, 10, 15])}
    if framing == "cluster":
        g |= {
            "gpu_mtbf_h": rng.choice([25_000, 50_000, 80_000, 100_000]),
            "gpus": rng.choice([1024, 2048, 4096, 8192, 16384]),
        }
    else:
        g["mtbf_h"] = rng.choice([1.8, 3, 4, 6, 8, 12, 24])
    return g


def _solve_ckpt(framing: str, g: Given, hw: Hardware) -> _Solution:
    c_min = _num(g, "ckpt_min")
    c_h = c_min / 60
    steps = [f"C = {show(c_min)} min = {fmt(c_h, 3)} h"]
    if framing == "cluster":
        gpu_mtbf, gpus = _num(g, "gpu_mtbf_h"), _int(g, "gpus")
        mtbf = gpu_mtbf / gpus
        steps.insert(0, f"job MTBF = {gpu_mtbf:,.0f} h ÷ {gpus:,} GPUs ≈ {fmt(mtbf)} h")
        prompt = (
            f"Each {hw.name} in a {gpus:,}-GPU job fails (or takes its node down) about once "
            f"every {gpu_mtbf:,.0f} h, and any failure stops the job. Writing a checkpoint "
            f"stalls training for {show(c_min)} min. Roughly how often should the job "
            "checkpoint (Young/Daly)?"
        )
        tol = TOL_ROUGH
    else:
        mtbf = _num(g, "mtbf_h")
        tol = TOL_DEFAULT
        prompt = (
            f"A large pretraining job on {hw.name} GPUs is interrupted about once every "
            f"{show(mtbf)} h (MTBF), and a checkpoint costs {show(c_min)} min of stalled training."
        )
    period = math.sqrt(2 * mtbf * c_h)
    if framing == "waste":
        waste = math.sqrt(2 * c_h / mtbf) * 100
        prompt += (
            " Checkpointing at the Young/Daly optimum, roughly what percentage of the time goes "
            "to checkpoints plus recomputing lost work (C/P + P/(2·MTBF))?"
        )
        steps += [
            "at P = √(2·MTBF·C) the two terms are equal: waste = √(2C/MTBF)",
            f"√(2 × {fmt(c_h, 3)} ÷ {fmt(mtbf)}) = √{fmt(2 * c_h / mtbf, 3)} ≈ {fmt(waste)} %",
        ]
        return _Solution(prompt, waste, "%", steps, TOL_ROUGH)
    if framing == "interval":
        prompt += " What checkpoint interval does Young/Daly give?"
    steps.append(
        f"P = √(2 × {fmt(mtbf)} h × {fmt(c_h, 3)} h) = √{fmt(2 * mtbf * c_h, 3)} ≈ {fmt(period)} h"
    )
    return _Solution(prompt, period, "h", steps, tol)


# ---------------------------------------------------------------------------------------------
# registry


@dataclass(frozen=True, slots=True)
class _Spec:
    family: Family
    sample: Sampler
    solve: Solver


def _spec(
    key: str,
    title: str,
    summary: str,
    links: list[str],
    framings: tuple[str, ...],
    sample: Sampler,
    solve: Solver,
) -> _Spec:
    return _Spec(Family(key, title, summary, links, framings), sample, solve)


_SPECS: dict[str, _Spec] = {
    s.family.key: s
    for s in [
        _spec(
            "allreduce-time",
            "Collective time from bytes and bus bandwidth",
            "t = S × 2(n−1)/n ÷ busbw for a ring all-reduce; × (n−1)/n for all-gather and "
            "reduce-scatter.",
            ["exposed-allreduce", "bandwidth-bound-collective"],
            ("grads-bytes", "grads-params", "fsdp-allgather", "zero-reduce-scatter"),
            _sample_allreduce,
            _solve_allreduce,
        ),
        _spec(
            "busbw",
            "Bus bandwidth from a kernel's bytes and duration",
            "algbw = S / t, busbw = algbw × 2(n−1)/n (all-reduce) or (n−1)/n; compare with "
            "the link.",
            ["bandwidth-bound-collective", "straggler"],
            ("nccl-args", "bytes-duration", "link-fraction"),
            _sample_busbw,
            _solve_busbw,
        ),
        _spec(
            "intensity",
            "Arithmetic intensity vs the ridge point",
            "FLOPs ÷ bytes against peak FLOP/s ÷ HBM bandwidth: below the ridge is memory-bound.",
            ["memory-bound-kernel", "healthy"],
            ("gemm", "decode", "ridge", "attainable"),
            _sample_intensity,
            _solve_intensity,
        ),
        _spec(
            "kernel-floor",
            "Kernel floor time from bytes and HBM bandwidth",
            "A memory-bound kernel can't beat bytes ÷ HBM bandwidth; floor ÷ measured = "
            "efficiency.",
            ["memory-bound-kernel"],
            ("layernorm", "bytes", "efficiency", "optimizer"),
            _sample_floor,
            _solve_floor,
        ),
        _spec(
            "bubble",
            "Pipeline bubble fraction",
            "(p−1)/(m+p−1) of the step; (p−1)/m of ideal compute; interleaved (p−1)/(v·m).",
            ["pipeline-bubbles"],
            ("share", "relative", "interleaved", "interleave-speedup"),
            _sample_bubble,
            _solve_bubble,
        ),
        _spec(
            "launch-overhead",
            "Launch overhead vs GPU time",
            "kernels × launch cost against Σ kernel time: the larger one sets the eager step.",
            ["launch-bound"],
            ("cpu-time", "graph-speedup", "gpu-util", "launch-share"),
            _sample_launch,
            _solve_launch,
        ),
        _spec(
            "exposed-comm",
            "Exposed communication and step time after overlap",
            "exposed = comm × (1 − overlap); step = compute + exposed.",
            ["exposed-allreduce"],
            ("exposed", "step", "overlap-speedup", "from-bytes"),
            _sample_exposed,
            _solve_exposed,
        ),
        _spec(
            "dataloader-workers",
            "DataLoader workers needed",
            "workers = ⌈t_data ÷ t_compute⌉; with k workers the step is max(t_compute, t_data/k).",
            ["input-starvation"],
            ("workers", "per-sample", "step-with-k", "serial-speedup"),
            _sample_workers,
            _solve_workers,
        ),
        _spec(
            "mfu",
            "Model FLOPs utilization",
            "MFU = 6·N·tokens/s ÷ (GPUs × peak FLOP/s).",
            ["healthy"],
            ("mfu", "achieved", "train-days"),
            _sample_mfu,
            _solve_mfu,
        ),
        _spec(
            "amdahl",
            "Amdahl: the win from removing part of the step",
            "speedup = 1 / ((1 − f) + f/s); removing f entirely gives 1/(1 − f).",
            ["sync-stalls", "allocator-stalls", "straggler", "recompilation"],
            ("remove", "limit", "accelerate", "straggler"),
            _sample_amdahl,
            _solve_amdahl,
        ),
        _spec(
            "checkpoint-interval",
            "Checkpoint interval from MTBF (Young/Daly)",
            "P = √(2 · MTBF · C); fleet MTBF = per-GPU MTBF ÷ GPUs.",
            [],
            ("interval", "cluster", "waste"),
            _sample_ckpt,
            _solve_ckpt,
        ),
    ]
}

FAMILIES: dict[str, Family] = {key: spec.family for key, spec in _SPECS.items()}


def _get_spec(family_key: str) -> _Spec:
    try:
        return _SPECS[family_key]
    except KeyError:
        raise ValueError(
            f"unknown mental-math family {family_key!r}; choose one of {', '.join(_SPECS)}"
        ) from None


def _answer_prompt(unit: str, tolerance: float) -> str:
    if unit == "workers":
        return "Answer as a whole number of workers."
    return f"Answer in {unit} ({tolerance_text(tolerance)})."


def build_problem(
    family_key: str,
    framing: str,
    given: Given,
    *,
    hardware: str | None = None,
    seed: int | None = None,
) -> Problem:
    """Build a problem from stated numbers (the internal constructor; tests use it directly).

    ``given`` uses the keys the family's sampler produces (see each ``_sample_*``); the answer
    is computed from exactly these numbers.
    """
    spec = _get_spec(family_key)
    if framing not in spec.family.framings:
        raise ValueError(
            f"unknown framing {framing!r} for {family_key!r}; "
            f"choose one of {', '.join(spec.family.framings)}"
        )
    hw = get_hardware(hardware)
    sol = spec.solve(framing, dict(given), hw)
    prompt = f"{sol.prompt} {_answer_prompt(sol.unit, sol.tolerance)}"
    return Problem(
        family=family_key,
        framing=framing,
        hardware=hw.key,
        seed=seed,
        prompt=prompt,
        answer=float(sol.answer),
        unit=sol.unit,
        tolerance=sol.tolerance,
        steps=list(sol.steps),
        given=dict(given),
    )


_MIN_SPEEDUP = 1.08


def make_problem(
    family_key: str, seed: int, *, hardware: str | None = None, framing: str | None = None
) -> Problem:
    """A randomized problem; deterministic in (family_key, seed, hardware, framing)."""
    spec = _get_spec(family_key)
    rng = random.Random(f"mentalmath:{GENERATOR_VERSION}:{family_key}:{int(seed)}")
    drawn_hw = rng.choice(sorted(HARDWARE))
    drawn_framing = rng.choice(spec.family.framings)
    hw = get_hardware(hardware or drawn_hw)
    chosen = framing or drawn_framing
    if chosen not in spec.family.framings:
        raise ValueError(f"unknown framing {chosen!r} for {family_key!r}")
    for _ in range(_MAX_DRAWS):
        given = spec.sample(rng, hw, chosen)
        problem = build_problem(family_key, chosen, given, hardware=hw.key, seed=int(seed))
        # A speedup of 1.03x would let "1" (no gain) pass a 5 % tolerance: draw again. An exact
        # 1.0x (nothing to gain, e.g. a GPU-bound step under CUDA graphs) is a lesson and stays.
        if not (problem.unit == "×" and 1.0 + 1e-9 < problem.answer < _MIN_SPEEDUP):
            break
    return problem
