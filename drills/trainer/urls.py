from django.urls import path

from drills.trainer import views

app_name = "trainer"

urlpatterns = [
    path("drill/", views.trainer, name="home"),
    path("drill/next/", views.next_drill, name="next"),
    path("drill/attempts/<uuid:attempt_id>/", views.attempt_detail, name="attempt"),
    path("drill/attempts/<uuid:attempt_id>/abandon/", views.abandon, name="abandon"),
    path("drill/attempts/<uuid:attempt_id>/after-fix/", views.after_fix, name="after_fix"),
    path(
        "drill/attempts/<uuid:attempt_id>/diagnosis/",
        views.submit_diagnosis,
        name="submit",
    ),
]
