"""Walkthrough narrations quote their trace, never a hand-typed number: every number about the
trace is a ``{{key:…}}``/``{{fact:…}}`` reference filled in from the trace's key when the page
is rendered, and every claim the narration makes about the trace (``claims`` in the front
matter: "none of the communication is hidden" → ``overlap_pct < 5``) holds on that trace.

If the engine's rework changes a trace, a walkthrough whose words no longer fit fails here."""

from __future__ import annotations

import dataclasses
import html as htmllib
import math
import re

import pytest

from content import pages as content_pages
from content import timelines
from content.pages import Claim, PageError
from scenarios import engine

pytestmark = pytest.mark.django_db

# A number standing on its own (not part of a name such as H100, NVLink4, fp32 or 1F1B).
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
PLACEHOLDER = re.compile(r"\{\{(key|fact):([a-z_]+)(?:\|([a-z0-9]+))?\}\}")
# Formulas and their constants are not quotes about the trace.
FORMULAS = ("(p−1)/(m+p−1)", "(p−1)/(v·m)", "2(n−1)/n", "(1 − overlap)", "m + p − 1")
HARDWARE_WORDS = {"A100": "a100", "H100": "h100", "H200": "h200", "MI300X": "mi300x"}
LINK_WORDS = ("NVLink3", "NVLink4", "xGMI", "Infinity Fabric")


def _without_illustrations(text: str) -> str:
    """The text minus "(Illustrative …)" asides: round numbers that say they are not the trace's."""
    out, i = [], 0
    while (j := text.find("(Illustrative", i)) >= 0:
        out.append(text[i:j])
        depth, k = 0, j
        while k < len(text):
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
            if depth == 0:
                break
        i = k
    out.append(text[i:])
    return "".join(out)


def typed_numbers(markdown: str) -> list[str]:
    """Numbers a narration states by hand (with a little context): what must be a reference."""
    text = PLACEHOLDER.sub(" ", _without_illustrations(markdown))
    text = re.sub(r"`[^`]*`", " ", text)  # code: API names, shapes
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
    text = re.sub(r"(?m)^\s*\d+\.\s", " ", text)  # list numbering
    for formula in FORMULAS:
        text = text.replace(formula, " ")
    return [text[max(0, m.start() - 30) : m.end() + 10] for m in NUMBER.finditer(text)]


def narration_of(page) -> str:
    return page.path.read_text(encoding="utf-8")


def expected_text(key: dict, source: str, name: str, fmt: str | None) -> str:
    """What a reference must print, computed here from the key (not with the page's code)."""
    if source == "key":
        value = key[name]
        return f"{value:.1f}" if isinstance(value, float) else str(value)
    value = key["facts"][name]
    if fmt == "len":
        return str(len(value))
    assert isinstance(value, int | float) and math.isfinite(value), (name, value)
    if fmt == "pct":
        return str(round(value * 100))
    if fmt == "s":
        return f"{value / 1000:.1f}"
    if fmt == "us":
        return f"{round(value * 1000) + 0.0:.0f}"
    if fmt in ("d0", "d1", "d2"):
        return f"{round(value, int(fmt[1])) + 0.0:.{fmt[1]}f}"  # + 0.0: never "-0"
    if isinstance(value, int):
        return str(value)
    return f"{value:.{0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2}f}"


def _walkthroughs():
    return content_pages.library().walkthroughs()


def _key(page) -> dict:
    return timelines.bundle(page.scenario, page.seed, page.hardware)["key"]


def test_no_walkthrough_types_a_number_about_its_trace():
    offenders = {}
    for page in _walkthroughs():
        found = typed_numbers(narration_of(page).split("\n---\n", 1)[1] + _steps_md(page))
        if found:
            offenders[page.slug] = found
    assert not offenders, f"write these as {{{{fact:…}}}} / {{{{key:…}}}} references: {offenders}"


def _steps_md(page) -> str:
    return "\n".join(step.body_md for step in page.steps)


