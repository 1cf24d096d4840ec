"""Sign-in housekeeping: password change and reset (console/locmem mail in development)."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db
NEW = "n3w-long-pass-42"


def test_password_change_requires_the_old_password(learner_client, learner):
    page = learner_client.get("/accounts/password_change/")
    assert page.status_code == 200
    bad = learner_client.post(
        "/accounts/password_change/",
        {"old_password": "wrong", "new_password1": NEW, "new_password2": NEW},
    )
    assert bad.status_code == 200 and b"incorrectly" in bad.content
    ok = learner_client.post(
        "/accounts/password_change/",
        {"old_password": PASSWORD, "new_password1": NEW, "new_password2": NEW},
    )
    assert ok.status_code == 302
    learner.refresh_from_db()
    assert learner.check_password(NEW)


def test_password_reset_mails_a_link_that_sets_a_new_password(client, make_user):
    user = make_user("ada", email="ada@example.com")
    response = client.post("/accounts/password_reset/", {"email": "ada@example.com"})
    assert response.status_code == 302
    assert len(mail.outbox) == 1
    link = re.search(r"(/accounts/reset/\S+/\S+/)", mail.outbox[0].body).group(1)
    form = client.get(link, follow=True)
    assert form.status_code == 200
    set_url = form.redirect_chain[-1][0] if form.redirect_chain else link
    done = client.post(
        set_url, {"new_password1": "fresh-long-pass-7", "new_password2": "fresh-long-pass-7"}
    )
    assert done.status_code == 302
    user.refresh_from_db()
    assert user.check_password("fresh-long-pass-7")


def test_login_form_rejects_a_wrong_password_without_saying_which_part(client, make_user):
    make_user("ada")
    response = client.post("/accounts/login/", {"username": "ada", "password": "nope"})
    assert response.status_code == 200
    assert b"correct username and password" in response.content


def test_a_refused_sign_in_is_announced(client, make_user):
    """The refusal is in an alert, so a screen reader says it when the page comes back (the
    cursor lands in the empty password box, which says nothing of why)."""
    make_user("ada")
    html = client.post("/accounts/login/", {"username": "ada", "password": "nope"}).content
    alert = re.search(r'<div class="errors" role="alert">(.*?)</div>', html.decode(), re.S)
    assert alert and "correct username and password" in alert.group(1)


def test_a_refused_sign_in_puts_the_cursor_in_the_password_box(client, make_user):
    """The name stays filled in and the password is cleared: the cursor went back to the name."""
    make_user("ada")
    html = client.post("/accounts/login/", {"username": "ada", "password": "nope"}).content
    inputs = {
        re.search(r'name="(\w+)"', tag).group(1): tag
        for tag in re.findall(r"<input[^>]*>", html.decode())
        if 'name="username"' in tag or 'name="password"' in tag
    }
    assert "autofocus" in inputs["password"] and "autofocus" not in inputs["username"]
    assert 'value="ada"' in inputs["username"]
    first = client.get("/accounts/login/").content.decode()
    assert re.search(r'<input[^>]*name="username"[^>]*autofocus', first)


def test_sign_up_takes_an_optional_email_for_reminders(client, django_user_model):
    pw = "long-enough-pass-91"
    data = {"username": "lin", "password1": pw, "password2": pw}
    assert client.post("/accounts/signup/", data).status_code == 302
    assert django_user_model.objects.get(username="lin").email == ""
    client.post("/accounts/logout/")
    with_mail = {**data, "username": "kay", "email": "kay@example.com"}
    assert client.post("/accounts/signup/", with_mail).status_code == 302
    assert django_user_model.objects.get(username="kay").email == "kay@example.com"
    client.post("/accounts/logout/")
    bad = client.post("/accounts/signup/", {**data, "username": "zed", "email": "not-an-address"})
    assert bad.status_code == 400 and not django_user_model.objects.filter(username="zed").exists()


def test_a_refused_sign_up_puts_the_cursor_in_the_field_it_refused(client):
    """Passwords that do not match: both are cleared and the error sits under the second, but
    the cursor went back to the username, already filled in."""
    data = {"username": "lin", "password1": "long-enough-pass-91", "password2": "other-pass-92"}
    html = client.post("/accounts/signup/", data).content.decode()
    tags = {
        re.search(r'name="(\w+)"', tag).group(1): tag
        for tag in re.findall(r"<input[^>]*>", html)
        if re.search(r'name="(username|password1|password2)"', tag)
    }
    # both boxes come back empty: typing resumes in the first
    assert "autofocus" in tags["password1"]
    assert "autofocus" not in tags["username"] and "autofocus" not in tags["password2"]
    taken = client.post("/accounts/signup/", {**data, "password2": data["password1"]})
    assert taken.status_code == 302
    client.post("/accounts/logout/")
    again = client.post("/accounts/signup/", {**data, "password2": data["password1"]})
    html = again.content.decode()
    assert re.search(r'<input[^>]*name="username"[^>]*autofocus', html)  # the name is taken
