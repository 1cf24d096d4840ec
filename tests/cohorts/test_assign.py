"""The assign form: one error per goal number. Personas as in tests/content/test_cohorts.py."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from cohorts.models import Assignment, Cohort, Membership
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
