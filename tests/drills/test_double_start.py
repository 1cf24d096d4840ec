"""A double click on a start button (two requests at once) starts one thing, not two: a second
mock interview stayed unfinished in the learner's list for ever, a second sprint ended with a
score of 0 in the sprint chart, a second math drill stayed open behind the first, and an
instructor had two cohorts of the same name (the second click now lands on the cohort the first
made, with a note that the form was sent twice)."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.test import Client

from accounts.roles import make_instructor
from cohorts import forms as cohort_forms
from cohorts.models import Cohort
from drills.interview import services as interviews
from drills.mentalmath import services as math
from drills.models import MathAttempt, MathSprint, MockInterview

pytestmark = pytest.mark.django_db(transaction=True)

STARTS = {
    # url, the module whose "is one running?" lookup is slowed, its name, what must stay one
    "interview": ("/interview/start/", interviews, "unfinished", MockInterview.objects),
    "sprint": ("/math/sprint/", math, "running_sprint", MathSprint.objects),
    "math drill": (
        "/math/next/",
        math,
        "open_attempt",
        MathAttempt.objects.filter(mode=MathAttempt.Mode.SINGLE),
    ),
    "cohort": ("/cohorts/new/", cohort_forms.Cohort.objects, "taught_by", Cohort.objects),
}


@pytest.mark.parametrize("what", sorted(STARTS))
def test_two_starts_at_once_make_one(what, make_user, monkeypatch):
    url, module, lookup, made = STARTS[what]
    user = make_user("double-clicker")
    make_instructor(user)
    looked_up = getattr(module, lookup)

    def slow_lookup(*args, **kwargs):  # widen the window between "is there one?" and making it
        found = looked_up(*args, **kwargs)
        time.sleep(0.3)
        return found

    monkeypatch.setattr(module, lookup, slow_lookup)
    barrier = threading.Barrier(2)
    locations: list[str] = []

    def start():
        try:
            c = Client()
            c.force_login(user)
            barrier.wait(timeout=10)
            r = c.post(url, {"family": "", "name": "Spring term"})
            locations.append(r.get("Location", str(r.status_code)))
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    if what == "cohort":  # the second lands on the cohort the first made, not on a refusal
        (made_one,) = Cohort.objects.filter(instructors=user)
        assert locations == [f"/cohorts/{made_one.pk}/"] * 2
        return
    assert made.filter(user=user).count() == 1
    assert len(locations) == 2 and len(set(locations)) == 1
