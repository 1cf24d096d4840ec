"""The counterfactual twin and contrast pairs (issue 17): `generate(..., fixed=True)` is the same
trace with the fix applied, and its measured step time is what the answer key promised;
`generate_pair` injects two scenarios into one workload draw. Pure: no Django."""

from __future__ import annotations

import numpy as np
import pytest

from scenarios import engine as E
from scenarios.engine.catalog import FAMILY_WEIGHTS, HOSTS

SLUGS = list(E.SCENARIOS)
FIX_SEEDS = range(100, 112)
# how far the fixed twin's step may sit from the key's prediction, per scenario: the largest
# deviation measured over seeds 100-123 plus a margin. Straggler, input starvation and the
# bandwidth-bound collective model the per-step slowest rank (max 1.1, 2.7 %, and 2.6 % for the
# collective over seeds 100-135 since generator 26); the rest still carry gaps of up to 2.3-4.3 %
# that their keys do not model yet.
FIX_TOL = {
    "straggler": 0.02,
    "input-starvation": 0.03,
    "bandwidth-bound-collective": 0.03,
    "exposed-allreduce": 0.03,
    # 5-7 steps per trace, 2-3 of them compiling: a mean over few steady steps (max 4.4 %, seed
    # 111, over seeds 100-123)
    "recompilation": 0.05,
    "healthy": 0.005,
    # allocator stalls: data-parallel keys replay the all-reduce meeting without the stalls
    # (within 0.2 % over seeds 100-160); one GPU and pipelines keep the twin's own noise and a
    # pipeline's fill hides part of a later stage's stall (up to 3.3 %): the default 5 %
}
# a pipeline's straggler: the key takes the slow stage's extra compute off the step, but part of
# it hides in the waits a balanced pipeline has anyway (its stages idle a little between
# microbatches as their times vary): the fixed twin runs up to ~4.5 % slower than predicted
FIX_TOL_FAMILY = {("straggler", "pp"): 0.05}
# pipeline bubbles: halving microbatches of 2-4k tokens costs a few per cent the key does not
# model (each kernel's fixed cost, p2p latency per transfer, twice the input copies, and twice
# the hops whose transfer waits for a receive posted late), up to 7.1 % over seeds 100-111
FIX_TOL["pipeline-bubbles"] = 0.08


@pytest.mark.parametrize("slug", SLUGS)
def test_fixed_twin_runs_at_the_keys_expected_step_time(slug):
    """The reveal's arithmetic is proven by the engine: fixing the problem in the same trace
    gives the step time the key predicted, within the scenario's tolerance (at most 5 %), on
    every seed."""
    misses = []
    for seed in FIX_SEEDS:
        tr = E.generate(slug, seed)
        fx = E.generate(slug, seed, fixed=True)
        tol = FIX_TOL_FAMILY.get((slug, tr.family), FIX_TOL.get(slug, 0.05))
        assert fx.fixed and not tr.fixed
        assert fx.scenario == slug and fx.seed == seed
        assert (fx.hardware, fx.world, fx.prompt) == (tr.hardware, tr.world, tr.prompt)
        err = fx.key.step_ms / tr.key.expected_step_ms - 1
        if abs(err) > tol:
            misses.append((seed, tr.hardware, tr.family, tr.key.step_ms,
                           tr.key.expected_step_ms, fx.key.step_ms))  # fmt: skip
    assert not misses, misses


@pytest.mark.parametrize("slug", [s for s in SLUGS if s != "healthy"])
def test_fixed_twin_loses_the_signature(slug):
    """The fixed twin is read as healthy: nothing to fix, and faster than the original."""
    tr, fx = E.generate(slug, 101), E.generate(slug, 101, fixed=True)
    assert fx.key.fix == "none" and fx.key.expected_step_ms == fx.key.step_ms
    assert fx.key.step_ms < tr.key.step_ms
    sig = E.signature_of(slug)
    if sig.names:  # the signature's events go (or, where healthy jobs have a few, thin out,
        # or, where every job has them, as a data loader's fetches, take less of the step)

        def n_sig(t):
            ids = [i for i, n in enumerate(t.names) if n.startswith(sig.names)]
            return int(np.isin(t.cols["name"], ids).sum())

        def share_sig(t):
            ids = [i for i, n in enumerate(t.names) if n.startswith(sig.names)]
            return float(t.cols["dur"][np.isin(t.cols["name"], ids)].sum()) / t.key.step_ms

        assert n_sig(fx) < n_sig(tr) or share_sig(fx) < 0.75 * share_sig(tr), slug


