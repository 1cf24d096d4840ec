"""An instructor opens a cohort learner's drill read-only, with its reveal and timeline."""

from __future__ import annotations

import gzip

import orjson
import pytest
from django.test import Client

from cohorts.models import Cohort, Membership
from drills.models import Attempt
from tests.conftest import PASSWORD, right_answer

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    c = Client()
    assert c.login(username=user.username, password=PASSWORD)
    return c


@pytest.fixture
def world(people):
    cohort = Cohort.objects.create(name="Spring perf", created_by=people["teacher"])
    cohort.instructors.add(people["teacher"])
    Membership.objects.create(cohort=cohort, user=people["ada"])
    ada = _client(people["ada"])
    assert ada.post("/drill/next/", {"mode": "timed"}).status_code == 302
    done = Attempt.objects.select_related("trace").get(user=people["ada"])
    assert ada.post(f"/drill/attempts/{done.pk}/diagnosis/", right_answer(done)).status_code in (
        200,
        302,
    )
    assert ada.post("/drill/next/", {"mode": "timed"}).status_code == 302
    still_open = Attempt.objects.get(user=people["ada"], submitted_at__isnull=True)
    return people, cohort, done, still_open


def _url(cohort, user, attempt, tail=""):
    return f"/cohorts/{cohort.pk}/learners/{user.pk}/attempts/{attempt.pk}/{tail}"


def test_the_learner_page_links_each_drill_to_its_read_only_reveal(world):
    people, cohort, done, _ = world
    teacher = _client(people["teacher"])
    page = teacher.get(f"/cohorts/{cohort.pk}/learners/{people['ada'].pk}/").content.decode()
    assert _url(cohort, people["ada"], done) in page
    html = teacher.get(_url(cohort, people["ada"], done)).content.decode()
    assert f'data-scenario="{done.scenario}"' in html
    assert 'id="read-only"' in html and "Next drill" not in html
    timeline = teacher.get(
        _url(cohort, people["ada"], done, "timeline.json"), HTTP_ACCEPT_ENCODING="gzip"
    )
    assert timeline.status_code == 200
    assert "slices" in orjson.loads(gzip.decompress(timeline.content))


def test_an_open_attempt_and_anyone_but_the_cohorts_instructors_get_404(world):
    people, cohort, done, still_open = world
    teacher = _client(people["teacher"])
    assert teacher.get(_url(cohort, people["ada"], still_open)).status_code == 404
    for who in ("stranger", "bob", "ada"):
        c = _client(people[who])
        assert c.get(_url(cohort, people["ada"], done)).status_code == 404, who
        assert c.get(_url(cohort, people["ada"], done, "timeline.json")).status_code == 404, who
    # eve is in no cohort of teacher's: her attempts are not his to open, even by id.
    eve = _client(people["eve"])
    eve.post("/drill/next/", {"mode": "practice"})
    hers = Attempt.objects.get(user=people["eve"])
    assert teacher.get(_url(cohort, people["eve"], hers)).status_code == 404
    assert teacher.get(_url(cohort, people["ada"], hers)).status_code == 404
