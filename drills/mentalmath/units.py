"""Reading a learner's typed answer: one number, an optional unit, converted to the canonical unit.

Rules (the grader's contract, also shown to learners on the drill page):

* A bare number is read in the problem's canonical unit. For a percentage answer "12.5" means
  12.5 %, and "0.125" means 0.125 % (not a fraction); write "12.5 %" or "12.5" for twelve and a
  half percent. A wrong answer that is off by exactly 100x gets a hint about this.
* Numbers: "68", "68.5", ".5", "6.8e1", "68,000" (commas only between groups of three digits),
  an optional leading "~", "≈", "=", "about", "approx." or "roughly".
* ``B`` is a byte and ``b`` is a bit, whatever the case of the prefix: "GB/s" is gigabytes per
  second, "Gb/s" and "Gbps" are gigabits per second (8x smaller). Decimal prefixes (k, M, G, T, P)
  are powers of 1000, binary ones (Ki, Mi, Gi, Ti) powers of 1024. A lower-case prefix ("gb",
  "mb") is read as the upper-case one: nobody means millibytes.
* Time: ns, µs (also "us", "μs"), ms, s, min, h, d (and the spelled-out words).
* FLOP rates: "TFLOP/s", "TFLOPS", "TFLOPs", "PFLOP/s", "GFLOPS"; intensity: "FLOP/B", "FLOPs/byte".
* Speedups: "1.15x", "1.15×", "1.15 times"; counts: "3", "3 workers".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = [
    "DIMENSION_NAMES",
    "ParsedAnswer",
    "UnitError",
    "canonical_factor",
    "dimension_of",
    "lookup_unit",
    "parse_answer",
]

# Dimension -> phrase used in messages ("that's a bandwidth unit, the answer is a time").
DIMENSION_NAMES: dict[str, str] = {
    "time": "a time",
    "bandwidth": "a bandwidth",
    "bytes": "a size in bytes",
    "flop_rate": "a FLOP rate",
    "flops": "a FLOP count",
    "intensity": "an arithmetic intensity",
    "percent": "a percentage",
    "speedup": "a speedup",
    "count": "a count",
}

_UNIT_WORDS: dict[str, str] = {
    "time": "time",
    "bandwidth": "bandwidth",
    "bytes": "size",
    "flop_rate": "FLOP-rate",
    "flops": "FLOP-count",
    "intensity": "intensity",
    "percent": "percentage",
    "speedup": "speedup",
    "count": "count",
}

_DECIMAL = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}
_BINARY = {"ki": 2.0**10, "mi": 2.0**20, "gi": 2.0**30, "ti": 2.0**40, "pi": 2.0**50}

# Case-insensitive units: (dimension, factor to the base unit: seconds, 1 %, 1x, 1 FLOP/B, 1).
_SIMPLE: dict[str, tuple[str, float]] = {}


def _add(dim: str, factor: float, *names: str) -> None:
    for name in names:
        _SIMPLE[name.casefold()] = (dim, factor)


_add("time", 1e-9, "ns", "nsec", "nanosecond", "nanoseconds")
_add("time", 1e-6, "us", "usec", "microsecond", "microseconds")
_add("time", 1e-3, "ms", "msec", "millisecond", "milliseconds")
_add("time", 1.0, "s", "sec", "secs", "second", "seconds")
_add("time", 60.0, "min", "mins", "minute", "minutes", "m")
_add("time", 3600.0, "h", "hr", "hrs", "hour", "hours")
_add("time", 86400.0, "d", "day", "days")
_add("percent", 1.0, "%", "percent", "pct", "per cent")
_add("speedup", 1.0, "x", "×", "times", "fold")
_add("count", 1.0, "worker", "workers", "process", "processes", "proc", "procs")
for _i in ("flop/b", "flops/b", "flop/byte", "flops/byte", "flop per byte", "flops per byte"):
    _add("intensity", 1.0, _i)

_BYTES_RE = re.compile(
    r"^(?P<prefix>[kmgtpe]i?)?(?P<base>B|b|bit|bits|byte|bytes)"
    r"\s?(?P<rate>/s|/sec|ps|per second|per sec)?$",
    re.IGNORECASE,
)
_FLOPS_RE = re.compile(r"^(?P<prefix>[kmgtpe])?(?P<base>flop|flops)(?P<rate>/s|/sec|ps)?$", re.I)


class UnitError(ValueError):
    """A unit we can't read."""


