"""Three rules for every request.

``RejectNulMiddleware`` refuses, with 400, any request that carries a NUL character in its path,
query or form fields. No page has a use for one, the filesystem and PostgreSQL both reject NUL in
strings (an ``embedded null byte`` or "cannot contain NUL" error deep in a view would be a 500),
and checking once here keeps every view and form free of that case.

``MethodNotAllowedPageMiddleware`` answers a browser that opens a POST-only address with a page.

``HtmxLoginRequiredMiddleware`` is Django's ``LoginRequiredMiddleware``, but a signed-out htmx
request gets a 401 instead of the redirect to sign-in: the browser would follow that redirect
inside the request and htmx swap the sign-in page over the part of the page it targets (a drill's
diagnosis form typed in full, signed out in another tab). ``static/js/htmx-errors.js`` says what
happened beside the form, which keeps what was typed. A plain form's POST signs in back to the page
the form was on, not to the button's address (which a GET answers with 405).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render, resolve_url
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme


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


class MethodNotAllowedPageMiddleware:
    """A page, not an empty body, for a browser that opens an address only a form's button posts
    to (``/accounts/logout/``, ``/renarrations/next/``, …): Django answers such a GET with a bare
    405, which the browser shows as its own error page. The status and ``Allow`` stay."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or request.method != "GET":
            return response
        if response.streaming or response.content:
            return response
        sign_out = request.path == reverse("logout") and request.user.is_authenticated
        page = render(
            request, "405.html", {"request_path": request.path, "sign_out": sign_out}, status=405
        )
        if allow := response.get("Allow"):
            page["Allow"] = allow
        return page


SIGNED_OUT = "You are signed out (in another tab, or the session ended): sign in again, then send."


def signed_out_answer(request: HttpRequest) -> HttpResponse | None:
    """The answer to a signed-out htmx request (None for any other): 401, nothing to swap."""
    if request.headers.get("HX-Request") != "true":
        return None
    response = HttpResponse(SIGNED_OUT, status=401, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


def sign_in_next(request: HttpRequest) -> str:
    """Where sign-in continues to for a signed-out request: the address itself for a GET; for a
    form's POST (a button's address, which a GET answers with 405) the page the form was on, when
    the Referer names one on this site, else Today."""
    if request.method in ("GET", "HEAD"):
        return request.get_full_path()
    referer = request.headers.get("Referer", "")
    if url_has_allowed_host_and_scheme(
        referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        parts = urlsplit(referer)
        if parts.path.startswith("/"):
            return parts.path + (f"?{parts.query}" if parts.query else "")
    return "/"


class HtmxLoginRequiredMiddleware(LoginRequiredMiddleware):
    def handle_no_permission(self, request, view_func):
        if (answer := signed_out_answer(request)) is not None:
            return answer
        return redirect_to_login(
            sign_in_next(request),
            resolve_url(self.get_login_url(view_func)),
            self.get_redirect_field_name(view_func),
        )
