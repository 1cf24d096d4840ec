from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.http import SignedInRequest
from drills.interview import services
from drills.models import MockInterview
from drills.trainer import services as trainer_services


def _own(request: SignedInRequest, interview_id) -> MockInterview:
    return get_object_or_404(MockInterview.objects.filter(user=request.user), pk=interview_id)


@require_GET
def home(request: SignedInRequest) -> HttpResponse:
    unfinished = services.unfinished(request.user)
    if unfinished is not None and services.finish_if_done(unfinished):
        unfinished = None  # open past its hour: ended where it stood
    past = MockInterview.objects.filter(user=request.user).order_by("-started_at")[:20]
    return TemplateResponse(
        request,
        "drills/interview/home.html",
        {"past": past, "unfinished": unfinished, "size": MockInterview.SIZE},
    )


@require_POST
def start(request: HttpRequest) -> HttpResponse:
    interview = services.start(request.user)
    return redirect(reverse("interview:detail", args=[interview.pk]))


@require_GET
def detail(request: SignedInRequest, interview_id) -> HttpResponse:
    """Between traces: how far along, and the button to the next; once all five are graded,
    the report."""
    interview = _own(request, interview_id)
    finished = services.finish_if_done(interview)
    context = {"size": MockInterview.SIZE, **services.report(interview)}
    context["finished"] = finished
    # ended where it stood, open past its hour, before its last trace was answered
    context["ended_early"] = finished and len(context["traces"]) < MockInterview.SIZE
    context["open_for_minutes"] = int(services.OPEN_FOR.total_seconds() // 60)
    context["owner"] = True
    response = TemplateResponse(request, "drills/interview/report.html", context)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def next_trace(request: SignedInRequest, interview_id) -> HttpResponse:
    interview = _own(request, interview_id)
    if interview.is_finished:
        return redirect(reverse("interview:detail", args=[interview.pk]))
    if services.close_expired(interview):
        messages.warning(
            request,
            "The clock ran out on the trace you had open before an answer was sent: the report "
            "counts it as out of time, with no answer.",
        )
    try:
        attempt = services.next_attempt(interview)
    except trainer_services.DrillInProgress as busy:
        messages.info(request, "Finish or abandon the drill you have open before the interview.")
        return redirect(reverse("trainer:attempt", args=[busy.attempt.pk]))
    if attempt is None:
        return redirect(reverse("interview:detail", args=[interview.pk]))
    return redirect(reverse("trainer:attempt", args=[attempt.pk]))


@require_POST
def share(request: SignedInRequest, interview_id) -> HttpResponse:
    interview = _own(request, interview_id)
    if not interview.is_finished:
        raise Http404("Finish the interview before sharing its report.")
    services.set_shared(interview, request.POST.get("shared") == "1")
    return redirect(reverse("interview:detail", args=[interview.pk]))
