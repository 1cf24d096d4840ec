""" "Practise this calculation" on a reveal: a math drill of the key's calculation with THIS
trace's numbers, built on the server from the stored key, graded and stored like any math drill.

Every scenario is driven through HTTP (drill → diagnosis → reveal → the button's form → the math
drill → a right answer). The numbers the problem states are compared with the trace's measured
facts, and the right answer is recomputed from them with the formulas written out again
(``tests.drills.test_math_web.solve``), never read from the stored answer.
"""

from __future__ import annotations

import re
import statistics
import uuid

import pytest

from drills.mentalmath import FAMILIES, from_trace
from drills.mentalmath import services as math_services
from drills.models import Attempt, Card, MathAttempt
from drills.trainer import services
from scenarios import engine
from tests.conftest import right_answer
from tests.drills.test_math_web import solve

pytestmark = pytest.mark.django_db

FORM = re.compile(
    r'<form method="post" action="(/math/from-drill/[0-9a-f-]{36}/)"[^>]*>.*?'
    r'<button[^>]*id="practise-math"[^>]*>Practise this calculation</button>',
    re.S,
)
MATH_URL = re.compile(r"/math/attempts/([0-9a-f-]{36})/")
PP = re.compile(r"(\d+) stages \(one per rank\)")


def _median(xs):
    return statistics.median(float(x) for x in xs)


def expected_numbers(key: dict, prompt: dict, family: str) -> dict[str, float]:
    """What the problem must state, read straight off the trace's key (before rounding)."""
    f, step = key["facts"], key["step_ms"]
    slug = key["scenario"]
    if family == "bubble":
        # stages from the workload line, microbatches as counted on the timeline (forward
        # blocks per step; an interleaved schedule runs v of them per microbatch, v in the line)
        p, blocks = int(PP.search(prompt["workload"]).group(1)), int(f["microbatches"])
        chunks = re.search(r"\((\d+) model chunks per stage\)", prompt["workload"])
        if chunks:
            v = int(chunks.group(1))
            return {"p": p, "m": blocks // v, "v": v}
        return {"p": p, "m": blocks}
    if family == "launch-overhead":
        return {
            "kernels": f["kernels_per_step"],
            "launch_us": f["launch_us_mean"],
            "gpu_ms": f["gpu_per_step_ms"],
            "wall_ms": step,
        }
    if slug == "exposed-allreduce":
        return {"comm_ms": f["comm_ms"], "compute_ms": f["compute_ms"], "n": f["world"]}
    if slug == "input-starvation":
        # the compute the reveal's last line hides the loading under: its expected step
        return {"data_ms": f["loader_fetch_ms"], "compute_ms": key["expected_step_ms"]}
    if slug == "straggler":
        rc = f["rank_compute_ms"]
        return {"ranks": len(rc), "slow_pct": (max(rc) - _median(rc)) / _median(rc) * 100}
    if slug == "memory-bound-kernel":
        return {"measured_us": f["score_chain_ms_per_step"] * 1000, "hbm_tbps": f["hbm_tbps"]}
    if slug == "sync-stalls":
        return {"count": f["inner_syncs_per_step"], "step_ms": step}
    if slug == "allocator-stalls":
        return {"count": f["alloc_calls_per_step"], "step_ms": step}
    if slug == "recompilation":
        return {
            "count": len(f["compile_steps"]),
            "steps": f["n_steps"],
            "cost_ms": f["compile_step_ms"] - f["steady_step_ms"],
            "step_ms": step * f["n_steps"],
        }
    if slug == "bandwidth-bound-collective":
        return {
            "size_mb": f["coll_bytes_each"] / 1e6,
            "dur_ms": f["coll_ms_each"],
            "n": f["world"],
            "link_gbps": f["link_gbps"],
        }
    if slug == "healthy":  # DDP: MFU from the workload and the measured step
        return {"gpus": f["world"]}
    raise AssertionError(slug)


def assert_this_traces_numbers(problem: dict, key: dict, prompt: dict) -> None:
    given = problem["given"]
    for name, want in expected_numbers(key, prompt, problem["family"]).items():
        assert name in given, (key["scenario"], name, given)
        got = float(given[name])
        # stated as a person reads them off the trace: 2-3 significant figures, whole counts
        assert got == pytest.approx(float(want), rel=0.03, abs=0.51), (name, got, want)
    # the prompt states them (not only the stored record)
    assert problem["prompt"]
    if problem["family"] == "amdahl" and problem["framing"] == "remove":
        removed = given["count"] * given["cost_ms"]
        # the stalls the reveal's expected step subtracts (on the critical path)
        removes = key["step_ms"] - key["expected_step_ms"]
        per_step = {"sync-stalls": removes, "allocator-stalls": removes}.get(key["scenario"])
        if per_step is not None:  # the stalls the reveal removes, per step
            assert removed == pytest.approx(per_step, rel=0.06)


def reveal_then_practise(client, user, slug: str):
    attempt = services.start_drill(user, scenario=slug)
    assert client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt)
    ).status_code in (200, 302)
    html = client.get(f"/drill/attempts/{attempt.pk}/").content.decode()
    found = FORM.search(html)
    assert found, "the reveal offers no 'Practise this calculation'"
    assert found.group(1) == f"/math/from-drill/{attempt.pk}/"
    assert 'name="family"' not in found.group(0)  # the form carries no numbers and no family
    response = client.post(found.group(1))
    assert response.status_code == 302, response.content[:300]
    math_attempt = MathAttempt.objects.get(pk=MATH_URL.search(response["Location"]).group(1))
    return attempt, math_attempt


