"""The assign form: one open assignment of a set per cohort (also under two instructors at once),
re-narration's minimum lead time, and one error per goal number. Personas as in
tests/content/test_cohorts.py."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from cohorts import forms as cohort_forms
from cohorts.forms import RENARRATION_LEAD, AssignmentForm, earliest_renarration_due
from cohorts.models import Assignment, Cohort, Membership
from content import renarration
from content.models import WalkthroughSet

WALKS = ["walkthrough-straggler-vs-bandwidth", "walkthrough-recompilation-vs-starvation"]


@pytest.fixture
def wset(db):
    return WalkthroughSet.objects.update_or_create(
        slug="lookalikes-test", defaults={"title": "Lookalikes", "walkthroughs": WALKS}
    )[0]


@pytest.fixture
def cohort(people):
    c = Cohort.objects.create(name="Spring perf", created_by=people["teacher"])
    c.instructors.add(people["teacher"], people["coteacher"])
    Membership.objects.create(cohort=c, user=people["ada"])
    return c


def dt(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M")


def post_assign(client, cohort, **data):
    return client.post(f"/cohorts/{cohort.pk}/assign/", data)


def errors_of(html: str, field: str) -> str:
    """The error text shown with one field of the assign form ("" when none)."""
    (chunk,) = [c for c in html.split('<div class="field')[1:] if f'id="id_{field}"' in c]
    errors = re.search(r'<div class="errors" role="alert">(.*?)</div>', chunk, re.S)
    return re.sub(r"<[^>]+>", " ", errors.group(1)) if errors else ""


# --------------------------------------------------------------------------- 1. assigned once


@pytest.mark.django_db
def test_a_set_still_open_in_the_cohort_is_not_assigned_again(client, people, cohort, wset):
    client.force_login(people["teacher"])
    first_due = (timezone.now() + timedelta(days=5)).replace(hour=12, minute=0)
    assert post_assign(client, cohort, walkthrough_set=wset.pk, due_at=dt(first_due)).status_code
    assert Assignment.objects.count() == 1

    second_due = first_due + timedelta(days=3)
    resp = post_assign(
        client,
        cohort,
        walkthrough_set=wset.pk,
        due_at=dt(second_due),
        cutoff_at=dt(second_due + timedelta(days=1)),
        goal="pairs",
        goal_pair_drills="7",
        renarration="on",
    )
    html = resp.content.decode()
    assert resp.status_code == 400
    assert Assignment.objects.count() == 1
    error = errors_of(html, "walkthrough_set")
    assert (
        f"Lookalikes is already assigned to this cohort, due {first_due:%Y-%m-%d %H:%M} UTC."
        in error
    )
    # It names the extension feature as the page itself calls it.
    assert "“Give a learner an extension”" in error
    assert "<summary>Give a learner an extension</summary>" in html
    assert "assigned again once that due date has passed" in error
    # What was typed is still there.
    assert f'value="{dt(second_due)}"' in html
    assert f'value="{dt(second_due + timedelta(days=1))}"' in html
    assert re.search(r'<option value="pairs" selected>', html)
    assert re.search(r'name="goal_pair_drills" value="7"', html)
    assert re.search(r'name="renarration"[^>]* checked', html)
    assert re.search(rf'<option value="{wset.pk}" selected>', html)


@pytest.mark.django_db
def test_another_set_or_another_cohort_is_not_a_duplicate(client, people, cohort, wset):
    other_set = WalkthroughSet.objects.create(slug="other", title="Other", walkthroughs=WALKS)
    other_cohort = Cohort.objects.create(name="Autumn perf", created_by=people["teacher"])
    other_cohort.instructors.add(people["teacher"])
    client.force_login(people["teacher"])
    due = dt(timezone.now() + timedelta(days=3))
    for c, s in [(cohort, wset), (cohort, other_set), (other_cohort, wset)]:
        assert post_assign(client, c, walkthrough_set=s.pk, due_at=due).status_code == 302
    assert Assignment.objects.count() == 3


@pytest.mark.django_db
def test_once_the_old_due_date_has_passed_the_set_can_be_assigned_again(
    client, people, cohort, wset
):
    now = timezone.now()
    Assignment.objects.create(cohort=cohort, walkthrough_set=wset, due_at=now - timedelta(hours=1))
    client.force_login(people["teacher"])
    resp = post_assign(client, cohort, walkthrough_set=wset.pk, due_at=dt(now + timedelta(days=3)))
    assert resp.status_code == 302
    assert Assignment.objects.filter(cohort=cohort, walkthrough_set=wset).count() == 2
    # ... and the new one, open now, blocks a third.
    resp = post_assign(client, cohort, walkthrough_set=wset.pk, due_at=dt(now + timedelta(days=4)))
    assert resp.status_code == 400 and "already assigned" in resp.content.decode()


@pytest.mark.django_db
def test_a_form_checked_before_another_instructor_saved_is_refused_at_save(people, cohort, wset):
    """The check runs again under the cohort's lock: a form validated while the set was free
    and saved after another instructor assigned it gets the form error, not a second row."""
    due = timezone.now() + timedelta(days=3)
    form = AssignmentForm({"walkthrough_set": wset.pk, "due_at": dt(due)}, cohort=cohort)
    assert form.is_valid(), form.errors
    Assignment.objects.create(cohort=cohort, walkthrough_set=wset, due_at=due)  # the other one
    assert form.save_for(people["teacher"]) is None
    assert "already assigned to this cohort" in str(form.errors["walkthrough_set"])
    assert Assignment.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_instructors_assigning_at_once_make_one_assignment(people, cohort, wset):
    due = dt(timezone.now() + timedelta(days=3))
    barrier = threading.Barrier(2)
    statuses: list[int] = []
    errors: list[BaseException] = []

    def submit(who: str) -> None:
        try:
            c = Client()
            c.force_login(people[who])
            barrier.wait(10)
            resp = post_assign(c, cohort, walkthrough_set=wset.pk, due_at=due)
            statuses.append(resp.status_code)
            if resp.status_code == 400:
                assert "already assigned to this cohort" in resp.content.decode()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(w,)) for w in ("teacher", "coteacher")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert sorted(statuses) == [302, 400]
    assert Assignment.objects.filter(cohort=cohort, walkthrough_set=wset).count() == 1


# --------------------------------------------------------------------------- 2. re-narration


def test_the_renarration_lead_is_the_schedulers_delay():
    assert RENARRATION_LEAD == renarration.FIRST_DELAY
    help_text = AssignmentForm.base_fields["renarration"].help_text
    assert "comes back a day after reading" in help_text
    assert "at least a day away" in help_text


def test_earliest_renarration_due_rounds_up_to_the_minute():
    exact = datetime(2026, 3, 1, 17, 0, tzinfo=UTC)
    assert earliest_renarration_due(exact) == exact + RENARRATION_LEAD
    assert earliest_renarration_due(exact + timedelta(seconds=1)) == exact + RENARRATION_LEAD + (
        timedelta(minutes=1)
    )


@pytest.mark.django_db
def test_renarration_needs_the_lead_time_before_the_due_date(cohort, wset, monkeypatch):
    now = datetime(2026, 3, 1, 17, 0, 30, tzinfo=UTC)
    monkeypatch.setattr(cohort_forms.timezone, "now", lambda: now)

    def form(due: datetime, renarrate: bool) -> AssignmentForm:
        data = {"walkthrough_set": wset.pk, "due_at": dt(due)}
        if renarrate:
            data["renarration"] = "on"
        return AssignmentForm(data, cohort=cohort)

    soon = form(now + timedelta(hours=16), renarrate=True)
    assert not soon.is_valid()
    assert soon.errors["due_at"] == [
        "With re-narration, each walkthrough comes back a day after it is read: pick a due "
        "date at least a day away, 2026-03-02 17:01 UTC or later."
    ]
    # The date the message names is accepted; a minute before it is not.
    assert form(datetime(2026, 3, 2, 17, 1, tzinfo=UTC), renarrate=True).is_valid()
    assert not form(datetime(2026, 3, 2, 17, 0, tzinfo=UTC), renarrate=True).is_valid()
    # Without re-narration the same near due date is fine.
    assert form(now + timedelta(hours=16), renarrate=False).is_valid()
    # A due date in the past gets the past-date message alone.
    past = form(now - timedelta(hours=1), renarrate=True)
    assert not past.is_valid()
    assert past.errors["due_at"] == ["The due date is in the past: pick a time after now."]


@pytest.mark.django_db
def test_renarration_too_soon_is_refused_on_the_page(client, people, cohort, wset):
    client.force_login(people["teacher"])
    before = timezone.now()
    resp = post_assign(
        client,
        cohort,
        walkthrough_set=wset.pk,
        due_at=dt(before + timedelta(hours=16)),
        renarration="on",
    )
    after = timezone.now()
    assert resp.status_code == 400 and not Assignment.objects.exists()
    error = errors_of(resp.content.decode(), "due_at")
    shown = re.search(r"at least a day away, (\d{4}-\d\d-\d\d \d\d:\d\d) UTC or later", error)
    assert shown, error
    earliest = datetime.strptime(shown.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
    assert earliest_renarration_due(before) <= earliest <= earliest_renarration_due(after)


# --------------------------------------------------------------------------- 4. goal numbers


def refused_goal(client, people, cohort, wset, goal, field, **fields):
    """The instructor's assign form posted with `goal` and `fields`: refused (400, nothing
    saved); returns the response and the error shown at `field`."""
    client.force_login(people["teacher"])
    resp = post_assign(
        client,
        cohort,
        walkthrough_set=wset.pk,
        due_at=dt(timezone.now() + timedelta(days=3)),
        goal=goal,
        **fields,
    )
    assert resp.status_code == 400 and not Assignment.objects.exists()
    return resp, errors_of(resp.content.decode(), field)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("goal", "field", "value", "shown", "not_shown"),
    [
        ("retention", "goal_retention", "1.5", "less than or equal to 0.99", "Give the"),
        ("retention", "goal_retention", "0.2", "greater than or equal to 0.5", "Give the"),
        ("retention", "goal_retention", "", "Give the retrievability target X", "Ensure"),
        ("pairs", "goal_pair_drills", "0", "greater than or equal to 1", "Give the"),
        ("pairs", "goal_pair_drills", "", "Give the number of drills k", "Ensure"),
    ],
)
def test_a_goal_number_gets_one_error(
    client, people, cohort, wset, goal, field, value, shown, not_shown
):
    resp, error = refused_goal(client, people, cohort, wset, goal, field, **{field: value})
    assert shown in error and not_shown not in error
    assert f'name="{field}" value="{value}"' in resp.content.decode() or not value


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("goal", "field", "value", "named"),
    [
        ("", "goal_retention", "0.9", "retrievability ≥ X"),
        ("pairs", "goal_retention", "0.9", "retrievability ≥ X"),
        ("", "goal_pair_drills", "3", "drilled ≥ k times"),
        ("retention", "goal_pair_drills", "3", "drilled ≥ k times"),
    ],
)
def test_a_goal_number_without_its_goal_is_refused_not_dropped(
    client, people, cohort, wset, goal, field, value, named
):
    """An instructor who types X = 0.9 but leaves "No drill goal" chosen used to get
    "Assigned" and an assignment without a goal; the form says which goal the number is for."""
    extra = {"retention": {"goal_retention": "0.8"}, "pairs": {"goal_pair_drills": "2"}}
    _, error = refused_goal(
        client, people, cohort, wset, goal, field, **{**extra.get(goal, {}), field: value}
    )
    assert named in error and "choose that goal" in error


@pytest.mark.django_db
def test_the_assign_page_says_what_each_set_holds(client, people, cohort, wset):
    """The set picker offered "Lookalikes", "First week"... with no way to see their walkthroughs
    short of opening the track index in another tab."""
    client.force_login(people["teacher"])
    html = client.get(f"/cohorts/{cohort.pk}/assign/").content.decode()
    held = html[html.index("What each set holds") :]
    assert "<dt>Lookalikes</dt>" in held
    for slug in WALKS:
        assert f'href="/walkthroughs/{slug}/"' in held
    assert "Straggler or bandwidth-bound? A lookalike, narrated" in held
