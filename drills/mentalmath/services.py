"""The mental-math trainer's write paths: start a problem or a sprint, commit an answer once.

Mirrors ``drills.trainer.services`` (the trace drills): the server's clock is the only clock, an
answer is graded once under ``select_for_update``, and the learner's family card (``Card`` of kind
"math") is updated with the same FSRS machinery. The rating adapter (``math_rating``) maps a graded
answer onto ``scheduling.rating_for``: wrong or past 2:00 → Again, right but slower than 90 s →
Hard, otherwise Good.

Sprints: 120 seconds of problems one after another. The score is the number of right answers
committed before ``ends_at`` (server time); an answer that arrives later is graded and shown but
neither scored nor scheduled. Answers inside the sprint update the family cards like single drills.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

import fsrs
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from drills import mentalmath, scheduling, summaries
from drills.mentalmath import from_trace
from drills.models import Attempt, Card, MathAttempt, MathSprint
from drills.scheduling import cards
from drills.trainer.services import time_limit_s

SPRINT_S = 120
RECENT_N = 5
_seeds = random.SystemRandom()


# --------------------------------------------------------------------------- rating adapter


def math_grade(correct: bool, elapsed_s: float, over_time: bool, *, counted: bool = True):
    """A graded math answer as the scheduler's ``Grade`` record: the answer is the whole recall,
    so it stands in the scenario's place and the measurement/fix halves count as right. An answer
    that does not count (after a sprint's bell) is marked like a practice attempt."""
    return scheduling.Grade(
        scenario_correct=bool(correct),
        measurement_correct=True,
        fix_correct=True,
        win_correct=True,
        elapsed_s=float(elapsed_s),
        over_time=bool(over_time),
        practice=not counted,
    )


def math_rating(correct: bool, elapsed_s: float, over_time: bool) -> fsrs.Rating:
    """Wrong or past 2:00 → Again; right but > 90 s → Hard; otherwise Good."""
    return scheduling.rating_for(math_grade(correct, elapsed_s, over_time))


# --------------------------------------------------------------------------- picking


def family_keys() -> list[str]:
    return list(mentalmath.FAMILIES)


# Answer keys name the drill family behind each scenario (``mentalmath_family``). Keys generated
# before the engine used the family keys (traces already stored in the pool) carry these older
# names; they map to the family that practises the same calculation. Unknown names fall back to
# the family key with "_" read as "-".
ENGINE_FAMILIES: dict[str, str] = {
    "allreduce_time": "allreduce-time",
    "busbw": "busbw",
    "dataloader_overlap": "dataloader-workers",
    "launch_overhead": "launch-overhead",
    "roofline": "kernel-floor",  # the hot kernel's bytes ÷ time against HBM peak
    "pipeline_bubble": "bubble",
    "straggler_cost": "amdahl",
    "sync_cost": "amdahl",
    "recompile_cost": "amdahl",
}


def resolve_family(name: str | None) -> str | None:
    """A drill family key for ``name`` (a family key or an engine answer key's name), or None."""
    if not name:
        return None
    if name in mentalmath.FAMILIES:
        return name
    key = ENGINE_FAMILIES.get(name, name.replace("_", "-"))
    return key if key in mentalmath.FAMILIES else None


def next_family(user, now: datetime | None = None) -> str:
    """FSRS over the family cards, like the trace trainer: due first (weakest first), then the
    unseen families, then the weakest; the families just served are avoided among equals."""
    now = now or timezone.now()
    held = cards.load_cards(user, Card.Kind.MATH)
    states = {key: (held[key].state if key in held else None) for key in family_keys()}
    newest_first = MathAttempt.objects.filter(user=user).order_by("-served_at")
    recent = list(newest_first.values_list("family", flat=True)[:RECENT_N])[::-1]
    return scheduling.pick_next(states, now, rng=random.Random(), recent=recent)


def _new_attempt(user, family: str, now: datetime, *, sprint: MathSprint | None = None):
    seed = _seeds.randrange(1, 2**62)
    problem = mentalmath.make_problem(family, seed)
    return MathAttempt.objects.create(
        user=user,
        family=family,
        seed=seed,
        problem=problem.to_dict(),
        mode=MathAttempt.Mode.SPRINT if sprint else MathAttempt.Mode.SINGLE,
        sprint=sprint,
        served_at=now,
    )


def open_attempt(user, family: str | None = None) -> MathAttempt | None:
    """The learner's unanswered single drill (of ``family`` when given), newest first."""
    qs = MathAttempt.objects.filter(
        user=user, mode=MathAttempt.Mode.SINGLE, submitted_at__isnull=True
    )
    if family:
        qs = qs.filter(family=family)
    return qs.order_by("-served_at").first()


def start_single(user, family: str | None = None) -> MathAttempt:
    """A single 2:00 drill. An unanswered one (of the same family, if one is asked for) is resumed
    instead: asking again is not a way to skip a problem or restart its clock."""
    if family is not None and family not in mentalmath.FAMILIES:
        raise ValueError(f"unknown mental-math family {family!r}")
    with transaction.atomic():
        _one_start_at_a_time(user)
        existing = open_attempt(user, family)
        if existing is not None:
            return existing
        now = timezone.now()
        return _new_attempt(user, family or next_family(user, now), now)


def _one_start_at_a_time(user) -> None:
    """Serialise one learner's starts on their user row (inside the caller's transaction), so a
    double click finds the drill or sprint the first click made instead of making a second."""
    get_user_model().objects.select_for_update().filter(pk=user.pk).exists()


# --------------------------------------------------------------------------- from a trace's reveal


class NoPractice(Exception):
    """The trace attempt offers no calculation to practise; ``str()`` says why, for the learner."""


def source_of(attempt: MathAttempt) -> str | None:
    """The trace attempt (its id) whose numbers built this problem, or None for a drawn one."""
    source = (attempt.problem or {}).get("source") or {}
    return source.get("attempt") if isinstance(source, dict) else None


def start_from_attempt(user, trace_attempt: Attempt) -> MathAttempt:
    """A single 2:00 drill of the calculation behind ``trace_attempt``'s reveal, with that
    trace's numbers, built here from the key the server stored (nothing the request sends).

    Only for the learner's own, graded attempt: the view 404s anyone else's and refuses an open
    one. An unanswered problem from the same trace is resumed; once answered, asking again gives
    the trace's next framing (the reveal's own calculation first).
    """
    if trace_attempt.user_id != user.pk or not trace_attempt.is_submitted:
        raise NoPractice("Commit your diagnosis first: the calculation is part of the reveal.")
    interview = trace_attempt.interview if trace_attempt.interview_id is not None else None
    if interview is not None and not interview.is_finished:
        # A mock interview shows no reveal until its last trace is answered.
        raise NoPractice("Finish the mock interview first: its reveals come at the end.")
    source = str(trace_attempt.pk)
    mine = MathAttempt.objects.filter(user=user, problem__source__attempt=source)
    open_ = mine.filter(submitted_at__isnull=True).order_by("-served_at").first()
    if open_ is not None:
        return open_
    trace = trace_attempt.trace
    try:
        problem = from_trace.problem_from_key(
            trace.key, trace.prompt, hardware=trace.hardware, choice=mine.count()
        )
    except from_trace.NoPractice as exc:
        raise NoPractice(f"No calculation to practise on this trace: {exc}.") from exc
    return MathAttempt.objects.create(
        user=user,
        family=problem.family,
        seed=_seeds.randrange(1, 2**62),
        problem={**problem.to_dict(), "source": {"attempt": source}},
        mode=MathAttempt.Mode.SINGLE,
        served_at=timezone.now(),
    )


def problem_of(attempt: MathAttempt) -> mentalmath.Problem:
    return mentalmath.Problem.from_dict(attempt.problem)


def check_answer(attempt: MathAttempt, text: str) -> mentalmath.Graded:
    """Grade without storing anything (the views use it to refuse unreadable input)."""
    return mentalmath.grade_answer(problem_of(attempt), text)


# --------------------------------------------------------------------------- answering


@dataclass(frozen=True, slots=True)
class Submitted:
    attempt: MathAttempt
    graded_now: bool
    graded: mentalmath.Graded


def submit_answer(attempt: MathAttempt, text: str) -> Submitted:
    """Grade and store ``text`` once.

    Unreadable input ("fast", a unit of the wrong kind) stores nothing and returns
    ``graded.parsed`` False: the learner can answer again. A second submission after grading
    changes nothing and returns the stored attempt (``graded_now`` False).
    """
    now = timezone.now()
    problem = problem_of(attempt)
    with transaction.atomic():
        sprint = None
        if attempt.sprint_id is not None:
            # Lock order: sprint, then attempt (the sprint's next problem is created under it).
            sprint = MathSprint.objects.select_for_update().get(pk=attempt.sprint_id)
        locked = MathAttempt.objects.select_for_update().get(pk=attempt.pk)
        if locked.submitted_at is not None:
            return Submitted(locked, False, mentalmath.grade_answer(problem, locked.answer_text))
        graded = mentalmath.grade_answer(problem, text)
        if not graded.parsed:
            return Submitted(locked, False, graded)
        elapsed = (now - locked.served_at).total_seconds()
        if sprint is not None:
            over = now > sprint.ends_at
            counted = not over
        else:
            over = elapsed > time_limit_s()
            counted = True
        grade = math_grade(graded.correct, elapsed, over, counted=counted)
        rating = scheduling.rating_for(grade)
        locked.submitted_at = now
        locked.answer_text = text.strip()[:100]
        locked.value = graded.value
        locked.correct = graded.correct
        locked.error = graded.error
        locked.elapsed_s = elapsed
        locked.over_time = over
        locked.rating = int(rating)
        locked.counted = counted
        locked.save()
        summaries.record_math_attempt(locked)
        cards.apply_live(locked.user, grade, item=locked.family, when=now, kind=Card.Kind.MATH)
        if sprint is not None:
            _rescore(sprint)
    return Submitted(locked, True, graded)


# --------------------------------------------------------------------------- sprints


def running_sprint(user, now: datetime | None = None) -> MathSprint | None:
    now = now or timezone.now()
    return MathSprint.objects.filter(user=user, ends_at__gt=now).order_by("-started_at").first()


def start_sprint(user) -> MathSprint:
    """A 120-second sprint (a running one is resumed instead), with its first problem."""
    now = timezone.now()
    with transaction.atomic():
        _one_start_at_a_time(user)
        existing = running_sprint(user, now)
        if existing is not None:
            return existing
        sprint = MathSprint.objects.create(
            user=user, started_at=now, ends_at=now + timedelta(seconds=SPRINT_S)
        )
        _new_attempt(user, next_family(user, now), now, sprint=sprint)
    return sprint


def sprint_is_over(sprint: MathSprint, now: datetime | None = None) -> bool:
    return (now or timezone.now()) >= sprint.ends_at


def current_problem(sprint: MathSprint) -> MathAttempt | None:
    """The sprint's unanswered problem, served now if there is none; None once time is up."""
    now = timezone.now()
    if sprint_is_over(sprint, now):
        return None
    with transaction.atomic():
        MathSprint.objects.select_for_update().get(pk=sprint.pk)
        open_ = sprint.attempts.filter(submitted_at__isnull=True).order_by("-served_at").first()
        if open_ is not None:
            return open_
        return _new_attempt(sprint.user, next_family(sprint.user, now), now, sprint=sprint)


def _rescore(sprint: MathSprint) -> None:
    """Score = right answers committed before ``ends_at``; attempted = answers before it."""
    in_time = sprint.attempts.graded().filter(submitted_at__lte=sprint.ends_at)
    sprint.attempted = in_time.count()
    sprint.score = in_time.filter(correct=True).count()
    sprint.save(update_fields=["score", "attempted"])


def sprint_history(user, now: datetime | None = None, limit: int = 30) -> list[MathSprint]:
    """Finished sprints, oldest first (the last ``limit``)."""
    now = now or timezone.now()
    newest = MathSprint.objects.filter(user=user, ends_at__lte=now).order_by("-started_at")
    return list(newest[:limit])[::-1]
