"""The mental-math trainer: the arithmetic behind every diagnosis (pure: stdlib only, no Django).

    from drills import mentalmath
    p = mentalmath.make_problem("allreduce-time", seed=7)
    p.prompt, p.answer, p.unit, p.tolerance, p.steps
    g = mentalmath.grade_answer(p, "68 ms")   # g.parsed, g.correct, g.value, g.error, g.message

Answers are always numbers in the problem's canonical unit (``Problem.unit``); questions that are
categorical at heart ("memory- or compute-bound?") ask for the number that decides it (the
intensity, the ridge, the attainable TFLOP/s) and the steps state the verdict. A bare number is
read in the canonical unit. See ``units`` for what can be typed and ``families`` for the drills.
"""

from .families import FAMILIES, GENERATOR_VERSION, Family, build_problem, make_problem
from .problem import DEFAULT_TOLERANCE, Graded, Problem, grade_answer

__all__ = [
    "DEFAULT_TOLERANCE",
    "FAMILIES",
    "GENERATOR_VERSION",
    "Family",
    "Graded",
    "Problem",
    "build_problem",
    "grade_answer",
    "make_problem",
]
