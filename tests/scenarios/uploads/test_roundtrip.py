"""Round trip on a small sample: our own HTA exports, read back through the upload path, are
named by the findings as their injected scenario, and healthy ones raise nothing. The full
figures (every scenario, ten seeds) come from bench/upload_roundtrip.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from scenarios import engine

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from upload_roundtrip import verdict

SEEDS = (7, 8)


@pytest.mark.parametrize("slug", list(engine.SCENARIOS))
def test_findings_name_the_injected_scenario(slug):
    results = [verdict(slug, seed) for seed in SEEDS]
    # the sample is small: require the top finding on at least one seed and a hit on both
    assert sum(top for top, _, _ in results) >= 1, results
    assert all(anyhit for _, anyhit, _ in results), results
