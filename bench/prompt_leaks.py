"""Prompt-text leaks (issue 12): words and word pairs of the drill prompt that sit mostly in one
scenario.

Draws the prompt (hardware line, workload line, symptom, colleague's theory) of --per-scenario
traces of every scenario, on the shortcut audit's plan (same seeds for every scenario, hardware
cycled), without generating the events: the prompt is made from the drawn workload before any
injection, so `engine.generate(...).prompt` is the same text (checked on the first few).

Lists every word and word pair (tokens as `bench/audit_features.prompt_tokens` cuts them) with at
least --share of its occurrences in one scenario that appears in at least --min-rate of that
scenario's prompts. Each is marked "family" when the scenario's own workload family explains it
(within that family the word is not more common than in the other scenarios' prompts beyond
chance, two-proportion z < 3: a scenario that
lives in fewer families gets their words more often) or "LEAK" when it does not.

Usage: /work/main/.venv/bin/python bench/prompt_leaks.py [--per-scenario N] [--seed0 S]
Exit status 1 when a LEAK is listed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import audit_features as A  # noqa: E402
from scenarios import engine  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--per-scenario", type=int, default=300, help="prompts per scenario (300)")
    ap.add_argument("--seed0", type=int, default=9000, help="first seed (9000)")
    ap.add_argument("--share", type=float, default=0.8, help="share of occurrences (0.8)")
    ap.add_argument("--min-rate", type=float, default=0.05, help="share of its prompts (0.05)")
    a = ap.parse_args(argv)
    slugs = list(engine.SCENARIOS)
    t0 = time.perf_counter()
    rows = A.plan(slugs, a.per_scenario, a.seed0, healthy_factor=1)
    drawn = [A.prompt_of(s, seed, hw) for s, seed, hw in rows]
    # eight prompts spread over the plan, checked against the engine's own
    spot = list(zip(rows, drawn, strict=True))[:: max(1, len(rows) // 8)]
    for (s, seed, hw), (_fam, text) in spot:
        tr = engine.generate(s, seed, hardware=hw)
        assert A.prompt_text(tr.prompt) == text, (s, seed, hw)
    t1 = time.perf_counter()
    found = A.prompt_concentration(
        [(s, fam, text) for (s, _, _), (fam, text) in zip(rows, drawn, strict=True)],
        share=a.share,
        min_rate=a.min_rate,
    )
    print(
        f"{len(rows)} prompts ({a.per_scenario} per scenario) drawn in {t1 - t0:.1f} s; words and "
        f"pairs with >= {a.share:.0%} of their occurrences in one scenario and in >= "
        f"{a.min_rate:.0%} of its prompts: {len(found)}"
    )
    leaks = [c for c in found if not c.family]
    for c in found:
        print(f"  {'family' if c.family else 'LEAK  '}  {c.describe()}")
    if not found:
        print("  none")
    return 1 if leaks else 0


if __name__ == "__main__":
    sys.exit(main())
