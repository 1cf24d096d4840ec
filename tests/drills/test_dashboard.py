"""The accuracy dashboard: numbers against a hand-built history, flat query counts, isolation
between learners, the streak opt-in. (Rebuilding cards: test_card_replay.py.)"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from drills import scheduling, summaries
from drills.models import Attempt, Card, LearnerProfile, MathAttempt
from drills.stats import dashboard
from scenarios import engine
from scenarios.models import Trace
from tests.factories import TraceFactory, graded_math_answer

pytestmark = pytest.mark.django_db

S, B = "straggler", "bandwidth-bound-collective"
RC, ST = "recompilation", "input-starvation"


def trace_for(scenario: str) -> Trace:
    """An unsaved Trace row of ``scenario`` with the key the engine wrote (tests/factories.py);
    the statistics read only the attempts' stored grade fields."""
    return TraceFactory.build(scenario=scenario)


def build(user, scenario, answer, when, *, elapsed=60.0, mode="timed", m=True, f=True, w=True):
    """An unsaved graded Attempt (pass answer=None for a served, never submitted one)."""
    submitted = answer is not None
    return Attempt(
        user=user,
        scenario=scenario,
        mode=mode,
        served_at=when - timedelta(seconds=elapsed),
        submitted_at=when if submitted else None,
        answer_scenario=answer or "",
        elapsed_s=elapsed if submitted else None,
        scenario_correct=(answer == scenario) if submitted else None,
        measurement_correct=m if submitted else None,
        fix_correct=f if submitted else None,
        win_correct=w if submitted else None,
        over_time=(elapsed > 122 and mode != "practice") if submitted else None,
    )


def save_all(attempts: list[Attempt]) -> list[Attempt]:
    """Store the attempts and count the graded ones as the live write path does."""
    traces = Trace.objects.bulk_create([trace_for(a.scenario) for a in attempts])
    for a, t in zip(attempts, traces, strict=True):
        a.trace = t
    saved = Attempt.objects.bulk_create(attempts)
    for a in saved:
        if a.submitted_at is not None:
            summaries.record_attempt(a)
    return saved


NOW = datetime(2025, 3, 14, 15, 0, tzinfo=UTC)


def history(user, other, now=NOW):
    """The hand-built history (see the expected numbers in the tests below)."""
    day = [now - timedelta(days=30 - k) for k in range(30)]
    rows = []
    # straggler: one early practice attempt (right, slow, no clock), then 12 timed attempts.
    rows.append(build(user, S, S, day[0], elapsed=500, mode="practice", m=False, w=False))
    answers = [B, B, S, S, B, S, S, S, S, S, S, S]
    elapsed = [30, 50, 70, 90, 110, 130, 150, 40, 60, 80, 100, 119]
    for k, (ans, el) in enumerate(zip(answers, elapsed, strict=True)):
        rows.append(build(user, S, ans, day[1 + k], elapsed=el, m=k % 2 == 0, f=True, w=k < 4))
    # bandwidth-bound collective: answered straggler once out of four.
    for k, (ans, el) in enumerate(zip([S, B, B, B], [40, 45, 200, 10], strict=True)):
        rows.append(build(user, B, ans, day[14 + k], elapsed=el, m=False, f=False, w=False))
    # recompilation answered as starvation twice; starvation answered as healthy once.
    rows.append(build(user, RC, ST, day[20], elapsed=70))
    rows.append(build(user, RC, ST, day[21], elapsed=75))
    rows.append(build(user, ST, "healthy", day[22], elapsed=80))
    # Served, never submitted: not an answer.
    rows.append(build(user, S, None, day[23]))
    # Another learner's attempts: never counted.
    rows += [build(other, S, B, day[k], elapsed=10) for k in range(5)]
    save_all(rows)


@pytest.fixture
def two_learners(people):
    return people["ada"], people["bob"]