@pytest.mark.parametrize("slug", list(engine.SCENARIOS))
def test_every_scenario_practises_its_calculation_with_this_traces_numbers(
    learner_client, learner, no_refill, slug
):
    attempt, math_attempt = reveal_then_practise(learner_client, learner, slug)
    key, prompt = attempt.trace.key, attempt.trace.prompt
    problem = math_attempt.problem
    assert math_attempt.user == learner and math_attempt.mode == MathAttempt.Mode.SINGLE
    assert math_attempt.family in FAMILIES and math_attempt.family == problem["family"]
    if not (slug == "healthy" and ("stages" in prompt["workload"] or key["facts"]["world"] == 1)):
        assert math_attempt.family == math_services.resolve_family(key["mentalmath_family"])
    assert problem["source"] == {"attempt": str(attempt.pk)}
    assert problem["hardware"] == attempt.trace.hardware
    assert_this_traces_numbers(problem, key, prompt)

    page = learner_client.get(f"/math/attempts/{math_attempt.pk}/").content.decode()
    assert f'href="/drill/attempts/{attempt.pk}/"' in page  # back to the drill it came from
    hw = engine.get_hardware(attempt.trace.hardware)
    assert hw.name in page
    if hw.vendor == "amd":  # the hardware's own API names
        assert "cudaStreamSynchronize" not in page and "cudaMalloc" not in page

    # graded the usual way, stored like the others, scheduled on the family's card
    p = math_attempt.problem
    text = f"{solve(p['family'], p['framing'], p['given']):.6g} {p['unit']}"
    r = learner_client.post(f"/math/attempts/{math_attempt.pk}/answer/", {"answer": text})
    assert r.status_code == 302
    math_attempt.refresh_from_db()
    assert math_attempt.submitted_at is not None and math_attempt.correct is True
    assert math_attempt.counted
    card = Card.objects.get(user=learner, kind=Card.Kind.MATH, item=math_attempt.family)
    assert card.reviews == 1


def test_the_link_fraction_agrees_with_the_reveal(learner_client, learner, no_refill):
    attempt, math_attempt = reveal_then_practise(
        learner_client, learner, "bandwidth-bound-collective"
    )
    f = attempt.trace.key["facts"]
    n = f["world"]
    busbw = f["coll_bytes_each"] / 1e9 * 2 * (n - 1) / n / (f["coll_ms_each"] / 1000)
    assert math_attempt.problem["framing"] == "link-fraction"
    assert math_attempt.problem["answer"] == pytest.approx(100 * busbw / f["link_gbps"], rel=0.03)


def test_asking_again_resumes_then_moves_to_the_next_framing(learner_client, learner, no_refill):
    attempt, first = reveal_then_practise(learner_client, learner, "input-starvation")
    url = f"/math/from-drill/{attempt.pk}/"
    again = learner_client.post(url)
    assert MATH_URL.search(again["Location"]).group(1) == str(first.pk)  # same problem, same clock
    assert MathAttempt.objects.filter(user=learner).count() == 1
    learner_client.post(f"/math/attempts/{first.pk}/answer/", {"answer": "1 ms"})
    nxt = MathAttempt.objects.get(pk=MATH_URL.search(learner_client.post(url)["Location"])[1])
    assert nxt.pk != first.pk and nxt.problem["framing"] != first.problem["framing"]
    assert nxt.problem["given"]["data_ms"] == first.problem["given"]["data_ms"]  # same trace


