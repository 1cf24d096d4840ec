from django.urls import path

from drills.interview import views

app_name = "interview"

urlpatterns = [
    path("interview/", views.home, name="home"),
    path("interview/start/", views.start, name="start"),
    path("interview/<uuid:interview_id>/", views.detail, name="detail"),
    path("interview/<uuid:interview_id>/next/", views.next_trace, name="next"),
    path("interview/<uuid:interview_id>/share/", views.share, name="share"),
]
