"""Contrast trials: after a confusion, two traces of one workload side by side.

A trial is an ``Attempt`` of kind ``contrast`` (``drills.models``): ``trace`` is drawn on the
left, ``partner`` on the right, ``scenario`` is the one the learner is asked to find and ``item``
the pair's card (``drills.scheduling.pair_key``). Both traces come from one workload draw
(``engine.generate_pair``), so only the injected signatures differ. The scheduler decides when one
is due (``drills.scheduling.pick_trial``); ``drills.trainer.services.next_drill`` deals it.

Trials are not pooled: a pair is one of 55 scenario pairs and trials are rare (one per confusion,
then as the pair's card falls due), so a pool per pair would hold hundreds of traces nobody draws.
Instead the worker draws one pair ahead per learner and confused pair (``prepare_trial``, a
``PreparedTrial`` row): queued when a graded answer confuses the pair (which pulls its card due)
and again when a trial on it is graded, ready for the next one. The deal takes it
(``take_prepared``); only a trial with nothing prepared (the worker has not finished, a confusion
from before pairs were prepared) is generated on the request path. Measured on the 2-core dev box
under a load of 6-10: a pair with its timelines, gzip and payload takes 0.2 s (decode workloads)
to 3.8 s (large DDP ones).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from drills import scheduling, summaries
from drills.models import Attempt, PreparedTrial
from drills.scheduling import cards
from drills.trainer.grading import GRACE_S
from drills.trainer.reveal import number_text, shown_step_ms
from scenarios import background, engine, pool
from scenarios.engine import diagnosis as D
from scenarios.models import Trace

log = logging.getLogger(__name__)

LIMIT_S = scheduling.TRIAL_LIMIT_S
LEFT, RIGHT = "left", "right"
PREPARE_TASK = "drills.tasks.prepare_trial"


def generate_pair_rows(pair: str, seed: int, *, left_first: bool) -> tuple[Trace, Trace]:
    """The two unsaved trace rows of a trial on ``pair`` (left, right)."""
    a, b = scheduling.pair_of(pair)
    ta, tb = engine.generate_pair(a, b, seed)
    rows = (
        pool.trace_row(ta, source=Trace.Source.CONTRAST),
        pool.trace_row(tb, source=Trace.Source.CONTRAST),
    )
    return rows if left_first else (rows[1], rows[0])


def deal(user, pair: str, now: datetime | None = None) -> Attempt:
    """Store a new trial on ``pair`` for ``user`` (the caller holds the learner's deal lock and
    has checked that nothing is open): the pair the worker drew ahead, else one drawn now."""
    now = now or timezone.now()
    rng = secrets.SystemRandom()
    left_first = rng.random() < 0.5
    prepared = take_prepared(user, pair)
    if prepared is not None:
        left, right = prepared if left_first else (prepared[1], prepared[0])
    else:

        def draw() -> tuple[Trace, Trace]:
            log.info("no prepared trial on %s for user %s: drawing it now", pair, user.pk)
            seed = secrets.randbits(pool.SEED_BITS)
            return generate_pair_rows(pair, seed, left_first=left_first)

        # before the deal's transaction when the deal runs `pool.draws_outside_transaction`
        left, right = pool.drawn_or_draw("pair", pair, draw)
    for row in (left, right):
        row.claimed_at = now
        row.claimed_by = user
        if prepared is None:
            row.save(force_insert=True)
        else:
            row.save(update_fields=["claimed_at", "claimed_by"])
    return Attempt.objects.create(
        user=user,
        trace=left,
        partner=right,
        scenario=rng.choice(scheduling.pair_of(pair)),
        item=pair,
        kind=Attempt.Kind.CONTRAST,
        mode=Attempt.Mode.TIMED,
        served_at=now,
    )


# --------------------------------------------------------------------------- drawn ahead


def take_prepared(user, pair: str) -> tuple[Trace, Trace] | None:
    """The learner's prepared pair on ``pair`` (its row deleted: used once), or None. Call in
    the deal's transaction; the traces are still unclaimed, the caller claims them."""
    prepared = (
        PreparedTrial.objects.select_for_update(of=("self",))
        .select_related("first", "second")
        .defer(*Trace.blob_paths("first"), *Trace.blob_paths("second"))
        .filter(user=user, item=pair)
        .first()
    )
    if prepared is None:
        return None
    first, second = prepared.first, prepared.second
    prepared.delete()
    if engine.GENERATOR_VERSION not in (first.generator_version, second.generator_version):
        # Drawn by an engine since replaced: the learner gets a pair from today's engine.
        Trace.objects.filter(pk__in=(first.pk, second.pk)).delete()
        return None
    return first, second


