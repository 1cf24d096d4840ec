"""The mental-math trainer over HTTP: single drills, sprints, scheduling, and the trace link.

Right answers are recomputed here from the numbers the problem states (``problem["given"]``),
with the formulas written out again, never read from the stored answer.
"""

from __future__ import annotations

import html as htmllib
import math
import re
import uuid
from datetime import timedelta

import pytest
from django.db.models import F
from django.utils import timezone

from drills.mentalmath import FAMILIES
from drills.mentalmath import services as math_services
from drills.models import Attempt, Card, MathAttempt, MathSprint
from drills.stats.dashboard import math_stats
from drills.stats.format import RETRIEVABILITY_NOTE
from drills.trainer import services
from tests.conftest import right_answer

pytestmark = pytest.mark.django_db

ATTEMPT_URL = re.compile(r"/math/attempts/([0-9a-f-]{36})/")
SPRINT_URL = re.compile(r"/math/sprint/([0-9a-f-]{36})/")
HTMX = {"HTTP_HX_REQUEST": "true"}

# --------------------------------------------------------------------------- independent answers

BYTES = {"fp8": 1, "bf16": 2, "fp16": 2, "fp32": 4}


def ring(collective: str, n: int) -> float:
    return 2 * (n - 1) / n if collective == "all-reduce" else (n - 1) / n


