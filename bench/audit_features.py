"""Shortcut audit, the shared part: which traces to generate, what a learner could read off a trace
besides its signature (feature sets), and cross-validated accuracy of simple classifiers on them.

Used by `bench/shortcut_audit.py` (the full audit, >= 40 traces per scenario) and by
`tests/scenarios/engine/test_shortcut_audit.py` (a small version). Pure: the engine, numpy and
scikit-learn (a dev dependency); no Django.

Feature sets, each computed with the declared signature removed (the signature names' events are
dropped before anything is counted, and the signature categories' counts are not used):

* ``prompt``  - bag of words (and word pairs) of everything shown before answering: hardware line,
  workload line, symptom, colleague's theory;
* ``names``   - the set of event names in the trace;
* ``shape``   - counts and shape: events per category and per thread, distinct names, step time and
  its spread, step count, rank count, threads, nesting depth, per-category duration statistics,
  argument keys, dtypes and other string arguments, sizes (message elements, input dims, grids),
  the trace header (device properties, NCCL version, schema);
* ``all``     - the three together.

A scenario whose signature is a count per step (`Signature.per`: a pipeline's microbatches per
step, whose number against the stages is the bubble) has that count declared: on a trace that
has those events, per-step counts (which all follow it) are not read and the step time is read
per one of them.
"""

from __future__ import annotations

import collections
import itertools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bench.trace_reader import from_trace
from scenarios import engine

# the pairs a learner must not tell apart without reading the signature (issue 12)
FOIL_PAIRS: tuple[tuple[str, str], ...] = (
    ("exposed-allreduce", "bandwidth-bound-collective"),
    ("straggler", "bandwidth-bound-collective"),
    ("recompilation", "input-starvation"),
    ("input-starvation", "sync-stalls"),
    ("sync-stalls", "allocator-stalls"),
    ("launch-bound", "memory-bound-kernel"),
)

# targets of issue 12 (accuracy, 0-1): multi-class over all scenarios, and per pair
TARGETS = {"prompt": 0.25, "names": 0.25, "shape": 0.30, "all": 0.35}
PAIR_TARGET = 0.65
FEATURE_SETS = ("prompt", "names", "shape", "all")


def all_pairs(slugs: Sequence[str]) -> list[tuple[str, str]]:
    """The foil pairs plus healthy against every other scenario (lookalike twins are foils too)."""
    pairs = [p for p in FOIL_PAIRS if p[0] in slugs and p[1] in slugs]
    twins = getattr(engine.catalog, "TWIN_OF", {}) if hasattr(engine, "catalog") else {}
    for a, b in twins.items():
        if a in slugs and b in slugs and (a, b) not in pairs and (b, a) not in pairs:
            pairs.append((a, b))
    pairs += [("healthy", s) for s in slugs if s != "healthy" and "healthy" in slugs]
    return pairs


# ------------------------------------------------------------------------------------------------
# declared signatures
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sig:
    names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    note: str = ""
    per: str = ""  # an event name whose count per step is signature (see catalog.Signature)


# used only while the engine catalogue has no `signature_of`: the obvious names per scenario
FALLBACK_SIGNATURES: dict[str, Sig] = {
    "allocator-stalls": Sig(("cudaMalloc", "cudaFree", "hipMalloc", "hipFree")),
    "recompilation": Sig(("_compile.compile_inner", "call_user_compiler", "compile_fx")),
    "sync-stalls": Sig(
        ("aten::item", "aten::_local_scalar_dense", "cudaStreamSynchronize", "Memcpy DtoH"),
        ("gpu_memcpy",),
    ),
    "input-starvation": Sig(("enumerate(DataLoader)",)),
}


def signatures(slugs: Iterable[str]) -> tuple[dict[str, Sig], str]:
    """Per scenario, its declared signature, and where it came from ("catalogue" or "fallback")."""
    try:
        from scenarios.engine.catalog import signature_of  # type: ignore[attr-defined]
    except ImportError:
        return {s: FALLBACK_SIGNATURES.get(s, Sig()) for s in slugs}, "fallback"
    out = {}
    for s in slugs:
        sg = signature_of(s)
        out[s] = Sig(
            tuple(sg.names),
            tuple(sg.categories),
            str(getattr(sg, "note", "")),
            str(getattr(sg, "per", "")),
        )
    return out, "catalogue"


