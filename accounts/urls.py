"""Sign-up and the throttled sign-in; Django's own auth views (logout, password change and reset)
keep their stock names, so ``{% url 'login' %}`` and ``LOGIN_URL = "login"`` read as usual."""

from django.urls import include, path

from accounts import views
from accounts.login_throttle import ThrottledLoginView

urlpatterns = [
    path("signup/", views.signup, name="signup"),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("", include("django.contrib.auth.urls")),
]
