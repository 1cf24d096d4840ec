from django.urls import path

from scenarios import perfetto_ui, views

app_name = "scenarios"

urlpatterns = [
    path("traces/<uuid:trace_id>/timeline.json", views.timeline_json, name="timeline"),
    path("traces/<uuid:trace_id>/perfetto.json", views.perfetto_json, name="perfetto"),
    path("perfetto/", perfetto_ui.serve, name="perfetto_ui"),
    path("perfetto/<path:path>", perfetto_ui.serve, name="perfetto_ui_file"),
]
