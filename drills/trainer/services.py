"""The drill loop's write paths: start a drill, commit a diagnosis, update the learner's card."""

from __future__ import annotations

import logging
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from drills import scheduling, summaries
from drills.contrast import services as contrast
from drills.models import Attempt, Card, LearnerProfile, MockInterview
from drills.scheduling import cards
from drills.trainer import fixed
from drills.trainer.grading import GRACE_S, Diagnosis, grade, is_over_time
from scenarios import engine, pool
from scenarios.engine import diagnosis as engine_diagnosis
from scenarios.models import Trace

log = logging.getLogger(__name__)


def time_limit_s() -> int:
    return settings.TRACETRACK["DRILL_TIME_LIMIT_S"]


def limit_for(attempt: Attempt) -> float:
    """The attempt's clock: a contrast trial's 45 s, else the drill's limit."""
    if attempt.kind == Attempt.Kind.CONTRAST:
        return scheduling.TRIAL_LIMIT_S
    return float(time_limit_s())


def load_allowance_s(mode: str) -> float:
    """Seconds of loading time that do not count against the clock: only in Perfetto-only mode,
    where the Perfetto UI and the trace take a while to load. A fixed server-side bound; nothing
    the client sends can extend it."""
    if mode == Attempt.Mode.PERFETTO:
        return float(settings.TRACETRACK["PERFETTO_LOAD_ALLOWANCE_S"])
    return 0.0


def clock_elapsed_s(attempt: Attempt, now: datetime) -> float:
    """Time on the clock: server time since serving, less the mode's loading allowance."""
    raw = (now - attempt.served_at).total_seconds()
    return max(0.0, raw - load_allowance_s(attempt.mode))


def closed_clock_s(attempt: Attempt, elapsed_s: float) -> float:
    """The time an attempt closed without a diagnosis keeps: its time on the clock, stopped
    where the clock ran out (the limit and the network grace) for a drill on the clock. A drill
    left open and closed days later (the next drill asked for) kept days, and the dashboard's
    median time to diagnosis for its scenario read "4320:00"; past the stop it still reads as
    over the limit, so it never counts as under it."""
    if attempt.mode == Attempt.Mode.PRACTICE:
        return elapsed_s
    return min(elapsed_s, limit_for(attempt) + GRACE_S)


def display_remaining_s(attempt: Attempt, now: datetime) -> float:
    """What the page's clock shows: the limit plus the loading allowance, minus server time."""
    raw = (now - attempt.served_at).total_seconds()
    return max(0.0, limit_for(attempt) + load_allowance_s(attempt.mode) - raw)


def is_expired(attempt: Attempt, now: datetime) -> bool:
    """A timed (or Perfetto-only) attempt whose clock has run out without a diagnosis."""
    return (
        attempt.submitted_at is None
        and attempt.mode != Attempt.Mode.PRACTICE
        and is_over_time(clock_elapsed_s(attempt, now), limit_for(attempt))
    )


# Why an attempt closed without an answer could not take one (``Attempt.closed``).
CLOSED_BEFORE_ANSWER = {
    "abandoned": "you gave up on it, perhaps in another tab",
    "expired": "its clock ran out and it was closed when the next drill was asked for",
}


def late_interview_answer_notice(attempt: Attempt) -> str:
    """What a learner whose answer to a mock interview's trace arrived after its clock had run
    out is told (``submit_diagnosis``, or the deal of the next trace, closed it as expired)."""
    limit = int(limit_for(attempt))
    return (
        f"The {limit // 60}:{limit % 60:02d} clock on this interview trace had run out when your "
        "answer arrived, so it was not recorded: the report counts the trace as out of time, "
        "with no answer."
    )


def answer_too_late_notice(attempt: Attempt) -> str | None:
    """What a learner whose answer reaches an attempt already closed without one is told (the
    answer is not graded: the attempt was scored as a miss when it closed); None when the attempt
    holds a graded answer (a second click of the same submit) or is still open."""
    if attempt.submitted_at is None or not attempt.closed:
        return None
    if attempt.kind == Attempt.Kind.INTERVIEW and attempt.closed == "expired":
        return late_interview_answer_notice(attempt)
    why = CLOSED_BEFORE_ANSWER.get(attempt.closed, "it had already been closed")
    what = {"contrast": "trial", "interview": "interview trace"}.get(str(attempt.kind), "drill")
    return (
        f"This {what} was already closed ({why}), so the answer you just sent was not recorded; "
        "it counts as a miss."
    )


