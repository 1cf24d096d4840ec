"""The track as a signed-in learner sees it: every reachable link works, the pages the issue
promises exist, walkthroughs serve their trace, read marks are per user."""

from __future__ import annotations

import gzip
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest
from django.core.management import CommandError, call_command

from content import pages as content_pages
from content.models import ReadMark, WalkthroughSet

ROOT = Path(__file__).resolve().parents[2]
TRACK_PREFIXES = ("/track/", "/walkthroughs/")
SKIP_PREFIXES = ("/static/", "/accounts/logout", "/admin/")


class LinkParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if a.get("data-src"):
            self.links.append(a["data-src"])


class TextParser(HTMLParser):
    """The text a reader sees (not attributes, scripts or styles), and each step heading's."""

    HIDDEN = {"script", "style", "template"}

    def __init__(self):
        super().__init__()
        self.chunks: list[str] = []
        self.headings: list[str] = []
        self._hidden = 0
        self._heading: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in self.HIDDEN:
            self._hidden += 1
        elif tag == "h3":
            self._heading = []

    def handle_endtag(self, tag):
        if tag in self.HIDDEN:
            self._hidden -= 1
        elif tag == "h3" and self._heading is not None:
            self.headings.append(" ".join("".join(self._heading).split()))
            self._heading = None

    def handle_data(self, data):
        if not self._hidden:
            self.chunks.append(data)
            if self._heading is not None:
                self._heading.append(data)


def visible_text(html: str) -> TextParser:
    p = TextParser()
    p.feed(html)
    return p


# A step's focus directive (full | step:N | evidence:K | rank:R): it steers the timeline only.
FOCUS_DIRECTIVE = re.compile(r"\b(?:step|evidence|rank):\d+\b")


def assert_no_focus_directives(html: str, steps) -> None:
    """Step headings read as their titles, and no focus directive shows anywhere as text."""
    text = visible_text(html)
    headings = [h for h in text.headings if h in {s.title for s in steps}]
    assert headings == [s.title for s in steps], text.headings
    shown = " ".join(text.chunks)
    assert not FOCUS_DIRECTIVE.search(shown), FOCUS_DIRECTIVE.search(shown)
    assert "full" not in {c.strip() for c in text.chunks}


def parse(html: str) -> LinkParser:
    p = LinkParser()
    p.feed(html)
    return p


def body_of(response) -> bytes:
    if hasattr(response, "streaming_content"):
        return b"".join(response.streaming_content)
    data = response.content
    if response.get("Content-Encoding") == "gzip":
        data = gzip.decompress(data)
    return data


def test_crawl_everything_reachable_from_the_track(learner_client, loaded_sets):
    seen: dict[str, int] = {}
    ids: dict[str, set[str]] = {}
    fragments: list[tuple[str, str, str]] = []
    queue = ["/track/"]
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        response = learner_client.get(url)
        seen[url] = response.status_code
        assert response.status_code == 200, f"{url} answered {response.status_code}"
        ctype = response.get("Content-Type", "")
        if not ctype.startswith("text/html") or not url.startswith(TRACK_PREFIXES):
            continue
        parsed = parse(body_of(response).decode())
        ids[url] = parsed.ids
        for href in parsed.links:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "#")):
                continue
            path, frag = urldefrag(href)
            assert path.startswith("/"), f"relative link {href!r} on {url}"
            if path.startswith(SKIP_PREFIXES):
                continue
            if frag and path.startswith(TRACK_PREFIXES):
                fragments.append((url, path, frag))
            if path not in seen:
                queue.append(path)
    assert not [u for u, code in seen.items() if code != 200]
    lib = content_pages.library()
    for page in lib.ordered:
        assert page.url in seen, f"{page.url} is not reachable from /track/"
    for wt in lib.walkthroughs():
        assert f"/walkthroughs/{wt.slug}/timeline.json" in seen
        assert f"/walkthroughs/{wt.slug}/perfetto.json" in seen
    for name in content_pages.DOWNLOADS:
        assert f"/track/files/{name}" in seen
    for source, path, frag in fragments:
        if path in ids:
            assert frag in ids[path], f"{source} links to {path}#{frag}, which has no such id"


