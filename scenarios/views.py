from __future__ import annotations

import gzip

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseNotModified,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from scenarios import exports
from scenarios.models import Trace


def _trace_for(request: HttpRequest, trace_id) -> Trace:
    return get_object_or_404(Trace.objects.visible_to(request.user), pk=trace_id)


def gzipped_json(request: HttpRequest, body_gz: bytes) -> HttpResponse:
    """Send already-gzipped JSON as is to clients that accept gzip, inflated to the others."""
    if exports.accepts_gzip(request):  # not "gzip;q=0", which refuses it
        response = HttpResponse(body_gz, content_type="application/json")
        response["Content-Encoding"] = "gzip"
    else:
        response = HttpResponse(gzip.decompress(body_gz), content_type="application/json")
    response["Vary"] = "Accept-Encoding"
    response["Cache-Control"] = "private, max-age=3600"
    return response


@require_GET
def timeline_json(request: HttpRequest, trace_id) -> HttpResponse:
    """The viewer's columnar timeline, stored gzipped at generation time."""
    return gzipped_json(request, bytes(_trace_for(request, trace_id).timeline_gz))


@require_GET
def perfetto_json(request: HttpRequest, trace_id) -> HttpResponseBase:
    """The whole trace, every rank, as Chrome-trace JSON that Perfetto opens: stored bytes.

    A signed-in owner's download of a spooled export with gzip accepted is usually answered
    before this view, by ``download_middleware.SpooledExportMiddleware`` (one query, no session
    or user loaded through the ORM); this view answers everything else the same way."""
    gzipped = exports.accepts_gzip(request)
    tag = exports.etag(trace_id, gzipped)
    # The claim is checked with one query that reads no bytes; they come from the spool file
    # (or, the first time on this host, from the row: one more query).
    trace = get_object_or_404(Trace.objects.visible_to(request.user).only("id"), pk=trace_id)
    if exports.not_modified(request, tag):
        return exports.finish(HttpResponseNotModified(), tag)
    spooled = exports.open_spooled(trace)
    if gzipped and spooled is not None:
        inline = request.GET.get("inline") == "1"
        return exports.spooled_response(request, spooled, trace.pk, tag, inline=inline)
    if spooled is None:
        body_gz = exports.perfetto_gz(trace)
    else:
        with spooled:
            body_gz = spooled.read()
    response: HttpResponse | StreamingHttpResponse
    if gzipped:
        response = HttpResponse(body_gz, content_type="application/json")
        response["Content-Encoding"] = "gzip"
        response["Content-Length"] = str(len(body_gz))
    else:
        response = StreamingHttpResponse(
            exports.inflate_chunks(body_gz), content_type="application/json"
        )
        response["Content-Length"] = str(exports.inflated_size(body_gz))
    if request.GET.get("inline") != "1":
        response["Content-Disposition"] = exports.attachment_name(trace.pk)
    return exports.finish(response, tag)
