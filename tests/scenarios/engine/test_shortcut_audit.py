"""A small shortcut audit (issue 12): nothing but the declared signature may name the scenario.

The full audit is `bench/shortcut_audit.py` (40 traces per scenario, targets 25/25/30/35 % over
all scenarios and 65 % per pair). Here 12 traces per scenario (132 in all, 24 per pair) keep the
run under a minute on one core; the thresholds are looser by about two standard errors of a
cross-validated accuracy at that sample size, taking the better of two classifiers:
sqrt(p(1-p)/n) is 0.038 at p = 0.25, n = 132 (+8 points) and 0.097 at p = 0.65, n = 24 (+15).
A leak that names a scenario (a name, word or count found in one scenario only) scores near
100 % and fails either way. Pairs are family-matched (see `audit_features.family_matched`), so a
pair whose scenarios share a rare family has few traces here; the seeds are fixed, so the outcome
is deterministic.
"""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
import pytest

from bench import audit_features as A
from scenarios import engine

PER_SCENARIO = 12
SMALL_TARGETS = {"prompt": 0.33, "names": 0.33, "shape": 0.38, "all": 0.43}
SMALL_PAIR_TARGET = 0.80
SLUGS = list(engine.SCENARIOS)


@cache
def _summaries() -> tuple[A.Summary, ...]:
    return tuple(A.summarise_plan(A.plan(SLUGS, PER_SCENARIO)))


@cache
def _results() -> dict[tuple[str, str], A.Result]:
    sigs, _ = A.signatures(SLUGS)
    res = A.audit(_summaries(), sigs, targets=SMALL_TARGETS, pair_target=SMALL_PAIR_TARGET, top_k=2)
    return {(r.label, r.fset): r for r in res}


def _explain(r: A.Result) -> str:
    tops = "; ".join(f"{t['feature']}: {t['how']}" for t in r.top)
    return (
        f"{r.label} on {r.fset} features: {r.best:.0%} > {r.target:.0%} "
        f"({', '.join(f'{k} {v:.0%}' for k, v in r.scores.items())}); gives it away: {tops}"
    )


# Issue 12: the reworked engine has cut the shortcuts (prompt text 98 % -> ~9 %, names 82 % ->
# ~16-27 %, counts 96 % -> ~33-35 %, all 99 % -> ~31 %, since one seed draws one workload for
# every scenario). At this sample size every feature set and all pairs but one meet the (looser)
# target; the full audit's misses are listed by bench/shortcut_audit.py. A target not met is in
# NOT_MET_SETS / NOT_MET_PAIRS below as an expected failure, with the reason.
TARGETS_NOT_MET_YET = pytest.mark.xfail(
    reason="issue 12: shortcut targets not met yet (bench/shortcut_audit.py)", strict=False
)


# Every feature set meets its target at this sample size: a memory-bound job's sequences are now
# just long enough for the chain to dominate (its step time no longer stands apart), the NCCL
# watchdog wakes on a fixed cadence and queries only outstanding collectives, a recompiling
# job's new lengths come from its workload's own length draw, and a bubbly pipeline runs
# microbatches of the healthy job's size (its microbatch count per step is declared signature,
# `Signature.per`).
NOT_MET_SETS: set[str] = set()


@pytest.mark.parametrize(
    "fset",
    [
        pytest.param(f, marks=TARGETS_NOT_MET_YET) if f in NOT_MET_SETS else f
        for f in A.FEATURE_SETS
    ],
)
def test_no_feature_set_names_the_scenario(fset):
    r = _results()[("all scenarios", fset)]
    assert r.ok, _explain(r)


# pairs still told apart by more than their signature at this sample size (none now: a chain
# that takes half the GPU time doubles the step of the same job, so a memory-bound job fits as
# many of its longer sequences per GPU as bring its step near the drawn job's, down to one; the
# full audit's healthy / memory-bound went 70 % -> 64 % at 40 per scenario, 71 % -> 69 % at 80:
# jobs whose one sequence already outlasts the drawn step still split on step time)
NOT_MET_PAIRS: set[tuple[str, str]] = set()


@pytest.mark.parametrize(
    "pair",
    [
        pytest.param(p, marks=TARGETS_NOT_MET_YET) if tuple(p) in NOT_MET_PAIRS else p
        for p in A.all_pairs(SLUGS)
    ],
    ids=lambda p: f"{p[0]}|{p[1]}",
)
def test_foils_and_healthy_are_told_apart_only_by_the_signature(pair):
    r = _results()[(f"{pair[0]} / {pair[1]}", "all")]
    assert r.ok, _explain(r)


