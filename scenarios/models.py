from __future__ import annotations

import uuid
import zlib

from django.conf import settings
from django.db import models


class TraceQuerySet(models.QuerySet["Trace"]):
    def unclaimed(self) -> TraceQuerySet:
        return self.filter(claimed_at__isnull=True, source=Trace.Source.POOL)

    def visible_to(self, user) -> TraceQuerySet:
        """Traces a user may read: the ones served to them."""
        return self.filter(claimed_by=user)


class Trace(models.Model):
    """One generated trace. Written once; only the claim columns ever change."""

    class Source(models.TextChoices):
        POOL = "pool", "pool"
        ON_DEMAND = "on_demand", "generated on the request path"
        # A walkthrough's fixed (scenario, seed) trace, stored once per re-narration attempt:
        # the same seed recurs, so these rows are outside the (scenario, seed) uniqueness.
        NARRATED = "narrated", "a walkthrough's trace, for a re-narration"

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
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = TraceQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["scenario", "seed"],
                condition=~models.Q(source="narrated"),
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

    def load(self):
        from scenarios import engine

        return engine.loads(zlib.decompress(bytes(self.payload)))