def test_numbers_in_the_request_are_ignored(learner_client, learner, no_refill):
    attempt, first = reveal_then_practise(learner_client, learner, "straggler")
    learner_client.post(f"/math/attempts/{first.pk}/answer/", {"answer": "5 %"})
    MathAttempt.objects.filter(pk=first.pk).delete()  # so the same framing is built again
    forged = {"family": "busbw", "framing": "nccl-args", "slow_pct": "99", "ranks": "2"}
    r = learner_client.post(f"/math/from-drill/{attempt.pk}/?slow_pct=99&ranks=2", forged)
    again = MathAttempt.objects.get(pk=MATH_URL.search(r["Location"]).group(1))
    assert again.family == "amdahl" and again.problem["given"] == first.problem["given"]


def test_before_the_diagnosis_there_is_nothing_to_practise(learner_client, learner, no_refill):
    attempt = services.start_drill(learner, scenario="sync-stalls")
    r = learner_client.post(f"/math/from-drill/{attempt.pk}/")
    assert r.status_code == 302 and r["Location"] == f"/drill/attempts/{attempt.pk}/"
    assert not MathAttempt.objects.filter(user=learner).exists()
    page = learner_client.get(r["Location"]).content.decode()
    assert "Commit your diagnosis first" in page
    assert "data-scenario" not in page and "practise-math" not in page
    Attempt.objects.get(pk=attempt.pk, submitted_at__isnull=True)  # still open, nothing graded


def test_another_users_or_an_unknown_attempt_is_a_404(
    learner_client, learner, make_user, client, no_refill
):
    other = make_user("bob")
    theirs = services.start_drill(other, scenario="healthy")
    client.force_login(other)
    client.post(f"/drill/attempts/{theirs.pk}/diagnosis/", right_answer(theirs))
    client.force_login(learner)
    assert client.post(f"/math/from-drill/{theirs.pk}/").status_code == 404
    assert client.post(f"/math/from-drill/{uuid.uuid4()}/").status_code == 404
    assert client.post("/math/from-drill/not-a-uuid/").status_code == 404
    assert client.get(f"/math/from-drill/{theirs.pk}/").status_code == 405
    assert not MathAttempt.objects.exists()


def test_a_key_without_the_numbers_gets_a_clear_error(learner_client, learner, no_refill):
    attempt = services.start_drill(learner, scenario="sync-stalls")
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    trace = attempt.trace
    trace.key = {
        **trace.key,
        "facts": {k: v for k, v in trace.key["facts"].items() if "sync" not in k},
    }
    trace.save(update_fields=["key"])
    r = learner_client.post(f"/math/from-drill/{attempt.pk}/")
    assert r.status_code == 302 and r["Location"] == f"/drill/attempts/{attempt.pk}/"
    page = learner_client.get(r["Location"]).content.decode()
    assert "No calculation to practise on this trace" in page
    assert "inner_syncs_per_step" in page
    assert not MathAttempt.objects.exists()


# --------------------------------------------------------------------------- pure


@pytest.mark.parametrize("slug", list(engine.SCENARIOS))
def test_every_framing_a_trace_offers_builds_an_answerable_problem(slug):
    for seed in (1, 2, 3, 4):
        trace = engine.generate(slug, seed)
        key = trace.key.to_dict()
        built = from_trace.framings_for(key, trace.prompt)
        assert built
        for choice in range(len(built)):
            p = from_trace.problem_from_key(
                key, trace.prompt, hardware=trace.hardware, choice=choice
            )
            assert p.answer == pytest.approx(solve(p.family, p.framing, p.given), rel=1e-9)
            assert p.answer > 0 and p.hardware == trace.hardware
            assert_this_traces_numbers(p.to_dict(), key, trace.prompt)