@dataclass(frozen=True)
class Exclusion:
    """Signature names (see `drops`) and categories removed from the non-signature features."""

    names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # event names whose count per step is signature: a trace that has them has its per-step
    # counts and step time read per one of them (per microbatch), so the count itself is left out
    per: tuple[str, ...] = ()

    @classmethod
    def of(cls, sigs: dict[str, Sig], slugs: Iterable[str]) -> Exclusion:
        n: set[str] = set()
        c: set[str] = set()
        u: set[str] = set()
        for s in slugs:
            n.update(sigs[s].names)
            c.update(sigs[s].categories)
            if sigs[s].per:
                u.add(sigs[s].per)
        return cls(tuple(sorted(n)), tuple(sorted(c)), tuple(sorted(u)))

    def drops(self, name: str) -> bool:
        """A declared name, or one it opens where the rest is a suffix (a declared name that
        ends in a space, ':' or '/', or is followed by one of them or '(' / '<'): "aten::mul"
        drops "aten::mul" and not "aten::mul_"; "Torch-Compiled Region: 0/" drops every
        compile id; "_compile.compile_inner" drops "_compile.compile_inner (dynamo_timed)"."""
        return any(
            name == n or (name.startswith(n) and (n[-1] in " :/" or name[len(n)] in " :/(<"))
            for n in self.names
        )


# ------------------------------------------------------------------------------------------------
# generation plan and per-trace summaries (computed once per trace, filtered per exclusion)
# ------------------------------------------------------------------------------------------------
HEALTHY_FACTOR = 4


def plan(
    slugs: Sequence[str], per_scenario: int, seed0: int = 9000, healthy_factor: int = HEALTHY_FACTOR
) -> list[tuple[str, int, str]]:
    """(scenario, seed, hardware): fixed seeds, hardware cycled so every scenario sees each
    platform equally often (hardware then carries no information). Healthy gets `healthy_factor`
    times as many traces: the multi-class audit uses the first `per_scenario` of them, the pairs
    draw from all of them the healthy traces of the other scenario's workload families."""
    hws = list(engine.HARDWARE)
    return [
        (s, seed0 + i, hws[i % len(hws)])
        for s in slugs
        for i in range(per_scenario * (healthy_factor if s == "healthy" else 1))
    ]


def family_of(trace: Any) -> str:
    """The workload family (ddp, ddp_compile, pp, decode, decode_compile), which the workload
    line tells the learner anyway; "" when it cannot be told."""
    fam = getattr(trace, "family", None) or trace.key.facts.get("family")
    if not fam:
        fn = getattr(engine, "_family", None)
        try:
            fam = fn(trace.scenario, trace.seed) if fn else None
        except Exception:
            fam = None
    if not fam:
        w = str(trace.prompt.get("workload", ""))
        fam = (
            "pp"
            if "pipeline" in w
            else "decode_compile"
            if "decode" in w and "torch.compile" in w
            else "decode"
            if "decode" in w
            else "ddp_compile"
            if "torch.compile" in w
            else "ddp"
            if "DDP" in w
            else ""
        )
    return str(fam)


@dataclass
class Group:
    """Events of one (name, category, thread, args) combination in one trace."""

    name: str
    cat: str
    tid: str  # thread role, e.g. "pt_main_thread", "pt_autograd_0", "stream 7 "
    args: dict | None
    count: int
    dur_sum: float


@dataclass
class Summary:
    scenario: str
    seed: int
    hardware: str
    prompt: str
    world: int
    groups: list[Group]
    steps: list[tuple[str, float]]  # (step annotation name, duration ns), every rank
    threads_per_rank: float
    tids: tuple[str, ...]
    max_depth: int
    family: str = ""
    header: dict[str, Any] = field(default_factory=dict)
    cache: dict[tuple[str, Exclusion], dict[str, float]] = field(default_factory=dict, repr=False)


