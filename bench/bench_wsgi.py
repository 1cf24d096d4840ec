"""WSGI entry for the benchmarks: the project plus ``/bench/trivial/`` (see bench/server.py)."""

import os

import django
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tracetrack.settings")
django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.urls import include, path  # noqa: E402


def trivial(request):
    """Signed in (middleware: session + user), one small query, a short text answer."""
    from drills.models import Attempt

    n = Attempt.objects.filter(user=request.user).count()
    return HttpResponse(f"ok {n}", content_type="text/plain")


urlpatterns = [path("bench/trivial/", trivial), path("", include("tracetrack.urls"))]
settings.ROOT_URLCONF = __name__
application = get_wsgi_application()
