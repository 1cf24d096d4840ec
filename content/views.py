"""The track: index, pages, walkthrough step-throughs, their traces, lab downloads, read marks."""

from __future__ import annotations

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.http import SignedInRequest
from content import pages as content_pages
from content import renarration, timelines
from content.models import ReadMark, WalkthroughSet, set_read
from content.pages import DOWNLOADS, PAGES_DIR, Page, get_page, library
from drills.models import Attempt
from drills.trainer import reveal
from drills.trainer import services as trainer_services
from scenarios import perfetto_ui
from scenarios.views import gzipped_json


def _read_slugs(request: SignedInRequest) -> set[str]:
    return set(ReadMark.objects.filter(user=request.user).values_list("slug", flat=True))


def _nav_context(request: SignedInRequest, page: Page | None) -> dict:
    lib = library()
    read = _read_slugs(request)
    prev, nxt = lib.neighbours(page) if page else (None, None)
    return {
        "sections": lib.section_pages(),
        "read": read,
        "current": page,
        "prev_page": prev,
        "next_page": nxt,
        "is_read": bool(page and page.slug in read),
    }


def _page_or_404(slug: str) -> Page:
    page = get_page(slug)
    if page is None:
        raise Http404("No such track page")
    return page


def _walkthrough_or_404(slug: str) -> Page:
    page = _page_or_404(slug)
    if not page.is_walkthrough:
        raise Http404("Not a walkthrough")
    return page


@require_GET
def index(request: SignedInRequest) -> HttpResponse:
    lib = library()
    sets = []
    for ws in WalkthroughSet.objects.all():
        sets.append({"set": ws, "pages": [lib.pages[s] for s in ws.walkthroughs if s in lib.pages]})
    context = _nav_context(request, None)
    context.update(
        {
            "walkthrough_sets": sets,
            "downloads": list(DOWNLOADS),
            "n_pages": len(lib.ordered),
            "n_read": len(context["read"] & set(lib.pages)),
        }
    )
    return TemplateResponse(request, "content/index.html", context)


@require_GET
def page(request: SignedInRequest, slug: str) -> HttpResponse:
    pg = _page_or_404(slug)
    if pg.is_walkthrough:
        return redirect(pg.url)
    context = _nav_context(request, pg)
    context["page"] = pg
    return TemplateResponse(request, "content/page.html", context)


HELD_NOTICE = (
    "You have a re-narration open: the trace of a walkthrough you read, to be told from the "
    "timeline alone. Walkthroughs and re-narration results are hidden until you commit it or "
    "give it up."
)


def _held_page(request: HttpRequest, attempt: Attempt) -> HttpResponse:
    """What a walkthrough or a re-narration result shows while a re-narration is open."""
    context = {"held_attempt": attempt, "notice": HELD_NOTICE}
    response = TemplateResponse(request, "content/narration_held.html", context)
    response["Cache-Control"] = "no-store"
    return response


def _held_trace() -> HttpResponse:
    """A walkthrough's trace asked for directly while a re-narration is open."""
    response = HttpResponse(HELD_NOTICE, status=403, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def walkthrough(request: SignedInRequest, slug: str) -> HttpResponse:
    pg = _walkthrough_or_404(slug)
    held = renarration.narrations_held(request.user)
    if held is not None:
        return _held_page(request, held)
    data = timelines.bundle(*pg.trace_args)
    key = data["key"]
    context = _nav_context(request, pg)
    context.update(
        {
            "page": pg,
            "intro_html": content_pages.walkthrough_intro_html(pg, key),
            "steps": content_pages.render_walkthrough_steps(pg, key),
            "arithmetic": key.get("arithmetic", []),
            "prompt": data["prompt"],
            **perfetto_ui.link_context(
                request, reverse("content:walkthrough_perfetto", args=[pg.slug])
            ),
        }
    )
    return TemplateResponse(request, "content/walkthrough.html", context)


@require_GET
def walkthrough_timeline(request: HttpRequest, slug: str) -> HttpResponse:
    pg = _walkthrough_or_404(slug)
    if renarration.narrations_held(request.user) is not None:
        return _held_trace()
    return gzipped_json(request, timelines.bundle(*pg.trace_args)["timeline_gz"])


@require_GET
def walkthrough_perfetto(request: HttpRequest, slug: str) -> HttpResponse:
    pg = _walkthrough_or_404(slug)
    if renarration.narrations_held(request.user) is not None:
        return _held_trace()
    response = gzipped_json(request, timelines.perfetto_gz(*pg.trace_args))
    response["Content-Disposition"] = f'attachment; filename="{pg.slug}.json"'
    return response


@require_GET
def inline_timeline(request: HttpRequest, scenario: str, seed: int) -> HttpResponse:
    # Only what the pages show: anything else would let one account generate and store traces.
    if (scenario, seed) not in content_pages.library().inline_timelines:
        raise Http404("No such timeline")
    return gzipped_json(request, timelines.bundle(scenario, seed)["timeline_gz"])


@require_GET
def download(request: HttpRequest, name: str) -> FileResponse:
    entry = DOWNLOADS.get(name)
    if entry is None:
        raise Http404("No such file")
    rel, content_type = entry
    path = PAGES_DIR.parent / rel
    response = FileResponse(
        path.open("rb"), as_attachment=True, filename=name, content_type=content_type
    )
    response["Cache-Control"] = "private, max-age=300"
    return response


@require_POST
def toggle_read(request: SignedInRequest, slug: str) -> HttpResponse:
    pg = _page_or_404(slug)
    is_read = set_read(request.user, pg.slug, request.POST.get("read"))
    if request.htmx:
        return TemplateResponse(request, "content/_readmark.html", {"page": pg, "is_read": is_read})
    return redirect(pg.url)


@require_POST
def renarration_next(request: HttpRequest) -> HttpResponse:
    try:
        attempt = renarration.start_next(request.user)
    except trainer_services.DrillInProgress as busy:
        messages.info(request, "Finish or abandon the drill you have open first.")
        return redirect(reverse("trainer:attempt", args=[busy.attempt.pk]))
    except renarration.NotDue as exc:
        messages.info(request, str(exc))
        return redirect("home")
    return redirect(reverse("trainer:attempt", args=[attempt.pk]))


@require_GET
def renarration_result(request: HttpRequest, attempt_id) -> HttpResponse:
    """The graded re-narration beside the walkthrough's narration (only after the commit)."""
    attempt = get_object_or_404(
        Attempt.objects.visible_to(request.user)
        .filter(kind=Attempt.Kind.RENARRATION)
        .select_related("trace"),
        pk=attempt_id,
    )
    if not attempt.is_submitted:
        return redirect(reverse("trainer:attempt", args=[attempt.pk]))
    held = renarration.narrations_held(request.user)
    if held is not None:
        return _held_page(request, held)
    pg = _walkthrough_or_404(attempt.item)
    key = attempt.trace.key
    context = {
        "attempt": attempt,
        "page": pg,
        "reveal": reveal.build(attempt),
        "steps": content_pages.render_walkthrough_steps(pg, key),
        "arithmetic": key.get("arithmetic", []),
    }
    response = TemplateResponse(request, "content/renarration.html", context)
    response["Cache-Control"] = "no-store"
    return response
