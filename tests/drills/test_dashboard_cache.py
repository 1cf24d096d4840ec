"""The dashboard's per-state cache, as a learner sees it: a page served from the cache is the
page the numbers draw now; a grade (drill, math answer, re-narration) or a rebuild shows on the
very next view; the cards' columns are never stale; another learner never sees a cached page
that is not theirs."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.template.defaultfilters import date as date_filter
from django.utils import timezone

from drills import scheduling, summaries
from drills.models import Attempt, Card, StatsVersion
from drills.stats import cached, dashboard
from scenarios.models import Trace
from tests.conftest import right_answer
from tests.drills.test_dashboard import S, build, save_all, trace_for
from tests.factories import graded_math_answer

pytestmark = pytest.mark.django_db


def start(client) -> Attempt:
    response = client.post("/drill/next/", {"mode": "timed"})
    assert response.status_code == 302
    attempt_id = re.search(r"/drill/attempts/([0-9a-f-]{36})/", response["Location"]).group(1)
    return Attempt.objects.select_related("trace").get(pk=attempt_id)


def drill(client, *, right: bool = True) -> Attempt:
    attempt = start(client)
    answer = right_answer(attempt)
    if not right:
        answer["scenario"] = "healthy" if attempt.scenario != "healthy" else "straggler"
    response = client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", answer)
    assert response.status_code in (200, 302)
    attempt.refresh_from_db()
    assert attempt.submitted_at is not None
    return attempt


def body(client) -> str:
    """The dashboard's content (the page around it carries per-request tokens)."""
    response = client.get("/dashboard/")
    assert response.status_code == 200
    html = response.content.decode()
    start = html.index('<section class="card dash-head">')
    return html[start : html.rindex("</section>") + len("</section>")]


def kpi(html: str, name: str) -> str:
    return re.search(rf'data-kpi="{name}">([^<]*)<', html).group(1)


def scenario_row(html: str, slug: str) -> str:
    return re.search(rf'data-scenario-row="{slug}">(.*?)</tr>', html, re.S).group(1)


def json_without_clock(client) -> dict:
    data = client.get("/dashboard/stats.json").json()
    data.pop("generated_at")
    return data


def test_a_graded_drill_shows_on_the_very_next_view(learner_client, learner, no_refill):
    first = drill(learner_client)
    page = body(learner_client)
    assert kpi(page, "graded") == "1"
    assert "1 graded attempt, 1 on the diagonal." in page  # singular for one
    assert body(learner_client) == page  # the second view comes from the cache ...
    key = cached.key_of(learner, timezone.now())
    assert key is not None and cached.part(key, "page") is not None
    cache.delete_many([f"{key}:page", f"{key}:stats"])
    assert body(learner_client) == page  # ... and is the page the numbers draw afresh

    second = drill(learner_client, right=False)
    page = body(learner_client)
    assert kpi(page, "graded") == "2" and kpi(page, "accuracy") == "50%"
    counts = {first.scenario: 0, second.scenario: 0}
    for a in (first, second):
        counts[a.scenario] += 1
    for slug, n in counts.items():
        assert re.search(rf'<td class="num">{n}</td>', scenario_row(page, slug))
    assert f"{2} graded attempts, 1 on the diagonal" in page
    data = json_without_clock(learner_client)
    assert data["totals"]["graded"] == 2 and data["confusion"]["total"] == 2


def test_the_page_and_json_from_the_cache_equal_the_read_model(learner_client, learner):
    now = timezone.now()
    save_all([build(learner, S, S, now - timedelta(days=d, hours=1)) for d in range(40)])
    state = scheduling.review(scheduling.new_card_state(), 3, now - timedelta(days=5))
    Card.objects.create(user=learner, item=S, state=state, due=scheduling.due(state))
    for _ in range(2):  # a miss, then a hit
        data = json_without_clock(learner_client)
        fresh = learner_client.get("/dashboard/stats.json").json()
        fresh.pop("generated_at")
        assert data == fresh
        expect = dashboard.learner_stats(learner, timezone.now())
        assert data["totals"] == expect["totals"]
        assert data["confusion"] == expect["confusion"]
        row = next(r for r in data["scenarios"] if r["slug"] == S)
        assert row["attempts"] == 40
        assert row["retrievability"] == pytest.approx(
            next(r for r in expect["scenarios"] if r["slug"] == S)["retrievability"], abs=1e-6
        )


def test_card_columns_are_read_on_every_view(learner_client, learner):
    now = timezone.now()
    save_all([build(learner, S, S, now - timedelta(hours=2))])
    state = scheduling.review(scheduling.new_card_state(), 3, now - timedelta(hours=2))
    card = Card.objects.create(user=learner, item=S, state=state, due=scheduling.due(state))
    row = scenario_row(body(learner_client), S)
    assert "due now" not in row and "<time datetime=" in row
    # The card moves without any grade (the counters, and so the cached body, stay as they were).
    card.state = scheduling.pull_due_now(state, now - timedelta(minutes=1))
    card.save()
    row = scenario_row(body(learner_client), S)
    assert "due now" in row
    card.delete()
    assert "not drilled" in scenario_row(body(learner_client), S)


