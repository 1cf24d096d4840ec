from django.urls import path

from scenarios import perfetto_ui, upload_views, views

app_name = "scenarios"

urlpatterns = [
    path("traces/<uuid:trace_id>/timeline.json", views.timeline_json, name="timeline"),
    path("traces/<uuid:trace_id>/perfetto.json", views.perfetto_json, name="perfetto"),
    path("traces/upload/", upload_views.upload_list, name="upload_list"),
    path("traces/upload/<uuid:upload_id>/", upload_views.upload_detail, name="upload_detail"),
    path(
        "traces/upload/<uuid:upload_id>/timeline.json",
        upload_views.upload_timeline,
        name="upload_timeline",
    ),
    path(
        "traces/upload/<uuid:upload_id>/perfetto.json",
        upload_views.upload_perfetto,
        name="upload_perfetto",
    ),
    path(
        "traces/upload/<uuid:upload_id>/delete/", upload_views.upload_delete, name="upload_delete"
    ),
    path("perfetto/", perfetto_ui.serve, name="perfetto_ui"),
    path("perfetto/<path:path>", perfetto_ui.serve, name="perfetto_ui_file"),
]