def row_for(stats, slug):
    return next(r for r in stats["scenarios"] if r["slug"] == slug)


def test_per_scenario_numbers_match_the_hand_built_history(two_learners):
    ada, bob = two_learners
    history(ada, bob)
    state = scheduling.review(scheduling.new_card_state(), 3, NOW - timedelta(days=3))
    Card.objects.create(
        user=ada, item=S, state=state, due=scheduling.due(state), reviews=1, last_review=NOW
    )
    stats = dashboard.learner_stats(ada, NOW)

    s = row_for(stats, S)
    assert s["attempts"] == 13 and s["practice"] == 1 and s["timed"] == 12
    assert s["correct"] == 10 and s["accuracy"] == pytest.approx(10 / 13)
    assert s["last_n"] == 10 and s["last_n_accuracy"] == pytest.approx(9 / 10)
    assert s["median_s"] == pytest.approx(85.0)  # timed only: (80 + 90) / 2
    assert s["under_limit"] == 10 and s["under_limit_share"] == pytest.approx(10 / 12)
    assert s["measurement_accuracy"] == pytest.approx(6 / 13)
    assert s["fix_accuracy"] == pytest.approx(1.0)
    assert s["win_accuracy"] == pytest.approx(4 / 13)
    assert s["retrievability"] == pytest.approx(scheduling.retrievability(state, NOW))
    assert s["due"] == scheduling.due(state)

    b = row_for(stats, B)
    assert (b["attempts"], b["correct"], b["median_s"]) == (4, 3, pytest.approx(42.5))
    assert b["under_limit_share"] == pytest.approx(3 / 4)
    assert b["last_n"] == 4 and b["last_n_accuracy"] == pytest.approx(3 / 4)
    assert b["retrievability"] is None and b["due"] is None
    assert row_for(stats, RC)["median_s"] == pytest.approx(72.5)
    assert row_for(stats, "healthy")["attempts"] == 0
    assert row_for(stats, "healthy")["accuracy"] is None

    assert stats["totals"] == {"graded": 20, "correct": 13, "accuracy": 13 / 20, "practice": 1}


def test_confusion_cells_and_lookalike_rates_both_directions(two_learners):
    ada, bob = two_learners
    history(ada, bob)
    cm = dashboard.confusion_matrix(ada)
    at = {slug: i for i, slug in enumerate(cm["labels"])}
    assert cm["labels"][: len(engine.SCENARIOS)] == list(engine.SCENARIOS)
    assert cm["matrix"][at[S]][at[S]] == 10
    assert cm["matrix"][at[S]][at[B]] == 3
    assert cm["matrix"][at[B]][at[S]] == 1
    assert cm["matrix"][at[B]][at[B]] == 3
    assert cm["matrix"][at[RC]][at[ST]] == 2
    assert cm["matrix"][at[ST]][at["healthy"]] == 1
    assert cm["total"] == sum(map(sum, cm["matrix"])) == 20

    rates = {(p["true"], p["answered"]): p for p in dashboard.lookalike_rates(ada, now=NOW)}
    assert set(rates) == {(S, B), (B, S), (RC, ST), (ST, RC)}
    assert (rates[S, B]["confused"], rates[S, B]["attempts"]) == (3, 13)
    assert rates[S, B]["rate"] == pytest.approx(3 / 13)
    assert rates[B, S]["rate"] == pytest.approx(1 / 4)
    assert rates[RC, ST]["rate"] == pytest.approx(1.0)
    assert rates[ST, RC]["rate"] == pytest.approx(0.0)
    trend = rates[S, B]["trend"]
    assert len(trend) == dashboard.TREND_WEEKS
    assert sum(w["attempts"] for w in trend) == 13  # all within 12 weeks
    assert sum(w["confused"] for w in trend) == 3


