"""Scheduler benchmark: simulated learners under two non-FSRS memory models.

Run:  python bench/scheduler_sim.py            (200 learners per cell, about 1-3 min on 2 cores)
      python bench/scheduler_sim.py --learners 40 --days 90   (quick look)
      python bench/scheduler_sim.py --policies ours --trial-effects 0 0.15 0.3 0.6   (trials only)

Policies compared on the *same* learners (same parameters and seeds):
  ours        drills.scheduling: pick_deal (one of pick_next's first three choices, as the
              trainer deals) + rating_for + FSRS review, twin pulls
  leitner     5 boxes (1, 2, 4, 8, 16 days)
  sm2         SuperMemo-2 (EF, 1 / 6 / I*EF days)
  round-robin a fixed per-learner order, cycled
  random      uniform over the 11 scenarios
  trials@e    ours plus contrast trials (drills.scheduling: confusion_pair pulls, pick_trial,
              trial_rating): a confusion pulls the pair's card due; a due pair card takes the
              next drill slot as a trial (at most one in three); e is the assumed trial effect
  lk-trials@e the same, with only lookalike confusions making pair cards (for comparison)

The assumed effect of a contrast trial (stated plainly, since no data backs a number): a trial
on a lookalike pair multiplies that pair's confusion level by (1 - e) — e = 0.3 is the same
step as drilling both twins within a day (x0.7) — whether it is answered right or wrong (the
reveal shows the difference either way). It does not touch per-scenario memory, and the learner
models have no confusion state for other pairs, so trials on pairs confused by a guess are pure
cost here. A trial takes one drill slot of the day's budget (it is shorter than a drill — 45 s
against 2 min — so counting it as a whole drill is the pessimistic side). --trial-effects runs
several e; e = 0 is the cost of the slots alone.

Learner models (neither is FSRS):
  exp   per-scenario exponential forgetting p = 2^(-dt/h); h starts at a per-learner x scenario
        half-life and grows after successful *spaced* retrievals (massed ones barely help);
        a failure halves it (never below the starting half-life).
  actr  ACT-R declarative memory with the Pavlik & Anderson (2005) spacing mechanism: activation
        m = ln sum_j age_j^-d_j, d_j = c*e^{m_j} + a, recall = logistic((m - tau)/s), time measured
        on a "psychological" clock where time between sessions is compressed by a factor h.
Shared by both: per-trace instance difficulty (logit noise), a confusion level per lookalike pair
(drilling one twin with the other not drilled in the past day raises it, drilling both within a day
lowers it; a confused learner who recalls the pattern names the twin), response times that shrink
with recall strength (so slow answers and blown clocks happen), guesses when nothing is recalled.

Outcome: a learner is at mastery on a day when, at the start of that day's session, the true
probability of diagnosing each of the 11 scenarios correctly is >= 0.90. Days-to-mastery is the
first day that starts a run of 7 such days; drills-to-mastery is the drills done before that day.
Learners that do not get there within --days are counted at the cap (reported as "censored").
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from drills import scheduling as sch
from scenarios.engine import SCENARIOS, lookalike_pairs

SLUGS = list(SCENARIOS)  # catalogue order; it also fixes the per-learner random streams
N = len(SLUGS)
IDX = {s: i for i, s in enumerate(SLUGS)}
WEIGHTS = {slug: SCENARIOS[slug].weight for slug in SLUGS}
TWIN_IDX = [IDX[t] if (t := sch.twin_of(s)) else -1 for s in SLUGS]
PAIR_OF = {}
for _k, _s in enumerate(sorted(tuple(sorted(p)) for p in lookalike_pairs())):
    PAIR_OF[IDX[_s[0]]] = _k
    PAIR_OF[IDX[_s[1]]] = _k

BASE_POLICIES = ["ours", "leitner", "sm2", "round-robin", "random"]
POLICIES = list(BASE_POLICIES)  # plus "trials@e" for each --trial-effects value (main sets it)
MODELS = ["exp", "actr"]
MASTERY_P = 0.90
HOLD_DAYS = 7
SESSION_HOUR = 18
DRILL_SPACING_S = 180  # one drill every 3 minutes inside a session
SIGMA_INST = 0.6  # instance (trace) difficulty noise, on the logit scale
T0 = datetime(2025, 1, 6, tzinfo=UTC)

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(9)
_GH_W = _GH_W / _GH_W.sum()


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


# --------------------------------------------------------------------------- learners


@dataclass
class Outcome:
    correct: bool
    answered: int
    elapsed_s: float
    measurement_ok: bool
    fix_ok: bool


class Learner:
    """Shared parts: instance noise, twin confusion, guessing, response times."""

    def __init__(self, prng: np.random.Generator) -> None:
        self.conf = list(prng.uniform(0.2, 0.4, size=2))
        self.speed = float(np.exp(prng.normal(0.0, 0.15)))
        self.last_drill: list[float | None] = [None] * N  # in days

    # model-specific
    def p_mem(self, i: int, day: int, sec: float) -> float:
        raise NotImplementedError

    def learn(self, i: int, day: int, sec: float, success: bool) -> None:
        raise NotImplementedError

    # shared
    def p_true(self, i: int, day: int, sec: float) -> float:
        pm = self.p_mem(i, day, sec)
        lg = _logit(pm)
        q = float(np.dot(_GH_W, 1.0 / (1.0 + np.exp(-(lg + _GH_X * SIGMA_INST)))))
        c = self.conf[PAIR_OF[i]] if i in PAIR_OF else 0.0
        return q * (1 - c) + (1 - q) / N

    def attempt(self, i: int, day: int, sec: float, rng: random.Random) -> Outcome:
        pm = self.p_mem(i, day, sec)
        q = _sigmoid(_logit(pm) + rng.gauss(0.0, SIGMA_INST))
        twin = TWIN_IDX[i]
        if rng.random() < q:
            answered = twin if twin >= 0 and rng.random() < self.conf[PAIR_OF[i]] else i
        else:
            answered = rng.randrange(N)
        correct = answered == i
        if correct:
            elapsed = (25.0 + 110.0 * (1.0 - q)) * self.speed * math.exp(rng.gauss(0.0, 0.25))
        else:
            elapsed = (50.0 + 70.0 * rng.random()) * self.speed
        m_ok = rng.random() < 0.5 + 0.5 * q
        f_ok = rng.random() < 0.5 + 0.5 * q
        self.learn(i, day, sec, correct)
        t_days = day + sec / 86400.0
        if i in PAIR_OF:
            k = PAIR_OF[i]
            lt = self.last_drill[twin]
            if lt is not None and t_days - lt <= 1.0:
                self.conf[k] *= 0.7
            else:
                self.conf[k] = min(0.6, self.conf[k] + 0.04)
        self.last_drill[i] = t_days
        return Outcome(correct, answered, elapsed, m_ok, f_ok)

    def trial(self, a: int, b: int, sec: float, day: int, effect: float, rng: random.Random):
        """A contrast trial on scenarios a and b: (picked right, measurement right, seconds).
        Recognising the pattern and not confusing the pair picks right; otherwise a coin."""
        q = 0.5 * (self.p_mem(a, day, sec) + self.p_mem(b, day, sec))
        k = PAIR_OF.get(a) if TWIN_IDX[a] == b else None
        c = self.conf[k] if k is not None else 0.0
        know = q * (1.0 - c)
        picked = rng.random() < know + (1.0 - know) * 0.5
        m_ok = rng.random() < 0.5 + 0.5 * q
        elapsed = (10.0 + 30.0 * (1.0 - q)) * self.speed * math.exp(rng.gauss(0.0, 0.25))
        if k is not None:
            self.conf[k] *= 1.0 - effect
        return picked, m_ok, elapsed

    def min_p_true(self, day: int) -> float:
        return min(self.p_true(i, day, 0.0) for i in range(N))


P_UNSEEN = 0.01


class ExpLearner(Learner):
    """Exponential forgetting; half-life grows with successful spaced retrievals."""

    def __init__(self, prng: np.random.Generator) -> None:
        super().__init__(prng)
        scen = np.exp(prng.normal(0.0, 0.35, size=N))  # scenario difficulty for this learner
        self.h0 = list(np.exp(prng.normal(math.log(1.2), 0.5, size=N)) * scen)
        self.gain = float(np.exp(prng.normal(math.log(2.5), 0.15)))
        self.h: list[float | None] = [None] * N
        self.last = [0.0] * N

    @staticmethod
    def _t(day: int, sec: float) -> float:
        return day + sec / 86400.0

    def p_mem(self, i: int, day: int, sec: float) -> float:
        h = self.h[i]
        if h is None:
            return P_UNSEEN
        return 2.0 ** (-(self._t(day, sec) - self.last[i]) / h)

    def learn(self, i: int, day: int, sec: float, success: bool) -> None:
        t = self._t(day, sec)
        h = self.h[i]
        if h is None:
            self.h[i] = self.h0[i]
        elif success:
            spacing = min(1.0, (t - self.last[i]) / h)
            self.h[i] = h * (1.0 + (self.gain - 1.0) * math.sqrt(spacing))
        else:
            self.h[i] = max(self.h0[i], 0.5 * h)
        self.last[i] = t


class ActrLearner(Learner):
    """ACT-R activation with Pavlik & Anderson's activation-dependent decay."""

    C = 0.217
    S = 0.255

    def __init__(self, prng: np.random.Generator) -> None:
        super().__init__(prng)
        self.a = float(np.clip(prng.normal(0.177, 0.03), 0.1, 0.3))
        self.hcomp = float(np.exp(prng.normal(math.log(0.025), 0.3)))
        self.tau = list(prng.normal(-1.0, 0.25, size=N))
        self.tt: list[list[float]] = [[] for _ in range(N)]
        self.dd: list[list[float]] = [[] for _ in range(N)]

    def _pt(self, day: int, sec: float) -> float:
        return day * 86400.0 * self.hcomp + sec

    def _m(self, i: int, pt: float) -> float:
        if not self.tt[i]:
            return -math.inf
        ages = np.maximum(pt - np.asarray(self.tt[i]), 1.0)
        return float(np.log(np.sum(ages ** (-np.asarray(self.dd[i])))))

    def p_mem(self, i: int, day: int, sec: float) -> float:
        if not self.tt[i]:
            return P_UNSEEN
        m = self._m(i, self._pt(day, sec))
        return _sigmoid((m - self.tau[i]) / self.S)

    def learn(self, i: int, day: int, sec: float, success: bool) -> None:
        pt = self._pt(day, sec)
        m = self._m(i, pt)
        d = self.a if m == -math.inf else self.C * math.exp(m) + self.a
        self.tt[i].append(pt)
        self.dd[i].append(d)


