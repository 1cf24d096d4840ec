"""The drill loop over HTTP, as a learner meets it."""

from __future__ import annotations

import gzip
import json
import re
import uuid
from datetime import timedelta
from unittest.mock import ANY

import pytest
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.html import escape

from drills.models import Attempt, Card
from scenarios import engine
from scenarios.engine.catalog import THEORY_TEXT
from tests.conftest import right_answer

pytestmark = pytest.mark.django_db


def start(client, mode="timed") -> Attempt:
    response = client.post("/drill/next/", {"mode": mode})
    assert response.status_code == 302
    attempt_id = re.search(r"/drill/attempts/([0-9a-f-]{36})/", response["Location"]).group(1)
    return Attempt.objects.select_related("trace").get(pk=attempt_id)


def strip_form_choices(html: str) -> str:
    """The answer <select>s list every scenario on every drill; they carry no information."""
    return re.sub(r"<select.*?</select>", "", html, flags=re.S)


def assert_no_leak(text: str, scenario: str) -> None:
    title = engine.SCENARIOS[scenario].title
    lowered = text.lower()
    assert scenario not in lowered, f"slug {scenario!r} leaked"
    assert title.lower() not in lowered, f"title {title!r} leaked"


def test_every_page_but_sign_in_and_the_landing_page_requires_a_signed_in_user(client):
    for url in ["/drill/", f"/drill/attempts/{uuid.uuid4()}/"]:
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    assert "Create an account" in client.get("/").content.decode()
    assert client.get("/accounts/login/").status_code == 200
    assert client.get("/accounts/signup/").status_code == 200
    assert client.get("/healthz").status_code in (200, 503)


def test_sign_up_signs_in_and_sign_out_is_a_post(client):
    response = client.post(
        "/accounts/signup/",
        {
            "username": "grace",
            "password1": "long-enough-pass-91",
            "password2": "long-enough-pass-91",
        },
    )
    assert response.status_code == 302
    assert client.get("/drill/").status_code == 200
    assert client.get("/accounts/logout/").status_code == 405
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/drill/").status_code == 302


def test_sign_up_with_mismatched_passwords_explains_and_creates_nobody(client, django_user_model):
    response = client.post(
        "/accounts/signup/",
        {"username": "grace", "password1": "long-enough-pass-91", "password2": "other-pass-91xx"},
    )
    assert response.status_code == 400
    assert b"didn" in response.content or b"match" in response.content
    assert not django_user_model.objects.filter(username="grace").exists()


