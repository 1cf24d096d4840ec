"""Grading a committed diagnosis against a trace's answer key. Pure: no Django, no I/O."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from scenarios.engine.catalog import lookalike_of

WIN_TOLERANCE = 0.20  # the expected step time must land within ±20 % of the key's
GRACE_S = 2.0  # network allowance on top of the time limit, never shown to the learner


@dataclass(frozen=True, slots=True)
class Diagnosis:
    scenario: str
    measurement: str
    fix: str
    expected_step_ms: float


@dataclass(frozen=True, slots=True)
class GradeResult:
    true_scenario: str
    answered_scenario: str
    scenario_correct: bool
    measurement_correct: bool
    fix_correct: bool
    win_correct: bool
    win_error: float  # relative error of the expected step time (0.1 = 10 % off)
    elapsed_s: float
    over_time: bool
    practice: bool
    twin_confusion: bool  # answered the lookalike twin of the true scenario

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def accepted(key: dict[str, Any], field: str) -> set[str]:
    """Catalogue keys the answer key accepts for ``field`` ("measurement" or "fix")."""
    keys = set(key.get(f"{field}s_accepted") or ())
    keys.add(key[field])
    return keys


def win_within(expected_ms: float, key_ms: float, tolerance: float = WIN_TOLERANCE) -> bool:
    if not (math.isfinite(expected_ms) and math.isfinite(key_ms)) or key_ms <= 0:
        return False
    return abs(expected_ms - key_ms) <= tolerance * key_ms + 1e-9


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
    true = key["scenario"]
    key_ms = float(key["expected_step_ms"])
    error = abs(diagnosis.expected_step_ms - key_ms) / key_ms if key_ms > 0 else math.inf
    return GradeResult(
        true_scenario=true,
        answered_scenario=diagnosis.scenario,
        scenario_correct=diagnosis.scenario == true,
        measurement_correct=diagnosis.measurement in accepted(key, "measurement"),
        fix_correct=diagnosis.fix in accepted(key, "fix"),
        win_correct=win_within(diagnosis.expected_step_ms, key_ms),
        win_error=error,
        elapsed_s=elapsed_s,
        over_time=False if practice else is_over_time(elapsed_s, limit_s),
        practice=practice,
        twin_confusion=diagnosis.scenario != true and lookalike_of(true) == diagnosis.scenario,
    )
