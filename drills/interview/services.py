"""Mock interviews: five timed traces in a row, five sentences each, then a report.

Each trace is an ordinary timed trainer attempt (claimed from the pool, graded by the same path)
of kind ``interview`` tied to its session, so it schedules, counts and exports like any drill —
once the interview has ended. Until then its grades stay on its attempts: the dashboard's
counters, the scheduling cards, the contrast trials and every list of answers take them when it
ends (``finish_if_done``), so no page outside the interview moves while it is under way (a row
that moved would name the answer of the trace just answered). It ends when the report is
reached after the fifth trace, or when it has been open ``OPEN_FOR`` (it ends where it stands).
No other drill is dealt while one is under way (``drills.trainer.services.InterviewUnderWay``).
The report is computed from the stored attempts and nothing else.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from drills.models import Attempt, MockInterview
from drills.trainer import reveal
from drills.trainer import services as trainer
from scenarios import pool
from scenarios.engine.catalog import lookalike_of, title_of

log = logging.getLogger(__name__)

# How long an interview stays open: five traces in a row, with a pause between them if need be,
# not a day. Past it, the interview ends where it stands (a trace still on its clock first runs
# out), and its grades count from then on.
OPEN_FOR = timedelta(hours=1)
# The Celery beat job that ends interviews left open past their hour (every 5 minutes).
END_TASK = "drills.tasks.end_interviews_past_their_hour"


def is_past_its_hour(interview: MockInterview, now: datetime) -> bool:
    return now >= interview.started_at + OPEN_FOR


def unfinished(user) -> MockInterview | None:
    return MockInterview.objects.unfinished_for(user)


def start(user, now: datetime | None = None) -> MockInterview:
    """A new interview (or the learner's unfinished one: one at a time). One learner's starts
    serialise on their user row, so a double click cannot make two."""
    now = now or timezone.now()
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).exists()
        found = unfinished(user)
        if found is not None and not finish_if_done(found, now):
            return found
        return MockInterview.objects.create(user=user, started_at=now)


def attempts(interview: MockInterview) -> list[Attempt]:
    return list(interview.attempts.select_related("trace").order_by("served_at", "pk"))


def close_expired(interview: MockInterview, now: datetime | None = None) -> list[Attempt]:
    """Close the interview's open trace as expired once its clock has run out (as the trainer
    closes a drill's), keeping only the clock's time. Returns the traces closed now."""
    now = now or timezone.now()
    closed = []
    for attempt in interview.attempts.filter(submitted_at__isnull=True):
        if trainer.is_expired(attempt, now):
            attempt = trainer.close_attempt(attempt, "expired")
            if attempt.closed == "expired":
                closed.append(attempt)
    return closed


@pool.draws_outside_transaction
def next_attempt(interview: MockInterview) -> Attempt | None:
    """The interview's open trace (its clock still running), or a new one while fewer than five
    are served and the interview is open; None when no more are dealt."""
    now = timezone.now()
    while True:
        with transaction.atomic():
            locked = MockInterview.objects.select_for_update().get(pk=interview.pk)
            served = attempts(locked)
            stale = next((a for a in served if not a.is_submitted), None)
            if stale is not None and not trainer.is_expired(stale, now):
                return stale
            if stale is None:
                if locked.is_finished or len(served) >= MockInterview.SIZE:
                    return None
                if is_past_its_hour(locked, now):
                    return None
                return trainer.start_drill(interview.user, Attempt.Mode.TIMED, interview=interview)
        # Its clock ran out: closed as a drill's is, outside the interview's lock (a grade takes
        # the attempt's lock, then the interview's), and the deal asked again.
        trainer.close_attempt(stale, "expired")


def finish_if_done(interview: MockInterview, now: datetime | None = None) -> bool:
    """End the interview once its five traces are graded (at the last one's commit time), or once
    it has been open ``OPEN_FOR`` (a trace whose clock has run out is closed as expired first; one
    still on its clock keeps it open until then). Returns whether it has ended.

    Ending it records its grades (``drills.trainer.services.record_grade``, each at its own
    commit time, in commit order) in the transaction that stamps ``finished_at``, under the
    interview's row lock: a grade stored before that is recorded here, one stored after it is
    recorded by the grade itself (``held_for_interview``), so none is lost or counted twice."""
    if interview.finished_at is not None:
        return True
    now = now or timezone.now()
    expired = is_past_its_hour(interview, now)
    if expired:
        close_expired(interview, now)
    with transaction.atomic():
        locked = MockInterview.objects.select_for_update().get(pk=interview.pk)
        if locked.finished_at is None:
            served = attempts(locked)
            if any(not a.is_submitted for a in served):
                return False
            if len(served) < MockInterview.SIZE and not expired:
                return False
            answered = [a.submitted_at for a in served if a.submitted_at is not None]
            locked.finished_at = max(answered) if answered else now
            locked.save(update_fields=["finished_at"])
            if locked.grades_held:  # else recorded as they were graded (before grades waited)
                for attempt in sorted(served, key=lambda a: (a.submitted_at, a.served_at, a.pk)):
                    trainer.record_grade(attempt)
        interview.finished_at = locked.finished_at
    return True


def end_those_past_their_hour(now: datetime | None = None) -> int:
    """End, unattended, every unfinished interview open past its hour (``finish_if_done``, under
    the row lock the learner's own requests take: whichever comes first ends it and records its
    grades, the other finds it ended). One whose last trace is still on its clock waits for that
    clock, as it would for the learner; one within its hour is left alone. Returns how many ended
    now. The Celery beat job ``drills.tasks.end_interviews_past_their_hour``; without a worker
    (embedded mode) an interview ends on the learner's next request, as before."""
    now = now or timezone.now()
    due = MockInterview.objects.filter(finished_at__isnull=True, started_at__lte=now - OPEN_FOR)
    ended = 0
    for interview in due.order_by("started_at"):
        try:
            ended += finish_if_done(interview, now)
        except Exception:  # one that fails is tried again on the next run; the others end
            log.exception("interview %s: could not end it past its hour", interview.pk)
    return ended


SENTENCES = ("1", "2", "3", "4", "4b", "5", "5b")


def report(interview: MockInterview) -> dict[str, Any]:
    """Time per trace, each sentence right or wrong, the weakest signature, the one thing to
    drill next: all from the interview's stored attempts."""
    traces = []
    wrong_by_sentence: dict[str, int] = defaultdict(int)
    titles: dict[str, str] = {}
    per_scenario: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # [right, graded]
    # per true scenario: how many of its traces, each sentence's misses on them, and how many
    # of them were closed without a diagnosis (given up, or out of time)
    traces_of: dict[str, int] = defaultdict(int)
    wrong_on: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    unnamed_on: dict[str, int] = defaultdict(int)
    for i, attempt in enumerate(a for a in attempts(interview) if a.is_submitted):
        rows = reveal.sentences(attempt, attempt.trace.key)
        marks = {r["n"]: r["correct"] for r in rows}
        traces_of[attempt.scenario] += 1
        unnamed_on[attempt.scenario] += 1 if not attempt.answer_scenario else 0
        for r in rows:
            titles[r["n"]] = r["title"] if r["n"] != "4b" else "Its value on this trace"
            if r["correct"] is False:
                wrong_by_sentence[r["n"]] += 1
                wrong_on[attempt.scenario][r["n"]] += 1
            if r["correct"] is not None:
                per_scenario[attempt.scenario][0] += bool(r["correct"])
                per_scenario[attempt.scenario][1] += 1
        traces.append(
            {
                "n": i + 1,
                "attempt": attempt,
                "scenario": attempt.scenario,
                "title": title_of(attempt.scenario),
                # a trace given up or out of time says so, as the trainer's history does
                "answered_title": attempt.answer_title,
                "elapsed_s": attempt.elapsed_s,
                "over_time": bool(attempt.over_time),
                "marks": [marks.get(n) for n in SENTENCES],
                "right": sum(1 for n in SENTENCES if marks.get(n) is True),
                "graded": sum(1 for n in SENTENCES if marks.get(n) is not None),
            }
        )
    weakest = _weakest_signature(per_scenario)
    return {
        "interview": interview,
        "traces": traces,
        "sentences": [(n, titles.get(n, n)) for n in SENTENCES],
        "total_s": sum(t["elapsed_s"] or 0.0 for t in traces),
        "right": sum(t["right"] for t in traces),
        "graded": sum(t["graded"] for t in traces),
        "wrong_by_sentence": dict(wrong_by_sentence),
        "weakest": weakest,
        "weakest_title": title_of(weakest) if weakest else None,
        "next": next_step(
            weakest,
            dict(wrong_on[weakest]) if weakest else {},
            titles,
            traces=traces_of[weakest] if weakest else 0,
            overall=dict(wrong_by_sentence),
            unnamed=unnamed_on[weakest] if weakest else 0,
        ),
    }


def _weakest_signature(per_scenario: dict[str, list[int]]) -> str | None:
    """The true scenario with the lowest share of sentences right (ties: the one with more
    sentences missed, then the slug); None when every graded sentence was right."""
    missed = {
        s: (right / graded, -(graded - right), s)
        for s, (right, graded) in per_scenario.items()
        if graded and right < graded
    }
    if not missed:
        return None
    return min(missed.values())[2]


def next_step(
    weakest: str | None,
    wrong_on_weakest: dict[str, int],
    titles: dict[str, str],
    *,
    traces: int = 0,
    overall: dict[str, int] | None = None,
    unnamed: int = 0,
) -> str:
    """The one thing to drill next, in a sentence: the weakest signature, and the sentence missed
    most often on its traces (ties: the one missed most in the whole interview, then the
    earlier). A sentence missed only on other scenarios' traces, or not graded on these, is
    no advice for drilling this one. ``unnamed``: how many of the weakest signature's traces
    were closed without a diagnosis (given up, or out of time), which named no signature."""
    if weakest is None or not wrong_on_weakest:
        return "Nothing missed: keep to your scheduled drills, timed."
    overall = overall or {}
    worst = max(
        wrong_on_weakest,
        key=lambda n: (wrong_on_weakest[n], overall.get(n, 0), -SENTENCES.index(n)),
    )
    title = title_of(weakest)
    if worst == "3":
        twin = lookalike_of(weakest)
        against = f" against its lookalike, {title_of(twin)}" if twin else ""
        missed = wrong_on_weakest.get("3", 0)
        named = max(0, missed - unnamed)
        if not named:
            why = "you left traces without a diagnosis (given up or out of time) most often"
        elif named < missed:
            why = (
                f"the signature was the sentence you missed most often ({named} named wrong, "
                f"{missed - named} left without a diagnosis)"
            )
        else:
            why = "you named the wrong signature most often"
        return f"Drill the signature of {title}{against}: {why}."
    sentence = titles.get(worst, worst).lower()
    missed, of = wrong_on_weakest[worst], max(traces, wrong_on_weakest[worst])
    return (
        f"Drill {title}: say sentence {worst} ({sentence}) aloud with its number. It is the "
        f"sentence you missed most often on those traces ({missed} of {of})."
    )


def set_shared(interview: MockInterview, shared: bool, now: datetime | None = None) -> None:
    interview.shared_at = (now or timezone.now()) if shared else None
    interview.save(update_fields=["shared_at"])