def test_a_drill_serves_a_trace_and_nothing_that_names_the_answer(learner_client, no_refill):
    attempt = start(learner_client)
    scenario = attempt.scenario
    page = learner_client.get(f"/drill/attempts/{attempt.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert_no_leak(strip_form_choices(html), scenario)
    assert 'data-scenario="' not in html
    assert f"/traces/{attempt.trace_id}/perfetto.json" in html
    for field in (
        "step_ms",
        "gap_ms",
        "scenario",
        "measurement",
        "measurement_value",
        "fix",
        "expected_step_ms",
        "arithmetic",
    ):
        assert f'name="{field}"' in html
    # the tolerances are stated where the learner reads the form
    assert "±10 %" in html and "±15 %" in html
    # a colleague's theory, when the framing has one, reads as the engine wrote it ("A colleague
    # thinks ..."), not wrapped in a second attribution
    if theory := attempt.trace.prompt["theory"]:
        assert theory.startswith("A colleague ")
        assert f'<dd class="theory">{escape(theory)}</dd>' in html
    assert "colleague says" not in html.lower()

    timeline = learner_client.get(f"/traces/{attempt.trace_id}/timeline.json")
    body = timeline.content
    if timeline.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    assert_no_leak(body.decode(), scenario)
    data = json.loads(body)
    assert len(data["slices"]["ts"]) > 1000 and data["rows"]

    download = learner_client.get(f"/traces/{attempt.trace_id}/perfetto.json")
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment")
    assert_no_leak(download["Content-Disposition"], scenario)
    # Without gzip in Accept-Encoding the stored export is inflated on the fly (streamed).
    exported = b"".join(download.streaming_content)
    assert int(download["Content-Length"]) == len(exported)
    assert_no_leak(exported.decode(), scenario)
    trace = json.loads(exported)
    assert isinstance(trace, dict)
    # every event of the trace, plus the profiler's own span (cat "Trace"), as torch writes it
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") != "Trace"]
    assert len(slices) == attempt.trace.n_events


def test_each_colleague_theory_is_printed_as_the_engine_wrote_it():
    """The theories already say who holds them ("A colleague thinks ..."): the prompt prints them
    under a plain label, without a second "A colleague says" or quotation marks around them."""
    for theory in THEORY_TEXT.values():
        prompt = {"hardware": "H100", "workload": "DDP", "symptom": "slow", "theory": theory}
        html = render_to_string("scenarios/_prompt.html", {"prompt": prompt})
        assert theory.startswith("A colleague ")
        assert f'<dt>Theory</dt><dd class="theory">{escape(theory)}</dd>' in html
        assert html.lower().count("colleague") == 1 and "“" not in html
    html = render_to_string("scenarios/_prompt.html", {"prompt": {**prompt, "theory": None}})
    assert 'class="theory"' not in html


def test_committing_a_diagnosis_grades_it_and_reveals_the_truth(learner_client, no_refill):
    attempt = start(learner_client)
    response = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt), follow=True
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-scenario="{attempt.scenario}"' in html
    attempt.refresh_from_db()
    assert attempt.submitted_at is not None
    assert attempt.scenario_correct and attempt.measurement_correct and attempt.fix_correct
    assert attempt.win_correct and not attempt.over_time
    assert attempt.trace.key["signature"][:40] in html
    card = Card.objects.get(user=attempt.user, item=attempt.scenario)
    assert card.reviews == 1 and card.due > timezone.now()


def test_submitting_twice_grades_once(learner_client, no_refill):
    attempt = start(learner_client)
    url = f"/drill/attempts/{attempt.pk}/diagnosis/"
    learner_client.post(url, right_answer(attempt))
    first = Attempt.objects.get(pk=attempt.pk)
    wrong = {
        **right_answer(attempt),
        "scenario": "healthy" if attempt.scenario != "healthy" else "straggler",
    }
    again = learner_client.post(url, wrong)
    assert again.status_code == 302
    second = Attempt.objects.get(pk=attempt.pk)
    assert second.submitted_at == first.submitted_at
    assert second.answer_scenario == first.answer_scenario and second.scenario_correct
    assert Card.objects.get(user=attempt.user, item=attempt.scenario).reviews == 1


def test_time_is_the_servers_past_two_minutes_is_over_time(learner_client, no_refill):
    attempt = start(learner_client)
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - timedelta(seconds=150))
    payload = {**right_answer(attempt), "elapsed": "10", "elapsed_s": "10", "submitted_at": "0"}
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", payload)
    attempt.refresh_from_db()
    assert attempt.over_time and attempt.elapsed_s >= 150
    assert attempt.scenario_correct  # right, but a miss for scheduling
    assert attempt.rating == 1  # Again


def test_practice_mode_is_untimed_and_does_not_touch_the_schedule(learner_client, no_refill):
    attempt = start(learner_client, mode="practice")
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - timedelta(seconds=400))
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    attempt.refresh_from_db()
    assert not attempt.over_time and not attempt.counted
    assert not Card.objects.filter(user=attempt.user).exists()


