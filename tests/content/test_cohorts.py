"""Cohorts: instructors, join codes, assignments, extensions, the progress grid, reminders.

Personas: ``teacher`` (creates the cohort), ``coteacher`` (added by username), ``stranger``
(an instructor who does not teach it), ``ada`` and ``bob`` (learners), ``eve`` (a learner in
no cohort).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cohorts import progress
from cohorts.models import (
    JOIN_ALPHABET,
    Assignment,
    Cohort,
    Extension,
    Membership,
    ReminderSent,
)
from cohorts.progress import learner_assignments
from cohorts.tasks import send_due_reminders
from content.models import ReadMark, WalkthroughSet
from drills import scheduling, summaries
from drills.models import Attempt, Card
from scenarios.models import Trace

pytestmark = pytest.mark.django_db

WALKS = ["walkthrough-straggler-vs-bandwidth", "walkthrough-recompilation-vs-starvation"]
_seed = itertools.count(1)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def wset(db):
    return WalkthroughSet.objects.update_or_create(
        slug="lookalikes-test", defaults={"title": "Lookalikes", "walkthroughs": WALKS}
    )[0]


def as_user(client, user):
    client.force_login(user)
    return client


def make_attempt(user, scenario, answer, *, when=None):
    when = when or timezone.now() - timedelta(hours=1)
    trace = Trace.objects.create(
        scenario=scenario,
        seed=next(_seed),
        hardware="H100",
        generator_version="test",
        prompt={},
        key={},
        n_events=0,
        payload=b"",
        timeline_gz=b"",
    )
    attempt = Attempt.objects.create(
        user=user,
        trace=trace,
        scenario=scenario,
        served_at=when - timedelta(seconds=60),
        submitted_at=when,
        answer_scenario=answer,
        scenario_correct=answer == scenario,
        elapsed_s=60,
    )
    summaries.record_attempt(attempt)  # as the live write path does
    return attempt


def make_card(user, scenario, reviewed_days_ago=3):
    when = timezone.now() - timedelta(days=reviewed_days_ago)
    state = scheduling.review(scheduling.new_card_state(), 3, when)
    return Card.objects.create(
        user=user, item=scenario, state=state, due=scheduling.due(state), reviews=1
    )


@pytest.fixture
def cohort(people):
    c = Cohort.objects.create(name="Spring perf", created_by=people["teacher"])
    c.instructors.add(people["teacher"])
    for name in ("ada", "bob"):
        Membership.objects.create(cohort=c, user=people[name])
    return c


@pytest.fixture
def assignment(cohort, wset, people):
    now = timezone.now()
    return Assignment.objects.create(
        cohort=cohort,
        walkthrough_set=wset,
        due_at=now + timedelta(days=2),
        cutoff_at=now + timedelta(days=4),
        created_by=people["teacher"],
    )


def dt(value):
    return value.strftime("%Y-%m-%dT%H:%M")


# --------------------------------------------------------------------------- the story


def test_create_join_assign_and_see_it_everywhere(client, people, wset):
    # An instructor creates a cohort.
    as_user(client, people["teacher"])
    resp = client.post("/cohorts/new/", {"name": "Spring perf"})
    cohort = Cohort.objects.get(name="Spring perf")
    assert resp.status_code == 302 and resp["Location"] == f"/cohorts/{cohort.pk}/"
    assert list(cohort.instructors.all()) == [people["teacher"]]
    assert len(cohort.join_code) == 8 and set(cohort.join_code) <= set(JOIN_ALPHABET)
    page = client.get(f"/cohorts/{cohort.pk}/")
    assert page.status_code == 200 and cohort.join_code in page.content.decode()

    # Ada joins by code (typed lower-case with a space); Bob by the invite link.
    as_user(client, people["ada"])
    code = cohort.join_code
    resp = client.post("/cohorts/join/", {"code": f"{code[:4].lower()} {code[4:].lower()}"})
    assert resp.status_code == 302
    assert cohort.members.filter(pk=people["ada"].pk).exists()
    as_user(client, people["bob"])
    confirm = client.get(f"/cohorts/join/{code}/")
    assert confirm.status_code == 200 and "Spring perf" in confirm.content.decode()
    assert not cohort.members.filter(pk=people["bob"].pk).exists()  # GET does not join
    assert client.post(f"/cohorts/join/{code}/").status_code == 302
    assert cohort.members.filter(pk=people["bob"].pk).exists()
    assert client.post(f"/cohorts/join/{code}/").status_code == 302  # twice: still one row
    assert Membership.objects.filter(cohort=cohort, user=people["bob"]).count() == 1

    # The instructor assigns the set.
    as_user(client, people["teacher"])
    now = timezone.now()
    resp = client.post(
        f"/cohorts/{cohort.pk}/assign/",
        {
            "walkthrough_set": wset.pk,
            "due_at": dt(now + timedelta(days=2)),
            "cutoff_at": dt(now + timedelta(days=3)),
        },
    )
    assert resp.status_code == 302, resp.content.decode()[:2000]
    assignment = Assignment.objects.get(cohort=cohort)
    assert assignment.cutoff_at > assignment.due_at

    # Ada reads one walkthrough and drills a lookalike pair.
    ReadMark.objects.create(user=people["ada"], slug=WALKS[0])
    for answer in ["straggler", "bandwidth-bound-collective", "straggler", "straggler"]:
        make_attempt(people["ada"], "straggler", answer)
    make_card(people["ada"], "straggler")

    # Ada sees it on home, with per-walkthrough status and links.
    rows = learner_assignments(people["ada"], timezone.now())
    assert len(rows) == 1
    assert [i["status"] for i in rows[0]["items"]] == ["done", "open"]
    as_user(client, people["ada"])
    home = client.get("/").content.decode()
    assert "Lookalikes" in home and f'href="/walkthroughs/{WALKS[1]}/"' in home
    assert 'data-status="done"' in home and 'data-status="open"' in home
    assert learner_assignments(people["eve"], timezone.now()) == []

    # The grid and the CSV show both learners, and agree.
    as_user(client, people["teacher"])
    page = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    assert 'data-learner="ada"' in page and 'data-learner="bob"' in page
    export = client.get(f"/cohorts/{cohort.pk}/export.csv")
    assert export.status_code == 200 and export["Content-Type"].startswith("text/csv")
    table = list(csv.reader(io.StringIO(export.content.decode("utf-8-sig"))))
    body = {r[0]: dict(zip(table[0], r, strict=True)) for r in table[1:]}
    assert set(body) == {"ada", "bob"}
    assert body["ada"][f"lookalikes-test/{WALKS[0]}"] == "done"
    assert body["ada"][f"lookalikes-test/{WALKS[1]}"] == "open"
    assert body["ada"]["straggler attempts"] == "4"
    assert body["ada"]["straggler accuracy %"] == "75"
    assert body["bob"]["straggler attempts"] == "0"
    # Every scenario number in the CSV is the one on the page, row by row.
    page_rows = re.findall(r'<tr data-learner="(\w+)">(.*?)</tr>', page, re.S)
    scen_rows = {name: body for name, body in page_rows if 'class="sc ' in body}
    slugs = [s.slug for s in progress.scenarios()]
    for name, html in scen_rows.items():
        accs = re.findall(r'data-acc="([^"]*)" data-r="([^"]*)" data-attempts="(\d+)"', html)
        assert len(accs) == len(slugs)
        for slug, (acc, r, n) in zip(slugs, accs, strict=True):
            assert body[name][f"{slug} accuracy %"] == acc
            assert body[name][f"{slug} retrievability"] == r
            assert body[name][f"{slug} attempts"] == n
    # Confusion: the straggler → bandwidth mix-up is on a highlighted lookalike cell.
    assert re.search(
        r'class="cm cm-pair[^"]*" data-true="straggler" data-answered="bandwidth-bound-collective"',
        page,
    )
    assert "ada</a> (1 mix-up in 4 drills, 25%)" in page

    # Raw attempts CSV and the read-only drill-down.
    raw = client.get(f"/cohorts/{cohort.pk}/attempts.csv")
    raw_rows = list(csv.reader(io.StringIO(b"".join(raw.streaming_content).decode("utf-8-sig"))))
    assert raw_rows[0][0] == "username" and len(raw_rows) == 5
    learner_page = client.get(f"/cohorts/{cohort.pk}/learners/{people['ada'].pk}/")
    assert learner_page.status_code == 200 and 'data-scenario-row="straggler"' in (
        learner_page.content.decode()
    )


def test_removing_a_member_says_the_code_still_lets_them_back_in(client, people, cohort):
    """They can join again at once with the code they have: the instructor is told so, and how
    to stop it, instead of believing them gone."""
    as_user(client, people["teacher"])
    page = client.post(
        f"/cohorts/{cohort.pk}/members/{people['bob'].pk}/remove/", follow=True
    ).content.decode()
    (said,) = re.findall(r'<li class="msg-success">(.*?)</li>', page, re.S)
    assert "Removed bob" in said and "join again" in said and "Regenerate join code" in said
    as_user(client, people["bob"])
    assert client.post("/cohorts/join/", {"code": cohort.join_code}).status_code == 302
    assert cohort.members.filter(pk=people["bob"].pk).exists()


def test_co_instructor_remove_member_and_regenerate(client, people, cohort):
    as_user(client, people["teacher"])
    client.post(f"/cohorts/{cohort.pk}/instructors/add/", {"username": "coteacher"})
    assert cohort.instructors.filter(pk=people["coteacher"].pk).exists()
    as_user(client, people["coteacher"])
    assert client.get(f"/cohorts/{cohort.pk}/").status_code == 200
    # A co-instructor may remove a member and regenerate the code.
    old = cohort.join_code
    assert (
        client.post(f"/cohorts/{cohort.pk}/members/{people['bob'].pk}/remove/").status_code == 302
    )
    assert not cohort.members.filter(pk=people["bob"].pk).exists()
    client.post(f"/cohorts/{cohort.pk}/regenerate-code/")
    cohort.refresh_from_db()
    assert cohort.join_code != old
    as_user(client, people["eve"])
    resp = client.post("/cohorts/join/", {"code": old})
    assert resp.status_code == 400 and "No cohort has the join code" in resp.content.decode()
    assert client.post("/cohorts/join/", {"code": cohort.join_code}).status_code == 302
    # Adding a non-instructor, or an unknown name, is refused with a message.
    as_user(client, people["teacher"])
    resp = client.post(f"/cohorts/{cohort.pk}/instructors/add/", {"username": "ada"}, follow=True)
    assert "No instructor is called “ada”" in resp.content.decode()
    resp = client.post(
        f"/cohorts/{cohort.pk}/instructors/add/", {"username": "nobody"}, follow=True
    )
    assert "No instructor is called “nobody”" in resp.content.decode()
    assert not cohort.instructors.filter(pk=people["ada"].pk).exists()


def test_list_page_per_role(client, people, cohort):
    as_user(client, people["teacher"])
    page = client.get("/cohorts/").content.decode()
    assert "Spring perf" in page and 'action="/cohorts/new/"' in page
    as_user(client, people["ada"])
    page = client.get("/cohorts/").content.decode()
    assert "Spring perf" in page and 'action="/cohorts/new/"' not in page
    assert f'href="/cohorts/{cohort.pk}/"' not in page  # no link to the instructors' page
    assert f'action="/cohorts/{cohort.pk}/leave/"' in page  # but a way out
    as_user(client, people["stranger"])
    assert "Spring perf" not in client.get("/cohorts/").content.decode()


# --------------------------------------------------------------------------- 404 everywhere


COHORT_URLS = [
    ("get", "/cohorts/{c}/"),
    ("get", "/cohorts/{c}/assign/"),
    ("post", "/cohorts/{c}/assign/"),
    ("get", "/cohorts/{c}/export.csv"),
    ("get", "/cohorts/{c}/attempts.csv"),
    ("get", "/cohorts/{c}/learners/{u}/"),
    ("post", "/cohorts/{c}/instructors/add/"),
    ("post", "/cohorts/{c}/members/{u}/remove/"),
    ("post", "/cohorts/{c}/regenerate-code/"),
    ("post", "/cohorts/{c}/assignments/{a}/extensions/"),
    ("post", "/cohorts/{c}/assignments/{a}/extensions/{e}/delete/"),
    ("post", "/cohorts/{c}/archive/"),
    ("post", "/cohorts/{c}/unarchive/"),
    ("get", "/cohorts/{c}/assignments/{a}/edit/"),
    ("post", "/cohorts/{c}/assignments/{a}/edit/"),
    ("post", "/cohorts/{c}/assignments/{a}/delete/"),
]


@pytest.mark.parametrize("who", ["stranger", "ada", "eve"])
@pytest.mark.parametrize(("method", "url"), COHORT_URLS)
def test_outsiders_get_404(client, people, cohort, assignment, who, method, url):
    ext = Extension.objects.create(
        assignment=assignment, learner=people["ada"], due_at=assignment.due_at
    )
    target = url.format(c=cohort.pk, u=people["ada"].pk, a=assignment.pk, e=ext.pk)
    before = (cohort.join_code, Membership.objects.count(), Assignment.objects.count())
    as_user(client, people[who])
    data = {"username": "stranger", "walkthrough_set": assignment.walkthrough_set_id}
    resp = getattr(client, method)(target, data if method == "post" else None)
    assert resp.status_code == 404
    cohort.refresh_from_db()
    assert before == (cohort.join_code, Membership.objects.count(), Assignment.objects.count())
    assert Extension.objects.filter(pk=ext.pk).exists()


def test_learner_cannot_create_cohort_and_unknown_ids_404(client, people, cohort):
    as_user(client, people["ada"])
    assert client.post("/cohorts/new/", {"name": "Mine"}).status_code == 404
    assert not Cohort.objects.filter(name="Mine").exists()
    as_user(client, people["teacher"])
    assert client.get(f"/cohorts/{cohort.pk + 999}/").status_code == 404
    # A teacher cannot drill into a user who is not a member of the cohort.
    assert client.get(f"/cohorts/{cohort.pk}/learners/{people['eve'].pk}/").status_code == 404


# --------------------------------------------------------------------------- bad input


def test_bad_join_codes_are_explained(client, people, cohort):
    as_user(client, people["eve"])
    resp = client.post("/cohorts/join/", {"code": "0OI1-XYZ"})
    body = resp.content.decode()
    assert resp.status_code == 400 and "No cohort has the join code" in body
    assert "never contain" in body
    resp = client.get("/cohorts/join/NOPE1234/")
    assert resp.status_code == 404 and "No cohort has the join code" in resp.content.decode()
    assert not Membership.objects.filter(user=people["eve"]).exists()


@pytest.mark.parametrize(
    ("due", "cutoff", "message"),
    [
        (2, 1, "The cut-off must be on or after the due date."),
        (-1, None, "The due date is in the past"),
        ("tomorrow-ish", None, "Enter a date and time like"),
        (None, None, "This field is required."),
    ],
)
def test_bad_assignment_dates_save_nothing(client, people, cohort, wset, due, cutoff, message):
    now = timezone.now()
    as_user(client, people["teacher"])
    data = {"walkthrough_set": wset.pk}
    if due is not None:
        data["due_at"] = due if isinstance(due, str) else dt(now + timedelta(days=due))
    if cutoff is not None:
        data["cutoff_at"] = dt(now + timedelta(days=cutoff))
    resp = client.post(f"/cohorts/{cohort.pk}/assign/", data)
    assert resp.status_code == 400 and message in resp.content.decode()
    assert not Assignment.objects.exists()


def test_goal_needs_its_number(client, people, cohort, wset):
    as_user(client, people["teacher"])
    data = {
        "walkthrough_set": wset.pk,
        "due_at": dt(timezone.now() + timedelta(days=2)),
        "goal": "pairs",
    }
    resp = client.post(f"/cohorts/{cohort.pk}/assign/", data)
    assert resp.status_code == 400 and "drills k per lookalike pair" in resp.content.decode()
    assert not Assignment.objects.exists()


def test_extensions_apply_and_bad_ones_are_refused(client, people, cohort, assignment):
    as_user(client, people["teacher"])
    url = f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/extensions/"
    p = f"ext{assignment.pk}-"
    earlier = dt(assignment.due_at - timedelta(days=1))
    resp = client.post(url, {p + "learner": people["bob"].pk, p + "due_at": earlier})
    assert resp.status_code == 400 and "An extension moves the due date later" in (
        resp.content.decode()
    )
    later = assignment.due_at + timedelta(days=5)
    resp = client.post(
        url,
        {p + "learner": people["bob"].pk, p + "due_at": dt(later), p + "cutoff_at": earlier},
    )
    assert resp.status_code == 400 and "cut-off must be on or after" in resp.content.decode()
    resp = client.post(url, {p + "learner": people["eve"].pk, p + "due_at": dt(later)})
    assert resp.status_code == 400 and "Choose a learner in this cohort" in resp.content.decode()
    assert not Extension.objects.exists()

    assert (
        client.post(url, {p + "learner": people["bob"].pk, p + "due_at": dt(later)}).status_code
        == 302
    )
    ext = Extension.objects.get()
    bob_rows = learner_assignments(people["bob"], timezone.now())
    assert bob_rows[0]["extended"] and bob_rows[0]["due_at"] == ext.due_at
    # The assignment's cut-off (day 4) is earlier than the new due date: it moves with it.
    assert bob_rows[0]["cutoff_at"] == ext.due_at
    assert not learner_assignments(people["ada"], timezone.now())[0]["extended"]
    # Saving again updates the one extension.
    client.post(url, {p + "learner": people["bob"].pk, p + "due_at": dt(later + timedelta(days=1))})
    assert Extension.objects.count() == 1
    # the assign page lists it with its year and zone, as it lists the assignment's own dates
    listed = client.get(f"/cohorts/{cohort.pk}/assign/").content.decode()
    moved = Extension.objects.get().due_at
    assert f"bob: due {moved:%a} {moved.day} {moved:%b %Y, %H:%M} UTC" in listed


def test_status_rules():
    now = timezone.now()
    due, cutoff = now - timedelta(days=2), now - timedelta(days=1)
    status = progress.walkthrough_status
    assert status(due - timedelta(hours=1), due, cutoff, now) == "done"
    assert status(due + timedelta(hours=1), due, cutoff, now) == "late"
    assert status(cutoff + timedelta(hours=1), due, cutoff, now) == "missing"
    assert status(None, due, cutoff, now) == "missing"
    assert status(None, now + timedelta(days=1), None, now) == "open"
    assert status(now, due, None, now) == "late"


def test_without_graded_attempts_the_per_sentence_section_says_so_without_a_table(
    client, people, cohort
):
    """No graded attempt in the window: the sentence alone, no table of no weeks and no empty
    "12 weeks" total row. One graded attempt brings the table back."""
    empty = "No graded attempts in the last 12 weeks."
    teacher = as_user(client, people["teacher"])
    urls = [f"/cohorts/{cohort.pk}/", f"/cohorts/{cohort.pk}/learners/{people['ada'].pk}/"]
    for url in urls:
        html = teacher.get(url).content.decode()
        assert empty in html, url
        assert 'id="sentence-accuracy"' not in html and 'data-sentence-week="total"' not in html
    make_attempt(people["ada"], "straggler", "bandwidth-bound-collective")
    for url in urls:
        html = teacher.get(url).content.decode()
        assert empty not in html, url
        assert 'id="sentence-accuracy"' in html and 'data-sentence-week="total"' in html


def test_counts_of_one_are_singular(client, people, cohort, wset):
    goal = Assignment(cohort=cohort, walkthrough_set=wset, goal=Assignment.Goal.PAIRS)
    goal.goal_pair_drills = 1
    assert goal.goal_text() == "each lookalike pair drilled ≥ 1 time by the due date"
    goal.goal_pair_drills = 3
    assert goal.goal_text() == "each lookalike pair drilled ≥ 3 times by the due date"
    make_attempt(people["ada"], "straggler", "bandwidth-bound-collective")
    html = as_user(client, people["teacher"]).get(f"/cohorts/{cohort.pk}/").content.decode()
    assert "ada</a> (1 mix-up in 1 drill, 100%)" in html


def test_lookalike_pairs_are_named_by_their_titles(client, people, cohort):
    """The confusion legend and "who confuses the lookalike pairs most" said
    "bandwidth-bound-collective ↔ straggler": the internal slugs, not the names on the form."""
    make_attempt(people["ada"], "straggler", "bandwidth-bound-collective")
    for url in (f"/cohorts/{cohort.pk}/", f"/cohorts/{cohort.pk}/learners/{people['ada'].pk}/"):
        html = as_user(client, people["teacher"]).get(url).content.decode()
        assert "bandwidth-bound-collective ↔" not in html and "↔ straggler" not in html, url
        assert "Straggler rank" in html and "Genuinely bandwidth-bound collective" in html
    html = as_user(client, people["teacher"]).get(f"/cohorts/{cohort.pk}/").content.decode()
    pair = re.search(r"<li><strong>([^<]*Straggler rank[^<]*)</strong>", html)
    assert pair and "↔" in pair.group(1)


def test_a_learners_last_drills_name_scenarios_by_their_titles(client, people, cohort):
    """ "Last 20 drills" listed "bandwidth-bound-collective" / "straggler" (slugs) under True and
    Answered."""
    make_attempt(people["ada"], "bandwidth-bound-collective", "straggler")
    url = f"/cohorts/{cohort.pk}/learners/{people['ada'].pk}/"
    html = as_user(client, people["teacher"]).get(url).content.decode()
    recent = html[html.index("Last 20 drills") :]
    assert "<td>Genuinely bandwidth-bound collective</td>" in recent
    assert ">Straggler rank</td>" in recent
    assert "<td>bandwidth-bound-collective</td>" not in recent and ">straggler</td>" not in recent


def test_drill_goals(people, cohort, wset):
    now = timezone.now()
    a = Assignment.objects.create(
        cohort=cohort,
        walkthrough_set=wset,
        due_at=now + timedelta(days=1),
        goal=Assignment.Goal.PAIRS,
        goal_pair_drills=2,
    )
    for s in ["straggler", "bandwidth-bound-collective", "recompilation"]:
        make_attempt(people["ada"], s, s)
    row = learner_assignments(people["ada"], timezone.now())[0]
    assert not row["goal"]["met"]
    # each count is named by its pair, for the learner's list and the grid's cell
    named = {p["title"]: p["n"] for p in row["goal"]["pairs"]}
    assert named["Genuinely bandwidth-bound collective ↔ Straggler rank"] == 2
    assert named["Recompilation gaps ↔ Input / dataloader starvation"] == 1
    home = as_user(Client(), people["ada"]).get("/").content.decode()
    assert "Genuinely bandwidth-bound collective ↔ Straggler rank: 2 of 2 drills" in home
    make_attempt(people["ada"], "input-starvation", "recompilation")
    assert learner_assignments(people["ada"], timezone.now())[0]["goal"]["met"]
    # Drills after the due date do not count.
    make_attempt(people["bob"], "straggler", "straggler", when=now + timedelta(days=2))
    assert progress.pair_goal_counts([a], [people["bob"].pk]) == {(a.pk, people["bob"].pk): [0, 0]}


def test_pair_goal_counts_use_each_learners_due_date(people, cohort, wset):
    now = timezone.now()
    a = Assignment.objects.create(
        cohort=cohort,
        walkthrough_set=wset,
        due_at=now - timedelta(days=2),
        cutoff_at=now - timedelta(days=1),
        goal=Assignment.Goal.PAIRS,
        goal_pair_drills=2,
    )
    Extension.objects.create(assignment=a, learner=people["bob"], due_at=now)
    for name in ("ada", "bob"):
        make_attempt(people[name], "straggler", "straggler", when=now - timedelta(days=3))
        make_attempt(people[name], "straggler", "straggler", when=now - timedelta(days=1))
    ada, bob = people["ada"].pk, people["bob"].pk
    straggler_pair = [set(p) for p in progress.lookalike_pairs()].index(
        {"straggler", "bandwidth-bound-collective"}
    )
    counts = progress.pair_goal_counts([a], [ada, bob])
    assert counts[(a.pk, ada)][straggler_pair] == 1  # the second drill was after her due date
    assert counts[(a.pk, bob)][straggler_pair] == 2  # his extension covers both
    grid = progress.cohort_grid(cohort, now)
    goals = {r["user"].pk: r["goals"][0]["detail"] for r in grid["rows"]}
    assert "1/2" in goals[ada] and "2/2" in goals[bob]


# --------------------------------------------------------------------------- reminders


def test_reminders_are_sent_once(people, cohort, wset, mailoutbox, settings):
    settings.TRACETRACK = {**settings.TRACETRACK, "SITE_URL": "https://tt.example.org"}
    now = timezone.now()
    a = Assignment.objects.create(
        cohort=cohort, walkthrough_set=wset, due_at=now + timedelta(hours=12)
    )
    Assignment.objects.create(cohort=cohort, walkthrough_set=wset, due_at=now + timedelta(days=3))
    for slug in WALKS:  # bob has finished
        ReadMark.objects.create(user=people["bob"], slug=slug)
    assert send_due_reminders() == 1
    assert [m.to for m in mailoutbox] == [["ada@example.com"]]
    assert "Lookalikes" in mailoutbox[0].subject
    assert f"https://tt.example.org/walkthroughs/{WALKS[1]}/" in mailoutbox[0].body
    assert send_due_reminders.apply().get() == 0  # the task again: nothing new
    assert len(mailoutbox) == 1
    assert ReminderSent.objects.filter(assignment=a, learner=people["ada"]).count() == 1
    # An extension out of the window means no reminder for that learner.
    Membership.objects.create(cohort=cohort, user=people["eve"])
    Extension.objects.create(assignment=a, learner=people["eve"], due_at=now + timedelta(days=5))
    assert send_due_reminders() == 0


# --------------------------------------------------------------------------- query count


def _populate(cohort, wset, make_user, n, offset):
    now = timezone.now()
    if not cohort.assignments.exists():
        Assignment.objects.create(
            cohort=cohort,
            walkthrough_set=wset,
            due_at=now + timedelta(days=1),
            goal="retention",
            goal_retention=0.8,
        )
        Assignment.objects.create(
            cohort=cohort,
            walkthrough_set=wset,
            due_at=now - timedelta(days=1),
            goal="pairs",
            goal_pair_drills=1,
        )
    for i in range(n):
        u = make_user(f"q{offset + i}")
        Membership.objects.create(cohort=cohort, user=u)
        ReadMark.objects.create(user=u, slug=WALKS[i % 2])
        make_attempt(u, "straggler", "bandwidth-bound-collective")
        make_attempt(u, "recompilation", "recompilation")
        make_card(u, "straggler")
    a = cohort.assignments.first()
    Extension.objects.create(assignment=a, learner=u, due_at=a.due_at + timedelta(days=1))


@pytest.mark.parametrize(
    "url",
    [
        "/cohorts/{c}/",
        "/cohorts/{c}/export.csv",
        "/cohorts/{c}/attempts.csv",
        "/cohorts/{c}/learners/{u}/",
        "/",
    ],
)
def test_query_count_is_flat(
    client, people, cohort, wset, make_user, django_assert_max_num_queries, url
):
    counts = []
    for size, offset in ((3, 0), (30, 100)):
        _populate(cohort, wset, make_user, size, offset)
        viewer = people["ada"] if url == "/" else people["teacher"]
        as_user(client, viewer)
        target = url.format(c=cohort.pk, u=people["ada"].pk)
        with django_assert_max_num_queries(25), CaptureQueriesContext(connection) as ctx:
            resp = client.get(target)
            if hasattr(resp, "streaming_content"):
                b"".join(resp.streaming_content)
        assert resp.status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1], counts


def _drill_parts(client, cohort) -> tuple[str, str]:
    """The progress CSV and the instructor page, less what changes on every request (CSRF
    tokens, CSP nonces)."""
    page = client.get(f"/cohorts/{cohort.pk}/").content.decode()
    page = re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]*', r"\1", page)
    page = re.sub(r'("x-csrftoken": ")[^"]*', r"\1", page)
    page = re.sub(r'nonce="[^"]*"', 'nonce=""', page)
    return client.get(f"/cohorts/{cohort.pk}/export.csv").content.decode("utf-8-sig"), page


def test_cached_drill_numbers_equal_fresh_ones_after_every_change(
    client, people, cohort, wset, make_user, monkeypatch
):
    """The instructor page keeps its drill numbers in a snapshot keyed on the members'
    StatsVersions, the pair-goal due dates and extensions: after a grade, an extension, a member
    leaving or joining, what it shows is what drawing it afresh shows."""
    _populate(cohort, wset, make_user, 4, 0)
    as_user(client, people["teacher"])
    pairs_goal = cohort.assignments.get(goal="pairs")

    def fresh() -> tuple[str, str]:
        with monkeypatch.context() as m:
            m.setattr(progress, "snapshot_part", lambda key, name: None)
            return _drill_parts(client, cohort)

    def check() -> tuple[str, str]:
        _drill_parts(client, cohort)  # stores the snapshot for this state
        cached = _drill_parts(client, cohort)
        assert cached == fresh()
        return cached

    before = check()
    q0 = Membership.objects.get(cohort=cohort, user__username="q0").user
    late = timezone.now() - timedelta(hours=2)  # after the pair goal's due date
    make_attempt(q0, "straggler", "bandwidth-bound-collective", when=late)  # a grade
    after_grade = check()
    assert after_grade != before
    Extension.objects.create(assignment=pairs_goal, learner=q0, due_at=timezone.now())
    after_extension = check()
    assert after_extension != after_grade  # the late drills now count for q0's goal
    Membership.objects.filter(cohort=cohort, user=q0).delete()
    after_leaving = check()
    assert q0.username not in after_leaving[0]
    newcomer = make_user("newcomer")
    make_attempt(newcomer, "recompilation", "input-starvation")  # before joining
    Membership.objects.create(cohort=cohort, user=newcomer)
    assert check() != after_leaving


def test_after_a_grade_only_the_graded_members_counters_are_read(
    client, people, cohort, wset, make_user, monkeypatch
):
    """The first instructor view after one member's grade reads that member's counters and
    cards again, no one else's, and shows what drawing the whole cohort afresh shows."""
    _populate(cohort, wset, make_user, 5, 0)
    as_user(client, people["teacher"])
    _drill_parts(client, cohort)  # the members' numbers stored for this cohort
    q3 = Membership.objects.get(cohort=cohort, user__username="q3").user
    make_attempt(q3, "bandwidth-bound-collective", "straggler", when=timezone.now())
    make_card(q3, "recompilation")
    with CaptureQueriesContext(connection) as ctx:
        patched = _drill_parts(client, cohort)
    others = [m for m in cohort.memberships.values_list("user_id", flat=True) if m != q3.pk]
    for table in ("drills_scenariotally", "drills_weektally", "drills_card"):
        sql = [q["sql"] for q in ctx.captured_queries if f'FROM "{table}"' in q["sql"]]
        assert sql, table
        for q in sql:
            assert str(q3.pk) in q and not any(f"({o})" in q or f" {o}," in q for o in others)
    with monkeypatch.context() as m:
        m.setattr(progress, "snapshot_part", lambda key, name: None)
        assert _drill_parts(client, cohort) == patched