def _header(head: dict[str, Any]) -> dict[str, Any]:
    """The trace header a reader sees in the export (device properties, distributed info)."""
    out: dict[str, Any] = {}
    for k, v in head.items():
        if k == "traceEvents":
            continue
        if k == "deviceProperties":
            props = v[0] if v else {}
            out["devprops_n"] = len(props)
            for pk in props:
                out[f"devprops_key={pk}"] = 1.0
        elif k == "distributedInfo" and isinstance(v, dict):
            for dk, dv in v.items():
                if isinstance(dv, str):
                    out[f"dist:{dk}={dv}"] = 1.0
        elif k == "baseTimeNanoseconds":
            out["base_time_s_mod_day"] = float(v) / 1e9 % 86400
        elif isinstance(v, str | int | float):
            out[f"head:{k}={v}"] = 1.0
    return out


def summarise(trace: Any) -> Summary:
    """What a learner can read off one trace, through the shared reader (`trace_reader`): every
    rank, every thread the viewers show (DataLoader workers included), grouped by (name,
    category, thread role, argument template)."""
    ev = from_trace(trace, rank=None, kineto=False)
    n = len(ev)
    # thread role: the thread's name without rank and OS id ("pt_autograd_0", "stream 7 ")
    roles = [t.split(" (", 1)[1].rstrip(")") if " (" in t else t for t in ev.threads]
    role_names, role_of = np.unique(np.array(roles, dtype=object), return_inverse=True)
    tid = role_of.reshape(-1)[ev.thread] if n else np.zeros(0, np.int64)
    name, cat, aid = ev.name, ev.cat, ev.aid
    dur = ev.dur * 1000.0  # ns, as before
    key = (name << 32) | ((aid + 1) << 12) | (cat << 6) | tid
    order = np.argsort(key, kind="stable")
    ks = key[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]]) if n else np.zeros(0, np.int64)
    ends = np.r_[starts[1:], len(ks)]
    ds = dur[order]
    csum = np.r_[0.0, np.cumsum(ds)]
    groups = []
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        k = int(ks[a])
        ai = ((k >> 12) & ((1 << 20) - 1)) - 1
        ci = (k >> 6) & 63
        groups.append(
            Group(
                name=ev.names[k >> 32],
                cat=ev.cats[ci] if ci < len(ev.cats) else str(ci),
                tid=str(role_names[k & 63]),
                args=ev.args[ai] if ai >= 0 else None,
                count=b - a,
                dur_sum=float(csum[b] - csum[a]),
            )
        )
    is_step = np.array([nm.startswith("ProfilerStep#") for nm in ev.names], bool)
    sm = is_step[name]
    steps = [
        (ev.names[i], float(d)) for i, d in zip(name[sm].tolist(), dur[sm].tolist(), strict=True)
    ]
    world = int(getattr(trace, "world", int(ev.rank.max()) + 1 if n else 1))
    threads = len(np.unique(ev.thread)) / max(world, 1)
    prompt = prompt_text(trace.prompt)
    return Summary(
        scenario=trace.scenario,
        seed=trace.seed,
        hardware=trace.hardware,
        prompt=prompt,
        world=world,
        groups=groups,
        steps=steps,
        threads_per_rank=threads,
        tids=tuple(str(r) for r in role_names.tolist()),
        max_depth=int(ev.depth.max()) if ev.depth is not None and n else 0,
        family=family_of(trace),
        header=_header(ev.header),
    )


_PROMPT_KEYS = ("hardware", "workload", "symptom", "theory")


def prompt_text(p: dict[str, Any]) -> str:
    """Everything the drill shows before the answer, as one line: hardware | workload | symptom |
    theory, then any other prompt field."""
    text = " | ".join(str(p.get(k) or "") for k in _PROMPT_KEYS)
    return text + " " + " ".join(str(v) for k, v in p.items() if k not in _PROMPT_KEYS and v)