@pytest.mark.parametrize(
    "change",
    [
        {"scenario": "not-a-scenario"},
        {"measurement": ""},
        {"fix": "rewrite-it-in-rust"},
        {"expected_step_ms": "fast"},
        {"expected_step_ms": "-5"},
        {"expected_step_ms": ""},
        {"step_ms": ""},
        {"step_ms": "about forty"},
        {"step_ms": "NaN"},
        {"step_ms": "Infinity"},
        {"step_ms": "1e400"},
        {"step_ms": "-12"},
        {"gap_ms": "-0.5"},
        {"gap_ms": "nan"},
        {"measurement_value": "inf"},
        {"measurement_value": ""},
        {"measurement": "no-such-measurement"},
    ],
)
def test_malformed_diagnosis_is_refused_clearly_and_records_nothing(
    learner_client, no_refill, change
):
    attempt = start(learner_client)
    response = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", {**right_answer(attempt), **change}
    )
    assert response.status_code == 400
    assert b"nothing was recorded" in response.content
    # the message sits beside the field it is about
    (field,) = change
    html = response.content.decode()
    start_at = html.index(f'<label for="id_{field}"')
    block = html[start_at : html.find('<div class="field', start_at)]
    assert 'class="errors"' in block, field
    assert html[:start_at].rstrip().endswith('<div class="field has-error">'), field
    attempt.refresh_from_db()
    assert attempt.submitted_at is None and attempt.scenario_correct is None
    # ...and the attempt can still be committed properly afterwards.
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    attempt.refresh_from_db()
    assert attempt.scenario_correct


def test_another_users_attempt_and_trace_answer_404(learner_client, client, make_user, no_refill):
    attempt = start(learner_client)
    other = make_user("mallory")
    client.force_login(other)
    urls = [
        f"/drill/attempts/{attempt.pk}/",
        f"/traces/{attempt.trace_id}/timeline.json",
        f"/traces/{attempt.trace_id}/perfetto.json",
    ]
    for url in urls:
        assert client.get(url).status_code == 404, url
    response = client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    assert response.status_code == 404
    attempt.refresh_from_db()
    assert attempt.submitted_at is None


def test_a_new_drill_resumes_the_unfinished_one(learner_client, no_refill):
    first = start(learner_client)
    again = start(learner_client)
    assert again.pk == first.pk
    learner_client.post(f"/drill/attempts/{first.pk}/diagnosis/", right_answer(first))
    assert start(learner_client).pk != first.pk