def reveal_withheld(attempt: Attempt) -> bool:
    """Whether the attempt's reveal (and anything of it, such as "after the fix") is still held
    back: before the diagnosis is committed, for a contrast trial (its reveal is its own page),
    and for a trace of a mock interview until the interview's last trace is answered (an
    interview shows no reveal between its traces)."""
    if not attempt.is_submitted or attempt.kind == Attempt.Kind.CONTRAST:
        return True
    interview = attempt.interview if attempt.interview_id is not None else None
    return interview is not None and not interview.is_finished


def claims_per_hour() -> int:
    return settings.TRACETRACK["DRILL_CLAIMS_PER_HOUR"]


class DrillInProgress(Exception):
    """The learner has another attempt open (one at a time): finish or abandon it first."""

    def __init__(self, attempt: Attempt):
        super().__init__("another drill is open")
        self.attempt = attempt


def _refuse_a_second_open_attempt(user) -> None:
    current = open_attempt(user)
    if current is not None:
        raise DrillInProgress(current)


class InterviewUnderWay(Exception):
    """The learner has a mock interview under way: no other drill is dealt until it ends. Its
    grades wait for its end (``held_for_interview``); a drill dealt between its traces would
    review the same cards in between, and its deal (a contrast trial above all) would follow
    from what the interview's answers had changed."""

    def __init__(self, interview: MockInterview):
        super().__init__("a mock interview is under way")
        self.interview = interview


class TooManyDrills(Exception):
    """The learner has started ``DRILL_CLAIMS_PER_HOUR`` drills in the last hour."""


def scenario_weights() -> dict[str, int]:
    return {slug: s.weight for slug, s in engine.SCENARIOS.items()}


def next_scenario(
    user,
    now: datetime | None = None,
    *,
    recent: list[str] | None = None,
    held: dict[str, Card] | None = None,
    exclude: frozenset[str] = frozenset(),
) -> str:
    """The scenario to deal next, drawn from the scheduler's first choices so that what the
    learner sees of their schedule does not name it (``scheduling.pick_deal``). ``recent``,
    oldest first, and ``held``, the scenario cards, spare a query each when known; ``exclude``
    leaves scenarios out of the choice."""
    now = now or timezone.now()
    if held is None:
        held = cards.load_cards(user)
    states = {
        slug: (held[slug].state if slug in held else None)
        for slug in engine.SCENARIOS
        if slug not in exclude
    }
    if recent is None:
        newest_first = Attempt.objects.filter(user=user).order_by("-served_at")
        recent = list(newest_first.values_list("scenario", flat=True)[:5])[::-1]
    return scheduling.pick_deal(
        states, now, rng=_DEAL_RNG, weights=scenario_weights(), recent=recent
    )


# The deal's draw: the operating system's randomness, nothing a learner could replay.
_DEAL_RNG = secrets.SystemRandom()


def _newest(user, n: int) -> list[tuple[str, datetime, datetime | None, str]]:
    """(scenario, served_at, submitted_at, kind) of the learner's ``n`` newest attempts. One query
    answers three questions: is one open (the open attempt is always the newest: the one-open
    constraint lets none be dealt after it), how many were dealt lately, which scenarios."""
    return list(
        Attempt.objects.filter(user=user)
        .order_by("-served_at")
        .values_list("scenario", "served_at", "submitted_at", "kind")[:n]
    )


def open_attempt(user) -> Attempt | None:
    """The learner's unfinished attempt, if any (a new drill resumes it instead of piling up)."""
    return (
        Attempt.objects.filter(user=user, submitted_at__isnull=True)
        .select_related("trace")
        .defer(*Trace.blob_paths("trace"))  # pages stream the trace separately
        .order_by("-served_at")
        .first()
    )


