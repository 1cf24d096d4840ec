from django.urls import path

from drills import dashboard_views, views

app_name = "drills"

urlpatterns = [
    path("drill/", views.trainer, name="trainer"),
    path("drill/next/", views.next_drill, name="next"),
    path("drill/attempts/<uuid:attempt_id>/", views.attempt_detail, name="attempt"),
    path(
        "drill/attempts/<uuid:attempt_id>/diagnosis/",
        views.submit_diagnosis,
        name="submit",
    ),
    path("dashboard/", dashboard_views.dashboard, name="dashboard"),
    path("dashboard/stats.json", dashboard_views.stats_json, name="stats_json"),
    path("dashboard/streak/", dashboard_views.streak_opt_in, name="streak_opt_in"),
]