def test_six_walkthroughs_each_with_timeline_and_perfetto(learner_client):
    walkthroughs = content_pages.library().walkthroughs()
    assert len(walkthroughs) == 6
    for wt in walkthroughs:
        page = learner_client.get(f"/walkthroughs/{wt.slug}/")
        html = page.content.decode()
        assert page.status_code == 200
        assert "{{key:" not in html, f"{wt.slug}: unsubstituted answer-key placeholder"
        assert 'class="arithmetic"' in html
        assert html.count('<li class="wt-step') == len(wt.steps) >= 3
        assert f'/walkthroughs/{wt.slug}/perfetto.json"' in html
        assert "Download as Perfetto JSON" in html
        assert_no_focus_directives(html, wt.steps)
        assert f'data-focus="{wt.steps[1].focus}"' in html  # still there for the timeline

        tl = learner_client.get(f"/walkthroughs/{wt.slug}/timeline.json")
        data = json.loads(body_of(tl))
        assert data["v"] == 1 and data["slices"]["ts"] and data["rows"]
        assert any(n.startswith("ProfilerStep#") for n in data["names"])
        for step in wt.steps:
            if step.focus.startswith("evidence:"):
                assert int(step.focus.split(":")[1]) < len(data["evidence"]), wt.slug

        pf = learner_client.get(f"/walkthroughs/{wt.slug}/perfetto.json")
        assert pf["Content-Disposition"].startswith("attachment")
        events = json.loads(body_of(pf))
        events = events["traceEvents"] if isinstance(events, dict) else events
        assert len(events) > 100


def test_walkthrough_substitutes_this_traces_numbers(learner_client):
    from content import timelines

    wt = content_pages.get_page("walkthrough-exposed-allreduce")
    bundle = timelines.bundle(wt.scenario, wt.seed, wt.hardware)
    key = bundle["key"]
    html = learner_client.get(wt.url).content.decode()
    assert f"{key['step_ms']:.1f} ms" in html
    assert f"{key['expected_step_ms']:.1f}" in html
    for line in key["arithmetic"]:
        assert content_pages.html.escape(line) in html
    # the prompt's theory is printed as written, not wrapped in a second attribution
    theory = bundle["prompt"]["theory"]
    assert f'<dd class="theory">{content_pages.html.escape(theory)}</dd>' in html
    assert "colleague says" not in html.lower()


def test_four_tool_pages_with_the_five_sections():
    tools = [p for p in content_pages.library().ordered if p.section == "tools"]
    assert len(tools) == 4
    want = ["Artifact anatomy", "Reading order", "Fault catalog", "Capture recipes", "Exercises"]
    for page in tools:
        h2 = [text for level, _, text in page.headings if level == 2]
        assert [h for h in h2 if h in want] == want, f"{page.slug}: {h2}"


def test_labs_a_to_c_and_their_files(learner_client):
    lib = content_pages.library()
    for slug in ("lab-a-torch-profiler", "lab-b-nsys", "lab-c-ncu"):
        assert lib.pages[slug].section == "labs"
    nb = json.loads((ROOT / "content/notebooks/companion.ipynb").read_text())
    assert nb["nbformat"] == 4 and isinstance(nb["cells"], list) and nb["cells"]
    source = (ROOT / "content/labs/lab_a_profile.py").read_text()
    compile(source, "lab_a_profile.py", "exec")

    lab_a = learner_client.get("/track/lab-a-torch-profiler/").content.decode()
    assert "/track/files/lab_a_profile.py" in lab_a
    r = learner_client.get("/track/files/companion.ipynb")
    assert r.status_code == 200 and "attachment" in r["Content-Disposition"]
    assert json.loads(body_of(r))["nbformat"] == 4
    r = learner_client.get("/track/files/lab_a_profile.py")
    assert body_of(r).decode() == source