def test_stats_json_matches_the_page_and_sums_to_graded_attempts(two_learners, client):
    ada, bob = two_learners
    history(ada, bob, now=timezone.now())
    client.force_login(ada)
    data = client.get("/dashboard/stats.json").json()
    graded = Attempt.objects.filter(user=ada, submitted_at__isnull=False).count()
    assert graded == 20
    assert sum(map(sum, data["confusion"]["matrix"])) == data["confusion"]["total"] == graded
    assert data["totals"]["graded"] == graded
    assert sum(r["attempts"] for r in data["scenarios"]) == graded
    assert sum(w["attempts"] for w in data["accuracy_over_time"]) == graded
    assert data["daily_activity"]["total"] == graded

    page = client.get("/dashboard/")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<svg class="chart confusion"' in html and "<script" not in html.split("</header>")[1]
    assert html.count('class="pair-outline"') == 4
    assert re.search(r'data-kpi="graded">20<', html)
    # The same numbers: the straggler row prints 77% (10/13) and its last-10 90%.
    row = re.search(r'data-scenario-row="straggler">(.*?)</tr>', html, re.S).group(1)
    assert "77%" in row and "90%" in row and "1:25" in row
    assert "Dashboard</a>" in html


def test_another_learners_attempts_are_never_counted(two_learners, client):
    ada, bob = two_learners
    history(ada, bob, now=timezone.now())
    client.force_login(bob)
    data = client.get("/dashboard/stats.json").json()
    assert data["totals"]["graded"] == 5
    assert data["confusion"]["total"] == 5
    s = next(r for r in data["scenarios"] if r["slug"] == S)
    assert (s["attempts"], s["correct"]) == (5, 0)
    assert client.get("/dashboard/").status_code == 200


def test_dashboard_needs_sign_in(client):
    assert client.get("/dashboard/stats.json").status_code == 302


def test_the_retrievability_column_says_what_it_reads_after_a_miss(learner, learner_client):
    """Just after a miss, FSRS reads retrievability near 100 % beside 0 % accuracy: the table
    says why, so the learner doesn't read the row as mastered."""
    save_all([build(learner, S, B, timezone.now() - timedelta(minutes=5), elapsed=40)])
    html = learner_client.get("/dashboard/").content.decode()
    note = html.index("Retrievability is the scheduler&#x27;s estimate")
    assert html.index('id="per-scenario"') < note < html.index("Retriev&shy;ability</th>")


def _many(user, n, start=0):
    slugs = list(engine.SCENARIOS)
    rows = []
    for k in range(start, start + n):
        true = slugs[k % len(slugs)]
        answer = true if k % 3 else slugs[(k + 1) % len(slugs)]
        when = timezone.now() - timedelta(hours=7 * k + 1)
        rows.append(build(user, true, answer, when, elapsed=20 + k % 150, mode="timed"))
    save_all(rows)


def _count(client, url):
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_query_count_is_flat_from_10_to_300_attempts(learner, learner_client):
    for slug in (S, B):
        state = scheduling.review(scheduling.new_card_state(), 3, timezone.now())
        Card.objects.create(user=learner, item=slug, state=state, due=scheduling.due(state))
    graded_math_answer(learner)
    _many(learner, 10)
    small = {u: _count(learner_client, u) for u in ("/dashboard/", "/dashboard/stats.json")}
    _many(learner, 290, start=10)
    assert Attempt.objects.filter(user=learner).count() == 300
    large = {u: _count(learner_client, u) for u in ("/dashboard/", "/dashboard/stats.json")}
    assert small == large
    # 11 + re-narrations + trials per pair and week: the three weekly parts share one query,
    # the scenario table and the confusion another
    assert large["/dashboard/stats.json"] <= 13


