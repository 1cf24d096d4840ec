"""The reveal's numbers agree with each other: a figure printed in a row is the one the
arithmetic beside it uses."""

from __future__ import annotations

from drills.models import Attempt
from drills.trainer import reveal


def _key(step_ms: float, graded_step_ms: float) -> dict:
    return {
        "scenario": "memory-bound-kernel",
        "step_ms": step_ms,
        "expected_step_ms": 150.3,
        "arithmetic": [f"expected step ≈ {step_ms:.1f} − 166.9 − 2.6 = 150.3 ms (2.13×)"],
        "facts": {"world": 4},
        "grading": {"step_ms": graded_step_ms, "gap_ms": 10.2, "expected_step_ms": 150.3},
    }


def test_the_step_row_prints_the_step_time_the_arithmetic_uses():
    # 319.8498 ms is graded as 319.85 (three decimals) and printed by the key as 319.8; the
    # row said "319.9 ms" beside "319.8 − 166.9 − 2.6 = 150.3" in the arithmetic.
    key = _key(319.8, 319.85)
    rows = reveal.sentences(Attempt(answer_step_ms=319.8), key)
    step_row = rows[0]
    assert step_row["truth"].startswith("319.8 ms")
    assert "319.8 −" in key["arithmetic"][0]


def test_the_step_row_falls_back_to_the_graded_step_time():
    key = _key(0, 22.05)
    del key["step_ms"]
    assert reveal.shown_step_ms(key) == 22.05
