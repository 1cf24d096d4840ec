"""What the reveal shows: the five sentences as rows — what the learner said, this trace's value,
right or wrong with the tolerance, and the evidence to zoom to — plus the key's explanation."""

from __future__ import annotations

import json
from typing import Any

from drills.models import Attempt
from scenarios import engine
from scenarios.engine import diagnosis as D


def _label(catalogue: dict[str, str], key: str) -> str:
    return catalogue.get(key, key or "—")


def _measurement_label(key: str) -> str:
    m = D.MEASUREMENTS.get(key)
    if m is not None:
        return m.label
    return engine.MEASUREMENTS.get(key, key or "—")  # an older attempt's catalogue


def _fix_label(key: str) -> str:
    return D.FIX_CATALOGUE.get(key, key or "—")


def number_text(x: Any, unit: str = "") -> str:
    """A number as every panel of the reveal prints it ("—" when there is none)."""
    if x is None:
        return "—"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "—"
    if v != v:  # NaN
        return "—"
    # One decimal up to 10 000, as the key's arithmetic writes them: "144.5 ms", never "144 ms"
    # beside "164.8 − 20.3 = 144.5 ms".
    digits = 0 if abs(v) >= 10_000 else 1 if abs(v) >= 10 else 2
    text = f"{v:,.{digits}f}".replace(",", " ")
    return f"{text} {unit}" if unit else text


def _how(measurement: str) -> str:
    """How the measurement is taken with the viewer's own instruments ("" when unknown)."""
    m_def = D.MEASUREMENTS.get(measurement)
    return m_def.how if m_def else ""


def _row(
    n: str,
    title: str,
    said: str,
    truth: str,
    correct: bool | None,
    tolerance: str,
    evidence: list[dict],
    note: str = "",
    how: str = "",
) -> dict[str, Any]:
    return {
        "n": n,
        "title": title,
        "said": said,
        "truth": truth,
        "correct": correct,
        "tolerance": tolerance,
        "evidence": evidence,
        "evidence_json": json.dumps(evidence),
        "note": note,
        "how": how,
    }


def shown_step_ms(key: dict[str, Any]) -> Any:
    """The step time the reveal prints: the key's own (rounded once, as its arithmetic and fix
    text print it), not the grading value's 3-decimal figure rounded again, which can land on
    the other side (319.8498 → 319.85 → "319.9" beside "319.8 − 166.9 = ...")."""
    g: dict[str, Any] = key.get("grading") or {}
    return key.get("step_ms", g.get("step_ms"))


# the key's notes that say what to check, not how another tool takes the measurement
_NOT_A_TOOL = ("none", "mfu")


def measurement_note(key: dict[str, Any]) -> str:
    """The key's note on the measurement, said to be the profilers' way of confirming the same
    thing: "HTA get_cuda_kernel_launch_stats(): CPU launch duration against ..." under "Launch
    cadence vs kernel time" read as a description of the measurement named above it."""
    text = str(key.get("measurement_text") or "")
    if not text or key.get("measurement") in _NOT_A_TOOL:
        return text
    return f"Outside this viewer (HTA, Nsight, the profiler): {text}"