def pair_to_prepare(attempt: Attempt) -> str | None:
    """The pair whose next trial a graded attempt calls for: a trial's own pair (its card is
    reviewed and will fall due again), or the pair an answer confused (its card is pulled due
    now). None for practice and for answers that confuse nothing."""
    if attempt.mode == Attempt.Mode.PRACTICE:
        return None
    if attempt.kind == Attempt.Kind.CONTRAST:
        return attempt.item or None
    if attempt.kind in (Attempt.Kind.DRILL, Attempt.Kind.INTERVIEW):
        return scheduling.confusion_pair(attempt.scenario, attempt.answer_scenario)
    return None


def queue_trial_for(attempt: Attempt) -> None:
    """Inside the transaction that grades ``attempt``: have the worker draw the pair it calls
    for once the grade commits."""
    pair = pair_to_prepare(attempt)
    if pair is not None:
        background.send_on_commit(PREPARE_TASK, [attempt.user_id, pair], prepare_trial)


def prepare_trial(user_id: int, pair: str) -> bool:
    """Draw and store one trial pair ahead for the learner, unless one is waiting (the worker's
    task). Generated outside any transaction; the two traces and the row that ties them are
    stored together or not at all. Returns whether it stored one."""
    if PreparedTrial.objects.filter(user_id=user_id, item=pair).exists():
        return False
    if not get_user_model().objects.filter(pk=user_id).exists():
        return False
    first, second = generate_pair_rows(pair, secrets.randbits(pool.SEED_BITS), left_first=True)
    try:
        with transaction.atomic():
            first.save(force_insert=True)
            second.save(force_insert=True)
            PreparedTrial.objects.create(user_id=user_id, item=pair, first=first, second=second)
    except IntegrityError:  # one was stored meanwhile (a redelivery, a concurrent run)
        return False
    return True


# --------------------------------------------------------------------------- what tells them apart


def accepted_measurements(key: dict[str, Any]) -> list[str]:
    g = key.get("grading") or {}
    return list(g.get("measurements_accepted") or [key.get("measurement", "")])


def signature_measurements(key: dict[str, Any]) -> list[str]:
    """The measurements that confirm the trace's signature. A healthy trace has none: the ones
    its key accepts (GPU idle share, exposed communication) confirm that nothing stands out, and
    the pathology beside it stands out on exactly those."""
    if key.get("scenario") == "healthy":
        return []
    return accepted_measurements(key)


def telling_measurements(target_key: dict[str, Any], other_key: dict[str, Any]) -> list[str]:
    """The measurements that tell the pair apart: those that confirm one of the two signatures
    and not the other (one confirming both separates nothing). Beside a healthy trace that is
    the other's own confirming measurement: exposed communication tells an unoverlapped
    all-reduce from a healthy DDP step, and it tells a launch-bound decode (0 ms on both) from
    nothing."""
    mine, theirs = signature_measurements(target_key), signature_measurements(other_key)
    return [m for m in dict.fromkeys(mine + theirs) if (m in mine) != (m in theirs)]


def measurement_correct(measurement: str, target_key: dict[str, Any], other_key: dict[str, Any]):
    return measurement in telling_measurements(target_key, other_key)


def sides(attempt: Attempt) -> dict[str, Trace]:
    assert attempt.partner is not None
    return {LEFT: attempt.trace, RIGHT: attempt.partner}


def target_side(attempt: Attempt) -> str:
    return LEFT if attempt.trace.scenario == attempt.scenario else RIGHT


def other_of(attempt: Attempt) -> str:
    a, b = scheduling.pair_of(attempt.item)
    return b if attempt.scenario == a else a


# --------------------------------------------------------------------------- clock and grading


def elapsed_s(attempt: Attempt, now: datetime) -> float:
    return max(0.0, (now - attempt.served_at).total_seconds())


def remaining_s(attempt: Attempt, now: datetime) -> float:
    return max(0.0, LIMIT_S - elapsed_s(attempt, now))


def is_over_time(seconds: float) -> bool:
    return seconds > LIMIT_S + GRACE_S


