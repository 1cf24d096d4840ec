"""Refuse, with 400, any request that carries a NUL character in its path, query or form fields.

No page has a use for one, the filesystem and PostgreSQL both reject NUL in strings (an
``embedded null byte`` or "cannot contain NUL" error deep in a view would be a 500), and
checking once here keeps every view and form free of that case.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


def _has_nul(query) -> bool:
    return any("\x00" in k or any("\x00" in v for v in vs) for k, vs in query.lists())


class RejectNulMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path or _has_nul(request.GET):
            return HttpResponseBadRequest("NUL characters are not accepted.")
        if request.method == "POST" and _has_nul(request.POST):
            return HttpResponseBadRequest("NUL characters are not accepted.")
        return self.get_response(request)
