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
    FIXES,
    HOSTS,
    MEASUREMENTS,
    SCENARIOS,
    SYMPTOMS,
    THEORIES,
    Scenario,
    Signature,
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

GENERATOR_VERSION = "6"

__all__ = [
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
    def n_events(self) -> int:
        return len(self.cols["ts"])

    @property
    def hw(self) -> Hardware:
        return get_hardware(self.hardware)


_HW_KEYS = list(HARDWARE)


def _rng(slug: str, seed: int, hw: str, framing: int) -> np.random.Generator:
    ss = np.random.SeedSequence(
        [zlib.crc32(slug.encode()), int(seed) & 0xFFFFFFFF, _HW_KEYS.index(hw), int(framing)]
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
            f"{p['batch']} on one GPU (GQA, 1024-token context), one token per profiler step"
        )
    return (
        f"pipeline-parallel training: {p['stages']} stages (one per rank), {p['micro']} "
        f"microbatches of {p['mb_tokens']} tokens per step, 1F1B schedule, hidden {p['hidden']}"
    )


def _family(slug: str, seed: int) -> str:
    """The workload family: a low-discrepancy draw over seeds, so any run of consecutive seeds
    sees each family close to its weight (the same sequence for every scenario)."""
    fams, w = zip(*HOSTS[slug], strict=True)
    cum = np.cumsum(np.asarray(w, float) / sum(w))
    u = (seed * 0.6180339887498949 + 0.31) % 1.0
    return str(fams[min(int(np.searchsorted(cum, u, "right")), len(fams) - 1)])


def generate(
    slug: str, seed: int, *, hardware: str | None = None, framing: int | None = None
) -> Trace:
    if slug not in SCENARIOS:
        raise ValueError(f"unknown scenario {slug!r}")
    seed = int(seed)
    pick = np.random.default_rng([zlib.crc32(slug.encode()), seed & 0xFFFFFFFF, 7])
    hw_key = hardware or str(_HW_KEYS[int(pick.integers(0, len(_HW_KEYS)))])
    hw = get_hardware(hw_key)
    if framing is None:
        framing = int(pick.integers(0, 1 << 16))
    rng = _rng(slug, seed, hw_key, framing)
    family = _family(slug, seed)
    it = Interner()
    if family in ("ddp", "ddp_compile"):
        p = W.ddp_params(rng, slug, hw, family)
        sim = W.build_ddp(slug, rng, hw, it, p)
    elif family == "decode":
        p = W.infer_params(rng, slug, hw, family)
        sim = W.build_infer(slug, rng, hw, it, p)
    else:
        p = W.pp_params(rng, slug, hw, family)
        sim = W.build_pp(slug, rng, hw, it, p)
    p["family"] = family
    cols = sim.rec.finish()
    # relative timestamps: shift so the first event sits at 1 ms
    cols["ts"] -= cols["ts"].min() - 1_000_000
    M = Measured(cols, it.names, it.args, hw, p["world"])
    facts = M.facts()
    key = AnswerKey.from_dict(build_key(slug, M, facts, hw, p))
    syms = SYMPTOMS[family]
    theories = THEORIES[family]
    if p["world"] == 1:
        syms = [x for x in syms if "{world}" not in x]
    prompt = {
        "hardware": f"{p['world']}× {hw.name}" if p["world"] > 1 else hw.name,
        "workload": _describe(family, p, hw),
        "symptom": syms[framing % len(syms)].format(world=p["world"]),
        "theory": theories[(framing // len(syms)) % len(theories)],
    }
    return Trace(slug, seed, hw_key, framing, p["world"], prompt, key, it.names, it.args, cols)


def key_json(trace: Trace) -> bytes:
    return orjson.dumps(trace.key.to_dict(), option=orjson.OPT_INDENT_2)


_ = (ANSWERS, DEFAULT_HARDWARE)