LEARNERS = {"exp": ExpLearner, "actr": ActrLearner}


# --------------------------------------------------------------------------- policies


class Ours:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.cards: dict[str, dict | None] = dict.fromkeys(SLUGS)
        self.recent: list[str] = []

    def pick(self, day: int, now: datetime) -> int:
        slug = sch.pick_deal(
            self.cards, now, rng=self.rng, weights=WEIGHTS, recent=self.recent[-3:]
        )
        return IDX[slug]

    def update(self, i: int, day: int, now: datetime, o: Outcome) -> None:
        slug = SLUGS[i]
        grade = sch.Grade(
            o.correct,
            o.measurement_ok,
            o.fix_ok,
            True,
            o.elapsed_s,
            o.elapsed_s > sch.AGAIN_AFTER_S,
        )
        self.recent.append(slug)
        if not sch.counts_for_schedule(grade):
            return
        card = self.cards[slug] or sch.new_card_state(now)
        self.cards[slug] = sch.review(card, sch.rating_for(grade), now)
        pulled = sch.twin_pull_target(slug, SLUGS[o.answered])
        if pulled is not None:
            self.cards[pulled] = sch.pull_due_now(self.cards[pulled], now)


class OursWithTrials(Ours):
    """``Ours`` plus the app's contrast trials on confused pairs."""

    lookalike_only = False  # the "lk-trials" variant: only lookalike confusions make trials

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.pairs: dict[str, dict] = {}
        self.kinds: list[str] = []
        self.trials = 0

    def pick(self, day: int, now: datetime) -> int | str:
        pair = sch.pick_trial(self.pairs, now, recent_kinds=self.kinds[-sch.TRIAL_EVERY :])
        if pair is not None:
            return pair
        return super().pick(day, now)

    def update(self, i: int, day: int, now: datetime, o: Outcome) -> None:
        super().update(i, day, now, o)
        self.kinds.append("drill")
        pair = sch.confusion_pair(SLUGS[i], SLUGS[o.answered])
        if pair is not None and self.lookalike_only and not sch.is_lookalike_pair(pair):
            pair = None
        if pair is not None:
            self.pairs[pair] = sch.pull_due_now(self.pairs.get(pair), now)

    def update_trial(self, pair: str, now: datetime, picked: bool, m_ok: bool, secs: float):
        self.kinds.append("contrast")
        self.trials += 1
        rating = sch.trial_rating(picked, m_ok, secs, secs > sch.TRIAL_LIMIT_S)
        self.pairs[pair] = sch.review(self.pairs[pair], rating, now)


