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