@dataclass(frozen=True, slots=True)
class TrialGrade:
    """A trial's grade in the shape ``scheduling.rating_for`` reads (``trial`` selects the
    trial's own rule)."""

    scenario_correct: bool  # picked the trace that is the asked-for scenario
    measurement_correct: bool
    elapsed_s: float
    over_time: bool
    fix_correct: bool = True
    win_correct: bool = True
    practice: bool = False
    trial: bool = True


def submit(attempt: Attempt, side: str, measurement: str) -> tuple[Attempt, bool]:
    """Grade and store the trial's answer once. Returns (attempt, graded_now)."""
    if side not in (LEFT, RIGHT):
        raise ValueError(f"side must be {LEFT!r} or {RIGHT!r}")
    now = timezone.now()
    with transaction.atomic():
        locked = (
            Attempt.objects.select_for_update(of=("self",))
            .select_related("trace", "partner")
            .defer(*Trace.blob_paths("trace"), *Trace.blob_paths("partner"))
            .get(pk=attempt.pk)
        )
        if locked.submitted_at is not None:
            return locked, False
        picked = sides(locked)[side]
        other = sides(locked)[RIGHT if side == LEFT else LEFT]
        target_key = picked.key if picked.scenario == locked.scenario else other.key
        other_key = other.key if picked.scenario == locked.scenario else picked.key
        seconds = elapsed_s(locked, now)
        result = TrialGrade(
            scenario_correct=picked.scenario == locked.scenario,
            measurement_correct=measurement_correct(measurement, target_key, other_key),
            elapsed_s=seconds,
            over_time=is_over_time(seconds),
        )
        locked.submitted_at = now
        locked.answer_scenario = picked.scenario
        locked.answer_measurement = measurement
        locked.elapsed_s = seconds
        locked.scenario_correct = result.scenario_correct
        locked.measurement_correct = result.measurement_correct
        locked.five_sentence = False
        locked.over_time = result.over_time
        locked.rating = int(scheduling.rating_for(result))
        locked.counted = scheduling.counts_for_schedule(result)
        locked.save()
        summaries.record_attempt(locked)  # no counters for trials; bumps the dashboard version
        cards.apply_trace_attempt(locked, result, when=now)
        queue_trial_for(locked)
    return locked, True


# --------------------------------------------------------------------------- the reveal


def reveal(attempt: Attempt) -> dict[str, Any]:
    """What the trial's reveal shows: which side was which, and the measurements that tell the
    two apart with their values on both traces."""
    by_side = sides(attempt)
    target = target_side(attempt)
    target_key = by_side[target].key
    other_key = by_side[RIGHT if target == LEFT else LEFT].key
    telling = telling_measurements(target_key, other_key)
    rows = []
    for m in telling:
        spec = D.MEASUREMENTS.get(m)
        unit = spec.unit if spec else ""
        values = {
            s: ((t.key.get("grading") or {}).get("measurements") or {}).get(m, {}).get("value")
            for s, t in by_side.items()
        }
        confirms = engine.title_of(
            target_key["scenario"]
            if m in signature_measurements(target_key)
            else other_key["scenario"]
        )
        rows.append(
            {
                "key": m,
                "label": spec.label if spec else m,
                "left": number_text(values[LEFT], unit),
                "right": number_text(values[RIGHT], unit),
                "confirms": confirms,
                "chosen": m == attempt.answer_measurement,
            }
        )
    picked = None
    if attempt.answer_scenario:
        picked = LEFT if attempt.trace.scenario == attempt.answer_scenario else RIGHT
    return {
        "target_side": target,
        "picked_side": picked,
        "target_title": engine.title_of(attempt.scenario),
        "other_title": engine.title_of(other_key["scenario"]),
        "titles": {s: engine.title_of(t.scenario) for s, t in by_side.items()},
        "signatures": {s: t.key.get("signature", "") for s, t in by_side.items()},
        "steps": {
            # as the trace's own signature text and the trainer's reveal print it
            s: number_text(shown_step_ms(t.key), "ms")
            for s, t in by_side.items()
        },
        "rows": rows,
        "measurement_label": D.MEASUREMENTS[attempt.answer_measurement].label
        if attempt.answer_measurement in D.MEASUREMENTS
        else (attempt.answer_measurement or "—"),
        "evidence": {s: t.key.get("evidence", []) for s, t in by_side.items()},
    }
