"""Independent reader #2: Holistic Trace Analysis (HTA 0.5.0) on per-rank Kineto files.

``summarize(folder)`` loads ``rank-*.json`` with ``TraceAnalysis`` and runs the analyses the
scenarios are convicted by, returning plain numbers (no DataFrames) so tests can cache them.
Per-step GPU idle is computed from HTA's own parsed DataFrames (after its ts/dur rounding),
because HTA 0.5.0's temporal breakdown is whole-trace only.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@dataclass
class HtaSummary:
    ranks: list[int]
    steps: list[int]
    temporal: dict[int, dict[str, float]]  # rank -> idle/compute/non_compute pct + times (us)
    overlap: dict[int, float]  # rank -> comp_comm_overlap_pctg (nan when no comm)
    stragglers: list[int] | None
    straggler_error: str | None
    launch: dict[int, dict[str, float]]  # rank -> n, frac gpu<cpu, medians
    kernel_types: dict[str, float]  # kernel_type -> percentage (all ranks pooled)
    kernels: list[dict[str, Any]]  # per (rank, kernel): name, sum, mean, kernel_type
    idle: dict[tuple[int, int], dict[str, float]]  # (rank, stream) -> category -> us
    step_idle: dict[int, list[float]]  # rank -> per-step GPU idle fraction (0..1)
    step_ms: dict[int, list[float]]  # rank -> ProfilerStep durations (ms)
    nccl_durations: dict[int, list[float]]  # rank -> comm kernel durations (us), in order
    errors: dict[str, str] = field(default_factory=dict)


def _quiet():
    stack = contextlib.ExitStack()
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore")
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    logging.getLogger("hta").setLevel(logging.ERROR)
    return stack


def _merged_busy(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    busy = 0.0
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        s, e = max(s, lo), min(e, hi)
        if e <= s:
            continue
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                busy += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        busy += cur_e - cur_s
    return busy


def load(folder: str | Path):
    """HTA's TraceAnalysis, parsed in this process.

    TraceAnalysis() always parses ranks in a fork()ed multiprocessing pool; forking a test process
    that already runs threads (Django's live server, Playwright) can deadlock the children, so the
    ranks are parsed serially here (the analyses are the same)."""
    from hta.common.trace import Trace
    from hta.trace_analysis import TraceAnalysis

    with _quiet():
        ta = TraceAnalysis.__new__(TraceAnalysis)
        ta.t = Trace(trace_dir=str(folder))
        ta.t.load_traces(include_last_profiler_step=False, use_multiprocessing=False)
        return ta


def summarize(folder: str | Path) -> HtaSummary:
    ta = load(folder)
    errors: dict[str, str] = {}
    with _quiet():
        ranks = sorted(int(r) for r in ta.t.traces)
        steps = [int(s) for s in ta.get_profiler_steps()]

        temporal = {}
        try:
            tb = ta.get_temporal_breakdown(visualize=False)
            for row in tb.to_dict("records"):
                temporal[int(row["rank"])] = {k: float(v) for k, v in row.items() if k != "rank"}
        except Exception as exc:  # a reader crash is a finding, keep going
            errors["temporal"] = repr(exc)

        overlap = {}
        try:
            ov = ta.get_comm_comp_overlap(visualize=False)
            overlap = {int(r["rank"]): float(r["comp_comm_overlap_pctg"]) for _, r in ov.iterrows()}
        except Exception as exc:
            errors["overlap"] = repr(exc)

        stragglers: list[int] | None = None
        straggler_error = None
        try:
            stragglers = [int(r) for r in ta.get_potential_stragglers(num_candidates=1)]
        except Exception as exc:
            straggler_error = repr(exc)

        launch = {}
        try:
            stats = ta.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
            for rank, df in stats.items():
                n = len(df)
                launch[int(rank)] = {
                    "n": float(n),
                    "frac_gpu_lt_cpu": float((df["gpu_duration"] < df["cpu_duration"]).mean())
                    if n
                    else math.nan,
                    "median_cpu_us": float(df["cpu_duration"].median()) if n else math.nan,
                    "median_gpu_us": float(df["gpu_duration"].median()) if n else math.nan,
                    "median_launch_delay_us": float(df["launch_delay"].median()) if n else math.nan,
                }
        except Exception as exc:
            errors["launch"] = repr(exc)

        kernel_types: dict[str, float] = {}
        kernels: list[dict[str, Any]] = []
        try:
            kt, kd = ta.get_gpu_kernel_breakdown(visualize=False, num_kernels=1000)
            kernel_types = {str(r["kernel_type"]): float(r["percentage"]) for _, r in kt.iterrows()}
            kernels = [
                {
                    "rank": int(r["rank"]),
                    "name": str(r["name"]),
                    "kernel_type": str(r["kernel_type"]),
                    "sum_us": float(r["sum (us)"]),
                    "mean_us": float(r["mean (us)"]),
                }
                for _, r in kd.iterrows()
            ]
        except Exception as exc:
            errors["kernel_breakdown"] = repr(exc)

        idle: dict[tuple[int, int], dict[str, float]] = {}
        try:
            ib, _ = ta.get_idle_time_breakdown(ranks=ranks, visualize=False)
            for _, r in ib.iterrows():
                idle.setdefault((int(r["rank"]), int(r["stream"])), {})[str(r["idle_category"])] = (
                    float(r["idle_time"])
                )
        except Exception as exc:
            errors["idle"] = repr(exc)

    step_idle: dict[int, list[float]] = {}
    step_ms: dict[int, list[float]] = {}
    nccl: dict[int, list[float]] = {}
    sym = ta.t.symbol_table
    names = sym.get_sym_table()
    for rank in ranks:
        df = ta.t.get_trace(rank)
        name = df["name"].map(lambda i: names[i] if 0 <= i < len(names) else "")
        cat = df["cat"].map(lambda i: names[i] if 0 <= i < len(names) else "")
        steps_df = df[name.str.startswith("ProfilerStep#")].sort_values("ts")
        gpu = df[cat.isin(GPU_CATS) & (df["stream"] >= 0)]
        intervals = list(
            zip(gpu["ts"].astype(float), (gpu["ts"] + gpu["dur"]).astype(float), strict=True)
        )
        fr, ms = [], []
        for _, st in steps_df.iterrows():
            lo, hi = float(st["ts"]), float(st["ts"] + st["dur"])
            if hi <= lo:
                continue
            fr.append(1.0 - _merged_busy(intervals, lo, hi) / (hi - lo))
            ms.append((hi - lo) / 1000.0)
        step_idle[rank] = fr
        step_ms[rank] = ms
        comm = df[cat.isin(GPU_CATS) & name.str.startswith("nccl")].sort_values("ts")
        nccl[rank] = [float(d) for d in comm["dur"]]

    return HtaSummary(
        ranks=ranks,
        steps=steps,
        temporal=temporal,
        overlap=overlap,
        stragglers=stragglers,
        straggler_error=straggler_error,
        launch=launch,
        kernel_types=kernel_types,
        kernels=kernels,
        idle=idle,
        step_idle=step_idle,
        step_ms=step_ms,
        nccl_durations=nccl,
        errors=errors,
    )
