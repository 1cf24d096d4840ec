"""Pure trace engine: synthetic multi-rank GPU profiler traces with one injected pathology each,
and the answer key measured on the generated events. numpy + stdlib + orjson only."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from . import workloads as W
from .catalog import (
    ANSWERS,
    FAMILIES,
    FAMILY_WEIGHTS,
    FIXES,
    HOSTS,
    MEASUREMENTS,
    SCENARIOS,
    SYMPTOMS,
    THEORIES,
    Scenario,
    Signature,
    family_scenarios,
    lookalike_of,
    lookalike_pairs,
    signature_of,
    title_of,
)
from .export import (
    dumps,
    export_to_path,
    hta_bytes,
    loads,
    perfetto_bytes,
    to_hta,
    to_perfetto,
    to_timeline,
)
from .hardware import DEFAULT_HARDWARE, HARDWARE, Hardware, get_hardware
from .keys import build_key
from .measure import Measured
from .model import Interner

GENERATOR_VERSION = "31"

__all__ = [
    "FAMILIES",
    "FIXES",
    "GENERATOR_VERSION",
    "HARDWARE",
    "MEASUREMENTS",
    "SCENARIOS",
    "AnswerKey",
    "Hardware",
    "Scenario",
    "Signature",
    "Trace",
    "dumps",
    "export_to_path",
    "generate",
    "generate_pair",
    "get_hardware",
    "hta_bytes",
    "key_json",
    "loads",
    "lookalike_of",
    "lookalike_pairs",
    "perfetto_bytes",
    "signature_of",
    "title_of",
    "to_hta",
    "to_perfetto",
    "to_timeline",
]

_KEY_FIELDS = (
    "scenario",
    "title",
    "twin",
    "signature",
    "measurement",
    "measurements_accepted",
    "measurement_label",
    "measurement_value",
    "measurement_text",
    "fix",
    "fixes_accepted",
    "fix_text",
    "step_ms",
    "expected_step_ms",
    "arithmetic",
    "facts",
    "evidence",
    "mentalmath_family",
    "grading",
)


@dataclass
class AnswerKey:
    scenario: str
    title: str
    twin: str | None
    signature: str
    measurement: str
    measurements_accepted: list[str]
    measurement_label: str
    measurement_value: str
    measurement_text: str
    fix: str
    fixes_accepted: list[str]
    fix_text: str
    step_ms: float
    expected_step_ms: float
    arithmetic: list[str]
    facts: dict[str, Any]
    evidence: list[dict]
    mentalmath_family: str | None
    grading: dict[str, Any] = field(default_factory=dict)  # diagnosis.key_block

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in _KEY_FIELDS}

    @classmethod
    def from_dict(cls, d: dict) -> AnswerKey:
        return cls(**{k: d[k] for k in _KEY_FIELDS if k in d})


@dataclass
class Trace:
    scenario: str
    seed: int
    hardware: str
    framing: int
    world: int
    prompt: dict
    key: AnswerKey
    names: list[str]
    args: list[dict]
    cols: dict[str, np.ndarray] = field(repr=False)
    version: str = GENERATOR_VERSION

    @property
    def fixed(self) -> bool:
        """True for the counterfactual twin: the same seed and workload with the fix applied."""
        return bool(self.key.facts.get("fixed", False))

    @property
    def family(self) -> str:
        """The workload family (ddp, ddp_compile, pp, decode, decode_compile)."""
        return str(self.key.facts.get("family", ""))

    @property
    def n_events(self) -> int:
        return len(self.cols["ts"])

    @property
    def hw(self) -> Hardware:
        return get_hardware(self.hardware)


_HW_KEYS = list(HARDWARE)


def _workload_rng(seed: int, hw: str, framing: int, attempt: int = 0) -> np.random.Generator:
    """The workload's stream: sizes, world, dtypes, step count and the run's noise. It does not
    depend on the scenario, so one seed gives one workload whatever is injected into it; a draw
    that cannot host every scenario of its family (see `_draw_workload`) draws again from
    `attempt` 1, 2, …"""
    key = [int(seed) & 0xFFFFFFFF, _HW_KEYS.index(hw), int(framing), 11]
    return np.random.default_rng(np.random.SeedSequence(key + ([attempt] if attempt else [])))


def _inject_rng(slug: str, seed: int, hw: str, framing: int) -> np.random.Generator:
    """The injection's own stream (slow rank, loader workers, compile steps, stall sizes …)."""
    ss = np.random.SeedSequence(
        [zlib.crc32(slug.encode()), int(seed) & 0xFFFFFFFF, _HW_KEYS.index(hw), int(framing), 13]
    )
    return np.random.default_rng(ss)


