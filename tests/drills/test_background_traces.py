"""The reveal's fixed twin and contrast trial pairs are drawn by the worker, not on the request.

What a learner notices: the twin is there once the diagnosis is committed, whether or not the
reveal was looked at; while the worker is still drawing it the reveal says so and asks again;
a trial dealt after a confusion is the pair the worker drew ahead. Traces are real engine output
on the cheap pair healthy / launch-bound. ``tasks_inline`` runs what is queued at the commit in
the test's thread (a worker's share); without it nothing queued runs, as with a busy worker.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from drills import scheduling
from drills.contrast import services as contrast
from drills.models import Attempt, PreparedTrial
from drills.trainer import fixed, services
from drills.trainer.grading import Diagnosis
from scenarios import engine
from scenarios.models import Trace
from tests.conftest import right_answer
from tests.scenarios.test_pool_worker import _wait_for, worker_queue  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

CHEAP_PAIR = scheduling.pair_key("healthy", "launch-bound")


def after_fix_url(attempt: Attempt) -> str:
    return f"/drill/attempts/{attempt.pk}/after-fix/"


def twins() -> int:
    return Trace.objects.filter(source=Trace.Source.FIXED).count()


def confused_answer(attempt: Attempt, answered: str) -> dict[str, str]:
    return {**right_answer(attempt), "scenario": answered}


def test_the_twin_is_made_at_the_commit_without_visiting_the_reveal(
    learner, learner_client, no_refill, tasks_inline, django_capture_on_commit_callbacks
):
    attempt = services.start_drill(learner, scenario="launch-bound")
    with django_capture_on_commit_callbacks(execute=True):
        learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    attempt.refresh_from_db()
    twin = Trace.objects.get(pk=attempt.fixed_trace_id)
    assert twin.source == Trace.Source.FIXED and twin.claimed_by_id == learner.pk
    assert (twin.scenario, twin.seed) == (attempt.trace.scenario, attempt.trace.seed)

    # The reveal then only reads it: shown at once, nothing new generated.
    html = learner_client.get(after_fix_url(attempt)).content.decode()
    assert 'id="step-after"' in html and f"/traces/{twin.pk}/timeline.json" in html
    assert "being drawn" not in html
    assert twins() == 1


def test_an_abandoned_drill_queues_its_twin_too(
    learner, learner_client, no_refill, tasks_inline, django_capture_on_commit_callbacks
):
    attempt = services.start_drill(learner, scenario="launch-bound")
    with django_capture_on_commit_callbacks(execute=True):
        learner_client.post(f"/drill/attempts/{attempt.pk}/abandon/")
    attempt.refresh_from_db()
    assert attempt.closed == "abandoned" and attempt.fixed_trace_id is not None


def test_the_reveal_says_being_drawn_until_the_worker_has_made_the_twin(
    learner, learner_client, no_refill
):
    attempt = services.start_drill(learner, scenario="launch-bound")
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    attempt.refresh_from_db()
    assert attempt.fixed_queued_at is not None and attempt.fixed_trace_id is None

    # The worker has not run: a clear pending state that asks again, and no generation here.
    r = learner_client.get(after_fix_url(attempt))
    html = r.content.decode()
    assert r.status_code == 200 and r["Cache-Control"] == "no-store"
    assert "being drawn" in html and 'id="step-after"' not in html
    assert f'hx-get="{after_fix_url(attempt)}"' in html and 'hx-trigger="load delay:' in html
    assert twins() == 0

    fixed.make_twin(attempt.pk)  # the worker's task
    html = learner_client.get(after_fix_url(attempt)).content.decode()
    attempt.refresh_from_db()
    assert "being drawn" not in html and 'id="step-after"' in html
    assert f"/traces/{attempt.fixed_trace_id}/timeline.json" in html
    assert twins() == 1


def test_the_reveal_draws_the_twin_itself_when_nothing_was_queued_or_the_worker_is_late(
    learner, learner_client, no_refill
):
    # An attempt graded before twins were queued: nothing queued, made on the request.
    old = services.start_drill(learner, scenario="launch-bound")
    learner_client.post(f"/drill/attempts/{old.pk}/diagnosis/", right_answer(old))
    Attempt.objects.filter(pk=old.pk).update(fixed_queued_at=None)
    html = learner_client.get(after_fix_url(old)).content.decode()
    assert 'id="step-after"' in html and twins() == 1

    # Queued, but the worker has not got to it within the grace: made on the request too.
    late = services.start_drill(learner, scenario="launch-bound")
    learner_client.post(f"/drill/attempts/{late.pk}/diagnosis/", right_answer(late))
    long_ago = timezone.now() - timedelta(seconds=fixed.WORKER_GRACE_S + 1)
    Attempt.objects.filter(pk=late.pk).update(fixed_queued_at=long_ago)
    html = learner_client.get(after_fix_url(late)).content.decode()
    assert 'id="step-after"' in html and twins() == 2


def test_making_the_twin_twice_stores_one_and_a_race_stores_nothing_more(learner, no_refill):
    attempt = services.start_drill(learner, scenario="launch-bound")
    key = attempt.trace.key
    services.submit_diagnosis(
        attempt, Diagnosis("launch-bound", key["measurement"], key["fix"], 1.0)
    )
    first = fixed.make_twin(attempt.pk)
    again = fixed.make_twin(attempt.pk)  # a redelivered task
    assert first is not None and again is not None and again.pk == first.pk
    assert twins() == 1

    # The request and the worker both drawing it: the one that links second stores nothing.
    other = services.start_drill(learner, scenario="launch-bound")
    services.submit_diagnosis(other, Diagnosis("launch-bound", key["measurement"], key["fix"], 1.0))
    real = fixed.regenerate_fixed

    def racing(original):
        drawn = real(original)
        fixed.regenerate_fixed = real
        try:
            winner = fixed.make_twin(other.pk)  # the other side finishes first
        finally:
            fixed.regenerate_fixed = racing
        assert winner is not None
        return drawn

    fixed.regenerate_fixed = racing
    try:
        loser = fixed.make_twin(other.pk)
    finally:
        fixed.regenerate_fixed = real
    other.refresh_from_db()
    assert loser is not None and loser.pk == other.fixed_trace_id
    assert twins() == 2


def test_no_twin_before_the_commit_nor_for_a_trial_and_none_shown_to_another_learner(
    learner, learner_client, make_user, client, no_refill
):
    attempt = services.start_drill(learner, scenario="launch-bound")
    assert fixed.make_twin(attempt.pk) is None and twins() == 0
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    fixed.make_twin(attempt.pk)
    attempt.refresh_from_db()
    trial = contrast.deal(learner, CHEAP_PAIR)
    services.close_attempt(trial, "abandoned")
    assert fixed.make_twin(trial.pk) is None and twins() == 1

    client.force_login(make_user("bob"))
    assert client.get(after_fix_url(attempt)).status_code == 404
    assert client.get(f"/traces/{attempt.fixed_trace_id}/timeline.json").status_code == 404


# --------------------------------------------------------------------------- contrast pairs


def test_a_confusion_has_the_worker_draw_the_trial_and_the_deal_uses_it(
    learner,
    learner_client,
    no_refill,
    tasks_inline,
    django_capture_on_commit_callbacks,
    monkeypatch,
):
    attempt = services.start_drill(learner, scenario="launch-bound")
    with django_capture_on_commit_callbacks(execute=True):
        learner_client.post(
            f"/drill/attempts/{attempt.pk}/diagnosis/", confused_answer(attempt, "healthy")
        )
    prepared = PreparedTrial.objects.get(user=learner, item=CHEAP_PAIR)
    drawn = {prepared.first_id, prepared.second_id}
    # Drawn ahead but unclaimed: the learner cannot read it before the trial.
    for trace_id in drawn:
        assert learner_client.get(f"/traces/{trace_id}/timeline.json").status_code == 404

    def no_generation(*args, **kwargs):
        raise AssertionError("the trial was generated on the request path")

    real_generate_pair = engine.generate_pair
    monkeypatch.setattr(engine, "generate_pair", no_generation)
    r = learner_client.post("/drill/next/", {"mode": "timed"})
    assert "/drill/trials/" in r["Location"]
    trial = Attempt.objects.get(kind=Attempt.Kind.CONTRAST)
    assert {trial.trace_id, trial.partner_id} == drawn
    assert not PreparedTrial.objects.exists()
    assert learner_client.get(r["Location"]).status_code == 200
    for trace_id in drawn:
        assert learner_client.get(f"/traces/{trace_id}/timeline.json").status_code == 200

    # Answering the trial has the next one on the pair drawn ahead.
    monkeypatch.setattr(engine, "generate_pair", real_generate_pair)
    with django_capture_on_commit_callbacks(execute=True):
        learner_client.post(
            f"/drill/trials/{trial.pk}/answer/", {"side": "left", "measurement": "busbw"}
        )
    assert PreparedTrial.objects.filter(user=learner, item=CHEAP_PAIR).count() == 1


def test_preparing_a_trial_twice_stores_one(learner):
    assert contrast.prepare_trial(learner.pk, CHEAP_PAIR) is True
    assert contrast.prepare_trial(learner.pk, CHEAP_PAIR) is False  # a redelivered task
    assert PreparedTrial.objects.count() == 1
    assert Trace.objects.filter(source=Trace.Source.CONTRAST).count() == 2


def test_a_pair_drawn_by_a_replaced_engine_is_not_dealt(learner):
    assert contrast.prepare_trial(learner.pk, CHEAP_PAIR) is True
    stale = set(PreparedTrial.objects.values_list("first_id", "second_id").get())
    Trace.objects.filter(pk__in=stale).update(generator_version="0-old")
    trial = contrast.deal(learner, CHEAP_PAIR)
    assert {trial.trace_id, trial.partner_id}.isdisjoint(stale)
    assert trial.trace.generator_version == engine.GENERATOR_VERSION
    assert not Trace.objects.filter(pk__in=stale).exists()


def test_a_trial_with_nothing_prepared_is_still_dealt_and_practice_prepares_none(
    learner, learner_client, no_refill, tasks_inline, django_capture_on_commit_callbacks
):
    attempt = services.start_drill(learner, Attempt.Mode.PRACTICE, scenario="launch-bound")
    with django_capture_on_commit_callbacks(execute=True):
        learner_client.post(
            f"/drill/attempts/{attempt.pk}/diagnosis/", confused_answer(attempt, "healthy")
        )
    assert not PreparedTrial.objects.exists()
    trial = contrast.deal(learner, CHEAP_PAIR)  # drawn here, as before
    assert trial.trace.claimed_by_id == learner.pk and trial.partner.claimed_by_id == learner.pk


# --------------------------------------------------------------------------- a real worker


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("worker_queue")
def test_a_worker_process_makes_the_twin_and_the_trial_pair_once_the_answer_commits(
    learner, learner_client, no_refill
):
    """Redis broker, a Celery worker process, PostgreSQL: a confused answer is committed and
    the reveal never asked for; the worker stores the twin and the pair drawn ahead."""
    attempt = services.start_drill(learner, scenario="launch-bound")
    r = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", confused_answer(attempt, "healthy")
    )
    assert r.status_code == 302

    def done() -> bool:
        twin = Attempt.objects.filter(pk=attempt.pk, fixed_trace__isnull=False).exists()
        return twin and PreparedTrial.objects.filter(user=learner, item=CHEAP_PAIR).exists()

    assert _wait_for(done, 90)
    assert twins() == 1
    html = learner_client.get(after_fix_url(attempt)).content.decode()
    assert 'id="step-after"' in html and twins() == 1


def test_a_healthy_reveal_says_its_twin_is_drawn_again_unchanged(
    learner, learner_client, no_refill, tasks_inline, django_capture_on_commit_callbacks
):
    """There is no fix on a healthy trace: the panel said "generated again with the fix
    applied" over two identical timelines."""
    attempt = services.start_drill(learner, scenario="healthy")
    with django_capture_on_commit_callbacks(execute=True):
        learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    html = learner_client.get(after_fix_url(attempt)).content.decode()
    assert "Nothing needed fixing" in html and "Drawn again, unchanged" in html
    assert "with the fix applied" not in html and "Fixed ·" not in html