def test_healthy_fixed_is_itself():
    a, b = E.generate("healthy", 5), E.generate("healthy", 5, fixed=True)
    assert a.key.step_ms == b.key.step_ms and a.n_events == b.n_events


@pytest.mark.parametrize("seed", range(20, 26))
def test_one_seed_one_workload_for_every_scenario(seed):
    """The workload line, hardware, world and framing follow the seed, not the scenario, for
    every scenario the seed's workload family hosts."""
    healthy = E.generate("healthy", seed)
    fam = healthy.family
    for slug in SLUGS:
        if fam not in HOSTS[slug]:
            continue
        tr = E.generate(slug, seed)
        assert tr.family == fam
        assert (tr.hardware, tr.world, tr.framing) == (healthy.hardware, healthy.world,
                                                       healthy.framing)  # fmt: skip
        assert tr.prompt == healthy.prompt, slug


@pytest.mark.parametrize("slug", SLUGS)
def test_a_scenario_lands_in_its_families_as_often_as_healthy_does(slug):
    """Among the families a scenario can happen in, it lands in each as often as a healthy job
    does relative to the others: the family says nothing of the scenario beyond that. (Exposed
    all-reduce jobs once were compiled three times as often as not, where healthy DDP jobs are
    compiled half the time, so "torch.compile" leaned towards the exposed all-reduce.)"""
    n = 4000
    drawn = [E._family_for((slug,), seed) for seed in range(n)]
    mass = sum(FAMILY_WEIGHTS[f] for f in HOSTS[slug])
    for fam in HOSTS[slug]:
        assert drawn.count(fam) / n == pytest.approx(FAMILY_WEIGHTS[fam] / mass, abs=0.01), fam
    assert set(drawn) == set(HOSTS[slug])


PAIRS = [*E.lookalike_pairs(), ("input-starvation", "sync-stalls"),
         ("sync-stalls", "allocator-stalls"), ("launch-bound", "memory-bound-kernel"),
         ("exposed-allreduce", "bandwidth-bound-collective"),
         *(("healthy", s) for s in SLUGS if s != "healthy")]  # fmt: skip


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}|{p[1]}")
def test_pair_shares_the_workload_and_differs_in_the_signature(pair):
    a, b = pair
    common = set(HOSTS[a]) & set(HOSTS[b])
    if not common:
        with pytest.raises(ValueError, match="no workload family"):
            E.generate_pair(a, b, 3)
        return
    for seed in (3, 4):
        ta, tb = E.generate_pair(a, b, seed)
        assert (ta.scenario, tb.scenario) == (a, b)
        assert ta.family == tb.family and ta.family in common
        assert (ta.hardware, ta.world, ta.framing) == (tb.hardware, tb.world, tb.framing)
        assert ta.prompt == tb.prompt  # workload line, symptom and theory alike
        assert ta.key.scenario == a and tb.key.scenario == b
        assert ta.key.signature != tb.key.signature


def test_pair_follows_generate_when_the_seeds_family_hosts_both():
    for seed in range(30, 36):
        ta, tb = E.generate_pair("straggler", "healthy", seed)
        if ta.family == E.generate("healthy", seed).family:
            assert E.dumps(ta) == E.dumps(E.generate("straggler", seed))
            assert E.dumps(tb) == E.dumps(E.generate("healthy", seed))


def test_generate_is_deterministic_fixed_and_paired():
    for slug in ("straggler", "pipeline-bubbles", "launch-bound"):
        assert E.dumps(E.generate(slug, 7)) == E.dumps(E.generate(slug, 7))
        assert E.dumps(E.generate(slug, 7, fixed=True)) == E.dumps(E.generate(slug, 7, fixed=True))
    p1, p2 = (
        E.generate_pair("healthy", "sync-stalls", 8),
        E.generate_pair("healthy", "sync-stalls", 8),
    )
    assert [E.dumps(t) for t in p1] == [E.dumps(t) for t in p2]


def test_unknown_scenarios_are_refused():
    with pytest.raises(ValueError):
        E.generate("nope", 1, fixed=True)
    with pytest.raises(ValueError):
        E.generate_pair("healthy", "nope", 1)