def prompt_of(slug: str, seed: int, hardware: str | None = None) -> tuple[str, str]:
    """(family, prompt text) of `engine.generate(slug, seed, hardware=...)` without its events:
    the prompt is drawn from the workload before any injection (`engine._build`)."""
    E = engine
    hw_key, framing = E._pick(int(seed), hardware, None)
    fam = E._family_for((slug,), int(seed))
    p, _ = E._draw_workload(fam, int(seed), hw_key, framing)
    return fam, prompt_text(E._prompt(fam, p, E.get_hardware(hw_key), framing))


@dataclass
class Concentration:
    """A prompt word (or word pair) most of whose occurrences sit in one scenario."""

    token: str
    scenario: str
    share: float  # of the token's occurrences, in `scenario`
    rate: float  # of `scenario`'s prompts that hold it
    family_name: str  # the family of most of those prompts
    rate_in_family: float  # of `scenario`'s prompts of that family that hold it
    others_in_family: float  # of the other scenarios' prompts of that family
    family: bool  # the family explains it: within the family it is as common elsewhere

    def describe(self) -> str:
        return (
            f"{self.token!r}: {self.share:.0%} of its occurrences in {self.scenario} "
            f"({self.rate:.0%} of its prompts); within {self.family_name}: "
            f"{self.rate_in_family:.0%} vs {self.others_in_family:.0%} of the other scenarios'"
        )


def prompt_concentration(
    items: Sequence[tuple[str, str, str]], share: float = 0.8, min_rate: float = 0.05
) -> list[Concentration]:
    """The words and word pairs of prompts `items` ((scenario, family, text) each) with at
    least `share` of their occurrences in one scenario and in at least `min_rate` of that
    scenario's prompts, most concentrated first. A scenario hosted by fewer workload families
    gets their words more often; such a token is marked `family` when, among prompts of the
    family most of its occurrences come from, the scenario does not hold it more often than the
    other scenarios do beyond chance (two-proportion z < 3)."""
    toks = [prompt_words(txt) for _, _, txt in items]
    scen = [s for s, _, _ in items]
    fams = [f for _, f, _ in items]
    n_of: dict[str, int] = collections.Counter(scen)
    occ: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for s, ts in zip(scen, toks, strict=True):
        for t in ts:
            occ[t][s] += 1
    out = []
    for t, by in occ.items():
        s, k = by.most_common(1)[0]
        tot = sum(by.values())
        if k < share * tot or k < min_rate * n_of[s]:
            continue
        fam_c = collections.Counter(f for f, sc, ts in zip(fams, scen, toks, strict=True)
                                    if sc == s and t in ts)  # fmt: skip
        fam = fam_c.most_common(1)[0][0]
        own = [t in ts for f, sc, ts in zip(fams, scen, toks, strict=True) if sc == s and f == fam]
        oth = [t in ts for f, sc, ts in zip(fams, scen, toks, strict=True) if sc != s and f == fam]
        r_own = sum(own) / max(len(own), 1)
        r_oth = sum(oth) / len(oth) if oth else 0.0
        # two-proportion z: is it more common in the scenario than in its family's others?
        pool = (sum(own) + sum(oth)) / max(len(own) + len(oth), 1)
        se = math.sqrt(pool * (1 - pool) * (1 / max(len(own), 1) + 1 / max(len(oth), 1)))
        z = (r_own - r_oth) / se if se > 0 else math.inf
        out.append(
            Concentration(t, s, k / tot, k / n_of[s], fam, r_own, r_oth, bool(oth) and z < 3)
        )
    out.sort(key=lambda c: (c.family, -c.share, -c.rate))
    return out


def summarise_plan(items: Sequence[tuple[str, int, str]], progress: Any = None) -> list[Summary]:
    out = []
    for i, (slug, seed, hw) in enumerate(items):
        out.append(summarise(engine.generate(slug, seed, hardware=hw)))
        if progress is not None:
            progress(i + 1, len(items))
    return out


# ------------------------------------------------------------------------------------------------
# feature dictionaries
# ------------------------------------------------------------------------------------------------
_TOKEN = re.compile(r"[a-z0-9_.+:/×#-]+")


