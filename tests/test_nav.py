"""The top bar marks the part of the site the page belongs to (by URL namespace)."""

from __future__ import annotations

import re

import pytest


@pytest.mark.parametrize(
    ("path", "tab"),
    [("/drill/", "Drill"), ("/math/", "Math"), ("/dashboard/", "Dashboard"), ("/track/", "Track")],
)
def test_the_current_tab_is_marked_and_only_it(learner_client, path, tab):
    html = learner_client.get(path).content.decode()
    nav = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S).group(1)
    current = re.findall(r'<a [^>]*aria-current="page"[^>]*>([^<]+)</a>', nav)
    assert current == [tab]


def test_opening_a_post_only_address_shows_a_page_not_a_blank_405(learner_client):
    page = learner_client.get("/accounts/logout/")
    html = page.content.decode()
    assert page.status_code == 405 and page["Allow"] == "POST, OPTIONS"
    assert "This address is a button" in html and 'action="/accounts/logout/"' in html
    assert "_auth_user_id" in learner_client.session  # nothing was done
    other = learner_client.get("/renarrations/next/")
    assert other.status_code == 405 and "Go to Today" in other.content.decode()
    assert 'action="/accounts/logout/"' not in other.content.decode().split("<main")[1]
    # a POST still works as before
    assert learner_client.post("/accounts/logout/").status_code == 302
