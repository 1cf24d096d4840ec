"""Every CSV download starts with a UTF-8 byte-order mark: without it Excel opened the cohort's
exports in the machine's legacy code page, and learners named "Zoë" or "Łukasz" read "ZoÃ«"
and "Å\x81ukasz"."""

from __future__ import annotations

import csv
import io

import pytest

from cohorts.models import Cohort, Membership
from drills.trainer import services
from tests.conftest import right_answer
from tests.content.test_cohorts import as_user

pytestmark = pytest.mark.django_db

NAMES = ["Zoë", "Łukasz"]


def test_both_cohort_exports_start_with_a_byte_order_mark(client, people, make_user, no_refill):
    cohort = Cohort.objects.create(name="Names", created_by=people["teacher"])
    cohort.instructors.add(people["teacher"])
    for name in NAMES:
        learner = make_user(name)
        Membership.objects.create(cohort=cohort, user=learner)
        attempt = services.start_drill(learner, scenario="healthy")
        as_user(client, learner)
        client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    as_user(client, people["teacher"])
    for url, header in (
        (f"/cohorts/{cohort.pk}/export.csv", None),
        (f"/cohorts/{cohort.pk}/attempts.csv", "username"),
    ):
        response = client.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert body.startswith(b"\xef\xbb\xbf"), url
        assert body.count(b"\xef\xbb\xbf") == 1, url  # once, not before every row
        rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
        if header:
            assert rows[0][0] == header
        assert sorted(r[0] for r in rows[1:]) == sorted(NAMES), url
