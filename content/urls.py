from django.urls import path

from content import views

app_name = "content"

urlpatterns = [
    path("track/", views.index, name="index"),
    path("track/files/<str:name>", views.download, name="download"),
    path(
        "track/timelines/<slug:scenario>/<int:seed>.json",
        views.inline_timeline,
        name="inline_timeline",
    ),
    path("track/<slug:slug>/", views.page, name="page"),
    path("track/<slug:slug>/read/", views.toggle_read, name="toggle_read"),
    path("walkthroughs/<slug:slug>/", views.walkthrough, name="walkthrough"),
    path("renarrations/next/", views.renarration_next, name="renarration_next"),
    path("renarrations/<uuid:attempt_id>/", views.renarration_result, name="renarration"),
    path(
        "walkthroughs/<slug:slug>/timeline.json",
        views.walkthrough_timeline,
        name="walkthrough_timeline",
    ),
    path(
        "walkthroughs/<slug:slug>/perfetto.json",
        views.walkthrough_perfetto,
        name="walkthrough_perfetto",
    ),
]
