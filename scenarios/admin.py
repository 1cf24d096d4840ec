from django.contrib import admin

from scenarios.models import Trace


@admin.register(Trace)
class TraceAdmin(admin.ModelAdmin):
    list_display = ["id", "scenario", "hardware", "n_events", "created_at", "claimed_at"]
    list_filter = ["scenario", "hardware", "source"]
    readonly_fields = [f.name for f in Trace._meta.fields]
    exclude = ["payload", "timeline_gz"]