def solve(family: str, fr: str, g: dict) -> float:
    """The answer in the problem's unit, from the stated numbers."""
    if family == "allreduce-time":
        gb = g["params_b"] * BYTES[g["dtype"]] if fr == "grads-params" else g["size_gb"]
        return gb * ring(g["collective"], g["n"]) / g["busbw_gbps"] * 1e3  # ms
    if family == "busbw":
        if fr == "nccl-args":
            nbytes, sec = g["rows"] * g["cols"] * BYTES[g["dtype"]], g["dur_us"] * 1e-6
        else:
            nbytes, sec = g["size_mb"] * 1e6, g["dur_ms"] * 1e-3
        bus_gbps = nbytes / sec / 1e9 * ring(g["collective"], g["n"])
        return 100 * bus_gbps / g["link_gbps"] if fr == "link-fraction" else bus_gbps
    if family == "intensity":
        if fr == "ridge":
            return g["peak_tflops"] / g["hbm_tbps"]
        if fr == "attainable":
            return min(g["peak_tflops"], g["hbm_tbps"] * g["gflop"] / g["bytes_gb"])
        if fr == "gemm":
            m, n, k = g["m"], g["n"], g["k"]
        else:  # decode: a [batch × hidden] · [hidden × hidden] matmul
            m, n, k = g["batch"], g["hidden"], g["hidden"]
        return 2 * m * n * k / (2 * (m * k + k * n + m * n))  # bf16: 2 bytes per element
    if family == "kernel-floor":
        hbm = g["hbm_tbps"] * 1e12  # B/s
        if fr == "layernorm":  # read once, write once
            return 2 * g["rows"] * g["cols"] * BYTES[g["dtype"]] / hbm * 1e6  # µs
        if fr == "optimizer":
            return g["params_b"] * 1e9 * (g["read_b"] + g["write_b"]) / hbm * 1e3  # ms
        floor_us = g["bytes_mb"] * 1e6 / hbm * 1e6
        if fr == "efficiency":
            return 100 * floor_us / g["measured_us"]
        return floor_us / 1000 if floor_us >= 10_000 else floor_us  # ms from 10,000 µs on
    if family == "bubble":
        p, m = g["p"], g["m"]
        return {
            "share": lambda: 100 * (p - 1) / (m + p - 1),
            "relative": lambda: 100 * (p - 1) / m,
            "interleaved": lambda: 100 * (p - 1) / (g["v"] * m),
            "interleave-speedup": lambda: (1 + (p - 1) / m) / (1 + (p - 1) / (g["v"] * m)),
        }[fr]()
    if family == "launch-overhead":
        cpu_ms = g["kernels"] * g["launch_us"] / 1e3
        eager = max(cpu_ms, g["gpu_ms"])
        if fr == "cpu-time":
            return cpu_ms
        if fr == "graph-speedup":
            return eager / g["gpu_ms"]
        if fr == "gpu-util":
            return 100 * g["gpu_ms"] / eager
        return 100 * cpu_ms / g["wall_ms"]
    if family == "exposed-comm":
        if fr == "from-bytes":
            comm = g["size_gb"] * ring("all-reduce", g["n"]) / g["busbw_gbps"] * 1e3
        else:
            comm = g["comm_ms"]
        step = g["compute_ms"] + comm * (1 - g["overlap_pct"] / 100)
        if fr == "exposed":
            return step - g["compute_ms"]
        if fr == "overlap-speedup":
            return step / (g["compute_ms"] + comm * (1 - g["overlap2_pct"] / 100))
        return step
    if family == "dataloader-workers":
        data = g["batch"] * g["sample_ms"] if fr == "per-sample" else g["data_ms"]
        if fr in ("workers", "per-sample"):
            return math.ceil(data / g["compute_ms"] - 1e-9)
        step = max(g["compute_ms"], data / g["k"])
        return step if fr == "step-with-k" else (data + g["compute_ms"]) / step
    if family == "mfu":
        if fr == "train-days":
            flop = 6 * g["params_b"] * 1e9 * g["tokens_t"] * 1e12
            rate = g["gpus"] * g["peak_tflops"] * 1e12 * g["mfu_pct"] / 100
            return flop / rate / 86_400
        tflops_per_gpu = 6 * g["params_b"] * 1e9 * g["tokens_per_s"] / g["gpus"] / 1e12
        return tflops_per_gpu if fr == "achieved" else 100 * tflops_per_gpu / g["peak_tflops"]
    if family == "amdahl":
        if fr == "remove":
            return g["step_ms"] / (g["step_ms"] - g["count"] * g["cost_ms"])
        if fr == "straggler":  # everyone waits for the slow rank: share of its time wasted
            return 100 * (1 - 1 / (1 + g["slow_pct"] / 100))
        f = g["frac_pct"] / 100
        return 1 / (1 - f) if fr == "limit" else 1 / ((1 - f) + f / g["factor"])
    if family == "checkpoint-interval":
        c_h = g["ckpt_min"] / 60
        mtbf = g["gpu_mtbf_h"] / g["gpus"] if fr == "cluster" else g["mtbf_h"]
        return 100 * math.sqrt(2 * c_h / mtbf) if fr == "waste" else math.sqrt(2 * mtbf * c_h)
    raise AssertionError(f"no independent solver for {family}")


def right_text(attempt: MathAttempt, *, with_unit: bool) -> str:
    p = attempt.problem
    value = solve(p["family"], p["framing"], p["given"])
    text = f"{value:.6g}"
    return f"{text} {p['unit']}" if with_unit else text


# --------------------------------------------------------------------------- helpers


def start(client, family: str | None = None) -> MathAttempt:
    data = {"family": family} if family else {}
    response = client.post("/math/next/", data)
    assert response.status_code == 302, response.content[:500]
    attempt_id = ATTEMPT_URL.search(response["Location"]).group(1)
    return MathAttempt.objects.get(pk=attempt_id)


def answer(client, attempt: MathAttempt, text: str, **extra):
    return client.post(f"/math/attempts/{attempt.pk}/answer/", {"answer": text}, **extra)


def card(user, family: str) -> Card | None:
    return Card.objects.filter(user=user, kind=Card.Kind.MATH, item=family).first()


def start_sprint(client) -> MathSprint:
    response = client.post("/math/sprint/")
    assert response.status_code == 302
    return MathSprint.objects.get(pk=SPRINT_URL.search(response["Location"]).group(1))


def current(sprint: MathSprint) -> MathAttempt:
    return sprint.attempts.get(submitted_at__isnull=True)


