"""Bring your own trace: the Upload model and the rules around it (create, process, expire,
delete). Processing runs in a Celery task (scenarios.tasks.process_upload), never on the request."""

from __future__ import annotations

import gzip
import io
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, models, transaction
from django.utils import timezone

from scenarios.traceanalysis import analyse, to_perfetto, to_timeline
from scenarios.traceanalysis.errors import TraceError
from scenarios.traceanalysis.ingest import Limits, load

log = logging.getLogger(__name__)

# Why an upload's analysis is held back from its owner for now (None: shown), asked by the
# apps that know learners: the pool knows none, so ``drills`` registers its check here (the
# trace of a drill the learner has open is theirs to read, not the analyser's to answer).
HoldCheck = Callable[[Any, dict], "str | None"]
HOLD_CHECKS: list[HoldCheck] = []


def register_hold(check: HoldCheck) -> None:
    if check not in HOLD_CHECKS:
        HOLD_CHECKS.append(check)


def held_back(user: Any, analysis: dict) -> str | None:
    """The first registered reason to hold ``analysis`` back from ``user``, or None."""
    for check in HOLD_CHECKS:
        why = check(user, analysis)
        if why:
            return why
    return None


def limits() -> Limits:
    cfg = settings.TRACETRACK
    return Limits(
        max_upload_bytes=cfg["UPLOAD_MAX_BYTES"],
        max_unpacked_bytes=cfg["UPLOAD_MAX_UNPACKED_BYTES"],
        max_ratio=cfg["UPLOAD_MAX_RATIO"],
        max_ranks=cfg["UPLOAD_MAX_RANKS"],
        max_events=cfg["UPLOAD_MAX_EVENTS"],
    )


class UploadQuerySet(models.QuerySet["Upload"]):
    def owned_by(self, user) -> UploadQuerySet:
        return self.filter(owner=user)

    def expired(self, now=None) -> UploadQuerySet:
        return self.filter(expires_at__lte=now or timezone.now())

    def live(self, now=None) -> UploadQuerySet:
        """Not yet expired: what its owner may still see, whether or not the sweep has run."""
        return self.filter(expires_at__gt=now or timezone.now())

    def visible_to(self, user, now=None) -> UploadQuerySet:
        """The uploads a user may list, read and delete: their own, until they expire."""
        return self.owned_by(user).live(now)


class Upload(models.Model):
    """One uploaded trace (one or many ranks), its stored conversions and its analysis."""

    class Status(models.TextChoices):
        QUEUED = "queued", "waiting to be processed"
        PROCESSING = "processing", "being processed"
        READY = "ready", "ready"
        FAILED = "failed", "could not be read"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="trace_uploads"
    )
    filename = models.CharField(max_length=200)
    size_bytes = models.PositiveBigIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    raw = models.BinaryField(help_text="the uploaded bytes, kept only until processed")
    timeline_gz = models.BinaryField(default=b"", help_text="gzip of the viewer timeline JSON")
    perfetto_gz = models.BinaryField(default=b"", help_text="gzip of the all-ranks Perfetto JSON")
    analysis = models.JSONField(null=True, blank=True)
    n_ranks = models.PositiveIntegerField(default=0)
    n_events = models.PositiveIntegerField(default=0)

    objects = UploadQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="upload_owner_idx")]

    def __str__(self) -> str:
        return f"upload {self.id}"

    @property
    def done(self) -> bool:
        return self.status in (self.Status.READY, self.Status.FAILED)


def create_upload(owner, filename: str, fileobj, size: int) -> Upload:
    """Store the raw bytes (size-checked) and queue processing. Raises TraceError when too big."""
    lim = limits()
    if size > lim.max_upload_bytes:
        raise TraceError(
            f"The file is larger than {lim.max_upload_bytes / (1 << 20):,.0f} MiB, this server's "
            "upload limit."
        )
    data = fileobj.read(lim.max_upload_bytes + 1)
    if len(data) > lim.max_upload_bytes:
        raise TraceError("The file is larger than this server's upload limit.")
    if not data:
        raise TraceError("The file is empty.")
    days = settings.TRACETRACK["UPLOAD_EXPIRY_DAYS"]
    pending_max = settings.TRACETRACK["UPLOAD_MAX_PENDING"]
    with transaction.atomic():
        # One user's uploads serialise on their user row, so two at once cannot both pass.
        get_user_model().objects.select_for_update().filter(pk=owner.pk).exists()
        # Their expired ones go now: without Celery beat (the embedded mode) no sweep runs.
        delete_expired(owner=owner)
        pending = Upload.objects.owned_by(owner).exclude(
            status__in=[Upload.Status.READY, Upload.Status.FAILED]
        )
        if pending.count() >= pending_max:
            raise TraceError(
                f"You already have {pending_max} trace{'s' if pending_max != 1 else ''} waiting "
                "or being processed; upload this one when they are done."
            )
        up = Upload.objects.create(
            owner=owner,
            filename=filename[-200:],
            size_bytes=len(data),
            raw=data,
            expires_at=timezone.now() + timedelta(days=days),
        )
    transaction.on_commit(lambda: _enqueue(up.pk))
    return up


