"""The hardening review (issue #14) as tests, one section per finding.

1. nothing public or learner-visible changes with the scenario just dealt (/healthz included);
2. one open attempt per learner, no rerolls, abandoned/expired timed attempts graded Again;
and so on below.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from drills.models import Attempt
from drills.trainer import services
from scenarios import engine, pool
from scenarios.models import PoolLevel

pytestmark = pytest.mark.django_db

CHEAP = "healthy"


@pytest.fixture(autouse=True)
def _own_cache(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "test-hardening",
        }
    }
    cache.clear()
    yield
    cache.clear()


def _login(user) -> Client:
    c = Client()
    c.force_login(user)
    return c


_TOKENS = re.compile(r'(csrfmiddlewaretoken" value="|"x-csrftoken": "|nonce=")[^"]+')


def _text(response) -> str:
    raw = b"".join(response.streaming_content) if response.streaming else response.content
    return f"{response.status_code}\n" + _TOKENS.sub(r"\1T", raw.decode(errors="replace"))


# ----------------------------------------------------------------- 1. no side channel to the deal

ANON_URLS = ("/healthz", "/accounts/login/", "/accounts/signup/", "/accounts/password_reset/", "/")
LEARNER_URLS = (
    "/healthz",
    "/",
    "/drill/",
    "/dashboard/",
    "/dashboard/stats.json",
    "/math/",
    "/track/",
    "/cohorts/",
)


def test_no_public_or_learner_response_changes_with_the_scenario_dealt(
    make_user, no_refill, monkeypatch
):
    """Stock sits at the low-water mark for every scenario, so the deal takes the dealt scenario
    under it (and to zero): any per-scenario figure anywhere would change with it."""
    for slug in engine.SCENARIOS:
        pool.refill(slug, target=1)
    learner = make_user("peeker")
    c, anon = _login(learner), Client()
    now = timezone.now()
    monkeypatch.setattr(timezone, "now", lambda: now)

    def grab() -> dict[str, str]:
        out = {f"anon {u}": _text(anon.get(u)) for u in ANON_URLS}
        out.update({f"learner {u}": _text(c.get(u)) for u in LEARNER_URLS})
        return out

    grab()
    before = grab()
    response = c.post("/drill/next/", {"mode": "timed"})
    assert response.status_code == 302
    attempt = Attempt.objects.get(user=learner)
    after = grab()
    resume = re.compile(r'<p>[^<]*<a [^>]*href="/drill/attempts/[0-9a-f-]{36}/">Resume it</a></p>')
    dealt = attempt.scenario  # pages that list every scenario list it before and after alike
    for name, text in after.items():
        if name in ("learner /", "learner /drill/"):
            text = resume.sub("", text)
        squashed = re.sub(r"\s+", " ", text)
        assert squashed == re.sub(r"\s+", " ", before[name]), f"{name} changed with the deal"
    assert pool.stock()[dealt] == 0  # the dealt scenario really is out of stock now


def test_healthz_is_health_only(client, make_user, no_refill):
    data = client.get("/healthz").json()
    assert set(data) == {"status", "database", "broker", "pool"}
    assert data["database"] == "ok"
    staff = make_user("operator", is_staff=True)
    client.force_login(staff)
    assert set(client.get("/healthz").json()) == {"status", "database", "broker", "pool"}


def test_healthz_degrades_only_after_a_scenario_stays_short_past_the_grace(
    client, settings, no_refill
):
    settings.TRACETRACK = {**settings.TRACETRACK, "POOL_DEGRADED_AFTER_S": 60.0}
    for slug in engine.SCENARIOS:
        pool.refill(slug, target=1)  # at low water (1 in tests): not short
    assert client.get("/healthz").json()["status"] == "ok"
    pool.claim_or_generate(None, CHEAP)  # empty now: short since this moment
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"
    PoolLevel.objects.filter(scenario=CHEAP).update(
        low_since=timezone.now() - timedelta(seconds=61)
    )
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "degraded",
        "database": "ok",
        "broker": response.json()["broker"],
        "pool": "short",
    }
    pool.refill(CHEAP, target=1)  # topped up: healthy again at once
    assert client.get("/healthz").json()["status"] == "ok"


def test_staff_see_per_scenario_stock_on_the_admin(client, make_user, no_refill):
    pool.refill(CHEAP, target=2)
    learner = make_user("nosy")
    client.force_login(learner)
    assert client.get("/admin/scenarios/poollevel/").status_code == 302
    admin = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(admin)
    html = client.get("/admin/scenarios/poollevel/").content.decode()
    for slug in engine.SCENARIOS:
        assert slug in html
    row = re.search(rf"{CHEAP}</a></th><td class=\"field-unclaimed\">(\d+)</td>", html)
    assert row and row.group(1) == "2", html[-3000:]


# ----------------------------------------------------------------- 2. no rerolls


@pytest.fixture
def cheap(monkeypatch, no_refill):
    monkeypatch.setattr(services, "next_scenario", lambda user, now=None, **_: CHEAP)


def _ago(attempt: Attempt, seconds: float) -> None:
    Attempt.objects.filter(pk=attempt.pk).update(
        served_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_changing_mode_resumes_the_open_attempt_instead_of_dealing_a_new_trace(
    learner_client, learner, cheap
):
    from scenarios.models import Trace

    seen = set()
    for mode in ("timed", "perfetto", "timed", "practice", "timed"):
        response = learner_client.post("/drill/next/", {"mode": mode})
        assert response.status_code == 302
        seen.add(response["Location"])
    assert len(seen) == 1
    assert Attempt.objects.filter(user=learner).count() == 1
    assert Trace.objects.filter(claimed_by=learner).count() == 1


def test_the_database_refuses_a_second_open_attempt(learner, cheap):
    from django.db import IntegrityError, transaction

    first = services.start_drill(learner)
    with pytest.raises(IntegrityError), transaction.atomic():
        Attempt.objects.create(
            user=learner,
            trace=pool.claim_or_generate(learner, CHEAP),
            scenario=CHEAP,
            served_at=timezone.now(),
        )
    assert services.next_drill(learner, "timed") == (first, False)


def test_an_abandoned_timed_attempt_is_a_miss_that_updates_the_card_and_the_dashboard(
    learner_client, learner, cheap
):
    from drills.models import Card

    learner_client.post("/drill/next/", {"mode": "timed"})
    attempt = Attempt.objects.get(user=learner)
    response = learner_client.post(f"/drill/attempts/{attempt.pk}/abandon/")
    assert response.status_code == 302
    attempt.refresh_from_db()
    assert attempt.closed == "abandoned" and attempt.is_submitted
    assert attempt.rating == 1 and attempt.counted and attempt.scenario_correct is False
    card = Card.objects.get(user=learner, item=CHEAP)
    assert card.reviews == 1
    stats = learner_client.get("/dashboard/stats.json").json()
    assert stats["totals"]["graded"] == 1 and stats["totals"]["correct"] == 0
    page = learner_client.get(f"/drill/attempts/{attempt.pk}/")
    assert page.status_code == 200 and f'data-scenario="{CHEAP}"' in page.content.decode()
    # The next start deals a new drill.
    learner_client.post("/drill/next/", {"mode": "timed"})
    assert Attempt.objects.filter(user=learner, submitted_at__isnull=True).count() == 1
    assert Attempt.objects.filter(user=learner).count() == 2


def test_an_expired_timed_attempt_is_graded_again_when_the_next_drill_is_asked_for(
    learner_client, learner, cheap
):
    from drills.models import Card

    learner_client.post("/drill/next/", {"mode": "timed"})
    old = Attempt.objects.get(user=learner)
    _ago(old, 119)
    learner_client.post("/drill/next/", {"mode": "perfetto"})
    assert Attempt.objects.filter(user=learner).count() == 1  # still on the clock: resumed
    _ago(old, 123)
    learner_client.post("/drill/next/", {"mode": "timed"})
    old.refresh_from_db()
    assert old.closed == "expired" and old.over_time and old.rating == 1 and old.counted
    assert Card.objects.get(user=learner, item=CHEAP).reviews == 1
    assert Attempt.objects.filter(user=learner).count() == 2


def test_abandoning_practice_changes_no_card(learner_client, learner, cheap):
    from drills.models import Card

    learner_client.post("/drill/next/", {"mode": "practice"})
    attempt = Attempt.objects.get(user=learner)
    learner_client.post(f"/drill/attempts/{attempt.pk}/abandon/")
    attempt.refresh_from_db()
    assert attempt.closed == "abandoned" and not attempt.counted
    assert not Card.objects.filter(user=learner).exists()


def test_drills_dealt_per_learner_per_hour_are_capped(learner_client, learner, cheap, settings):
    settings.TRACETRACK = {**settings.TRACETRACK, "DRILL_CLAIMS_PER_HOUR": 2}
    for _ in range(2):
        learner_client.post("/drill/next/", {"mode": "timed"})
        attempt = Attempt.objects.get(user=learner, submitted_at__isnull=True)
        learner_client.post(f"/drill/attempts/{attempt.pk}/abandon/")
    response = learner_client.post("/drill/next/", {"mode": "timed"})
    assert response.status_code == 429
    assert "in the last hour" in response.content.decode()
    assert Attempt.objects.filter(user=learner).count() == 2


def test_perfetto_only_gets_a_bounded_loading_allowance(learner_client, learner, cheap, settings):
    from tests.conftest import right_answer

    settings.TRACETRACK = {**settings.TRACETRACK, "PERFETTO_LOAD_ALLOWANCE_S": 15}
    learner_client.post("/drill/next/", {"mode": "perfetto"})
    attempt = Attempt.objects.get(user=learner)
    _ago(attempt, 130)  # 130 s of wall time, 115 s on the clock
    lie = {**right_answer(attempt), "elapsed_s": "1", "loaded_at": "2099-01-01T00:00:00Z"}
    learner_client.post(f"/drill/attempts/{attempt.pk}/diagnosis/", lie)
    attempt.refresh_from_db()
    assert not attempt.over_time and 114 < attempt.elapsed_s < 118

    learner_client.post("/drill/next/", {"mode": "perfetto"})
    second = Attempt.objects.get(user=learner, submitted_at__isnull=True)
    _ago(second, 140)  # past limit + allowance, whatever the client says
    learner_client.post(f"/drill/attempts/{second.pk}/diagnosis/", right_answer(second))
    second.refresh_from_db()
    assert second.over_time


@pytest.mark.django_db(transaction=True)
def test_concurrent_starts_by_one_learner_resume_one_attempt(make_user, cheap):
    import threading

    from django.db import connection

    from tests.conftest import needs_postgres

    needs_postgres()
    pool.refill(CHEAP, target=3)
    learner = make_user("racer")
    n = 12
    barrier = threading.Barrier(n)
    got: list[object] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            barrier.wait()
            attempt, _ = services.next_drill(learner, "timed")
            got.append(attempt.pk)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=start) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert len(got) == n and len(set(got)) == 1
    assert Attempt.objects.filter(user=learner).count() == 1
    from scenarios.models import Trace

    assert Trace.objects.filter(claimed_by=learner).count() == 1


# ----------------------------------------------------------------- 3. the sign-in brake

LOGIN = "/accounts/login/"


@pytest.fixture
def brake(settings):
    settings.TRACETRACK = {
        **settings.TRACETRACK,
        "LOGIN_FAILURE_LIMIT": 3,
        "LOGIN_DELAY_S": 10.0,
        "LOGIN_LOCKOUT_S": 600,
    }
    settings.TRUSTED_PROXIES = ["10.9.0.0/16"]


@pytest.fixture
def clock(monkeypatch):
    """A controllable timezone.now for the brake."""
    state = {"now": timezone.now()}
    monkeypatch.setattr(timezone, "now", lambda: state["now"])

    def advance(seconds: float) -> None:
        state["now"] += timedelta(seconds=seconds)

    return advance


def _wrong(c: Client, username: str = "ada", url: str = LOGIN, **extra):
    return c.post(url, {"username": username, "password": "not-the-password-9"}, **extra)


def _right(c: Client, username: str = "ada", url: str = LOGIN, **extra):
    from tests.conftest import PASSWORD

    return c.post(url, {"username": username, "password": PASSWORD}, **extra)


def test_a_compatibility_variant_of_the_username_shares_the_lock(client, learner, brake):
    for _ in range(4):
        _wrong(client)
    variant = "ａｄａ"  # full-width: NFKC makes it "ada", which is what authentication checks
    assert _right(client, variant).status_code == 429
    assert "_auth_user_id" not in client.session
    assert _right(client, " ada ").status_code == 429


def test_variants_failing_count_against_the_real_name(client, learner, brake):
    for name in ("ａｄａ", "ａda", "adａ", "ada"):
        _wrong(client, name)
    assert _right(client).status_code == 429


def test_the_admin_sign_in_is_braked_too(client, make_user, brake):
    make_user("root", is_staff=True, is_superuser=True)
    for _ in range(4):
        _wrong(client, "root", url="/admin/login/")
    response = _right(client, "root", url="/admin/login/?next=/admin/")
    assert response.status_code == 200  # the admin form shows its error, nobody signed in
    assert "_auth_user_id" not in client.session
    assert _right(client, "root").status_code == 429  # and the same pair is locked everywhere


def test_delays_grow_per_failure_and_end(client, learner, brake, clock):
    for _ in range(3):
        assert _wrong(client).status_code == 200  # within the free failures
    assert _wrong(client).status_code == 200  # the 4th: locked 10 s
    assert _right(client).status_code == 429
    clock(11)
    assert _wrong(client).status_code == 200  # the 5th: locked 20 s
    clock(11)
    assert _right(client).status_code == 429
    clock(10)
    assert _right(client).status_code == 302  # the lock ended; success clears the pair
    client.post("/accounts/logout/")
    for _ in range(3):
        assert _wrong(client).status_code == 200


def test_another_address_is_never_locked_out_by_these_failures(client, learner, brake):
    for _ in range(6):
        _wrong(client)
    assert _right(client).status_code == 429
    assert _right(Client(REMOTE_ADDR="192.0.2.7")).status_code == 302


def test_forwarded_for_is_believed_only_from_trusted_proxies(client, learner, brake):
    proxy = {"REMOTE_ADDR": "10.9.0.2"}
    attacker = Client(**proxy, HTTP_X_FORWARDED_FOR="198.51.100.66")
    for _ in range(6):
        _wrong(attacker)
    assert _right(attacker).status_code == 429
    # The victim behind the same TLS proxy has their own address: not locked out.
    victim = Client(**proxy, HTTP_X_FORWARDED_FOR="203.0.113.5, 10.9.0.7")
    assert _right(victim).status_code == 302
    # A client that is not a trusted proxy cannot pick an address by sending the header.
    direct = Client(REMOTE_ADDR="198.51.100.99")
    for i in range(6):
        _wrong(direct, HTTP_X_FORWARDED_FOR=f"192.0.2.{i}")
    assert _right(direct, HTTP_X_FORWARDED_FOR="192.0.2.200").status_code == 429


# ----------------------------------------------------------------- 4. Redis is not a dependency

DEAD_REDIS = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
def redis_down(settings, tmp_path):
    settings.CACHES = {
        "default": {
            "BACKEND": "tracetrack.cache.ResilientRedisCache",
            "LOCATION": DEAD_REDIS,
            "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2},
        }
    }
    settings.REDIS_URL = DEAD_REDIS
    settings.VAR_DIR = tmp_path
    settings.TRACETRACK = {**settings.TRACETRACK, "LOGIN_FAILURE_LIMIT": 3}


def test_sign_in_walkthroughs_and_timelines_work_with_redis_down(client, learner, redis_down):
    from content.pages import library
    from tests.conftest import PASSWORD

    assert _wrong(client).status_code == 200  # the brake still counts (in the database)
    response = client.post(LOGIN, {"username": "ada", "password": PASSWORD})
    assert response.status_code == 302 and "_auth_user_id" in client.session
    walk = library().walkthroughs()[0]
    assert client.get(f"/walkthroughs/{walk.slug}/").status_code == 200
    assert client.get(f"/walkthroughs/{walk.slug}/timeline.json").status_code == 200
    scenario, seed = sorted(library().inline_timelines)[0]
    assert client.get(f"/track/timelines/{scenario}/{seed}.json").status_code == 200
    assert client.get("/healthz").status_code == 503  # and health tells the truth


def test_every_cache_call_degrades_to_a_miss_with_a_warning(redis_down, caplog):
    from django.core.cache import caches

    from tracetrack.cache import ResilientRedisCache

    ResilientRedisCache._last_warning = 0.0
    dead = caches.create_connection("default")
    with caplog.at_level("WARNING", logger="tracetrack.cache"):
        assert dead.get("k", "fallback") == "fallback"
        dead.set("k", 1)
        assert dead.add("k", 1) is False
        assert dead.get_many(["k"]) == {}
        dead.delete("k")
    assert "cache unavailable" in caplog.text


# ----------------------------------------------------------------- 7. bounded content traces


def test_only_the_inline_timelines_the_pages_show_are_generated(learner_client, settings, tmp_path):
    from content import timelines
    from content.pages import library

    settings.VAR_DIR = tmp_path
    shown = library().inline_timelines
    assert shown
    scenario, seed = sorted(shown)[0]
    unshown = next(s for s in range(10_000) if (scenario, s) not in shown)
    assert learner_client.get(f"/track/timelines/{scenario}/{unshown}.json").status_code == 404
    assert not timelines.store_dir().exists()  # nothing generated for the refused one
    first = learner_client.get(f"/track/timelines/{scenario}/{seed}.json")
    assert first.status_code == 200
    stored = sorted(p.name for p in timelines.store_dir().iterdir())
    assert stored == [f"{scenario}-{seed}-any.meta.json", f"{scenario}-{seed}-any.timeline.json.gz"]
    mtimes = [p.stat().st_mtime_ns for p in timelines.store_dir().iterdir()]
    again = learner_client.get(f"/track/timelines/{scenario}/{seed}.json")
    assert again.content == first.content
    assert [p.stat().st_mtime_ns for p in timelines.store_dir().iterdir()] == mtimes


# ----------------------------------------------------------------- 6. no 500s


@pytest.fixture
def strict_client(learner):
    """A client that lets server errors surface as 500 responses instead of exceptions."""
    c = Client(raise_request_exception=False)
    c.force_login(learner)
    return c


@pytest.mark.parametrize("text", ["1e-320", "-1e-320", "4.9e-324", "1e-320 ms", "1e308", "1e320"])
def test_tiny_and_huge_math_answers_are_graded_not_500(strict_client, text):
    from drills.mentalmath import families

    for family in families.FAMILIES:
        response = strict_client.post("/math/next/", {"family": family})
        attempt_id = re.search(r"/math/attempts/([0-9a-f-]{36})/", response["Location"]).group(1)
        answered = strict_client.post(f"/math/attempts/{attempt_id}/answer/", {"answer": text})
        assert answered.status_code < 500, (family, text)
    response = strict_client.post("/math/sprint/")
    sprint_id = re.search(r"/math/sprint/([0-9a-f-]{36})/", response["Location"]).group(1)
    from drills.models import MathAttempt

    for _ in range(len(families.FAMILIES)):
        current = MathAttempt.objects.filter(sprint_id=sprint_id, submitted_at__isnull=True).first()
        if current is None:
            break
        answered = strict_client.post(
            f"/math/sprint/{sprint_id}/answer/", {"attempt": str(current.pk), "answer": text}
        )
        assert answered.status_code < 500, text


@pytest.mark.parametrize("target", ["0", "dashboard", "home", "stats:dashboard", "", "//x.example"])
def test_streak_toggle_with_a_bare_word_next_goes_home(strict_client, target):
    response = strict_client.post("/dashboard/streak/", {"streak_opt_in": "1", "next": target})
    assert response.status_code == 302 and response["Location"] == "/"


def test_a_nul_in_a_join_code_or_a_perfetto_path_is_a_400(strict_client):
    for url in ("/cohorts/join/AB%00CD/", "/perfetto/a%00b", "/track/a%00b/"):
        assert strict_client.get(url).status_code == 400, url
    assert strict_client.post("/cohorts/join/", {"code": "AB\x00CD"}).status_code == 400


# ----------------------------------------------------------------- 8. Argon2id, PBKDF2 upgraded


def test_new_passwords_are_argon2id_and_pbkdf2_accounts_sign_in_and_are_upgraded(
    client, django_user_model, settings
):
    from django.conf import settings as live
    from django.contrib.auth.hashers import make_password

    from tracetrack.settings import PASSWORD_HASHERS

    settings.PASSWORD_HASHERS = PASSWORD_HASHERS  # the production list (tests default to MD5)
    assert live.PASSWORD_HASHERS[0] == "accounts.hashers.TraceTrackArgon2Hasher"
    new = django_user_model.objects.create_user("newbie", password="correct-horse-battery-42")
    assert new.password.startswith("argon2$argon2id$v=19$m=19456,t=2,p=1$")
    old = django_user_model.objects.create(
        username="oldtimer",
        password=make_password("correct-horse-battery-42", hasher="pbkdf2_sha256"),
    )
    assert old.password.startswith("pbkdf2_sha256$")
    response = client.post(LOGIN, {"username": "oldtimer", "password": "correct-horse-battery-42"})
    assert response.status_code == 302
    old.refresh_from_db()
    assert old.password.startswith("argon2$argon2id$")
