"""An answer that reaches a drill already closed without one (given up in another tab, or closed
as expired when the next drill was asked for) is not graded, and the learner is told so: the
reveal alone read "You gave up on this drill" to someone who had just sent a diagnosis."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test import Client
from django.utils import timezone

from drills.contrast import services as contrast
from drills.interview import services as interviews
from drills.models import Attempt, Card, MockInterview
from drills.trainer import services
from tests.conftest import needs_postgres, right_answer, script_scheduler

pytestmark = pytest.mark.django_db

CHEAP = "healthy"
NOT_RECORDED = "the answer you just sent was not recorded"


def messages_on(html: str) -> list[str]:
    found = re.search(r'<ul class="messages">(.*?)</ul>', html, re.S)
    return (
        [re.sub(r"\s+", " ", m).strip() for m in re.findall(r"<li[^>]*>(.*?)</li>", found[1])]
        if found
        else []
    )


def test_a_diagnosis_sent_after_giving_up_in_another_tab_says_it_was_not_recorded(
    learner_client, learner, no_refill
):
    attempt = services.start_drill(learner, scenario=CHEAP)
    learner_client.post(f"/drill/attempts/{attempt.pk}/abandon/")  # the other tab
    reviews = list(Card.objects.filter(user=learner).values_list("item", "reviews"))

    page = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt), follow=True
    )

    shown = messages_on(page.content.decode())
    assert any(NOT_RECORDED in m and "gave up" in m for m in shown), shown
    attempt.refresh_from_db()
    assert attempt.closed == "abandoned" and attempt.answer_scenario == ""
    assert list(Card.objects.filter(user=learner).values_list("item", "reviews")) == reviews


def test_an_htmx_diagnosis_to_an_expired_and_closed_drill_reloads_the_page_with_the_notice(
    learner_client, learner, no_refill
):
    attempt = services.start_drill(learner, scenario=CHEAP)
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - timedelta(minutes=10))
    services.next_drill(learner, Attempt.Mode.TIMED)  # closes it as expired, deals the next
    url = f"/drill/attempts/{attempt.pk}/"

    r = learner_client.post(url + "diagnosis/", right_answer(attempt), HTTP_HX_REQUEST="true")

    # The partial swap has nowhere to show a message: the page is loaded afresh.
    assert r.status_code == 204 and r["HX-Redirect"] == url
    shown = messages_on(learner_client.get(url).content.decode())
    assert any(NOT_RECORDED in m and "clock ran out" in m for m in shown), shown
    attempt.refresh_from_db()
    assert attempt.closed == "expired" and attempt.answer_scenario == ""


def test_a_second_submit_of_a_graded_diagnosis_says_nothing_of_the_kind(
    learner_client, learner, no_refill
):
    attempt = services.start_drill(learner, scenario=CHEAP)
    url = f"/drill/attempts/{attempt.pk}/diagnosis/"
    learner_client.post(url, right_answer(attempt))
    page = learner_client.post(url, right_answer(attempt), follow=True)
    assert not any(NOT_RECORDED in m for m in messages_on(page.content.decode()))
    hx = learner_client.post(url, right_answer(attempt), HTTP_HX_REQUEST="true")
    assert hx.status_code == 200 and "HX-Redirect" not in hx


def test_a_pick_sent_to_a_trial_given_up_elsewhere_says_it_was_not_recorded(
    learner_client, learner, no_refill
):
    trial = contrast.deal(learner, "healthy|launch-bound")
    learner_client.post(f"/drill/attempts/{trial.pk}/abandon/")

    page = learner_client.post(
        f"/drill/trials/{trial.pk}/answer/", {"side": "left", "measurement": "busbw"}, follow=True
    )

    shown = messages_on(page.content.decode())
    assert any(NOT_RECORDED in m for m in shown), shown
    trial.refresh_from_db()
    assert trial.closed == "abandoned" and not trial.answer_scenario


LATE_INTERVIEW = "clock on this interview trace had run out when your answer arrived"


def lands_on(client: Client, response, *, htmx: bool) -> tuple[str, list[str]]:
    """Where a diagnosis's response takes the learner, and the messages that page shows. An htmx
    submit must reload a page (``HX-Redirect``): a swapped-in reveal has no place for them."""
    if htmx:
        assert response.status_code == 204, response.status_code
        url = response["HX-Redirect"]
    else:
        assert response.status_code == 302, response.status_code
        url = response["Location"]
    page = client.get(url, follow=True)
    return page.redirect_chain[-1][0] if page.redirect_chain else url, messages_on(
        page.content.decode()
    )


def answer(client: Client, attempt: Attempt, *, htmx: bool):
    extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt), **extra)


def a_request_waits_for_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0] > 0


@contextmanager
def closed_while_the_answer_waits(attempt: Attempt, close: Callable[[], object]) -> Iterator[None]:
    """Another connection holds the attempt's row lock; once the answer's request (which read
    the attempt open) waits for it, ``close`` runs there and commits: the answer then reaches an
    attempt already closed, as when another tab or the interview's end gets there first."""
    held = threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with transaction.atomic():
                Attempt.objects.select_for_update().get(pk=attempt.pk)
                held.set()
                deadline = time.monotonic() + 20
                while not a_request_waits_for_a_lock():
                    assert time.monotonic() < deadline, "the answer never waited for the lock"
                    time.sleep(0.02)
                close()
        except BaseException as exc:
            errors.append(exc)
        finally:
            held.set()
            connections.close_all()

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(timeout=10)
    yield
    thread.join(timeout=30)
    assert not errors, errors


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("htmx", [False, True], ids=["post", "htmx"])
def test_a_drill_given_up_in_another_tab_while_its_answer_was_on_its_way(
    htmx, learner_client, learner, no_refill
):
    needs_postgres()
    attempt = services.start_drill(learner, scenario=CHEAP)

    with closed_while_the_answer_waits(
        attempt, lambda: services.close_attempt(attempt, "abandoned")
    ):
        response = answer(learner_client, attempt, htmx=htmx)

    url, shown = lands_on(learner_client, response, htmx=htmx)
    assert url == f"/drill/attempts/{attempt.pk}/"
    assert any(NOT_RECORDED in m and "gave up" in m for m in shown), shown
    attempt.refresh_from_db()
    assert attempt.closed == "abandoned" and attempt.answer_scenario == ""


