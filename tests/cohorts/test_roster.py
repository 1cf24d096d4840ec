"""The instructor page's roster: paged, sorted by the server across the whole cohort, every
learner reachable, and the numbers it shows equal to a full recompute from the cards and the
attempts (also after a grade). Helpers and personas as in tests/content/test_cohorts.py."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest
from django.utils import timezone

from cohorts import progress
from cohorts.models import Cohort, Membership
from drills import scheduling
from drills.models import Card
from drills.scheduling.cards import apply_live
from tests.content.test_cohorts import as_user, make_attempt, make_card

pytestmark = pytest.mark.django_db

NAMES = ["cat", "dan", "fay", "gus", "hal"]


@pytest.fixture
def roster(people, make_user, monkeypatch):
    """A cohort of five learners, shown two per page. Straggler accuracy: cat 100 %, dan 50 %,
    fay 0 %, gus 67 %, hal never drilled it; straggler cards reviewed 1, 9, 4 and 20 days ago
    (hal has none)."""
    monkeypatch.setattr(progress, "PAGE_SIZE", 2)
    cohort = Cohort.objects.create(name="Paged", created_by=people["teacher"])
    cohort.instructors.add(people["teacher"])
    users = {name: make_user(name) for name in NAMES}
    for u in users.values():
        Membership.objects.create(cohort=cohort, user=u)
    answers = {
        "cat": ["straggler"],
        "dan": ["straggler", "bandwidth-bound-collective"],
        "fay": ["recompilation"],
        "gus": ["straggler", "straggler", "recompilation"],
    }
    for name, given in answers.items():
        for answer in given:
            make_attempt(users[name], "straggler", answer)
    for name, days in {"cat": 1, "dan": 9, "fay": 4, "gus": 20}.items():
        make_card(users[name], "straggler", reviewed_days_ago=days)
    make_attempt(users["hal"], "recompilation", "recompilation")
    return cohort, users


def learners_on(html: str) -> list[str]:
    """The learners of the walkthrough grid, in page order."""
    grid = html.split('id="walkthrough-grid"', 1)[1].split("</table>", 1)[0]
    return re.findall(r'<tr data-learner="(\w+)">', grid)


def scenario_cells(html: str) -> dict[str, dict[str, tuple[str, str, str]]]:
    """{learner: {slug: (accuracy, retrievability, attempts)}} from the scenario grid."""
    grid = html.split('id="scenario-grid"', 1)[1].split("</table>", 1)[0]
    slugs = [s.slug for s in progress.scenarios()]
    out = {}
    for name, body in re.findall(r'<tr data-learner="(\w+)">(.*?)</tr>', grid, re.S):
        cells = re.findall(r'data-acc="([^"]*)" data-r="([^"]*)" data-attempts="(\d+)"', body)
        out[name] = dict(zip(slugs, cells, strict=True))
    return out


def walk(client, url: str) -> list[str]:
    """Every learner, following the "next" links from ``url`` to the last page."""
    seen = []
    while url:
        html = client.get(url).content.decode()
        seen += learners_on(html)
        nxt = re.search(r'<a href="([^"]*)" rel="next">', html)
        url = url.split("?")[0] + nxt.group(1).replace("&amp;", "&") if nxt else None
    return seen


def test_roster_is_paged_and_every_learner_is_reachable(client, people, roster):
    cohort, _users = roster
    as_user(client, people["teacher"])
    base = f"/cohorts/{cohort.pk}/"
    first = client.get(base).content.decode()
    assert learners_on(first) == ["cat", "dan"]
    assert "Learners 1–2 of 5" in first and "(5 learners)" in first
    assert re.search(r'<a href="\?page=3" data-page="3">3</a>', first)
    assert walk(client, base) == NAMES  # each once, in name order
    assert learners_on(client.get(base + "?page=3").content.decode()) == ["hal"]
    assert learners_on(client.get(base + "?page=99").content.decode()) == ["hal"]  # the last
    assert learners_on(client.get(base + "?page=x").content.decode()) == ["cat", "dan"]
    # The CSV export has every learner, whatever the page size.
    table = list(
        csv.reader(io.StringIO(client.get(base + "export.csv").content.decode("utf-8-sig")))
    )
    assert [r[0] for r in table[1:]] == NAMES


def test_sorting_orders_the_whole_cohort_across_pages(client, people, roster):
    cohort, _users = roster
    as_user(client, people["teacher"])
    base = f"/cohorts/{cohort.pk}/"
    # Accuracy on straggler, weakest first; hal never drilled it: last, in either direction.
    assert walk(client, base + "?sort=acc:straggler") == ["fay", "dan", "gus", "cat", "hal"]
    assert walk(client, base + "?sort=acc:straggler&dir=desc") == [
        "cat", "gus", "dan", "fay", "hal",
    ]  # fmt: skip
    # Retrievability: the card reviewed longest ago recalls least; no card is a blank.
    assert walk(client, base + "?sort=r:straggler") == ["gus", "dan", "fay", "cat", "hal"]
    # Drills in all: hal 1, cat 1, fay 1, dan 2, gus 3 (ties by name).
    assert walk(client, base + "?sort=drills&dir=desc") == ["gus", "dan", "cat", "fay", "hal"]
    # The sorted header says so and its link turns the order round; the page links keep it.
    html = client.get(base + "?sort=acc:straggler").content.decode()
    head = re.search(r'<th scope="col" title="[^"]*" aria-sort="ascending"><a[^>]*>', html)
    assert head and 'href="?sort=acc%3Astraggler&amp;dir=desc#scenarios"' in head.group(0)
    assert 'href="?sort=acc%3Astraggler&amp;page=2" rel="next"' in html
    # The metric switch sorts the same scenario by retrievability.
    assert 'href="?sort=r%3Astraggler#scenarios">retrievability</a>' in html
    # An unknown sort key is the default order, not an error.
    assert walk(client, base + "?sort=evil:drop") == NAMES


def _recomputed(users) -> dict[str, dict[str, tuple[str, str, str]]]:
    """What each cell should say, from the raw attempts and each card's stored state."""
    now = timezone.now()
    out = {}
    for name, u in users.items():
        cells = {}
        cards = {c.item: c.state for c in Card.objects.filter(user=u, kind=Card.Kind.SCENARIO)}
        for s in progress.scenarios():
            graded = u.attempt_set.filter(scenario=s.slug, submitted_at__isnull=False)
            n, ok = graded.count(), graded.filter(scenario_correct=True).count()
            acc = str(round(100 * ok / n)) if n else ""
            state = cards.get(s.slug)
            r = "" if state is None else f"{round(scheduling.retrievability(state, now), 2):.2f}"
            cells[s.slug] = (acc, r, str(n))
        out[name] = cells
    return out