def _describe(family: str, p: dict, hw: Hardware) -> str:
    """The workload line: drawn from the family's sizes only, never from the scenario."""
    if family in ("ddp", "ddp_compile"):
        params_b = p["params"] / 1e9
        grads = "fp32" if p["grad_dtype"] == "Float" else "bf16"
        attn = "eager attention" if p["unfused"] else "SDPA attention"
        txt = (
            f"{params_b:.1f}B-parameter decoder ({p['layers']} layers, hidden {p['hidden']}), "
            f"DDP on {p['world']} ranks, {grads} gradients, {attn}, AdamW"
        )
        if family == "ddp_compile":
            txt += ", torch.compile"
        return txt
    if family == "decode":
        return (
            f"decoder with {p['layers']} layers, hidden {p['hidden']}, serving decode at batch "
            f"{p['batch']} on one GPU (GQA, {p.get('ctx', 1024)}-token context), one token per "
            "profiler step"
        )
    if family == "decode_compile":
        return (
            f"decoder with {p['layers']} layers, hidden {p['hidden']}, serving decode at batch "
            f"{p['batch']} on one GPU (GQA, static KV cache in 128-token length buckets around "
            f"{p.get('ctx', 1024)} tokens), one token per profiler step, torch.compile"
        )
    return (
        f"pipeline-parallel training: {p['stages']} stages (one per rank), microbatches of "
        f"{p['mb_tokens']} tokens, "
        + (
            f"interleaved 1F1B schedule ({p['chunks']} model chunks per stage)"
            if p.get("chunks", 1) > 1
            else "1F1B schedule"
        )
        + f", hidden {p['hidden']}"
    )


def _golden(seed: int) -> float:
    return (int(seed) * 0.6180339887498949 + 0.31) % 1.0


def _silver(seed: int) -> float:
    """A second low-discrepancy number per seed, independent of `_golden`'s (1, φ and √2 are
    rationally independent, so the pairs fill the unit square evenly)."""
    return (int(seed) * 0.41421356237309515 + 0.57) % 1.0


def _draw(weights: dict[str, float], u: float) -> str:
    fams = list(weights)
    cum = np.cumsum(np.asarray([weights[f] for f in fams], float) / sum(weights.values()))
    return str(fams[min(int(np.searchsorted(cum, u, "right")), len(fams) - 1)])


def _family_for(slugs: tuple[str, ...], seed: int) -> str:
    """The workload family: a low-discrepancy draw over seeds (any run of consecutive seeds sees
    each family close to its weight), the same for every scenario the drawn family hosts. A
    scenario that cannot live there (or a pair that cannot share it) draws again among the
    families that host it, with the same weights and an independent number, so it lands in each
    of them as often as healthy does relative to the others: which family a trace comes from
    says nothing of its scenario beyond the families that scenario can happen in."""
    fam = _draw(FAMILY_WEIGHTS, _golden(seed))
    if all(fam in HOSTS[s] for s in slugs):
        return fam
    common = {f: w for f, w in FAMILY_WEIGHTS.items() if all(f in HOSTS[s] for s in slugs)}
    if not common:
        raise ValueError(f"no workload family hosts both {slugs[0]!r} and {slugs[-1]!r}")
    return _draw(common, _silver(seed))


