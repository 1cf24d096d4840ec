"""Trace downloads serve the stored export: byte for byte, compressed on the wire, cacheable."""

from __future__ import annotations

import gzip

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from scenarios import engine, exports, pool
from scenarios.models import Trace
from tests.conftest import needs_postgres

pytestmark = pytest.mark.django_db


def owned_trace(user, scenario="straggler", seed=11, source=Trace.Source.POOL) -> Trace:
    row = pool.build_trace(scenario, seed, source=source)
    row.claimed_by, row.claimed_at = user, timezone.now()
    row.save(force_insert=True)
    return row


def body(response) -> bytes:
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


def refuse_to_export(monkeypatch):
    """From now on, fail if anything builds a Perfetto export instead of sending a stored one."""

    def refuse(trace):
        raise AssertionError("the export was rebuilt on the request path")

    monkeypatch.setattr(engine, "perfetto_bytes", refuse)


def test_a_pool_trace_carries_its_perfetto_export_built_by_the_generating_worker():
    row = pool.build_trace("exposed-allreduce", 5)
    stored = gzip.decompress(bytes(row.perfetto_gz))
    assert stored == engine.perfetto_bytes(engine.generate("exposed-allreduce", 5))
    assert gzip.decompress(bytes(row.timeline_gz))  # the viewer timeline is stored too
    assert len(row.perfetto_gz) < len(stored) / 4


def test_the_download_is_the_stored_gzip_as_is(learner_client, learner, monkeypatch):
    row = owned_trace(learner)
    expected = engine.perfetto_bytes(row.load())
    refuse_to_export(monkeypatch)
    stored = bytes(Trace.objects.get(pk=row.pk).perfetto_gz)
    response = learner_client.get(
        f"/traces/{row.pk}/perfetto.json", HTTP_ACCEPT_ENCODING="gzip, deflate, br"
    )
    assert response.status_code == 200
    assert response["Content-Encoding"] == "gzip"
    assert response["Content-Type"] == "application/json"
    sent = body(response)
    assert sent == stored
    assert int(response["Content-Length"]) == len(sent)
    # What the browser ends up with, byte for byte, is the stored export of this trace.
    assert gzip.decompress(sent) == gzip.decompress(stored) == expected
    assert response["Content-Disposition"] == f'attachment; filename="trace-{row.pk.hex[:12]}.json"'
    assert "Accept-Encoding" in response["Vary"]


def test_a_client_without_gzip_gets_it_inflated_on_the_fly(learner_client, learner):
    row = owned_trace(learner)
    stored = bytes(row.perfetto_gz)
    response = learner_client.get(f"/traces/{row.pk}/perfetto.json", HTTP_ACCEPT_ENCODING="br")
    assert response.status_code == 200 and response.streaming
    assert "Content-Encoding" not in response
    sent = body(response)
    assert sent == gzip.decompress(stored) == engine.perfetto_bytes(row.load())
    assert int(response["Content-Length"]) == len(sent)
    refused = learner_client.get(f"/traces/{row.pk}/perfetto.json", HTTP_ACCEPT_ENCODING="gzip;q=0")
    assert "Content-Encoding" not in refused and body(refused) == sent


def test_etag_revalidation_answers_304_without_reading_the_bytes(learner_client, learner):
    row = owned_trace(learner)
    url = f"/traces/{row.pk}/perfetto.json"
    first = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    tag = first["ETag"]
    assert tag == f'"{row.pk.hex}-gz"' and first["Cache-Control"] == "private, no-cache"
    plain = learner_client.get(url)
    assert plain["ETag"] != tag  # the two representations differ, so do their tags
    with CaptureQueriesContext(connection) as queries:
        again = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=tag)
    assert again.status_code == 304 and again.content == b""
    assert again["ETag"] == tag
    assert not any("perfetto_gz" in q["sql"] for q in queries.captured_queries)
    stale = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH='"other"')
    assert stale.status_code == 200 and body(stale) == bytes(row.perfetto_gz)
    # Another learner revalidating someone else's trace still gets 404, not 304.
    other = learner_client.__class__()
    from django.contrib.auth import get_user_model

    other.force_login(get_user_model().objects.create_user("eve", password="x-long-pass-1"))
    assert other.get(url, HTTP_IF_NONE_MATCH=tag).status_code == 404


