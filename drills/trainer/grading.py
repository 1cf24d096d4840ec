"""Grading a committed diagnosis against a trace's answer key. Pure: no Django, no I/O.

The five sentences are graded by ``scenarios.engine.diagnosis.grade_diagnosis`` against the
values the engine measured on the trace's events (the key's ``grading`` block); this module adapts
its result to what the drill stores and schedules.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from scenarios.engine import diagnosis as D
from scenarios.engine.catalog import lookalike_of

GRACE_S = 2.0  # network allowance on top of the time limit, never shown to the learner


@dataclass(frozen=True, slots=True)
class Diagnosis:
    scenario: str
    measurement: str
    fix: str
    expected_step_ms: float
    step_ms: float = math.nan
    gap_ms: float = math.nan
    measurement_value: float = math.nan
    arithmetic: str = ""


@dataclass(frozen=True, slots=True)
class GradeResult:
    true_scenario: str
    answered_scenario: str
    scenario_correct: bool
    measurement_correct: bool
    fix_correct: bool
    win_correct: bool  # the expected step time within the stated tolerance
    win_error: float  # relative error of the expected step time (0.1 = 10 % off)
    elapsed_s: float
    over_time: bool
    practice: bool
    twin_confusion: bool  # answered the lookalike twin of the true scenario
    step_correct: bool | None = None
    gap_correct: bool | None = None
    value_correct: bool | None = None
    expected_correct: bool | None = None
    five_sentence: bool = True
    sentences: tuple[D.Sentence, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_over_time(elapsed_s: float, limit_s: float) -> bool:
    return elapsed_s > limit_s + GRACE_S


def grade(
    diagnosis: Diagnosis,
    key: dict[str, Any],
    *,
    elapsed_s: float,
    limit_s: float,
    practice: bool = False,
) -> GradeResult:
    answer = D.Answer(
        step_ms=diagnosis.step_ms,
        gap_ms=diagnosis.gap_ms,
        scenario=diagnosis.scenario,
        measurement=diagnosis.measurement,
        measurement_value=diagnosis.measurement_value,
        fix=diagnosis.fix,
        expected_step_ms=diagnosis.expected_step_ms,
        arithmetic=diagnosis.arithmetic,
    )
    graded = D.grade_diagnosis(
        key, answer, elapsed_s=elapsed_s, limit_s=limit_s, grace_s=GRACE_S, practice=practice
    )
    s = graded.as_dict()
    true = key["scenario"]
    expected = graded.get("expected")
    key_ms = float(expected.truth or 0.0)
    error = abs(diagnosis.expected_step_ms - key_ms) / key_ms if key_ms > 0 else math.inf
    if not math.isfinite(error):
        error = math.inf
    return GradeResult(
        true_scenario=true,
        answered_scenario=diagnosis.scenario,
        scenario_correct=graded.scenario_correct,
        # an older key without a grading block: the measurement is graded on the old lists
        measurement_correct=bool(s["measurement"])
        if s["measurement"] is not None
        else diagnosis.measurement
        in {key.get("measurement"), *(key.get("measurements_accepted") or ())},
        fix_correct=bool(s["fix"]),
        win_correct=bool(s["expected"]),
        win_error=error,
        elapsed_s=elapsed_s,
        over_time=graded.over_time,
        practice=practice,
        twin_confusion=diagnosis.scenario != true and lookalike_of(true) == diagnosis.scenario,
        step_correct=s["step"],
        gap_correct=s["gap"],
        value_correct=s["value"],
        expected_correct=s["expected"],
        sentences=graded.sentences,
    )