def sprint_answer(client, sprint: MathSprint, attempt: MathAttempt, text: str, **extra):
    return client.post(
        f"/math/sprint/{sprint.pk}/answer/", {"attempt": str(attempt.pk), "answer": text}, **extra
    )


def wrong_text(attempt: MathAttempt) -> str:
    p = attempt.problem
    return f"{solve(p['family'], p['framing'], p['given']) * 3 + 7:.6g}"


# --------------------------------------------------------------------------- pages


def test_math_pages_need_a_signed_in_user(client):
    for url in ["/math/", f"/math/attempts/{uuid.uuid4()}/", f"/math/sprint/{uuid.uuid4()}/"]:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_home_lists_every_family_with_a_start_button_and_the_nav_links_it(learner_client):
    response = learner_client.get("/math/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'href="/math/"' in html and ">Math</a>" in html
    for key, family in FAMILIES.items():
        assert f'data-family-row="{key}"' in html
        assert f'data-start-family="{key}"' in html
        assert htmllib.escape(family.title) in html
    assert 'action="/math/sprint/"' in html
    assert "No sprints yet" in html


# --------------------------------------------------------------------------- single drills


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_drills_of_every_family_graded_right_from_the_stated_numbers(
    learner_client, learner, family
):
    for i in range(3):
        attempt = start(learner_client, family)
        assert attempt.family == family and attempt.mode == MathAttempt.Mode.SINGLE
        page = learner_client.get(f"/math/attempts/{attempt.pk}/")
        html = page.content.decode()
        assert page.status_code == 200 and 'name="answer"' in html
        assert 'id="math-clock"' in html
        assert "math-steps" not in html  # no worked solution before the answer is committed
        response = answer(learner_client, attempt, right_text(attempt, with_unit=i % 2 == 0))
        assert response.status_code == 302
        attempt.refresh_from_db()
        assert attempt.correct is True, (attempt.problem["prompt"], attempt.answer_text)
        assert attempt.rating == 3 and attempt.counted and attempt.over_time is False
        reveal = learner_client.get(f"/math/attempts/{attempt.pk}/").content.decode()
        assert 'data-correct="true"' in reveal
        steps = re.findall(
            r"<li>(.*?)</li>", reveal.split('class="math-steps"')[1].split("</ol>")[0]
        )
        assert len(steps) == len(attempt.problem["steps"]) >= 1
        assert attempt.problem["unit"] in reveal.split('class="answer-value"')[1][:80]
    assert card(learner, family).reviews == 3


def test_a_wrong_answer_is_graded_wrong_and_its_family_comes_back_sooner(
    learner_client, learner, monkeypatch
):
    right = start(learner_client, "allreduce-time")
    answer(learner_client, right, right_text(right, with_unit=True))
    wrong = start(learner_client, "bubble")
    response = answer(learner_client, wrong, wrong_text(wrong), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-correct="false"' in html and "Not quite" in html
    assert "math-steps" in html  # the worked arithmetic, straight away
    wrong.refresh_from_db()
    assert wrong.correct is False and wrong.rating == 1
    missed, known = card(learner, "bubble"), card(learner, "allreduce-time")
    # FSRS's shortest interval is a day, so both are due tomorrow, but the miss is weaker ...
    assert missed.due - known.due < timedelta(minutes=1)
    assert missed.state["stability"] < known.state["stability"]
    # a fresh miss reads near 100 % retrievability beside 0 % accuracy: the page says why
    assert htmllib.escape(RETRIEVABILITY_NOTE) in learner_client.get("/math/").content.decode()

    # ... so tomorrow, with both due, the missed family is served first, before the unseen ones
    tomorrow = max(missed.due, known.due) + timedelta(seconds=5)
    monkeypatch.setattr(timezone, "now", lambda: tomorrow)
    learner_client.force_login(learner)  # the session (12 h) has expired by then
    again = start(learner_client)
    assert again.family == "bubble"
    answer(learner_client, again, right_text(again, with_unit=True))
    then = start(learner_client)
    assert then.family == "allreduce-time"
    answer(learner_client, then, right_text(then, with_unit=True))
    # and after a right answer each, the once-missed family is due back sooner
    assert card(learner, "bubble").due < card(learner, "allreduce-time").due


def test_next_without_a_family_is_picked_by_the_scheduler_and_resumes_an_open_one(
    learner_client,
):
    first = start(learner_client)
    assert first.family in FAMILIES
    assert start(learner_client).pk == first.pk  # asking again does not skip the problem
    answer(learner_client, first, right_text(first, with_unit=False))
    second = start(learner_client)
    assert second.pk != first.pk and second.family != first.family  # an unseen one next


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("fast", "Couldn&#x27;t read a number"),
        ("", "Type a number"),
        ("12 GB/s", "bandwidth unit"),
    ],
)
def test_bad_input_records_nothing_and_can_be_answered_again(
    learner_client, learner, text, fragment
):
    attempt = start(learner_client, "allreduce-time")  # answers in ms
    response = answer(learner_client, attempt, text)
    assert response.status_code == 400
    html = response.content.decode()
    assert fragment in html
    if text:
        assert "Nothing was recorded" in html
    assert 'name="answer"' in html
    attempt.refresh_from_db()
    assert attempt.submitted_at is None and attempt.answer_text == ""
    assert card(learner, "allreduce-time") is None
    # the same over htmx: swapped in (200), still nothing recorded
    response = answer(learner_client, attempt, text, **HTMX)
    assert response.status_code == 200 and fragment in response.content.decode()
    attempt.refresh_from_db()
    assert attempt.submitted_at is None
    assert answer(learner_client, attempt, right_text(attempt, with_unit=True)).status_code == 302
    attempt.refresh_from_db()
    assert attempt.correct is True


