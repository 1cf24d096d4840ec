from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from scenarios import engine, pool


class Command(BaseCommand):
    help = "Fill the trace pool up to a target number of unclaimed traces per scenario."

    def add_arguments(self, parser):
        parser.add_argument("--target", type=int, default=None, help="traces per scenario")
        parser.add_argument("--scenario", action="append", choices=list(engine.SCENARIOS))

    def handle(self, *args, target, scenario, **options):
        if target is not None and target < 0:
            raise CommandError("--target must be >= 0")
        scenarios = scenario or list(engine.SCENARIOS)
        target = pool.pool_target() if target is None else target
        before = pool.stock()
        todo = sum(max(0, target - before[s]) for s in scenarios)
        bar = ProgressBar(todo, self.stdout)
        inserted = pool.refill_many(scenarios, target=target, progress=bar.advance)
        bar.finish()
        self.stdout.write(f"Inserted {inserted} traces; stock now: {pool.stock()}")


class ProgressBar:
    """A dependency-free terminal progress bar (one line, redrawn in place)."""

    def __init__(self, total: int, out, width: int = 40):
        self.total, self.done, self.out, self.width = total, 0, out, width
        self.tty = getattr(sys.stdout, "isatty", lambda: False)()
        self._draw()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def _draw(self) -> None:
        frac = 1.0 if self.total == 0 else min(1.0, self.done / self.total)
        filled = int(frac * self.width)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total} traces"
        if self.tty:
            self.out.write("\r" + line, ending="")
            self.out.flush()
        elif self.done in (0, self.total) or self.done % max(1, self.total // 10) == 0:
            self.out.write(line)

    def finish(self) -> None:
        if self.tty:
            self.out.write("")
