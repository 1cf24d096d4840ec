"""The trace pool: generate ahead of time, claim one per drill.

Rules live here as named functions so tests can call them directly:
- ``claim`` takes one unclaimed trace in a short transaction with SKIP LOCKED, so concurrent
  learners never get the same row and never wait on each other.
- ``refill`` tops a scenario up to its target. Seeds come from a per-scenario sequence
  (``pool_seed``), so a redelivered or concurrent refill generates the same seeds and the
  (scenario, seed) unique constraint turns the duplicates into no-ops instead of an overfilled pool.
- An empty pool never fails a learner: ``claim_or_generate`` builds a trace on the spot, logs a
  warning and enqueues a refill.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import secrets
import threading
import zlib
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import orjson
from celery import current_app
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from scenarios import engine
from scenarios.models import PoolLevel, Trace

log = logging.getLogger(__name__)

SEED_BITS = 48
# The refill task, sent by name: ``scenarios.tasks`` imports this module, not the reverse.
REFILL_TASK = "scenarios.tasks.refill_pool"
# seeds per refill that may host no workload (`engine.NoHostingWorkload`) before it gives up
MAX_SKIPPED_SEEDS = 3


def pool_target() -> int:
    return settings.TRACETRACK["POOL_TARGET"]


def low_water() -> int:
    return settings.TRACETRACK["POOL_LOW_WATER"]


def pool_seed(scenario: str, index: int) -> int:
    """The index-th pool seed of a scenario: stable per deployment, unguessable without its key."""
    digest = hashlib.blake2b(
        f"{scenario}:{index}".encode(), key=settings.SECRET_KEY.encode()[:64], digest_size=8
    ).digest()
    return int.from_bytes(digest) >> (64 - SEED_BITS)


EXPORT_GZIP_LEVEL = 6


def gzip_export(data: bytes) -> bytes:
    """How every stored export is compressed (mtime 0: the same trace gives the same bytes)."""
    return gzip.compress(data, compresslevel=EXPORT_GZIP_LEVEL, mtime=0)


def build_trace(
    scenario: str, seed: int, *, hardware: str | None = None, source: str = Trace.Source.POOL
) -> Trace:
    """Generate one trace and wrap it in an unsaved row (all the heavy work happens here).

    A pool row carries its viewer timeline and its Perfetto export already built and gzipped,
    so requests only ever send stored bytes. A trace generated on the request path (empty pool)
    skips the Perfetto export to answer sooner; its first download builds and stores it.
    """
    trace = engine.generate(scenario, seed, hardware=hardware)
    return trace_row(trace, source=source)


def trace_row(trace: engine.Trace, *, source: str) -> Trace:
    """An engine trace wrapped in an unsaved row (the Perfetto export only for pool rows; the
    others build it on their first download)."""
    timeline = orjson.dumps(engine.to_timeline(trace))
    perfetto_gz = gzip_export(engine.perfetto_bytes(trace)) if source == Trace.Source.POOL else None
    return Trace(
        scenario=trace.scenario,
        seed=trace.seed,
        hardware=trace.hardware,
        generator_version=engine.GENERATOR_VERSION,
        source=source,
        prompt=trace.prompt,
        key=trace.key.to_dict(),
        n_events=trace.n_events,
        payload=zlib.compress(engine.dumps(trace), 6),
        timeline_gz=gzip_export(timeline),
        perfetto_gz=perfetto_gz,
    )


def stock() -> dict[str, int]:
    """Unclaimed traces per scenario (every scenario present, zeros included): one query."""
    counts = dict.fromkeys(engine.SCENARIOS, 0)
    rows = Trace.objects.unclaimed().values("scenario").annotate(n=Count("id"))
    for row in rows:
        if row["scenario"] in counts:
            counts[row["scenario"]] = row["n"]
    return counts


def refill(scenario: str, *, target: int | None = None, progress=None) -> int:
    """Top ``scenario`` up to ``target`` unclaimed traces; returns how many rows were inserted."""
    if scenario not in engine.SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}")
    target = pool_target() if target is None else target
    counts = Trace.objects.filter(source=Trace.Source.POOL, scenario=scenario).aggregate(
        total=Count("id"),
        unclaimed=Count(
            "id",
            filter=Q(claimed_at__isnull=True, generator_version=engine.GENERATOR_VERSION),
        ),
    )
    deficit = target - counts["unclaimed"]
    if counts["unclaimed"] < low_water():
        record_level(scenario, counts["unclaimed"])
    inserted = made = skipped = 0
    index = counts["total"]
    while made < deficit:
        try:
            row = build_trace(scenario, pool_seed(scenario, index))
        except engine.NoHostingWorkload:
            # a seed whose draws all miss (about once in 10^13 seeds): skip it, the next one
            # fills the slot; more than a few means something else is wrong, so stop there
            log.warning("pool seed %d of %s hosts no workload: skipped", index, scenario)
            skipped += 1
            if skipped > MAX_SKIPPED_SEEDS:
                raise
            index += 1
            continue
        index += 1
        made += 1
        inserted += _insert_once(row)
        if progress is not None:
            progress(1)
    unclaimed = Trace.objects.unclaimed().filter(scenario=scenario).count()
    record_level(scenario, unclaimed, refilled=True)
    return inserted


def record_level(scenario: str, unclaimed: int, *, refilled: bool = False) -> None:
    """Remember since when ``scenario`` has been under low water (idempotent, one or two rows).

    Under the mark: ``low_since`` is set unless already set (the first shortfall counts). At or
    above it: ``low_since`` is cleared. ``refilled`` stamps the end of a refill.
    """
    now = timezone.now()
    PoolLevel.objects.get_or_create(scenario=scenario)
    rows = PoolLevel.objects.filter(scenario=scenario)
    if unclaimed < low_water() or unclaimed == 0:
        rows.filter(low_since__isnull=True).update(low_since=now)
    else:
        rows.update(low_since=None)
    if refilled:
        rows.update(refilled_at=now)


def degraded_after_s() -> float:
    return settings.TRACETRACK["POOL_DEGRADED_AFTER_S"]


def short_scenarios(now=None) -> list[str]:
    """Scenarios whose stock is empty or under low water and has been for longer than the grace
    period (``POOL_DEGRADED_AFTER_S``). A short scenario with no record of since when (no refill
    has ever looked at it) counts as short for long. Operators only: never published per name.
    """
    now = now or timezone.now()
    stock_now = stock()
    since = dict(PoolLevel.objects.values_list("scenario", "low_since"))
    grace = timedelta(seconds=degraded_after_s())
    out = []
    for slug, n in stock_now.items():
        if n >= low_water() and n > 0:
            continue
        started = since.get(slug)
        if started is None or now - started > grace:
            out.append(slug)
    return out


def _insert_once(row: Trace) -> int:
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        return 0  # another worker (or a redelivery) already wrote this (scenario, seed)
    return 1


def refill_many(scenarios: Iterable[str], *, target: int | None = None, progress=None) -> int:
    return sum(refill(s, target=target, progress=progress) for s in scenarios)


def claim(user, scenario: str) -> Trace | None:
    """Take one unclaimed trace of ``scenario`` for ``user``, or None if the pool has none."""
    with transaction.atomic():
        trace = (
            Trace.objects.unclaimed()
            .filter(scenario=scenario)
            .order_by("created_at")
            .without_blobs()  # the claim never reads the trace's bytes
            .select_for_update(skip_locked=True, of=("self",))
            .first()
        )
        if trace is None:
            return None
        Trace.objects.filter(pk=trace.pk).update(claimed_at=timezone.now(), claimed_by=user)
        trace.claimed_by = user
    return trace


def claim_from_stock(user, scenario: str) -> Trace | None:
    """Claim from the pool and ask for a refill when the stock runs low; None (a refill asked
    for) when ``scenario`` has none left."""
    trace = claim(user, scenario)
    if trace is None:
        record_level(scenario, 0)
        schedule_refill(scenario)
        return None
    remaining = Trace.objects.unclaimed().filter(scenario=scenario).count()
    if remaining < low_water():
        record_level(scenario, remaining)
        schedule_refill(scenario)
    return trace


def claim_or_generate(user, scenario: str) -> Trace:
    """Claim from the pool; on an empty pool generate synchronously so the learner never fails."""
    return claim_from_stock(user, scenario) or generate_claimed(user, scenario)


# ---- drawing on the request path, outside the deal's transaction --------------------------------
# A deal runs in a transaction (the learner's lock, the one-open-attempt check, the claim). When
# the pool has nothing and the trace must be generated on the request (seconds), generating
# inside that transaction would hold its locks for as long: on SQLite, whose transactions take
# the database's one write lock when they begin, every other learner's write would queue behind
# it. So a deal that must draw leaves its transaction (``MustDraw``), the outermost deal function
# (decorated ``draws_outside_transaction``) draws with no transaction open, and runs the deal
# again, which takes the drawn rows (``drawn_or_draw``).


class MustDraw(Exception):
    """Raised inside a deal's transaction: leave it, call ``draw``, deal again."""

    def __init__(self, kind: str, item: str, draw: Callable[[], Any]):
        super().__init__(kind, item)
        self.key, self.draw = (kind, item), draw


