"""Pipeline traces pair their sends and receives the way NCCL point-to-point does: a send and
its matching receive rendezvous (neither ends before both have started, and both end together),
each stage's NCCL stream runs one kernel at a time, and every step runs to the end. Pure: no
Django."""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict

import numpy as np
import orjson
import pytest

from scenarios import engine as E
from scenarios.engine.catalog import HOSTS
from scenarios.engine.model import C_ANN, C_KERN, C_RT, MAIN, NCCL
from scenarios.engine.workloads import _pp_peers, _pp_schedule, pp_stage_flow

PP_SCENARIOS = sorted(s for s, hosts in HOSTS.items() if "pp" in hosts)
HARDWARE = ("h100", "mi300x")


def _pp_seeds(slug: str, n: int) -> list[int]:
    """The first `n` seeds that draw the pipeline family for `slug`."""
    return [s for s in range(200) if E._family_for((slug,), s) == "pp"][:n]


@functools.cache
def gen(slug: str, seed: int, hardware: str):
    return E.generate(slug, seed, hardware=hardware)


def _hops(tr) -> tuple[np.ndarray, dict]:
    """Every send kernel with the receive it pairs with, read from the trace: a send carries
    the block it is launched after (a forward's activations to the next stage, a backward's
    gradients to the previous one); a stage launches its receives in its schedule's order
    (which may post one early, before an earlier op's send), so the k-th receive of a step is
    the k-th op of the schedule that receives. On each link the k-th send pairs with the k-th
    receive. Rows: send start, send end, receive start, receive end (ns); also each rank's
    NCCL kernels (start, end)."""
    c, P = tr.cols, tr.world
    names = np.array(tr.names, dtype=object)
    v = 2 if "2 model chunks" in tr.prompt["workload"] else 1
    names_l = tr.names
    n_fwd = sum(names_l[n] == "## forward ##" for n in c["name"][c["rank"] == 0].tolist())
    n_steps = sum(
        names_l[n].startswith("ProfilerStep#") for n in c["name"][c["rank"] == 0].tolist()
    )
    orders, _deps, recv, _send = _pp_schedule(P, n_fwd // n_steps // v, v)
    # per stage, whether each op that receives is a forward (its data from the previous stage)
    r_dirs = [[f for (f, _u), rc in zip(orders[s], recv[s], strict=True) if rc] for s in range(P)]
    links: dict[tuple, list] = defaultdict(list)
    streams = {}
    for r in range(P):
        on = c["rank"] == r
        ann = np.flatnonzero(on & (c["tid"] == MAIN) & (c["cat"] == C_ANN))
        blk = [i for i in ann if names[c["name"][i]] in ("## forward ##", "## backward ##")]
        bts = c["ts"][blk]
        bfwd = np.array([names[c["name"][i]] == "## forward ##" for i in blk])
        launch = on & (c["cat"] == C_RT) & (c["corr"] > 0)
        launched = dict(zip(c["corr"][launch].tolist(), c["ts"][launch].tolist(), strict=True))
        ks = np.flatnonzero(on & (c["tid"] == NCCL) & (c["cat"] == C_KERN))
        streams[r] = np.stack([c["ts"][ks], c["ts"][ks] + c["dur"][ks]], axis=1)
        rows = []
        for i in ks:
            kind = tr.args[c["aid"][i]]["Collective name"]
            lt = launched[int(c["corr"][i])]
            rows.append((lt, kind, int(c["ts"][i]), int(c["ts"][i] + c["dur"][i])))
        recvs = [(a, b) for lt, kind, a, b in sorted(rows) if kind == "recv"]
        for k, (a, b) in enumerate(recvs):
            fwd = r_dirs[r][k % len(r_dirs[r])]
            links[((r - 1) % P if fwd else (r + 1) % P, r, fwd, "recv")].append((a, b))
        for lt, kind, a, b in sorted(rows):
            if kind == "send":
                fwd = bool(bfwd[np.searchsorted(bts, lt) - 1])
                links[(r, (r + 1) % P if fwd else (r - 1) % P, fwd, "send")].append((a, b))
    out = []
    for (a, b, fwd, kind), sends in links.items():
        if kind == "send":
            recvs = links[(a, b, fwd, "recv")]
            assert len(recvs) == len(sends), (a, b, fwd)
            out += [s + r for s, r in zip(sends, recvs, strict=True)]
    return np.array(out, np.int64), streams


CASES = [(s, seed, hw) for s in PP_SCENARIOS for seed in _pp_seeds(s, 2) for hw in HARDWARE]


def test_every_pipeline_scenario_is_covered():
    # the scenarios that can be drawn on a pipeline, each with a plain and an interleaved draw
    assert {"pipeline-bubbles", "straggler", "sync-stalls", "healthy"} <= set(PP_SCENARIOS)
    kinds = {"interleaved" in gen(s, seed, hw).prompt["workload"] for s, seed, hw in CASES}
    assert kinds == {True, False}


@pytest.mark.parametrize(("slug", "seed", "hw"), CASES)
def test_sends_and_receives_rendezvous(slug, seed, hw):
    tr = gen(slug, seed, hw)
    hops, streams = _hops(tr)
    ss, se, rs, re = hops.T
    assert len(hops) > 0
    # neither side of a hop finishes before the other has started, and both end together
    assert (rs <= se).all(), f"{int((rs > se).sum())} receives start after their send ended"
    assert (ss <= re).all(), f"{int((ss > re).sum())} sends start after their receive ended"
    assert np.abs(se - re).max() <= 1000
    # one kernel at a time on each stage's NCCL stream
    for r, k in streams.items():
        k = k[np.argsort(k[:, 0], kind="stable")]
        assert (k[1:, 0] >= k[:-1, 1]).all(), f"rank {r}: NCCL kernels overlap"
    # a receive posted early sits on the CPU before the send it overtook: the main thread's
    # annotations never overlap, and correlation ids follow the launch order
    c = tr.cols
    for r in range(tr.world):
        on = np.flatnonzero((c["rank"] == r) & (c["tid"] == MAIN) & (c["depth"] == 1))
        on = on[np.argsort(c["ts"][on], kind="stable")]
        assert (c["ts"][on][1:] >= (c["ts"] + c["dur"])[on][:-1]).all()
        la = np.flatnonzero((c["rank"] == r) & (c["cat"] == C_RT) & (c["corr"] > 0))
        la = la[np.argsort(c["ts"][la], kind="stable")]
        assert (np.diff(c["corr"][la]) > 0).all()
    # every step runs every block on every stage, and the key reads a step time
    names = tr.names
    n_blk = sum(names[n] in ("## forward ##", "## backward ##") for n in c["name"].tolist())
    step = np.array([names[n].startswith("ProfilerStep#") for n in c["name"].tolist()])
    n_steps = int(step.sum()) // tr.world
    assert n_steps >= 2 and n_blk % (2 * tr.world * n_steps) == 0
    assert tr.key.step_ms > 0


@pytest.mark.parametrize(("slug", "seed", "hw"), CASES)
def test_a_stage_that_finishes_early_waits_in_the_loss_broadcasts_kernel(slug, seed, hw):
    """At the end of every step each stage takes the loss from the last one: its host waits in
    `nccl:broadcast` (launch, then a stream synchronize), and the wait shows on the GPU as the
    broadcast's kernel on the NCCL stream. On the ring the float goes from the root (the last
    stage) to stage 0, 1, …: the root's kernel ends as soon as it starts, and every other
    stage's once all the stages before it on the ring have joined. (The wait used to be a host
    annotation with no kernel behind it; then a kernel that held every stage, the root
    included, until the last had joined.)"""
    tr = gen(slug, seed, hw)
    c, names = tr.cols, tr.names
    n_steps = sum(names[n].startswith("ProfilerStep#") for n in c["name"][c["rank"] == 0].tolist())
    starts, ends = [], []
    for r in range(tr.world):
        on = c["rank"] == r
        ann = np.flatnonzero(on & (c["tid"] == MAIN) & (c["cat"] == C_ANN))
        ann = [i for i in ann if names[c["name"][i]] == "nccl:broadcast"]
        ann.sort(key=lambda i: c["ts"][i])
        ks = np.flatnonzero(on & (c["tid"] == NCCL) & (c["cat"] == C_KERN))
        bks = [i for i in ks if tr.args[c["aid"][i]]["Collective name"] == "broadcast"]
        bks.sort(key=lambda i: c["ts"][i])
        assert len(ann) == len(bks) == n_steps, (r, len(ann), len(bks))
        assert all("Broadcast" in names[c["name"][i]] for i in bks)
        launch = np.flatnonzero(on & (c["cat"] == C_RT) & (c["corr"] > 0))
        by_corr = {int(c["corr"][i]): i for i in launch}
        for a, k in zip(ann, bks, strict=True):
            a0, a1 = int(c["ts"][a]), int(c["ts"][a] + c["dur"][a])
            k0, k1 = int(c["ts"][k]), int(c["ts"][k] + c["dur"][k])
            lt = int(c["ts"][by_corr[int(c["corr"][k])]])
            assert a0 < lt < k0 < k1 < a1  # launched inside the wait, which outlasts the kernel
            assert a1 - k1 < 20_000  # the host leaves as soon as the kernel is done
        starts.append([int(c["ts"][k]) for k in bks])
        ends.append([int(c["ts"][k] + c["dur"][k]) for k in bks])
    k0, k1 = np.array(starts), np.array(ends)  # (stage, step)
    P = tr.world
    ring = [P - 1, *range(P - 1)]
    joined = np.maximum.accumulate(k0[ring], axis=0)  # every stage up to it on the ring is in
    # no stage leaves before the stages ahead of it have joined, nor lingers past it
    assert (k1[ring] >= joined).all()
    # ... each one hop (a few µs) after the stage before it on the ring
    assert (np.diff(k1[ring], axis=0) > 0).all()
    lag = k1[ring] - np.maximum(joined, k0[ring])
    assert (lag < 15_000 + 7_000 * np.arange(P)[:, None]).all()
    assert (k1[P - 1] - k0[P - 1] < 20_000).all()  # the root only sends
    # stage 0 runs the step's last backward, so some stage waits for it, visibly, every step
    assert ((k1 - k0)[: P - 1].max(0) > 100_000).all()


def _flow(P: int, m: int, v: int, rng: np.random.Generator) -> tuple[dict, list, list]:
    """One step of the schedule's flow with random block and hop times (ns)."""
    orders, deps, recv, send = _pp_schedule(P, m, v)
    peer = _pp_peers(orders, deps, recv, send)
    J = len(orders[0])
    blk = rng.integers(200_000, 900_000, (P, J)).tolist()
    xfer = rng.integers(5_000, 400_000, (P, J)).tolist()
    step = [[(j + 1) * 1_000_000 for j in range(J)] for _ in range(P)]

    def block(s: int, j: int, f0: int, sh: int) -> tuple[int, int]:
        return max(f0, step[s][j] - 900_000 + sh) + blk[s][j], 0

    lay = {
        "rc0": [[(x - 1_000_000) for x in row] for row in step],
        "sc0": [[x - 50_000 for x in row] for row in step],
        "rdel": [[7_000] * J for _ in range(P)],
        "sdel": [[7_000] * J for _ in range(P)],
        "r_len": [[24_000 if recv[s][j] else 0 for j in range(J)] for s in range(P)],
    }
    fl = pp_stage_flow(peer, send, block, lay, xfer, [0] * P, [0] * P)
    return fl, peer, recv


# every shape a pipeline job draws: plain 1F1B healthy and bubbly (and the fix's doubled
# count), interleaved with m = p, 2p (fixed) and 3p
SHAPES = [(4, m, 1) for m in (2, 3, 4, 6, 8, 25, 27)] + [(6, m, 1) for m in (3, 6, 12, 43)]
SHAPES += [(P, k * P, 2) for P in (4, 6) for k in (1, 2, 3)]


@pytest.mark.parametrize("shape", SHAPES)
def test_posting_order_never_deadlocks(shape):
    """Whatever the block and hop times, the stages' posting order lets every hop through:
    each pair ends together, no later than max(starts) + its transfer, and each receive lands
    before the block that needs it starts."""
    P, m, v = shape
    rng = np.random.default_rng(P * 1000 + m * 10 + v)
    for _ in range(3):
        fl, peer, recv = _flow(P, m, v, rng)
        for r in range(P):
            for j, pr in enumerate(peer[r]):
                if pr is None:
                    continue
                s, js = pr
                (rs, re), (ss, se) = fl["RK"][r][j], fl["SK"][s][js]
                assert re == se and max(rs, ss) < re
                assert fl["F0"][r][j] >= re  # the block waits for its data
        for s in range(P):
            ks = sorted(k for j in range(len(peer[s])) for k in (fl["RK"][s][j], fl["SK"][s][j]))
            ks = [k for k in ks if k != (0, 0)]
            assert all(b[0] >= a[1] for a, b in itertools.pairwise(ks))
        assert sum(map(sum, recv)) == sum(k != (0, 0) for row in fl["SK"] for k in row)


def test_each_stages_profiler_span_covers_its_own_window():
    """Each rank's Kineto file carries the profiler's span and instants of its own capture: a
    pipeline's last stage opens its window before the others' (it starts each step early), so
    every rank's span starts 1 ms before its own first event and ends 0.5 ms after its last."""
    tr = gen("healthy", 7, "mi300x")
    assert tr.family == "pp"
    opens = []
    for r, raw in E.hta_bytes(tr).items():
        ev = orjson.loads(raw)["traceEvents"]
        span = next(e for e in ev if e.get("name") == "PyTorch Profiler (0)")
        mine = [e for e in ev if e.get("ph") == "X" and e.get("cat") != "Trace"]
        first = min(e["ts"] for e in mine)
        last = max(e["ts"] + e["dur"] for e in mine)
        assert abs(first - span["ts"] - 1000) < 0.01, (r, first, span["ts"])
        assert abs(span["ts"] + span["dur"] - last - 500) < 0.01, (r, last, span)
        opens.append(span["ts"])
    assert opens[-1] < min(opens[:-1]) - 1000  # the last stage's window opens first