def test_a_scenario_drilled_only_in_practice_says_so_on_the_dashboard(learner_client, learner):
    """Untimed practice schedules no review, so the row read "not drilled" beside its attempt
    count; it says the drills were practice and nothing is scheduled. A timed drill of the same
    scenario brings its card (and a date) back."""
    now = timezone.now()
    save_all([build(learner, S, S, now - timedelta(hours=2), mode="practice")])
    row = scenario_row(body(learner_client), S)
    assert "practice only, no review scheduled" in row and "not drilled" not in row
    assert "not drilled" in scenario_row(
        body(learner_client), "healthy" if S != "healthy" else "straggler"
    )
    save_all([build(learner, S, S, now - timedelta(hours=1))])
    state = scheduling.review(scheduling.new_card_state(), 3, now - timedelta(hours=1))
    Card.objects.create(user=learner, item=S, state=state, due=scheduling.due(state))
    row = scenario_row(body(learner_client), S)
    assert "practice only" not in row and "<time datetime=" in row


def test_a_due_date_prints_as_the_template_printed_it(learner_client, learner):
    now = timezone.now()
    save_all([build(learner, S, S, now - timedelta(hours=2))])
    state = scheduling.review(scheduling.new_card_state(), 3, now - timedelta(hours=2))
    Card.objects.create(user=learner, item=S, state=state, due=scheduling.due(state))
    due = scheduling.due(state)
    row = scenario_row(body(learner_client), S)
    iso, shown = date_filter(due, "c"), date_filter(due, "D j M, H:i")
    assert f'<time datetime="{iso}">{shown} UTC</time>' in row


def test_a_math_answer_shows_on_the_next_view(learner_client, learner):
    save_all([build(learner, S, S, timezone.now() - timedelta(hours=1))])
    body(learner_client)  # cached
    now = timezone.now()
    graded_math_answer(learner, when=now)
    page = body(learner_client)
    row = re.search(r'data-family-row="busbw">(.*?)</tr>', page, re.S).group(1)
    assert '<td class="num">1</td>' in row and "100%" in row


def test_a_rebuild_shows_on_the_next_view(learner_client, learner):
    save_all([build(learner, S, S, timezone.now() - timedelta(hours=1))])
    assert kpi(body(learner_client), "graded") == "1"
    # Attempts written past the live path (an import), then the counters rebuilt.
    imported = [build(learner, S, S, timezone.now() - timedelta(hours=k + 2)) for k in range(3)]
    for a, trace in zip(
        imported, Trace.objects.bulk_create([trace_for(S) for _ in range(3)]), strict=True
    ):
        a.trace = trace
    Attempt.objects.bulk_create(imported)
    assert kpi(body(learner_client), "graded") == "1"  # the counters do not know yet
    summaries.rebuild_users([learner.pk])
    assert kpi(body(learner_client), "graded") == "4"


def test_a_new_day_moves_the_windows(learner):
    now = timezone.now()
    save_all([build(learner, S, S, now - timedelta(hours=1))])
    today = cached.counters(learner, now)
    assert cached.part(cached.key_of(learner, now), "stats") == today
    later = now + timedelta(days=8)
    assert cached.counters(learner, later) == dashboard.learner_counters(learner, later) != today
    assert cached.key_of(learner, later) != cached.key_of(learner, now)


def test_each_learner_sees_only_their_own_cached_page(people, client):
    ada, bob = people["ada"], people["bob"]
    now = timezone.now()
    save_all([build(ada, S, S, now - timedelta(hours=k + 1)) for k in range(3)])
    save_all([build(bob, S, "healthy", now - timedelta(hours=1))])
    client.force_login(ada)
    assert kpi(body(client), "graded") == "3"
    client.force_login(bob)
    page = body(client)
    assert kpi(page, "graded") == "1" and kpi(page, "accuracy") == "0%"
    assert json_without_clock(client)["totals"]["graded"] == 1


def test_a_learner_never_graded_is_not_cached(learner_client, learner):
    assert kpi(body(learner_client), "graded") == "0"
    assert not StatsVersion.objects.filter(user=learner).exists()
    assert cached.key_of(learner, timezone.now()) is None


def test_a_card_of_a_family_never_answered_still_gets_its_row(learner_client, learner):
    save_all([build(learner, S, S, timezone.now() - timedelta(hours=1))])
    body(learner_client)  # the cached body has no row for it
    now = timezone.now()
    state = scheduling.review(scheduling.new_card_state(), 3, now - timedelta(days=1))
    Card.objects.create(
        user=learner, kind="math", item="retired-family", state=state, due=scheduling.due(state)
    )
    page = body(learner_client)
    row = re.search(r'data-family-row="retired-family">(.*?)</tr>', page, re.S).group(1)
    assert "<time datetime=" in row
    assert kpi(page, "graded") == "1"