def prompt_tokens(s: Summary) -> dict[str, float]:
    """Words and word pairs of the prompt; numbers stay tokens ("2×2048", "8")."""
    return {f"w:{w}" if " " not in w else f"w2:{w}": 1.0 for w in prompt_words(s.prompt)}


def prompt_words(text: str) -> set[str]:
    """The words and word pairs ("a b") of a prompt text."""
    words = _TOKEN.findall(text.lower())
    return set(words) | {f"{a} {b}" for a, b in itertools.pairwise(words)}


def name_set(s: Summary, ex: Exclusion) -> dict[str, float]:
    return {g.name: 1.0 for g in s.groups if not ex.drops(g.name)}


_STR_ARG_SKIP = ("Process Group Ranks",)


def _log(x: float) -> float:
    return math.log10(x) if x > 0 else 0.0


def _numel(dims: Any) -> float:
    try:
        return float(np.prod([int(d) for d in dims])) if dims else 0.0
    except (TypeError, ValueError):
        return 0.0


# threads whose event count measures time: a poller's wake-ups (see `shape_features`)
CLOCKS = frozenset({"pt_nccl_watchdg"})


def shape_features(s: Summary, ex: Exclusion) -> dict[str, float]:
    """Counts and shape, with signature events and signature categories left out."""
    f: dict[str, float] = {}
    gs = [g for g in s.groups if not ex.drops(g.name)]
    n_steps = max(1, len({nm for nm, _ in s.steps}))
    per = 1.0 / (max(s.world, 1) * n_steps)
    # a declared per-step unit (a pipeline's microbatches): every per-step count is that
    # signature count times the events of one unit plus the step's own few (per unit they still
    # carry 1/count), so a trace that has the unit gives no per-step counts; its step time is
    # read per unit
    units = sum(g.count for g in s.groups if g.name in ex.per) * per if ex.per else 0.0
    counts = units <= 0
    keep_cat = [g for g in gs if g.cat not in ex.categories]
    by_cat: dict[str, list[Group]] = {}
    for g in keep_cat:
        by_cat.setdefault(g.cat, []).append(g)
    # counts only: durations are where the timing signatures live (kernel lengths, gaps, NCCL
    # time), so they are not a shortcut feature; `bench/realism.py` looks at them instead
    # ... and a clock: the NCCL watchdog wakes every ~100 ms and queries each work still in
    # flight, so its count is the time works stay outstanding divided by its period (a host far
    # ahead of its GPU shows more, one that waits on its loader fewer): timing, not a count
    for cat, lst in by_cat.items():
        if counts:
            f[f"count/step:{cat}"] = sum(g.count for g in lst if g.tid not in CLOCKS) * per
        f[f"distinct:{cat}"] = len({g.name for g in lst})
    f["distinct_names"] = len({g.name for g in keep_cat})
    if counts:
        f["events/step"] = sum(g.count for g in keep_cat if g.tid not in CLOCKS) * per
        for t in {g.tid for g in gs} - CLOCKS:
            f[f"thread{t}:events/step"] = sum(g.count for g in keep_cat if g.tid == t) * per
    f["threads_per_rank"] = s.threads_per_rank
    f["world"] = s.world
    f["max_depth"] = s.max_depth
    if s.steps:
        d = np.array([x for _, x in s.steps]) / 1e6
        # the typical step time only: its spread over steps is the recompilation signature
        f["step_ms_p50"] = float(np.median(d)) / (1.0 if counts else units)
        f["steps"] = n_steps
        nums = [int(m.group(1)) for nm, _ in s.steps if (m := re.search(r"#(\d+)", nm))]
        f["first_step"] = float(min(nums)) if nums else 0.0
    # arguments: keys, string values (dtypes, collective names, input types), sizes
    sizes: dict[str, list[float]] = {}
    for g in keep_cat:
        if not g.args:
            continue
        for k, v in g.args.items():
            if counts:
                f[f"argkey:{k}/step"] = f.get(f"argkey:{k}/step", 0.0) + g.count * per
            if (isinstance(v, str) and k not in _STR_ARG_SKIP) or isinstance(v, bool):
                f[f"arg:{k}={v}"] = 1.0
            elif isinstance(v, int | float):
                sizes.setdefault(k, []).append(float(v))
            elif isinstance(v, list) and v and all(isinstance(x, str) for x in v):
                for x in set(v):
                    f[f"arg:{k}={x}"] = 1.0
            elif k == "Input Dims" and isinstance(v, list):
                sizes.setdefault("Input numel", []).extend(_numel(d) for d in v)
            elif isinstance(v, list) and v and all(isinstance(x, int | float) for x in v):
                sizes.setdefault(k, []).append(_numel(v))
    for k, vals in sizes.items():
        arr = np.array(vals)
        f[f"size_log10_max:{k}"] = _log(float(arr.max()))
        f[f"size_log10_p50:{k}"] = _log(float(np.median(arr)))
    f.update(s.header)
    return f


