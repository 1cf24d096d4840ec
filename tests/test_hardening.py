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
