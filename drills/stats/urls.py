from django.urls import path

from drills.stats import views

app_name = "stats"

urlpatterns = [
    path("dashboard/", views.dashboard, name="dashboard"),
    path("dashboard/stats.json", views.stats_json, name="json"),
    path("dashboard/streak/", views.streak_opt_in, name="streak_opt_in"),
]