def test_warm_instructor_page_reads_no_attempt_or_counter(
    client, people, cohort, wset, make_user, django_assert_max_num_queries
):
    """A repeat view of an unchanged cohort reads its drill numbers from the snapshot: no query
    over the attempts or the summary counters, and fewer queries than the first view."""
    _populate(cohort, wset, make_user, 5, 0)
    as_user(client, people["teacher"])
    url = f"/cohorts/{cohort.pk}/"
    with CaptureQueriesContext(connection) as cold:
        assert client.get(url).status_code == 200
    with django_assert_max_num_queries(14), CaptureQueriesContext(connection) as warm:
        assert client.get(url).status_code == 200
    assert len(warm.captured_queries) < len(cold.captured_queries)
    for table in ("drills_attempt", "drills_scenariotally", "drills_weektally"):
        assert not [q for q in warm.captured_queries if table in q["sql"]], table
        assert [q for q in cold.captured_queries if table in q["sql"]], table


# --------------------------------------------------------------------------- per sentence


def test_per_sentence_accuracy_matches_the_attempts(client, people, cohort):
    """ada: two five-sentence attempts (step right in both, gap right in one) and an older
    three-part one (no numbers); bob: one attempt with the value wrong. The cohort page and
    ada's page show each sentence's right-of-graded, and ada's dashboard agrees."""
    ada, bob = people["ada"], people["bob"]
    rows = [
        (ada, {"step_correct": True, "gap_correct": True, "value_correct": True}),
        (ada, {"step_correct": True, "gap_correct": False, "value_correct": True}),
        (ada, {"five_sentence": False}),
        (bob, {"step_correct": True, "gap_correct": True, "value_correct": False}),
    ]
    for user, fields in rows:
        a = make_attempt(user, "straggler", "straggler")
        Attempt.objects.filter(pk=a.pk).update(measurement_correct=True, fix_correct=True, **fields)
    summaries.rebuild_users([ada.pk, bob.pk])  # the grades were edited after the fact

    def cells(html: str, row: str) -> dict[str, str]:
        tr = re.search(rf'<tr data-sentence-week="{row}">(.*?)</tr>', html, re.S).group(1)
        return dict(re.findall(r'data-sentence="(\w+)" title="[^"]*">([^<]*)<', tr))

    as_user(client, people["teacher"])
    total = cells(client.get(f"/cohorts/{cohort.pk}/").content.decode(), "total")
    assert total["step"] == "100%" and total["gap"] == "67%" and total["value"] == "67%"
    assert total["signature"] == "100%" and total["expected"] == "—"
    mine = cells(client.get(f"/cohorts/{cohort.pk}/learners/{ada.pk}/").content.decode(), "total")
    assert mine["gap"] == "50%" and mine["value"] == "100%" and mine["measurement"] == "100%"
    as_user(client, ada)
    stats = client.get("/dashboard/stats.json").json()["sentence_accuracy"]["totals"]
    assert stats["gap"] == {"graded": 2, "right": 1, "accuracy": 0.5}
    assert stats["signature"]["graded"] == 3
    dash = cells(client.get("/dashboard/").content.decode(), "total")
    assert dash == mine


