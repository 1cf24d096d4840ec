"""The track's Markdown pages: load, validate and render ``content/pages/**/*.md`` once.

Each file is YAML front matter between ``---`` lines followed by CommonMark (+ tables). The
library is built once per process and cached at module level; with DEBUG on it is rebuilt when any
page file's mtime changes, so writers see edits without a restart.

Two pieces of syntax on top of Markdown (docs/contracts.md §4):
- a line that is exactly ``[[timeline scenario=SLUG seed=N focus=FOCUS]]`` becomes a small
  viewer mount (``div.timeline-host`` with ``data-src`` and ``data-focus``), filled in by
  static/js/track.js;
- in walkthroughs, ``{{key:step_ms}}``, ``{{key:expected_step_ms}}`` and
  ``{{key:measurement_value}}`` are replaced at request time by the walkthrough trace's
  answer-key values (``render_walkthrough_steps``), and ``{{fact:NAME}}`` or
  ``{{fact:NAME|FORMAT}}`` by one of its measured facts (``key["facts"]``; FORMAT is one of
  ``FORMATS``): every number a narration quotes about its trace is written this way, never typed.

A walkthrough's front matter names the colleague's ``theory`` its narration answers: the scenario
the theory points at (or ``none``) and the sentence of the narration that answers it (``says``).
The trace's prompt shows one theory, drawn from its seed; ``check_theory`` holds the narration to
that one, so a walkthrough never argues with a theory its page does not show.

A walkthrough's front matter may also list ``claims``: a sentence the narration makes about its
trace (``says``, quoted verbatim from the narration) and the check on the trace's facts that makes
it true (``check``, e.g. ``overlap_pct < 5``; see ``CLAIM_FUNCTIONS``). ``check_claims`` evaluates
them against a key; the content tests run it on every walkthrough's trace.
"""

from __future__ import annotations

import ast
import functools
import html
import logging
import math
import re
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings
from django.urls import reverse
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin

from scenarios import engine
from scenarios.engine.catalog import THEORY_TEXT

PAGES_DIR = Path(__file__).resolve().parent / "pages"

SECTIONS: list[tuple[str, str]] = [
    ("overview", "Overview"),
    ("vocabulary", "Vocabulary"),
    ("walkthroughs", "Walkthroughs"),
    ("labs", "Labs"),
    ("tools", "Tools"),
    ("datasets", "Datasets"),
]
SECTION_TITLES = dict(SECTIONS)

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
FOCUS_RE = re.compile(r"^(full|step:\d+|evidence:\d+|rank:\d+)$")
TIMELINE_RE = re.compile(r"^\[\[timeline((?:\s+[a-z_]+=\S+)*)\s*\]\]\s*$", re.MULTILINE)
KEY_PLACEHOLDER_RE = re.compile(r"\{\{(key|fact):([a-z_]+)(?:\|([a-z0-9]+))?\}\}")
KEY_FIELDS = ("step_ms", "expected_step_ms", "measurement_value")
# How a fact is written: d0/d1/d2 decimals, pct a fraction as a percentage, len a list's length,
# s milliseconds as seconds, us milliseconds as whole microseconds; no format: 0 decimals
# from 100, 1 from 10, else 2.
FORMATS = ("d0", "d1", "d2", "pct", "len", "s", "us")
MISSING = "[missing]"
_INLINE_SRC_RE = re.compile(r'data-src="/track/timelines/([a-z0-9-]+)/(\d+)\.json"')
MAX_INLINE_SEED = 9_999  # inline timelines use small, fixed seeds; the endpoint refuses others

# Downloadable lab files: the URL name -> (path under content/, content type). Only these.
DOWNLOADS: dict[str, tuple[str, str]] = {
    "lab_a_profile.py": ("labs/lab_a_profile.py", "text/x-python; charset=utf-8"),
    "companion.ipynb": ("notebooks/companion.ipynb", "application/x-ipynb+json"),
}
# Which downloads each lab page offers (shown above the page body).
PAGE_DOWNLOADS: dict[str, list[str]] = {
    "lab-a-torch-profiler": ["lab_a_profile.py", "companion.ipynb"],
    "lab-companion-notebook": ["companion.ipynb"],
}