@pytest.mark.parametrize(
    "url",
    [
        "/track/files/models.py",
        "/track/files/..%2Fmodels.py",
        "/track/files/..%2F..%2Fmanage.py",
        "/track/files/%2Fetc%2Fpasswd",
        "/track/no-such-page/",
        "/walkthroughs/no-such-walkthrough/",
        "/walkthroughs/overview/",
        "/walkthroughs/overview/timeline.json",
        "/track/timelines/no-such-scenario/1.json",
        "/track/timelines/healthy/10000.json",
    ],
)
def test_unknown_and_traversal_urls_404(learner_client, url):
    assert learner_client.get(url).status_code == 404


def test_inline_timeline_endpoint(learner_client):
    r = learner_client.get("/track/timelines/healthy/3.json")
    assert r.status_code == 200
    assert json.loads(body_of(r))["v"] == 1


def test_datasets_hta_and_acmetrace():
    lib = content_pages.library()
    hta = lib.pages["hta-public-traces"]
    acme = lib.pages["acmetrace"]
    assert hta.section == acme.section == "datasets"
    assert "MTBF" in acme.html and "goodput" in acme.html.lower()


def test_overview_has_altitude_ladder_and_interview_script():
    overview = [p for p in content_pages.library().ordered if p.section == "overview"]
    headings = " | ".join(t.lower() for p in overview for _, _, t in p.headings)
    assert "altitude ladder" in headings
    assert "script" in headings


def test_walkthrough_page_slug_under_track_redirects(learner_client):
    r = learner_client.get("/track/walkthrough-exposed-allreduce/")
    assert r.status_code == 302 and r["Location"] == "/walkthroughs/walkthrough-exposed-allreduce/"


def test_read_marks_toggle_and_are_per_user(client, make_user):
    ada, bob = make_user("ada"), make_user("bob")
    client.force_login(ada)
    r = client.post("/track/reading-order/read/")
    assert r.status_code == 302
    assert ReadMark.objects.filter(user=ada, slug="reading-order").exists()
    page = client.get("/track/reading-order/").content.decode()
    assert 'aria-pressed="true"' in page
    assert "1 of" in client.get("/track/").content.decode()

    r = client.post("/track/reading-order/read/", headers={"HX-Request": "true"})
    assert r.status_code == 200 and 'aria-pressed="false"' in r.content.decode()
    assert "<html" not in r.content.decode()
    assert not ReadMark.objects.filter(user=ada).exists()

    client.post("/track/reading-order/read/")
    client.force_login(bob)
    assert 'aria-pressed="false"' in client.get("/track/reading-order/").content.decode()
    assert not ReadMark.objects.filter(user=bob).exists()
    assert client.post("/track/no-such-page/read/").status_code == 404
    assert client.get("/track/reading-order/read/").status_code == 405


def test_a_double_click_on_mark_as_read_leaves_the_page_read(client, make_user):
    """The button says what it wants: two posts of "Mark as read" (a double click) leave the page
    read, where a toggle left it unread; the first read time stays (re-narrations count from it)."""
    ada = make_user("ada")
    client.force_login(ada)
    page = client.get("/track/reading-order/").content.decode()
    button = re.search(r'<button type="submit" name="read" value="(\d)"', page)
    assert button and button.group(1) == "1"
    client.post("/track/reading-order/read/", {"read": "1"})
    first = ReadMark.objects.get(user=ada, slug="reading-order").read_at
    r = client.post("/track/reading-order/read/", {"read": "1"}, headers={"HX-Request": "true"})
    assert 'aria-pressed="true"' in r.content.decode() and 'value="0"' in r.content.decode()
    assert ReadMark.objects.get(user=ada, slug="reading-order").read_at == first
    for _ in range(2):
        client.post("/track/reading-order/read/", {"read": "0"})
    assert not ReadMark.objects.filter(user=ada).exists()


