from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from accounts.http import SignedInRequest
from drills.interview import services as interviews
from drills.models import Attempt
from drills.trainer import fixed, reveal, services
from drills.trainer.forms import DiagnosisForm, StartForm
from scenarios import perfetto_ui
from scenarios.models import Trace


def _attempt_for(request: HttpRequest, attempt_id) -> Attempt:
    attempts = Attempt.objects.visible_to(request.user).select_related("trace")
    # The page streams the trace from /traces/<id>/…: its stored bytes are never loaded here.
    return get_object_or_404(attempts.defer(*Trace.blob_paths("trace")), pk=attempt_id)


@require_GET
def trainer(request: HttpRequest) -> HttpResponse:
    return _trainer_page(request)


def _trainer_page(request: HttpRequest, status: int = 200) -> HttpResponse:
    return TemplateResponse(
        request,
        "drills/trainer.html",
        {
            "open_attempt": services.open_attempt(request.user),
            "modes": Attempt.Mode.choices,
            "recent": Attempt.objects.visible_to(request.user)
            .revealed()
            .order_by("-submitted_at")[:10],
        },
        status=status,
    )


@require_POST
def next_drill(request: SignedInRequest) -> HttpResponse:
    form = StartForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Unknown drill mode.")
        return redirect("trainer:home")
    try:
        attempt = _next_drill(request.user, form.cleaned_data["mode"])
    except services.InterviewUnderWay as busy:
        messages.info(
            request,
            "Your mock interview is still under way: finish it first. Its traces come one after "
            "another, and no other drill is dealt until its report.",
        )
        return _redirect(request, reverse("interview:detail", args=[busy.interview.pk]))
    except services.TooManyDrills:
        messages.error(
            request,
            f"You have started {services.claims_per_hour()} drills in the last hour: "
            "take a break and come back in a while.",
        )
        return _trainer_page(request, status=429)
    if request.htmx and attempt.kind == Attempt.Kind.CONTRAST:
        response = HttpResponse(status=204)  # a trial has its own page
        response["HX-Redirect"] = attempt_url(attempt)
        return response
    if request.htmx:
        response = _attempt_page(request, attempt, DiagnosisForm(), partial=True)
        response["HX-Push-Url"] = attempt_url(attempt)
        return response
    return redirect(attempt_url(attempt))


def _next_drill(user, mode: str) -> Attempt:
    """``services.next_drill``, after ending a mock interview left open past its hour."""
    try:
        attempt, _ = services.next_drill(user, mode)
    except services.InterviewUnderWay as busy:
        if not interviews.finish_if_done(busy.interview):
            raise
        attempt, _ = services.next_drill(user, mode)
    return attempt


def _redirect(request: SignedInRequest, url: str) -> HttpResponse:
    """A redirect an htmx request follows too (it would swap the target page into the form)."""
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def attempt_url(attempt: Attempt) -> str:
    if attempt.kind == Attempt.Kind.CONTRAST:
        return reverse("contrast:trial", args=[attempt.pk])
    return reverse("trainer:attempt", args=[attempt.pk])


@require_GET
def attempt_detail(request: HttpRequest, attempt_id) -> HttpResponse:
    attempt = _attempt_for(request, attempt_id)
    if attempt.kind == Attempt.Kind.CONTRAST:
        return redirect(attempt_url(attempt))
    follow = _follow_up_url(attempt) if attempt.is_submitted else None
    if follow is not None:
        return redirect(follow)
    return _attempt_page(request, attempt, DiagnosisForm())


@require_GET
def after_fix(request: HttpRequest, attempt_id) -> HttpResponse:
    """The reveal's "after the fix" (loaded by the reveal once shown): the trace regenerated with
    the fix applied, or "being drawn" (asked again shortly) while the worker makes it. Nothing
    before the commit (its step time is the answer's), nor while the attempt's reveal waits
    elsewhere (a mock interview's trace before the report: "Nothing needed fixing" names a
    healthy trace) or continues elsewhere (a re-narration's narration page)."""
    attempt = _attempt_for(request, attempt_id)
    if services.reveal_withheld(attempt) or _follow_up_url(attempt) is not None:
        raise Http404("No reveal yet.")
    shown = fixed.after_fix(attempt)
    context = {"after_fix": shown, "attempt_id": attempt.pk}
    response = TemplateResponse(request, "drills/_after_fix.html", context)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def abandon(request: HttpRequest, attempt_id) -> HttpResponse:
    """Give up the open drill: it is graded as a miss and the next drill can be dealt."""
    attempt = _attempt_for(request, attempt_id)
    if not attempt.is_submitted:
        attempt = services.close_attempt(attempt, "abandoned")
    return redirect(attempt_url(attempt))