class PageError(ValueError):
    """A content file is malformed; the message names the file and the problem."""


@dataclass
class Step:
    title: str
    focus: str
    body_md: str
    body_html: str


@dataclass(frozen=True)
class Claim:
    """A sentence of a narration about its trace, and the check on the trace that makes it true."""

    says: str
    check: str


@dataclass(frozen=True)
class Theory:
    """The colleague's theory a narration answers: the scenario it points at (None: the prompt
    carries no theory) and the narration's sentence that answers it."""

    scenario: str | None
    says: str = ""


@dataclass
class Page:
    slug: str
    title: str
    section: str
    order: int
    summary: str
    path: Path
    html: str
    headings: list[tuple[int, str, str]] = field(default_factory=list)  # (level, id, text)
    scenario: str | None = None
    seed: int | None = None
    hardware: str | None = None
    family: str | None = None  # the workload the narration describes (ddp, pp, decode, ...)
    steps: list[Step] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    theory: Theory | None = None

    @property
    def is_walkthrough(self) -> bool:
        return self.section == "walkthroughs"

    @property
    def trace_args(self) -> tuple[str, int, str | None]:
        """(scenario, seed, hardware) of a walkthrough's trace, as ``content.timelines`` takes
        them; the loader refuses a walkthrough without scenario and seed."""
        if self.scenario is None or self.seed is None:
            raise ValueError(f"page {self.slug!r} has no trace: it is not a walkthrough")
        return self.scenario, self.seed, self.hardware

    @property
    def url(self) -> str:
        if self.is_walkthrough:
            return reverse("content:walkthrough", args=[self.slug])
        return reverse("content:page", args=[self.slug])

    @property
    def section_title(self) -> str:
        return SECTION_TITLES[self.section]

    @property
    def downloads(self) -> list[str]:
        return PAGE_DOWNLOADS.get(self.slug, [])


@dataclass
class Library:
    pages: dict[str, Page]
    ordered: list[Page]  # section order, then `order`, then title

    def section_pages(self) -> list[tuple[str, str, list[Page]]]:
        return [
            (key, title, [p for p in self.ordered if p.section == key]) for key, title in SECTIONS
        ]

    @functools.cached_property
    def inline_timelines(self) -> frozenset[tuple[str, int]]:
        """The (scenario, seed) pairs that ``[[timeline …]]`` lines on the pages reference."""
        found = set()
        for p in self.ordered:
            for text in [p.html, *(s.body_html for s in p.steps)]:
                for m in _INLINE_SRC_RE.finditer(text):
                    found.add((m.group(1), int(m.group(2))))
        return frozenset(found)

    def neighbours(self, page: Page) -> tuple[Page | None, Page | None]:
        i = self.ordered.index(page)
        prev = self.ordered[i - 1] if i > 0 else None
        nxt = self.ordered[i + 1] if i + 1 < len(self.ordered) else None
        return prev, nxt

    def walkthroughs(self) -> list[Page]:
        return [p for p in self.ordered if p.is_walkthrough]

    def first_steps(self) -> list[Page]:
        """What a newcomer reads before the first drill: the vocabulary's first page, then the
        first guided walkthrough."""
        vocabulary = [p for p in self.ordered if p.section == "vocabulary"]
        return vocabulary[:1] + self.walkthroughs()[:1]


# ---- Markdown -----------------------------------------------------------------------------


def _slugify_heading(text: str) -> str:
    s = re.sub(r"[^\w\s-]", "", text.lower()).strip()
    return re.sub(r"[\s_-]+", "-", s) or "section"


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "typographer": False}).enable("table")
    md.use(
        anchors_plugin,
        min_level=2,
        max_level=3,
        slug_func=_slugify_heading,
        permalink=True,
        permalinkSymbol="#",
        permalinkBefore=False,
    )
    return md


_MD = _markdown()


