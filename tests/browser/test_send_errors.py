"""A diagnosis that could not be sent says so beside the form and keeps what was typed; and after
signing in again in another tab, the same tab sends it (the CSRF token is read afresh)."""

from __future__ import annotations

import pytest

from drills.models import Attempt
from drills.trainer import services
from tests.browser.test_drill_e2e import ATTEMPT_URL, sign_up, start_drill

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TYPED = "step 20 ms − gap 3 ms ≈ 17 ms"


def sign_in(page, live_server, username="turing"):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "long-enough-pass-91")
    page.click("main button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def test_signed_out_in_another_tab_the_diagnosis_waits_and_is_sent_after_signing_in(
    open_page, live_server, monkeypatch
):
    monkeypatch.setattr(services, "next_scenario", lambda user, now=None, **_: "healthy")
    page = open_page(width=1280, height=800, timeout_ms=20_000)
    sign_up(page, live_server)
    attempt = start_drill(page, live_server)
    key = attempt.trace.key
    page.select_option("#id_scenario", key["scenario"])
    page.fill("#id_arithmetic", TYPED)

    other = page.context.new_page()  # the other tab: sign out there
    other.goto(f"{live_server.url}/")
    other.click("form.signout button")
    other.wait_for_url(f"{live_server.url}/**")

    page.click("#diagnosis-form button[type=submit]")
    note = page.locator("#diagnosis-form .send-error")
    note.wait_for()
    assert "signed out" in note.inner_text() and "still here" in note.inner_text()
    assert page.input_value("#id_arithmetic") == TYPED
    assert ATTEMPT_URL.search(page.url) and page.locator("#timeline").count() == 1

    sign_in(other, live_server)  # rotates the CSRF token the drill page was rendered with
    page.click("#diagnosis-form button[type=submit]")
    # Sent: the form comes back with its other sentences marked missing (a 400, swapped in),
    # not refused for its token; the answer typed is kept.
    page.locator("#diagnosis-form .errorlist").first.wait_for()
    assert page.locator("#diagnosis-form .send-error").count() == 0
    assert page.input_value("#id_arithmetic") == TYPED
    assert not Attempt.objects.get(pk=attempt.pk).is_submitted
