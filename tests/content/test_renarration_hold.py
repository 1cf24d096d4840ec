"""While a re-narration is open, the walkthroughs do not narrate its trace: the walkthrough page
gives the very numbers the five sentences ask for, on the very trace. Every walkthrough is held,
not only the one re-narrated (holding one would name it, and with it the scenario)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from content.pages import library
from drills.models import Card
from tests.conftest import right_answer
from tests.content.test_renarration import CHEAP_WALK, read, start_over_http

pytestmark = pytest.mark.django_db


def _walkthroughs() -> list[str]:
    return [p.slug for p in library().ordered if p.is_walkthrough]


def test_walkthroughs_hide_their_narration_until_the_renarration_is_committed(
    learner_client, learner
):
    read(learner, CHEAP_WALK, timedelta(days=1, hours=1))
    first = start_over_http(learner_client)
    key = first.trace.key
    step = f"{key['grading']['step_ms']:.1f}"
    # Before the hold: the walkthrough page narrates the trace with its step time (the check
    # that the page would give the number away).
    learner_client.post(f"/drill/attempts/{first.pk}/diagnosis/", right_answer(first))
    page = learner_client.get(f"/walkthroughs/{CHEAP_WALK}/").content.decode()
    assert step in page and "Re-narration in progress" not in page
    earlier_result = f"/renarrations/{first.pk}/"
    assert step in learner_client.get(earlier_result).content.decode()

    # The same walkthrough due again: a second re-narration of the same trace is open.
    Card.objects.filter(user=learner, kind=Card.Kind.RENARRATION, item=CHEAP_WALK).update(
        due=timezone.now() - timedelta(minutes=1)
    )
    second = start_over_http(learner_client)
    assert second.pk != first.pk and second.item == CHEAP_WALK

    for slug in _walkthroughs():
        response = learner_client.get(f"/walkthroughs/{slug}/")
        html = response.content.decode()
        assert response.status_code == 200 and "Re-narration in progress" in html, slug
        assert step not in html and f"/drill/attempts/{second.pk}/" in html
        for part in ("timeline.json", "perfetto.json"):
            url = f"/walkthroughs/{slug}/{part}"
            assert learner_client.get(url).status_code == 403, url
    held = learner_client.get(earlier_result).content.decode()
    assert "Re-narration in progress" in held and step not in held

    learner_client.post(f"/drill/attempts/{second.pk}/diagnosis/", right_answer(second))
    page = learner_client.get(f"/walkthroughs/{CHEAP_WALK}/").content.decode()
    assert step in page and "Re-narration in progress" not in page
