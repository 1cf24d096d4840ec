"""What a visitor and a newcomer see first."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from content.pages import library
from drills.models import Attempt
from tests.conftest import PASSWORD, right_answer

pytestmark = pytest.mark.django_db


def test_a_visitor_gets_a_landing_page_that_says_what_tracetrack_is():
    response = Client().get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "GPU" in html and "two minutes" in html
    assert 'href="/accounts/signup/"' in html and 'href="/accounts/login/"' in html
    assert "img/landing-trace.png" in html


def test_favicon_is_linked_from_every_page_and_the_ico_path_redirects_to_it():
    html = Client().get("/accounts/login/").content.decode()
    assert 'rel="icon"' in html and "img/favicon.svg" in html
    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("img/favicon.svg")


def _learner() -> Client:
    User.objects.create_user("newbie", password=PASSWORD)
    c = Client()
    assert c.login(username="newbie", password=PASSWORD)
    return c


def test_a_newcomer_is_pointed_to_the_vocabulary_and_the_first_walkthrough_before_drilling():
    html = _learner().get("/").content.decode()
    steps = library().first_steps()
    assert [p.section for p in steps] == ["vocabulary", "walkthroughs"]
    for p in steps:
        assert f'href="{p.url}"' in html
    assert html.index(steps[0].url) < html.index("Start a drill")


def test_the_first_steps_note_goes_away_after_the_first_submitted_drill():
    c = _learner()
    assert c.post("/drill/next/", {"mode": "practice"}).status_code == 302
    assert "New here?" in c.get("/").content.decode()  # dealing alone changes nothing here
    attempt = Attempt.objects.select_related("trace").get()
    c.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    assert "New here?" not in c.get("/").content.decode()