def test_math_section_aggregates_by_family(learner, learner_client):
    now = timezone.now()
    for correct in (True, True, False):
        graded_math_answer(learner, correct=correct, when=now)
    MathAttempt.objects.create(user=learner, family="busbw", seed=2, problem={}, served_at=now)
    state = scheduling.review(scheduling.new_card_state(), 3, now)
    Card.objects.create(
        user=learner, kind="math", item="busbw", state=state, due=scheduling.due(state)
    )
    data = learner_client.get("/dashboard/stats.json").json()
    fam = next(m for m in data["math"] if m["family"] == "busbw")
    assert (fam["attempts"], fam["correct"]) == (3, 2)
    assert fam["accuracy"] == pytest.approx(2 / 3)
    assert fam["retrievability"] == pytest.approx(1.0)
    html = learner_client.get("/dashboard/").content.decode()
    assert re.search(r'data-family-row="busbw">.*?67%', html, re.S)


# --------------------------------------------------------------------------- streak


def test_streak_counts_consecutive_utc_days_from_sql():
    now = datetime(2025, 3, 14, 9, 0, tzinfo=UTC)

    def days(*offsets):
        return [now - timedelta(days=d) for d in offsets]

    from django.contrib.auth import get_user_model

    u = get_user_model().objects.create_user("streaker")
    save_all([build(u, S, S, t) for t in days(0, 0, 1, 2, 4, 5)])
    assert dashboard.streak(u, now) == {
        "days": 3,
        "done_today": True,
    }
    # Not drilled today yet: yesterday's streak is still alive.
    later = now + timedelta(days=1)
    assert dashboard.streak(u, later) == {
        "days": 3,
        "done_today": False,
    }
    # A day missed: the streak is over.
    assert dashboard.streak(u, now + timedelta(days=2))["days"] == 0
    # A long streak reads past the first window of days.
    long = get_user_model().objects.create_user("long")
    save_all([build(long, S, S, now - timedelta(days=d, hours=1)) for d in range(100)])
    save_all([build(long, S, S, now - timedelta(days=d)) for d in range(101, 105)])
    assert dashboard.streak(long, now)["days"] == 100


