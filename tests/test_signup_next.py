"""A newcomer who follows an instructor's invite link is sent to sign in; "Create an account" from
there used to drop where they were going, so after signing up they landed on Today with the invite
lost. The destination now survives sign-up, and only a path on this site is followed."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from cohorts.models import Cohort
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

NEW = {"username": "newcomer", "password1": PASSWORD, "password2": PASSWORD}


@pytest.fixture
def invite(make_user):
    teacher = make_user("teacher")
    cohort = Cohort.objects.create(name="Invited", created_by=teacher)
    cohort.instructors.add(teacher)
    return f"/cohorts/join/{cohort.join_code}/"


def test_signing_up_from_an_invite_link_comes_back_to_it(client, invite):
    to_login = client.get(invite)
    assert to_login.status_code == 302
    login_page = client.get(to_login["Location"]).content.decode()
    signup_href = re.search(r'href="(/accounts/signup/[^"]*)"', login_page).group(1)
    signup_page = client.get(signup_href.replace("&amp;", "&")).content.decode()
    assert f'name="next" value="{invite}"' in signup_page

    r = client.post(signup_href.replace("&amp;", "&"), {**NEW, "next": invite})

    assert r.status_code == 302 and r["Location"] == invite
    assert "Join" in client.get(invite).content.decode()


@pytest.mark.parametrize(
    "target",
    ["https://evil.example/", "//evil.example/", "/\\evil.example/", "javascript:alert(1)", "0"],
)
def test_sign_up_never_redirects_off_site(target):
    c = Client()
    r = c.post("/accounts/signup/", {**NEW, "next": target})
    assert r.status_code == 302 and r["Location"] == "/"
    page = Client().get("/accounts/signup/", {"next": target}).content.decode()
    assert "evil.example" not in page and "javascript:" not in page
