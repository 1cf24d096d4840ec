"""Cohort views: thin; scoping lives in the querysets, numbers in ``progress``.

Every cohort URL fetches through ``Cohort.objects.taught_by(user)`` (instructor pages) with
``get_object_or_404``: a learner, an unrelated instructor or a wrong id all get the same 404.
"""

from __future__ import annotations

import copy
import csv

from django.contrib import messages
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_http_methods, require_POST

from accounts.http import SignedInRequest
from accounts.roles import is_instructor
from drills.contrast import services as contrast
from drills.interview import services as interviews
from drills.models import Attempt, MockInterview
from drills.stats.charts import sentence_table
from drills.stats.dashboard import sentence_accuracy_over_time
from drills.stats.tables import sentence_table_html
from drills.trainer import reveal
from scenarios.engine import title_of
from scenarios.views import gzipped_json

from . import progress, render
from .forms import (
    AssignmentDatesForm,
    AssignmentForm,
    CohortForm,
    CoInstructorForm,
    ExtensionForm,
    JoinForm,
    archived_join_text,
    utc_text,
)
from .models import Assignment, Cohort, Extension, Membership, normalise_code


def _taught(request: HttpRequest, cohort_id: int) -> Cohort:
    if not is_instructor(request.user):
        raise Http404("No such cohort.")
    return get_object_or_404(Cohort.objects.taught_by(request.user), pk=cohort_id)


def _csv_safe(value: object) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


# --------------------------------------------------------------------------- list, create, join


@require_http_methods(["GET"])
def cohort_list(request: HttpRequest) -> HttpResponse:
    teaching = is_instructor(request.user)
    taught = (
        Cohort.objects.taught_by(request.user).annotate(n_members=Count("members", distinct=True))
        if teaching
        else Cohort.objects.none()
    )
    context = {
        "is_instructor": teaching,
        "taught": taught.active(),
        "archived": taught.archived().order_by("-archived_at", "name"),
        "joined": Cohort.objects.joined_by(request.user).active().prefetch_related("instructors"),
        "assignments": progress.learner_assignments(request.user, timezone.now()),
        "join_form": JoinForm(),
        "create_form": CohortForm() if teaching else None,
    }
    return TemplateResponse(request, "cohorts/list.html", context)


@require_http_methods(["GET", "POST"])
def cohort_new(request: SignedInRequest) -> HttpResponse:
    if not is_instructor(request.user):
        raise Http404("Only instructors create cohorts.")
    form = CohortForm(request.POST or None, user=request.user)
    cohort = form.save_for(request.user) if request.method == "POST" else None
    if cohort is not None:
        messages.success(request, f"Cohort created. Learners join with code {cohort.join_code}.")
        return redirect("cohorts:detail", cohort_id=cohort.pk)
    made = form.resubmitted(request.user) if request.method == "POST" else None
    if made is not None:
        messages.info(request, already_created_text(made))
        return redirect("cohorts:detail", cohort_id=made.pk)
    status = 400 if request.method == "POST" else 200
    return TemplateResponse(request, "cohorts/new.html", {"form": form}, status=status)


def already_created_text(cohort: Cohort) -> str:
    """What an instructor reads after sending "Create cohort" again for a cohort just made."""
    return (
        f"{cohort.name} was already created (the form was sent twice); this is it, and no "
        f"second cohort was made. Learners join with code {cohort.join_code}."
    )


def _join(request: SignedInRequest, cohort: Cohort) -> HttpResponse:
    if cohort.archived:
        messages.error(request, archived_join_text(cohort))
        return redirect("cohorts:list")
    if cohort.instructors.filter(pk=request.user.pk).exists():
        messages.info(request, f"You teach {cohort.name}; instructors do not join as learners.")
        return redirect("cohorts:detail", cohort_id=cohort.pk)
    try:
        with transaction.atomic():
            Membership.objects.create(cohort=cohort, user=request.user)
    except IntegrityError:
        messages.info(request, f"You are already in {cohort.name}.")
    else:
        messages.success(request, f"You joined {cohort.name}.")
    return redirect("cohorts:list")


