"""Reading a number the learner typed into the diagnosis form, the way a trace shows it. Pure.

A learner copies numbers off a viewer: this one prints "Δ 1.2345 s", "345.2 µs" and counts as
"1,234"; Perfetto prints a duration as "12ms 345us 678ns". Each of those is read in the field's
unit; what cannot be one value (a range, two numbers, a unit of another quantity) is refused with
a message that says why, never read as something else.

* One number, optionally after "~", "≈", "=", "about", "approx." or "roughly".
* "1,234.5" and "1.234,5" (the last separator is the decimal point, the other one groups three
  digits), "40,5" (a decimal comma), "1.2e3". "1,234" alone is refused: a thousands separator or
  a decimal comma, the text cannot say which.
* Times (a field in ms, or a measurement in ms): a bare number is ms; "ns", "µs"/"us"/"μs", "ms"
  and "s" are converted, and Perfetto's "12ms 345us 678ns" adds its parts.
* A measurement's own unit may follow its number ("40 %", "20×", "20x", "350 GB/s", "8 per
  step"); a unit of another quantity ("40 ms" for a share in %) is refused.
"""

from __future__ import annotations

import math
import re
from itertools import pairwise

__all__ = ["NumberError", "read_number"]

MAX_CHARS = 60


class NumberError(ValueError):
    """The text is not one number in the field's unit; the message says why, to the learner."""


_LEAD = re.compile(r"^(?:~|≈|=|about|approx\.?|approximately|roughly|around|circa)\s*", re.I)
# a number as typed: digits with "," and "." anywhere (sorted out below), an exponent
_NUM = r"(?>(?:\d[\d,.]*|[.,]\d[\d,.]*)(?:[eE][+-]?\d+)?)"  # atomic: "1e-3" is one number
# a number, then its unit: the words up to the next number ("8 syncs per step")
_TOKEN = re.compile(rf"([+-]?{_NUM})\s*([^\d\s+-][^\d\s]*(?:\s+[^\d\s+-][^\d\s]*)*)?\s*")
_RANGE = re.compile(rf"^[+-]?{_NUM}\s*[^\d\s+\-–—.…]*\s*(?:-|–|—|to|\.\.|…)\s*[+-]?{_NUM}")

# time units -> factor to ms
_TIME = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3, "sec": 1e3, "msec": 1.0, "usec": 1e-3}
# a measurement's unit -> (spellings accepted after its number, the quantity's name)
_OWN: dict[str, tuple[frozenset[str], str]] = {
    "%": (frozenset({"%", "percent", "pct"}), "a percentage"),
    "×": (frozenset({"×", "x", "times"}), "a ratio (×)"),
    "GB/s": (frozenset({"gb/s", "gbps", "gb/sec"}), "a bandwidth"),
    "per step": (
        frozenset(
            {"per step", "/step", "per-step"}
            | {
                f"{w}{tail}"
                for w in ("calls", "syncs", "allocs")
                for tail in ("", "/step", " per step")
            }
        ),
        "a count per step",
    ),
}
_QUANTITY = {
    **dict.fromkeys(_TIME, "a time"),
    **{s: name for spellings, name in _OWN.values() for s in spellings},
}


def _normal_unit(unit: str) -> str:
    u = unit.strip().replace("µ", "u").replace("μ", "u").casefold()
    return re.sub(r"\s*/\s*", "/", u)


