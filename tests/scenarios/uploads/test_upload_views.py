"""The upload pages: upload → processed (in-process Celery) → viewer, Perfetto, overview, findings;
private to the owner; delete; expiry; CSRF."""

from __future__ import annotations

import gzip
import io
import json
import re
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from scenarios import engine
from scenarios.tasks import process_upload
from scenarios.traceanalysis import analyse
from scenarios.uploads import Upload, delete_expired

pytestmark = pytest.mark.django_db
_capture = None
REAL = Path(__file__).resolve().parents[2] / "data" / "real"


def zipped_hta(slug: str, seed: int) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for r, data in engine.hta_bytes(engine.generate(slug, seed)).items():
            z.writestr(f"rank-{r}.json", data)
    return buf.getvalue()


@pytest.fixture(autouse=True)
def _run_on_commit(django_capture_on_commit_callbacks, monkeypatch):
    """Tests run inside a transaction; run the queued task as a commit would, in this process
    even when a broker is configured (the real worker is tested with the pool)."""
    global _capture
    _capture = django_capture_on_commit_callbacks
    monkeypatch.setattr(process_upload, "delay", lambda *a: process_upload.apply(args=a))


def post(client, name: str, data: bytes):
    with _capture(execute=True):
        client.post(reverse("scenarios:upload_list"), {"trace": SimpleUploadedFile(name, data)})
    up = Upload.objects.order_by("-created_at").first()
    return client.get(reverse("scenarios:upload_detail", args=[up.pk]))


def test_upload_real_trace_renders_viewer_overview_and_perfetto(learner_client):
    data = (REAL / "nccl_a100_rank0.json.gz").read_bytes()
    page = post(learner_client, "nccl.json.gz", data)
    up = Upload.objects.get()
    assert up.status == Upload.Status.READY and up.n_ranks == 1
    assert bytes(up.raw) == b""  # the raw upload is not kept once converted
    html = page.content.decode()
    assert 'id="timeline"' in html and "overview-table" in html and "Open in Perfetto" in html
    assert "A100" in html
    tl = learner_client.get(reverse("scenarios:upload_timeline", args=[up.pk]))
    doc = json.loads(gzip.decompress(tl.content) if tl.get("Content-Encoding") else tl.content)
    assert doc["v"] == 1 and len(doc["slices"]["ts"]) > 10_000
    pf = learner_client.get(reverse("scenarios:upload_perfetto", args=[up.pk]) + "?inline=1")
    body = gzip.decompress(pf.content) if pf.get("Content-Encoding") else pf.content
    assert any(e.get("cat") == "kernel" for e in orjson.loads(body)["traceEvents"])


def test_engine_export_upload_names_the_scenario(learner_client):
    page = post(learner_client, "job.zip", zipped_hta("input-starvation", 0))
    assert Upload.objects.get().n_ranks > 1
    assert 'data-slug="input-starvation"' in page.content.decode()


def test_bad_upload_fails_with_a_message_and_stores_nothing(learner_client):
    page = post(learner_client, "x.json.gz", gzip.compress(b'{"traceEvents": [')[:-8])
    up = Upload.objects.get()
    assert up.status == Upload.Status.FAILED
    assert "truncated" in up.error and "truncated" in page.content.decode()
    # the notice stays in the list until it expires: it says so, rather than "nothing was kept"
    notice = page.content.decode().split('id="upload-error"', 1)[1].split("</p>", 1)[0]
    assert f"deleted on {timezone.localtime(up.expires_at):%Y-%m-%d}" in notice
    assert bytes(up.timeline_gz) == b"" and bytes(up.perfetto_gz) == b"" and up.analysis is None
    assert learner_client.get(reverse("scenarios:upload_timeline", args=[up.pk])).status_code == 404