def test_the_number_scan_catches_a_typed_number():
    assert typed_numbers("the step is **41.4 ms** and 0 % hides") != []
    assert typed_numbers("the step is **{{key:step_ms}} ms**, H100s, NVLink4, fp32, 1F1B") == []
    assert typed_numbers("(Illustrative: 400 ms plus (2 × 34) ms is 468 ms.) Then ok.") == []
    assert typed_numbers("bubble (p−1)/(m+p−1) of the step") == []


def test_every_reference_prints_its_traces_number(learner_client):
    for page in _walkthroughs():
        key = _key(page)
        served = htmllib.unescape(learner_client.get(page.url).content.decode())
        assert content_pages.MISSING not in served and "{{" not in served, page.slug
        refs = PLACEHOLDER.findall(_steps_md(page) + narration_of(page))
        assert refs, f"{page.slug} quotes nothing from its trace"
        for source, name, fmt in refs:
            assert source == "key" or name in key["facts"], f"{page.slug}: no fact {name}"
            assert expected_text(key, source, name, fmt or None) in served, (page.slug, name)


def test_every_claim_a_narration_makes_holds_on_its_trace():
    for page in _walkthroughs():
        assert page.claims, f"{page.slug} states no checked claim about its trace"
        assert content_pages.check_claims(page, _key(page)) == [], page.slug


def test_the_hardware_a_narration_names_is_its_traces():
    for page in _walkthroughs():
        text = narration_of(page)
        hw = engine.get_hardware(page.hardware)
        for word, hw_key in HARDWARE_WORDS.items():
            if re.search(rf"\b{word}s?\b", text):
                assert hw_key == hw.key, (page.slug, word, hw.key)
        for link in LINK_WORDS:
            if link in text:
                assert link == hw.scaleup_link, (page.slug, link, hw.scaleup_link)
        assert _key(page)["facts"]["hbm_tbps"] == pytest.approx(hw.hbm_tbps)
        if hw.vendor == "amd":  # the trace's rows and calls are HIP's (hipMalloc, "HIP API")
            for word in ("cudaMalloc", "cudaFree", "on the CUDA API row"):
                assert word not in text, (page.slug, word)


def test_a_claim_the_trace_contradicts_is_reported():
    """The narration that once said the compute stream is idle under every collective, on a trace
    where half the NCCL time overlaps compute, fails its check with the measured value."""
    page = content_pages.get_page("walkthrough-straggler-vs-bandwidth")
    key = _key(page)
    wrong = dataclasses.replace(
        page, claims=[Claim("the compute stream is idle under them", "overlap_pct < 5")]
    )
    (failure,) = content_pages.check_claims(wrong, key)
    assert "overlap_pct" in failure and f"{key['facts']['overlap_pct']}" in failure
    # and the page's own claims follow the trace: change the trace, they fail
    exposed = content_pages.get_page("walkthrough-exposed-allreduce")
    moved = _key(exposed)
    moved = {**moved, "facts": {**moved["facts"], "overlap_pct": 62.0}}
    failures = content_pages.check_claims(exposed, moved)
    assert any("none of the communication is hidden" in f for f in failures)


def test_a_reference_the_trace_lacks_renders_missing():
    page = content_pages.get_page("walkthrough-sync-stalls")
    key = _key(page)
    gone = {**key, "facts": {k: v for k, v in key["facts"].items() if k != "inner_syncs_per_step"}}
    rendered = " ".join(s["html"] for s in content_pages.render_walkthrough_steps(page, gone))
    assert content_pages.MISSING in rendered


WALK = """---
title: T
slug: walkthrough-t
section: walkthroughs
order: 9
scenario: healthy
seed: 1
{extra}steps:
  - title: One
    body: |
      {body}
---
Body.
"""