def test_streak_is_opt_in_from_the_home_page(learner, learner_client):
    save_all([build(learner, S, S, timezone.now() - timedelta(days=d)) for d in (0, 1)])
    html = learner_client.get("/").content.decode()
    assert "data-streak" not in html and "Show a daily streak" in html
    assert "Drill the due ones" in html or "Start a drill" in html or "Drill anyway" in html

    response = learner_client.post("/dashboard/streak/", {"streak_opt_in": "1", "next": "/"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert LearnerProfile.objects.get(user=learner).streak_opt_in is True
    html = learner_client.get("/").content.decode()
    assert 'data-streak="2"' in html

    learner_client.post("/dashboard/streak/", {"streak_opt_in": "0"})
    assert LearnerProfile.objects.get(user=learner).streak_opt_in is False
    assert "data-streak" not in learner_client.get("/").content.decode()
    assert learner_client.get("/dashboard/streak/").status_code == 405


def test_streak_toggle_refuses_offsite_redirects(learner_client):
    response = learner_client.post(
        "/dashboard/streak/", {"streak_opt_in": "1", "next": "https://evil.example/"}
    )
    assert response["Location"] == "/"


def test_each_sentence_column_is_named_as_the_drill_form_names_it():
    """A learner reads "Expected step time" on the form and finds the same words over its
    column, not a second name for it ("Expected win")."""
    from scenarios.engine.diagnosis import SENTENCES as FORM

    form = dict(FORM)
    for key, _field, title in dashboard.SENTENCES:
        assert form[key].startswith(title) or title in ("Gap", "Measurement", "Measurement value")
    assert {k: t for k, _f, t in dashboard.SENTENCES}["expected"] == "Expected step time"


def test_a_new_learners_dashboard_says_where_to_begin(learner_client, learner):
    """A brand-new account's dashboard is all zeros and dashes: it says what fills it and links
    to the first drill; the note goes once a drill is graded."""
    html = learner_client.get("/dashboard/").content.decode()
    note = re.search(r'<p class="empty-note" id="dashboard-empty">(.*?)</p>', html, re.S)
    assert note, "no note on an empty dashboard"
    assert "Nothing graded yet" in note.group(1)
    assert 'href="/drill/"' in note.group(1) and "Start your first drill" in note.group(1)
    save_all([build(learner, "straggler", "straggler", timezone.now() - timedelta(hours=1))])
    html = learner_client.get("/dashboard/").content.decode()
    assert 'id="dashboard-empty"' not in html
    assert '<dd data-kpi="graded">1</dd>' in html


def test_the_sentence_columns_say_they_are_shares(learner_client):
    """'Step time 0%' read as a time: the six sentence columns sit under one header that says
    they are the share of graded drills with that sentence right."""
    html = learner_client.get("/dashboard/").content.decode()
    head = re.search(r'<table class="compact dash-table"[^>]*>.*?<thead>(.*?)</thead>', html, re.S)
    groups, columns = re.findall(r"<tr[^>]*>(.*?)</tr>", head.group(1), re.S)
    cells = re.findall(r'<t[hd][^>]*colspan="(\d+)"[^>]*>(.*?)</t[hd]>', groups)
    assert [int(n) for n, _ in cells] == [7, 6, 2]
    assert "sentence right" in cells[1][1] and "share of graded drills" in cells[1][1]
    names = [re.sub(r"<[^>]+>|&shy;", "", t) for t in re.findall(r"<th[^>]*>(.*?)</th>", columns)]
    assert names[7:13] == ["Step time", "Gap", "Measurement", "Value", "Fix", "Expected step time"]


def test_a_sparkline_without_two_weeks_says_so_to_a_screen_reader():
    """A pair's line is read out by its label: first and last week's rate, or what it lacks;
    with no week in range it said "Weekly confusion rate, — to —"."""
    from datetime import date, timedelta

    from drills.stats.charts import sparkline
    from drills.stats.svg import spark_svg

    def week(k, rate):
        n = 0 if rate is None else 4
        start = date(2026, 9, 7) + timedelta(weeks=k)
        return {"week": start, "rate": rate, "confused": 0, "attempts": n}

    none = spark_svg(sparkline([week(k, None) for k in range(12)]))
    assert 'aria-label="Weekly confusion rate: no graded attempts in the weeks shown"' in none
    assert "—" not in none
    one = spark_svg(sparkline([week(0, 0.25), *(week(k, None) for k in range(1, 12))]))
    assert 'aria-label="Weekly confusion rate, one week so far: 25%"' in one
    two = spark_svg(sparkline([week(0, 0.5), week(1, None), week(2, 0.25)]))
    assert 'aria-label="Weekly confusion rate, 50% to 25%"' in two


def test_a_lookalike_pulled_due_before_it_was_ever_drilled_has_no_retrievability_yet(
    learner, learner_client, no_refill
):
    """Naming the bandwidth-bound collective for a straggler trace pulls the bandwidth-bound
    card due now, before the learner has drilled it once: its row said retrievability "0%",
    an estimate the scheduler cannot make for a card never reviewed, beside the "—" of every
    other scenario not drilled yet."""
    from drills.trainer import services
    from drills.trainer.grading import Diagnosis

    attempt = services.start_drill(learner, scenario=S)
    key = attempt.trace.key
    services.submit_diagnosis(
        attempt, Diagnosis(B, key["measurement"], key["fix"], float(key["expected_step_ms"]))
    )
    pulled = Card.objects.get(user=learner, kind=Card.Kind.SCENARIO, item=B)
    assert pulled.reviews == 0 and pulled.due <= timezone.now()

    rows = {r["slug"]: r for r in learner_client.get("/dashboard/stats.json").json()["scenarios"]}
    assert rows[B]["attempts"] == 0 and rows[B]["due_now"] is True
    assert rows[B]["retrievability"] is None
    assert rows[S]["retrievability"] == pytest.approx(1.0)  # reviewed just now, a miss
    html = learner_client.get("/dashboard/").content.decode()
    row = re.search(rf'data-scenario-row="{B}">(.*?)</tr>', html, re.S)[1]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert cells[-2:] == ["—", '<strong class="warn-text">due now</strong>']


def _table_after(html: str, heading: str) -> list[list[str]]:
    """The rows (header cell first) of the chart-text table in the section headed ``heading``."""
    section = html[html.index(f"<h2>{heading}</h2>") :]
    section = section[: section.index("</section>")]
    table = re.search(r'<details class="chart-text">.*?</details>', section, re.S)[0]
    return [
        [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr)]
        for tr in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1])
    ]


