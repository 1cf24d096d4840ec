"""The reveal's evidence marks every instance of the signature: every step's loader wait on every
rank for starvation, every waiting rank's wait in every step for the straggler. Checked against
the generated events themselves (steps and slices read from the columns). Pure: no Django."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from scenarios import engine as E
from scenarios.engine.model import MAIN, NCCL


@functools.cache
def gen(slug: str, seed: int):
    return E.generate(slug, seed)


def _tid_events(tr, rank: int, tid: int | None, pred) -> list[tuple[float, float]]:
    """(start µs, end µs) of the events on ``rank`` (and ``tid``) whose name satisfies ``pred``."""
    c = tr.cols
    ids = np.array([pred(n) for n in tr.names], bool)
    m = (c["rank"] == rank) & ids[c["name"]]
    if tid is not None:
        m &= c["tid"] == tid
    return sorted(
        zip((c["ts"][m] / 1000).tolist(), ((c["ts"][m] + c["dur"][m]) / 1000).tolist(), strict=True)
    )


def _steps(tr, rank: int) -> list[tuple[float, float]]:
    return _tid_events(tr, rank, None, lambda n: n.startswith("ProfilerStep#"))


def _in_step(ev: dict, step: tuple[float, float]) -> bool:
    return step[0] - 1e-3 <= ev["start_us"] < step[1]


@pytest.mark.parametrize("seed", [1, 2, 3, 5])
def test_starvation_evidence_covers_every_step_on_every_rank(seed):
    tr = gen("input-starvation", seed)
    ev = tr.key.evidence
    for rank in sorted(set(tr.cols["rank"].tolist())):
        waits = _tid_events(tr, rank, MAIN, lambda n: n.startswith("enumerate(DataLoader)"))
        mine = [e for e in ev if e["rank"] == rank]
        for k, step in enumerate(_steps(tr, rank)):
            in_step = [w for w in waits if step[0] <= w[0] < step[1]]
            assert in_step, (seed, rank, k)  # starvation: every step waits for its batch
            marked = [e for e in mine if _in_step(e, step)]
            assert len(marked) == 1, (seed, rank, k, marked)
            longest = max(in_step, key=lambda w: w[1] - w[0])
            assert marked[0]["start_us"] == pytest.approx(longest[0], abs=1e-2)
            assert marked[0]["end_us"] == pytest.approx(longest[1], abs=1e-2)
            # the label states the wait it marks
            assert f"{(longest[1] - longest[0]) / 1000:.1f} ms" in marked[0]["label"]


@pytest.mark.parametrize("seed", [1, 2, 3, 5])
def test_straggler_evidence_marks_every_waiting_rank_in_every_step(seed):
    tr = gen("straggler", seed)
    f = tr.key.facts
    slow = f["slowest_rank"]
    ev = tr.key.evidence
    assert ev[0]["rank"] == slow and "compute" in ev[0]["label"]  # the cause comes first
    waits = ev[1:]
    assert all(e["rank"] != slow for e in waits)
    ranks = sorted(set(tr.cols["rank"].tolist()))
    assert {e["rank"] for e in waits} == set(ranks) - {slow}
    # a pipeline's fill and drain wait for the whole pipeline on every stage: there the marks
    # (and the comparison) are the receives of the steady state, all but the first and last
    # 2p NCCL kernels of a stage's step
    # (2 per chunk per stage: an interleaved schedule runs two model chunks per stage)
    chunks = 2 if "interleaved" in tr.prompt["workload"] else 1
    trim = 2 * tr.world * chunks if tr.family == "pp" else 0

    def nccl_in(rank, step):
        got = [x for x in _tid_events(tr, rank, NCCL, lambda n: True) if step[0] <= x[0] < step[1]]
        return got[trim : len(got) - trim]

    for rank in ranks:
        if rank == slow:
            continue
        for k, step in enumerate(_steps(tr, rank)):
            marked = [e for e in waits if e["rank"] == rank and _in_step(e, step)]
            in_step = nccl_in(rank, step)
            if not in_step:
                continue
            assert len(marked) == 1, (seed, rank, k)
            longest = max(x[1] - x[0] for x in in_step)
            assert marked[0]["end_us"] - marked[0]["start_us"] == pytest.approx(longest, abs=1e-2)

    # what a reader sees: the waiting ranks spend longer in their collectives than the slow
    # rank does (per step, in the steady state: in an interleaved pipeline the slow stage also
    # waits now and then, for its own chunks coming round the ring)
    def nccl_time(rank):
        return sum(x[1] - x[0] for step in _steps(tr, rank) for x in nccl_in(rank, step))

    waiting = [nccl_time(r) for r in ranks if r != slow]
    assert min(waiting) > nccl_time(slow), (waiting, nccl_time(slow))


@pytest.mark.parametrize("slug", ["input-starvation", "straggler"])
def test_evidence_labels_are_short_enough_for_the_lanes(slug):
    """One label per instance: short, so dozens of them still fit the viewer's label lanes."""
    for seed in (1, 2):
        labels = [e["label"] for e in gen(slug, seed).key.evidence]
        assert len(labels) >= 2 * 6  # every step of at least two ranks
        assert max(len(x) for x in labels[1:]) <= 20
