"""An upload past its expiry is gone for its owner at once, whether or not the hourly sweep (Celery
beat, absent in the embedded one-command mode) has run: the page promises it is deleted after
UPLOAD_EXPIRY_DAYS, and it used to stay listed, viewable and downloadable."""

from __future__ import annotations

import gzip
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from scenarios.uploads import Upload
from tests.factories import ready_upload

pytestmark = pytest.mark.django_db


def _expired(owner, name: str):
    return ready_upload(
        owner,
        filename=name,
        expires_at=timezone.now() - timedelta(minutes=1),
        timeline_gz=gzip.compress(b'{"slices": {}}'),
        perfetto_gz=gzip.compress(b'{"traceEvents": []}'),
        analysis={},
    )


def test_an_expired_upload_is_neither_listed_nor_served(learner_client, learner):
    old = _expired(learner, "last-month.json")
    fresh = ready_upload(learner, filename="this-week.json")

    listing = learner_client.get(reverse("scenarios:upload_list")).content.decode()
    assert "this-week.json" in listing and "last-month.json" not in listing
    for name in ("upload_detail", "upload_timeline", "upload_perfetto"):
        assert learner_client.get(reverse(f"scenarios:{name}", args=[old.pk])).status_code == 404
    fresh_page = learner_client.get(reverse("scenarios:upload_detail", args=[fresh.pk]))
    assert fresh_page.status_code == 200


def test_uploading_again_deletes_the_owners_expired_uploads(learner_client, learner, make_user):
    _expired(learner, "last-month.json")
    other = _expired(make_user("someone"), "theirs.json")  # the sweep's, not this request's
    learner_client.post(
        reverse("scenarios:upload_list"), {"trace": SimpleUploadedFile("new.json", b"{}")}
    )
    assert not Upload.objects.filter(owner=learner, filename="last-month.json").exists()
    assert Upload.objects.filter(pk=other.pk).exists()