def sentences(attempt: Attempt, key: dict[str, Any]) -> list[dict[str, Any]]:
    g: dict[str, Any] = key.get("grading") or {}
    ev: dict[str, list[dict]] = g.get("evidence") or {}
    sig_ev = key.get("evidence") or []
    step_truth = number_text(shown_step_ms(key), "ms")
    if int((key.get("facts") or {}).get("world") or 1) > 1:
        # a rank on its own reads a little less: say which step time this is
        step_truth += " (each step's slowest rank, averaged)"
    rows = [
        _row(
            "1",
            "Step time",
            number_text(attempt.answer_step_ms, "ms"),
            step_truth,
            attempt.step_correct,
            f"±{D.STEP_TOLERANCE * 100:.0f} %",
            ev.get("step", []),
        )
    ]
    gap_truth = number_text(g.get("gap_ms"), "ms")
    lo, hi = (g.get("gap_range_ms") or [None, None])[:2]
    if lo is not None and hi is not None and number_text(lo) != number_text(hi):
        gap_truth += f" (ranks {number_text(lo)}–{number_text(hi)} ms)"
    rows.append(
        _row(
            "2",
            "Gap: GPU compute idle per step",
            number_text(attempt.answer_gap_ms, "ms"),
            gap_truth,
            attempt.gap_correct,
            f"±{D.GAP_TOLERANCE * 100:.0f} % or ±{D.GAP_FLOOR_OF_STEP * 100:.0f} % of the step, "
            "any rank",
            ev.get("gap", []),
        )
    )
    rows.append(
        _row(
            "3",
            "Signature",
            attempt.answer_title,
            engine.title_of(key["scenario"]),
            attempt.scenario_correct,
            "exact",
            sig_ev,
            key.get("signature", ""),
        )
    )
    accepted = g.get("measurements_accepted") or [key.get("measurement", "")]
    named = attempt.answer_measurement
    m_def = D.MEASUREMENTS.get(named)
    values = g.get("measurements") or {}
    unit = m_def.unit if m_def else ""
    if named in values:
        truth_val = number_text(values[named]["value"], unit)
        lo, hi = values[named].get("lo"), values[named].get("hi")
        if lo is not None and hi is not None and number_text(lo) != number_text(hi):
            truth_val += f" (ranks {number_text(lo)}–{number_text(hi)})"
    else:
        truth_val = key.get("measurement_value", "—")
    confirm = " or ".join(_measurement_label(k) for k in accepted)
    ref = accepted[0] if accepted else ""
    ref_val = ""
    if ref in values and ref != named:
        ref_def = D.MEASUREMENTS.get(ref)
        ref_unit = ref_def.unit if ref_def else ""
        ref_val = f" — on this trace: {number_text(values[ref]['value'], ref_unit)}"
    rows.append(
        _row(
            "4",
            "The measurement that confirms it",
            _measurement_label(named),
            confirm + ref_val,
            attempt.measurement_correct,
            "one that confirms this signature",
            ev.get(ref, []) or sig_ev,
            measurement_note(key),
            how=_how(ref),
        )
    )
    rows.append(
        _row(
            "4b",
            f"Its value on this trace ({_measurement_label(named)})" if m_def else "Its value",
            number_text(attempt.answer_measurement_value, unit),
            truth_val,
            attempt.value_correct,
            m_def.band_text() if m_def else "",
            ev.get(named, []),
            how=_how(named) if named != ref else "",
        )
    )
    fixes = g.get("fixes_accepted") or [key.get("fix", "")]
    rows.append(
        _row(
            "5",
            "The fix",
            _fix_label(attempt.answer_fix),
            " or ".join(_fix_label(k) for k in fixes),
            attempt.fix_correct,
            "exact",
            sig_ev,
            key.get("fix_text", ""),
        )
    )
    expected_ok = attempt.expected_correct if attempt.five_sentence else attempt.win_correct
    rows.append(
        _row(
            "5b",
            "Expected step time after the fix",
            number_text(attempt.answer_expected_ms, "ms"),
            number_text(g.get("expected_step_ms", key.get("expected_step_ms")), "ms"),
            expected_ok,
            D.expected_tolerance_text(
                float(g.get("step_ms") or key.get("step_ms") or 0.0),
                float(g.get("expected_step_ms") or key.get("expected_step_ms") or 0.0),
            )
            if attempt.five_sentence
            else "±20 %",
            ev.get("step", []),
        )
    )
    return rows


def build(attempt: Attempt) -> dict[str, Any]:
    key = attempt.trace.key
    rows = sentences(attempt, key)
    healthy = key["scenario"] == "healthy"
    return {
        "scenario": key["scenario"],
        "title": engine.title_of(key["scenario"]),
        "answered_title": attempt.answer_title,
        "closed": attempt.closed if not attempt.answer_scenario else "",
        "twin": engine.lookalike_of(key["scenario"]),
        "signature": key["signature"],
        "rows": rows,
        "arithmetic": key.get("arithmetic", []),
        "answered_arithmetic": attempt.answer_arithmetic,
        "evidence": key.get("evidence", []),
        "mentalmath_family": key.get("mentalmath_family"),
        "elapsed_s": attempt.elapsed_s,
        "red_herring": D.red_herring(attempt.trace.prompt, key.get("facts") or {})
        if healthy
        else [],
        "fully_correct": attempt.fully_correct,
    }
