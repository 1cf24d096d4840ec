from django.urls import path

from drills.mentalmath import views

app_name = "math"

urlpatterns = [
    path("math/", views.home, name="home"),
    path("math/next/", views.next_problem, name="next"),
    path("math/attempts/<uuid:attempt_id>/", views.attempt_detail, name="attempt"),
    path("math/from-drill/<uuid:attempt_id>/", views.from_attempt, name="from_attempt"),
    path("math/attempts/<uuid:attempt_id>/answer/", views.submit_answer, name="answer"),
    path("math/sprint/", views.start_sprint, name="sprint_start"),
    path("math/sprint/<uuid:sprint_id>/", views.sprint_detail, name="sprint"),
    path("math/sprint/<uuid:sprint_id>/answer/", views.sprint_answer, name="sprint_answer"),
]
