from django.urls import path

from . import views

app_name = "cohorts"

urlpatterns = [
    path("", views.cohort_list, name="list"),
    path("new/", views.cohort_new, name="new"),
    path("join/", views.join, name="join"),
    path("join/<str:code>/", views.join_link, name="join_link"),
    path("<int:cohort_id>/", views.detail, name="detail"),
    path("<int:cohort_id>/assign/", views.assign, name="assign"),
    path(
        "<int:cohort_id>/assignments/<int:assignment_id>/extensions/",
        views.extend,
        name="extend",
    ),
    path(
        "<int:cohort_id>/assignments/<int:assignment_id>/extensions/<int:extension_id>/delete/",
        views.extension_delete,
        name="extension_delete",
    ),
    path(
        "<int:cohort_id>/assignments/<int:assignment_id>/edit/",
        views.assignment_edit,
        name="assignment_edit",
    ),
    path(
        "<int:cohort_id>/assignments/<int:assignment_id>/delete/",
        views.assignment_delete,
        name="assignment_delete",
    ),
    path("<int:cohort_id>/leave/", views.leave, name="leave"),
    path("<int:cohort_id>/archive/", views.archive, name="archive"),
    path("<int:cohort_id>/unarchive/", views.unarchive, name="unarchive"),
    path("<int:cohort_id>/export.csv", views.export_csv, name="export"),
    path("<int:cohort_id>/attempts.csv", views.attempts_csv, name="attempts"),
    path("<int:cohort_id>/learners/<int:user_id>/", views.learner_detail, name="learner"),
    path(
        "<int:cohort_id>/learners/<int:user_id>/attempts/<uuid:attempt_id>/",
        views.learner_attempt,
        name="learner_attempt",
    ),
    path(
        "<int:cohort_id>/learners/<int:user_id>/attempts/<uuid:attempt_id>/timeline.json",
        views.learner_attempt_timeline,
        name="learner_attempt_timeline",
    ),
    path(
        "<int:cohort_id>/interviews/<uuid:interview_id>/",
        views.shared_interview,
        name="interview",
    ),
    path("<int:cohort_id>/instructors/add/", views.add_instructor, name="add_instructor"),
    path(
        "<int:cohort_id>/instructors/<int:user_id>/remove/",
        views.remove_instructor,
        name="remove_instructor",
    ),
    path(
        "<int:cohort_id>/members/<int:user_id>/remove/", views.remove_member, name="remove_member"
    ),
    path("<int:cohort_id>/regenerate-code/", views.regenerate_code, name="regenerate_code"),
]
