"""Round trip on a small sample: our own HTA exports, read back through the upload path, are
named by the findings as their injected scenario, and healthy ones raise nothing. The full
figures (every scenario, more seeds) come from bench/upload_roundtrip.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from scenarios import engine

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from upload_roundtrip import verdict

SEED = 7
# healthy jobs of every family the seeds draw (DDP, pipeline, single GPU); issue #18 asks for
# silence in >= 90 % of them
HEALTHY_SEEDS = [SEED, *range(1000, 1013)]


@pytest.mark.parametrize("slug", [s for s in engine.SCENARIOS if s != "healthy"])
def test_findings_name_the_injected_scenario(slug):
    top, _, found = verdict(slug, SEED)
    # the first (most costly) finding names the injected scenario
    assert top, f"{slug} seed {SEED}: findings {found}"


def test_healthy_jobs_raise_no_finding():
    loud = {}
    for seed in HEALTHY_SEEDS:
        silent, _, found = verdict("healthy", seed)
        if not silent:
            loud[seed] = found
    assert len(loud) <= 0.1 * len(HEALTHY_SEEDS), f"healthy seeds with findings: {loud}"
