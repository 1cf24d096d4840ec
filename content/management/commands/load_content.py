"""Upsert WalkthroughSet rows from content/walkthrough_sets.yaml.

Every walkthrough a set names must exist as a walkthrough page; otherwise the command fails with
a message naming the set and the missing slug, and changes nothing.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from content.models import WalkthroughSet
from content.pages import PageError, build_library

SETS_FILE = Path(__file__).resolve().parents[2] / "walkthrough_sets.yaml"


def load_sets(path: Path) -> list[dict]:
    """Parse and validate the sets file against the walkthrough pages; raise CommandError."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CommandError(f"{path}: cannot read walkthrough sets: {exc}") from exc
    if not isinstance(raw, list):
        raise CommandError(f"{path}: expected a list of {{slug, title, walkthroughs}}")
    try:
        library = build_library()
    except PageError as exc:
        raise CommandError(f"content pages are invalid: {exc}") from exc
    walkthroughs = {p.slug for p in library.walkthroughs()}
    seen: set[str] = set()
    sets = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise CommandError(f"{path}: entry {i} is not a mapping")
        slug, title, members = item.get("slug"), item.get("title"), item.get("walkthroughs")
        if not isinstance(slug, str) or not slug or not isinstance(title, str) or not title:
            raise CommandError(f"{path}: entry {i} needs a 'slug' and a 'title'")
        if slug in seen:
            raise CommandError(f"{path}: set slug {slug!r} appears twice")
        seen.add(slug)
        if not isinstance(members, list) or not members:
            raise CommandError(f"{path}: set {slug!r} needs a non-empty 'walkthroughs' list")
        for member in members:
            if member not in walkthroughs:
                raise CommandError(
                    f"{path}: set {slug!r} references walkthrough {member!r}, which does not "
                    f"exist (known: {', '.join(sorted(walkthroughs))})"
                )
        sets.append({"slug": slug, "title": title, "walkthroughs": list(members), "order": i})
    return sets


class Command(BaseCommand):
    help = "Load walkthrough sets from content/walkthrough_sets.yaml (validated) into the database."

    def add_arguments(self, parser):
        parser.add_argument("--file", type=Path, default=SETS_FILE, help="sets YAML file")

    def handle(self, *args, **options):
        sets = load_sets(options["file"])
        created = 0
        with transaction.atomic():
            for s in sets:
                _, was_created = WalkthroughSet.objects.update_or_create(
                    slug=s["slug"],
                    defaults={k: s[k] for k in ("title", "walkthroughs", "order")},
                )
                created += was_created
        self.stdout.write(
            self.style.SUCCESS(f"walkthrough sets: {len(sets)} loaded ({created} new)")
        )
