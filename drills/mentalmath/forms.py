"""Forms of the mental-math trainer (field names are the contract: ``family``, ``answer``)."""

from __future__ import annotations

from django import forms

from drills.mentalmath.services import resolve_family


class MathStartForm(forms.Form):
    """Start a single drill of ``family`` (a family key, or the name a trace's answer key uses
    for its calculation), or, when blank, of the family the scheduler picks."""

    family = forms.CharField(required=False, max_length=60)

    def clean_family(self) -> str | None:
        raw = (self.cleaned_data.get("family") or "").strip()
        if not raw:
            return None
        key = resolve_family(raw)
        if key is None:
            raise forms.ValidationError("Unknown mental-math family.")
        return key


class MathAnswerForm(forms.Form):
    answer = forms.CharField(
        label="Your answer",
        max_length=100,
        help_text="A number with an optional unit: 68 ms, 152 GB/s, 12.5 %, 1.15x. "
        "A bare number is read in the unit asked for.",
        widget=forms.TextInput(
            attrs={
                "autocomplete": "off",
                "spellcheck": "false",
                "autocapitalize": "off",
                "autofocus": True,
            }
        ),
        error_messages={"required": "Type a number (with a unit if you like)."},
    )


class SprintAnswerForm(MathAnswerForm):
    """A sprint answer names the problem it answers, so a replayed POST can't grade the next."""

    attempt = forms.UUIDField(widget=forms.HiddenInput)