def test_htmx_start_returns_the_drill_partial(learner_client, no_refill):
    response = learner_client.post(
        "/drill/next/", {"mode": "timed"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert response["HX-Push-Url"].startswith("/drill/attempts/")
    html = response.content.decode()
    assert 'id="drill-area"' in html and "<html" not in html


def test_healthz_reports_database_broker_and_pool_health(client, no_refill):
    from scenarios import pool

    for slug in engine.SCENARIOS:
        pool.refill(slug, target=1)  # at the low-water mark (1 in tests): not short
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": ANY, "pool": "ok"}


def test_healthz_answers_503_when_the_broker_is_down(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/healthz")
    assert response.status_code == 503
    data = response.json()
    assert data["status"] == "degraded" and data["broker"].startswith("unreachable")
    assert data["database"] == "ok"


# --- drill start: a fixed handful of queries, no trace bytes -----------------------------------

BLOB_COLUMNS = ("payload", "timeline_gz", "perfetto_gz")
# Measured 17 on a learner's first drill: session, user, open attempt, the learner lock (its
# profile, created once: insert + savepoint pair), the newest attempts (open? dealt this hour?
# dealt lately?), cards, claim 4, stock count, insert, the transaction's savepoint pair. No
# slack for an N+1: the count does not grow with history.
DRILL_START_MAX_QUERIES = 17


@pytest.fixture(scope="module")
def real_prompts_and_keys() -> dict[str, tuple[str, str]]:
    """Each scenario's prompt and key as the engine writes them, generated once per module
    (the generation is most of the setup) and handed on as JSON text, so no test can change
    what the next one gets."""
    out = {}
    for seed, slug in enumerate(engine.SCENARIOS):
        real = engine.generate(slug, seed)
        out[slug] = (json.dumps(real.prompt), json.dumps(real.key.to_dict()))
    return out


@pytest.fixture
def stocked_pool(real_prompts_and_keys):
    """Two unclaimed traces per scenario: real prompt and key, small stand-in byte columns."""
    from scenarios.models import Trace

    for seed, slug in enumerate(engine.SCENARIOS):
        prompt_json, key_json = real_prompts_and_keys[slug]
        prompt, key = json.loads(prompt_json), json.loads(key_json)
        for copy in range(2):
            Trace.objects.create(
                scenario=slug,
                seed=seed * 10 + copy,
                hardware="h100",
                generator_version=engine.GENERATOR_VERSION,
                prompt=prompt,
                key=key,
                n_events=1,
                payload=b"stand-in",
                timeline_gz=b"stand-in",
                perfetto_gz=b"stand-in",
            )


def blob_reads(captured) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if any(c in q["sql"] for c in BLOB_COLUMNS)]


@pytest.mark.parametrize("htmx", [False, True])
def test_drill_start_is_a_fixed_few_queries_and_reads_no_trace_bytes(
    learner_client, stocked_pool, no_refill, django_assert_max_num_queries, htmx
):
    headers = {"HX-Request": "true"} if htmx else {}
    counts = []
    for _ in range(3):  # a first drill, then with a card and history: the same cost
        with django_assert_max_num_queries(DRILL_START_MAX_QUERIES) as captured:
            response = learner_client.post("/drill/next/", {"mode": "timed"}, headers=headers)
        assert response.status_code == (200 if htmx else 302)
        assert blob_reads(captured) == [], "drill start selected a trace payload column"
        counts.append(len(captured.captured_queries))
        attempt = Attempt.objects.filter(submitted_at__isnull=True).get()
        with django_assert_max_num_queries(DRILL_START_MAX_QUERIES) as page:
            html = learner_client.get(f"/drill/attempts/{attempt.pk}/").content.decode()
        assert blob_reads(page) == []
        # ... and the page points the viewer at the streamed timeline instead.
        assert f"/traces/{attempt.trace_id}/timeline.json" in html
        learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    assert len(set(counts[1:])) == 1, counts


def test_a_perfetto_only_reveal_says_its_time_is_after_the_loading_allowance(
    learner_client, no_refill, settings
):
    settings.TRACETRACK = {**settings.TRACETRACK, "PERFETTO_LOAD_ALLOWANCE_S": 15}
    attempt = start(learner_client, mode="perfetto")
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - timedelta(seconds=40))
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    html = learner_client.get(f"/drill/attempts/{attempt.pk}/").content.decode()
    assert re.search(r"· 2[56] s on the clock \(its first 15 s were Perfetto loading\)", html)
    timed = start(learner_client)
    learner_client.post(f"/drill/attempts/{timed.pk}/diagnosis/", right_answer(timed))
    timed_html = learner_client.get(f"/drill/attempts/{timed.pk}/").content.decode()
    assert "Perfetto loading" not in timed_html


def test_a_drill_left_open_for_days_keeps_the_clocks_time_not_the_days(
    learner, learner_client, no_refill
):
    """A timed drill left open and closed as expired three days later (the next drill asked
    for) kept 259 200 s as its time: the dashboard's median time for its scenario read
    "4320:00". Its clock stops where it ran out, still over the limit."""
    attempt = start(learner_client)
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - timedelta(days=3))
    start(learner_client)
    attempt.refresh_from_db()
    assert attempt.closed == "expired" and attempt.over_time is True
    assert attempt.elapsed_s == 122.0  # the 2:00 limit and the 2 s network grace
    row = next(
        r
        for r in learner_client.get("/dashboard/stats.json").json()["scenarios"]
        if r["slug"] == attempt.scenario
    )
    assert (row["timed"], row["under_limit"], row["median_s"]) == (1, 0, 122.0)
    html = learner_client.get("/dashboard/").content.decode()
    cells = re.search(rf'data-scenario-row="{attempt.scenario}">(.*?)</tr>', html, re.S)[1]
    assert "2:02" in cells and "4320:00" not in cells


def test_a_drill_given_up_within_its_clock_keeps_its_time(learner_client, no_refill):
    attempt = start(learner_client)
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - timedelta(seconds=30))
    learner_client.post(f"/drill/attempts/{attempt.pk}/abandon/")
    attempt.refresh_from_db()
    assert attempt.closed == "abandoned" and not attempt.over_time
    assert 30 <= attempt.elapsed_s < 40