class OursWithLookalikeTrials(OursWithTrials):
    lookalike_only = True


def _quality(o: Outcome) -> int:
    """Same evidence as our rating map, on SM-2's 0-5 scale (no 5: no 'easy')."""
    if not o.correct or o.elapsed_s > sch.AGAIN_AFTER_S:
        return 1
    if o.elapsed_s > sch.HARD_AFTER_S or not (o.measurement_ok and o.fix_ok):
        return 3
    return 4


class Leitner:
    INTERVALS = (1, 2, 4, 8, 16)

    def __init__(self, rng: random.Random) -> None:
        self.box = [0] * N  # 0 = unseen
        self.next_due = [0] * N
        self.last = [-1.0] * N
        self.order = list(range(N))
        rng.shuffle(self.order)

    def pick(self, day: int, now: datetime) -> int:
        due_ = [i for i in range(N) if self.box[i] and self.next_due[i] <= day]
        if due_:
            return min(due_, key=lambda i: (self.box[i], self.last[i]))
        for i in self.order:
            if not self.box[i]:
                return i
        return min(range(N), key=lambda i: (self.box[i], self.last[i]))  # review ahead

    def update(self, i: int, day: int, now: datetime, o: Outcome) -> None:
        ahead = self.box[i] and self.next_due[i] > day
        ok = _quality(o) >= 3
        if not ok:
            self.box[i] = 1
        elif not ahead:
            self.box[i] = min(5, self.box[i] + 1)
        if not ahead or not ok:
            self.next_due[i] = day + self.INTERVALS[self.box[i] - 1]
        self.last[i] = day + now.timestamp() % 86400 / 86400


