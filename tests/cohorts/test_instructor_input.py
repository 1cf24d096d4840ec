"""What an instructor (careless or hostile) can send the cohort pages: names of accounts that are
not theirs to learn about, bogus choices, the same form twice. Personas as in
tests/content/test_cohorts.py."""

from __future__ import annotations

import re

import pytest

from cohorts.models import Cohort, Membership

pytestmark = pytest.mark.django_db


@pytest.fixture
def cohort(people):
    c = Cohort.objects.create(name="Spring perf", created_by=people["teacher"])
    c.instructors.add(people["teacher"])
    Membership.objects.create(cohort=c, user=people["ada"])
    return c


def flash_text(html: str) -> str:
    """The page's messages, tags dropped."""
    found = re.findall(r'<ul class="messages">.*?</ul>', html, re.S)
    return re.sub(r"<[^>]+>", " ", " ".join(found))


# --------------------------------------------------------------------------- 1. co-instructor


def test_adding_a_co_instructor_does_not_tell_which_accounts_exist(client, people, cohort):
    """The reply for a name nobody has ("No user is called …") differed from the reply for a
    learner's name ("ada is not an instructor yet …"): typing names one by one listed the site's
    accounts. Both now get one answer, which still says what to check."""
    client.force_login(people["teacher"])
    url = f"/cohorts/{cohort.pk}/instructors/add/"
    nobody = client.post(url, {"username": "nosuchperson"}, follow=True).content.decode()
    learner = client.post(url, {"username": "eve"}, follow=True).content.decode()
    said_nobody = flash_text(nobody).replace("nosuchperson", "NAME")
    said_learner = flash_text(learner).replace("eve", "NAME")
    assert said_nobody.strip() and said_nobody == said_learner
    assert "No instructor is called “NAME”" in said_nobody
    assert "make_instructor" in said_nobody  # still says how someone becomes one
    assert list(cohort.instructors.all()) == [people["teacher"]]
