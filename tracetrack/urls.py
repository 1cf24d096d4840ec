from django.contrib import admin
from django.urls import include, path

from tracetrack import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("accounts/", include("accounts.urls")),
    path("admin/", admin.site.urls),
    path("", include("drills.urls")),
    path("", include("scenarios.urls")),
    path("", include("content.urls")),
    path("cohorts/", include("cohorts.urls")),
]