def test_a_second_submit_changes_nothing(learner_client, learner):
    attempt = start(learner_client, "mfu")
    answer(learner_client, attempt, right_text(attempt, with_unit=True))
    attempt.refresh_from_db()
    stored = (attempt.submitted_at, attempt.answer_text, attempt.correct, attempt.rating)
    response = answer(learner_client, attempt, wrong_text(attempt))
    assert response.status_code == 302
    attempt.refresh_from_db()
    assert (attempt.submitted_at, attempt.answer_text, attempt.correct, attempt.rating) == stored
    assert card(learner, "mfu").reviews == 1
    assert MathAttempt.objects.filter(user=learner).count() == 1


def test_other_users_attempts_and_sprints_are_404(learner_client, make_user, client):
    attempt = start(learner_client, "busbw")
    sprint = start_sprint(learner_client)
    problem = current(sprint)
    client.force_login(make_user("mallory"))
    assert client.get(f"/math/attempts/{attempt.pk}/").status_code == 404
    assert answer(client, attempt, "1 ms").status_code == 404
    assert client.get(f"/math/sprint/{sprint.pk}/").status_code == 404
    assert sprint_answer(client, sprint, problem, "1").status_code == 404
    attempt.refresh_from_db()
    problem.refresh_from_db()
    assert attempt.submitted_at is None and problem.submitted_at is None


def test_the_two_minutes_are_the_servers(learner_client, learner):
    attempt = start(learner_client, "amdahl")
    MathAttempt.objects.filter(pk=attempt.pk).update(
        served_at=timezone.now() - timedelta(seconds=125)
    )
    page = learner_client.get(f"/math/attempts/{attempt.pk}/").content.decode()
    assert 'data-remaining="0.000"' in page
    answer(learner_client, attempt, right_text(attempt, with_unit=True))
    attempt.refresh_from_db()
    assert attempt.correct is True and attempt.over_time is True
    assert attempt.rating == 1  # Again: right, but past 2:00
    assert attempt.elapsed_s >= 125
    reveal = learner_client.get(f"/math/attempts/{attempt.pk}/").content.decode()
    assert "over 2:00" in reveal


