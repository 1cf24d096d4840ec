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

SEED = 7


@pytest.mark.parametrize("slug", list(engine.SCENARIOS))
def test_findings_name_the_injected_scenario(slug):
    top, _, found = verdict(slug, SEED)
    # healthy: no finding at all; every other scenario: the first (most costly) finding names it
    assert top, f"{slug} seed {SEED}: findings {found}"
