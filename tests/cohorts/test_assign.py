"""The assign form: re-narration's minimum lead time, and one error per goal number. Personas as
in tests/content/test_cohorts.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
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
def test_renarration_needs_the_lead_time_before_the_due_date(wset, monkeypatch):
    now = datetime(2026, 3, 1, 17, 0, 30, tzinfo=UTC)
    monkeypatch.setattr(cohort_forms.timezone, "now", lambda: now)

    def form(due: datetime, renarrate: bool) -> AssignmentForm:
        data = {"walkthrough_set": wset.pk, "due_at": dt(due)}
        if renarrate:
            data["renarration"] = "on"
        return AssignmentForm(data)

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
    client.force_login(people["teacher"])
    resp = post_assign(
        client,
        cohort,
        walkthrough_set=wset.pk,
        due_at=dt(timezone.now() + timedelta(days=3)),
        goal=goal,
        **{field: value},
    )
    assert resp.status_code == 400 and not Assignment.objects.exists()
    error = errors_of(resp.content.decode(), field)
    assert shown in error and not_shown not in error
    assert f'name="{field}" value="{value}"' in resp.content.decode() or not value
