"""An answer that reaches a drill already closed without one (given up in another tab, or closed
as expired when the next drill was asked for) is not graded, and the learner is told so: the
reveal alone read "You gave up on this drill" to someone who had just sent a diagnosis."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from drills.contrast import services as contrast
from drills.models import Attempt, Card
from drills.trainer import services
from tests.conftest import right_answer

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