@pytest.mark.parametrize(
    ("extra", "body", "error"),
    [
        ("", "Step {{fact:step_ms|hex}} ms.", "unknown format"),
        ("", "Step {{key:facts}} ms.", "unknown placeholder"),
        ("", "Step {{facts:step_ms}} ms.", "not a key:/fact: placeholder"),
        (
            'claims:\n  - says: "the GPU never idles"\n    check: "gpu_idle_frac < 0.1"\n',
            "The GPU is busy.",
            "never says",
        ),
        (
            'claims:\n  - says: "busy"\n    check: "__import__(\'os\')"\n',
            "The GPU is busy.",
            "claim calls something",
        ),
        (
            'claims:\n  - says: "busy"\n    check: "facts.gpu_idle_frac < 0.1"\n',
            "The GPU is busy.",
            "not allowed",
        ),
        ('claims:\n  - says: "busy"\n', "The GPU is busy.", "needs 'says' and 'check'"),
        ("", "The GPU is busy.", "needs 'theory'"),
        ("theory:\n  scenario: straggler\n", "The GPU is busy.", "needs 'says'"),
        (
            'theory:\n  scenario: straggler\n  says: "One rank is late."\n',
            "The GPU is busy.",
            "never says",
        ),
        ("theory:\n  scenario: slow-network\n", "The GPU is busy.", "not an engine scenario"),
    ],
)
def test_bad_references_and_claims_are_refused_when_the_page_loads(tmp_path, extra, body, error):
    path = tmp_path / "t.md"
    path.write_text(WALK.format(extra=extra, body=body), encoding="utf-8")
    with pytest.raises(PageError, match=re.escape(error)):
        content_pages.parse_page(path)


def test_a_narration_over_a_trace_of_another_workload_is_reported():
    """Each walkthrough names the workload its narration describes: when its seed comes to draw
    another family (a scenario newly hosted elsewhere), the check fails instead of a page that
    says "data-parallel training" over a pipeline trace."""
    page = content_pages.get_page("walkthrough-sync-stalls")
    key = _key(page)
    assert page.family == key["facts"]["family"] == "ddp"
    elsewhere = {**key, "facts": {**key["facts"], "family": "pp"}}
    (failure,) = content_pages.check_claims(page, elsewhere)
    assert "ddp" in failure and "pp" in failure
    assert all(p.family for p in content_pages.library().walkthroughs())


def test_every_narration_answers_the_theory_its_prompt_shows():
    """The prompt above a walkthrough's timeline shows a colleague's theory drawn from the seed;
    the narration answers that theory, not another one ("the colleague's allocator theory" under
    a prompt that blames recompiling), and speaks of none when the prompt shows none."""
    for page in _walkthroughs():
        prompt = timelines.bundle(*page.trace_args)["prompt"]
        assert content_pages.check_theory(page, prompt) == [], page.slug


def test_a_narration_answering_another_theory_is_reported(learner_client):
    page = content_pages.get_page("walkthrough-recompilation-vs-starvation")
    prompt = timelines.bundle(*page.trace_args)["prompt"]
    served = htmllib.unescape(learner_client.get(page.url).content.decode())
    assert prompt["theory"] in served and page.theory.says in served
    other = dataclasses.replace(page, theory=content_pages.Theory("allocator-stalls", "x"))
    (failure,) = content_pages.check_theory(other, prompt)
    assert "caching allocator" in failure and "recompiling" in failure
    silent = dataclasses.replace(page, theory=content_pages.Theory(None))
    (failure,) = content_pages.check_theory(silent, prompt)
    assert "recompiling" in failure


def test_the_sync_stalls_arithmetic_computes_from_what_it_prints(learner_client):
    """The fix step prints the refill gap the step actually loses (the worst rank's), so the
    reader's subtraction gives the expected step it prints: 67.4 − 14.8 = 52.6, not 67.4 − 14.5."""
    page = content_pages.get_page("walkthrough-sync-stalls")
    key = _key(page)
    fix = htmllib.unescape(content_pages.render_walkthrough_steps(page, key)[-1]["html"])
    lost = key["facts"]["sync_refill_ms_crit"]
    assert f"{lost:.1f} ms on the rank" in fix
    step, expected = round(key["step_ms"], 1), round(key["expected_step_ms"], 1)
    assert step - round(lost, 1) == pytest.approx(expected, abs=0.11)


