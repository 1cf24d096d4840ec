"""Next-day re-narration: a walkthrough marked read comes back a day later with its narration
hidden, is answered with the trainer's five sentences on the walkthrough's own trace, and then
shows the narration beside the graded answer. Scheduled by its own FSRS card."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from accounts.roles import make_instructor
from cohorts.models import Assignment, Cohort, Membership
from cohorts.progress import cohort_grid, learner_assignments
from content import renarration
from content.models import ReadMark, WalkthroughSet
from content.pages import get_page, library
from drills.models import Attempt, Card
from drills.scheduling.cards import rebuild_user
from drills.stats.dashboard import learner_stats
from scenarios.engine.catalog import title_of
from tests.conftest import right_answer
from tests.content.test_track import assert_no_focus_directives

pytestmark = pytest.mark.django_db


# The two quickest walkthrough traces to generate (the others take seconds each).
CHEAP_WALK = "walkthrough-launch-bound-inference"
SECOND_WALK = "walkthrough-recompilation-vs-starvation"


def walkthrough():
    return get_page(CHEAP_WALK)


def read(user, slug: str, ago: timedelta) -> ReadMark:
    mark = ReadMark.objects.create(user=user, slug=slug)
    ReadMark.objects.filter(pk=mark.pk).update(read_at=timezone.now() - ago)
    return mark


def start_over_http(client) -> Attempt:
    response = client.post("/renarrations/next/")
    assert response.status_code == 302
    assert response["Location"].startswith("/drill/attempts/"), response["Location"]
    return Attempt.objects.select_related("trace").get(pk=response["Location"].split("/")[3])


def test_a_walkthrough_read_today_is_not_due_and_comes_back_the_next_day(learner):
    page = walkthrough()
    now = timezone.now()
    read(learner, page.slug, timedelta(0))
    assert renarration.due_renarrations(learner, now) == []
    later = renarration.due_renarrations(learner, now + timedelta(days=1, seconds=1))
    assert [d.slug for d in later] == [page.slug]
    # Pages that are not walkthroughs never come back.
    other = next(p for p in library().ordered if not p.is_walkthrough)
    read(learner, other.slug, timedelta(days=3))
    assert [d.slug for d in renarration.due_renarrations(learner, now + timedelta(days=2))] == [
        page.slug
    ]


def test_home_lists_the_due_renarration_without_naming_it(learner_client, learner):
    page = walkthrough()
    read(learner, page.slug, timedelta(hours=2))
    html = learner_client.get("/").content.decode()
    assert "No re-narration due" in html
    ReadMark.objects.filter(user=learner).update(
        read_at=timezone.now() - timedelta(days=1, hours=1)
    )
    html = learner_client.get("/").content.decode()
    assert "1</strong> walkthrough re-narration due" in html
    assert page.title not in html and f"/walkthroughs/{page.slug}/" not in html


def test_a_renarration_before_it_is_due_is_refused_and_stores_nothing(learner_client, learner):
    read(learner, walkthrough().slug, timedelta(hours=20))
    response = learner_client.post("/renarrations/next/", follow=True)
    assert response.redirect_chain[0][1] == 302 and response.redirect_chain[0][0] == "/"
    assert "No walkthrough re-narration is due" in response.content.decode()
    assert not Attempt.objects.filter(user=learner).exists()


def test_the_renarration_serves_the_walkthroughs_own_trace_with_the_narration_hidden(
    learner_client, learner
):
    page = walkthrough()
    read(learner, page.slug, timedelta(days=2))
    attempt = start_over_http(learner_client)
    assert attempt.kind == Attempt.Kind.RENARRATION and attempt.item == page.slug
    assert (attempt.trace.scenario, attempt.trace.seed) == (page.scenario, page.seed)
    assert attempt.trace.key.get("grading"), "the trace's key carries the grading block"
    assert attempt.mode == Attempt.Mode.TIMED

    html = learner_client.get(f"/drill/attempts/{attempt.pk}/").content.decode()
    assert 'id="diagnosis-form"' in html and "Re-narration of a walkthrough" in html
    # The diagnosis form lists every signature; outside it nothing names this one.
    outside = re.sub(r'<form[^>]*id="diagnosis-form".*?</form>', "", html, flags=re.S)
    for secret in (page.title, page.slug, title_of(page.scenario), page.steps[0].title):
        assert secret not in outside, secret
    # The narration page is not served before the commit: it sends back to the trace.
    early = learner_client.get(f"/renarrations/{attempt.pk}/")
    assert early.status_code == 302 and early["Location"] == f"/drill/attempts/{attempt.pk}/"
    # Asking again resumes the same attempt rather than serving a second copy.
    assert start_over_http(learner_client).pk == attempt.pk


def test_after_the_commit_the_narration_sits_beside_the_graded_answer(learner_client, learner):
    page = walkthrough()
    read(learner, page.slug, timedelta(days=2))
    attempt = start_over_http(learner_client)
    response = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt)
    )
    assert response.status_code == 302 and response["Location"] == f"/renarrations/{attempt.pk}/"
    html = learner_client.get(response["Location"]).content.decode()
    assert page.title in html and 'id="narration"' in html and 'id="sentences"' in html
    for step in page.steps:
        assert step.title in html
    assert_no_focus_directives(html, page.steps)
    assert html.count("✓ right") == 7  # every sentence of a right answer, graded right
    # An htmx submit is sent to the same page.
    read(learner, SECOND_WALK, timedelta(days=2))
    second = start_over_http(learner_client)
    hx = learner_client.post(
        f"/drill/attempts/{second.pk}/diagnosis/", right_answer(second), HTTP_HX_REQUEST="true"
    )
    assert hx["HX-Redirect"] == f"/renarrations/{second.pk}/"


def test_a_renarration_schedules_its_own_card_and_not_the_scenarios(learner_client, learner):
    page = walkthrough()
    read(learner, page.slug, timedelta(days=2))
    attempt = start_over_http(learner_client)
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    card = Card.objects.get(user=learner, kind=Card.Kind.RENARRATION, item=page.slug)
    assert card.reviews == 1 and card.due > timezone.now() + timedelta(hours=12)
    assert not Card.objects.filter(user=learner, kind=Card.Kind.SCENARIO).exists()
    # Answered: no longer due; due again when its card says so, by the same FSRS path.
    assert renarration.due_renarrations(learner) == []
    assert [d.slug for d in renarration.due_renarrations(learner, card.due)] == [page.slug]

    # A second re-narration of the same walkthrough (the same seed again) works.
    attempt2 = renarration.start(learner, page.slug, card.due)
    assert attempt2.pk != attempt.pk and attempt2.trace.seed == attempt.trace.seed

    # rebuild_cards replays re-narrations into the same card.
    before = (card.state, card.due, card.reviews, card.last_review)
    Card.objects.filter(user=learner).delete()
    rebuild_user(learner)
    again = Card.objects.get(user=learner, kind=Card.Kind.RENARRATION, item=page.slug)
    assert (again.state, again.due, again.reviews, again.last_review) == before
    assert not Card.objects.filter(user=learner, kind=Card.Kind.SCENARIO).exists()


def test_renarrations_stay_out_of_the_scenario_numbers_and_are_counted_apart(
    learner_client, learner
):
    page = walkthrough()
    read(learner, page.slug, timedelta(days=2))
    attempt = start_over_http(learner_client)
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    stats = learner_stats(learner, timezone.now())
    assert stats["totals"]["graded"] == 0
    assert stats["renarrations"] == {"graded": 1, "right": 1}
    assert all(r["attempts"] == 0 for r in stats["scenarios"])
    html = learner_client.get("/dashboard/").content.decode()
    assert "1 of 1 signatures right" in html


def test_another_learners_renarration_is_404(learner_client, learner, make_user, client):
    page = walkthrough()
    read(learner, page.slug, timedelta(days=2))
    attempt = start_over_http(learner_client)
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    client.force_login(make_user("bob"))
    assert client.get(f"/renarrations/{attempt.pk}/").status_code == 404


@pytest.mark.parametrize("asks_for_renarration", [True, False])
def test_an_assignment_asking_for_renarration_counts_a_walkthrough_once_re_narrated(
    learner_client, learner, make_user, asks_for_renarration
):
    teacher = make_user("teacher")
    cohort = Cohort.objects.create(name="C", created_by=teacher)
    cohort.instructors.add(teacher)
    Membership.objects.create(cohort=cohort, user=learner)
    wset = WalkthroughSet.objects.create(slug="one", title="One", walkthroughs=[CHEAP_WALK])
    now = timezone.now()
    Assignment.objects.create(
        cohort=cohort,
        walkthrough_set=wset,
        due_at=now + timedelta(days=3),
        renarration=asks_for_renarration,
    )

    def statuses() -> tuple[str, str]:
        (mine,) = learner_assignments(learner, timezone.now())
        (row,) = cohort_grid(cohort, timezone.now())["rows"]
        return mine["items"][0]["status"], row["cells"][0]["status"]

    read(learner, CHEAP_WALK, timedelta(days=2))
    assert statuses() == (("open", "open") if asks_for_renarration else ("done", "done"))
    # read but not re-narrated: still open, and the learner's list and the instructor's grid
    # say the reading is done (they showed a bare "open", as if it had never been opened)
    pending = "read; its re-narration is still to do"
    assert (pending in learner_client.get("/").content.decode()) == asks_for_renarration
    make_instructor(teacher)
    client = Client()
    client.force_login(teacher)
    grid = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    grid = grid[
        grid.index('id="walkthrough-grid"') : grid.index(
            "</table>", grid.index('id="walkthrough-grid"')
        )
    ]
    assert ("read, not re-narrated" in grid) == asks_for_renarration
    attempt = start_over_http(learner_client)
    assert statuses()[0] == ("open" if asks_for_renarration else "done")  # served, not graded
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    assert statuses() == ("done", "done")
    assert pending not in learner_client.get("/").content.decode()
    html = learner_client.get("/").content.decode()
    expected = "1/1 read and re-narrated" if asks_for_renarration else "1/1 read"
    assert expected in html