def test_numbers_equal_a_full_recompute_after_grades(client, people, roster):
    cohort, users = roster
    as_user(client, people["teacher"])
    base = f"/cohorts/{cohort.pk}/"

    def shown() -> dict[str, dict[str, tuple[str, str, str]]]:
        out = {}
        for page in (1, 2, 3):
            out |= scenario_cells(client.get(f"{base}?page={page}").content.decode())
        return out

    before = shown()
    assert before == _recomputed(users)
    # hal drills straggler, wrong, through the live card path (a grade moves his StatsVersion).
    attempt = make_attempt(users["hal"], "straggler", "bandwidth-bound-collective")
    apply_live(
        users["hal"],
        scheduling.Grade(
            scenario_correct=False, measurement_correct=False, fix_correct=False,
            win_correct=False, elapsed_s=60, over_time=False, practice=False,
        ),
        item="straggler", when=attempt.submitted_at, answered=attempt.answer_scenario,
    )  # fmt: skip
    after = shown()
    assert after == _recomputed(users)
    assert after["hal"]["straggler"][2] == "1" and after["hal"]["straggler"][0] == "0"
    assert after["hal"]["straggler"][1] != ""  # he has a straggler card now
    assert after["cat"] == before["cat"]


def test_retention_goal_reads_recall_at_the_due_date(people, roster):
    """A retention goal due in the past is judged on recall at its due date, equal to each
    card's ``scheduling.retrievability`` then; one due ahead on recall now."""
    from cohorts.models import Assignment
    from content.models import WalkthroughSet

    cohort, users = roster
    wset = WalkthroughSet.objects.create(slug="ret", title="Ret", walkthroughs=["w-a"])
    now = timezone.now()
    past = Assignment.objects.create(
        cohort=cohort, walkthrough_set=wset, due_at=now - timedelta(days=3), goal="retention",
        goal_retention=0.9,
    )  # fmt: skip
    grid = progress.cohort_grid(cohort, now)
    slugs = [s.slug for s in progress.scenarios()]
    for row in grid["rows"]:
        u = users[row["user"].username]
        cards = {c.item: c.state for c in Card.objects.filter(user=u, kind=Card.Kind.SCENARIO)}
        ok = sum(1 for s in slugs if scheduling.retrievability(cards.get(s), past.due_at) >= 0.9)
        assert row["goals"][0]["detail"] == f"{ok}/{len(slugs)} at ≥ 0.90"


def test_outsiders_get_404_on_any_page_of_the_roster(client, people, roster):
    cohort, users = roster
    for who in (people["stranger"], users["cat"]):
        as_user(client, who)
        assert client.get(f"/cohorts/{cohort.pk}/?page=2&sort=r:straggler").status_code == 404


def test_recall_is_kept_per_cohort_state_and_a_card_rebuild_moves_it_on(
    client, people, roster, django_assert_max_num_queries
):
    """A repeat view reads no card (the cards' arrays are in the cohort's snapshot, recall is
    computed from them for the moment of the view); rebuilding a learner's cards from the
    attempts moves their StatsVersion on, so the page shows the rebuilt cards."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from drills.scheduling.cards import rebuild_user

    cohort, users = roster
    as_user(client, people["teacher"])
    url = f"/cohorts/{cohort.pk}/?sort=r:straggler"
    client.get(url)
    with CaptureQueriesContext(connection) as warm:
        client.get(url)
    assert not [q for q in warm.captured_queries if "drills_card" in q["sql"]]
    # cat's straggler card is rewritten past the app (as an import would), then rebuilt.
    Card.objects.filter(user=users["cat"], item="straggler").update(
        state=scheduling.new_card_state()
    )
    assert rebuild_user(users["cat"])[1] == 1
    shown = scenario_cells(client.get(f"/cohorts/{cohort.pk}/").content.decode())
    assert shown["cat"] == _recomputed({"cat": users["cat"]})["cat"]
    assert shown["cat"]["straggler"][1] == "1.00"  # reviewed by its one attempt, an hour ago


def test_an_empty_cohorts_scenario_grid_says_who_will_fill_it(client, people):
    """A new cohort's Scenarios table was a row of headers over nothing: it says that each
    learner who joins gets a row; the row goes once someone joins."""
    teacher = people["teacher"]
    cohort = Cohort.objects.create(name="Empty", created_by=teacher)
    cohort.instructors.add(teacher)
    client.force_login(teacher)
    html = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    grid = re.search(r'id="scenario-grid".*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    assert "No learners yet: each learner who joins gets a row here" in grid
    assert 'colspan="13"' in grid  # learner, drills and the eleven scenarios
    Membership.objects.create(cohort=cohort, user=people["ada"])
    html = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    grid = re.search(r'id="scenario-grid".*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    assert "No learners yet" not in grid
