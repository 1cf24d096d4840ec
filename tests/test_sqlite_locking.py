"""The embedded SQLite database under concurrent writers: a request's transaction that reads and
then writes while another connection (an in-process pool refill) is writing waits its turn instead
of failing with "database is locked"."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections, transaction

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_read_then_write_transaction_waits_for_another_writer():
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's lock upgrade; PostgreSQL locks rows")
    User = get_user_model()
    user = UserFactory()
    holding = threading.Event()
    failures: list[BaseException] = []

    def other_writer():
        try:
            with transaction.atomic():
                User.objects.filter(pk=user.pk).update(first_name="refill")
                holding.set()
                threading.Event().wait(0.4)  # still holding the write lock
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)
            holding.set()
        finally:
            connections.close_all()

    writer = threading.Thread(target=other_writer)
    writer.start()
    assert holding.wait(10)
    with transaction.atomic():
        User.objects.get(pk=user.pk)  # read first, as a view does
        User.objects.filter(pk=user.pk).update(last_name="request")  # then write
    writer.join(10)
    assert not failures
    user.refresh_from_db()
    assert (user.first_name, user.last_name) == ("refill", "request")
