"""The mental-math trainer's pages: /math/ (home), single 2:00 drills, and 120-second sprints.

Thin function views over ``drills.mentalmath.services`` (the rules) and
``drills.stats.dashboard.math_stats``.
Other learners' attempts and sprints answer 404. The server's clock is the only clock.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from accounts.http import SignedInRequest
from drills.mentalmath import FAMILIES
from drills.mentalmath import services as svc
from drills.mentalmath.forms import MathAnswerForm, MathStartForm, SprintAnswerForm
from drills.mentalmath.problem import fmt, tolerance_text
from drills.models import Attempt, Card, MathAttempt, MathSprint
from drills.stats.dashboard import math_stats
from drills.stats.format import RETRIEVABILITY_NOTE, pct
from scenarios.models import Trace

RATING_LABELS = {1: "Again", 2: "Hard", 3: "Good", 4: "Easy"}


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    return response


# --------------------------------------------------------------------------- home


def _sprint_chart(sprints: list[MathSprint]) -> dict[str, Any] | None:
    """Bars of score per finished sprint, oldest left (an SVG drawn by the template)."""
    if not sprints:
        return None
    width, height, pad, gap = 640, 140, 22, 4
    top = max(max(s.score for s in sprints), 1)
    bar_w = min(36.0, (width - 2 * pad) / len(sprints) - gap)
    bars = []
    for i, s in enumerate(sprints):
        h = (height - 2 * pad) * s.score / top
        x = pad + i * (bar_w + gap)
        bars.append(
            {
                "x": round(x, 1),
                "y": round(height - pad - h, 1),
                "w": round(bar_w, 1),
                "h": round(max(h, 1.5), 1),
                "label_x": round(x + bar_w / 2, 1),
                "label_y": round(height - pad - h - 5, 1),
                "sprint": s,
            }
        )
    return {"width": width, "height": height, "base_y": height - pad, "top": top, "bars": bars}


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    now = timezone.now()
    rows = []
    for row in math_stats(request.user, now):
        family = FAMILIES.get(row["family"])
        rows.append(
            {
                **row,
                "summary": family.summary if family else "",
                "accuracy_txt": pct(row["accuracy"]),
                "retrievability_txt": pct(row["retrievability"]),
                "due_now": row["due"] is not None and row["due"] <= now,
                "startable": family is not None,
            }
        )
    history = svc.sprint_history(request.user, now)
    context = {
        "families": rows,
        "open_attempt": svc.open_attempt(request.user),
        "running_sprint": svc.running_sprint(request.user, now),
        "sprints": history[::-1][:10],
        "best": max((s.score for s in history), default=None),
        "chart": _sprint_chart(history),
        "sprint_s": svc.SPRINT_S,
        "limit_s": svc.time_limit_s(),
        "now": now,
        "retrievability_note": RETRIEVABILITY_NOTE,
    }
    return _no_store(TemplateResponse(request, "drills/math/home.html", context))


# --------------------------------------------------------------------------- single drills


@require_POST
def next_problem(request: HttpRequest) -> HttpResponse:
    form = MathStartForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Unknown mental-math family.")
        return redirect("math:home")
    attempt = svc.start_single(request.user, form.cleaned_data["family"])
    return redirect(attempt_url(attempt))


@require_POST
def from_attempt(request: HttpRequest, attempt_id) -> HttpResponse:
    """ "Practise this calculation" on a reveal: the problem is built from that attempt's stored
    key (the request carries no numbers); someone else's attempt is a 404."""
    trace_attempt = get_object_or_404(
        Attempt.objects.visible_to(request.user)
        .select_related("trace")
        .defer(*Trace.blob_paths("trace")),
        pk=attempt_id,
    )
    try:
        attempt = svc.start_from_attempt(request.user, trace_attempt)
    except svc.NoPractice as exc:
        messages.error(request, str(exc))
        return redirect("trainer:attempt", attempt_id=trace_attempt.pk)
    return redirect(attempt_url(attempt))


def attempt_url(attempt: MathAttempt) -> str:
    return reverse("math:attempt", args=[attempt.pk])