def test_a_scenario_drilled_only_in_practice_is_not_called_not_drilled(client, people, cohort):
    """Untimed practice schedules no review, so the learner page's "Next review" said "not
    drilled" beside "Drills 1"; it says the drills were practice and nothing is scheduled."""
    attempt = make_attempt(people["ada"], "straggler", "straggler")
    Attempt.objects.filter(pk=attempt.pk).update(mode=Attempt.Mode.PRACTICE)
    url = f"/cohorts/{cohort.pk}/learners/{people['ada'].pk}/"
    html = as_user(client, people["teacher"]).get(url).content.decode()
    drilled = re.search(r'<tr data-scenario-row="straggler">.*?</tr>', html, re.S).group(0)
    assert ">1</td>" in drilled and "practice only, no review scheduled" in drilled
    assert "not drilled" not in drilled
    untouched = re.search(r'<tr data-scenario-row="healthy">.*?</tr>', html, re.S).group(0)
    assert "not drilled" in untouched
    # and "Last 20 drills" says which drills were practice
    recent = html[html.index("Last 20 drills") :]
    assert "<td>drill · untimed practice</td>" in recent


def test_the_per_sentence_totals_row_counts_its_attempts(client, people, cohort):
    """The total row of "Accuracy per sentence over time" left its Attempts cell blank under a
    bare "12 weeks"; it sums the weeks above it."""
    now = timezone.now()
    for days in (1, 9, 16):
        make_attempt(people["ada"], "straggler", "straggler", when=now - timedelta(days=days))
    html = as_user(client, people["teacher"]).get(f"/cohorts/{cohort.pk}/").content.decode()
    total = re.search(r'<tr data-sentence-week="total">(.*?)</tr>', html, re.S).group(1)
    assert "All 12 weeks" in total and '<td class="num">3</td>' in total