@dataclass
class _Drawn:
    rows: dict[tuple[str, str], Any] = field(default_factory=dict)  # (kind, item) -> drawn
    inline: bool = False  # the second pass: draw where the deal is


_drawn: ContextVar[_Drawn | None] = ContextVar("tracetrack_drawn", default=None)


def drawn_or_draw[T](kind: str, item: str, draw: Callable[[], T]) -> T:
    """What ``draw`` returns for ``item`` (a scenario, a pair, a walkthrough) of ``kind``
    ("trace", "pair", "narrated"): drawn before the current deal's transaction when the deal is
    run by ``draws_outside_transaction``, else drawn here."""
    state = _drawn.get()
    if state is not None:
        if (kind, item) in state.rows:
            return state.rows.pop((kind, item))
        if not state.inline and connection.in_atomic_block:
            raise MustDraw(kind, item, draw)
    return draw()


def drawn_item(kind: str) -> str | None:
    """The item of ``kind`` drawn for the running deal before its transaction, if any: the
    deal's second pass deals what its first pass chose, whatever the scheduler would pick now,
    so a draw is never wasted on a changed mind."""
    state = _drawn.get()
    if state is None:
        return None
    return next((item for k, item in state.rows if k == kind), None)


def draws_outside_transaction[**P, T](fn: Callable[P, T]) -> Callable[P, T]:
    """Run a deal so that what it must generate on the request is generated with no transaction
    of its open (see ``MustDraw``): a deal that must draw runs twice, the second time dealing
    what it drew (``drawn_item``) and drawing in place anything else it needs. Nested deals
    defer to the outermost one."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        if _drawn.get() is not None:
            return fn(*args, **kwargs)
        state = _Drawn()
        token = _drawn.set(state)
        try:
            try:
                return fn(*args, **kwargs)
            except MustDraw as need:
                state.rows[need.key] = need.draw()
            state.inline = True
            return fn(*args, **kwargs)
        finally:
            _drawn.reset(token)

    return run


def on_demand_row(scenario: str) -> Trace:
    """An unsaved trace row of ``scenario`` generated on the request path (the pool had none);
    a seed that hosts no workload is drawn again, so the learner still gets a trace."""
    log.warning("trace pool empty for %s: generating on the request path", scenario)
    for _ in range(MAX_SKIPPED_SEEDS):
        try:
            return build_trace(scenario, secrets.randbits(SEED_BITS), source=Trace.Source.ON_DEMAND)
        except engine.NoHostingWorkload:
            log.warning("an on-demand seed of %s hosts no workload: drawing another", scenario)
    return build_trace(scenario, secrets.randbits(SEED_BITS), source=Trace.Source.ON_DEMAND)


def generate_claimed(user, scenario: str) -> Trace:
    """A trace of ``scenario`` generated on the request path and claimed by ``user`` (the pool
    had none; its refill has been asked for). Drawn before the deal's transaction when the deal
    runs ``draws_outside_transaction``."""
    trace = drawn_or_draw("trace", scenario, lambda: on_demand_row(scenario))
    trace.claimed_at = timezone.now()
    trace.claimed_by = user
    trace.save(force_insert=True)
    return trace


def schedule_refill(scenario: str) -> None:
    """Enqueue a refill once the current transaction commits (in-process in embedded mode)."""

    def _send() -> None:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            # Embedded mode has no worker: refill in-process, but off the request path.
            threading.Thread(target=_refill_quietly, args=(scenario,), daemon=True).start()
            return
        try:
            current_app.send_task(REFILL_TASK, args=[scenario])
        except Exception:  # the broker being down must not fail the learner's request
            log.exception("could not enqueue a refill for %s", scenario)

    transaction.on_commit(_send)


def _refill_quietly(scenario: str) -> None:
    try:
        refill(scenario)
    except Exception:
        log.exception("in-process refill of %s failed", scenario)
    finally:
        connection.close()