def test_a_row_from_before_stored_exports_gets_it_built_once(learner_client, learner, monkeypatch):
    row = owned_trace(learner, source=Trace.Source.ON_DEMAND)
    assert Trace.objects.get(pk=row.pk).perfetto_gz is None
    calls = []
    real = engine.perfetto_bytes
    monkeypatch.setattr(engine, "perfetto_bytes", lambda t: calls.append(1) or real(t))
    url = f"/traces/{row.pk}/perfetto.json"
    first = body(learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip"))
    second = body(learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip"))
    assert calls == [1]
    stored = bytes(Trace.objects.get(pk=row.pk).perfetto_gz)
    assert first == second == stored
    assert gzip.decompress(stored) == real(row.load())


def claim_sql(queries) -> str:
    """The SQL of the one query a spooled download ran: on PostgreSQL an EXECUTE of the claim
    statement, prepared on this connection; the text it was prepared from is returned then."""
    [query] = queries.captured_queries
    sql = query["sql"]
    if sql.startswith("EXECUTE "):
        name = sql.removeprefix("EXECUTE ").split("(")[0]
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements WHERE name = %s", [name])
            [(sql,)] = cursor.fetchall()
    return sql


def test_later_downloads_send_the_spooled_file_after_one_query(learner_client, learner, settings):
    row = owned_trace(learner)
    stored = bytes(row.perfetto_gz)
    url = f"/traces/{row.pk}/perfetto.json"
    assert body(learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")) == stored
    assert (settings.EXPORT_SPOOL / f"{row.pk.hex}.json.gz").read_bytes() == stored
    # (the first from the spool on a database connection prepares the claim query there)
    assert body(learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")) == stored
    with CaptureQueriesContext(connection) as queries:
        again = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")
        sent = body(again)
    assert sent == stored and int(again["Content-Length"]) == len(stored)
    assert again["Content-Encoding"] == "gzip" and again["Content-Type"] == "application/json"
    assert again["Content-Disposition"] == f'attachment; filename="trace-{row.pk.hex[:12]}.json"'
    sql = claim_sql(queries)
    assert "scenarios_trace" in sql and "perfetto_gz" not in sql
    # Without gzip, the same file inflated.
    assert body(learner_client.get(url, HTTP_ACCEPT_ENCODING="br")) == gzip.decompress(stored)
    # Someone else asking for a spooled trace still gets 404.
    from django.contrib.auth import get_user_model

    other = learner_client.__class__()
    other.force_login(get_user_model().objects.create_user("eve", password="x-long-pass-1"))
    assert other.get(url, HTTP_ACCEPT_ENCODING="gzip").status_code == 404


def test_a_spool_that_cannot_be_written_sends_the_bytes_from_the_row(
    learner_client, learner, settings, tmp_path
):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    settings.EXPORT_SPOOL = blocker / "exports"
    row = owned_trace(learner)
    response = learner_client.get(f"/traces/{row.pk}/perfetto.json", HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200 and response["Content-Encoding"] == "gzip"
    assert body(response) == bytes(row.perfetto_gz)
    assert int(response["Content-Length"]) == len(row.perfetto_gz)


def test_the_spool_keeps_at_most_its_limit_of_files(learner_client, learner, settings):
    settings.EXPORT_SPOOL_MAX_FILES = 1
    rows = [owned_trace(learner, seed=s) for s in (11, 12)]
    for row in rows:
        url = f"/traces/{row.pk}/perfetto.json"
        assert body(learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")) == bytes(row.perfetto_gz)
    assert [p.name for p in settings.EXPORT_SPOOL.iterdir()] == [f"{rows[1].pk.hex}.json.gz"]
    again = learner_client.get(f"/traces/{rows[0].pk}/perfetto.json", HTTP_ACCEPT_ENCODING="gzip")
    assert body(again) == bytes(rows[0].perfetto_gz)


def test_inflate_chunks_matches_gzip_decompress():
    data = b"".join(str(i).encode() * 7 for i in range(50_000))
    packed = pool.gzip_export(data)
    chunks = list(exports.inflate_chunks(packed, chunk=1000))
    assert len(chunks) > 1 and b"".join(chunks) == data
    assert exports.inflated_size(packed) == len(data)


# ---------------------------------------------------------------- the spooled fast path


def spooled_trace(client, user) -> tuple[Trace, str]:
    """A trace of ``user``'s whose export is already in the spool (one download through the
    whole stack put it there)."""
    row = owned_trace(user)
    url = f"/traces/{row.pk}/perfetto.json"
    assert body(client.get(url, HTTP_ACCEPT_ENCODING="gzip")) == bytes(row.perfetto_gz)
    # The first from the spool on a database connection also prepares the claim query there.
    assert body(client.get(url, HTTP_ACCEPT_ENCODING="gzip")) == bytes(row.perfetto_gz)
    return row, url


def test_a_spooled_download_costs_one_query_and_keeps_the_contract(learner_client, learner):
    row, url = spooled_trace(learner_client, learner)
    with CaptureQueriesContext(connection) as queries:
        response = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip, br")
        sent = body(response)
    # One query reads the session row and the trace's claimant together; no ORM session,
    # user or trace load, and no trace bytes.
    sql = claim_sql(queries)
    assert "django_session" in sql and "scenarios_trace" in sql and "perfetto_gz" not in sql
    assert response.status_code == 200 and sent == bytes(row.perfetto_gz)
    assert int(response["Content-Length"]) == len(sent)
    assert response["Content-Encoding"] == "gzip" and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="trace-{row.pk.hex[:12]}.json"'
    assert response["ETag"] == f'"{row.pk.hex}-gz"'
    assert {"Accept-Encoding", "Cookie"} <= {v.strip() for v in response["Vary"].split(",")}
    inline = learner_client.get(f"{url}?inline=1", HTTP_ACCEPT_ENCODING="gzip")
    assert "Content-Disposition" not in inline and body(inline) == sent
    with CaptureQueriesContext(connection) as queries:
        again = learner_client.get(
            url, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=f'"{row.pk.hex}-gz"'
        )
    assert again.status_code == 304 and len(queries.captured_queries) == 1


def test_the_fast_path_serves_no_one_but_the_signed_in_claimant(learner_client, learner, client):
    from django.contrib.auth import get_user_model

    _row, url = spooled_trace(learner_client, learner)
    # Signed out (the session row is gone): sent to sign in, as any page.
    anonymous = client.__class__()
    anonymous.cookies = learner_client.cookies
    learner_client.logout()
    response = anonymous.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 302 and "/accounts/login" in response["Location"]
    # Another learner: 404, as for a trace that does not exist.
    eve = client.__class__()
    eve.force_login(get_user_model().objects.create_user("eve", password="x-long-pass-1"))
    assert eve.get(url, HTTP_ACCEPT_ENCODING="gzip").status_code == 404
    # A session from before the password changed no longer signs the owner in.
    owner = client.__class__()
    owner.force_login(learner)
    assert owner.get(url, HTTP_ACCEPT_ENCODING="gzip").status_code == 200
    learner.set_password("a-new-long-pass-2")
    learner.save()
    assert owner.get(url, HTTP_ACCEPT_ENCODING="gzip").status_code == 302
    # A deactivated learner is signed out too.
    owner.force_login(learner)
    get_user_model().objects.filter(pk=learner.pk).update(is_active=False)
    assert owner.get(url, HTTP_ACCEPT_ENCODING="gzip").status_code == 302


def test_an_expired_session_does_not_download(learner_client, learner):
    from django.contrib.sessions.models import Session

    _row, url = spooled_trace(learner_client, learner)
    key = learner_client.cookies["sessionid"].value
    Session.objects.filter(pk=key).update(
        expire_date=timezone.now() - timezone.timedelta(seconds=1)
    )
    response = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 302 and "/accounts/login" in response["Location"]


def test_with_cached_db_sessions_the_fast_path_still_checks_the_row(client, learner, settings):
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
    client.force_login(learner)
    _row, url = spooled_trace(client, learner)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url, HTTP_ACCEPT_ENCODING="gzip").status_code == 200
    assert len(queries.captured_queries) == 1
    client.logout()  # the row and its cached copy are gone
    assert client.get(url, HTTP_ACCEPT_ENCODING="gzip").status_code == 302


def test_the_fast_path_answers_with_the_headers_of_the_whole_stack(learner_client, learner):
    row, url = spooled_trace(learner_client, learner)
    with CaptureQueriesContext(connection) as queries:
        fast = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert len(queries.captured_queries) == 1  # it was the fast path
    # A query string the fast path leaves alone sends the same download down the whole stack.
    slow = learner_client.get(f"{url}?from=stack", HTTP_ACCEPT_ENCODING="gzip")
    assert body(fast) == body(slow) == bytes(row.perfetto_gz)

    def headers(response) -> dict[str, str]:
        return {k: v for k, v in response.headers.items() if k != "Set-Cookie"}

    assert headers(fast) == headers(slow)
    assert fast["X-Content-Type-Options"] == "nosniff" and fast["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" in fast
    tag = fast["ETag"]
    fast_304 = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=tag)
    slow_304 = learner_client.get(
        f"{url}?from=stack", HTTP_ACCEPT_ENCODING="gzip", HTTP_IF_NONE_MATCH=tag
    )
    assert fast_304.status_code == slow_304.status_code == 304
    # (CommonMiddleware puts "Content-Length: 0" on the stack's 304, which RFC 9110 forbids
    # unless it is the 200's length; the fast path sends none)
    assert headers(fast_304) == {
        k: v for k, v in headers(slow_304).items() if k != "Content-Length"
    }


def test_the_fast_path_leaves_https_redirects_and_bad_hosts_to_the_stack(
    learner_client, learner, client, settings
):
    _row, url = spooled_trace(learner_client, learner)
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 3600
    owner = client.__class__()  # its middleware is built under these settings
    owner.cookies = learner_client.cookies
    plain = owner.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert plain.status_code == 301 and plain["Location"] == f"https://testserver{url}"
    secure = owner.get(url, HTTP_ACCEPT_ENCODING="gzip", secure=True)
    assert secure.status_code == 200 and secure["Strict-Transport-Security"].startswith(
        "max-age=3600"
    )
    # A Host header that is not allowed: the stack's 400, as for any page.
    evil = owner.get(url, HTTP_ACCEPT_ENCODING="gzip", secure=True, HTTP_HOST="evil.example")
    assert evil.status_code == 400


@pytest.mark.django_db(transaction=True)
def test_a_claim_statement_dropped_behind_its_back_costs_one_trip_through_the_stack(
    learner_client, learner
):
    needs_postgres()  # a prepared statement is PostgreSQL's
    row, url = spooled_trace(learner_client, learner)
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # as a connection pooler resetting the session would
    with CaptureQueriesContext(connection) as queries:
        response = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert response.status_code == 200 and body(response) == bytes(row.perfetto_gz)
    assert len(queries.captured_queries) > 1  # the failed EXECUTE, then the whole stack
    body(learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip"))  # prepared again
    with CaptureQueriesContext(connection) as queries:
        again = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip")
    assert body(again) == bytes(row.perfetto_gz) and len(queries.captured_queries) == 1