def _attempt_for(request: HttpRequest, attempt_id) -> MathAttempt:
    return get_object_or_404(MathAttempt, pk=attempt_id, user=request.user)


def _reveal(attempt: MathAttempt, *, card_due=None) -> dict[str, Any]:
    problem = svc.problem_of(attempt)
    graded = svc.check_answer(attempt, attempt.answer_text)
    return {
        "correct": bool(attempt.correct),
        "answer_text": attempt.answer_text,
        "value_txt": "—" if attempt.value is None else f"{fmt(attempt.value, 4)} {problem.unit}",
        "expected_txt": problem.answer_text,
        "tolerance_txt": tolerance_text(problem.tolerance),
        "error_txt": "—" if attempt.error is None else f"{fmt(attempt.error * 100, 2)} %",
        "message": graded.message,
        "steps": problem.steps,
        "elapsed_s": attempt.elapsed_s,
        "over_time": bool(attempt.over_time),
        "counted": attempt.counted,
        "rating": RATING_LABELS.get(attempt.rating or 0, ""),
        "card_due": card_due,
        "family_title": _family_title(attempt.family),
    }


def _source_url(attempt: MathAttempt) -> str | None:
    source = svc.source_of(attempt)
    try:
        return reverse("trainer:attempt", args=[uuid.UUID(str(source))]) if source else None
    except ValueError:
        return None


def _family_title(key: str) -> str:
    family = FAMILIES.get(key)
    return family.title if family else key


def _attempt_page(
    request: HttpRequest,
    attempt: MathAttempt,
    form: MathAnswerForm | None,
    *,
    status: int = 200,
    partial: bool = False,
) -> HttpResponse:
    limit = svc.time_limit_s()
    elapsed = (timezone.now() - attempt.served_at).total_seconds()
    reveal = None
    if attempt.submitted_at is not None:
        due = (
            Card.objects.filter(user=attempt.user, kind=Card.Kind.MATH, item=attempt.family)
            .values_list("due", flat=True)
            .first()
        )
        reveal = _reveal(attempt, card_due=due)
    context = {
        "attempt": attempt,
        "problem": svc.problem_of(attempt),
        "family_title": _family_title(attempt.family),
        "form": form if reveal is None else None,
        "limit_s": limit,
        "remaining_s": max(0.0, limit - elapsed),
        "reveal": reveal,
        "in_sprint": attempt.sprint_id is not None,
        "source_url": _source_url(attempt),
    }
    template = "drills/math/attempt.html#math" if partial else "drills/math/attempt.html"
    return _no_store(TemplateResponse(request, template, context, status=status))


@require_GET
def attempt_detail(request: HttpRequest, attempt_id) -> HttpResponse:
    attempt = _attempt_for(request, attempt_id)
    if attempt.sprint_id is not None and attempt.submitted_at is None:
        return redirect("math:sprint", sprint_id=attempt.sprint_id)
    return _attempt_page(request, attempt, MathAnswerForm())


@require_POST
def submit_answer(request: SignedInRequest, attempt_id) -> HttpResponse:
    attempt = _attempt_for(request, attempt_id)
    if attempt.submitted_at is not None:
        return _after_answer(request, attempt)
    form = MathAnswerForm(request.POST)
    if form.is_valid():
        result = svc.submit_answer(attempt, form.cleaned_data["answer"])
        if result.graded.parsed or result.attempt.submitted_at is not None:
            return _after_answer(request, result.attempt)
        form.add_error("answer", f"{result.graded.message}. Nothing was recorded; answer again.")
    # htmx 2 does not swap 4xx responses; the partial carries the error with a 200 there.
    status = 200 if request.htmx else 400
    return _attempt_page(request, attempt, form, status=status, partial=bool(request.htmx))


def _after_answer(request: SignedInRequest, attempt: MathAttempt) -> HttpResponse:
    if request.htmx:
        return _attempt_page(request, attempt, None, partial=True)
    return redirect(attempt_url(attempt))


# --------------------------------------------------------------------------- sprints


def _sprint_for(request: HttpRequest, sprint_id) -> MathSprint:
    return get_object_or_404(MathSprint, pk=sprint_id, user=request.user)