def test_the_after_fix_step_times_are_the_ones_the_key_prints():
    """319.8498 ms: the key prints 319.8; the graded 319.85 rounded again read 319.9."""
    key = {"step_ms": 319.8, "grading": {"step_ms": 319.85}}
    assert fixed._step(key) == 319.8
    assert fixed._step({"grading": {"step_ms": 22.05}}) == 22.05


# A launch-bound draw whose fixed twin measures about 8.05 ms a step (generator 22): the key
# prints it to two decimals, which a second rounding to one would change.
SUB_10_MS_TWIN_SEED = 182828277145356


def test_the_after_fix_panel_prints_step_times_as_the_reveal_does(
    learner, learner_client, no_refill, tasks_inline, django_capture_on_commit_callbacks
):
    """The panel rounded the key's 6.95 ms again to one decimal: "7.0 ms" for a twin measured at
    6.947 ms, under a reveal that printed the same key's times to two decimals below 10 ms."""
    from scenarios import pool

    pool.build_trace("launch-bound", SUB_10_MS_TWIN_SEED).save(force_insert=True)
    attempt = services.start_drill(learner, scenario="launch-bound")
    assert attempt.trace.seed == SUB_10_MS_TWIN_SEED
    with django_capture_on_commit_callbacks(execute=True):
        learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    html = learner_client.get(after_fix_url(attempt)).content.decode()
    attempt.refresh_from_db()
    measured = attempt.fixed_trace.key["grading"]["step_ms"]
    assert measured < 10  # the case: the reveal prints two decimals here
    shown = re.search(r'<dd id="step-after">([\d.]+) ms</dd>', html)
    assert shown, html
    decimals = len(shown.group(1).partition(".")[2])
    assert abs(float(shown.group(1)) - measured) <= 0.5 * 10**-decimals + 1e-9, (
        f"the panel says {shown.group(1)} ms for a step measured at {measured} ms"
    )
    # The original's step time reads as in the reveal's first row on the attempt page.
    page = learner_client.get(f"/drill/attempts/{attempt.pk}/").content.decode()
    before = re.search(r'<dd id="step-before">([^<]+)</dd>', html).group(1)
    step_row = re.search(r'data-sentence="1".*?<td class="truth-value">([^<]+)', page, re.S)
    assert step_row and step_row.group(1).strip() == before