def features(s: Summary, fset: str, ex: Exclusion) -> dict[str, float]:
    got = s.cache.get((fset, ex))
    if got is None:
        got = s.cache[(fset, ex)] = _features(s, fset, ex)
    return got


def _features(s: Summary, fset: str, ex: Exclusion) -> dict[str, float]:
    if fset == "prompt":
        return prompt_tokens(s)
    if fset == "names":
        return {f"n:{k}": v for k, v in name_set(s, ex).items()}
    if fset == "shape":
        return {f"s:{k}": v for k, v in shape_features(s, ex).items()}
    if fset == "all":
        out = prompt_tokens(s)
        out.update(features(s, "names", ex))
        out.update(features(s, "shape", ex))
        return out
    raise ValueError(fset)


# ------------------------------------------------------------------------------------------------
# classifiers
# ------------------------------------------------------------------------------------------------
def _slog(x: Any) -> Any:
    return np.sign(x) * np.log1p(np.abs(x))


def classifiers() -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler
    from sklearn.tree import DecisionTreeClassifier

    return {
        "tree": DecisionTreeClassifier(random_state=0, min_samples_leaf=2),
        "logreg": make_pipeline(
            FunctionTransformer(_slog),
            StandardScaler(),
            # one-vs-rest liblinear: L-BFGS is many times slower on these small, wide matrices
            OneVsRestClassifier(LogisticRegression(C=0.1, solver="liblinear")),
        ),
    }


@dataclass
class Result:
    label: str  # "all scenarios" or "a / b"
    fset: str
    n: int
    classes: int
    scores: dict[str, float]  # classifier -> 5-fold CV accuracy
    target: float
    top: list[dict] = field(default_factory=list)

    @property
    def best(self) -> float:
        return max(self.scores.values())

    @property
    def ok(self) -> bool:
        return self.best <= self.target

    @property
    def applicable(self) -> bool:
        """False for a pair with no workload family in common (nothing to compare)."""
        return "no shared family" not in self.scores


def matrix(
    summaries: Sequence[Summary], fset: str, ex: Exclusion, min_df: int = 2
) -> tuple[np.ndarray, list[str]]:
    """Trace x feature matrix; features present (non-zero) in fewer than `min_df` traces are
    dropped (a name one trace has cannot generalise across folds)."""
    dicts = [features(s, fset, ex) for s in summaries]
    df: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            if v:
                df[k] = df.get(k, 0) + 1
    cols = sorted(k for k, c in df.items() if c >= min_df)
    idx = {k: i for i, k in enumerate(cols)}
    X = np.zeros((len(dicts), len(cols)))
    for r, d in enumerate(dicts):
        for k, v in d.items():
            j = idx.get(k)
            if j is not None:
                X[r, j] = v
    return X, cols


def cv_scores(X: np.ndarray, y: np.ndarray, folds: int = 5) -> dict[str, float]:
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    if X.shape[1] == 0:
        counts = np.unique(y, return_counts=True)[1]
        return {"majority": float(counts.max() / counts.sum())}
    k = min(folds, int(np.unique(y, return_counts=True)[1].min()))
    cv = StratifiedKFold(n_splits=k, shuffle=True, random_state=0)
    return {
        name: float(cross_val_score(clf, X, y, cv=cv, n_jobs=1).mean())
        for name, clf in classifiers().items()
    }


