"""The drills app's URLs: one namespace per part (``trainer``, ``math``, ``stats``,
``interview``, ``contrast``).

The paths are a contract (bookmarks, the viewer's JS, tests); the names are namespaced.
"""

from django.urls import include, path

urlpatterns = [
    path("", include("drills.trainer.urls")),
    path("", include("drills.mentalmath.urls")),
    path("", include("drills.stats.urls")),
    path("", include("drills.interview.urls")),
    path("", include("drills.contrast.urls")),
]
