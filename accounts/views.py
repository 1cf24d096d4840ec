from __future__ import annotations

from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.views.decorators.cache import never_cache

from accounts.forms import SignupForm, autofocus_first_error


@login_not_required
@never_cache
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend=settings.AUTHENTICATION_BACKENDS[0])
        return redirect("home")
    if request.method == "POST":
        autofocus_first_error(form)
    status = 400 if request.method == "POST" else 200
    return TemplateResponse(request, "registration/signup.html", {"form": form}, status=status)