@pool.draws_outside_transaction
def start_drill(
    user,
    mode: str = Attempt.Mode.TIMED,
    *,
    scenario: str | None = None,
    interview: MockInterview | None = None,
) -> Attempt:
    """Deal a new drill (one of a mock interview's when ``interview`` is given), or raise
    ``DrillInProgress`` when the learner has an attempt of any kind open. The newest attempts
    say both whether one is open and what was dealt lately (one query, as in ``next_drill``);
    should an open one hide behind them, the database refuses a second open attempt
    (``attempt_one_open_per_user``), the claim rolls back, and the learner is sent to it all
    the same."""
    latest = _newest(user, 5)
    if latest and latest[0][2] is None:
        _refuse_a_second_open_attempt(user)
    recent = [slug for slug, _served, _sub, _kind in latest][::-1]
    try:
        with transaction.atomic():
            if scenario is None:
                return _deal_scheduled(user, mode, recent, interview=interview)
            return _deal(user, mode, scenario, interview=interview)
    except IntegrityError:
        current = open_attempt(user)
        if current is None:
            raise
        raise DrillInProgress(current) from None


# How many of the scheduler's choices a drill start tries from stock before it generates a trace
# on the request for the first choice.
STOCK_TRIES = 3


def _deal_scheduled(
    user,
    mode: str,
    recent: list[str],
    *,
    interview: MockInterview | None = None,
    held: dict[str, Card] | None = None,
    now: datetime | None = None,
) -> Attempt:
    """Deal the scheduler's choice from the pool. A scenario that has run out of stock waits for
    its refill (it stays due, so it comes back on the next drill) and the scheduler's next choice
    is dealt instead; only when ``STOCK_TRIES`` choices in a row are out of stock is the first one
    generated on the request, which costs the learner a second or more on a busy host."""
    ready = pool.drawn_item("trace")
    if ready is not None:  # chosen and drawn for this deal before its transaction
        return _create(user, mode, ready, pool.generate_claimed(user, ready), interview=interview)
    if held is None:
        held = cards.load_cards(user)
    first = None
    tried: set[str] = set()
    for _ in range(min(STOCK_TRIES, len(engine.SCENARIOS))):
        scenario = next_scenario(user, now, recent=recent, held=held, exclude=frozenset(tried))
        first = first or scenario
        trace = pool.claim_from_stock(user, scenario)
        if trace is not None:
            if tried:
                log.info("out of stock: %s; dealt %s instead", ", ".join(sorted(tried)), scenario)
            return _create(user, mode, scenario, trace, interview=interview)
        tried.add(scenario)
    assert first is not None
    return _create(user, mode, first, pool.generate_claimed(user, first), interview=interview)


def _deal(user, mode: str, scenario: str, *, interview: MockInterview | None = None) -> Attempt:
    trace = pool.claim_or_generate(user, scenario)
    return _create(user, mode, scenario, trace, interview=interview)


def _create(
    user, mode: str, scenario: str, trace: Trace, *, interview: MockInterview | None = None
) -> Attempt:
    return Attempt.objects.create(
        user=user,
        trace=trace,
        scenario=scenario,
        mode=mode,
        served_at=timezone.now(),
        kind=Attempt.Kind.INTERVIEW if interview else Attempt.Kind.DRILL,
        interview=interview,
    )


def start_on_trace(user, trace, *, kind: str, item: str = "") -> Attempt:
    """Serve a given (already stored, claimed) trace as a timed attempt of ``kind``: the
    re-narration of a walkthrough's own trace."""
    _refuse_a_second_open_attempt(user)
    return Attempt.objects.create(
        user=user,
        trace=trace,
        scenario=trace.scenario,
        mode=Attempt.Mode.TIMED,
        served_at=timezone.now(),
        kind=kind,
        item=item,
    )