def test_the_audit_sees_a_planted_leak():
    """The instrument itself. Healthy traces split in two groups at random tell nothing apart;
    plant a word in one group's prompt, or an event name in its traces, and the audit names the
    group from it and points at it."""
    base = [s for s in _summaries() if s.scenario == "healthy"]
    # a random split (seed order is not: families and hardware follow the seed)
    labels = ["a", "b"] * (len(base) // 2) + ["b"] * (len(base) % 2)
    y = np.random.default_rng(0).permutation(labels)
    X, _ = A.matrix(base, "all", A.Exclusion())
    assert max(A.cv_scores(X, y).values()) <= SMALL_PAIR_TARGET
    planted = [
        dataclasses.replace(
            s,
            prompt=s.prompt + (" hint-word" if g == "a" else ""),
            groups=s.groups + [dataclasses.replace(s.groups[0], name="planted")] * (g == "a"),
            cache={},
        )
        for s, g in zip(base, y, strict=True)
    ]
    for fset, feature in (("prompt", "w:hint-word"), ("names", "n:planted")):
        X, cols = A.matrix(planted, fset, A.Exclusion())
        assert max(A.cv_scores(X, y).values()) >= 0.9
        top = A.top_features(X, y, cols, k=1)[0]
        assert top["feature"] == feature
        assert top["how"].startswith("present in a 100%; others <= 0%")


PROMPTS_PER_SCENARIO = 150


@cache
def _prompts() -> tuple[tuple[str, str, str], ...]:
    """(scenario, family, prompt text) on the audit's plan, drawn without the events."""
    plan = A.plan(SLUGS, PROMPTS_PER_SCENARIO, healthy_factor=1)
    return tuple((s, *A.prompt_of(s, seed, hw)) for s, seed, hw in plan)


def test_no_prompt_word_or_word_pair_belongs_to_one_scenario():
    """No word or word pair of the prompt (hardware, workload, symptom, theory) has 80 % of its
    occurrences in one scenario and shows in 5 % of that scenario's prompts, unless the workload
    family explains it (a scenario hosted by fewer families sees their words more often; within
    the family the others hold it as often). The prompt read here is the drill's."""
    items = _prompts()
    plan = A.plan(SLUGS, PROMPTS_PER_SCENARIO, healthy_factor=1)
    for i in range(0, len(plan), len(plan) // 4):
        s, seed, hw = plan[i]
        assert A.prompt_text(engine.generate(s, seed, hardware=hw).prompt) == items[i][2]
    leaks = [c.describe() for c in A.prompt_concentration(items) if not c.family]
    assert not leaks, leaks


def test_a_planted_prompt_word_pair_is_a_leak():
    """The check itself: a word pair added to one scenario's prompts (one in eight, as a
    hardware line drawn by scenario would: "8× MI250X") is reported, and not as the family's."""
    items = [
        (s, f, t + (" 8× MI250X" if s == "pipeline-bubbles" and i % 8 == 0 else ""))
        for i, (s, f, t) in enumerate(_prompts())
    ]
    found = {c.token: c for c in A.prompt_concentration(items)}
    assert "8× mi250x" in found, sorted(found)
    c = found["8× mi250x"]
    assert c.scenario == "pipeline-bubbles" and not c.family, c.describe()


def test_a_declared_per_step_count_is_not_read():
    """Pipeline bubbles declare their microbatches per step: a pipeline trace gives no per-step
    counts and its step time per microbatch; a data-parallel trace keeps its counts."""
    sigs, _ = A.signatures(SLUGS)
    assert sigs["pipeline-bubbles"].per
    ex = A.Exclusion.of(sigs, SLUGS)
    seen = set()
    for s in _summaries():
        shape = A.features(s, "shape", ex)
        has_counts = any(k.endswith("/step") or k.startswith("s:count/step") for k in shape)
        assert has_counts == (s.family != "pp"), (s.scenario, s.family)
        plain = A.features(s, "shape", A.Exclusion())
        if s.family == "pp":
            m = next(g.count for g in s.groups if g.name == sigs["pipeline-bubbles"].per)
            m /= s.world * plain["s:steps"]
            assert shape["s:step_ms_p50"] == pytest.approx(plain["s:step_ms_p50"] / m)
        seen.add(s.family)
    assert {"pp", "ddp"} <= seen


def test_declared_signature_names_are_left_out():
    sigs, _ = A.signatures(SLUGS)
    ex = A.Exclusion.of(sigs, SLUGS)
    for s in _summaries():
        names = A.features(s, "names", ex)
        assert not [n for n in names if ex.drops(n[2:])]
        shape = A.features(s, "shape", ex)
        assert not [k for k in shape if any(k.endswith(f":{c}") for c in ex.categories)]


def test_the_family_floor_is_what_the_most_common_scenario_of_each_family_adds():
    """The floor printed beside the shape target: each family adds the share of its most common
    scenario. Pipeline bubbles live in pp alone (1); every other scenario lands in each of its
    families as often as a healthy job does relative to the others, so launch-bound decode runs
    half eager, half compiled (1/2 in decode and in decode_compile), the DDP-only scenarios half
    in plain DDP (1/2), and recompilation two thirds in compiled DDP (2/3, as healthy jobs land
    there twice as often as in compiled decode): 19/6 ÷ 11 = 28.8 %. (The old family draw put
    three quarters of the DDP-only scenarios in ddp_compile, 3/11 = 27.3 %, where "torch.compile"
    alone leaned towards them.) A family that named one more scenario outright would raise it by
    1/11, and the rule must see it."""
    floor = A.family_floor(_summaries())
    assert floor["expected"] == pytest.approx(19 / 6 / 11, abs=0.005)
    assert abs(floor["measured"] - floor["expected"]) < 0.1
    # the rule sees a family that names its scenario: every healthy trace in a family of its own
    rows = [
        dataclasses.replace(s, family="healthy-only") if s.scenario == "healthy" else s
        for s in _summaries()
    ]
    assert A.family_floor(rows)["measured"] > floor["measured"] + 0.05


def test_a_declared_name_drops_its_suffixed_forms_and_no_longer_name():
    """The audit matched declared names as prefixes, so "aten::mul" would also have hidden
    "aten::mul_" (the optimizer's in-place multiply) from every pair with memory-bound in it. A
    name now drops itself and the forms that only add a suffix after a separator."""
    ex = A.Exclusion(names=("aten::mul", "Torch-Compiled Region: 0/", "_compile.compile_inner"))
    assert ex.drops("aten::mul") and not ex.drops("aten::mul_") and not ex.drops("aten::mulx")
    assert ex.drops("Torch-Compiled Region: 0/3")
    assert ex.drops("_compile.compile_inner (dynamo_timed)")
    assert not ex.drops("_compile.compile_inner_other")


def test_the_watchdogs_wake_ups_are_read_as_a_clock_not_as_a_count():
    """The NCCL watchdog queries every work still in flight at each ~100 ms wake-up, so how many
    queries a step holds is how long its collectives stay outstanding: a host far ahead of its
    GPU shows more, one that waits on its loader fewer. That is the starvation signature's own
    timing, so the audit does not count it (it named recompilation against input starvation
    72 % of the time alone); every other thread's events still count."""
    ex = A.Exclusion.of(A.signatures(SLUGS)[0], SLUGS)
    s = next(x for x in _summaries() if x.family == "ddp" and "pt_nccl_watchdg" in x.tids)
    assert any(g.tid == "pt_nccl_watchdg" for g in s.groups)

    def scaled(tid: str) -> A.Summary:
        groups = tuple(
            dataclasses.replace(g, count=g.count * 3) if g.tid == tid else g for g in s.groups
        )
        return dataclasses.replace(s, groups=groups, cache={})  # features are cached per summary

    base = A.features(s, "shape", ex)
    assert A.features(scaled("pt_nccl_watchdg"), "shape", ex) == base
    main = A.features(scaled("pt_main_thread"), "shape", ex)
    assert main["s:events/step"] > base["s:events/step"]
    assert main["s:threadpt_main_thread:events/step"] > base["s:threadpt_main_thread:events/step"]


def test_batches_of_varying_length_are_the_rule_in_every_compiled_job():
    """A recompiling job always sees new sequence lengths (they are what it recompiles for), so
    lengths that vary must be common in the compiled jobs that do not recompile: otherwise the
    input copies' sizes alone would name it (they did, 71 % against input starvation, when six
    jobs in ten varied). Nine in ten do now, compiled once up front for the lengths they meet."""
    n = varied = 0
    for seed in range(400):
        if engine._family("healthy", seed) != "ddp_compile":
            continue
        s = A.summarise(engine.generate("healthy", seed))
        sizes = {
            g.args["bytes"]
            for g in s.groups
            if g.name.startswith("Memcpy HtoD") and g.args and "bytes" in g.args
        }
        assert sizes, seed
        n += 1
        varied += len(sizes) > 1
        if n == 40:
            break
    assert n == 40
    assert varied >= 32, f"{varied} of 40 compiled healthy jobs vary their batch lengths"
    # and a recompiling job always does
    for seed in [x for x in range(40) if engine._family("recompilation", x) == "ddp_compile"][:5]:
        s = A.summarise(engine.generate("recompilation", seed))
        sizes = {g.args["bytes"] for g in s.groups if g.name.startswith("Memcpy HtoD") and g.args}
        assert len(sizes) > 1, seed
