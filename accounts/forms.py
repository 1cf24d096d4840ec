from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UserCreationForm


class SignupForm(UserCreationForm):
    """Username and password; an email address is optional (reminders and password resets)."""

    email = forms.EmailField(
        required=False,
        help_text="Optional. Used only for assignment reminders and password resets.",
    )

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")