def test_right_but_slow_is_hard():
    assert math_services.math_rating(True, 95.0, False) == 2
    assert math_services.math_rating(True, 90.0, False) == 3
    assert math_services.math_rating(False, 10.0, False) == 1
    assert math_services.math_rating(True, 10.0, True) == 1


# --------------------------------------------------------------------------- sprints


def test_sprint_counts_only_answers_before_it_ends(learner_client, learner):
    sprint = start_sprint(learner_client)
    assert sprint.ends_at - sprint.started_at == timedelta(seconds=120)
    page = learner_client.get(f"/math/sprint/{sprint.pk}/").content.decode()
    first = current(sprint)
    assert 'id="sprint-clock"' in page and str(first.pk) in page

    response = sprint_answer(
        learner_client, sprint, first, right_text(first, with_unit=True), **HTMX
    )
    html = response.content.decode()
    assert response.status_code == 200 and 'id="sprint-feedback"' in html
    assert 'data-correct="true"' in html
    second = current(sprint)
    assert second.pk != first.pk and str(second.pk) in html  # the next problem, same swap
    assert 'data-score="1"' in html

    # a replayed POST of the first answer neither scores again nor answers the second problem
    sprint_answer(learner_client, sprint, first, right_text(first, with_unit=True), **HTMX)
    second.refresh_from_db()
    assert second.submitted_at is None

    # bad input in a sprint records nothing
    response = sprint_answer(learner_client, sprint, second, "fast", **HTMX)
    assert "Couldn" in response.content.decode()
    second.refresh_from_db()
    assert second.submitted_at is None

    sprint_answer(learner_client, sprint, second, wrong_text(second), **HTMX)
    third = current(sprint)
    sprint.refresh_from_db()
    assert (sprint.score, sprint.attempted) == (1, 2)

    # the bell rings (server time); a right answer after it is graded but not counted
    shift = timedelta(seconds=121)  # two minutes pass: move the sprint and its answers back
    MathSprint.objects.filter(pk=sprint.pk).update(
        started_at=F("started_at") - shift, ends_at=F("ends_at") - shift
    )
    MathAttempt.objects.filter(sprint=sprint).update(
        served_at=F("served_at") - shift, submitted_at=F("submitted_at") - shift
    )
    response = sprint_answer(learner_client, sprint, third, right_text(third, with_unit=False))
    assert response.status_code == 302
    third.refresh_from_db()
    sprint.refresh_from_db()
    assert third.correct is True and third.counted is False
    assert (sprint.score, sprint.attempted) == (1, 2)
    assert not sprint.attempts.filter(submitted_at__isnull=True).exists()  # no fourth problem

    summary = learner_client.get(f"/math/sprint/{sprint.pk}/").content.decode()
    assert 'id="sprint-summary"' in summary and 'name="answer"' not in summary
    assert "late" in summary

    home = learner_client.get("/math/").content.decode()
    assert f'data-sprint="{sprint.pk}"' in home and "sprint-chart" in home

    # single-drill endpoints can't be used to sneak a sprint answer in
    assert start(learner_client).sprint_id is None


def test_starting_a_sprint_twice_resumes_the_running_one(learner_client):
    sprint = start_sprint(learner_client)
    assert start_sprint(learner_client).pk == sprint.pk
    assert sprint.attempts.count() == 1


# --------------------------------------------------------------------------- stats


def test_family_stats_aggregate_in_a_fixed_number_of_queries(
    learner_client, learner, django_assert_max_num_queries
):
    for family in ("busbw", "busbw", "bubble"):
        a = start(learner_client, family)
        answer(learner_client, a, right_text(a, with_unit=True))
    a = start(learner_client, "busbw")
    answer(learner_client, a, wrong_text(a))
    now = timezone.now()
    with django_assert_max_num_queries(2):
        rows = {r["family"]: r for r in math_stats(learner, now)}
    assert set(rows) >= set(FAMILIES)
    assert rows["busbw"]["attempts"] == 3 and rows["busbw"]["correct"] == 2
    assert rows["busbw"]["accuracy"] == pytest.approx(2 / 3)
    assert rows["bubble"]["retrievability"] == pytest.approx(1.0)
    assert rows["bubble"]["due"] > now
    assert rows["mfu"]["attempts"] == 0 and rows["mfu"]["due"] is None


