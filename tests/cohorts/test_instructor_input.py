"""What an instructor (careless or hostile) can send the cohort pages: names of accounts that are
not theirs to learn about, bogus choices, the same form twice. Personas as in
tests/content/test_cohorts.py."""

from __future__ import annotations

import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
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


# --------------------------------------------------------------------------- 3. sent twice


def test_create_cohort_sent_twice_lands_on_the_cohort(client, people):
    """Two quick "Create cohort" submissions: the first made the cohort, the second showed the
    form again with "You already teach a cohort called …", as if nothing had been made."""
    client.force_login(people["stranger"])
    first = client.post("/cohorts/new/", {"name": "Autumn perf"})
    second = client.post("/cohorts/new/", {"name": "Autumn perf"}, follow=True)
    (made,) = Cohort.objects.filter(name="Autumn perf")
    assert first.url == f"/cohorts/{made.pk}/"
    assert second.redirect_chain == [(f"/cohorts/{made.pk}/", 302)]
    said = flash_text(second.content.decode())
    assert "Autumn perf was already created (the form was sent twice)" in said
    assert made.join_code in said


def test_an_older_cohort_of_the_name_is_still_refused(client, people, cohort):
    """Past the resubmission window a same-named cohort is a real clash: the form says so."""
    Cohort.objects.filter(pk=cohort.pk).update(created_at=timezone.now() - timedelta(hours=1))
    client.force_login(people["teacher"])
    resp = client.post("/cohorts/new/", {"name": "spring perf"})
    assert resp.status_code == 400
    assert "You already teach a cohort called" in resp.content.decode()
    assert Cohort.objects.count() == 1


def test_a_co_instructors_cohort_of_the_name_is_refused_not_opened(client, people, cohort):
    """The cohort was made by someone else: the co-instructor's form is not a resubmission."""
    cohort.instructors.add(people["coteacher"])
    client.force_login(people["coteacher"])
    resp = client.post("/cohorts/new/", {"name": "Spring perf"})
    assert resp.status_code == 400
    assert "You already teach a cohort called" in resp.content.decode()


@pytest.mark.django_db(transaction=True)
def test_two_create_submissions_at_once_make_one_cohort_and_both_land_on_it(people):
    barrier = threading.Barrier(2)
    landed: list[str] = []
    errors: list[BaseException] = []

    def submit() -> None:
        try:
            c = Client()
            c.force_login(people["stranger"])
            barrier.wait(10)
            resp = c.post("/cohorts/new/", {"name": "Winter perf"})
            landed.append(resp["Location"] if resp.status_code == 302 else str(resp.status_code))
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    (made,) = Cohort.objects.filter(name="Winter perf")
    assert landed == [f"/cohorts/{made.pk}/"] * 2


def test_remove_sent_twice_says_the_learner_is_gone(client, people, cohort):
    """The second of two "remove" clicks answered "Not Found", a page with no way back, although
    the first had removed the learner."""
    client.force_login(people["teacher"])
    url = f"/cohorts/{cohort.pk}/members/{people['ada'].pk}/remove/"
    client.post(url)
    second = client.post(url, follow=True)
    assert second.redirect_chain == [(f"/cohorts/{cohort.pk}/", 302)]
    assert "That learner is not in Spring perf (already removed?)" in flash_text(
        second.content.decode()
    )
    assert not cohort.members.exists()
    # A user id that is nobody's gets the same answer, naming nobody.
    stray = client.post(f"/cohorts/{cohort.pk}/members/{people['eve'].pk}/remove/", follow=True)
    assert "eve" not in flash_text(stray.content.decode())
    # Another instructor's cohort is still not found.
    client.force_login(people["stranger"])
    assert client.post(url).status_code == 404


def test_assign_sent_twice_lands_on_the_assignment(client, people, cohort, wset):
    """A double click on "Assign" made the assignment once, then showed the form refused with
    "Lookalikes is already assigned to this cohort …" and a 400, as if it had failed."""
    client.force_login(people["teacher"])
    due = (timezone.now() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    form = {"walkthrough_set": wset.pk, "due_at": due, "goal": "pairs", "goal_pair_drills": "3"}
    url = f"/cohorts/{cohort.pk}/assign/"
    assert client.post(url, form).status_code == 302
    second = client.post(url, form, follow=True)
    assert second.redirect_chain == [(url, 302)]
    said = flash_text(second.content.decode())
    assert "Lookalikes was already assigned (the form was sent twice)" in said
    assert cohort.assignments.count() == 1
    # The same set with another due date is a real clash: refused on the form, as before.
    later = (timezone.now() + timedelta(days=9)).strftime("%Y-%m-%dT%H:%M")
    third = client.post(url, {**form, "due_at": later})
    assert third.status_code == 400
    assert "already assigned to this cohort" in third.content.decode()
    # So is the same form from a co-instructor, who did not send the first.
    cohort.instructors.add(people["coteacher"])
    client.force_login(people["coteacher"])
    assert client.post(url, form).status_code == 400
    assert cohort.assignments.count() == 1
