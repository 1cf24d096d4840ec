"""Views for bring-your-own-trace: upload form and list, detail (progress, viewer, overview,
measurements, findings), the stored timeline and Perfetto JSON, delete. Owner only, until the
upload expires: anybody else, and the owner after that, gets 404."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from scenarios import perfetto_ui
from scenarios.traceanalysis import findings as rules
from scenarios.traceanalysis.errors import TraceError
from scenarios.traceanalysis.measures import KERNEL_GAP_US
from scenarios.uploads import Upload, create_upload, held_back, limits
from scenarios.views import gzipped_json


class HtmxRequest(HttpRequest):
    """What django-htmx's middleware leaves (``accounts.http`` has the same for the learner
    apps; the pool imports nothing of accounts)."""

    htmx: HtmxDetails


ACCEPT = ".json,.gz,.zip,.tgz,.tar,application/json,application/gzip,application/zip"


class UploadForm(forms.Form):
    trace = forms.FileField(
        label="Trace file",
        help_text="A PyTorch profiler (Kineto) trace: .json or .json.gz, or a .zip / .tar.gz "
        "with one file per rank.",
        widget=forms.ClearableFileInput(attrs={"accept": ACCEPT}),
    )


def _mine(request: HttpRequest, upload_id) -> Upload:
    return get_object_or_404(Upload.objects.visible_to(request.user), pk=upload_id)


@login_required
@require_http_methods(["GET", "POST"])
def upload_list(request: HttpRequest) -> HttpResponse:
    form = UploadForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            f = form.cleaned_data["trace"]
            try:
                up = create_upload(request.user, f.name, f, f.size)
            except TraceError as e:
                form.add_error("trace", str(e))
            else:
                return redirect("scenarios:upload_detail", upload_id=up.pk)
        status = 422
    lim = limits()
    return render(
        request,
        "scenarios/upload_list.html",
        {
            "form": form,
            "uploads": Upload.objects.visible_to(request.user).defer(
                "raw", "timeline_gz", "perfetto_gz", "analysis"
            ),
            "limits": lim,
            "max_upload_mb": lim.max_upload_bytes >> 20,
            "max_unpacked_mb": lim.max_unpacked_bytes >> 20,
            "upload_expiry_days": settings.TRACETRACK["UPLOAD_EXPIRY_DAYS"],
        },
        status=status,
    )


def duration_text(us: float | None) -> str:
    """A duration for a table cell: µs while short, ms from 10 000 µs on (295370.7 µs reads
    295.4 ms)."""
    if us is None:
        return "—"
    return f"{us / 1000:.1f} ms" if us >= 10_000 else f"{us:.1f} µs"


def bytes_text(n: int | None) -> str:
    """A message size in decimal units, as the GB/s beside it (8 196 000 bytes read "7.8 MB"
    in binary units, and 7.8 MB ÷ 2.6 ms is not the 3.2 GB/s shown next to it); "unknown"
    when the trace does not say (it read "0 bytes")."""
    if not n:
        return "unknown"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _rank_details(analysis: dict) -> list[dict]:
    """Each rank's measurements with its collectives' sizes written for reading."""
    return [
        {
            **pr,
            "collectives": [{**c, "bytes_text": bytes_text(c["bytes"])} for c in pr["collectives"]],
        }
        for pr in analysis["per_rank"]
    ]


def _rank_rows(analysis: dict) -> list[dict]:
    """The per-rank measurements with their launch delay written for reading."""
    return [
        {**pr, "launch_delay": duration_text(pr["launch"].get("launch_delay_median_us"))}
        for pr in analysis["per_rank"]
    ]


def has_steps(analysis: dict) -> bool:
    """Whether the trace has ProfilerStep annotations; without them each rank's trace is one
    window, and the page speaks of that window instead of steps."""
    return any(s["step"] is not None for pr in analysis["per_rank"] for s in pr["steps"])


def _overview(analysis: dict) -> list[dict]:
    rows = []
    for pr in analysis["per_rank"]:
        for s in pr["steps"]:
            rows.append({"rank": pr["rank"], **s})
    return rows


@login_required
@require_GET
def upload_detail(request: HtmxRequest, upload_id) -> HttpResponse:
    up = get_object_or_404(
        Upload.objects.visible_to(request.user).defer("raw", "timeline_gz", "perfetto_gz"),
        pk=upload_id,
    )
    if request.htmx and request.GET.get("part") == "status":
        response = render(request, "scenarios/upload_detail.html#status", {"upload": up})
        if up.done:
            response["HX-Refresh"] = "true"
        return response
    ctx: dict = {"upload": up}
    a = up.analysis if up.status == Upload.Status.READY else None
    if a:
        # the export's buttons show whatever the page shows of the analysis
        ctx.update(
            perfetto_ui.link_context(
                request, reverse("scenarios:upload_perfetto", args=[up.pk]) + "?inline=1"
            )
        )
        held = held_back(request.user, a)
        if held:
            ctx["held"] = held
        else:
            ctx.update(
                analysis=a,
                overview=_overview(a),
                stepped=has_steps(a),
                rank_rows=_rank_rows(a),
                rank_details=_rank_details(a),
                skipped_events=sum(pr.get("skipped_events", 0) for pr in a["per_rank"]),
                thresholds=rules.THRESHOLDS,
                kernel_gap_us=KERNEL_GAP_US,
            )
    return render(request, "scenarios/upload_detail.html", ctx)


@login_required
@require_GET
def upload_timeline(request: HttpRequest, upload_id) -> HttpResponse:
    up = _mine(request, upload_id)
    if up.status != Upload.Status.READY:
        return HttpResponse(status=404)
    return gzipped_json(request, bytes(up.timeline_gz))


@login_required
@require_GET
def upload_perfetto(request: HttpRequest, upload_id) -> HttpResponse:
    up = _mine(request, upload_id)
    if up.status != Upload.Status.READY:
        return HttpResponse(status=404)
    response = gzipped_json(request, bytes(up.perfetto_gz))
    if request.GET.get("inline") != "1":
        response["Content-Disposition"] = f'attachment; filename="upload-{up.pk.hex[:12]}.json"'
    response["Cache-Control"] = "private, no-store"
    return response


@login_required
@require_POST
def upload_delete(request: HttpRequest, upload_id) -> HttpResponse:
    up = _mine(request, upload_id)
    name = up.filename
    up.delete()
    messages.success(request, f"Deleted {name}: the file and its analysis are gone.")
    return redirect("scenarios:upload_list")