def _describe(col: np.ndarray, y: np.ndarray, classes: list[str]) -> str:
    vals = np.unique(col)
    if set(vals.tolist()) <= {0.0, 1.0}:
        share = {c: float(col[y == c].mean()) for c in classes}
        on = sorted((s for s in classes if share[s] >= 0.5), key=lambda s: -share[s])
        rest = max((share[s] for s in classes if s not in on), default=0.0)
        if not on:
            top = max(classes, key=lambda s: share[s])
            return f"present mostly in {top} ({share[top]:.0%}), elsewhere <= " + (
                f"{max(share[s] for s in classes if s != top):.0%}"
            )
        lst = ", ".join(f"{s} {share[s]:.0%}" for s in on[:4])
        more = f" (+{len(on) - 4})" if len(on) > 4 else ""
        return f"present in {lst}{more}; others <= {rest:.0%}"
    med = {c: float(np.median(col[y == c])) for c in classes}
    if len(set(med.values())) == 1:  # medians tie: compare means
        med = {c: float(np.mean(col[y == c])) for c in classes}
        lo = min(classes, key=lambda s: med[s])
        hi = max(classes, key=lambda s: med[s])
        return f"mean {lo} {med[lo]:.3g} .. {hi} {med[hi]:.3g} (all {float(np.mean(col)):.3g})"
    lo = min(classes, key=lambda s: med[s])
    hi = max(classes, key=lambda s: med[s])
    return f"median {lo} {med[lo]:.3g} .. {hi} {med[hi]:.3g} (all {float(np.median(col)):.3g})"


def top_features(
    X: np.ndarray, y: np.ndarray, cols: list[str], k: int = 5, folds: int = 5
) -> list[dict]:
    """What gives the answer away: the feature a tree splits on first, then (that feature removed)
    the next one, k times; each with its accuracy alone (a small tree on that one feature,
    cross-validated) and how it differs by scenario."""
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.tree import DecisionTreeClassifier

    classes = sorted(set(y.tolist()))
    kf = min(folds, int(np.unique(y, return_counts=True)[1].min()))
    cv = StratifiedKFold(n_splits=kf, shuffle=True, random_state=0)
    depth = max(2, math.ceil(math.log2(len(classes))) + 1)
    left = list(range(X.shape[1]))
    out = []
    while left and len(out) < k:
        tree = DecisionTreeClassifier(random_state=0, min_samples_leaf=2).fit(X[:, left], y)
        imp = tree.feature_importances_
        if imp.max() <= 0:
            break
        j = left[int(np.argmax(imp))]
        left.remove(j)
        alone = cross_val_score(
            DecisionTreeClassifier(random_state=0, max_depth=depth, min_samples_leaf=2),
            X[:, [j]],
            y,
            cv=cv,
            n_jobs=1,
        ).mean()
        out.append(
            {
                "feature": cols[j],
                "alone": round(float(alone), 3),
                "how": _describe(X[:, j], y, classes),
            }
        )
    return out


def balanced(summaries: Sequence[Summary]) -> list[Summary]:
    """The first n traces of every scenario, n the smallest scenario count (chance = 1/classes)."""
    by: dict[str, list[Summary]] = {}
    for s in summaries:
        by.setdefault(s.scenario, []).append(s)
    n = min(len(v) for v in by.values())
    return [s for v in by.values() for s in v[:n]]


