"""Problem and grading types of the mental-math trainer, and number formatting for prompts/steps."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .units import UnitError, lookup_unit, parse_answer

__all__ = ["DEFAULT_TOLERANCE", "Graded", "Problem", "fmt", "grade_answer", "tolerance_text"]

DEFAULT_TOLERANCE = 0.15
# Float slack on the inclusive tolerance edge, so "exactly 15 % off" counts as inside.
_EDGE_SLACK = 1e-9

Given = dict[str, float | int | str]


def fmt(x: float, sig: int = 3) -> str:
    """``x`` rounded to ``sig`` significant figures, written the way a person would.

    Integers get thousands separators ("1,230"), fractions keep only their significant digits
    ("0.0681"), no exponents for the magnitudes the drills use.
    """
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    v = float(f"{x:.{sig}g}")
    if abs(v) >= 1e15 or abs(v) < 1e-6:
        return f"{v:.{sig}g}"
    if v == int(v):
        return f"{int(v):,}"
    digits = max(0, sig - 1 - math.floor(math.log10(abs(v))))
    s = f"{v:,.{digits}f}"
    return s.rstrip("0").rstrip(".") if "." in s else s


def show(x: float | int) -> str:
    """A stated (given) number exactly as the prompt prints it."""
    return fmt(float(x), sig=12)


def tolerance_text(tolerance: float) -> str:
    if tolerance <= 0:
        return "exact"
    return f"within ±{fmt(tolerance * 100, 3)} %"


@dataclass(slots=True)
class Problem:
    """One drill question.

    ``given`` holds every number stated in the prompt (and the few labels, like the collective
    or dtype) so a reviewer or a test can recompute ``answer`` without trusting the generator.
    ``tolerance`` is relative and inclusive: an answer is correct when
    ``|value - answer| / |answer| <= tolerance``; 0 means the exact value (whole-number answers).
    """

    family: str
    framing: str
    hardware: str
    seed: int | None
    prompt: str
    answer: float
    unit: str
    tolerance: float = DEFAULT_TOLERANCE
    steps: list[str] = field(default_factory=list)
    given: Given = field(default_factory=dict)

    @property
    def answer_text(self) -> str:
        return f"{fmt(self.answer)} {self.unit}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "framing": self.framing,
            "hardware": self.hardware,
            "seed": self.seed,
            "prompt": self.prompt,
            "answer": self.answer,
            "unit": self.unit,
            "tolerance": self.tolerance,
            "steps": list(self.steps),
            "given": dict(self.given),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Problem:
        seed = data.get("seed")
        return cls(
            family=str(data["family"]),
            framing=str(data["framing"]),
            hardware=str(data["hardware"]),
            seed=None if seed is None else int(seed),
            prompt=str(data["prompt"]),
            answer=float(data["answer"]),
            unit=str(data["unit"]),
            tolerance=float(data.get("tolerance", DEFAULT_TOLERANCE)),
            steps=[str(s) for s in data.get("steps", [])],
            given=dict(data.get("given", {})),
        )


@dataclass(frozen=True, slots=True)
class Graded:
    """The verdict on one typed answer.

    ``parsed`` False means the text couldn't be read (no number, unknown unit, a unit of the wrong
    kind): that is not a wrong answer, and ``correct`` is False with ``value``/``error`` None.
    ``value`` is the learner's number in the problem's canonical unit; ``error`` is relative.
    """

    parsed: bool
    correct: bool
    value: float | None
    error: float | None
    message: str
    unit: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "parsed": self.parsed,
            "correct": self.correct,
            "value": self.value,
            "error": self.error,
            "message": self.message,
            "unit": self.unit,
        }


def _near(ratio: float, target: float, slack: float = 0.03) -> bool:
    q = ratio / target  # a subnormal ratio can underflow to 0 here: no log of it then
    return 0 < q < math.inf and abs(math.log(q)) <= slack


def _hint(problem: Problem, value: float, unit_given: str) -> str:
    if problem.answer == 0 or value == 0:
        return ""
    r = value / problem.answer
    dim = lookup_unit(problem.unit)[0]
    if dim == "percent" and _near(r, 0.01):
        return " It looks like a fraction: a bare number is read in %, so write 12.5 for 12.5 %."
    if dim == "percent" and _near(r, 100.0):
        return " That's 100× too big: did you multiply by 100 twice?"
    if dim in {"bandwidth", "bytes"} and (_near(r, 8.0) or _near(r, 1 / 8)):
        return " Off by 8×: B is a byte and b is a bit (GB/s vs Gb/s)."
    if dim in {"bandwidth", "bytes"} and (
        _near(r, 2**30 / 1e9, 0.01) or _near(r, 1e9 / 2**30, 0.01)
    ):
        return " Off by 7 %: GiB (2^30 bytes) vs GB (10^9 bytes)."
    for k in (1, 2, 3):
        if _near(r, 1000.0**k) or _near(r, 1000.0**-k):
            return f" Off by {fmt(1000.0**k)}×: check the unit prefixes (µs vs ms vs s, MB vs GB)."
    if dim == "speedup" and value < 1 <= problem.answer:
        return " A speedup is old time ÷ new time, so it is above 1."
    if not unit_given and dim == "time":
        return f" A bare number is read in {problem.unit}."
    return ""


def _distance(problem: Problem, value: float, error: float) -> str:
    """How far an answer is from the expected one. The tolerance is relative; an answer that is
    itself a percentage says its distance in points first, so "1 % is 98 % from 50 %" does not
    read as two percentages of the same thing."""
    expected = problem.answer_text
    if problem.unit == "%":
        points = fmt(abs(value - problem.answer), 2)
        return f"{points} points from {expected}, a {fmt(error * 100, 2)} % relative error"
    return f"{fmt(error * 100, 2)} % from {expected}"


def grade_answer(problem: Problem, text: str) -> Graded:
    """Grade ``text`` against ``problem`` (see ``units`` for what can be typed)."""
    try:
        parsed = parse_answer(text, problem.unit)
    except UnitError as exc:
        return Graded(False, False, None, None, str(exc)[:1].upper() + str(exc)[1:], problem.unit)
    value = parsed.value
    scale = abs(problem.answer) or 1.0
    error = abs(value - problem.answer) / scale
    correct = error <= problem.tolerance + _EDGE_SLACK
    yours = f"{fmt(value, 4)} {problem.unit}"
    off = _distance(problem, value, error)
    if correct:
        msg = f"Correct: {yours}." if error < 0.005 else f"Correct: {yours} is {off}."
    else:
        msg = f"Not quite: {yours} is {off} (needs to be {tolerance_text(problem.tolerance)})."
        msg += _hint(problem, value, parsed.unit_given)
    return Graded(True, correct, value, error, msg, problem.unit)