def test_an_interleaved_pipeline_practises_the_interleaved_bubble():
    """Its forward blocks are two per microbatch: the problem states the microbatches, the
    chunks and the stages, and its answer is the bubble the reveal's arithmetic shows."""
    for slug in ("healthy", "pipeline-bubbles"):
        trace = next(
            t
            for t in (engine.generate(slug, s) for s in range(1, 200))
            if "interleaved 1F1B" in t.prompt["workload"]
        )
        key = trace.key.to_dict()
        p = from_trace.problem_from_key(key, trace.prompt, hardware=trace.hardware)
        assert (p.family, p.framing) == ("bubble", "interleaved")
        P, v = trace.world, 2
        assert p.given == {"p": P, "m": int(key["facts"]["microbatches"]) // v, "v": v}
        assert f"{v} model chunks per device" in p.prompt
        share = (P - 1) / (v * p.given["m"] + P - 1)  # the key's share of the step
        assert p.answer == pytest.approx(100 * share / (1 - share), rel=1e-9)
        assert f"{P - 1}/{v * p.given['m'] + P - 1}" in key["arithmetic"][0]


def test_healthy_traces_practise_their_own_arithmetic():
    seen = set()
    for seed in range(1, 9):
        trace = engine.generate("healthy", seed)
        p = from_trace.problem_from_key(trace.key.to_dict(), trace.prompt, hardware=trace.hardware)
        seen.add(p.family)
        if p.family == "mfu":  # the reveal's MFU line, recomputed by the learner
            mfu = re.search(r"= (\d+) %$", trace.key.arithmetic[0]).group(1)
            assert p.answer == pytest.approx(float(mfu), abs=1.5)
    assert seen == {"mfu", "bubble", "launch-overhead"}


def test_missing_or_broken_facts_raise_no_practice():
    trace = engine.generate("bandwidth-bound-collective", 1)
    key = trace.key.to_dict()
    for broken in (
        {**key, "arithmetic": []},
        {**key, "scenario": "nonsense"},
        {**key, "facts": {}},
        {**key, "facts": {**key["facts"], "coll_ms_each": float("nan")}},
        {**key, "facts": {**key["facts"], "coll_ms_each": -1.0}},
        {**key, "facts": {**key["facts"], "world": "8"}},
    ):
        with pytest.raises(from_trace.NoPractice):
            from_trace.problem_from_key(broken, trace.prompt, hardware=trace.hardware)


def test_an_unfinished_mock_interviews_trace_waits_for_the_end(learner_client, learner, no_refill):
    """A mock interview shows its reveals at the end: its calculations wait until then too."""
    from django.utils import timezone

    from drills.models import MockInterview

    attempt = services.start_drill(learner, scenario="allocator-stalls")
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    interview = MockInterview.objects.create(user=learner, started_at=timezone.now())
    Attempt.objects.filter(pk=attempt.pk).update(interview=interview, kind=Attempt.Kind.INTERVIEW)
    r = learner_client.post(f"/math/from-drill/{attempt.pk}/")
    assert r.status_code == 302 and not MathAttempt.objects.exists()
    MockInterview.objects.filter(pk=interview.pk).update(finished_at=timezone.now())
    r = learner_client.post(f"/math/from-drill/{attempt.pk}/")
    assert MathAttempt.objects.get(pk=MATH_URL.search(r["Location"]).group(1)).family == "amdahl"


def test_a_memory_bound_traces_problem_states_gb_and_ms_as_the_reveal_does():
    """The reveal says "552.4 GB per step" and "166.9 ms"; the problem said "552,000 MB" and
    "167,000 µs", and asked for a floor of 53 ms in µs."""
    trace = engine.generate("memory-bound-kernel", 0)
    key = trace.key.to_dict()
    eff = from_trace.problem_from_key(key, trace.prompt, hardware=trace.hardware, choice=0)
    gb = key["facts"]["score_chain_ms_per_step"] * key["facts"]["score_chain_tbps"]
    ms = key["facts"]["score_chain_ms_per_step"]
    assert f"moves {gb:.3g} GB in total" in eff.prompt
    assert f"taking {ms:.3g} ms" in eff.prompt
    assert " MB" not in eff.prompt and " µs" not in eff.prompt
    assert all(" µs" not in step for step in eff.steps)
    floor = from_trace.problem_from_key(key, trace.prompt, hardware=trace.hardware, choice=1)
    assert floor.unit == "ms" and "Answer in ms" in floor.prompt
    assert floor.answer == pytest.approx(gb / key["facts"]["hbm_tbps"], rel=0.01)


@pytest.mark.parametrize(
    ("slug", "seed"),
    [("allocator-stalls", 2), ("allocator-stalls", 7), ("sync-stalls", 1), ("input-starvation", 0)],
)
def test_a_stall_removal_problem_gives_the_speedup_the_reveal_gives(slug, seed):
    """A pipeline's step loses each step's longest stage stall (43.2 ms in the reveal), not the
    average stall (37.8 ms): the problem's answer was 1.19× beside the reveal's 1.22×; a decode
    loop's slow refills cost 9.9 ms, not the 29 × 0.30 ms product (1.71× against 1.89×); a
    starved data-parallel step computes 65.6 ms once fed, not 74.4 ms."""
    trace = engine.generate(slug, seed)
    key = trace.key.to_dict()
    problem = from_trace.problem_from_key(key, trace.prompt, hardware=trace.hardware)
    if problem.unit == "ms":  # the step after the fix
        assert problem.answer == pytest.approx(key["expected_step_ms"], rel=0.005)
    else:
        assert problem.answer == pytest.approx(key["step_ms"] / key["expected_step_ms"], rel=0.005)
