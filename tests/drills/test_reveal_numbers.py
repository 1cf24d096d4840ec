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


def test_the_measurement_rows_tool_note_says_it_is_another_tools_way():
    """Under "Launch cadence vs kernel time" the note "HTA get_cuda_kernel_launch_stats(): CPU
    launch duration against GPU kernel duration ..." read as a description of that measurement."""
    key = {
        **_key(20.6, 20.6),
        "scenario": "launch-bound",
        "measurement": "launch_vs_kernel",
        "measurement_text": "HTA get_cuda_kernel_launch_stats(): CPU launch duration against GPU "
        "kernel duration per correlation; queue length stays near zero.",
    }
    rows = reveal.sentences(Attempt(answer_measurement="launch_ratio"), key)
    assert rows[3]["note"].startswith("Outside this viewer (HTA, Nsight, the profiler): HTA ")
    healthy = {**key, "measurement": "none", "measurement_text": "No measurement needed."}
    assert reveal.sentences(Attempt(), healthy)[3]["note"] == "No measurement needed."
