"""Adding a co-instructor on the cohort page: a refused name comes back in the field, escaped,
with the reason; personas as in tests/content/test_cohorts.py."""

from __future__ import annotations

import html as html_lib
import re

import pytest

from cohorts.forms import CoInstructorForm
from cohorts.models import Cohort

pytestmark = pytest.mark.django_db


@pytest.fixture
def cohort(people):
    c = Cohort.objects.create(name="Spring perf", created_by=people["teacher"])
    c.instructors.add(people["teacher"])
    return c


def username_input(page: str) -> str:
    (tag,) = re.findall(r'<input[^>]*name="username"[^>]*>', page)
    return tag


def shown_value(page: str) -> str | None:
    value = re.search(r'value="([^"]*)"', username_input(page))
    return None if value is None else html_lib.unescape(value.group(1))


@pytest.mark.parametrize(
    ("typed", "message", "kept"),
    [
        ("teacherr", "No instructor is called “teacherr”.", "teacherr"),
        ("ada", "No instructor is called “ada”.", "ada"),
        ("teacher", "teacher already teaches this cohort.", "teacher"),
        ("", "Give the username of the instructor to add.", None),
        ("x" * 400, "Usernames have at most 150 characters; this one has 400.", "x" * 300),
    ],
)
def test_a_refused_name_comes_back_in_the_field(client, people, cohort, typed, message, kept):
    client.force_login(people["teacher"])
    url = f"/cohorts/{cohort.pk}/instructors/add/"
    resp = client.post(url, {"username": typed}, follow=True)
    page = resp.content.decode()
    assert resp.redirect_chain == [(f"/cohorts/{cohort.pk}/", 302)]
    assert message in page
    assert shown_value(page) == kept
    assert list(cohort.instructors.all()) == [people["teacher"]]
    # Shown once: the next view of the page has the field empty again.
    assert shown_value(client.get(f"/cohorts/{cohort.pk}/").content.decode()) is None


def test_a_refused_name_is_shown_escaped(client, people, cohort):
    client.force_login(people["teacher"])
    typed = '"><script>alert(1)</script>'
    page = client.post(
        f"/cohorts/{cohort.pk}/instructors/add/", {"username": typed}, follow=True
    ).content.decode()
    assert "<script>alert(1)</script>" not in page
    assert shown_value(page) == typed
    assert "No instructor is called “&quot;&gt;&lt;script&gt;" in page


def test_the_kept_name_stays_on_its_cohorts_page(client, people, cohort):
    other = Cohort.objects.create(name="Autumn perf", created_by=people["teacher"])
    other.instructors.add(people["teacher"])
    client.force_login(people["teacher"])
    client.post(f"/cohorts/{cohort.pk}/instructors/add/", {"username": "teacherr"})
    assert shown_value(client.get(f"/cohorts/{other.pk}/").content.decode()) is None
    assert shown_value(client.get(f"/cohorts/{cohort.pk}/").content.decode()) == "teacherr"


def test_a_known_instructor_is_added(client, people, cohort):
    client.force_login(people["teacher"])
    resp = client.post(
        f"/cohorts/{cohort.pk}/instructors/add/", {"username": " coteacher "}, follow=True
    )
    assert "coteacher now co-teaches Spring perf." in resp.content.decode()
    assert shown_value(resp.content.decode()) is None
    assert cohort.instructors.filter(pk=people["coteacher"].pk).exists()


def test_typed_username_is_bounded():
    form = CoInstructorForm({"username": "y" * 5000}, cohort=Cohort(name="x"))
    assert not form.is_valid()
    assert form.typed_username() == "y" * CoInstructorForm.TYPED_KEPT


# --------------------------------------------------------------------------- taking one off


def remove_url(cohort, user) -> str:
    return f"/cohorts/{cohort.pk}/instructors/{user.pk}/remove/"


def test_a_co_instructor_added_by_mistake_can_be_taken_off(client, people, cohort):
    """Adding the wrong co-instructor could not be undone: they kept every learner's answers
    in view for good. The cohort's creator now takes them off from the cohort page."""
    cohort.instructors.add(people["coteacher"])
    client.force_login(people["teacher"])
    page = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    assert f'action="{remove_url(cohort, people["coteacher"])}"' in page
    resp = client.post(remove_url(cohort, people["coteacher"]), follow=True)
    assert "coteacher no longer teaches Spring perf" in resp.content.decode()
    assert list(cohort.instructors.all()) == [people["teacher"]]
    client.force_login(people["coteacher"])
    assert client.get(f"/cohorts/{cohort.pk}/").status_code == 404


def test_a_co_instructor_leaves_but_does_not_take_others_off(client, people, cohort):
    cohort.instructors.add(people["coteacher"])
    client.force_login(people["coteacher"])
    page = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    assert f'action="{remove_url(cohort, people["teacher"])}"' not in page
    resp = client.post(remove_url(cohort, people["teacher"]), follow=True)
    assert "Only the instructor who created Spring perf" in resp.content.decode()
    assert cohort.instructors.filter(pk=people["teacher"].pk).exists()
    resp = client.post(remove_url(cohort, people["coteacher"]), follow=True)
    assert resp.redirect_chain == [("/cohorts/", 302)]
    assert "You no longer teach Spring perf." in resp.content.decode()
    assert list(cohort.instructors.all()) == [people["teacher"]]


def test_the_last_instructor_cannot_leave(client, people, cohort):
    client.force_login(people["teacher"])
    page = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    assert f'action="{remove_url(cohort, people["teacher"])}"' not in page
    resp = client.post(remove_url(cohort, people["teacher"]), follow=True)
    assert "teacher is the only instructor of Spring perf" in resp.content.decode()
    assert list(cohort.instructors.all()) == [people["teacher"]]


def test_taking_off_is_for_the_cohorts_instructors_only(client, people, cohort):
    cohort.instructors.add(people["coteacher"])
    for outsider in ("stranger", "ada"):
        client.force_login(people[outsider])
        assert client.post(remove_url(cohort, people["coteacher"])).status_code == 404
    assert cohort.instructors.count() == 2
