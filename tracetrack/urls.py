from django.contrib import admin
from django.urls import include, path

from tracetrack import views
from tracetrack.login_throttle import ThrottledLoginView

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("accounts/signup/", views.signup, name="signup"),
    path("accounts/login/", ThrottledLoginView.as_view(), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("", include("drills.urls")),
    path("", include("scenarios.urls")),
    path("", include("content.urls")),
    path("cohorts/", include("content.cohorts.urls")),
]