def test_other_users_get_404(learner_client, make_user):
    post(learner_client, "t.json.gz", (REAL / "event_sync_a100.json.gz").read_bytes())
    up = Upload.objects.get()
    other = Client()
    other.force_login(make_user("mallory"))
    for name in ("upload_detail", "upload_timeline", "upload_perfetto"):
        assert other.get(reverse(f"scenarios:{name}", args=[up.pk])).status_code == 404
    assert other.post(reverse("scenarios:upload_delete", args=[up.pk])).status_code == 404
    assert Upload.objects.filter(pk=up.pk).exists()
    assert "event_sync" not in other.get(reverse("scenarios:upload_list")).content.decode()


def test_delete_removes_file_and_rows(learner_client):
    post(learner_client, "t.json.gz", (REAL / "event_sync_a100.json.gz").read_bytes())
    up = Upload.objects.get()
    r = learner_client.post(reverse("scenarios:upload_delete", args=[up.pk]), follow=True)
    assert r.status_code == 200 and not Upload.objects.exists()
    assert learner_client.get(reverse("scenarios:upload_detail", args=[up.pk])).status_code == 404


def test_expiry_cleanup_deletes_only_expired(learner_client):
    post(learner_client, "a.json.gz", (REAL / "event_sync_a100.json.gz").read_bytes())
    post(learner_client, "b.json.gz", (REAL / "event_sync_a100.json.gz").read_bytes())
    old = Upload.objects.get(filename="a.json.gz")
    Upload.objects.filter(pk=old.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert delete_expired() == 1
    assert list(Upload.objects.values_list("filename", flat=True)) == ["b.json.gz"]


def test_upload_needs_csrf_and_login(learner):
    c = Client(enforce_csrf_checks=True)
    c.force_login(learner)
    r = c.post(reverse("scenarios:upload_list"), {"trace": SimpleUploadedFile("t.json", b"{}")})
    assert r.status_code == 403 and not Upload.objects.exists()
    anon = Client().get(reverse("scenarios:upload_list"))
    assert anon.status_code == 302


def test_oversize_upload_refused_on_the_request(learner_client, settings):
    settings.TRACETRACK = {**settings.TRACETRACK, "UPLOAD_MAX_BYTES": 1000}
    r = learner_client.post(
        reverse("scenarios:upload_list"), {"trace": SimpleUploadedFile("t.json", b" " * 2000)}
    )
    assert r.status_code == 422 and "upload limit" in r.content.decode()
    assert not Upload.objects.exists()


def test_status_partial_polls_until_done(learner_client, learner):
    up = Upload.objects.create(owner=learner, filename="q.json", size_bytes=2, raw=b"{}",
                               expires_at=timezone.now() + timedelta(days=1))  # fmt: skip
    url = reverse("scenarios:upload_detail", args=[up.pk]) + "?part=status"
    r = learner_client.get(url, headers={"HX-Request": "true"})
    assert 'hx-trigger="every 1s"' in r.content.decode() and "HX-Refresh" not in r
    Upload.objects.filter(pk=up.pk).update(status=Upload.Status.READY)
    r = learner_client.get(url, headers={"HX-Request": "true"})
    assert r["HX-Refresh"] == "true"


def test_real_two_rank_job_as_tar_gz(learner_client):
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for r in (0, 1):
            t.add(REAL / f"sampled_rank-{r}.json.gz", arcname=f"job/sampled_rank-{r}.json.gz")
    page = post(learner_client, "job.tar.gz", buf.getvalue())
    up = Upload.objects.get()
    assert up.status == Upload.Status.READY, up.error
    assert up.n_ranks == 2 and up.analysis["world_size"] == 128  # two of a 128-rank job
    html = page.content.decode()
    assert html.count("<td>1</td><td>#") >= 2  # rank 1's steps are in the overview


def test_a_broker_outage_fails_the_upload_with_a_message_not_a_500(learner, monkeypatch):
    """Redis down: queueing the task fails. The learner gets the upload's page with a clear
    message (not a 500), and no row is left "queued" forever with its raw bytes."""
    from kombu.exceptions import OperationalError

    def down(*args):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(process_upload, "delay", down)
    c = Client(raise_request_exception=False)
    c.force_login(learner)
    data = (REAL / "event_sync_a100.json.gz").read_bytes()
    with _capture(execute=True):
        r = c.post(
            reverse("scenarios:upload_list"), {"trace": SimpleUploadedFile("t.json.gz", data)}
        )
    assert r.status_code == 302, r.status_code
    up = Upload.objects.get()
    assert up.status == Upload.Status.FAILED and bytes(up.raw) == b""
    page = c.get(r["Location"]).content.decode()
    assert "could not be reached" in page and 'hx-trigger="every 1s"' not in page


@pytest.mark.parametrize(
    "name",
    ["alexnet_a100.json.gz", "event_sync_a100.json.gz", "mi250_minitoy.json.gz"],
)
def test_every_real_sample_uploads_and_renders(learner_client, name):
    """The real Kineto files not covered above (an AMD MI250 one included) are processed and
    shown with the viewer, the overview and a Perfetto export."""
    page = post(learner_client, name, (REAL / name).read_bytes())
    up = Upload.objects.get()
    assert up.status == Upload.Status.READY, up.error
    html = page.content.decode()
    assert 'id="timeline"' in html and "overview-table" in html and "Open in Perfetto" in html
    findings = up.analysis["findings"]
    assert html.count('<li data-slug="') == len(findings)
    assert ('id="no-findings"' in html) == (not findings)
    pf = learner_client.get(reverse("scenarios:upload_perfetto", args=[up.pk]) + "?inline=1")
    body = gzip.decompress(pf.content) if pf.get("Content-Encoding") else pf.content
    assert orjson.loads(body)["traceEvents"]


@pytest.mark.parametrize(
    "name,stepped",
    [("alexnet_a100.json.gz", False), ("event_sync_a100.json.gz", True)],
)
def test_a_trace_without_steps_is_described_as_one_window_not_steps(learner_client, name, stepped):
    """AlexNet's real trace has no ProfilerStep: the page said "A step runs from one
    ProfilerStep#N to the next", headed its idle time "analysed steps" and its findings spoke
    of "the step"; it speaks of the trace window instead. A trace with steps keeps its steps."""
    import html as htmlmod
    import re

    page = post(learner_client, name, (REAL / name).read_bytes())
    text = htmlmod.unescape(re.sub(r"<[^>]+>", " ", page.content.decode()))
    findings = " ".join(
        re.sub(r"<[^>]+>", " ", m)
        for m in re.findall(r'<ol class="findings">(.*?)</ol>', page.content.decode(), re.S)
    )
    assert findings.strip()
    assert ("A step runs from one" in text) == stepped
    assert ("GPU idle (ms, analysed steps)" in text) == stepped
    assert ("of the step" in findings) == stepped
    if not stepped:
        assert "no steps: each rank's trace is one window" in text
        assert "GPU idle (ms, the trace window)" in text
        assert "of the trace window" in findings


def test_a_copy_delivered_while_another_worker_processes_it_waits_then_takes_over(
    learner, monkeypatch
):
    """Celery's Redis transport redelivers a task unacknowledged for the visibility timeout
    even while its worker still runs it (the largest upload takes longer than 300 s). That copy
    must not process the upload a second time: it checks back later, and takes over only once
    the first worker is gone (its lock released)."""
    import threading

    from celery.exceptions import Retry
    from django.db import connection

    from scenarios import uploads
    from tests.conftest import needs_postgres

    needs_postgres()
    data = (REAL / "event_sync_a100.json.gz").read_bytes()
    up = Upload.objects.create(owner=learner, filename="t.json.gz", size_bytes=len(data),
                               raw=data, expires_at=timezone.now() + timedelta(days=1))  # fmt: skip
    held, release = threading.Event(), threading.Event()

    def first_worker() -> None:  # holds the upload's lock on its own connection
        key = uploads.lock_key(up.pk)
        try:
            with connection.cursor() as c:
                c.execute("SELECT pg_advisory_lock(%s)", [key])
            held.set()
            release.wait(30)
            # Gone. (A killed worker's lock goes with its connection, but the server drops it
            # a moment after the socket closes: unlocking first keeps the test deterministic.)
            with connection.cursor() as c:
                c.execute("SELECT pg_advisory_unlock(%s)", [key])
        finally:
            connection.close()

    t = threading.Thread(target=first_worker)
    t.start()
    try:
        assert held.wait(30)
        assert uploads.process(up.pk) == uploads.BUSY
        up.refresh_from_db()
        assert up.status == Upload.Status.QUEUED and bytes(up.raw) == data
        retried: dict[str, int] = {}

        def retry(*, countdown):
            retried["countdown"] = countdown
            return Retry()

        monkeypatch.setattr(process_upload, "retry", retry)
        with pytest.raises(Retry):
            process_upload(str(up.pk))
        assert 1 <= retried["countdown"] <= 60
    finally:
        release.set()
        t.join(30)
    assert process_upload(str(up.pk)) == Upload.Status.READY
    up.refresh_from_db()
    assert up.status == Upload.Status.READY and up.n_ranks == 1


def test_one_user_has_at_most_the_pending_limit_of_uploads_waiting(learner, settings, monkeypatch):
    """Uploads share the workers with the pool's refills: one account cannot queue hours of
    processing. Done (ready or failed) uploads do not count."""
    settings.TRACETRACK = {**settings.TRACETRACK, "UPLOAD_MAX_PENDING": 2}
    monkeypatch.setattr(process_upload, "delay", lambda *a: None)  # no worker: they stay queued
    c = Client()
    c.force_login(learner)
    data = (REAL / "event_sync_a100.json.gz").read_bytes()

    def upload(name: str):
        return c.post(reverse("scenarios:upload_list"), {"trace": SimpleUploadedFile(name, data)})

    assert upload("a.json.gz").status_code == 302
    assert upload("b.json.gz").status_code == 302
    refused = upload("c.json.gz")
    assert refused.status_code == 422 and "waiting or being processed" in refused.content.decode()
    assert Upload.objects.count() == 2
    Upload.objects.filter(filename="a.json.gz").update(status=Upload.Status.READY)
    assert upload("c.json.gz").status_code == 302
    assert Upload.objects.count() == 3


def test_a_collective_faster_than_the_link_says_it_is_not_a_bandwidth(learner_client):
    from tests.factories import ready_upload

    from .test_traceanalysis import job

    user = get_user_model().objects.get(pk=learner_client.session["_auth_user_id"])
    up = ready_upload(user, analysis=analyse(job(comm_nelems=500_000_000)), n_ranks=2)
    html = learner_client.get(reverse("scenarios:upload_detail", args=[up.pk])).content.decode()
    assert "more than the link carries" in html


def test_the_overview_table_names_each_column_once(learner_client):
    """Its header read 'rank | step | step | …' (the step's number, then its time) and 'sync
    calls' over '1 (609.8)' with no word for the number in brackets."""
    data = (REAL / "nccl_a100_rank0.json.gz").read_bytes()
    html = post(learner_client, "nccl.json.gz", data).content.decode()
    head = re.search(r'id="overview-table">\s*<thead>(.*?)</thead>', html, re.S).group(1)
    names = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", head)]
    assert len(names) == len(set(names)), names
    assert "step time" in names
    assert "sync calls (ms in them)" in names and "alloc calls (ms in them)" in names
    assert all(names), names  # the zoom column has a name a screen reader reads


def test_the_collectives_table_shows_the_duration_its_bandwidth_uses(learner_client):
    data = (REAL / "nccl_a100_rank0.json.gz").read_bytes()
    html = post(learner_client, "nccl.json.gz", data).content.decode()
    up = Upload.objects.get()
    rows = [c for pr in up.analysis["per_rank"] for c in pr["collectives"] if c.get("busbw_gbps")]
    assert rows
    assert "fast end µs (10th percentile)" in html
    assert f"<td>{rows[0]['p10_us']:.1f}</td>" in html


def test_a_long_launch_delay_reads_in_ms(learner_client):
    """'launch delay median 295370.7' (µs) was hard to read: from 10 000 µs on it is in ms, and
    the cell carries its unit."""
    from scenarios.upload_views import duration_text

    assert duration_text(295370.7) == "295.4 ms"
    assert duration_text(42.31) == "42.3 µs"
    data = (REAL / "nccl_a100_rank0.json.gz").read_bytes()
    html = post(learner_client, "nccl.json.gz", data).content.decode()
    up = Upload.objects.get()
    delay = up.analysis["per_rank"][0]["launch"]["launch_delay_median_us"]
    table = re.search(r'id="rank-table">(.*?)</table>', html, re.S).group(1)
    assert "launch delay median</th>" in table
    assert f"<td>{duration_text(delay)}</td>" in table


def test_deleting_an_upload_asks_first_and_names_the_file(learner_client):
    """'Delete' removed a trace at one click, from the list and from its page: both forms now
    carry a question naming the file, which the page's confirm script asks before submitting."""
    data = (REAL / "nccl_a100_rank0.json.gz").read_bytes()
    detail = post(learner_client, "nccl.json.gz", data).content.decode()
    listing = learner_client.get(reverse("scenarios:upload_list")).content.decode()
    for html in (detail, listing):
        form = re.search(r'<form[^>]*action="[^"]*/delete/"[^>]*>', html)
        assert form, html
        assert 'data-confirm="Delete nccl.json.gz?' in form.group(0)
        assert "js/confirm" in html  # the script that asks


@pytest.mark.parametrize(("field", "value"), [("dur", 10**30), ("ts", 1e308)])
def test_an_impossible_time_is_left_out_and_said_so_not_read_as_a_step(
    learner_client, field, value
):
    """A ProfilerStep with a duration of 10^30 µs showed a step of 10^27 ms and a GPU gap as
    long; one at ts 1e308 left step #100 on the page with every figure 0.00. The event is left
    out, the page says so, and the figures are those of the events that remain."""
    doc = json.loads(gzip.decompress((REAL / "event_sync_a100.json.gz").read_bytes()))
    (step,) = [e for e in doc["traceEvents"] if e.get("name") == "ProfilerStep#100"]
    step[field] = value
    page = post(learner_client, "t.json", json.dumps(doc).encode())
    html = page.content.decode()
    up = Upload.objects.get()
    assert up.status == Upload.Status.READY
    assert 'id="skipped-events"' in html and "1 event of the file" in html
    (row,) = up.analysis["per_rank"][0]["steps"]
    assert row["step"] is None and 0 < row["step_ms"] < 1  # the GPU's own 0.26 ms span
    assert "#100" not in html.split('id="overview-table"', 1)[1]


def test_a_collectives_size_reads_in_the_units_of_its_bandwidth_and_unknown_when_unknown(
    learner_client,
):
    """8 196 000 bytes read "7.8 MB" (binary units) beside a bus bandwidth in decimal GB/s, so
    size ÷ time did not give the rate shown; the TorchRec trace's collectives, whose size the
    trace does not give, read "0 bytes"."""
    from scenarios.upload_views import bytes_text

    assert bytes_text(8_196_000) == "8.2 MB" and bytes_text(0) == "unknown"
    html = post(
        learner_client, "nccl.json.gz", (REAL / "nccl_a100_rank0.json.gz").read_bytes()
    ).content.decode()
    up = Upload.objects.get()
    c = next(c for c in up.analysis["per_rank"][0]["collectives"] if c["bytes"] == 8_196_000)
    assert f"<td>allreduce</td><td>8.2 MB</td><td>2</td><td>{c['count']}</td>" in html
    # the size shown ÷ the duration shown × the factor is the bandwidth shown
    assert 8.2e6 / (c["p10_us"] * 1e-6) / 1e9 == pytest.approx(c["busbw_gbps"], rel=0.02)
    html = post(
        learner_client, "r0.json.gz", (REAL / "sampled_rank-0.json.gz").read_bytes()
    ).content.decode()
    assert "<td>alltoall</td><td>unknown</td>" in html and "0 bytes" not in html


def test_a_client_that_refuses_gzip_gets_plain_json(learner_client):
    """A header of "Accept-Encoding: gzip;q=0" refuses gzip (RFC 9110 §12.5.3); the upload's
    export and timeline were sent gzipped to it all the same, as to any header with "gzip"."""
    post(learner_client, "t.json.gz", (REAL / "event_sync_a100.json.gz").read_bytes())
    up = Upload.objects.get()
    for name in ("upload_perfetto", "upload_timeline"):
        url = reverse(f"scenarios:{name}", args=[up.pk])
        r = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip;q=0, identity")
        assert r.get("Content-Encoding") is None and json.loads(r.content)
        r = learner_client.get(url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
        assert r["Content-Encoding"] == "gzip" and json.loads(gzip.decompress(r.content))


@pytest.mark.parametrize(
    "args",
    [
        {"In msg nelems": 1e308, "Group size": 1e300},
        {"Collective name": "allgather", "In msg nelems": 10, "Out msg nelems": "lots"},
    ],
)
def test_an_absurd_message_size_is_unknown_not_a_failed_upload(learner_client, args):
    """1e308 elements made an integer no float holds and a string one made int() raise: the
    upload failed with "Something went wrong while reading this trace"."""
    doc = json.loads(gzip.decompress((REAL / "nccl_a100_rank0.json.gz").read_bytes()))
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel"):
            e["args"].update(args)
    html = post(learner_client, "t.json", json.dumps(doc).encode()).content.decode()
    up = Upload.objects.get()
    assert up.status == Upload.Status.READY, up.error
    colls = up.analysis["per_rank"][0]["collectives"]
    assert colls and all(c["bytes"] == 0 and c["group_size"] == 2 for c in colls)
    assert "<td>unknown</td>" in html


def _download(client, trace) -> bytes:
    """The trace's Perfetto JSON as the attempt page's download link serves it."""
    r = client.get(reverse("scenarios:perfetto", args=[trace.pk]))
    assert r.status_code == 200
    body = b"".join(r.streaming_content) if r.streaming else r.content
    return gzip.decompress(body) if r.get("Content-Encoding") == "gzip" else body


def test_the_open_drills_own_trace_uploaded_shows_no_findings_until_the_diagnosis(
    learner, learner_client
):
    """Downloading the open drill's trace and uploading it must not answer the drill: the
    analyser's findings name the scenario. The upload is kept, and reads in full once the
    drill is answered; another trace uploaded meanwhile is analysed as usual."""
    from tests.factories import AttemptFactory

    attempt = AttemptFactory(user=learner, scenario="straggler")
    attempt.trace.claimed_by = learner  # served to the learner, as the drill's deal claims it
    attempt.trace.save(update_fields=["claimed_by"])
    data = _download(learner_client, attempt.trace)
    html = post(learner_client, "mine.json", data).content.decode()
    assert 'id="analysis-held"' in html and "drill you have open" in html
    assert 'id="findings"' not in html and "straggler" not in html
    # the export's buttons stay as they are: the link, or the hint on how to get the UI
    from scenarios import perfetto_ui

    assert 'id="open-perfetto"' in html if perfetto_ui.available() else "<code></code>" not in html
    # renamed and stripped of its header, it is still that trace
    doc = orjson.loads(data)
    for field in ("baseTimeNanoseconds", "distributedInfo", "deviceProperties"):
        doc.pop(field, None)
    html = post(learner_client, "renamed.json", orjson.dumps(doc)).content.decode()
    assert 'id="analysis-held"' in html and 'id="findings"' not in html
    # another trace meanwhile: analysed as usual
    other = post(learner_client, "nccl.json.gz", (REAL / "nccl_a100_rank0.json.gz").read_bytes())
    assert 'id="findings"' in other.content.decode()
    # the drill answered: the same upload reads in full
    attempt.submitted_at = timezone.now()
    attempt.save(update_fields=["submitted_at"])
    up = Upload.objects.get(filename="mine.json")
    html = learner_client.get(reverse("scenarios:upload_detail", args=[up.pk])).content.decode()
    assert 'id="analysis-held"' not in html and 'id="findings"' in html
    assert 'data-slug="straggler"' in html