def family_floor(summaries: Sequence[Summary]) -> dict[str, float]:
    """What the workload family alone names, over the balanced set: ``measured`` guesses each
    trace's scenario as the one most common in its family (fitted on the other folds, 5-fold as
    the classifiers are), ``expected`` the same rule on the family draw itself
    (`engine._family` over 4000 seeds per scenario). Each family adds the share of its most
    common scenario: a scenario that lives in one family only (pipeline bubbles) adds its whole
    1/n, so no shape feature set can score below it: the family is in every trace (and in its
    prompt)."""
    rows = balanced(summaries)
    y = np.array([s.scenario for s in rows])
    fam = np.array([s.family for s in rows])
    idx = np.arange(len(rows))
    rng = np.random.default_rng(0)
    rng.shuffle(idx)
    hits = 0
    for k in range(5):
        test = idx[k::5]
        train = np.setdiff1d(idx, test)
        best: dict[str, str] = {}
        for f in set(fam[train]):
            names, counts = np.unique(y[train][fam[train] == f], return_counts=True)
            best[str(f)] = str(names[counts.argmax()])
        hits += sum(best.get(str(fam[i])) == y[i] for i in test)
    slugs = sorted(set(y.tolist()))
    draw = {s: collections.Counter(engine._family(s, seed) for seed in range(4000)) for s in slugs}
    fams = {f for c in draw.values() for f in c}
    expected = sum(max(draw[s][f] / 4000 for s in slugs) for f in fams) / len(slugs)
    return {"measured": hits / len(rows), "expected": float(expected)}


def family_matched(summaries: Sequence[Summary], a: str, b: str) -> list[Summary]:
    """Traces of a and b with the same number of each per workload family (families only one of
    them can have are left out): the family says which scenarios are possible, not which one it is.
    """
    sa = [s for s in summaries if s.scenario == a]
    sb = [s for s in summaries if s.scenario == b]
    out = []
    for f in sorted({s.family for s in sa} & {s.family for s in sb}):
        fa = [s for s in sa if s.family == f]
        fb = [s for s in sb if s.family == f]
        n = min(len(fa), len(fb))
        out += fa[:n] + fb[:n]
    return out


def audit(
    summaries: Sequence[Summary],
    sigs: dict[str, Sig],
    *,
    targets: dict[str, float] | None = None,
    pair_target: float | None = None,
    top_k: int = 5,
    pairs: Sequence[tuple[str, str]] | None = None,
    multiclass: bool = True,
) -> list[Result]:
    """Multi-class accuracy per feature set (all signatures removed; left out with
    `multiclass=False`), then every pair on all non-signature features (the two scenarios'
    signatures removed)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # two shared cores: BLAS threads only oversubscribe them
        return _audit(summaries, sigs, targets, pair_target, top_k, pairs, multiclass)


def _audit(
    summaries: Sequence[Summary],
    sigs: dict[str, Sig],
    targets: dict[str, float] | None,
    pair_target: float | None,
    top_k: int,
    pairs: Sequence[tuple[str, str]] | None,
    multiclass: bool = True,
) -> list[Result]:
    targets = targets or TARGETS
    pair_target = PAIR_TARGET if pair_target is None else pair_target
    pool = list(summaries)
    summaries = balanced(pool)
    slugs = sorted({s.scenario for s in summaries})
    y = np.array([s.scenario for s in summaries])
    ex_all = Exclusion.of(sigs, slugs)
    results = []
    for fset in FEATURE_SETS if multiclass else ():
        X, cols = matrix(summaries, fset, ex_all)
        results.append(
            Result(
                "all scenarios",
                fset,
                len(y),
                len(slugs),
                cv_scores(X, y),
                targets[fset],
                top_features(X, y, cols, top_k) if top_k else [],
            )
        )
    for a, b in pairs if pairs is not None else all_pairs(slugs):
        sub = family_matched(pool, a, b)
        if (
            len({s.scenario for s in sub}) < 2
            or min(sum(s.scenario == a for s in sub), sum(s.scenario == b for s in sub)) < 2
        ):
            results.append(
                Result(f"{a} / {b}", "all", len(sub), 2, {"no shared family": 0.0}, pair_target)
            )
            continue
        yy = np.array([s.scenario for s in sub])
        X, cols = matrix(sub, "all", Exclusion.of(sigs, (a, b)))
        results.append(
            Result(
                f"{a} / {b}",
                "all",
                len(yy),
                2,
                cv_scores(X, yy),
                pair_target,
                top_features(X, yy, cols, min(top_k, 3)) if top_k else [],
            )
        )
    return results
