from django.urls import path

from drills import dashboard_views, math_views, views

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
    path("drill/attempts/<uuid:attempt_id>/abandon/", views.abandon, name="abandon"),
    path("math/", math_views.home, name="math"),
    path("math/next/", math_views.next_problem, name="math_next"),
    path("math/attempts/<uuid:attempt_id>/", math_views.attempt_detail, name="math_attempt"),
    path(
        "math/attempts/<uuid:attempt_id>/answer/",
        math_views.submit_answer,
        name="math_answer",
    ),
    path("math/sprint/", math_views.start_sprint, name="math_sprint_start"),
    path("math/sprint/<uuid:sprint_id>/", math_views.sprint_detail, name="math_sprint"),
    path(
        "math/sprint/<uuid:sprint_id>/answer/",
        math_views.sprint_answer,
        name="math_sprint_answer",
    ),
    path("dashboard/", dashboard_views.dashboard, name="dashboard"),
    path("dashboard/stats.json", dashboard_views.stats_json, name="stats_json"),
    path("dashboard/streak/", dashboard_views.streak_opt_in, name="streak_opt_in"),
]
