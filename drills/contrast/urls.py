from django.urls import path

from drills.contrast import views

app_name = "contrast"

urlpatterns = [
    path("drill/trials/<uuid:attempt_id>/", views.trial, name="trial"),
    path("drill/trials/<uuid:attempt_id>/answer/", views.answer, name="answer"),
]