class SM2:
    def __init__(self, rng: random.Random) -> None:
        self.seen = [False] * N
        self.n = [0] * N
        self.ef = [2.5] * N
        self.interval = [0] * N
        self.next_due = [0] * N
        self.last = [-1.0] * N
        self.order = list(range(N))
        rng.shuffle(self.order)

    def pick(self, day: int, now: datetime) -> int:
        due_ = [i for i in range(N) if self.seen[i] and self.next_due[i] <= day]
        if due_:
            return min(due_, key=lambda i: (self.next_due[i], self.last[i]))
        for i in self.order:
            if not self.seen[i]:
                return i
        return min(range(N), key=lambda i: (self.next_due[i], self.last[i]))

    def update(self, i: int, day: int, now: datetime, o: Outcome) -> None:
        q = _quality(o)
        ahead = self.seen[i] and self.next_due[i] > day
        self.seen[i] = True
        self.last[i] = day + now.timestamp() % 86400 / 86400
        if ahead and q >= 3:
            return  # early success: schedule unchanged (SM-2 has no early reviews)
        if q < 3:
            self.n[i] = 0
            self.interval[i] = 1
        else:
            self.n[i] += 1
            if self.n[i] == 1:
                self.interval[i] = 1
            elif self.n[i] == 2:
                self.interval[i] = 6
            else:
                self.interval[i] = round(self.interval[i] * self.ef[i])
        self.ef[i] = max(1.3, self.ef[i] + 0.1 - (5 - q) * (0.08 + (5 - q) * 0.02))
        self.next_due[i] = day + self.interval[i]


class RoundRobin:
    def __init__(self, rng: random.Random) -> None:
        self.order = list(range(N))
        rng.shuffle(self.order)
        self.k = 0

    def pick(self, day: int, now: datetime) -> int:
        i = self.order[self.k % N]
        self.k += 1
        return i

    def update(self, i: int, day: int, now: datetime, o: Outcome) -> None:
        pass


class Uniform:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, day: int, now: datetime) -> int:
        return self.rng.randrange(N)

    def update(self, i: int, day: int, now: datetime, o: Outcome) -> None:
        pass