def _family(slug: str, seed: int) -> str:
    return _family_for((slug,), seed)


def _pick(seed: int, hardware: str | None, framing: int | None) -> tuple[str, int]:
    """Hardware and framing: from the seed alone (never from the scenario) unless given."""
    pick = np.random.default_rng([int(seed) & 0xFFFFFFFF, 7])
    hw_key = hardware or str(_HW_KEYS[int(pick.integers(0, len(_HW_KEYS)))])
    if hw_key not in HARDWARE:
        get_hardware(hw_key)  # the clear error for an unknown platform
    fr = int(pick.integers(0, 1 << 16))
    return hw_key, fr if framing is None else int(framing)


# draws a workload may take before one hosts every scenario of its family: 58 % of the A100 DDP
# draws cannot host a memory-bound job (28 % on H100, 20 % on H200, 9 % on MI300X), and of those
# that can, most would run its step over `W.MB_STEP_CAP` times the drawn one's, so 17 % of A100
# draws host it within the cap (66 % on H100, 62 % on H200, 82 % on MI300X; DDP, seeds 0-149, three
# draws each). Sixty-four misses in a row would happen about once in 150 000 A100 seeds (0.83^64,
# derived); the first draw that hosts it at all is then used. An A100 DDP draw loop took 15 ms at
# the median, 197 ms at most (seeds 0-119, on a machine loaded by tests)
_HOST_ATTEMPTS = 64


class NoHostingWorkload(RuntimeError):
    """No draw of the family, in `_HOST_ATTEMPTS` tries, can host all of its scenarios."""


def _draw_workload(family: str, seed: int, hw_key: str, framing: int) -> tuple[dict, Any]:
    """The family's workload for (seed, hardware, framing), the same whatever the scenario: a
    draw in which one of the family's scenarios could not physically happen
    (`workloads.host_step_ratio`) is drawn again, for every scenario alike. Redrawing only for
    the scenario that cannot fit would leave that scenario's jobs smaller than the family's (on
    A100 no memory-bound job would be a large model), and the model's size would help name it.
    So is a draw where the memory-bound job would run a step far longer than the drawn one's
    (over `W.MB_STEP_CAP` times), unless no draw within `_HOST_ATTEMPTS` avoids it: then the
    first that hosts every scenario at all is used."""
    hw = get_hardware(hw_key)
    slugs = family_scenarios(family)

    def draw(attempt: int) -> tuple[dict, np.random.Generator]:
        rng = _workload_rng(seed, hw_key, framing, attempt)
        if family in ("ddp", "ddp_compile"):
            p = W.ddp_params(rng, hw, family)
            p["params"] = (12 * p["hidden"] ** 2 + 4 * p["hidden"]) * p["layers"]
        elif family in ("decode", "decode_compile"):
            p = W.infer_params(rng, hw, family)
        else:
            p = W.pp_params(rng, hw, family)
        p["family"] = family
        return p, rng

    fallback = None  # the first draw that hosts every scenario, if none does within the step cap
    for attempt in range(_HOST_ATTEMPTS):
        p, rng = draw(attempt)
        worst = max(
            W.host_step_ratio(s, family, p, _inject_rng(s, seed, hw_key, framing), hw)
            for s in slugs
        )
        if worst <= W.MB_STEP_CAP:
            return p, rng
        if fallback is None and worst < float("inf"):
            fallback = attempt
    if fallback is not None:
        return draw(fallback)
    # never a trace the job could not run: a clear error instead
    raise NoHostingWorkload(
        f"no {family} workload drawn for seed {seed} on {hw_key} hosts all of "
        f"{', '.join(slugs)} ({_HOST_ATTEMPTS} draws)"
    )