@require_POST
def submit_diagnosis(request: SignedInRequest, attempt_id) -> HttpResponse:
    attempt = _attempt_for(request, attempt_id)
    if attempt.kind == Attempt.Kind.CONTRAST:  # answered on its own page, with its own form
        return redirect(attempt_url(attempt))
    if attempt.is_submitted:
        return _answer_too_late(request, attempt) or _after_submit(request, attempt)
    form = DiagnosisForm(request.POST)
    if not form.is_valid():
        if request.htmx:
            return _form_errors(request, attempt, form)
        return _attempt_page(request, attempt, form, status=400)
    attempt, graded_now = services.submit_diagnosis(attempt, form.diagnosis())
    # not graded: an interview trace answered past its clock, or closed meanwhile (in another
    # tab, or by its interview's end) while this answer was on its way
    if not graded_now and (late := _answer_too_late(request, attempt)):
        return late
    return _after_submit(request, attempt)


def _answer_too_late(request: SignedInRequest, attempt: Attempt) -> HttpResponse | None:
    """An answer sent to an attempt closed without one (given up in another tab, closed as
    expired): nothing is recorded, and the page the learner lands on says so (the interview's,
    for a trace of one still under way). An htmx request reloads the page, since the swapped-in
    reveal has no place for the message."""
    notice = services.answer_too_late_notice(attempt)
    if notice is None:
        return None
    messages.warning(request, notice)
    return _redirect(request, _follow_up_url(attempt) or attempt_url(attempt))


def _form_errors(request: HttpRequest, attempt: Attempt, form: DiagnosisForm) -> HttpResponse:
    """A refused diagnosis sent by htmx: only the form comes back, in place of the form, so the
    timeline keeps its zoom, selection and measurements (and the checklist its ticks) while the
    learner corrects a field."""
    response = TemplateResponse(
        request,
        "drills/attempt.html#diagnosis-form",
        {"attempt": attempt, "form": form},
        status=400,
    )
    response["HX-Retarget"] = "#diagnosis-form"
    response["HX-Reswap"] = "outerHTML"
    response["Cache-Control"] = "no-store"
    return response


def _follow_up_url(attempt: Attempt) -> str | None:
    """Where a graded attempt of another kind continues: a re-narration to its narration page
    (the content app's), an interview trace to the interview's next trace or its report."""
    if attempt.kind == Attempt.Kind.RENARRATION:
        return reverse("content:renarration", args=[attempt.pk])
    interview = attempt.interview if attempt.interview_id is not None else None
    if attempt.kind == Attempt.Kind.INTERVIEW and interview and not interview.is_finished:
        return reverse("interview:detail", args=[interview.pk])
    return None


def _after_submit(request: SignedInRequest, attempt: Attempt) -> HttpResponse:
    follow = _follow_up_url(attempt)
    if follow is not None:
        return _redirect(request, follow)
    if request.htmx:
        return _attempt_page(request, attempt, None, partial=True)
    return redirect(attempt_url(attempt))


def _attempt_page(
    request: HttpRequest,
    attempt: Attempt,
    form: DiagnosisForm | None,
    *,
    status: int = 200,
    partial: bool = False,
) -> HttpResponse:
    limit = services.time_limit_s()
    context = {
        "attempt": attempt,
        "prompt": attempt.trace.prompt,
        "form": form,
        "limit_s": limit,
        # Perfetto-only drills show the loading allowance on top of the clock.
        "remaining_s": services.display_remaining_s(attempt, timezone.now()),
        "timed": attempt.mode != Attempt.Mode.PRACTICE,
        "load_allowance_s": services.load_allowance_s(attempt.mode),
        "perfetto_only": attempt.mode == Attempt.Mode.PERFETTO,
        "reveal": reveal.build(attempt) if attempt.is_submitted else None,
        **perfetto_ui.link_context(request, reverse("scenarios:perfetto", args=[attempt.trace_id])),
    }
    template = "drills/attempt.html#drill" if partial else "drills/attempt.html"
    response = TemplateResponse(request, template, context, status=status)
    response["Cache-Control"] = "no-store"
    return response