POLICY_CLS = {
    "ours": Ours,
    "leitner": Leitner,
    "sm2": SM2,
    "round-robin": RoundRobin,
    "random": Uniform,
}


# --------------------------------------------------------------------------- runner


def daily_budgets(seed: int, days: int, budget: tuple[int, int], skip_p: float) -> list[int]:
    r = np.random.default_rng([seed, 99])
    b = r.integers(budget[0], budget[1] + 1, size=days)
    b[r.random(days) < skip_p] = 0
    return [int(x) for x in b]


def simulate(model: str, learner_seed: int, policy: str, args: argparse.Namespace):
    prng = np.random.default_rng([learner_seed, 1])  # learner parameters: same for all policies
    learner = LEARNERS[model](prng)
    variant, _, e = policy.partition("@")
    effect = float(e or 0.0)
    base_policy = "ours" if e else policy
    # The learner's answers draw from the same stream as "ours" for the trial variants.
    rng = random.Random(learner_seed * 7919 + BASE_POLICIES.index(base_policy))
    trial_cls = {"trials": OursWithTrials, "lk-trials": OursWithLookalikeTrials}
    cls = trial_cls[variant] if e else POLICY_CLS[policy]
    pol = cls(random.Random(learner_seed))
    budgets = daily_budgets(learner_seed, args.days + HOLD_DAYS, tuple(args.budget), args.skip)
    drills = 0
    drills_before = []
    streak = 0
    for day in range(args.days + HOLD_DAYS):
        drills_before.append(drills)
        if learner.min_p_true(day) >= MASTERY_P:
            streak += 1
            if streak >= HOLD_DAYS:
                start = day - HOLD_DAYS + 1
                return start, drills_before[start], False, getattr(pol, "trials", 0)
        else:
            streak = 0
        if day >= args.days and streak == 0:
            break
        base = T0 + timedelta(days=day, hours=SESSION_HOUR)
        for k in range(budgets[day]):
            sec = k * DRILL_SPACING_S
            now = base + timedelta(seconds=sec)
            i = pol.pick(day, now)
            if isinstance(i, str):  # a contrast trial on a confused pair
                a, b = (IDX[s] for s in sch.pair_of(i))
                picked, m_ok, secs = learner.trial(a, b, sec, day, effect, rng)
                pol.update_trial(i, now, picked, m_ok, secs)  # type: ignore[attr-defined]
            else:
                o = learner.attempt(i, day, sec, rng)
                pol.update(i, day, now, o)
            drills += 1
    last = drills_before[min(args.days, len(drills_before) - 1)]
    return args.days, last, True, getattr(pol, "trials", 0)


def run_learner(job):
    model, seed, args = job
    return model, seed, {p: simulate(model, seed, p, args) for p in args.run_policies}


