"""The pages with wide tables on a phone-sized screen (390 px wide): the page itself never scrolls
sideways (a wide table scrolls inside its card, a long link wraps). The same pages at 1280 px are
screenshotted too. Screenshots go to test-artifacts/viewer/ (git-ignored). The drill page's own
phone test is test_drill_phone.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from cohorts.models import Assignment, Cohort, Membership
from content.models import WalkthroughSet
from content.pages import library
from drills.models import Attempt, MockInterview
from scenarios import engine
from scenarios.models import Trace
from tests.browser.test_drill_phone import ARTIFACTS
from tests.conftest import PASSWORD
from tests.content.test_cohorts import make_attempt
from tests.factories import ready_upload

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# (true scenario, answered): a right and a wrong answer each, over two weeks
ANSWERS = [
    ("straggler", "straggler"),
    ("straggler", "bandwidth-bound-collective"),
    ("exposed-allreduce", "exposed-allreduce"),
    ("input-starvation", "launch-bound"),
    ("recompilation", "recompilation"),
    ("pipeline-bubbles", "allocator-stalls"),
]


def sticking_out(page) -> list[str]:
    """The outermost elements whose right edge passes the viewport, leaving out those inside a
    container that scrolls or clips them (what makes the page itself scroll sideways)."""
    return page.evaluate(
        """() => { const W = document.documentElement.clientWidth, out = [];
        const clipped = (e) => { for (let a = e.parentElement; a && a !== document.body;
            a = a.parentElement) if (getComputedStyle(a).overflowX !== 'visible') return true;
          return false; };
        for (const e of document.querySelectorAll('body *')) {
          const r = e.getBoundingClientRect();
          if (r.width && r.right > W + 1 && getComputedStyle(e).position !== 'fixed'
              && !clipped(e)) out.push(e.tagName + '.' + e.className + ' ' + Math.round(r.right));
        }
        return out.slice(0, 8); }"""
    )


@pytest.fixture
def world(people):
    """teacher runs a cohort of which ada is a member; ada has graded drills over two weeks and an
    upload with a realistic (long) file name; every walkthrough is assigned, with a drill goal, so
    the walkthrough grid is wider than its card even at 1280 px."""
    ada, teacher = people["ada"], people["teacher"]
    cohort = Cohort.objects.create(name="Spring performance engineering", created_by=teacher)
    cohort.instructors.add(teacher)
    Membership.objects.create(cohort=cohort, user=ada)
    now = timezone.now()
    every = WalkthroughSet.objects.create(
        slug="every",
        title="Every walkthrough",
        walkthroughs=[p.slug for p in library().walkthroughs()],
    )
    Assignment.objects.create(
        cohort=cohort,
        walkthrough_set=every,
        due_at=now + timedelta(days=7),
        goal=Assignment.Goal.PAIRS,
        goal_pair_drills=3,
        created_by=teacher,
    )
    for i, (scenario, answer) in enumerate(ANSWERS):
        with transaction.atomic():  # a grade's counters are patched in its transaction
            make_attempt(ada, scenario, answer, when=now - timedelta(days=2 * i, hours=1))
    # a finished mock interview: its report is a table of eleven columns
    interview = MockInterview.objects.create(
        user=ada, started_at=now - timedelta(hours=2), finished_at=now - timedelta(hours=1)
    )
    key = engine.generate("launch-bound", 1).key.to_dict()  # a real key: the rows are graded
    for answer in ("launch-bound", "healthy", "launch-bound", "sync-stalls", "launch-bound"):
        with transaction.atomic():  # as above: the grade's counters lock the learner's row
            attempt = make_attempt(ada, "launch-bound", answer)
        Trace.objects.filter(pk=attempt.trace_id).update(key=key)
        Attempt.objects.filter(pk=attempt.pk).update(
            kind=Attempt.Kind.INTERVIEW, interview=interview
        )
    ready_upload(
        ada,
        filename="llama-8b-ddp-rank0.pt.trace.json.gz",
        size_bytes=2_000_000,
        expires_at=now + timedelta(days=7),
        n_ranks=8,
    )
    return {"cohort": cohort, "ada": ada, "teacher": teacher, "interview": interview}


def signed_in(browser, live_server, username: str, width: int):
    ctx = browser.new_context(viewport={"width": width, "height": 844})
    page = ctx.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return ctx, page


@pytest.mark.parametrize("width", [390, 1280])
def test_wide_pages_fit_the_window(browser, live_server, world, width):
    cohort, ada = world["cohort"], world["ada"]
    pages = {
        "teacher": {
            "cohort": f"/cohorts/{cohort.pk}/",
            "cohort-learner": f"/cohorts/{cohort.pk}/learners/{ada.pk}/",
        },
        "ada": {
            "uploads": "/traces/upload/",
            "walkthrough": "/walkthroughs/walkthrough-exposed-allreduce/",
            "drill-home": "/drill/",
            "dashboard": "/dashboard/",
            "interview-report": f"/interview/{world['interview'].pk}/",
        },
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    too_wide = {}
    for username, urls in pages.items():
        ctx, page = signed_in(browser, live_server, username, width)
        errors: list[str] = []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        for name, url in urls.items():
            page.goto(live_server.url + url)
            assert "login" not in page.url, (name, page.url)
            if name == "walkthrough":
                page.wait_for_selector("#timeline canvas")
            if name == "interview-report":
                assert page.locator("#interview-traces tr.interview-trace").count() == 5
            page.screenshot(path=str(ARTIFACTS / f"{name}-{width}px.png"), full_page=True)
            sw, inner = page.evaluate(
                "() => [document.documentElement.scrollWidth, window.innerWidth]"
            )
            if sw > inner:
                too_wide[name] = (sw, inner, sticking_out(page))
        ctx.close()
        assert not errors, errors
    assert not too_wide, "\n".join(f"{name}: {v}" for name, v in too_wide.items())


def test_the_cohort_page_shows_its_data(browser, live_server, world):
    """The phone test above is not measuring empty pages: the tables it fits hold rows."""
    cohort = world["cohort"]
    ctx, page = signed_in(browser, live_server, "teacher", 390)
    page.goto(f"{live_server.url}/cohorts/{cohort.pk}/")
    assert page.locator("#sentence-accuracy tbody tr[data-sentence-week]").count() >= 2
    assert page.locator("#scenario-grid tbody tr").count() == 1
    page.goto(f"{live_server.url}/cohorts/{cohort.pk}/learners/{world['ada'].pk}/")
    assert page.locator("text=No drills yet.").count() == 0
    ctx.close()


def test_long_unbroken_names_wrap_on_a_phone(browser, live_server, people, make_user):
    """A learner whose username is an e-mail address, in a cohort named without spaces, pushed
    the cohort pages sideways on a phone: the learner page's heading, the cohort list's table,
    the "who confuses" list and the learner's own cohort list ran past the screen."""
    teacher = people["teacher"]
    learner = make_user("firstname.lastname@companydomain.example.com")
    cohort = Cohort.objects.create(name="perf_engineering_bootcamp_2026_spring", created_by=teacher)
    cohort.instructors.add(teacher)
    Membership.objects.create(cohort=cohort, user=learner)
    with transaction.atomic():
        make_attempt(learner, "straggler", "bandwidth-bound-collective")
    # The lifecycle pages: changing an assignment's dates, an archived cohort (the instructor's
    # "Archived" table, its page's note), the learner's "Leave?" page.
    wset = WalkthroughSet.objects.update_or_create(
        slug="lookalikes_and_their_signatures_in_one_unbroken_title",
        defaults={"title": "lookalikes_and_their_signatures_in_one_unbroken_title",
                  "walkthroughs": ["walkthrough-straggler-vs-bandwidth"]},
    )[0]  # fmt: skip
    assignment = Assignment.objects.create(
        cohort=cohort, walkthrough_set=wset, due_at=timezone.now() + timedelta(days=3)
    )
    archived = Cohort.objects.create(
        name="perf_engineering_bootcamp_2025_autumn_finished",
        created_by=teacher,
        archived_at=timezone.now(),
    )
    archived.instructors.add(teacher)
    pages = {
        "teacher": [
            "/cohorts/",
            f"/cohorts/{cohort.pk}/",
            f"/cohorts/{cohort.pk}/learners/{learner.pk}/",
            f"/cohorts/{cohort.pk}/assign/",
            f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/edit/",
            f"/cohorts/{archived.pk}/",
        ],
        learner.username: [
            "/cohorts/",
            f"/cohorts/join/{cohort.join_code}/",
            f"/cohorts/{cohort.pk}/leave/",
        ],
    }
    too_wide = {}
    for username, urls in pages.items():
        ctx, page = signed_in(browser, live_server, username, 390)
        for url in urls:
            page.goto(live_server.url + url)
            assert "login" not in page.url, url
            if page.evaluate("document.documentElement.scrollWidth > window.innerWidth"):
                too_wide[f"{username} {url}"] = sticking_out(page)
        ctx.close()
    assert not too_wide, too_wide