def _plain(raw: str, shown: str) -> float:
    """A number's text with its separators sorted out ("1,234.5", "1.234,5", "40,5")."""
    m = re.fullmatch(r"([+-]?)([\d,.]+)(?:[eE]([+-]?\d+))?", raw)
    if m is None:
        raise NumberError(f"Could not read a number in “{shown}”.")
    sign, mant, exp = m.group(1), m.group(2), m.group(3) or "0"
    commas, points = mant.count(","), mant.count(".")
    group = ""
    if commas and points:  # the last separator is the decimal point
        point = "," if mant.rfind(",") > mant.rfind(".") else "."
        group = "." if point == "," else ","
        if mant.count(point) > 1:
            raise NumberError(f"“{shown}” has more than one decimal point.")
        whole, frac = mant.split(point)
    elif commas == 1 and not points:
        if re.fullmatch(r"\d{1,3},\d{3}", mant):
            raise NumberError(
                f"Is the comma in “{shown}” a thousands separator or a decimal point? Write "
                f"{mant.replace(',', '')} or {mant.replace(',', '.')}."
            )
        whole, frac = mant.split(",")  # a decimal comma: "40,5"
    elif commas > 1 or points > 1:  # "1,234,567" / "1.234.567": every separator groups
        group = "," if commas else "."
        whole, frac = mant, ""
    else:
        whole, _, frac = mant.partition(".")
    if group:
        parts = whole.split(group)
        if not (1 <= len(parts[0]) <= 3 and all(len(p) == 3 for p in parts[1:])):
            raise NumberError(
                f"“{shown}”: separators between digits group them in threes (1,234.5) or mark "
                "the decimals (40.5)."
            )
        whole = "".join(parts)
    if not (whole + frac).isdigit():
        raise NumberError(f"Could not read a number in “{shown}”.")
    return float(f"{sign}{whole or 0}.{frac or 0}e{exp}")


def read_number(text: str, unit: str | None) -> float:
    """``text`` read as one value in ``unit`` ("ms", "%", "×", "GB/s", "per step"; None when the
    unit is not known yet: then only a bare number is read). Raises ``NumberError``."""
    shown = " ".join(str(text or "").split())
    if len(shown) > MAX_CHARS:
        raise NumberError(f"That is {len(shown)} characters: type one number (and its unit).")
    t = shown
    for _ in range(2):
        t = _LEAD.sub("", t).strip()
    if not t:
        raise NumberError("Type a number.")
    if _RANGE.match(t):
        raise NumberError(
            f"“{shown}” is a range: give the one value you read; the tolerance is applied "
            "when it is graded."
        )
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(t):
        m = _TOKEN.match(t, pos)
        if m is None or m.end() == pos:
            raise NumberError(f"Could not read a number in “{shown}”: type digits and a unit.")
        tokens.append((m.group(1), _normal_unit(m.group(2) or "")))
        pos = m.end()
    values = [(_plain(raw, shown), u) for raw, u in tokens]
    is_time = unit == "ms"
    if len(values) > 1:
        # Perfetto's "12ms 345us 678ns": time parts, each with its unit, largest first
        factors = [_TIME.get(u, 0.0) for _, u in values]
        if not is_time or not all(a > b > 0 for a, b in pairwise(factors)):
            raise NumberError(
                f"“{shown}” holds {len(values)} numbers: give the one value you read."
            )
        return _finite(sum(v * f for (v, _), f in zip(values, factors, strict=True)), shown)
    value, given = values[0]
    if not given:
        return _finite(value, shown)
    if unit is None:
        raise NumberError(
            f"Choose the measurement first: its unit says how to read “{shown}” — or type "
            "the number alone."
        )
    if is_time and given in _TIME:
        return _finite(value * _TIME[given], shown)
    spellings, quantity = _OWN.get(unit, (frozenset(), "a time" if is_time else unit))
    if given in spellings:
        return _finite(value, shown)
    what = _QUANTITY.get(given)
    in_unit = "ms" if is_time else unit
    named = "" if in_unit in quantity else f" ({in_unit})"
    if what is None:
        raise NumberError(
            f"“{given}” is not a unit this answer takes: it is {quantity}{named}; type the "
            "number alone or with that unit."
        )
    raise NumberError(f"“{shown}” is {what}, and this answer is {quantity}{named}.")


def _finite(value: float, shown: str) -> float:
    if not math.isfinite(value):
        raise NumberError(f"“{shown}” is not a finite number.")
    return value
