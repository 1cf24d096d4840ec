from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from drills import scheduling
from drills.contrast import services
from drills.contrast.forms import TrialForm
from drills.models import Attempt
from drills.trainer import services as trainer_services
from scenarios import engine
from scenarios.models import Trace


def _trial_for(request: HttpRequest, attempt_id) -> Attempt:
    trials = (
        Attempt.objects.visible_to(request.user)
        .filter(kind=Attempt.Kind.CONTRAST)
        .select_related("trace", "partner")
        .defer(*Trace.blob_paths("trace"), *Trace.blob_paths("partner"))
    )
    return get_object_or_404(trials, pk=attempt_id)


@require_GET
def trial(request: HttpRequest, attempt_id) -> HttpResponse:
    return _page(request, _trial_for(request, attempt_id), TrialForm())


@require_POST
def answer(request: HttpRequest, attempt_id) -> HttpResponse:
    attempt = _trial_for(request, attempt_id)
    if not attempt.is_submitted:
        form = TrialForm(request.POST)
        if not form.is_valid():
            return _page(request, attempt, form, status=400)
        services.submit(attempt, form.cleaned_data["side"], form.cleaned_data["measurement"])
    elif notice := trainer_services.answer_too_late_notice(attempt):
        messages.warning(request, notice)
    return redirect(reverse("contrast:trial", args=[attempt.pk]))


def _page(request: HttpRequest, attempt: Attempt, form: TrialForm, *, status: int = 200):
    a, b = scheduling.pair_of(attempt.item)
    context = {
        "attempt": attempt,
        # The workload is the same on both sides (one draw): its line names no scenario.
        "workload": {k: attempt.trace.prompt.get(k, "") for k in ("hardware", "workload")},
        "asked_title": engine.title_of(attempt.scenario),
        "pair_titles": sorted((engine.title_of(a), engine.title_of(b))),
        "form": None if attempt.is_submitted else form,
        "remaining_s": services.remaining_s(attempt, timezone.now()),
        "limit_s": services.LIMIT_S,
        "reveal": services.reveal(attempt) if attempt.is_submitted else None,
    }
    response = TemplateResponse(request, "drills/contrast/trial.html", context, status=status)
    response["Cache-Control"] = "no-store"
    return response
