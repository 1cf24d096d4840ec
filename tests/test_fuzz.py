"""Malformed input never makes a 5xx, and a rejected form writes nothing.

Every named URL in the URLconf (through tests/test_security.py's cases, which a new URL must
join) gets Hypothesis-drawn payloads: huge strings, NUL, unicode look-alikes, NaN/Infinity,
1e±320, wrong types (lists, JSON, booleans), duplicated fields and missing fields, on the
query string, in the form body and in the path's own parameters.
"""

from __future__ import annotations

import uuid
from urllib.parse import quote

import pytest
from django.apps import apps
from django.test import Client
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tests.test_security import (  # noqa: F401  (fixtures)
    NOT_PER_OBJECT,
    PUBLIC,
    _own_cache,
    all_cases,
    cheap_scheduler,
    world,
)

pytestmark = pytest.mark.django_db

NASTY = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "x" * 100_000,
    "9" * 400,
    "NaN",
    "-nan",
    "Infinity",
    "-Infinity",
    "inf",
    "1e320",
    "-1e320",
    "1e-320",
    "4.9e-324",
    "-1",
    "0",
    "1.5",
    "true",
    "[]",
    '{"a": 1}',
    "null",
    "☃",
    "ｔｉｍｅｄ",
    "ＡＤＡ",
    "e\u0301",
    "'; DROP TABLE drills_attempt; --",
    "<script>alert(1)</script>",
    "../../etc/passwd",
    "%00",
    str(uuid.uuid4()),
    "2026-13-45T25:61",
    "9999-12-31T23:59",
    "0001-01-01T00:00",
]
FIELDS = [
    "username",
    "password",
    "password1",
    "password2",
    "old_password",
    "new_password1",
    "new_password2",
    "email",
    "mode",
    "scenario",
    "measurement",
    "measurement_value",
    "fix",
    "expected_step_ms",
    "step_ms",
    "gap_ms",
    "arithmetic",
    "answer",
    "attempt",
    "family",
    "code",
    "name",
    "walkthrough_set",
    "due_at",
    "cutoff_at",
    "until",
    "user",
    "streak_opt_in",
    "next",
    "inline",
]

values = st.one_of(st.sampled_from(NASTY), st.text(max_size=40).filter(lambda s: s < "\ud800"))
payloads = st.dictionaries(
    st.sampled_from(FIELDS), st.lists(values, min_size=1, max_size=3), max_size=8
)


def _targets(w) -> list[tuple[str, Client, str, tuple[str, ...]]]:
    """(label, client, url, methods) for every named URL: the owner's (or the teacher's) view."""
    out = []
    for label, (name, case) in all_cases().items():
        who = w.clients["teacher"] if case.cohort else w.clients["ada"]
        out.append((label, who, reverse(name, args=case.args(w)), case.methods))
    for name, (args, methods) in NOT_PER_OBJECT.items():
        out.append((name, w.clients["ada"], reverse(name, args=args()), methods))
    for name, (args, methods) in PUBLIC.items():
        out.append((name, Client(), reverse(name, args=args()), methods))
    return out


def _mangle_path(url: str, junk: str) -> str:
    """Replace one path segment (an id, a slug, a code) with junk."""
    parts = url.strip("/").split("/")
    if len(parts) < 2:
        return url
    parts[-1] = quote(junk[:300], safe="")
    return "/" + "/".join(parts) + ("/" if url.endswith("/") else "")


@hsettings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_input_makes_a_server_error(world, settings, tmp_path, data):  # noqa: F811
    settings.VAR_DIR = tmp_path
    label, client, url, methods = data.draw(st.sampled_from(_targets(world)), label="target")
    client.raise_request_exception = False
    if data.draw(st.booleans(), label="mangle path"):
        url = _mangle_path(url, data.draw(values, label="path junk"))
    payload = data.draw(payloads, label="payload")
    method = data.draw(st.sampled_from([*methods, "GET", "POST"]), label="method")
    if method == "GET":
        response = client.get(url, payload)
    else:
        response = client.post(
            url, payload, HTTP_HX_REQUEST=data.draw(st.sampled_from(["", "true"]))
        )
    assert response.status_code < 500, (label, method, url[:200], response.status_code)


# Form endpoints whose writes depend on what was posted. (The rest write by design whatever the
# body says: sign-out, abandon, streak and read toggles, regenerate a code, start a drill...)
FORMS = [
    "signup",
    "login",
    "password_change",
    "trainer:submit",
    "math:answer",
    "math:sprint_answer",
    "cohorts:new",
    "cohorts:join",
    "cohorts:join_link",
    "cohorts:assign",
    "cohorts:extend",
    "cohorts:add_instructor",
    "cohorts:assignment_edit",
]
# Invalid in every field of every form (1e-320 is not: it is a readable, if silly, math answer).
INVALID_EVERYWHERE = ["\x00", "a\x00b", "x" * 100_000, "NaN", "Infinity", "1e320", "-1e999"]


def _rows() -> dict[str, int]:
    skip = {"sessions.session", "tracetrack.loginfailure"}
    return {
        m._meta.label_lower: m._default_manager.count()
        for m in apps.get_models()
        if m._meta.label_lower not in skip
    }


def test_a_rejected_form_writes_nothing(world, settings, tmp_path):  # noqa: F811
    settings.VAR_DIR = tmp_path
    targets = {label: (c, url) for label, c, url, _m in _targets(world)}
    for name in FORMS:
        client, url = targets[name]
        client.raise_request_exception = False
        for junk in INVALID_EVERYWHERE:
            for body in (dict.fromkeys(FIELDS, junk), {f: [junk, junk] for f in FIELDS}, {}):
                before = _rows()
                response = client.post(url, body)
                assert response.status_code < 500, (name, junk[:20])
                assert _rows() == before, (name, junk[:20], response.status_code)
