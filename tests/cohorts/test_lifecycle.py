"""A cohort's life after it is made: a learner leaves it, an instructor archives (and unarchives)
it, changes an assignment's dates or removes the assignment. Personas as in tests/personas.py:
ada and bob are in the cohort, eve is not; teacher runs it, stranger and coteacher do not teach
it (coteacher teaches a cohort of their own)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone

from cohorts.models import Assignment, Cohort, Extension, Membership
from cohorts.reminders import send_due_reminders
from content.models import WalkthroughSet
from drills.models import Attempt
from tests.cohorts.test_instructor_input import flash_text
from tests.content.test_cohorts import make_attempt

pytestmark = pytest.mark.django_db

WALKS = ["walkthrough-straggler-vs-bandwidth", "walkthrough-recompilation-vs-starvation"]


@pytest.fixture
def cohort(people):
    c = Cohort.objects.create(name="Spring perf", created_by=people["teacher"])
    c.instructors.add(people["teacher"])
    for name in ("ada", "bob"):
        Membership.objects.create(cohort=c, user=people[name])
    return c


@pytest.fixture
def other_cohort(people):
    """coteacher's own cohort, which teacher does not teach."""
    c = Cohort.objects.create(name="Autumn kernels", created_by=people["coteacher"])
    c.instructors.add(people["coteacher"])
    Membership.objects.create(cohort=c, user=people["eve"])
    return c


@pytest.fixture
def wset(db):
    return WalkthroughSet.objects.update_or_create(
        slug="lookalikes-test", defaults={"title": "Lookalikes", "walkthroughs": WALKS}
    )[0]


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