@require_http_methods(["GET", "POST"])
def join(request: SignedInRequest) -> HttpResponse:
    form = JoinForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        assert form.cohort is not None
        return _join(request, form.cohort)
    status = 400 if request.method == "POST" else 200
    return TemplateResponse(request, "cohorts/join.html", {"form": form}, status=status)


@require_http_methods(["GET", "POST"])
def join_link(request: SignedInRequest, code: str) -> HttpResponse:
    cohort = (
        Cohort.objects.filter(join_code=normalise_code(code))
        .prefetch_related("instructors")
        .first()
    )
    if cohort is None or cohort.archived:
        form = JoinForm({"code": code}, user=request.user)
        form.is_valid()  # fills in the clear error message
        status = 404 if cohort is None else 400
        return TemplateResponse(request, "cohorts/join.html", {"form": form}, status=status)
    if request.method == "POST":
        return _join(request, cohort)
    already = cohort.memberships.filter(user=request.user).exists()
    return TemplateResponse(
        request, "cohorts/join_confirm.html", {"cohort": cohort, "already": already}
    )


@require_http_methods(["GET", "POST"])
def leave(request: SignedInRequest, cohort_id: int) -> HttpResponse:
    """A learner leaves a cohort they joined: the cohort's list's "Leave" asks here first (a
    page, so it works without JavaScript), and only the confirmation's POST leaves. Their
    drills, cards and dashboard are theirs and stay; the cohort's pages and CSVs stop listing
    them, and their extensions there go (as when an instructor removes them)."""
    membership = (
        Membership.objects.select_related("cohort")
        .filter(cohort_id=cohort_id, user=request.user)
        .first()
    )
    if membership is None:
        if request.method == "POST":  # left already (clicked twice): calm, and names nothing
            messages.info(request, NOT_IN_COHORT_TEXT)
            return redirect("cohorts:list")
        raise Http404("No such cohort.")
    cohort = membership.cohort
    if request.method == "GET" or request.POST.get("confirm") != "yes":
        return TemplateResponse(request, "cohorts/leave_confirm.html", {"cohort": cohort})
    with transaction.atomic():
        Extension.objects.filter(assignment__cohort=cohort, learner=request.user).delete()
        membership.delete()
    messages.success(request, left_text(cohort))
    return redirect("cohorts:list")


NOT_IN_COHORT_TEXT = "You are not in that cohort (already left?): nothing was changed."


def left_text(cohort: Cohort) -> str:
    """What a learner reads after leaving a cohort."""
    return (
        f"You left {cohort.name}. Its instructors no longer see your progress; your drills and "
        "dashboard are unchanged. To come back, join again with its code."
    )


# --------------------------------------------------------------------------- instructor pages


def _drawn_numbers(cohort: Cohort, grid: dict) -> dict[str, SafeString]:
    """The per-sentence table and the confusion matrix, drawn once per state of the cohort's
    numbers and kept with their snapshot (same key): neither reads a card, a name or the clock
    (but for the UTC day, which is in the key)."""
    key = grid["snapshot_key"]
    drawn = progress.snapshot_part(key, "drawn")
    if drawn is None:
        weeks = sentence_accuracy_over_time(
            None, now=timezone.now(), week_rows=grid["sentence_weeks"]
        )
        drawn = {
            "sentences": str(sentence_table_html(sentence_table(weeks))),
            "confusion": str(render.confusion_table(grid["confusion"])),
        }
        progress.snapshot_store(key, "drawn", drawn)
    return {name: mark_safe(html) for name, html in drawn.items()}


def instructor_rows(cohort: Cohort, viewer) -> list[dict]:
    """The cohort's instructors by name, each with whether ``viewer`` may take them off (or,
    for themselves, leave)."""
    teachers = list(cohort.instructors.order_by("username"))
    ids = {t.pk for t in teachers}
    return [
        {"user": t, "removable": cohort.instructor_removal_refused(viewer, t, ids) is None}
        for t in teachers
    ]