@pool.draws_outside_transaction
def next_drill(user, mode: str = Attempt.Mode.TIMED) -> tuple[Attempt, bool]:
    """The learner's drill: the open attempt resumed (whatever mode was asked for), or a new one.

    Returns (attempt, dealt_now), or raises ``InterviewUnderWay`` rather than deal one while a
    mock interview is under way. An expired timed attempt is closed as a miss first. Concurrent
    calls by one learner serialise on the learner's profile row (PostgreSQL) and, everywhere, on
    the one-open-attempt constraint: the loser of a race resumes the winner's attempt. Changing
    the mode never deals a new trace; only an explicit abandon closes the open attempt.
    """
    now = timezone.now()
    current = open_attempt(user)
    if current is not None and is_expired(current, now):
        close_attempt(current, "expired")
        current = None
    if current is not None:
        return current, False
    cap = claims_per_hour()
    try:
        with transaction.atomic():
            # One learner's starts serialise here (a no-op lock on SQLite, which has one writer).
            LearnerProfile.objects.select_for_update().get_or_create(user=user)
            # Is one open, how many were dealt this hour, what was dealt lately: one query.
            latest = _newest(user, max(cap, 5))
            if latest and latest[0][2] is None:
                current = open_attempt(user)
                if current is not None:
                    return current, False
            since = now - timedelta(hours=1)
            if sum(1 for _s, served, _sub, _k in latest if served >= since) >= cap:
                raise TooManyDrills
            # An interview holds grades once a trace of it is dealt (and none is dealt after it).
            if any(kind == Attempt.Kind.INTERVIEW for _s, _served, _sub, kind in latest):
                interview = MockInterview.objects.unfinished_for(user)
                if interview is not None:
                    raise InterviewUnderWay(interview)
            # One query for the scenario cards and the confused pairs' cards.
            held = Card.objects.filter(user=user, kind__in=[Card.Kind.SCENARIO, Card.Kind.PAIR])
            scenario_cards: dict[str, Card] = {}
            pair_states: dict[str, Any] = {}
            for card in held:
                if card.kind == Card.Kind.PAIR:
                    pair_states[card.item] = card.state
                else:
                    scenario_cards[card.item] = card
            trial = pool.drawn_item("pair")  # chosen and drawn before this transaction
            # A trial is read side by side in the app, on the clock: never in practice, nor for a
            # learner who asked to read in Perfetto (the pair stays due for a timed drill).
            if trial is None and mode == Attempt.Mode.TIMED:
                kinds = [kind for _s, _served, _sub, kind in latest[: scheduling.TRIAL_EVERY]]
                trial = scheduling.pick_trial(pair_states, now, recent_kinds=kinds[::-1])
            if trial is not None:
                return contrast.deal(user, trial, now), True
            recent = [slug for slug, _served, _sub, _k in latest[:5]][::-1]
            return _deal_scheduled(user, mode, recent, held=scenario_cards, now=now), True
    except IntegrityError:
        current = open_attempt(user)
        if current is None:
            raise
        return current, False


def close_attempt(attempt: Attempt, reason: str) -> Attempt:
    """Close an open attempt without a diagnosis ("abandoned" or "expired"): graded as a miss.

    A timed attempt is rated Again and updates its card through ``cards.apply_trace_attempt``,
    the path a submitted diagnosis takes (and ``rebuild_cards`` replays); a practice attempt
    never touches a card. Idempotent.
    """
    assert reason in ("abandoned", "expired"), reason
    now = timezone.now()
    with transaction.atomic():
        locked = Attempt.objects.select_for_update().get(pk=attempt.pk)
        if locked.submitted_at is not None:
            return locked
        _close_locked(locked, reason, now)
    return locked


def _close_locked(locked: Attempt, reason: str, now: datetime) -> None:
    """``close_attempt`` on the attempt already locked (and open) in the caller's transaction."""
    locked.submitted_at = now
    locked.closed = reason
    on_clock = clock_elapsed_s(locked, now)
    locked.elapsed_s = closed_clock_s(locked, on_clock)
    locked.scenario_correct = False
    locked.measurement_correct = False
    locked.fix_correct = False
    locked.win_correct = False
    locked.over_time = locked.mode != Attempt.Mode.PRACTICE and is_over_time(
        on_clock, limit_for(locked)
    )
    miss = scheduling.Grade(
        scenario_correct=False,
        measurement_correct=False,
        fix_correct=False,
        win_correct=False,
        elapsed_s=locked.elapsed_s,
        over_time=locked.over_time,
        practice=locked.mode == Attempt.Mode.PRACTICE,
        trial=locked.kind == Attempt.Kind.CONTRAST,
    )
    locked.rating = int(scheduling.rating_for(miss))  # Again: the scenario was not named
    locked.counted = scheduling.counts_for_schedule(miss)
    fixed.queue_twin(locked, now)
    locked.save()
    if not held_for_interview(locked):
        record_grade(locked, miss)


