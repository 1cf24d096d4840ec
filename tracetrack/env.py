"""Typed, validated readers for environment variables.

Every setting that can change between a laptop, CI and production is read here, and a value that
cannot be understood stops the process with a message naming the variable — never a silent default.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(name: str, default: str | None = None) -> str | None:
    value = _raw(name)
    return default if value is None else value


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean; use true/false, 1/0, yes/no.")


def _number[T: (int, float)](name: str, default: T, cast: Callable[[str], T], lo: T, hi: T) -> T:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = cast(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number.") from None
    if not lo <= number <= hi:
        raise ImproperlyConfigured(f"{name}={number} is outside the allowed range {lo}..{hi}.")
    return number


def env_int(name: str, default: int, *, lo: int, hi: int) -> int:
    return _number(name, default, int, lo, hi)


def env_float(name: str, default: float, *, lo: float, hi: float) -> float:
    return _number(name, default, float, lo, hi)


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_url(name: str, schemes: tuple[str, ...]) -> str | None:
    value = _raw(name)
    if value is None:
        return None
    scheme = value.split("://", 1)[0] if "://" in value else ""
    if scheme not in schemes:
        raise ImproperlyConfigured(
            f"{name} must be a URL starting with one of {', '.join(s + '://' for s in schemes)}; "
            f"got {value.split('@')[-1]!r}."
        )
    return value
