"""Interval arithmetic on sorted, merged [start, end) sets held as two numpy arrays."""

from __future__ import annotations

import numpy as np

Iv = tuple[np.ndarray, np.ndarray]
EMPTY: Iv = (np.zeros(0), np.zeros(0))


def merge(s: np.ndarray, e: np.ndarray) -> Iv:
    if len(s) == 0:
        return EMPTY
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), bool)
    new[1:] = s[1:] > run_end[:-1]
    starts = s[new]
    idx = np.flatnonzero(new)
    ends = np.maximum.reduceat(e, idx)
    return starts, ends


def length(iv: Iv) -> float:
    return float((iv[1] - iv[0]).sum())


def clip(iv: Iv, a: float, b: float) -> Iv:
    s, e = np.maximum(iv[0], a), np.minimum(iv[1], b)
    keep = e > s
    return s[keep], e[keep]


def intersect(x: Iv, y: Iv) -> Iv:
    """Intersection of two merged sets."""
    if len(x[0]) == 0 or len(y[0]) == 0:
        return EMPTY
    # sweep: boundaries of both, count coverage
    pts = np.concatenate([x[0], x[1], y[0], y[1]])
    d = np.concatenate(
        [np.ones(len(x[0])), -np.ones(len(x[1])), np.ones(len(y[0])), -np.ones(len(y[1]))]
    )
    o = np.lexsort((d, pts))  # ends before starts at equal times
    pts, d = pts[o], d[o]
    cov = np.cumsum(d)
    both = cov == 2
    s = pts[:-1][both[:-1]]
    e = pts[1:][both[:-1]]
    keep = e > s
    return s[keep], e[keep]


def subtract(x: Iv, y: Iv) -> Iv:
    """x minus y (both merged)."""
    if len(x[0]) == 0 or len(y[0]) == 0:
        return x
    inter = intersect(x, y)
    if len(inter[0]) == 0:
        return x
    pts = np.concatenate([x[0], x[1], inter[0], inter[1]])
    d = np.concatenate(
        [np.ones(len(x[0])), -np.ones(len(x[1])), -np.ones(len(inter[0])), np.ones(len(inter[1]))]
    )
    o = np.lexsort((d, pts))
    pts, d = pts[o], d[o]
    cov = np.cumsum(d)
    on = cov[:-1] == 1
    s, e = pts[:-1][on], pts[1:][on]
    keep = e > s
    return merge(s[keep], e[keep])


def complement(x: Iv, a: float, b: float) -> Iv:
    """[a, b) minus x."""
    x = clip(x, a, b)
    s = np.concatenate([[a], x[1]])
    e = np.concatenate([x[0], [b]])
    keep = e > s
    return s[keep], e[keep]


def union(*xs: Iv) -> Iv:
    s = np.concatenate([x[0] for x in xs]) if xs else np.zeros(0)
    e = np.concatenate([x[1] for x in xs]) if xs else np.zeros(0)
    return merge(s, e)
