from typing import TYPE_CHECKING, TypedDict

from django.contrib import admin
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from scenarios import engine
from scenarios.models import PoolLevel, Trace

if TYPE_CHECKING:  # django-stubs' helper; a dev dependency, not needed to run
    from django_stubs_ext import WithAnnotations


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ["id", "scenario", "hardware", "n_events", "created_at", "claimed_at"]
    list_filter = ["scenario", "hardware", "source"]
    readonly_fields = [f.name for f in Trace._meta.fields]
    exclude = ["payload", "timeline_gz"]


class _Stock(TypedDict):
    unclaimed: int


@admin.register(PoolLevel)
class PoolLevelAdmin(admin.ModelAdmin):
    """Per-scenario stock, for staff only (``/healthz`` publishes none of it)."""

    list_display = ["scenario", "unclaimed", "low_since", "refilled_at"]
    readonly_fields = ["scenario", "low_since", "refilled_at"]
    ordering = ["scenario"]

    def get_queryset(self, request):
        for slug in engine.SCENARIOS:  # every scenario gets a row, even before its first refill
            PoolLevel.objects.get_or_create(scenario=slug)
        unclaimed = (
            Trace.objects.unclaimed()
            .filter(scenario=OuterRef("scenario"))
            .values("scenario")
            .annotate(n=Count("id", filter=Q(claimed_at__isnull=True)))
            .values("n")
        )
        return (
            super()
            .get_queryset(request)
            .annotate(unclaimed=Coalesce(Subquery(unclaimed, output_field=IntegerField()), 0))
        )

    @admin.display(ordering="unclaimed", description="unclaimed traces")
    def unclaimed(self, obj: "WithAnnotations[PoolLevel, _Stock]") -> int:
        return obj.unclaimed

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
