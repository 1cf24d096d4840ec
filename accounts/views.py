from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache

from accounts.forms import SignupForm, autofocus_first_error


def local_next(request: HttpRequest, target: str | None) -> str:
    """Where to go once signed up: ``target`` when it is a path on this site (an invite link the
    sign-in page was sent from), else "" (Today). Another host, a scheme, or a bare word is
    dropped, never followed."""
    if not target or not target.startswith("/"):
        return ""
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if safe else ""


@login_not_required
@never_cache
def signup(request: HttpRequest) -> HttpResponse:
    next_url = local_next(request, request.POST.get("next") or request.GET.get("next"))
    if request.user.is_authenticated:
        return redirect(next_url or "home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend=settings.AUTHENTICATION_BACKENDS[0])
        return redirect(next_url or "home")
    if request.method == "POST":
        autofocus_first_error(form)
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "next": next_url}
    return TemplateResponse(request, "registration/signup.html", context, status=status)