@require_http_methods(["GET"])
def detail(request: HttpRequest, cohort_id: int) -> HttpResponse:
    cohort = _taught(request, cohort_id)
    sort = progress.parse_sort(request.GET.get("sort"))
    try:
        page = int(request.GET.get("page") or 1)
    except ValueError:
        page = 1
    grid = progress.cohort_grid(
        cohort, timezone.now(), sort=sort, descending=request.GET.get("dir") == "desc", page=page
    )
    render.add_row_html(grid, cohort, get_token(request))
    metric = "r" if sort.startswith("r:") or request.GET.get("metric") == "r" else "acc"
    context = {
        "cohort": cohort,
        "grid": grid,
        "roster": render.roster_controls(grid, metric),
        "instructors": instructor_rows(cohort, request.user),
        "invite_url": request.build_absolute_uri(
            reverse("cohorts:join_link", kwargs={"code": cohort.join_code})
        ),
        "co_form": CoInstructorForm(
            cohort=cohort, initial={"username": request.session.pop(_co_typed_key(cohort), "")}
        ),
        "drawn": _drawn_numbers(cohort, grid),
    }
    return TemplateResponse(request, "cohorts/detail.html", context)


@require_POST
def archive(request: HttpRequest, cohort_id: int) -> HttpResponse:
    """Archive the cohort: out of everyone's active lists, closed to joining and to new
    assignments; its pages and CSVs stay open to its instructors. Nothing is deleted."""
    cohort = _taught(request, cohort_id)
    if Cohort.objects.filter(pk=cohort.pk, archived_at__isnull=True).update(
        archived_at=timezone.now()
    ):
        messages.success(
            request,
            f"Archived {cohort.name}. Learners no longer see it or its assignments, and its join "
            "code no longer works; its progress and CSVs stay here. Unarchive it to reopen it.",
        )
    else:
        messages.info(request, f"{cohort.name} was already archived: nothing was changed.")
    return redirect("cohorts:detail", cohort_id=cohort.pk)


@require_POST
def unarchive(request: HttpRequest, cohort_id: int) -> HttpResponse:
    cohort = _taught(request, cohort_id)
    if Cohort.objects.filter(pk=cohort.pk, archived_at__isnull=False).update(archived_at=None):
        messages.success(
            request,
            f"{cohort.name} is active again: learners see it and its assignments, and its join "
            f"code {cohort.join_code} works again.",
        )
    else:
        messages.info(request, f"{cohort.name} is not archived: nothing was changed.")
    return redirect("cohorts:detail", cohort_id=cohort.pk)


# Written first in every CSV download: without the byte-order mark Excel reads the UTF-8 file
# in the machine's legacy code page, and a learner named "Zoë" reads "ZoÃ«".
CSV_BOM = "\ufeff"


@require_http_methods(["GET"])
def export_csv(request: HttpRequest, cohort_id: int) -> HttpResponse:
    cohort = _taught(request, cohort_id)
    grid = progress.cohort_grid(cohort, timezone.now())
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="cohort-{cohort.pk}-progress.csv"'
    response.write(CSV_BOM)
    writer = csv.writer(response)
    for row in progress.grid_csv_rows(grid):
        writer.writerow([_csv_safe(v) for v in row])
    return response


class _Echo:
    def write(self, value: str) -> str:
        return value