# ------------------------------------------------- the next state drawn when a grade commits


def test_a_grade_draws_the_next_dashboard_before_it_is_viewed(
    learner_client, learner, no_refill, django_capture_on_commit_callbacks
):
    """No worker is needed: the grading request itself draws the new state once it commits, so
    a learner who goes from the reveal straight to the dashboard finds the page drawn."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    drill(learner_client)
    assert kpi(body(learner_client), "graded") == "1"  # looked at: grades now draw ahead
    with django_capture_on_commit_callbacks(execute=True):
        second = drill(learner_client, right=False)
    key = cached.key_of(learner, timezone.now())
    assert cached.part(key, "page") is not None  # drawn for the new state, before any view
    with CaptureQueriesContext(connection) as queries:
        page = body(learner_client)
    tallies = [q["sql"] for q in queries.captured_queries if "tally" in q["sql"]]
    assert tallies == []  # the view read no counter: the page was there
    assert kpi(page, "graded") == "2" and kpi(page, "accuracy") == "50%"
    assert re.search(r'<td class="num">1</td>', scenario_row(page, second.scenario))
    # What was drawn ahead equals what a full rebuild from the raw attempts draws.
    ahead = cached.part(key, "stats")
    summaries.rebuild_users([learner.pk])
    now = timezone.now()
    assert cached.key_of(learner, now) != key
    assert ahead == dashboard.learner_counters(learner, now)
    assert body(learner_client) == page


def test_a_math_answer_draws_ahead_too(learner_client, learner, django_capture_on_commit_callbacks):
    save_all([build(learner, S, S, timezone.now() - timedelta(hours=1))])
    body(learner_client)
    with django_capture_on_commit_callbacks(execute=True):
        from django.db import transaction

        with transaction.atomic():
            graded_math_answer(learner)
    key = cached.key_of(learner, timezone.now())
    drawn = cached.part(key, "stats")
    assert drawn is not None and drawn["math_tallies"]["busbw"] == (1, 1)


def test_a_learner_who_never_looks_costs_no_drawing(
    learner_client, learner, no_refill, django_capture_on_commit_callbacks
):
    cache.delete(cached.viewer_key(learner.pk))
    with django_capture_on_commit_callbacks(execute=True):
        drill(learner_client)
    key = cached.key_of(learner, timezone.now())
    assert cached.part(key, "page") is None and cached.part(key, "stats") is None


def test_the_views_one_read_of_key_and_cards_is_what_the_orm_reads(people):
    """Every dashboard view reads the cache key and the cards in one written-out query: the
    same key, card states and due times (aware, on SQLite too) as the ORM's two queries."""
    ada, bob = people["ada"], people["bob"]
    now = timezone.now()
    assert cached.key_and_cards(ada, now) == (None, ({}, {}))  # never graded, no card
    save_all([build(ada, S, S, now - timedelta(hours=1))])
    for kind, item in (("scenario", S), ("scenario", "healthy"), ("math", "busbw")):
        state = scheduling.review(scheduling.new_card_state(), 3, now - timedelta(days=2))
        Card.objects.create(user=ada, kind=kind, item=item, state=state, due=scheduling.due(state))
    state = scheduling.review(scheduling.new_card_state(), 2, now - timedelta(days=1))
    Card.objects.create(user=bob, kind="math", item="busbw", state=state, due=now)
    key, cards = cached.key_and_cards(ada, now)
    assert key is not None and key == cached.key_of(ada, now)
    assert cards == dashboard.cards_of(ada)
    assert set(cards[0]) == {S, "healthy"} and set(cards[1]) == {"busbw"}
    assert timezone.is_aware(cards[1]["busbw"][1])
    assert cached.key_and_cards(bob, now) == (None, dashboard.cards_of(bob))


def test_a_drawing_that_fails_loses_no_grade_and_the_view_draws_it(
    learner_client, learner, no_refill, django_capture_on_commit_callbacks, monkeypatch
):
    """The drawing runs in the grading request after the commit: if it breaks, the learner's
    answer is still graded and shown, and the next dashboard view draws the page itself."""
    from drills.stats import warm

    drill(learner_client)
    assert kpi(body(learner_client), "graded") == "1"

    def broken(user_id: int) -> bool:
        raise RuntimeError("cache down")

    monkeypatch.setattr(warm, "warm", broken)
    with django_capture_on_commit_callbacks(execute=True):
        second = drill(learner_client)
    assert second.scenario_correct is True
    key = cached.key_of(learner, timezone.now())
    assert cached.part(key, "page") is None
    assert kpi(body(learner_client), "graded") == "2"