def test_the_per_rank_busbw_range_reads_as_a_range():
    """The straggler-vs-bandwidth narration printed the ranks' bus bandwidth as "34–34 GB/s";
    it prints the range to a decimal, so its two ends are the two measured values."""
    page = content_pages.get_page("walkthrough-straggler-vs-bandwidth")
    key = _key(page)
    text = htmllib.unescape(
        " ".join(s["html"] for s in content_pages.render_walkthrough_steps(page, key))
    )
    lo, hi = (key["facts"][f"busbw_{end}_rank_gbps"] for end in ("min", "max"))
    assert f"({lo:.1f}–{hi:.1f} GB/s" in text
    assert not re.search(r"\((\d+)–\1 GB/s", text)


def test_a_skew_of_microseconds_prints_in_microseconds():
    """The symmetry check printed the collectives' start skew as "within 0.00 ms"; a skew
    measured in microseconds prints in them."""
    page = content_pages.get_page("walkthrough-straggler-vs-bandwidth")
    key = _key(page)
    text = " ".join(s["html"] for s in content_pages.render_walkthrough_steps(page, key))
    skew = key["facts"]["coll_start_skew_ms"]
    assert f"starts within {round(skew * 1000)} µs" in htmllib.unescape(text)
    assert "within 0.00 ms" not in htmllib.unescape(text)
    assert content_pages.format_fact(0.0016, "us") == "2"


def test_the_typical_step_reads_the_same_in_the_narration_and_the_measurement():
    """The recompilation narration said a typical step takes "140 ms" two steps before the
    measurement line said "vs 140.1 ms" of the same steps."""
    page = content_pages.get_page("walkthrough-recompilation-vs-starvation")
    key = _key(page)
    text = htmllib.unescape(
        " ".join(s["html"] for s in content_pages.render_walkthrough_steps(page, key))
    )
    steady = f"{key['facts']['steady_step_ms']:.1f} ms"
    assert f"a typical step here takes {steady}" in text and f"vs {steady}" in text


def test_the_launch_bound_busy_share_is_said_once_one_way():
    """The launch-bound narration said the GPU "idles 51 % of the step" where its arithmetic says
    it "is busy 48 %" (99 % in all, two measures of one thing); it quotes the busy time the
    measurement line quotes."""
    page = content_pages.get_page("walkthrough-launch-bound-inference")
    key = _key(page)
    text = htmllib.unescape(
        " ".join(s["html"] for s in content_pages.render_walkthrough_steps(page, key))
    )
    busy = f"{key['facts']['gpu_per_step_ms']:.1f}"
    assert f"busy only {busy} ms of the {key['step_ms']:.1f} ms step" in text
    assert f"busy {busy} of {key['step_ms']:.1f} ms" in key["measurement_value"]
    assert "idles" not in text


def test_the_pipeline_narration_accounts_for_the_long_receives_its_timeline_shows():
    """The pipeline narration said "the SendRecv kernels are short next to the compute blocks"
    over a timeline whose receives (which last until the sender's data arrives) run for
    milliseconds on every stage; it says which are short and what the long ones are."""
    from scenarios import engine

    page = content_pages.get_page("walkthrough-pipeline-bubbles")
    trace = engine.generate(page.scenario, page.seed, hardware=page.hardware)
    tl = engine.to_timeline(trace)
    names, slices = tl["names"], tl["slices"]
    sendrecv = [
        d for d, n in zip(slices["dur"], slices["name"], strict=True) if "SendRecv" in names[n]
    ]
    step_us = 1000 * _key(page)["step_ms"]
    assert max(sendrecv) > 0.1 * step_us  # long receives are there to be seen
    text = htmllib.unescape(
        " ".join(s["html"] for s in content_pages.render_walkthrough_steps(page, _key(page)))
    )
    assert "Here the `SendRecv` kernels are short" not in narration_of(page)
    assert "its length is the wait for the neighbouring stage" in " ".join(text.split())
