"""What the reveal shows: the key's three sections beside what the learner committed."""

from __future__ import annotations

from typing import Any

from drills.models import Attempt
from scenarios import engine


def _label(catalogue: dict[str, str], key: str) -> str:
    return catalogue.get(key, key or "—")


def build(attempt: Attempt) -> dict[str, Any]:
    key = attempt.trace.key
    return {
        "scenario": key["scenario"],
        "title": engine.title_of(key["scenario"]),
        "answered_title": engine.title_of(attempt.answer_scenario),
        "twin": engine.lookalike_of(key["scenario"]),
        "signature": key["signature"],
        "measurement_label": key.get("measurement_label")
        or _label(engine.MEASUREMENTS, key["measurement"]),
        "measurement_value": key.get("measurement_value", ""),
        "measurement_text": key.get("measurement_text", ""),
        "answered_measurement": _label(engine.MEASUREMENTS, attempt.answer_measurement),
        "fix_label": _label(engine.FIXES, key["fix"]),
        "fix_text": key.get("fix_text", ""),
        "answered_fix": _label(engine.FIXES, attempt.answer_fix),
        "step_ms": key["step_ms"],
        "expected_step_ms": key["expected_step_ms"],
        "answered_expected_ms": attempt.answer_expected_ms,
        "arithmetic": key.get("arithmetic", []),
        "evidence": key.get("evidence", []),
        "mentalmath_family": key.get("mentalmath_family"),
        "elapsed_s": attempt.elapsed_s,
        "fully_correct": attempt.fully_correct,
    }