def boot_ci(x: np.ndarray, rng: np.random.Generator, reps: int = 4000) -> tuple[float, float]:
    idx = rng.integers(0, len(x), size=(reps, len(x)))
    means = x[idx].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(lo), float(hi)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--learners", type=int, default=200)
    ap.add_argument("--days", type=int, default=120, help="cap on days to reach mastery")
    ap.add_argument("--budget", type=int, nargs=2, default=(10, 15), help="drills/day min max")
    ap.add_argument("--skip", type=float, default=0.15, help="chance a learner skips a day")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    ap.add_argument("--seed", type=int, default=20250106)
    ap.add_argument(
        "--policies", nargs="+", default=BASE_POLICIES, choices=BASE_POLICIES,
        help="baselines to run (ours is always run: the trial variants are compared with it)",
    )  # fmt: skip
    ap.add_argument(
        "--trial-effects", nargs="*", type=float, default=[0.0, 0.15, 0.3, 0.6],
        help="assumed effects e of a contrast trial (see the module docstring); none: no trials",
    )  # fmt: skip
    args = ap.parse_args(argv)
    bases = ["ours", *(p for p in args.policies if p != "ours")]
    args.run_policies = bases + [
        f"{v}@{e:g}" for v in ("trials", "lk-trials") for e in args.trial_effects
    ]
    POLICIES[:] = args.run_policies

    t_start = time.perf_counter()
    jobs = [(m, args.seed + k, args) for m in args.models for k in range(args.learners)]
    results: dict[str, dict[str, list[tuple[int, int, bool, int]]]] = {
        m: {p: [] for p in POLICIES} for m in args.models
    }
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as ex:
            out = list(ex.map(run_learner, jobs, chunksize=4))
    else:
        out = [run_learner(j) for j in jobs]
    for model, _seed, res in sorted(out, key=lambda r: (r[0], r[1])):
        for p in POLICIES:
            results[model][p].append(res[p])
    elapsed = time.perf_counter() - t_start

    brng = np.random.default_rng(0)
    print(
        f"# {args.learners} paired learners per model; budget {args.budget[0]}-{args.budget[1]} "
        f"drills/day, {args.skip:.0%} days skipped; mastery = all {N} scenarios >= "
        f"{MASTERY_P:.0%} true recall at session start for {HOLD_DAYS} consecutive days; "
        f"cap {args.days} days; desired retention {sch.DEFAULT_DESIRED_RETENTION}"
    )
    print()
    print(
        "| model | policy | drills to mastery (mean, 95% CI) | days to mastery (mean, 95% CI) "
        "| censored |"
    )
    print("|---|---|---|---|---|")
    for m in args.models:
        for p in POLICIES:
            arr = np.array(results[m][p], dtype=float)
            d, dr, cens = arr[:, 0], arr[:, 1], arr[:, 2]
            lo1, hi1 = boot_ci(dr, brng)
            lo2, hi2 = boot_ci(d, brng)
            print(
                f"| {m} | {p} | {dr.mean():.0f} ({lo1:.0f}-{hi1:.0f}) | "
                f"{d.mean():.1f} ({lo2:.1f}-{hi2:.1f}) | {int(cens.sum())} |"
            )
    print()
    print("Paired differences, ours - baseline (negative = ours reaches mastery sooner):")
    print()
    print(
        "| model | baseline | drills diff (mean, 95% CI) | days diff (mean, 95% CI) "
        "| ours sooner (days) |"
    )
    print("|---|---|---|---|---|")
    for m in args.models:
        ours = np.array(results[m]["ours"], dtype=float)
        for p in [q for q in POLICIES[1:] if "@" not in q]:
            base = np.array(results[m][p], dtype=float)
            ddr = ours[:, 1] - base[:, 1]
            dd = ours[:, 0] - base[:, 0]
            lo1, hi1 = boot_ci(ddr, brng)
            lo2, hi2 = boot_ci(dd, brng)
            wins = float(np.mean(dd < 0))
            print(
                f"| {m} | {p} | {ddr.mean():+.0f} ({lo1:+.0f} to {hi1:+.0f}) | "
                f"{dd.mean():+.1f} ({lo2:+.1f} to {hi2:+.1f}) | {wins:.0%} |"
            )
    trial_policies = [q for q in POLICIES if "@" in q]
    if trial_policies:
        print()
        print(
            "Contrast trials: drills to mastery with trials - without (ours), paired; e is the "
            "assumed effect of one trial (a lookalike pair's confusion x (1 - e)); trials count "
            "as drills:"
        )
        print()
        print(
            "| model | trials on | e | drills with trials (mean) | drills diff (mean, 95% CI) "
            "| days diff (mean, 95% CI) | trials per learner | censored |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for m in args.models:
            ours = np.array(results[m]["ours"], dtype=float)
            for p in trial_policies:
                on = "every confused pair" if p.startswith("trials@") else "lookalike pairs only"
                arr = np.array(results[m][p], dtype=float)
                ddr, dd = arr[:, 1] - ours[:, 1], arr[:, 0] - ours[:, 0]
                lo1, hi1 = boot_ci(ddr, brng)
                lo2, hi2 = boot_ci(dd, brng)
                print(
                    f"| {m} | {on} | {p.partition('@')[2]} | {arr[:, 1].mean():.0f} | "
                    f"{ddr.mean():+.0f} ({lo1:+.0f} to {hi1:+.0f}) | "
                    f"{dd.mean():+.1f} ({lo2:+.1f} to {hi2:+.1f}) | {arr[:, 3].mean():.1f} | "
                    f"{int(arr[:, 2].sum())} |"
                )
    print()
    print(f"# wall time {elapsed:.0f} s on {args.workers} worker(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