def submit_diagnosis(attempt: Attempt, diagnosis: Diagnosis) -> tuple[Attempt, bool]:
    """Grade and store the diagnosis once. Returns (attempt, graded_now).

    A second submission (double click, replayed POST) changes nothing and returns the stored grade.
    """
    now = timezone.now()
    with transaction.atomic():
        locked = (
            Attempt.objects.select_for_update()
            .select_related("trace")
            .defer(*Trace.blob_paths("trace"))
            .get(pk=attempt.pk)
        )
        if locked.submitted_at is not None:
            return locked, False
        if locked.kind == Attempt.Kind.INTERVIEW and is_expired(locked, now):
            # An interview trace answers under its clock or not at all: past it (and the
            # network grace) it closes as expired, keeping only the clock's time, and the
            # answer is not graded (``late_interview_answer_notice`` tells the learner).
            _close_locked(locked, "expired", now)
            return locked, False
        elapsed = clock_elapsed_s(locked, now)
        practice = locked.mode == Attempt.Mode.PRACTICE
        result = grade(
            diagnosis,
            graded_key(locked.trace),
            elapsed_s=elapsed,
            limit_s=time_limit_s(),
            practice=practice,
        )
        rating = scheduling.rating_for(result)
        locked.submitted_at = now
        locked.answer_scenario = diagnosis.scenario
        locked.answer_measurement = diagnosis.measurement
        locked.answer_fix = diagnosis.fix
        locked.answer_expected_ms = diagnosis.expected_step_ms
        locked.answer_step_ms = diagnosis.step_ms
        locked.answer_gap_ms = diagnosis.gap_ms
        locked.answer_measurement_value = diagnosis.measurement_value
        locked.answer_arithmetic = diagnosis.arithmetic
        locked.elapsed_s = elapsed
        locked.scenario_correct = result.scenario_correct
        locked.measurement_correct = result.measurement_correct
        locked.fix_correct = result.fix_correct
        locked.win_correct = result.win_correct
        locked.win_error = result.win_error if result.win_error != float("inf") else None
        locked.step_correct = result.step_correct
        locked.gap_correct = result.gap_correct
        locked.value_correct = result.value_correct
        locked.expected_correct = result.expected_correct
        locked.five_sentence = True
        locked.over_time = result.over_time
        locked.rating = int(rating)
        locked.counted = scheduling.counts_for_schedule(result)
        fixed.queue_twin(locked, now)
        locked.save()
        if not held_for_interview(locked):
            record_grade(locked, result)
    return locked, True


def held_for_interview(locked: Attempt) -> bool:
    """Inside the transaction that grades ``locked``: whether its grade waits for the end of its
    mock interview before it counts anywhere (the dashboard's counters, the scheduling cards, a
    contrast trial). Mid-interview, any number that moved would name the answer of the trace
    just answered, and whether it was right; ``drills.interview.services.finish_if_done``
    records the interview's grades when it ends. Locks the interview row, so an interview ending
    at the same moment either sees this grade stored or has ended before it is decided here."""
    if locked.kind != Attempt.Kind.INTERVIEW or locked.interview_id is None:
        return False
    interview = MockInterview.objects.select_for_update().get(pk=locked.interview_id)
    return interview.grades_held and not interview.is_finished


def record_grade(locked: Attempt, grade: scheduling.GradeLike | None = None) -> None:
    """What a stored grade changes outside its attempt, inside the transaction that stores it
    (or, for a mock interview's trace, the one that ends the interview): the summary counters,
    the scheduling cards (reviewed at the grade's own time, as ``rebuild_cards`` replays them)
    and the contrast trial a confusion calls for."""
    assert locked.submitted_at is not None
    if grade is None:
        grade = cards.stored_grade({f: getattr(locked, f) for f in cards.REPLAY_FIELDS})
    summaries.record_attempt(locked)
    cards.apply_trace_attempt(locked, grade, when=locked.submitted_at)
    contrast.queue_trial_for(locked)


def graded_key(trace) -> dict:
    """The trace's answer key with its graded values. A trace stored before the key carried them
    is measured now from its own stored events (the ones the learner was shown)."""
    key = trace.key
    if key.get("grading"):
        return key
    try:
        events = trace.load()
        block = engine_diagnosis.key_block(
            events.cols, events.names, events.args, key["scenario"], float(key["expected_step_ms"])
        )
    except Exception:  # an unreadable payload: grade what the key carries
        log.warning("trace %s: no graded values and its events could not be read", trace.pk)
        return key
    return {**key, "grading": block}
