"""Trace downloads: stored gzip bytes out as they are, or inflated on the fly.

The Perfetto export of a pool trace is built and gzipped once, by the worker that generated the
trace (``pool.build_trace``). A download sends those bytes with ``Content-Encoding: gzip`` to a
client that accepts gzip and streams them inflated, chunk by chunk, to one that does not; both
carry the exact ``Content-Length``. The ETag is the trace's random id (the row never changes),
so it says nothing about the scenario, and a revalidation answers 304 without reading the bytes.

The stored bytes are also kept as a file (``EXPORT_SPOOL``, named by the trace's random id, so
again nothing about the scenario), written once by the first download on this host: later
downloads check the claim (one query, no bytes) and send the file the way a static file is sent
(``FileResponse``; the WSGI server's sendfile). Rows never change, so a file never goes stale;
the spool keeps at most ``EXPORT_SPOOL_MAX_FILES`` (the oldest go first), and a spool that
cannot be written only costs the bytes being sent from the database instead.
"""

from __future__ import annotations

import contextlib
import os
import struct
import tempfile
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db.models import Q
from django.http import FileResponse, HttpRequest, HttpResponseBase, HttpResponseNotModified
from django.utils.http import parse_etags

from scenarios import engine, pool
from scenarios.models import Trace

CHUNK = 256 * 1024


def perfetto_gz(trace: Trace) -> bytes:
    """The trace's stored Perfetto export (gzip); built from its events and stored once if the
    row predates stored exports (only while the column is still empty: concurrent first
    downloads write identical bytes, and nothing else about the row changes)."""
    if trace.perfetto_gz is not None:
        return bytes(trace.perfetto_gz)
    full = Trace.objects.only("id", "payload").get(pk=trace.pk)
    data = pool.gzip_export(engine.perfetto_bytes(full.load()))
    Trace.objects.filter(Q(pk=trace.pk) & Q(perfetto_gz__isnull=True)).update(perfetto_gz=data)
    trace.perfetto_gz = data
    return data


def spool_path(trace_id: uuid.UUID) -> Path:
    return Path(settings.EXPORT_SPOOL) / f"{trace_id.hex}.json.gz"


def _prune(folder: Path) -> None:
    """Keep the spool to ``EXPORT_SPOOL_MAX_FILES`` files, dropping the least recently written."""
    limit = settings.EXPORT_SPOOL_MAX_FILES
    entries = [e for e in os.scandir(folder) if e.name.endswith(".json.gz")]
    if len(entries) <= limit:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for entry in entries[: len(entries) - limit]:
        with contextlib.suppress(OSError):
            os.unlink(entry.path)


def open_spooled(trace: Trace) -> BinaryIO | None:
    """The trace's stored Perfetto export (gzip) as an open file from the spool, written there
    from the database first if this host has not sent it before; None if the spool cannot be
    written (send ``perfetto_gz(trace)`` then)."""
    path = spool_path(trace.pk)
    try:
        return path.open("rb")
    except FileNotFoundError:
        pass
    except OSError:  # no usable spool here (not a folder, no permission)
        return None
    data = perfetto_gz(trace)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the whole file or none
        _prune(path.parent)
        return path.open("rb")
    except OSError:
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)
        return None


def inflated_size(body_gz: bytes) -> int:
    """The uncompressed size from the gzip trailer (ISIZE; exact below 4 GiB)."""
    return struct.unpack("<I", body_gz[-4:])[0]


def inflate_chunks(body_gz: bytes, chunk: int = CHUNK) -> Iterator[bytes]:
    """``gzip.decompress(body_gz)`` in pieces, so a worker never holds the whole JSON."""
    inflater = zlib.decompressobj(wbits=31)
    view = memoryview(body_gz)
    for start in range(0, len(view), chunk):
        out = inflater.decompress(view[start : start + chunk])
        if out:
            yield out
    tail = inflater.flush()
    if tail:
        yield tail


def accepts_gzip(request: HttpRequest) -> bool:
    from scenarios.perfetto_ui import choose_encoding

    # (META rather than request.headers, which copies every header: this runs on the fast path)
    return choose_encoding(request.META.get("HTTP_ACCEPT_ENCODING", ""), ("gzip",)) == "gzip"


def etag(trace_id, gzipped: bool) -> str:
    """One tag per representation (gzip and identity bodies differ), from the random id."""
    return f'"{trace_id.hex}{"-gz" if gzipped else ""}"'


def not_modified(request: HttpRequest, tag: str) -> bool:
    """If-None-Match (weak comparison, as for GET) matches ``tag``."""
    header = request.META.get("HTTP_IF_NONE_MATCH")
    if not header:
        return False
    tags = parse_etags(header)
    if tags == ["*"]:
        return True
    bare = tag.removeprefix("W/")
    return any(t.removeprefix("W/") == bare for t in tags)


def attachment_name(trace_id: uuid.UUID) -> str:
    """The download's file name: from the random id, so it says nothing about the scenario."""
    return f'attachment; filename="trace-{trace_id.hex[:12]}.json"'


def finish(response: HttpResponseBase, tag: str, vary: str = "Accept-Encoding") -> HttpResponseBase:
    """The headers every answer of a download carries (200 or 304)."""
    response["ETag"] = tag
    response["Vary"] = vary
    # The learner's own browser may keep it, but asks each time (a 304 costs no bytes).
    response["Cache-Control"] = "private, no-cache"
    return response


def spooled_response(
    request: HttpRequest,
    spooled: BinaryIO,
    trace_id: uuid.UUID,
    tag: str,
    *,
    inline: bool,
    vary: str = "Accept-Encoding",
) -> HttpResponseBase:
    """The answer to a client that accepts gzip, for an authorised trace whose export is in the
    spool (``spooled``, open): 304 on a matching If-None-Match (the file is closed unread), else
    the file as it is, sent the way a static file is (``FileResponse``: the WSGI server's
    sendfile), as an attachment unless ``inline``."""
    if not_modified(request, tag):
        spooled.close()
        return finish(HttpResponseNotModified(), tag, vary)
    response = FileResponse(spooled, content_type="application/json")
    response["Content-Encoding"] = "gzip"
    if not inline:
        response["Content-Disposition"] = attachment_name(trace_id)
    else:  # not FileResponse's own "inline; filename=<the spool file's name>"
        del response["Content-Disposition"]
    return finish(response, tag, vary)
