from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from scenarios import engine


class Command(BaseCommand):
    help = (
        "Generate one trace with no database and no services, and write it as Perfetto JSON, "
        "an HTA folder (one PyTorch-profiler file per rank) or the viewer's timeline JSON."
    )
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("--scenario", required=True, choices=list(engine.SCENARIOS))
        parser.add_argument("--seed", required=True, type=int)
        parser.add_argument("--hardware", choices=list(engine.HARDWARE), default=None)
        parser.add_argument(
            "--format", required=True, choices=["perfetto", "hta", "timeline"], dest="fmt"
        )
        parser.add_argument("--out", required=True, type=Path)
        parser.add_argument("--key", type=Path, default=None, help="also write the answer key")

    def handle(self, *args, scenario, seed, hardware, fmt, out, key, **options):
        if seed < 0:
            raise CommandError("--seed must be a non-negative integer")
        trace = engine.generate(scenario, seed, hardware=hardware)
        try:
            engine.export_to_path(trace, fmt, out)
            if key is not None:
                key.parent.mkdir(parents=True, exist_ok=True)
                key.write_bytes(engine.key_json(trace))
        except OSError as exc:
            raise CommandError(f"could not write output: {exc}") from exc
        self.stdout.write(f"wrote {fmt} ({trace.n_events} events) to {out}")