def test_read_mark_needs_csrf(make_user):
    from django.test import Client

    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(make_user("carol"))
    assert csrf_client.post("/track/reading-order/read/").status_code == 403


@pytest.mark.parametrize(
    "url",
    [
        "/track/",
        "/track/reading-order/",
        "/walkthroughs/walkthrough-exposed-allreduce/",
        "/walkthroughs/walkthrough-exposed-allreduce/timeline.json",
        "/track/files/companion.ipynb",
    ],
)
def test_anonymous_is_sent_to_login(client, db, url):
    r = client.get(url)
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")


def test_index_lists_sections_in_order_and_sets(learner_client, loaded_sets):
    html = learner_client.get("/track/").content.decode()
    positions = [html.find(f'id="section-{key}"') for key, _ in content_pages.SECTIONS]
    assert all(p > 0 for p in positions) and positions == sorted(positions)
    for ws in WalkthroughSet.objects.all():
        assert ws.title in html


def test_load_content_creates_sets_and_is_idempotent(db):
    call_command("load_content", verbosity=0)
    call_command("load_content", verbosity=0)
    sets = {s.slug: s for s in WalkthroughSet.objects.all()}
    assert {"first-week", "lookalikes", "full-track"} <= set(sets)
    assert len(sets["full-track"].walkthroughs) == 6
    walkthroughs = {p.slug for p in content_pages.library().walkthroughs()}
    for s in sets.values():
        assert set(s.walkthroughs) <= walkthroughs


def test_load_content_rejects_a_bad_reference(db, tmp_path):
    bad = tmp_path / "sets.yaml"
    bad.write_text(
        "- slug: broken\n  title: Broken\n  walkthroughs: [walkthrough-exposed-allreduce, nope]\n"
    )
    with pytest.raises(CommandError, match=r"'broken'.*'nope'"):
        call_command("load_content", "--file", str(bad), verbosity=0)
    assert not WalkthroughSet.objects.filter(slug="broken").exists()


def test_bad_front_matter_is_reported_with_the_file(tmp_path):
    (tmp_path / "a.md").write_text("---\ntitle: [unclosed\n---\n# x\n")
    with pytest.raises(content_pages.PageError, match=r"a\.md.*YAML"):
        content_pages.build_library(tmp_path)
    (tmp_path / "a.md").write_text("---\ntitle: A\nslug: a\nsection: nowhere\norder: 1\n---\n")
    with pytest.raises(content_pages.PageError, match="section"):
        content_pages.build_library(tmp_path)
    (tmp_path / "a.md").write_text(
        "---\ntitle: A\nslug: a\nsection: overview\norder: 1\n---\n"
        "[[timeline scenario=healthy seed=99999]]\n"
    )
    with pytest.raises(content_pages.PageError, match="seed"):
        content_pages.build_library(tmp_path)


def test_markdown_rendering_tables_anchors_and_timeline_mount(tmp_path):
    (tmp_path / "a.md").write_text(
        "---\ntitle: A\nslug: a\nsection: overview\norder: 1\n---\n# A\n\n## Two words\n\n"
        "| x | y |\n|---|---|\n| 1 | 2 |\n\n"
        "[[timeline scenario=straggler seed=9 focus=evidence:0]]\n\n<script>x</script>\n"
    )
    page = content_pages.build_library(tmp_path).pages["a"]
    assert "<table>" in page.html
    assert '<h2 id="two-words">' in page.html
    assert re.search(
        r'data-src="/track/timelines/straggler/9\.json" data-focus="evidence:0"', page.html
    )
    assert "<script>" not in page.html


def _busbw_spread(scenario: str, seed: int) -> tuple[float, float, float]:
    from scenarios import engine

    facts = engine.generate(scenario, seed).key.to_dict()["facts"]
    return (
        facts["busbw_min_rank_gbps"],
        facts["busbw_max_rank_gbps"],
        facts["link_achievable_gbps"],
    )


