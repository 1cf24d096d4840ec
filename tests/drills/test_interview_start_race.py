"""A double click on "Start a mock interview" (two requests at once) starts one interview, not two:
the second was left unfinished beside the first, for ever in the learner's list."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.test import Client

from drills.interview import services
from drills.models import MockInterview

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_starts_at_once_make_one_interview(make_user, monkeypatch):
    user = make_user("double-clicker")
    looked_up = services.unfinished

    def slow_lookup(who):  # widen the window between "is there one?" and creating it
        found = looked_up(who)
        time.sleep(0.3)
        return found

    monkeypatch.setattr(services, "unfinished", slow_lookup)
    barrier = threading.Barrier(2)
    locations: list[str] = []

    def start():
        try:
            c = Client()
            c.force_login(user)
            barrier.wait(timeout=10)
            locations.append(c.post("/interview/start/")["Location"])
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert MockInterview.objects.filter(user=user).count() == 1
    assert len(set(locations)) == 1