def _prompt(family: str, p: dict, hw: Hardware, framing: int) -> dict:
    syms = SYMPTOMS[family]
    theories = THEORIES[family]
    if p["world"] == 1:
        syms = [x for x in syms if "{world}" not in x]
    # a utilisation reading comes from the platform's own tool
    smi = "rocm-smi" if hw.vendor == "amd" else "nvidia-smi"
    return {
        "hardware": f"{p['world']}× {hw.name}" if p["world"] > 1 else hw.name,
        "workload": _describe(family, p, hw),
        "symptom": syms[framing % len(syms)].format(world=p["world"], smi=smi),
        "theory": theories[(framing // len(syms)) % len(theories)],
    }


def _build(
    slug: str,
    seed: int,
    hw_key: str,
    framing: int,
    family: str,
    *,
    fixed: bool = False,
) -> Trace:
    """`slug` injected into the family's workload drawn for (seed, hardware, framing) (a pair's
    two traces share that draw)."""
    hw = get_hardware(hw_key)
    p, rng = _draw_workload(family, seed, hw_key, framing)
    prompt = _prompt(family, p, hw, framing)  # from the drawn workload, before any injection
    inj = _inject_rng(slug, seed, hw_key, framing)
    W.inject(slug, family, p, inj, hw, fixed=fixed)
    it = Interner()
    if family in ("ddp", "ddp_compile"):
        sim = W.build_ddp(slug, rng, hw, it, p, inj)
    elif family in ("decode", "decode_compile"):
        sim = W.build_infer(slug, rng, hw, it, p, inj)
    else:
        sim = W.build_pp(slug, rng, hw, it, p, inj)
    cols = sim.rec.finish()
    # relative timestamps: shift so the first event sits at 1 ms
    cols["ts"] -= cols["ts"].min() - 1_000_000
    M = Measured(cols, it.names, it.args, hw, p["world"])
    facts = M.facts()
    facts["family"] = family
    if fixed:
        facts["fixed"] = True
    # the fixed twin is read as what it now is: a job with nothing left to fix
    key = AnswerKey.from_dict(build_key("healthy" if fixed else slug, M, facts, hw, p))
    return Trace(slug, seed, hw_key, framing, p["world"], prompt, key, it.names, it.args, cols)


def generate(
    slug: str,
    seed: int,
    *,
    hardware: str | None = None,
    framing: int | None = None,
    fixed: bool = False,
) -> Trace:
    """Scenario `slug` injected into the workload that (seed, hardware, framing) draws. The
    workload (family, hardware, sizes, world, dtypes, step count, framing) does not depend on
    the scenario; `fixed=True` gives the same trace with the scenario's fix applied (its key
    reads it as healthy, `trace.fixed` is True and `trace.scenario` stays `slug`)."""
    if slug not in SCENARIOS:
        raise ValueError(f"unknown scenario {slug!r}")
    seed = int(seed)
    hw_key, framing = _pick(seed, hardware, framing)
    return _build(slug, seed, hw_key, framing, _family_for((slug,), seed), fixed=fixed)


def generate_pair(
    slug_a: str,
    slug_b: str,
    seed: int,
    *,
    hardware: str | None = None,
    framing: int | None = None,
) -> tuple[Trace, Trace]:
    """Two traces from one workload draw (same family, hardware, sizes, world and framing), one
    with each scenario injected: only the signatures differ. ValueError when no workload family
    hosts both scenarios."""
    for s in (slug_a, slug_b):
        if s not in SCENARIOS:
            raise ValueError(f"unknown scenario {s!r}")
    seed = int(seed)
    hw_key, framing = _pick(seed, hardware, framing)
    family = _family_for((slug_a, slug_b), seed)
    return (
        _build(slug_a, seed, hw_key, framing, family),
        _build(slug_b, seed, hw_key, framing, family),
    )


def key_json(trace: Trace) -> bytes:
    return orjson.dumps(trace.key.to_dict(), option=orjson.OPT_INDENT_2)


_ = (ANSWERS, DEFAULT_HARDWARE)