def _timeline_mount(args: dict[str, str], source: Path) -> str:
    scenario = args.get("scenario", "")
    seed_s = args.get("seed", "")
    focus = args.get("focus", "full")
    unknown = set(args) - {"scenario", "seed", "focus"}
    if unknown:
        raise PageError(f"{source}: [[timeline]] has unknown argument(s) {sorted(unknown)}")
    if not SLUG_RE.match(scenario) or scenario not in _scenario_slugs():
        raise PageError(f"{source}: [[timeline]] names unknown scenario {scenario!r}")
    if not seed_s.isdigit() or int(seed_s) > MAX_INLINE_SEED:
        raise PageError(f"{source}: [[timeline]] seed must be 0..{MAX_INLINE_SEED}, got {seed_s!r}")
    if not FOCUS_RE.match(focus):
        raise PageError(
            f"{source}: [[timeline]] focus {focus!r} is not full|step:N|evidence:K|rank:R"
        )
    src = reverse("content:inline_timeline", args=[scenario, int(seed_s)])
    return (
        '<figure class="inline-timeline">'
        f'<div class="timeline-host" data-src="{html.escape(src)}" '
        f'data-focus="{html.escape(focus)}" data-height="300" tabindex="-1">'
        "<noscript>The timeline needs JavaScript.</noscript></div>"
        '<figcaption class="muted">Generated trace · <kbd>W</kbd>/<kbd>S</kbd> zoom · '
        "<kbd>A</kbd>/<kbd>D</kbd> pan · click a slice for details</figcaption>"
        "</figure>"
    )


def render_markdown(text: str, source: Path) -> str:
    """Markdown → HTML, with ``[[timeline …]]`` lines turned into viewer mounts."""
    mounts: list[str] = []

    def stash(m: re.Match[str]) -> str:
        args: dict[str, str] = {}
        for part in m.group(1).split():
            k, _, v = part.partition("=")
            args[k] = v
        mounts.append(_timeline_mount(args, source))
        return f"\n\nTTINLINETIMELINE{len(mounts) - 1}TT\n\n"

    out = _MD.render(TIMELINE_RE.sub(stash, text))
    # The "#" permalink shows on hover only: out of the tab order and of the heading's spoken
    # name (keyboard and screen-reader users have the same links in "On this page").
    out = out.replace(
        'class="header-anchor"', 'class="header-anchor" aria-hidden="true" tabindex="-1"'
    )
    for i, mount in enumerate(mounts):
        out = out.replace(f"<p>TTINLINETIMELINE{i}TT</p>", mount)
    return out


_HEADING_RE = re.compile(r'<h([23]) id="([^"]+)"[^>]*>(.*?)</h\1>', re.S)


def _headings(rendered: str) -> list[tuple[int, str, str]]:
    out = []
    for level, hid, inner in _HEADING_RE.findall(rendered):
        text = re.sub(r"<a [^>]*class=\"header-anchor\"[^>]*>.*?</a>", "", inner)
        text = html.unescape(re.sub(r"<[^>]+>", "", text)).strip()
        out.append((int(level), hid, text))
    return out


# ---- Loading ------------------------------------------------------------------------------


def _scenario_slugs() -> set[str]:
    return set(engine.SCENARIOS)


