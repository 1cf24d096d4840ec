from __future__ import annotations

import uuid
import zlib

from django.conf import settings
from django.db import models

from scenarios import engine


class TraceQuerySet(models.QuerySet["Trace"]):
    def unclaimed(self) -> TraceQuerySet:
        """Pool traces nobody has taken that today's engine made. An older engine's stock is
        never dealt (its events and key are not what the content and audits describe); its rows
        stay, so the pool's seed numbering, which counts rows, never reuses a seed."""
        return self.filter(
            claimed_at__isnull=True,
            source=Trace.Source.POOL,
            generator_version=engine.GENERATOR_VERSION,
        )

    def visible_to(self, user) -> TraceQuerySet:
        """Traces a user may read: the ones served to them."""
        return self.filter(claimed_by=user)

    def without_blobs(self) -> TraceQuerySet:
        """Everything but the stored trace bytes (what a page needs: prompt, ids, claim)."""
        return self.defer(*Trace.BLOB_FIELDS)


class Trace(models.Model):
    """One generated trace. Written once; only the claim columns ever change."""

    class Source(models.TextChoices):
        POOL = "pool", "pool"
        ON_DEMAND = "on_demand", "generated on the request path"
        # A walkthrough's fixed (scenario, seed) trace, stored once per re-narration attempt:
        # the same seed recurs, so these rows are outside the (scenario, seed) uniqueness.
        NARRATED = "narrated", "a walkthrough's trace, for a re-narration"
        # A drill's trace regenerated with the fix applied (same scenario and seed), for the
        # reveal's "after the fix"; and the two traces of a contrast trial (one workload draw).
        FIXED = "fixed", "a trace with the fix applied"
        CONTRAST = "contrast", "one of a contrast trial's two traces"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    scenario = models.CharField(max_length=40)
    seed = models.BigIntegerField()
    hardware = models.CharField(max_length=20)
    generator_version = models.CharField(max_length=20)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.POOL)
    prompt = models.JSONField(help_text="Framing shown before the diagnosis (no answer in it).")
    key = models.JSONField(help_text="The answer key: only ever rendered after the diagnosis.")
    n_events = models.PositiveIntegerField()
    payload = models.BinaryField(help_text="zlib(engine.dumps(trace))")
    timeline_gz = models.BinaryField(help_text="gzip of the viewer's timeline JSON")
    perfetto_gz = models.BinaryField(
        null=True,
        editable=False,
        help_text="gzip of the Perfetto (Chrome-trace) JSON export, built with the trace; "
        "null on rows from before it was stored (built and stored on first download)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    # The stored trace bytes: never loaded where only the row's small fields are needed.
    BLOB_FIELDS = ("payload", "timeline_gz", "perfetto_gz")

    objects = TraceQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scenario", "seed"],
                condition=~models.Q(source__in=["narrated", "fixed", "contrast"]),
                name="trace_unique_scenario_seed",
            )
        ]
        indexes = [
            models.Index(
                fields=["scenario", "created_at"],
                condition=models.Q(claimed_at__isnull=True),
                name="trace_unclaimed_idx",
            )
        ]

    def __str__(self) -> str:
        return f"trace {self.id}"

    @classmethod
    def blob_paths(cls, relation: str) -> list[str]:
        """``BLOB_FIELDS`` as seen through a relation, for ``.defer()`` on a related query."""
        return [f"{relation}__{name}" for name in cls.BLOB_FIELDS]

    def load(self):
        return engine.loads(zlib.decompress(bytes(self.payload)))


class PoolLevel(models.Model):
    """Per scenario, since when its unclaimed stock has been under the low-water mark.

    The refill writes it (and clears it once the scenario is topped up); a claim that leaves the
    scenario short sets it if unset. ``/healthz`` reads it to say "degraded" when a scenario has
    been short for longer than the grace period, without ever publishing per-scenario counts.
    """

    scenario = models.CharField(max_length=40, unique=True)
    low_since = models.DateTimeField(null=True, blank=True)
    refilled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "pool stock"
        verbose_name_plural = "pool stock"

    def __str__(self) -> str:
        return self.scenario


from scenarios.uploads import Upload  # noqa: E402,F401  (uploaded traces live in their own module)