def _normalise(unit: str) -> str:
    u = unit.strip().replace("\u00b5", "u").replace("\u03bc", "u")
    u = re.sub(r"\s*/\s*", "/", u)
    u = re.sub(r"\s+", " ", u)
    return u.rstrip(".")


def lookup_unit(unit: str) -> tuple[str, float]:
    """Return (dimension, factor to the dimension's base unit) for a unit string.

    Base units: seconds, bytes, bytes/s, FLOP, FLOP/s, FLOP/B, percent, x, count.
    """
    u = _normalise(unit)
    if not u:
        raise UnitError("empty unit")
    hit = _SIMPLE.get(u.casefold())
    if hit is not None:
        return hit
    m = _BYTES_RE.match(u)
    if m is not None:
        prefix = (m.group("prefix") or "").lower()
        base = m.group("base")
        scale = _BINARY[prefix] if prefix.endswith("i") else _DECIMAL[prefix]
        # "B"/"byte(s)" = byte, "b"/"bit(s)" = bit (case matters only for the single letter).
        is_bit = base == "b" or base.lower().startswith("bit")
        factor = scale / 8.0 if is_bit else scale
        return ("bandwidth" if m.group("rate") else "bytes", factor)
    m = _FLOPS_RE.match(u)
    if m is not None:
        scale = _DECIMAL[(m.group("prefix") or "").lower()]
        # "TFLOP" is an amount; "TFLOPS", "TFLOPs", "TFLOP/s" are rates (the usual sloppiness).
        is_rate = bool(m.group("rate")) or m.group("base").lower() == "flops"
        return ("flop_rate" if is_rate else "flops", scale)
    raise UnitError(f"I don't recognise the unit {unit.strip()!r}")


def dimension_of(unit: str) -> str:
    return lookup_unit(unit)[0]


def canonical_factor(unit: str) -> float:
    return lookup_unit(unit)[1]


_LEAD = re.compile(r"^(?:~|≈|=|about|approx\.?|approximately|roughly|around|circa|ca\.)\s*", re.I)
_NUMBER = re.compile(
    r"^(?P<num>[+-]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
    r"\s*(?P<unit>.*)$",
    re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    value: float  # in the canonical unit
    unit_given: str  # what the learner typed after the number ("" for a bare number)


def parse_answer(text: str, canonical_unit: str) -> ParsedAnswer:
    """Read ``text`` as one number plus an optional unit, converted into ``canonical_unit``.

    Raises ``UnitError`` with a learner-facing message when the text can't be read or its unit
    measures something else than the answer.
    """
    t = (text or "").strip()
    for _ in range(2):
        t = _LEAD.sub("", t).strip()
    if not t:
        raise UnitError("couldn't read a number: the answer is empty")
    m = _NUMBER.match(t)
    if m is None:
        raise UnitError(f"couldn't read a number in {text.strip()!r}")
    raw = m.group("num")
    unit = m.group("unit").strip()
    if unit[:1] in {",", "."} and unit[1:2].isdigit():
        raise UnitError(
            f"couldn't read the number in {text.strip()!r}: use '.' for decimals and ',' only "
            "between groups of three digits"
        )
    value = float(raw.replace(",", ""))
    if not math.isfinite(value):
        raise UnitError(f"couldn't read a finite number in {text.strip()!r}")
    want_dim, want_factor = lookup_unit(canonical_unit)
    if value < 0:
        # every quantity asked for (a time, a bandwidth, a size, a rate, a share, a speedup, a
        # count) is zero or more: a minus sign is a slip, not an answer to grade
        raise UnitError(
            f"{DIMENSION_NAMES[want_dim]} can't be negative: {text.strip()!r} has a minus sign"
        )
    if not unit:
        return ParsedAnswer(value=value, unit_given="")
    dim, factor = lookup_unit(unit)
    if dim != want_dim:
        raise UnitError(
            f"that's {_article(_UNIT_WORDS[dim])} {_UNIT_WORDS[dim]} unit, "
            f"the answer is {DIMENSION_NAMES[want_dim]}: answer in {canonical_unit}, not {unit}"
        )
    return ParsedAnswer(value=value * factor / want_factor, unit_given=unit)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"