@require_http_methods(["GET"])
def attempts_csv(request: HttpRequest, cohort_id: int) -> StreamingHttpResponse:
    cohort = _taught(request, cohort_id)
    fields = [
        "user__username", "id", "scenario", "answer_step_ms", "step_correct",
        "answer_gap_ms", "gap_correct", "answer_scenario", "scenario_correct",
        "answer_measurement", "measurement_correct", "answer_measurement_value",
        "value_correct", "answer_fix", "fix_correct", "answer_expected_ms",
        "expected_correct", "win_correct", "answer_arithmetic", "five_sentence", "mode",
        "kind", "item", "interview_id", "served_at", "submitted_at", "elapsed_s", "over_time",
        "rating",
    ]  # fmt: skip
    rows = (
        Attempt.objects.of_learners(Membership.objects.filter(cohort=cohort).values("user_id"))
        .revealed()  # a mock interview's traces once it has ended
        .order_by("user__username", "submitted_at")
        .values_list(*fields)
    )
    writer = csv.writer(_Echo())
    header = ["username", *fields[1:]]

    def stream():
        yield CSV_BOM + writer.writerow(header)
        for row in rows.iterator(chunk_size=2000):
            yield writer.writerow([_csv_safe(v) for v in row])

    response = StreamingHttpResponse(stream(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="cohort-{cohort.pk}-attempts.csv"'
    return response


@require_http_methods(["GET"])
def learner_detail(request: HttpRequest, cohort_id: int, user_id: int) -> HttpResponse:
    cohort = _taught(request, cohort_id)
    membership = get_object_or_404(
        Membership.objects.select_related("user"), cohort=cohort, user_id=user_id
    )
    learner = membership.user
    now = timezone.now()
    counts = progress.attempt_counts([learner.pk])
    stats = progress.scenario_stats([learner.pk], now, counts=counts).get(learner.pk, {})
    scen = progress.scenarios()
    context = {
        "cohort": cohort,
        "membership": membership,
        "learner": learner,
        "rows": [(s, stats.get(s.slug) or progress.ScenarioCell()) for s in scen],
        "confusion_html": render.confusion_table(progress.confusion([learner.pk], counts=counts)),
        "assignments": progress.learner_assignments(learner, now, cohort=cohort),
        "recent": [
            # the names on the drill form, not the slugs
            {
                **a,
                "scenario_title": title_of(a["scenario"]),
                "answer_title": title_of(a["answer_scenario"]) if a["answer_scenario"] else "",
                "kind_label": attempt_kind_label(a["kind"], a["mode"]),
            }
            for a in Attempt.objects.filter(user=learner)
            .revealed()
            .order_by("-submitted_at")
            .values(
                "pk",
                "scenario",
                "answer_scenario",
                "scenario_correct",
                "elapsed_s",
                "submitted_at",
                "kind",
                "mode",
            )[:20]
        ],
        "titles": {s.slug: s.title for s in scen},
        "interviews": shared_interviews(cohort).filter(user=learner).order_by("-finished_at"),
        "sentence_html": sentence_table_html(
            sentence_table(sentence_accuracy_over_time(learner, now=now))
        ),
    }
    return TemplateResponse(request, "cohorts/learner.html", context)


def attempt_kind_label(kind: str, mode: str) -> str:
    """The "Kind" column of a learner's last drills: the kind, and the mode when it is not the
    timed one (an untimed practice drill was listed as a plain "drill")."""
    label = Attempt.Kind(kind).label
    if mode == Attempt.Mode.TIMED:
        return label
    return f"{label} · {Attempt.Mode(mode).label.lower()}"


def _learners_graded_attempt(request: HttpRequest, cohort_id: int, user_id: int, attempt_id):
    """A cohort learner's submitted attempt, for that cohort's instructors; 404 for anyone else,
    for another cohort's learner, for an attempt still open (its answer is not out yet) and for
    a trace of a mock interview still under way."""
    cohort = _taught(request, cohort_id)
    membership = get_object_or_404(
        Membership.objects.select_related("user"), cohort=cohort, user_id=user_id
    )
    attempt = get_object_or_404(
        Attempt.objects.revealed().select_related("trace", "partner"),
        pk=attempt_id,
        user_id=user_id,
    )
    return cohort, membership.user, attempt


@require_http_methods(["GET"])
def learner_attempt(request: HttpRequest, cohort_id: int, user_id: int, attempt_id) -> HttpResponse:
    cohort, learner, attempt = _learners_graded_attempt(request, cohort_id, user_id, attempt_id)
    if attempt.kind == Attempt.Kind.CONTRAST:  # two traces and a pick, not a diagnosis
        trial = {"cohort": cohort, "learner": learner, "attempt": attempt}
        trial["reveal"] = contrast.reveal(attempt)
        trial["asked_title"] = title_of(attempt.scenario)
        return TemplateResponse(request, "cohorts/trial.html", trial)
    context = {
        "cohort": cohort,
        "learner": learner,
        "attempt": attempt,
        "prompt": attempt.trace.prompt,
        "reveal": reveal.build(attempt),
        "read_only": True,
    }
    return TemplateResponse(request, "cohorts/attempt.html", context)


@require_http_methods(["GET"])
def learner_attempt_timeline(
    request: HttpRequest, cohort_id: int, user_id: int, attempt_id
) -> HttpResponse:
    _c, _l, attempt = _learners_graded_attempt(request, cohort_id, user_id, attempt_id)
    return gzipped_json(request, bytes(attempt.trace.timeline_gz))


def shared_interviews(cohort: Cohort):
    """Finished mock interviews the cohort's members chose to share with its instructors."""
    return MockInterview.objects.filter(
        shared_at__isnull=False,
        finished_at__isnull=False,
        user__cohort_memberships__cohort=cohort,
    )


@require_http_methods(["GET"])
def shared_interview(request: HttpRequest, cohort_id: int, interview_id) -> HttpResponse:
    """A member's shared interview report, read-only; 404 unless shared and the viewer teaches
    a cohort the learner is in."""
    cohort = _taught(request, cohort_id)
    interview = get_object_or_404(shared_interviews(cohort).select_related("user"), pk=interview_id)
    context = {
        **interviews.report(interview),
        "finished": True,
        "owner": False,
        "size": MockInterview.SIZE,
        "viewer_note": f"Shared by {interview.user.get_username()} with the instructors of "
        f"{cohort.name}.",
    }
    response = TemplateResponse(request, "drills/interview/report.html", context)
    response["Cache-Control"] = "no-store"
    return response


# --------------------------------------------------------------------------- assign, extend


def _assign_page(request, cohort, form, ext_forms=None, status=200) -> HttpResponse:
    assignments = list(cohort.assignments.select_related("walkthrough_set"))
    ext_forms = ext_forms or {}
    extensions: dict[int, list[Extension]] = {}
    for e in Extension.objects.filter(assignment__cohort=cohort).select_related("learner"):
        extensions.setdefault(e.assignment_id, []).append(e)
    items = [
        {
            "assignment": a,
            "extensions": extensions.get(a.pk, []),
            "form": ext_forms.get(a.pk) or ExtensionForm(assignment=a, prefix=f"ext{a.pk}"),
        }
        for a in assignments
    ]
    return TemplateResponse(
        request,
        "cohorts/assign.html",
        {"cohort": cohort, "form": form, "items": items, "sets": progress.set_contents()},
        status=status,
    )


@require_http_methods(["GET", "POST"])
def assign(request: SignedInRequest, cohort_id: int) -> HttpResponse:
    cohort = _taught(request, cohort_id)
    form = AssignmentForm(request.POST or None, cohort=cohort)
    if request.method == "POST":
        assignment = form.save_for(request.user) if form.is_valid() else None
        if assignment is not None:
            messages.success(request, f"Assigned {assignment.walkthrough_set.title}.")
            return redirect("cohorts:assign", cohort_id=cohort.pk)
        made = form.resubmitted(request.user)
        if made is not None:
            messages.info(request, already_assigned_once_text(made))
            return redirect("cohorts:assign", cohort_id=cohort.pk)
        return _assign_page(request, cohort, form, status=400)
    return _assign_page(request, cohort, form)


def already_assigned_once_text(assignment: Assignment) -> str:
    """What an instructor reads after sending the same assignment again within minutes."""
    return (
        f"{assignment.walkthrough_set.title} was already assigned (the form was sent twice); "
        "it is listed once below, and no second assignment was made."
    )


def _cohort_assignment(request: HttpRequest, cohort_id: int, assignment_id: int):
    cohort = _taught(request, cohort_id)
    assignment = get_object_or_404(
        Assignment.objects.select_related("walkthrough_set"), cohort=cohort, pk=assignment_id
    )
    return cohort, assignment


@require_http_methods(["GET", "POST"])
def assignment_edit(request: SignedInRequest, cohort_id: int, assignment_id: int) -> HttpResponse:
    """Change an assignment's due date and cut-off (``AssignmentDatesForm``), or remove it."""
    cohort, assignment = _cohort_assignment(request, cohort_id, assignment_id)
    # A copy: the form writes what was posted onto its instance while it validates, and a refused
    # date must not show as the assignment's current one above the form.
    form = AssignmentDatesForm(request.POST or None, instance=copy.copy(assignment))
    if request.method == "POST":
        saved = form.save_dates() if form.is_valid() else None
        if saved is not None:
            messages.success(request, dates_changed_text(saved, form.dropped))
            return redirect("cohorts:assign", cohort_id=cohort.pk)
    status = 400 if request.method == "POST" else 200
    return TemplateResponse(
        request,
        "cohorts/assignment_edit.html",
        {"cohort": cohort, "assignment": assignment, "form": form},
        status=status,
    )


def dates_changed_text(assignment: Assignment, dropped: list[Extension]) -> str:
    """What an instructor reads after changing an assignment's dates."""
    text = f"{assignment.walkthrough_set.title} is now due {utc_text(assignment.due_at)}"
    text += f", cut-off {utc_text(assignment.cutoff_at)}." if assignment.cutoff_at else "."
    if dropped:
        names = ", ".join(e.learner.username for e in dropped)
        text += (
            f" The extensions of {names} ended on or before the new due date and were removed: "
            "they have the assignment's dates now."
        )
    return text


@require_POST
def assignment_delete(request: HttpRequest, cohort_id: int, assignment_id: int) -> HttpResponse:
    """Remove an assignment, with its extensions and reminders. Learners' reading and drills
    are theirs and stay; only the assignment's columns and cards go."""
    cohort = _taught(request, cohort_id)
    assignment = (
        Assignment.objects.select_related("walkthrough_set")
        .filter(cohort=cohort, pk=assignment_id)
        .first()
    )
    if assignment is None:  # removed already (clicked twice, or by a co-instructor)
        messages.info(
            request,
            f"That assignment is not in {cohort.name} (already removed?): nothing was changed.",
        )
        return redirect("cohorts:assign", cohort_id=cohort.pk)
    assignment.delete()
    messages.success(
        request,
        f"Removed {assignment.walkthrough_set.title} (due {utc_text(assignment.due_at)}) from "
        f"{cohort.name}. Learners no longer see it; what they read stays read.",
    )
    return redirect("cohorts:assign", cohort_id=cohort.pk)


@require_POST
def extend(request: SignedInRequest, cohort_id: int, assignment_id: int) -> HttpResponse:
    cohort = _taught(request, cohort_id)
    assignment = get_object_or_404(
        Assignment.objects.select_related("cohort"), cohort=cohort, pk=assignment_id
    )
    form = ExtensionForm(request.POST, assignment=assignment, prefix=f"ext{assignment.pk}")
    if not form.is_valid():
        return _assign_page(
            request,
            cohort,
            AssignmentForm(cohort=cohort),
            ext_forms={assignment.pk: form},
            status=400,
        )
    learner = form.cleaned_data["learner"]
    Extension.objects.update_or_create(
        assignment=assignment,
        learner=learner,
        defaults={
            "due_at": form.cleaned_data["due_at"],
            "cutoff_at": form.cleaned_data["cutoff_at"],
            "granted_by": request.user,
        },
    )
    messages.success(request, f"Extension saved for {learner.username}.")
    return redirect("cohorts:assign", cohort_id=cohort.pk)


@require_POST
def extension_delete(request, cohort_id: int, assignment_id: int, extension_id: int):
    cohort = _taught(request, cohort_id)
    ext = get_object_or_404(
        Extension, pk=extension_id, assignment_id=assignment_id, assignment__cohort=cohort
    )
    ext.delete()
    messages.success(request, "Extension removed.")
    return redirect("cohorts:assign", cohort_id=cohort.pk)


# --------------------------------------------------------------------------- membership admin


def _co_typed_key(cohort: Cohort) -> str:
    """The session key of the co-instructor name refused on ``cohort``'s page."""
    return f"cohorts:{cohort.pk}:co-instructor-typed"


@require_POST
def add_instructor(request: HttpRequest, cohort_id: int) -> HttpResponse:
    cohort = _taught(request, cohort_id)
    form = CoInstructorForm(request.POST, cohort=cohort)
    if form.is_valid():
        assert form.user is not None  # clean_username sets it
        cohort.instructors.add(form.user)
        Membership.objects.filter(cohort=cohort, user=form.user).delete()
        messages.success(request, f"{form.user.username} now co-teaches {cohort.name}.")
    else:
        for error in form.errors.get("username", []):
            messages.error(request, str(error))  # ErrorList yields the messages as str
        # The cohort page's next view shows the name again as typed, for correcting.
        request.session[_co_typed_key(cohort)] = form.typed_username()
    return redirect("cohorts:detail", cohort_id=cohort.pk)


@require_POST
def remove_instructor(request: SignedInRequest, cohort_id: int, user_id: int) -> HttpResponse:
    """Take an instructor off the cohort, or leave it (``Cohort.instructor_removal_refused``)."""
    cohort = _taught(request, cohort_id)
    target = cohort.instructors.filter(pk=user_id).first()
    if target is None:  # taken off already (clicked twice); names nobody, as remove_member
        messages.info(
            request, f"That instructor does not teach {cohort.name}: nothing was changed."
        )
        return redirect("cohorts:detail", cohort_id=cohort.pk)
    refused = cohort.instructor_removal_refused(request.user, target)
    if refused is not None:
        messages.error(request, refused)
        return redirect("cohorts:detail", cohort_id=cohort.pk)
    cohort.instructors.remove(target)
    if target.pk == request.user.pk:
        messages.success(request, f"You no longer teach {cohort.name}.")
        return redirect("cohorts:list")
    messages.success(
        request, f"{target.username} no longer teaches {cohort.name} and cannot open its pages."
    )
    return redirect("cohorts:detail", cohort_id=cohort.pk)


@require_POST
def remove_member(request: HttpRequest, cohort_id: int, user_id: int) -> HttpResponse:
    cohort = _taught(request, cohort_id)
    membership = (
        Membership.objects.select_related("user").filter(cohort=cohort, user_id=user_id).first()
    )
    if membership is None:  # removed already: "remove" clicked twice, or by two instructors
        messages.info(request, not_a_member_text(cohort.name))
        return redirect("cohorts:detail", cohort_id=cohort.pk)
    with transaction.atomic():
        Extension.objects.filter(assignment__cohort=cohort, learner_id=user_id).delete()
        membership.delete()
    messages.success(request, removed_text(membership.user.username, cohort.name))
    return redirect("cohorts:detail", cohort_id=cohort.pk)


def not_a_member_text(cohort_name: str) -> str:
    """What an instructor reads after removing someone who is not (or no longer) a member. It
    names nobody: the user id in the URL could be anyone's."""
    return f"That learner is not in {cohort_name} (already removed?): nothing was changed."


def removed_text(username: str, cohort_name: str) -> str:
    """What an instructor reads after removing a member: the code they joined with still works."""
    return (
        f"Removed {username} from {cohort_name}. They can join again with the current join code; "
        "to stop that, use “Regenerate join code” (the old code and invite link stop working)."
    )


@require_POST
def regenerate_code(request: HttpRequest, cohort_id: int) -> HttpResponse:
    cohort = _taught(request, cohort_id)
    code = cohort.regenerate_code()
    messages.success(
        request, f"New join code: {code}. The old code and invite link no longer work."
    )
    return redirect("cohorts:detail", cohort_id=cohort.pk)
