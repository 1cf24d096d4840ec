"""A learner signed out in another tab who sends a form by htmx (the drill's diagnosis) gets a
401 that htmx swaps nowhere, not the redirect to sign-in: the browser followed that redirect
inside the request and htmx swapped the sign-in page over the drill, typed diagnosis and all."""

from __future__ import annotations

import pytest
from django.test import Client

from drills.trainer import services
from tests.conftest import right_answer

pytestmark = pytest.mark.django_db


def test_a_signed_out_htmx_send_is_a_401_and_a_plain_one_still_goes_to_sign_in(learner, no_refill):
    attempt = services.start_drill(learner, scenario="healthy")
    url = f"/drill/attempts/{attempt.pk}/diagnosis/"
    c = Client()
    c.force_login(learner)
    c.post("/accounts/logout/")  # the other tab

    hx = c.post(url, right_answer(attempt), HTTP_HX_REQUEST="true")
    assert hx.status_code == 401 and "Location" not in hx
    assert "signed out" in hx.content.decode()

    plain = c.post(url, right_answer(attempt))
    assert plain.status_code == 302 and plain["Location"].startswith("/accounts/login/?next=")
    attempt.refresh_from_db()
    assert not attempt.is_submitted


def test_every_page_loads_the_script_that_reports_an_unsent_form(learner_client):
    assert "js/htmx-errors.js" in learner_client.get("/drill/").content.decode()
