"""What a view's request carries once the middleware has run, spelled out for mypy.

``LoginRequiredMiddleware`` lets only a signed-in user reach a view that is not marked
``login_not_required``, so there ``request.user`` is a ``User``, never ``AnonymousUser``; and
django-htmx's middleware sets ``request.htmx`` on every request. Views annotate their request
with these classes; nothing constructs one.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxRequest(HttpRequest):
    htmx: HtmxDetails


class SignedInRequest(HtmxRequest):
    user: User