def _split_front_matter(text: str, source: Path) -> tuple[dict[str, Any], str]:
    if not text.startswith("---\n"):
        raise PageError(f"{source}: missing YAML front matter (the file must start with '---')")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise PageError(f"{source}: front matter is not closed by a '---' line")
    try:
        meta = yaml.safe_load(text[4:end]) or {}
    except yaml.YAMLError as exc:
        raise PageError(f"{source}: front matter is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise PageError(f"{source}: front matter must be a mapping")
    return meta, text[end + 5 :]


def _require(meta: dict[str, Any], name: str, kind: type, source: Path) -> Any:
    value = meta.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise PageError(f"{source}: front matter field {name!r} must be a {kind.__name__}")
    return value


def parse_page(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    meta, body = _split_front_matter(text, path)
    slug = _require(meta, "slug", str, path)
    if not SLUG_RE.match(slug):
        raise PageError(f"{path}: slug {slug!r} is not URL-safe (lowercase, digits, hyphens)")
    section = _require(meta, "section", str, path)
    if section not in SECTION_TITLES:
        raise PageError(f"{path}: section {section!r} is not one of {list(SECTION_TITLES)}")
    rendered = render_markdown(body, path)
    page = Page(
        slug=slug,
        title=_require(meta, "title", str, path),
        section=section,
        order=_require(meta, "order", int, path),
        summary=str(meta.get("summary") or ""),
        path=path,
        html=rendered,
        headings=_headings(rendered),
    )
    if section == "walkthroughs":
        page.scenario = _require(meta, "scenario", str, path)
        if page.scenario not in _scenario_slugs():
            raise PageError(f"{path}: scenario {page.scenario!r} is not an engine scenario")
        page.seed = _require(meta, "seed", int, path)
        hw = meta.get("hardware")
        page.hardware = str(hw) if hw else None
        family = meta.get("family")
        if family is not None and family not in engine.FAMILIES:
            raise PageError(f"{path}: family {family!r} is not one of {list(engine.FAMILIES)}")
        page.family = str(family) if family else None
        steps = meta.get("steps")
        if not isinstance(steps, list) or not steps:
            raise PageError(f"{path}: a walkthrough needs a non-empty 'steps' list")
        for i, raw in enumerate(steps):
            if not isinstance(raw, dict):
                raise PageError(f"{path}: step {i} must be a mapping")
            focus = str(raw.get("focus") or "full")
            if not FOCUS_RE.match(focus):
                raise PageError(f"{path}: step {i} focus {focus!r} is invalid")
            body_md = str(raw.get("body") or "")
            page.steps.append(
                Step(
                    title=str(raw.get("title") or f"Step {i + 1}"),
                    focus=focus,
                    body_md=body_md,
                    body_html=render_markdown(body_md, path),
                )
            )
        all_md = body + "".join(s.body_md for s in page.steps)
        for source, name, fmt in KEY_PLACEHOLDER_RE.findall(all_md):
            if source == "key" and (name not in KEY_FIELDS or fmt):
                raise PageError(f"{path}: unknown placeholder key:{name}; use {KEY_FIELDS}")
            if fmt and fmt not in FORMATS:
                raise PageError(f"{path}: unknown format {fmt!r} in fact:{name}; use {FORMATS}")
        if "{{" in KEY_PLACEHOLDER_RE.sub("", all_md):
            raise PageError(f"{path}: a '{{{{' that is not a key:/fact: placeholder")
        page.claims = _parse_claims(meta.get("claims"), all_md, path)
        page.theory = _parse_theory(meta.get("theory"), all_md, path)
    return page


def build_library(root: Path = PAGES_DIR) -> Library:
    pages: dict[str, Page] = {}
    for path in sorted(root.rglob("*.md")):
        page = parse_page(path)
        if page.slug in pages:
            raise PageError(f"{path}: slug {page.slug!r} already used by {pages[page.slug].path}")
        pages[page.slug] = page
    section_rank = {key: i for i, (key, _) in enumerate(SECTIONS)}
    ordered = sorted(pages.values(), key=lambda p: (section_rank[p.section], p.order, p.title))
    return Library(pages=pages, ordered=ordered)


_lock = threading.Lock()
_cache: tuple[tuple[tuple[str, int], ...], Library] | None = None


def _fingerprint(root: Path) -> tuple[tuple[str, int], ...]:
    return tuple((str(p), p.stat().st_mtime_ns) for p in sorted(root.rglob("*.md")))


def library() -> Library:
    """The loaded track; built once, rebuilt on file changes when DEBUG is on."""
    global _cache
    cached = _cache
    if cached is not None and not settings.DEBUG:
        return cached[1]
    stamp = _fingerprint(PAGES_DIR)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    with _lock:
        if _cache is None or _cache[0] != stamp:
            _cache = (stamp, build_library(PAGES_DIR))
        return _cache[1]


def get_page(slug: str) -> Page | None:
    return library().pages.get(slug)


# ---- Walkthrough answer-key substitution ---------------------------------------------------


log = logging.getLogger(__name__)


def key_value(key: dict[str, Any], name: str) -> str:
    value = key.get(name)
    if isinstance(value, float):
        return f"{value:.1f}"
    return "" if value is None else str(value)


def format_fact(value: Any, fmt: str | None) -> str | None:
    """A measured fact as the narration prints it, or None when it cannot be (missing, wrong
    type, not finite)."""
    if fmt == "len":
        return str(len(value)) if isinstance(value, list) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    v = float(value)
    if fmt == "pct":
        return f"{max(0.0, round(v * 100)) + 0.0:.0f}"
    if fmt == "s":
        return f"{v / 1000:.1f}"
    if fmt == "us":
        return f"{round(v * 1000) + 0.0:.0f}"
    if fmt in ("d0", "d1", "d2"):
        return f"{round(v, int(fmt[1])) + 0.0:.{fmt[1]}f}"
    if isinstance(value, int):
        return str(value)
    digits = 0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2
    return f"{round(v, digits) + 0.0:.{digits}f}"


def placeholder_value(key: dict[str, Any], source: str, name: str, fmt: str | None) -> str | None:
    """What ``{{source:name|fmt}}`` prints for this key (None: the key has no such value)."""
    if source == "key":
        return key_value(key, name) if name in key else None
    return format_fact((key.get("facts") or {}).get(name), fmt or None)


def substitute_key(rendered: str, key: dict[str, Any]) -> str:
    """Replace ``{{key:NAME}}`` and ``{{fact:NAME|FMT}}`` in rendered HTML with this trace's
    (escaped) values. A value the key lacks prints ``MISSING`` (the content tests fail on it)."""

    def one(m: re.Match[str]) -> str:
        value = placeholder_value(key, m.group(1), m.group(2), m.group(3))
        if value is None:
            log.warning("walkthrough placeholder %s has no value in its key", m.group(0))
            return MISSING
        return html.escape(value)

    return KEY_PLACEHOLDER_RE.sub(one, rendered)


# ---- Claims: what a narration says about its trace, checked against the trace ---------------

CLAIM_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "max": max,
    "min": min,
    "abs": abs,
    "mean": lambda xs: statistics.fmean(xs),
    "median": lambda xs: statistics.median(xs),
}
_CLAIM_OPS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
}