QUEUE_DOWN = (
    "the task queue that processes uploads could not be reached, so it was not processed; "
    "upload it again in a few minutes."
)


def _enqueue(upload_id) -> None:
    """Queue processing. With the broker down the upload fails at once with a message (its raw
    bytes dropped) instead of a 500 and a row left "queued" that no worker will ever take."""
    from scenarios.tasks import process_upload

    try:
        process_upload.delay(str(upload_id))
    except Exception:
        log.exception("could not queue upload %s for processing", upload_id)
        Upload.objects.filter(pk=upload_id, status=Upload.Status.QUEUED).update(
            status=Upload.Status.FAILED, error=QUEUE_DOWN.capitalize(), raw=b""
        )


def convert(filename: str, data: bytes) -> dict:
    """The stored forms of one upload: pure work, no database. Raises TraceError."""
    ranks = load(filename, io.BytesIO(data), limits())
    timeline = to_timeline(ranks)
    perfetto = to_perfetto(ranks)
    report = analyse(ranks)
    return {
        "timeline_gz": gzip.compress(orjson.dumps(timeline), 6),
        "perfetto_gz": gzip.compress(perfetto, 6),
        "analysis": report,
        "n_ranks": len(ranks),
        "n_events": sum(r.n for r in ranks),
    }


BUSY = "busy"


def lock_key(upload_id) -> int:
    """The upload's PostgreSQL advisory lock key (64 bits of its id)."""
    return int.from_bytes(uuid.UUID(str(upload_id)).bytes[:8], "big", signed=True)


@contextmanager
def _only_worker(upload_id) -> Iterator[bool]:
    """Whether this worker may process the upload: on PostgreSQL a session advisory lock per
    upload, held while processing and released by the server when a killed worker's connection
    drops. Celery's Redis transport hands a task that is still running to a second worker once
    it has gone unacknowledged for the visibility timeout (``CELERY_VISIBILITY_TIMEOUT_S``, 300 s
    by default; the largest upload takes longer): that copy must not process it again."""
    if connection.vendor != "postgresql":
        yield True  # SQLite: embedded mode, tasks run in-process, no redelivery
        return
    key = lock_key(upload_id)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [key])
        row = cursor.fetchone()
    mine = bool(row and row[0])
    try:
        yield mine
    finally:
        if mine:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
            except Exception:  # a lost connection has dropped the lock with it
                log.warning("could not release the lock of upload %s", upload_id, exc_info=True)


def process(upload_id) -> str:
    """Process one queued upload; idempotent (a redelivered task finds it done). Returns
    ``BUSY``, doing nothing, while another worker is processing it."""
    with _only_worker(upload_id) as mine:
        return _process(upload_id) if mine else BUSY


def _process(upload_id) -> str:
    with transaction.atomic():
        up = Upload.objects.select_for_update().filter(pk=upload_id).first()
        if up is None or up.done:
            return "gone" if up is None else up.status
        up.status = Upload.Status.PROCESSING
        up.save(update_fields=["status"])
        filename, data = up.filename, bytes(up.raw)
    try:
        out = convert(filename, data)
    except TraceError as e:
        Upload.objects.filter(pk=upload_id).update(
            status=Upload.Status.FAILED, error=str(e), raw=b""
        )
        return Upload.Status.FAILED
    except MemoryError:
        Upload.objects.filter(pk=upload_id).update(
            status=Upload.Status.FAILED,
            error="The trace needs more memory than this server allows.",
            raw=b"",
        )
        return Upload.Status.FAILED
    except Exception:
        log.exception("processing upload %s failed", upload_id)
        Upload.objects.filter(pk=upload_id).update(
            status=Upload.Status.FAILED,
            error="Something went wrong while reading this trace; nothing was kept.",
            raw=b"",
        )
        return Upload.Status.FAILED
    # one write: either everything is stored, or (row deleted meanwhile) nothing
    Upload.objects.filter(pk=upload_id).update(status=Upload.Status.READY, raw=b"", error="", **out)
    return Upload.Status.READY


def delete_expired(now=None, owner=None) -> int:
    """Delete expired uploads (only ``owner``'s when given); returns how many."""
    expired = Upload.objects.expired(now)
    if owner is not None:
        expired = expired.filter(owner=owner)
    n, _ = expired.delete()
    return n