# --------------------------------------------------------------------------- linked to the traces


def test_trace_reveal_offers_practise_this_calculation(learner_client, learner, no_refill):
    """The button starts the key's calculation with this trace's numbers (see
    tests/drills/test_practise_from_trace.py for every scenario)."""
    attempt = services.start_drill(learner, scenario="exposed-allreduce")
    key = attempt.trace.key
    assert key["mentalmath_family"]
    learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/",
        right_answer(attempt),
    )
    assert Attempt.objects.get(pk=attempt.pk).submitted_at is not None
    html = learner_client.get(f"/drill/attempts/{attempt.pk}/").content.decode()
    assert "Practise this calculation" in html
    assert f'action="/math/from-drill/{attempt.pk}/"' in html
    response = learner_client.post(f"/math/from-drill/{attempt.pk}/")
    math_attempt = MathAttempt.objects.get(pk=ATTEMPT_URL.search(response["Location"]).group(1))
    assert math_attempt.family == math_services.resolve_family(key["mentalmath_family"])
    assert math_attempt.problem["given"]["comm_ms"] == pytest.approx(
        key["facts"]["comm_ms"], rel=0.01
    )


@pytest.mark.parametrize(("name", "family"), sorted(math_services.ENGINE_FAMILIES.items()))
def test_older_answer_keys_family_names_still_start_their_family(learner_client, name, family):
    assert start(learner_client, name).family == family


def test_every_engine_family_name_resolves_to_a_drill_family():
    from scenarios.engine.catalog import ANSWERS

    names = {row[4] for row in ANSWERS.values() if row[4]}
    assert names
    for name in names:
        assert math_services.resolve_family(name) in FAMILIES, name


def test_an_unknown_family_is_refused(learner_client):
    response = learner_client.post("/math/next/", {"family": "astrology"}, follow=True)
    assert "Unknown mental-math family" in response.content.decode()
    assert not MathAttempt.objects.exists()


def test_home_costs_the_same_queries_with_more_history(learner_client, learner):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def count() -> int:
        with CaptureQueriesContext(connection) as ctx:
            assert learner_client.get("/math/").status_code == 200
        return len(ctx.captured_queries)

    before = count()
    for family in list(FAMILIES)[:4]:
        a = start(learner_client, family)
        answer(learner_client, a, right_text(a, with_unit=True))
    now = timezone.now()
    for i in range(5):
        t = now - timedelta(days=i + 1)
        MathSprint.objects.create(
            user=learner, started_at=t, ends_at=t + timedelta(seconds=120), score=i, attempted=i
        )
    assert count() == before


def test_a_problem_and_its_answer_have_their_own_page_titles(learner_client):
    """A screen reader reads the title first, and a tab list shows it: the problem page and the
    answer page name themselves and the family, not the same "Mental math" as the home page."""
    attempt = start(learner_client, "dataloader-workers")
    title = lambda html: re.search(r"<title>(.*?)</title>", html, re.S).group(1)  # noqa: E731
    family = htmllib.escape(FAMILIES["dataloader-workers"].title, quote=False)
    home = title(learner_client.get("/math/").content.decode())
    problem = title(learner_client.get(f"/math/attempts/{attempt.pk}/").content.decode())
    assert problem.startswith(f"Problem: {family}"), problem
    answered = answer(learner_client, attempt, wrong_text(attempt), follow=True).content.decode()
    assert title(answered).startswith(f"Answer: {family}"), title(answered)
    assert len({home, problem, title(answered)}) == 3