@require_POST
def start_sprint(request: HttpRequest) -> HttpResponse:
    sprint = svc.start_sprint(request.user)
    return redirect("math:sprint", sprint_id=sprint.pk)


def _feedback(attempt: MathAttempt | None) -> dict[str, Any] | None:
    if attempt is None or attempt.submitted_at is None:
        return None
    return {"attempt": attempt, "problem": svc.problem_of(attempt), **_reveal(attempt)}


def _sprint_page(
    request: HttpRequest,
    sprint: MathSprint,
    *,
    last: MathAttempt | None = None,
    form: SprintAnswerForm | None = None,
    current: MathAttempt | None = None,
    status: int = 200,
    partial: bool = False,
) -> HttpResponse:
    now = timezone.now()
    if current is None or current.submitted_at is not None:
        current = svc.current_problem(sprint)
        form = None
    over = current is None
    if current is not None and form is None:
        form = SprintAnswerForm(initial={"attempt": current.pk})
    summary = None
    if over:
        answered = list(sprint.attempts.graded().order_by("served_at"))
        summary = []
        for a in answered:
            problem = svc.problem_of(a)
            summary.append(
                {
                    "attempt": a,
                    "title": _family_title(a.family),
                    "in_time": a.submitted_at is not None and a.submitted_at <= sprint.ends_at,
                    "value_txt": "—" if a.value is None else f"{fmt(a.value, 4)} {problem.unit}",
                    "expected_txt": problem.answer_text,
                }
            )
    sprint.refresh_from_db(fields=["score", "attempted"])
    context = {
        "sprint": sprint,
        "over": over,
        "remaining_s": max(0.0, (sprint.ends_at - now).total_seconds()),
        "sprint_s": svc.SPRINT_S,
        "current": current,
        "problem": svc.problem_of(current) if current is not None else None,
        "family_title": _family_title(current.family) if current is not None else "",
        "form": form,
        "last": _feedback(last),
        "summary": summary,
    }
    template = "drills/math/sprint.html#sprint" if partial else "drills/math/sprint.html"
    return _no_store(TemplateResponse(request, template, context, status=status))


@require_GET
def sprint_detail(request: HttpRequest, sprint_id) -> HttpResponse:
    sprint = _sprint_for(request, sprint_id)
    last = None
    raw = request.GET.get("last")
    if raw:
        try:
            last = sprint.attempts.graded().filter(pk=uuid.UUID(raw)).first()
        except ValueError:
            last = None
    return _sprint_page(request, sprint, last=last)


@require_POST
def sprint_answer(request: SignedInRequest, sprint_id) -> HttpResponse:
    sprint = _sprint_for(request, sprint_id)
    form = SprintAnswerForm(request.POST)
    partial = bool(request.htmx)
    attempt_id = form.data.get("attempt")
    try:
        attempt = sprint.attempts.filter(pk=uuid.UUID(str(attempt_id))).first()
    except ValueError:
        attempt = None
    if attempt is None:
        # No such problem in this sprint: show where the sprint stands, record nothing.
        return _sprint_page(request, sprint, status=200 if partial else 400, partial=partial)
    if attempt.submitted_at is not None:
        return _after_sprint_answer(request, sprint, attempt)
    if form.is_valid():
        result = svc.submit_answer(attempt, form.cleaned_data["answer"])
        if result.graded.parsed or result.attempt.submitted_at is not None:
            return _after_sprint_answer(request, sprint, result.attempt)
        form.add_error("answer", f"{result.graded.message}. Nothing was recorded; answer again.")
    return _sprint_page(
        request,
        sprint,
        form=form,
        current=attempt,
        status=200 if partial else 400,
        partial=partial,
    )


def _after_sprint_answer(
    request: SignedInRequest, sprint: MathSprint, attempt: MathAttempt
) -> HttpResponse:
    if request.htmx:
        return _sprint_page(request, sprint, last=attempt, partial=True)
    url = reverse("math:sprint", args=[sprint.pk])
    return redirect(f"{url}?last={attempt.pk}")
