from __future__ import annotations

from django import forms

from drills.models import Attempt
from drills.trainer.grading import Diagnosis
from scenarios import engine


class DiagnosisForm(forms.Form):
    scenario = forms.ChoiceField(label="Diagnosis", choices=())
    measurement = forms.ChoiceField(label="The one measurement that confirms it", choices=())
    fix = forms.ChoiceField(label="The fix", choices=())
    expected_step_ms = forms.FloatField(
        label="Expected step time after the fix (ms)",
        min_value=0.001,
        max_value=10_000_000,
        help_text="If nothing needs fixing, enter the current step time.",
        widget=forms.NumberInput(attrs={"step": "any", "inputmode": "decimal"}),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        blank = [("", "— choose —")]
        self.fields["scenario"].choices = blank + [
            (slug, s.title) for slug, s in engine.SCENARIOS.items()
        ]
        self.fields["measurement"].choices = blank + list(engine.MEASUREMENTS.items())
        self.fields["fix"].choices = blank + list(engine.FIXES.items())

    def diagnosis(self) -> Diagnosis:
        data = self.cleaned_data
        return Diagnosis(
            scenario=data["scenario"],
            measurement=data["measurement"],
            fix=data["fix"],
            expected_step_ms=float(data["expected_step_ms"]),
        )


class StartForm(forms.Form):
    mode = forms.ChoiceField(
        choices=Attempt.Mode.choices, initial=Attempt.Mode.TIMED, required=False
    )

    def clean_mode(self) -> str:
        return self.cleaned_data.get("mode") or Attempt.Mode.TIMED
