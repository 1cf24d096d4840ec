"""A screen-reader user moves through a page by its headings: every page a newcomer meets has one
h1 that names it, first, and no level is skipped below it (an h3 straight under the h1 reads as a
heading that lost its section)."""

from __future__ import annotations

import itertools
import re

import pytest
from django.core.management import call_command

from tests.conftest import right_answer
from tests.drills.test_drill_flow import start

pytestmark = pytest.mark.django_db


def outline(html: str) -> list[tuple[int, str]]:
    """The headings inside <main>, in order: (level, text)."""
    main = html.split("<main", 1)[1].split("</main>", 1)[0]
    return [
        (int(level), re.sub(r"<[^>]+>|\s+", " ", text).strip())
        for level, text in re.findall(r"<h([1-6])\b[^>]*>(.*?)</h\1>", main, re.S)
    ]


def skips(heads: list[tuple[int, str]]) -> list[str]:
    out = []
    if not heads or heads[0][0] != 1:
        out.append(f"first heading is not an h1: {heads[:1]}")
    if sum(1 for level, _ in heads if level == 1) != 1:
        out.append("not exactly one h1")
    for (a, ta), (b, tb) in itertools.pairwise(heads):
        if b > a + 1:
            out.append(f"h{a} {ta!r} → h{b} {tb!r}")
    return out


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/drill/",
        "/dashboard/",
        "/math/",
        "/cohorts/",
        "/interview/",
        "/track/",
        "/track/reading-order/",  # the track's contents beside it name sections, not headings
    ],
)
def test_a_newcomers_pages_have_a_heading_outline(learner_client, path):
    heads = outline(learner_client.get(path).content.decode())
    assert not skips(heads), (path, heads)


def test_the_reveal_has_a_heading_outline(learner_client, no_refill):
    attempt = start(learner_client)
    answer = {**right_answer(attempt), "arithmetic": "120 - 20 = 100 ms"}
    html = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", answer, follow=True
    ).content.decode()
    heads = outline(html)
    assert any("arithmetic on this trace" in text for _, text in heads), heads
    assert not skips(heads), heads


def test_an_instructors_cohorts_page_keeps_one_h1(make_user, client):
    teacher = make_user("teach")
    call_command("make_instructor", "teach")
    client.force_login(teacher)
    heads = outline(client.get("/cohorts/").content.decode())
    assert heads[0] == (1, "Cohorts you teach"), heads
    assert not skips(heads), heads