def test_the_busbw_rule_the_track_teaches_holds_on_the_trainers_traces():
    """The bandwidth-bound signature and the lookalikes page said a bandwidth-bound all-reduce's
    busbw comes out near the link's achievable figure. The trainer's bandwidth-bound traces move
    their bytes far below NVLink's (their ring runs through the hosts, at the PCIe link's
    ceiling), alike on every rank, so a learner following the page called them stragglers. The
    pages teach the spread across ranks, which is what tells the two apart on these traces, and
    the slower link to compare with. (A rank's median can read a few % low where its step's
    first bucket, which waits for the last rank to arrive, is among its largest.)"""
    for seed in (2, 6):
        lo, hi, achievable = _busbw_spread("bandwidth-bound-collective", seed)
        assert hi < 1.1 * lo and hi < 0.2 * achievable  # the same on every rank, far below
    for seed in (3, 6):  # data-parallel stragglers: the late rank's own kernel is near the link
        lo, hi, achievable = _busbw_spread("straggler", seed)
        assert hi > 0.9 * achievable and lo < 0.5 * hi
    signature = content_pages.get_page("signature-bandwidth-bound-collective").html
    lookalikes = content_pages.get_page("lookalikes").html
    assert "If every rank gets the same busbw" in signature
    assert "If every rank is near\nthat number, the collective is bandwidth-bound" not in signature
    assert "the spread across ranks" in lookalikes
    assert "every rank's busbw comes out near the" not in lookalikes
    assert "through the hosts' PCIe" in lookalikes and "PCIe link" in signature


def test_the_interleaved_bubble_example_computes():
    """The pipeline-bubbles page's interleaved example spoke of "three micro-batches per stage"
    beside m = 12 (a count no schedule uses); it gives both bubbles, and both compute."""
    text = content_pages.get_page("signature-pipeline-bubbles").path.read_text(encoding="utf-8")
    assert "micro-batches per stage" not in text
    p, m, v = 4, 12, 2
    assert f"{p - 1}/{m + p - 1} = {round(100 * (p - 1) / (m + p - 1))} %" in text
    assert f"{p - 1}/{v * m + p - 1} = {round(100 * (p - 1) / (v * m + p - 1))} %" in text


def test_a_walkthrough_page_has_one_h1(learner_client):
    """The intro under "About this walkthrough" began with the body's own "# Title", a second
    h1 repeating the page's; the page keeps one, and the intro keeps the rest of its text."""
    for page in content_pages.library().walkthroughs():
        html = learner_client.get(page.url).content.decode()
        assert html.count("<h1") == 1, page.slug
        intro = html[html.index('class="wt-intro"') :]
        assert "<p>" in intro[: intro.index("</details>")], page.slug


def test_the_rows_page_describes_the_rows_the_trainer_draws():
    """The rows page said the trainer draws backward on the main thread, beside traces with an
    autograd thread row of their own, and never named the HIP API row of the MI300X traces."""
    from scenarios import engine

    text = content_pages.get_page("vocabulary-rows").path.read_text(encoding="utf-8")
    drawn = json.dumps(engine.to_timeline(engine.generate("healthy", 3)))
    assert "pt_autograd_0" in drawn
    assert "draws it on the main thread" not in text
    amd = json.dumps(engine.to_timeline(engine.generate("healthy", 3, hardware="mi300x")))
    assert "HIP API" in amd and "hipLaunchKernel" in amd
    assert "**HIP API**" in text and "`hipLaunchKernel`" in text


def test_the_pipeline_signature_says_what_a_long_receive_is():
    """It promised "small SendRecv blocks" beside traces whose receives run until the sender
    delivers, milliseconds on every stage."""
    text = content_pages.get_page("signature-pipeline-bubbles").path.read_text(encoding="utf-8")
    assert "Small `ncclDevKernel_SendRecv` blocks" not in text
    assert "the long ones measure the wait for the neighbouring stage" in " ".join(text.split())
