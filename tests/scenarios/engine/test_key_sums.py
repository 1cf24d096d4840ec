"""The reveal's arithmetic adds up as printed: every "a + b − c = d" in a key's lines holds at the
printed digits, and where a line names a figure another line printed ("all of it", "the step
loses a + b"), the two are the same number. The allocator-stalls key over seeds that draw its
three families (data-parallel, one-GPU decode, pipeline). Pure: no Django."""

from __future__ import annotations

import functools
import re

import pytest

from scenarios import engine as E

NUM = r"\d+(?:\.\d+)?"
# a run of printed numbers joined by + and − (the keys print U+2212), then "= result"
SUM_RE = re.compile(rf"(?<![\d.])({NUM})((?:(?: ms)?\s*[+−]\s*{NUM})+)(?: ms)?\s*=\s*({NUM})")
TERM_RE = re.compile(rf"([+−])\s*({NUM})")
ALLOC_SEEDS = range(100, 131)


@functools.cache
def gen(slug: str, seed: int):
    return E.generate(slug, seed)


def _digits(x: str) -> int:
    return len(x.split(".")[1]) if "." in x else 0


def printed_sums(line: str) -> list[tuple[float, float, str]]:
    """Each numeric "a ± b ± … = c" in `line`: (left side evaluated, c, the text matched). A
    number right after ×, ÷ or / would bind tighter than the sum: not taken as its first term."""
    out = []
    for m in SUM_RE.finditer(line):
        before = line[: m.start()].rstrip()
        if before.endswith(("×", "÷", "/", "*")):
            continue
        lhs = float(m.group(1))
        for op, x in TERM_RE.findall(m.group(2)):
            lhs += float(x) if op == "+" else -float(x)
        out.append((lhs, float(m.group(3)), m.group(0)))
    return out


def _tol(text: str) -> float:
    """Half a unit in the last digit of the figure `text` ends on (a sum may be printed at
    fewer digits than its terms): a printed sum may not miss by more."""
    return 0.5 * 10.0 ** -_digits(re.findall(NUM, text)[-1]) + 1e-9


def test_printed_sums_parser():
    line = "expected step ≈ 101.2 − 31.4 = 69.8 ms (1.45×); 3 × 2.0 + 1.0 = 7.0; 1 + 2 − 0.5 = 2.5"
    got = [(round(a, 6), b) for a, b, _ in printed_sums(line)]
    assert got == [(69.8, 69.8), (2.5, 2.5)]
    assert not printed_sums("max(arrival) − max(arrival − stall) = 27.5 ms")
    (lhs, rhs, t), *_ = printed_sums("all of it: 7.2 + 0.1 = 7.2 ms")
    assert abs(lhs - rhs) > _tol(t)  # a one-digit miss is caught


def _ms_after(line: str, label: str) -> float:
    m = re.search(re.escape(label) + rf"[^=]*=\s*({NUM}) ms", line)
    assert m, (label, line)
    return float(m.group(1))


@pytest.mark.parametrize("slug", list(E.SCENARIOS))
def test_every_key_sum_adds_up_as_printed(slug):
    for seed in range(100, 104):
        for line in gen(slug, seed).key.arithmetic:
            for lhs, rhs, text in printed_sums(line):
                assert abs(lhs - rhs) <= _tol(text), (slug, seed, text, line)


@pytest.mark.parametrize("seed", ALLOC_SEEDS)
def test_allocator_stalls_key_adds_up_as_printed(seed):
    tr = gen("allocator-stalls", seed)
    k = tr.key
    where = (seed, tr.family, tr.world)
    for line in k.arithmetic:
        for lhs, rhs, text in printed_sums(line):
            assert abs(lhs - rhs) <= _tol(text), (where, text, line)
    first, crit, last = k.arithmetic
    # the loss the expected step subtracts is the one the middle line arrives at
    loss = float(re.findall(rf"− ({NUM})", last)[0])
    assert abs(float(re.findall(rf"≈ ({NUM})", last)[0]) - loss - k.expected_step_ms) < 1e-6
    assert float(re.findall(rf"({NUM}) ms per step$", crit)[0]) == loss, (where, crit, last)
    idle = float(re.search(rf"sits idle through them, ({NUM}) ms", first).group(1))
    if tr.world == 1:
        # one GPU: the step loses "all of it", the idle the first line printed
        assert "all of it" in crit, (where, crit)
        assert loss == idle, (where, first, crit)
    elif tr.family == "pp":
        lo, hi = (float(x) for x in re.search(rf"({NUM})–({NUM}) ms in a step", crit).groups())
        assert lo <= loss <= hi, (where, crit)  # the longest stage stall lies in the range
    else:
        # data parallel: the meeting comes sooner by one term, the windows' own frees after
        # it add the other; the step loses their printed sum, and each term is what was measured
        sooner = _ms_after(crit, "meeting sooner by")
        after = _ms_after(crit, "after the meeting")
        sums = printed_sums(crit)
        assert sums and sums[-1][1] == loss, (where, crit)
        assert abs(sooner + after - loss) <= _tol(crit), (where, crit)
        f = k.facts
        assert abs(sooner - f["alloc_meet_sooner_ms"]) <= _tol(crit), (where, crit)
        assert abs(after - f["alloc_post_meet_ms"]) <= _tol(crit), (where, crit)
        assert sooner > 0 and after >= 0, (where, crit)


def test_allocator_stalls_seeds_cover_all_three_families():
    fams = {gen("allocator-stalls", s).family for s in ALLOC_SEEDS}
    assert {"pp", "decode"} <= fams and fams & {"ddp", "ddp_compile"}, fams


PIPELINE_SEEDS = range(1, 13)


@pytest.mark.parametrize("seed", PIPELINE_SEEDS)
def test_a_pipelines_schedule_is_not_said_to_leave_room_it_does_not(seed):
    """Where the measured idle is under the formula's, work × (m+p−1)/m comes out longer than
    the step: the line read "the schedule takes … = 57.6 ms, the rest of the step (batch,
    optimizer, loss) 0.0 ms" under a 56.8 ms step. Its rest is step − schedule as printed, and
    a schedule longer than the step is said to be."""
    key = gen("pipeline-bubbles", seed).key.to_dict()
    step = float(key["step_ms"])
    (line,) = [a for a in key["arithmetic"] if "the schedule takes" in a]
    sched = float(re.search(rf"the schedule takes work × \S+ = ({NUM}) ms", line).group(1))
    rest = re.search(rf"the rest of the step \([^)]*\) ({NUM}) ms", line)
    if sched > step:
        assert rest is None, line
        assert "a little over the" in line and "no time lies outside" in line, line
    else:
        assert rest is not None, line
        assert abs(float(rest.group(1)) - (step - sched)) <= 0.05 + 1e-9, line
