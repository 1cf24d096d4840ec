"""A learner signed out in another tab who sends a form by htmx (the drill's diagnosis) gets a
401 that htmx swaps nowhere, not the redirect to sign-in: the browser followed that redirect
inside the request and htmx swapped the sign-in page over the drill, typed diagnosis and all."""

from __future__ import annotations

import pytest
from django.test import Client

from drills.trainer import services
from tests.conftest import PASSWORD, right_answer

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
    assert c.get("/drill/").status_code == 302  # a GET still goes to sign-in, back to itself
    attempt.refresh_from_db()
    assert not attempt.is_submitted


def test_every_page_loads_the_script_that_reports_an_unsent_form(learner_client):
    assert "js/htmx-errors.js" in learner_client.get("/drill/").content.decode()


def test_a_signed_out_plain_form_signs_in_back_to_the_page_it_was_on(learner, no_refill):
    """Not to the button's address: after signing in, a GET of that answered 405."""
    attempt = services.start_drill(learner, scenario="healthy")
    page = f"/drill/attempts/{attempt.pk}/"
    c = Client()
    r = c.post(page + "diagnosis/", right_answer(attempt), HTTP_REFERER=f"http://testserver{page}")
    assert r.status_code == 302 and r["Location"] == f"/accounts/login/?next={page}"
    signed_in = c.post(r["Location"], {"username": learner.username, "password": PASSWORD})
    assert signed_in["Location"] == page and c.get(page).status_code == 200


@pytest.mark.parametrize(
    "referer", ["", "https://evil.example/drill/", "//evil.example/x", "javascript:alert(1)"]
)
def test_a_signed_out_post_from_elsewhere_signs_in_to_today(referer, learner, no_refill):
    attempt = services.start_drill(learner, scenario="healthy")
    r = Client().post(f"/drill/attempts/{attempt.pk}/abandon/", HTTP_REFERER=referer)
    assert r.status_code == 302 and r["Location"] == "/accounts/login/?next=/"