def test_destructive_buttons_on_the_cohort_page_confirm_and_name_their_target(
    client, people, cohort
):
    """'Regenerate join code' broke every invite link already shared on one click; it asks
    first. Each row's 'remove' button is named for the learner it removes (a screen reader
    heard 'remove, remove, remove')."""
    html = as_user(client, people["teacher"]).get(f"/cohorts/{cohort.pk}/").content.decode()
    regen = re.search(r"<form[^>]*regenerate-code[^>]*>", html).group(0)
    assert "data-confirm=" in regen and cohort.join_code in regen
    assert f'aria-label="Remove ada from {cohort.name}"' in html


def test_the_learner_pages_next_review_says_its_zone(client, people, cohort):
    """Every date on the cohort pages says UTC but the learner page's "Next review" column."""
    card = make_card(people["ada"], "straggler", reviewed_days_ago=0)
    url = f"/cohorts/{cohort.pk}/learners/{people['ada'].pk}/"
    html = as_user(client, people["teacher"]).get(url).content.decode()
    row = re.search(r'<tr data-scenario-row="straggler">.*?</tr>', html, re.S).group(0)
    due = timezone.localtime(card.due)
    assert f"{due:%a} {due.day} {due:%b, %H:%M} UTC</time>" in row


def test_the_confusion_matrix_says_why_a_blank_answer_is_not_in_it(client, people, cohort):
    """A learner with drills submitted blank showed "Drills 2" in the scenarios table and a
    confusion matrix of zeros, with nothing to say why."""
    make_attempt(people["ada"], "straggler", "")
    make_attempt(people["ada"], "healthy", "")
    html = as_user(client, people["teacher"]).get(f"/cohorts/{cohort.pk}/").content.decode()
    legend = html[html.index('<table class="confusion"') :]
    assert "counts the drills that named a scenario" in legend
    assert "submitted blank" in legend


def test_an_instructor_cannot_make_two_cohorts_of_one_name(client, people, cohort):
    """A second "Spring perf" was created beside the first: two identical rows on the
    instructor's list and, for a learner in both, on theirs. (One made in the last minutes is
    taken for a resubmission: tests/cohorts/test_instructor_input.py.)"""
    Cohort.objects.filter(pk=cohort.pk).update(created_at=timezone.now() - timedelta(days=30))
    as_user(client, people["teacher"])
    resp = client.post("/cohorts/new/", {"name": "  spring PERF "})
    assert resp.status_code == 400
    assert "You already teach a cohort called" in resp.content.decode()
    assert Cohort.objects.filter(name__iexact="spring perf").count() == 1
    assert client.post("/cohorts/new/", {"name": "Spring perf 2027"}).status_code == 302
    # another instructor's cohort of that name is no obstacle
    as_user(client, people["stranger"])
    assert client.post("/cohorts/new/", {"name": "Spring perf"}).status_code == 302
