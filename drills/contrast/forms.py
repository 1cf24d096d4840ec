from __future__ import annotations

from django import forms

from drills.contrast.services import LEFT, RIGHT
from drills.trainer.forms import measurement_choices, set_choices


class TrialForm(forms.Form):
    """A contrast trial's two questions (field names are a contract: ``side``, ``measurement``)."""

    side = forms.ChoiceField(
        label="Which one is it?",
        choices=[(LEFT, "The left trace"), (RIGHT, "The right trace")],
        widget=forms.RadioSelect,
        error_messages={
            "required": "Pick the left or the right trace.",
            "invalid_choice": "Pick the left or the right trace.",
        },
    )
    measurement = forms.ChoiceField(
        label="Which measurement tells them apart?",
        choices=(),
        error_messages={
            "required": "Choose the measurement that tells them apart.",
            "invalid_choice": "Choose one of the listed measurements.",
        },
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        set_choices(self.fields["measurement"], [("", "— choose —"), *measurement_choices()])
