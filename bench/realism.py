"""Realism comparison (issue 12): the metrics of `real-trace-stats.md` on our generated traces,
beside the range measured on five real Kineto traces (Holistic Trace Analysis `tests/data`).

Each generated trace is exported per rank in the HTA/Kineto format (`engine.to_hta`), and every
metric is computed on each rank file the way it is computed on a real one; the table shows the
median over all rank files (with the 10th-90th percentile spread) and whether the median and the
spread sit inside the real range. A checklist of the qualitative features real traces have
follows (share of rank files that have each).

`--real FILE...` computes the same metrics on real Kineto traces (.json or .json.gz), which is
how the definitions here were checked against the real ranges: on the five HTA test traces they
give the page's figures (kernel CV = median over names with >= 5 launches; gaps over every GPU
event of a stream), except runtime API kinds 9-17 (the page says 8-15) and the name CV, 0.14-0.60
(the page's 0.22 is the lowest of three of them).

Usage: /work/main/.venv/bin/python bench/realism.py [--seeds N] [--scenarios a,b] [--hardware ...]
       /work/main/.venv/bin/python bench/realism.py --real rank0.json.gz ...
Exit status 1 when a metric's median falls outside the real range (training traces only).
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scenarios import engine  # noqa: E402

# (key, label, low, high, unit, fmt): the real range over the five traces
REAL: list[tuple[str, str, float, float, str]] = [
    ("cpu_op_per_kernel", "cpu_op events per kernel", 2.9, 6.8, ""),
    ("runtime_per_kernel", "cuda_runtime calls per kernel", 2.2, 6.3, ""),
    ("short_kernel_share", "kernels shorter than 5 µs", 0.28, 0.67, "%"),
    ("kernel_p10", "kernel duration p10", 1.8, 3.0, "µs"),
    ("kernel_p50", "kernel duration p50", 4.0, 28.0, "µs"),
    ("name_cv", "one kernel name's duration spread (CV, median)", 0.22, 0.60, ""),
    ("gap_p50", "gap between kernels on a stream p50", 0.75, 55.0, "µs"),
    ("gap_p90", "gap between kernels on a stream p90", 1.75, 298.0, "µs"),
    ("kernel_names", "distinct kernel names", 49, 170, ""),
    ("cpu_op_names", "distinct cpu_op names", 51, 176, ""),
    ("runtime_kinds", "runtime API kinds", 8, 15, ""),
    ("cpu_depth", "deepest CPU nesting", 6, 12, ""),
    ("launch_p50", "cudaLaunchKernel duration p50", 4.0, 10.0, "µs"),
    ("launch_p99", "cudaLaunchKernel duration p99", 17.0, 660.0, "µs"),
    ("launch_max", "cudaLaunchKernel duration max", 45.0, 7000.0, "µs"),
    ("cpu_threads", "CPU threads with events", 2, 6, ""),
    ("devprops_keys", "deviceProperties keys", 14, 14, ""),
    ("first_step", "first step number", 2, 1009, ""),
]
LAUNCH = ("cudaLaunchKernel", "hipLaunchKernel", "cudaLaunchKernelExC", "hipExtModuleLaunchKernel")
STEP = re.compile(r"ProfilerStep#(\d+)")
MARKETING = re.compile(r"\bSXM\b|\bPCIe\b| \d+GB$")  # "A100 SXM 80GB"; CUDA says "A100-SXM4-80GB"


def _is_gpu(ev: dict) -> bool:
    return ev.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")


def _max_depth(evs: list[dict]) -> int:
    """Deepest nesting of complete events on one CPU thread (1 = top level)."""
    evs = sorted(evs, key=lambda e: (e["ts"], -e.get("dur", 0)))
    stack: list[float] = []
    best = 0
    for e in evs:
        t0, t1 = e["ts"], e["ts"] + e.get("dur", 0)
        while stack and stack[-1] <= t0:
            stack.pop()
        stack.append(t1)
        best = max(best, len(stack))
    return best


def _pct(a: list[float], q: float) -> float:
    return float(np.percentile(a, q)) if a else float("nan")


def metrics(doc: dict) -> dict[str, float]:
    """The table's metrics on one Kineto trace (one rank's file)."""
    evs = [e for e in doc.get("traceEvents", []) if e.get("ph") == "X"]
    by_cat: dict[str, list[dict]] = defaultdict(list)
    for e in evs:
        by_cat[str(e.get("cat", ""))].append(e)
    kern = by_cat.get("kernel", [])
    nk = max(len(kern), 1)
    kd = [float(e.get("dur", 0)) for e in kern]
    out: dict[str, float] = {
        "cpu_op_per_kernel": len(by_cat.get("cpu_op", [])) / nk,
        "runtime_per_kernel": len(by_cat.get("cuda_runtime", [])) / nk,
        "short_kernel_share": float(np.mean(np.array(kd) < 5.0)) if kd else float("nan"),
        "kernel_p10": _pct(kd, 10),
        "kernel_p50": _pct(kd, 50),
        "kernel_names": len({e["name"] for e in kern}),
        "cpu_op_names": len({e["name"] for e in by_cat.get("cpu_op", [])}),
        "runtime_kinds": len(
            {e["name"] for e in by_cat.get("cuda_runtime", []) + by_cat.get("cuda_driver", [])}
        ),
    }
    per_name: dict[str, list[float]] = defaultdict(list)
    for e in kern:
        per_name[e["name"]].append(float(e.get("dur", 0)))
    cvs = [np.std(v) / np.mean(v) for v in per_name.values() if len(v) >= 5 and np.mean(v) > 0]
    out["name_cv"] = float(np.median(cvs)) if cvs else float("nan")
    # gaps between consecutive GPU events (kernels, copies, memsets) on one stream, overlap = 0
    streams: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for e in evs:
        if not _is_gpu(e):
            continue
        streams[(e.get("pid"), e.get("tid"))].append((float(e["ts"]), float(e.get("dur", 0))))
    gaps: list[float] = []
    for lst in streams.values():
        lst.sort()
        a = np.array(lst)
        if len(a) > 1:
            gaps += np.maximum(a[1:, 0] - (a[:-1, 0] + a[:-1, 1]), 0.0).tolist()
    out["gap_p50"] = _pct(gaps, 50)
    out["gap_p90"] = _pct(gaps, 90)
    launches = [
        float(e.get("dur", 0)) for e in by_cat.get("cuda_runtime", []) if e["name"] in LAUNCH
    ]
    out["launch_p50"] = _pct(launches, 50)
    out["launch_p99"] = _pct(launches, 99)
    out["launch_max"] = max(launches) if launches else float("nan")
    cpu_threads: dict[tuple, list[dict]] = defaultdict(list)
    for e in evs:
        if not _is_gpu(e) and e.get("cat") in ("cpu_op", "user_annotation", "cuda_runtime"):
            cpu_threads[(e.get("pid"), e.get("tid"))].append(e)
    out["cpu_threads"] = len(cpu_threads)
    out["cpu_depth"] = max(
        (
            _max_depth([e for e in v if e.get("cat") != "cuda_runtime"])
            for v in cpu_threads.values()
        ),
        default=0,
    )
    props = doc.get("deviceProperties") or [{}]
    out["devprops_keys"] = len(props[0])
    steps = [int(m.group(1)) for e in evs if (m := STEP.match(str(e.get("name", ""))))]
    out["first_step"] = min(steps) if steps else float("nan")
    return out


def checklist(doc: dict, vendor: str = "") -> dict[str, bool]:
    """Qualitative features of real traces (real-trace-stats.md, 'easy to miss')."""
    evs = doc.get("traceEvents", [])
    names = {str(e.get("name", "")) for e in evs}
    cats = {str(e.get("cat", "")) for e in evs}
    threads = {
        str(e.get("args", {}).get("name", "")) for e in evs if e.get("name") == "thread_name"
    }
    kernels = {str(e.get("name", "")) for e in evs if e.get("cat") == "kernel"}
    nccl_v = str((doc.get("distributedInfo") or {}).get("nccl_version", ""))
    new_nccl = bool(re.match(r"2\.(19|[2-9]\d)", nccl_v))
    nccl_k = [k for k in kernels if k.startswith("nccl")]
    props = (doc.get("deviceProperties") or [{}])[0]
    out = {
        "aten::empty in the op forest": "aten::empty" in names,
        "AccumulateGrad ops": any("AccumulateGrad" in n for n in names),
        "backward on an autograd thread": any("autograd" in t for t in threads),
        "fwdbwd flow events": "fwdbwd" in cats,
        "ac2g flow events": "ac2g" in cats,
        "cudaEventRecord / cudaStreamWaitEvent": bool(
            {"cudaEventRecord", "cudaStreamWaitEvent", "hipEventRecord", "hipStreamWaitEvent"}
            & names
        ),
        "cudaEventQuery (NCCL watchdog)": bool({"cudaEventQuery", "hipEventQuery"} & names),
        "PyTorch Profiler span": any(n.startswith("PyTorch Profiler") for n in names),
        "Iteration Start / Record Window End instants": {"Iteration Start", "Record Window End"}
        <= names,
        "deviceProperties name as CUDA reports it": bool(props.get("name"))
        and not MARKETING.search(str(props.get("name", ""))),
        "NCCL kernel names match nccl_version": bool(nccl_k)
        and all(k.startswith("ncclDevKernel") == new_nccl for k in nccl_k),
        "no DataLoader worker rows": not any("data_worker" in t for t in threads),
    }
    if vendor == "amd":
        out["hipExtModuleLaunchKernel for ROCm GEMMs"] = "hipExtModuleLaunchKernel" in names
    return out


def _load(path: str) -> dict:
    raw = Path(path).read_bytes()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    return orjson.loads(raw)


def _fmt(v: float, unit: str) -> str:
    if v != v:
        return "-"
    if unit == "%":
        return f"{v:.0%}"
    return f"{v:.3g}"


def _real_cell(lo: float, hi: float, unit: str) -> str:
    if lo == hi:
        return _fmt(lo, unit)
    return f"{_fmt(lo, unit)} – {_fmt(hi, unit)}"


def report(rows: list[dict[str, float]], title: str) -> int:
    print(title)
    print(f"{'metric':50} {'real':>14} {'ours p50':>9} {'ours p10–p90':>16}  verdict")
    missed = 0
    for key, label, lo, hi, unit in REAL:
        vals = [r[key] for r in rows if r.get(key) == r.get(key)]
        if not vals:
            print(f"{label:50} {_real_cell(lo, hi, unit):>14} {'-':>9} {'':>16}  no data")
            missed += 1
            continue
        med = float(np.median(vals))
        p10, p90 = float(np.percentile(vals, 10)), float(np.percentile(vals, 90))
        inside = lo <= med <= hi
        spread_in = lo <= p10 and p90 <= hi
        verdict = "in" if inside and spread_in else ("in (median)" if inside else "OUT")
        missed += not inside
        sp = f"{_fmt(p10, unit)} – {_fmt(p90, unit)}"
        print(f"{label + (' (' + unit + ')' if unit not in ('', '%') else ''):50} "
              f"{_real_cell(lo, hi, unit):>14} {_fmt(med, unit):>9} {sp:>16}  {verdict}")  # fmt: skip  # noqa: E501
    return missed


def _generated(
    slugs: list[str], seeds: int, hws: list[str], progress: Callable[[int, int], None]
) -> tuple[list[dict[str, float]], dict[str, list[bool]], dict[str, list[dict[str, float]]]]:
    rows: list[dict[str, float]] = []
    checks: dict[str, list[bool]] = defaultdict(list)
    by_scen: dict[str, list[dict[str, float]]] = defaultdict(list)
    n, total = 0, len(slugs) * seeds
    base_times: list[int] = []
    for slug in slugs:
        for i in range(seeds):
            hw = hws[i % len(hws)]
            tr = engine.generate(slug, 5000 + i, hardware=hw)
            files = engine.to_hta(tr)
            vendor = tr.hw.vendor
            for r in sorted(files)[:2]:  # rank 0 and 1: the rest repeat them
                doc = files[r]
                m = metrics(doc)
                m["_scenario"] = slug  # type: ignore[assignment]
                rows.append(m)
                by_scen[slug].append(m)
                for k, v in checklist(doc, vendor).items():
                    checks[k].append(v)
            base_times.append(int(files[0].get("baseTimeNanoseconds", 0)))
            n += 1
            progress(n, total)
    checks["baseTimeNanoseconds differs per trace"] = [len(set(base_times)) == len(base_times)]
    return rows, checks, by_scen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seeds", type=int, default=4, help="traces per scenario (4)")
    ap.add_argument("--scenarios", default="", help="comma-separated slugs (default: all)")
    ap.add_argument("--hardware", default="", help="comma-separated (default: all, cycled)")
    ap.add_argument("--real", nargs="*", help="compute the metrics on these real Kineto files")
    a = ap.parse_args(argv)
    if a.real:
        rows = []
        for p in a.real:
            m = metrics(_load(p))
            rows.append(m)
            print(p)
            print("   " + ", ".join(f"{k}={v:.3g}" for k, v in m.items()))
        report(rows, "\nreal traces given:")
        return 0
    slugs = [s for s in a.scenarios.split(",") if s] or list(engine.SCENARIOS)
    hws = [h for h in a.hardware.split(",") if h] or list(engine.HARDWARE)

    def progress(i: int, n: int) -> None:
        print(f"\r  generated {i}/{n} traces", end="" if i < n else "\n", file=sys.stderr)

    rows, checks, by_scen = _generated(slugs, a.seeds, hws, progress)
    missed = report(
        rows,
        f"realism: {len(rows)} rank files (ranks 0-1) of {len(slugs) * a.seeds} traces "
        f"({a.seeds} per scenario, hardware {', '.join(hws)}), generator v"
        f"{getattr(engine, 'GENERATOR_VERSION', '?')}; real = range over five real traces\n",
    )
    print("\nper scenario (median): " + ", ".join(k for k, *_ in REAL[:9]))
    for slug, rs in by_scen.items():
        cells = []
        for key, _l, lo, hi, unit in REAL[:9]:
            v = float(np.median([r[key] for r in rs if r[key] == r[key]] or [float("nan")]))
            cells.append(_fmt(v, unit) + ("" if lo <= v <= hi else "*"))
        print(f"  {slug:28} " + "  ".join(f"{c:>7}" for c in cells))
    print("  (* outside the real range)")
    print("\nwhat real traces have (share of rank files that have it):")
    for k, v in checks.items():
        share = float(np.mean(v)) if v else 0.0
        print(f"  {share:>5.0%}  {k}")
    print()
    print(f"{missed} of {len(REAL)} metrics outside the real range" if missed else "all in range")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