def test_every_chart_says_its_numbers_in_text_too(two_learners, client):
    """The confusion matrix, the weekly accuracy line and the day grid were images to a screen
    reader (role="img", labelled only by what they show, not by their numbers): each now has a
    table of the same numbers beside it, which adds up to the learner's graded attempts."""
    ada, bob = two_learners
    history(ada, bob, now=timezone.now())
    client.force_login(ada)
    data = client.get("/dashboard/stats.json").json()
    html = client.get("/dashboard/").content.decode()
    graded = data["totals"]["graded"]

    cells = _table_after(html, "Confusion matrix")
    assert sum(int(r[2]) for r in cells) == graded
    titles = dict(zip(data["confusion"]["labels"], data["confusion"]["titles"], strict=True))
    straggler_as_bw = next(r for r in cells if r[:2] == [titles[S], titles[B]])
    assert straggler_as_bw[2:] == ["3", "23%"]  # 3 of the 13 straggler traces

    weeks = _table_after(html, "Accuracy over time")
    assert [int(r[1]) for r in weeks] == [w["attempts"] for w in data["accuracy_over_time"]]
    assert [int(r[2]) for r in weeks] == [w["correct"] for w in data["accuracy_over_time"]]
    assert sum(int(r[1]) for r in weeks) == graded

    days = _table_after(html, "Daily activity")
    assert len(days) == data["daily_activity"]["active_days"]
    assert sum(int(r[1]) for r in days) == data["daily_activity"]["total"] == graded


def test_a_new_learners_charts_say_in_text_that_they_are_empty(learner_client):
    html = learner_client.get("/dashboard/").content.decode()
    assert "No graded attempts yet: every cell is 0." in html
    assert "No graded attempts in these 26 weeks." in html
    weeks = _table_after(html, "Accuracy over time")
    assert len(weeks) == 12 and all(r[1:] == ["0", "0", "—"] for r in weeks)


def test_a_pairs_weekly_line_names_every_week_in_words(learner, learner_client):
    """Three weeks of straggler traces, confused 1 of 2, then 0 of 1, then 1 of 1: the words
    beside the line gave the first and the last week only ("50% → 100%"), so the week between,
    drawn as a dot, was there for no screen reader."""
    now = timezone.now()
    mondays = [dashboard.trend_start(now, weeks=3) + timedelta(weeks=k) for k in range(3)]
    at = [
        datetime.combine(m, datetime.min.time(), tzinfo=UTC) + timedelta(hours=1) for m in mondays
    ]
    save_all(
        [
            build(learner, S, B, at[0]),
            build(learner, S, S, at[0] + timedelta(minutes=5)),
            build(learner, S, S, at[1]),
            build(learner, S, B, min(at[2], now - timedelta(seconds=1))),
        ]
    )
    html = learner_client.get("/dashboard/").content.decode()
    pair = re.search(rf'data-pair="{S}→{B}">(.*?)</li>', html, re.S)[1]
    note = re.findall(r'<span class="muted small">(.*?)</span>', pair)[-1]
    labels = [f"{m.day} {m:%b}" for m in mondays]
    assert note == f"{labels[0]}: 50% → {labels[1]}: 0% → {labels[2]}: 100%"