def an_interview_trace(client: Client, monkeypatch, *, served_ago: timedelta, open_for=None):
    script_scheduler(monkeypatch, iter([CHEAP] * 3))
    url = client.post("/interview/start/")["Location"]
    location = client.post(f"{url}next/")["Location"]
    attempt = Attempt.objects.select_related("trace").get(pk=location.split("/")[3])
    Attempt.objects.filter(pk=attempt.pk).update(served_at=timezone.now() - served_ago)
    if open_for is not None:
        MockInterview.objects.filter(pk=attempt.interview_id).update(
            started_at=timezone.now() - open_for
        )
    return url, attempt


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True], ids=["post", "htmx"])
def test_an_interview_answer_past_its_clock_says_it_was_not_recorded(
    htmx, learner_client, learner, no_refill, monkeypatch
):
    interview_url, attempt = an_interview_trace(
        learner_client, monkeypatch, served_ago=timedelta(minutes=10)
    )

    response = answer(learner_client, attempt, htmx=htmx)

    url, shown = lands_on(learner_client, response, htmx=htmx)
    assert url == interview_url  # the interview goes on: its next trace
    assert any(LATE_INTERVIEW in m for m in shown), shown
    attempt.refresh_from_db()
    assert attempt.closed == "expired" and attempt.answer_scenario == ""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("htmx", [False, True], ids=["post", "htmx"])
def test_an_interview_answer_on_its_way_when_the_interview_ends_past_its_hour(
    htmx, learner_client, learner, no_refill, monkeypatch
):
    needs_postgres()
    _, attempt = an_interview_trace(
        learner_client,
        monkeypatch,
        served_ago=timedelta(minutes=10),
        open_for=interviews.OPEN_FOR + timedelta(minutes=5),
    )

    with closed_while_the_answer_waits(attempt, interviews.end_those_past_their_hour):
        response = answer(learner_client, attempt, htmx=htmx)

    url, shown = lands_on(learner_client, response, htmx=htmx)
    assert url == f"/drill/attempts/{attempt.pk}/"  # the interview has ended: the reveal
    assert any(LATE_INTERVIEW in m for m in shown), shown
    assert MockInterview.objects.get(pk=attempt.interview_id).is_finished
