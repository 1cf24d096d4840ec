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


def autofocus_first_error(form: forms.BaseForm) -> None:
    """A refused form puts the cursor in the first field it refused, not in the first field of
    the form, already filled in; a refused password sends it to the first password box, since
    every password box comes back empty and has to be typed again."""
    wrong = [name for name in form.fields if name in form.errors]
    if not wrong:
        return
    passwords = [n for n, f in form.fields.items() if isinstance(f.widget, forms.PasswordInput)]
    target = passwords[0] if passwords and set(wrong) & set(passwords) else wrong[0]
    for field in form.fields.values():
        field.widget.attrs.pop("autofocus", None)
    form.fields[target].widget.attrs["autofocus"] = True