def signed_in(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


def dt(value) -> str:
    return value.strftime("%Y-%m-%dT%H:%M")


def progress_csv(client, cohort) -> list[dict[str, str]]:
    resp = client.get(f"/cohorts/{cohort.pk}/export.csv")
    assert resp.status_code == 200
    return list(csv.DictReader(io.StringIO(resp.content.decode("utf-8-sig"))))


def attempts_csv_names(client, cohort) -> set[str]:
    resp = client.get(f"/cohorts/{cohort.pk}/attempts.csv")
    body = b"".join(resp.streaming_content).decode("utf-8-sig")
    return {row["username"] for row in csv.DictReader(io.StringIO(body))}


# --------------------------------------------------------------------------- a learner leaves


def test_a_learner_leaves_after_a_confirmation_page(people, cohort, assignment):
    """ "Leave…" on the cohorts list is a POST that asks first, on a page (no JavaScript
    needed); only the confirmation leaves. The learner's drills stay theirs; the cohort's
    pages and both CSVs stop listing them, and their extension there goes."""
    ada, teacher = people["ada"], people["teacher"]
    make_attempt(ada, "straggler", "straggler")
    Extension.objects.create(
        assignment=assignment, learner=ada, due_at=assignment.due_at + timedelta(days=1)
    )
    learner = signed_in(ada)
    listing = learner.get("/cohorts/").content.decode()
    assert f'action="/cohorts/{cohort.pk}/leave/"' in listing
    assert 'aria-label="Leave Spring perf"' in listing

    asked = learner.post(f"/cohorts/{cohort.pk}/leave/")
    assert asked.status_code == 200
    page = asked.content.decode()
    assert "Leave Spring perf?" in page and 'name="confirm" value="yes"' in page
    assert "csrfmiddlewaretoken" in page
    assert Membership.objects.filter(cohort=cohort, user=ada).exists()  # asking left nothing
    assert learner.get(f"/cohorts/{cohort.pk}/leave/").status_code == 200  # the page, by link

    done = learner.post(f"/cohorts/{cohort.pk}/leave/", {"confirm": "yes"}, follow=True)
    assert done.redirect_chain[-1][0] == "/cohorts/"
    said = flash_text(done.content.decode())
    assert "You left Spring perf" in said and "drills and dashboard are unchanged" in said
    assert not Membership.objects.filter(cohort=cohort, user=ada).exists()
    assert "Spring perf" not in done.content.decode().split("Your cohorts", 1)[1].split("</ul>")[0]
    assert not Extension.objects.filter(learner=ada).exists()
    assert Attempt.objects.filter(user=ada).count() == 1  # their history is theirs

    instructor = signed_in(teacher)
    assert [r["username"] for r in progress_csv(instructor, cohort)] == ["bob"]
    assert "ada" not in attempts_csv_names(instructor, cohort)
    assert 'data-learner="ada"' not in instructor.get(f"/cohorts/{cohort.pk}/").content.decode()
    assert instructor.get(f"/cohorts/{cohort.pk}/learners/{ada.pk}/").status_code == 404


def test_leaving_twice_lands_calmly_and_names_nothing(people, cohort, other_cohort):
    """A double click on "Leave": the second POST finds no membership. It lands on the list
    with a message, not an error, and the message names no cohort (the id in the URL could be
    any cohort's, like eve's)."""
    learner = signed_in(people["ada"])
    first = learner.post(f"/cohorts/{cohort.pk}/leave/", {"confirm": "yes"}, follow=True)
    assert "You left Spring perf" in flash_text(first.content.decode())
    again = learner.post(f"/cohorts/{cohort.pk}/leave/", {"confirm": "yes"}, follow=True)
    assert again.status_code == 200 and again.redirect_chain[-1][0] == "/cohorts/"
    said = flash_text(again.content.decode())
    assert "already left?" in said and "nothing was changed" in said
    assert "Spring perf" not in said

    # Someone else's cohort: the same calm answer to a POST, a 404 to the page; nothing changes.
    other = learner.post(f"/cohorts/{other_cohort.pk}/leave/", {"confirm": "yes"}, follow=True)
    assert "Autumn kernels" not in other.content.decode()
    assert learner.get(f"/cohorts/{other_cohort.pk}/leave/").status_code == 404
    assert Membership.objects.filter(cohort=other_cohort, user=people["eve"]).exists()


def test_leaving_needs_the_csrf_token(people, cohort):
    c = Client(enforce_csrf_checks=True)
    c.force_login(people["ada"])
    assert c.post(f"/cohorts/{cohort.pk}/leave/", {"confirm": "yes"}).status_code == 403
    assert Membership.objects.filter(cohort=cohort, user=people["ada"]).exists()


def test_a_learner_who_left_can_join_again(people, cohort):
    learner = signed_in(people["ada"])
    learner.post(f"/cohorts/{cohort.pk}/leave/", {"confirm": "yes"})
    resp = learner.post("/cohorts/join/", {"code": cohort.join_code}, follow=True)
    assert "You joined Spring perf" in flash_text(resp.content.decode())


# --------------------------------------------------------------------------- archive


def test_an_archived_cohort_leaves_the_active_lists(people, cohort, assignment):
    """Archived: out of the instructor's active table (into "Archived"), out of the learners'
    lists and their assignments, home page included; its page and CSV stay readable."""
    instructor = signed_in(people["teacher"])
    resp = instructor.post(f"/cohorts/{cohort.pk}/archive/", follow=True)
    assert "Archived Spring perf" in flash_text(resp.content.decode())
    assert "Archived on" in resp.content.decode()  # the cohort page says so, and stays open
    assert f'action="/cohorts/{cohort.pk}/unarchive/"' in resp.content.decode()

    listing = instructor.get("/cohorts/").content.decode()
    active, archived = listing.split('id="archived"', 1)
    assert "Spring perf" not in active and "You teach no active cohort." in active
    assert f'href="/cohorts/{cohort.pk}/"' in archived

    learner = signed_in(people["ada"])
    assert "Spring perf" not in learner.get("/cohorts/").content.decode()
    assert "Lookalikes" not in learner.get("/").content.decode()

    assert {r["username"] for r in progress_csv(instructor, cohort)} == {"ada", "bob"}
    assert instructor.get(f"/cohorts/{cohort.pk}/learners/{people['ada'].pk}/").status_code == 200

    again = instructor.post(f"/cohorts/{cohort.pk}/archive/", follow=True)  # clicked twice
    assert "already archived" in flash_text(again.content.decode())


def test_an_archived_cohort_cannot_be_joined_with_its_code(people, cohort):
    cohort.archived_at = timezone.now()
    cohort.save()
    eve = signed_in(people["eve"])
    by_form = eve.post("/cohorts/join/", {"code": cohort.join_code.lower()})
    assert by_form.status_code == 400
    assert "Spring perf is archived" in by_form.content.decode()
    assert cohort.join_code.lower() in by_form.content.decode()  # what was typed stays
    by_link = eve.get(f"/cohorts/join/{cohort.join_code}/")
    assert by_link.status_code == 400 and "is archived" in by_link.content.decode()
    posted = eve.post(f"/cohorts/join/{cohort.join_code}/")
    assert posted.status_code == 400
    assert not Membership.objects.filter(cohort=cohort, user=people["eve"]).exists()


def test_an_archived_cohort_gets_no_new_assignments(people, cohort, wset):
    cohort.archived_at = timezone.now()
    cohort.save()
    instructor = signed_in(people["teacher"])
    page = instructor.get(f"/cohorts/{cohort.pk}/assign/").content.decode()
    assert "gets no new assignments" in page and 'name="walkthrough_set"' not in page
    due = dt(timezone.now() + timedelta(days=3))
    resp = instructor.post(
        f"/cohorts/{cohort.pk}/assign/", {"walkthrough_set": wset.pk, "due_at": due}
    )
    assert resp.status_code == 400
    assert "is archived, so it gets no new assignments" in resp.content.decode()
    assert f'value="{due}"' in resp.content.decode()
    assert not Assignment.objects.filter(cohort=cohort).exists()


def test_no_reminders_for_an_archived_cohort(people, cohort, wset):
    Assignment.objects.create(
        cohort=cohort, walkthrough_set=wset, due_at=timezone.now() + timedelta(hours=3)
    )
    cohort.archived_at = timezone.now()
    cohort.save()
    assert send_due_reminders() == 0
    assert mail.outbox == []


def test_unarchiving_reopens_the_cohort(people, cohort, assignment):
    cohort.archived_at = timezone.now()
    cohort.save()
    instructor = signed_in(people["teacher"])
    resp = instructor.post(f"/cohorts/{cohort.pk}/unarchive/", follow=True)
    assert "Spring perf is active again" in flash_text(resp.content.decode())
    assert 'id="archived"' not in instructor.get("/cohorts/").content.decode()
    assert "Lookalikes" in signed_in(people["ada"]).get("/cohorts/").content.decode()
    joined = signed_in(people["eve"]).post("/cohorts/join/", {"code": cohort.join_code})
    assert joined.status_code == 302
    assert Membership.objects.filter(cohort=cohort, user=people["eve"]).exists()


# --------------------------------------------------------------------------- assignment dates


def test_changing_the_due_date_moves_learners_progress(people, cohort, wset):
    """Past due and unread is "missing"; moved a week on, the same walkthrough is "open" again,
    on the instructor's CSV and on the learner's list."""
    now = timezone.now()
    a = Assignment.objects.create(cohort=cohort, walkthrough_set=wset, due_at=now - timedelta(1))
    instructor = signed_in(people["teacher"])
    column = f"{wset.slug}/{WALKS[0]}"
    assert progress_csv(instructor, cohort)[0][column] == "missing"
    assign_page = instructor.get(f"/cohorts/{cohort.pk}/assign/").content.decode()
    assert f'href="/cohorts/{cohort.pk}/assignments/{a.pk}/edit/"' in assign_page
    form = instructor.get(f"/cohorts/{cohort.pk}/assignments/{a.pk}/edit/").content.decode()
    assert f'value="{dt(a.due_at)}"' in form  # the form starts from the current dates

    due, cutoff = now + timedelta(days=7), now + timedelta(days=9)
    resp = instructor.post(
        f"/cohorts/{cohort.pk}/assignments/{a.pk}/edit/",
        {"due_at": dt(due), "cutoff_at": dt(cutoff)},
        follow=True,
    )
    assert resp.redirect_chain[-1][0] == f"/cohorts/{cohort.pk}/assign/"
    assert f"Lookalikes is now due {due:%Y-%m-%d %H:%M} UTC" in flash_text(resp.content.decode())
    a.refresh_from_db()
    assert dt(a.due_at) == dt(due) and dt(a.cutoff_at) == dt(cutoff)
    assert progress_csv(instructor, cohort)[0][column] == "open"
    mine = signed_in(people["ada"]).get("/cohorts/").content.decode()
    assert 'data-status="open"' in mine and 'data-status="missing"' not in mine


def test_a_cutoff_before_the_due_date_is_refused_and_nothing_typed_is_lost(
    people, cohort, assignment
):
    instructor = signed_in(people["teacher"])
    due = dt(timezone.now() + timedelta(days=5))
    cutoff = dt(timezone.now() + timedelta(days=3))
    resp = instructor.post(
        f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/edit/",
        {"due_at": due, "cutoff_at": cutoff},
    )
    assert resp.status_code == 400
    page = resp.content.decode()
    assert "The cut-off must be on or after the due date." in page
    assert f'value="{due}"' in page and f'value="{cutoff}"' in page
    assert f"Now due {assignment.due_at:%a %-d %b %Y, %H:%M} UTC" in page  # not the refused one
    before = assignment.due_at
    assignment.refresh_from_db()
    assert assignment.due_at == before


def test_a_due_date_moved_into_the_past_is_refused(people, cohort, assignment):
    instructor = signed_in(people["teacher"])
    resp = instructor.post(
        f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/edit/",
        {"due_at": dt(timezone.now() - timedelta(hours=2)), "cutoff_at": ""},
    )
    assert resp.status_code == 400
    assert "The due date is in the past" in resp.content.decode()


def test_a_passed_due_date_left_as_it_is_takes_a_new_cutoff(people, cohort, wset):
    """Only the cut-off moves: a due date already passed is not refused for being past."""
    due = (timezone.now() - timedelta(days=1)).replace(second=0, microsecond=0)
    a = Assignment.objects.create(cohort=cohort, walkthrough_set=wset, due_at=due)
    cutoff = timezone.now() + timedelta(days=2)
    resp = signed_in(people["teacher"]).post(
        f"/cohorts/{cohort.pk}/assignments/{a.pk}/edit/",
        {"due_at": dt(due), "cutoff_at": dt(cutoff)},
    )
    assert resp.status_code == 302
    a.refresh_from_db()
    assert a.due_at == due and dt(a.cutoff_at) == dt(cutoff)


def test_a_past_assignment_is_not_reopened_beside_an_open_one(people, cohort, wset, assignment):
    old = Assignment.objects.create(
        cohort=cohort, walkthrough_set=wset, due_at=timezone.now() - timedelta(days=10)
    )
    resp = signed_in(people["teacher"]).post(
        f"/cohorts/{cohort.pk}/assignments/{old.pk}/edit/",
        {"due_at": dt(timezone.now() + timedelta(days=3)), "cutoff_at": ""},
    )
    assert resp.status_code == 400
    assert "cannot be open at the same time" in resp.content.decode()
    assert Assignment.objects.open_at(timezone.now()).filter(cohort=cohort).count() == 1


def test_renarration_keeps_its_lead_when_the_due_date_moves(people, cohort, wset):
    a = Assignment.objects.create(
        cohort=cohort,
        walkthrough_set=wset,
        due_at=timezone.now() + timedelta(days=5),
        renarration=True,
    )
    resp = signed_in(people["teacher"]).post(
        f"/cohorts/{cohort.pk}/assignments/{a.pk}/edit/",
        {"due_at": dt(timezone.now() + timedelta(hours=3)), "cutoff_at": ""},
    )
    assert resp.status_code == 400
    assert "asks for re-narration" in resp.content.decode()


def test_an_extension_the_new_due_date_overtakes_is_removed_and_said(people, cohort, assignment):
    """ada's extension ended a day after the old due date; the due date moves a week on. Kept,
    it would give ada less time than everyone else: it goes, and the message names her."""
    Extension.objects.create(
        assignment=assignment, learner=people["ada"], due_at=assignment.due_at + timedelta(days=1)
    )
    far = Extension.objects.create(
        assignment=assignment, learner=people["bob"], due_at=assignment.due_at + timedelta(days=30)
    )
    resp = signed_in(people["teacher"]).post(
        f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/edit/",
        {"due_at": dt(assignment.due_at + timedelta(days=7)), "cutoff_at": ""},
        follow=True,
    )
    said = flash_text(resp.content.decode())
    assert "The extensions of ada ended on or before the new due date" in said
    assert list(Extension.objects.filter(assignment=assignment)) == [far]


# --------------------------------------------------------------------------- remove assignment


def test_removing_an_assignment(people, cohort, assignment):
    instructor = signed_in(people["teacher"])
    Extension.objects.create(
        assignment=assignment, learner=people["ada"], due_at=assignment.due_at + timedelta(days=1)
    )
    page = instructor.get(f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/edit/")
    assert f'action="/cohorts/{cohort.pk}/assignments/{assignment.pk}/delete/"' in (
        page.content.decode()
    )
    url = f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/delete/"
    resp = instructor.post(url, follow=True)
    assert "Removed Lookalikes" in flash_text(resp.content.decode())
    assert not Assignment.objects.filter(pk=assignment.pk).exists()
    assert not Extension.objects.exists()
    assert not any("lookalikes-test/" in h for h in progress_csv(instructor, cohort)[0])
    assert "Lookalikes" not in signed_in(people["ada"]).get("/cohorts/").content.decode()

    again = instructor.post(url, follow=True)  # clicked twice
    assert again.status_code == 200
    assert "already removed?" in flash_text(again.content.decode())


# --------------------------------------------------------------------------- who may


@pytest.mark.parametrize("who", ["ada", "stranger", "coteacher"])
def test_only_the_cohorts_instructors_archive_or_change_it(people, cohort, assignment, who):
    """A learner of the cohort, an instructor of no cohort and another cohort's instructor all
    get 404, and nothing changes."""
    c = signed_in(people[who])
    base = f"/cohorts/{cohort.pk}"
    edit = f"{base}/assignments/{assignment.pk}/edit/"
    for method, url, data in [
        ("post", f"{base}/archive/", {}),
        ("post", f"{base}/unarchive/", {}),
        ("get", edit, {}),
        ("post", edit, {"due_at": dt(timezone.now() + timedelta(days=9))}),
        ("post", f"{base}/assignments/{assignment.pk}/delete/", {}),
    ]:
        assert getattr(c, method)(url, data).status_code == 404, (method, url)
    cohort.refresh_from_db()
    assert cohort.archived_at is None
    assert Assignment.objects.get(pk=assignment.pk).due_at == assignment.due_at


def test_another_cohorts_assignment_is_a_404_under_ones_own_cohort(
    people, cohort, other_cohort, wset
):
    theirs = Assignment.objects.create(
        cohort=other_cohort, walkthrough_set=wset, due_at=timezone.now() + timedelta(days=2)
    )
    c = signed_in(people["teacher"])
    assert c.get(f"/cohorts/{cohort.pk}/assignments/{theirs.pk}/edit/").status_code == 404
    assert c.post(f"/cohorts/{cohort.pk}/assignments/{theirs.pk}/delete/").status_code == 302
    assert Assignment.objects.filter(pk=theirs.pk).exists()