def _claim_names(node: ast.AST, source: Path | str) -> set[str]:
    """The fact names a check reads; PageError on anything but arithmetic, comparisons, and/or,
    names, numbers and ``CLAIM_FUNCTIONS`` calls."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            if not (isinstance(sub.func, ast.Name) and sub.func.id in CLAIM_FUNCTIONS):
                raise PageError(f"{source}: claim calls something not in {list(CLAIM_FUNCTIONS)}")
        elif isinstance(sub, ast.Name):
            if sub.id not in CLAIM_FUNCTIONS:
                names.add(sub.id)
        elif isinstance(sub, ast.Constant):
            if isinstance(sub.value, bool) or not isinstance(sub.value, int | float):
                raise PageError(f"{source}: claim constants must be numbers")
        elif (
            not isinstance(
                sub,
                ast.Expression | ast.Compare | ast.BoolOp | ast.And | ast.Or | ast.BinOp | ast.Load,
            )
            and type(sub) not in _CLAIM_OPS
            and not isinstance(sub, ast.UnaryOp | ast.USub)
        ):
            raise PageError(f"{source}: claim uses {type(sub).__name__}, which is not allowed")
    return names


def _parse_check(check: str, source: Path | str) -> ast.Expression:
    try:
        tree = ast.parse(check, mode="eval")
    except SyntaxError as exc:
        raise PageError(f"{source}: claim check {check!r} does not parse: {exc.msg}") from exc
    _claim_names(tree, source)
    return tree


def _squash(text: str) -> str:
    return " ".join(text.replace("*", "").split())


def _parse_claims(raw: Any, narration_md: str, source: Path) -> list[Claim]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise PageError(f"{source}: 'claims' must be a list")
    narration = _squash(narration_md)
    claims = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not item.get("says") or not item.get("check"):
            raise PageError(f"{source}: claim {i} needs 'says' and 'check'")
        says, check = str(item["says"]), str(item["check"])
        if _squash(says) not in narration:
            raise PageError(f"{source}: claim {i} quotes {says!r}, which the narration never says")
        _parse_check(check, source)
        claims.append(Claim(says=says, check=check))
    return claims


def _parse_theory(raw: Any, narration_md: str, source: Path) -> Theory:
    if not isinstance(raw, dict) or "scenario" not in raw:
        raise PageError(
            f"{source}: a walkthrough needs 'theory': the scenario of the colleague's theory its "
            "prompt shows (or none) and the sentence that answers it ('says')"
        )
    scenario = raw["scenario"]
    if scenario in (None, "none"):
        return Theory(scenario=None, says=str(raw.get("says") or ""))
    if scenario not in THEORY_TEXT:
        raise PageError(f"{source}: theory scenario {scenario!r} is not an engine scenario")
    says = str(raw.get("says") or "")
    if not says:
        raise PageError(f"{source}: theory {scenario!r} needs 'says', the sentence answering it")
    if _squash(says) not in _squash(narration_md):
        raise PageError(f"{source}: theory quotes {says!r}, which the narration never says")
    return Theory(scenario=str(scenario), says=says)


def check_theory(page: Page, prompt: dict[str, Any]) -> list[str]:
    """Empty when the narration answers the colleague's theory the trace's prompt shows (or
    neither has one); else what is wrong, in words."""
    shown = prompt.get("theory")
    answered = page.theory.scenario if page.theory else None
    expected = THEORY_TEXT[answered] if answered else None
    if shown == expected:
        return []
    if answered is None:
        return [f"the prompt shows {shown!r}; the narration answers no theory"]
    return [f"the narration answers {expected!r}; the prompt shows {shown!r}"]


def _evaluate(node: ast.AST, env: dict[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise KeyError(node.id)
        return env[node.id]
    if isinstance(node, ast.UnaryOp):
        return -_evaluate(node.operand, env)
    if isinstance(node, ast.BinOp):
        return _CLAIM_OPS[type(node.op)](_evaluate(node.left, env), _evaluate(node.right, env))
    if isinstance(node, ast.BoolOp):
        values = [bool(_evaluate(v, env)) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, env)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(comp, env)
            if not _CLAIM_OPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return CLAIM_FUNCTIONS[node.func.id](*(_evaluate(a, env) for a in node.args))
    raise PageError(f"claim node {type(node).__name__} is not allowed")


def check_claims(page: Page, key: dict[str, Any]) -> list[str]:
    """The claims of ``page`` that its trace's key does not bear out (empty when all hold)."""
    env: dict[str, Any] = {
        **{k: v for k, v in key.items() if isinstance(v, int | float) and not isinstance(v, bool)},
        **(key.get("facts") or {}),
    }
    failed = []
    traced = (key.get("facts") or {}).get("family")
    if page.family and traced != page.family:
        # a narration written for one workload ("data-parallel training on A100s") over a trace
        # of another: the seed now draws a different family for this scenario
        failed.append(f"the narration is about a {page.family} job; the trace is {traced}")
    for claim in page.claims:
        try:
            ok = bool(_evaluate(_parse_check(claim.check, page.path), env))
        except (
            KeyError,
            TypeError,
            ValueError,
            ZeroDivisionError,
            statistics.StatisticsError,
        ) as e:
            failed.append(f"{claim.says!r}: {claim.check} cannot be evaluated ({e!r})")
            continue
        if not ok:
            values = {n: env.get(n) for n in _claim_names(ast.parse(claim.check, mode="eval"), "")}
            failed.append(f"{claim.says!r}: {claim.check} is false on this trace ({values})")
    return failed


_LEADING_H1_RE = re.compile(r"^\s*<h1[^>]*>.*?</h1>\s*", re.S)


def walkthrough_intro_html(page: Page, key: dict[str, Any]) -> str:
    """The walkthrough's body as the page's "About this walkthrough" shows it: its values filled
    in, less the body's leading ``# Title`` heading (the page already has the title as its one
    ``h1``; a second, inside the intro, repeated it and broke the heading outline)."""
    return substitute_key(_LEADING_H1_RE.sub("", page.html, count=1), key)


def render_walkthrough_steps(page: Page, key: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"title": s.title, "focus": s.focus, "html": substitute_key(s.body_html, key)}
        for s in page.steps
    ]
