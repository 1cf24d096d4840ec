"""What an instructor (careless or hostile) can send the cohort pages: names of accounts that are
not theirs to learn about, bogus choices, the same form twice. Personas as in
tests/content/test_cohorts.py."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from cohorts.forms import AssignmentForm
from cohorts.models import Cohort, Membership
from content.models import WalkthroughSet
from drills.contrast.forms import TrialForm
from drills.trainer.forms import DiagnosisForm, StartForm

pytestmark = pytest.mark.django_db

WALKS = ["walkthrough-straggler-vs-bandwidth", "walkthrough-recompilation-vs-starvation"]


@pytest.fixture
def cohort(people):
    c = Cohort.objects.create(name="Spring perf", created_by=people["teacher"])
    c.instructors.add(people["teacher"])
    Membership.objects.create(cohort=c, user=people["ada"])
    return c


@pytest.fixture
def wset(db):
    return WalkthroughSet.objects.update_or_create(
        slug="lookalikes-test", defaults={"title": "Lookalikes", "walkthroughs": WALKS}
    )[0]


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


# --------------------------------------------------------------------------- 2. bogus choices


def test_a_bogus_goal_is_not_echoed_back(client, people, cohort, wset):
    """A goal posted as 5000 characters came back whole in the error ("Select a valid choice.
    XXXX… is not one of the available choices."), a page of junk under the field."""
    client.force_login(people["teacher"])
    junk = "Q" * 5000
    due = (timezone.now() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    resp = client.post(
        f"/cohorts/{cohort.pk}/assign/",
        {"walkthrough_set": wset.pk, "due_at": due, "goal": junk},
    )
    page = resp.content.decode()
    assert resp.status_code == 400
    assert "Q" * 50 not in page
    assert "Choose one of the listed drill goals." in page


@pytest.mark.parametrize(
    ("form_class", "field"),
    [
        (DiagnosisForm, "scenario"),
        (DiagnosisForm, "measurement"),
        (DiagnosisForm, "fix"),
        (StartForm, "mode"),
        (TrialForm, "side"),
        (TrialForm, "measurement"),
        (AssignmentForm, "goal"),
    ],
)
def test_no_choice_field_repeats_a_bogus_value(people, cohort, form_class, field):
    """The same echo on every list of choices: each says which list to choose from instead."""
    junk = "Q" * 5000
    extra = {"cohort": cohort} if form_class is AssignmentForm else {}
    form = form_class({field: junk}, **extra)
    assert not form.is_valid()
    (message,) = form.errors[field]
    assert "Q" not in message and ("Choose one of the listed" in message or "Pick" in message)
