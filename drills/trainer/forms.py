from __future__ import annotations

from django import forms

from drills.models import Attempt
from drills.trainer.grading import Diagnosis
from drills.trainer.numbers import NumberError, read_number
from scenarios import engine
from scenarios.engine import diagnosis as D

MAX_VALUE = 10_000_000
TIME_UNITS_HELP = " A unit may follow: 40 ms, 40000 µs, 0.04 s, or Perfetto's 40ms 12us."


class NumberText(forms.CharField):
    """A number typed as text and read by ``numbers.read_number`` in the field's unit: a viewer's
    "345.2 µs", Perfetto's "12ms 345us" and "1,234.5" are read; a range, two numbers or a unit of
    another quantity are refused with a message beside the field, and the text stays in the box
    (a browser's number box would send "" for "1,234.5" and lose it). ``unit`` None: the unit is
    the one of the measurement chosen beside it (``DiagnosisForm.clean_measurement_value``)."""

    def __init__(self, *, unit: str | None, positive: bool, names: str, **kwargs) -> None:
        self.unit, self.positive = unit, positive
        what = f"{names} as a number{' in ' + unit if unit else ''}, e.g. 42.5"
        kwargs.setdefault("error_messages", {})["required"] = f"Enter {what}."
        attrs = {"autocomplete": "off", "spellcheck": "false"}
        super().__init__(widget=forms.TextInput(attrs=attrs), **kwargs)

    def clean(self, value):
        text = super().clean(value)
        return self.read(text, self.unit) if self.unit else text

    def read(self, text: str, unit: str | None) -> float:
        try:
            value = read_number(text, unit)
        except NumberError as e:
            raise forms.ValidationError(str(e), code="invalid") from None
        if value < 0 or (self.positive and value < 0.001):
            raise forms.ValidationError(
                "Must be more than 0." if self.positive else "Cannot be negative.",
                code="min_value",
            )
        if value > MAX_VALUE:
            raise forms.ValidationError("That is far too large for this trace.", code="max_value")
        return value


def _number(
    label: str, help_text: str, *, names: str, positive: bool, unit: str | None = "ms"
) -> NumberText:
    """A finite number field with messages that say what to type ("NaN", "inf", "1e400", text,
    ranges and negative times are refused beside the field); ``names`` is what the messages
    call it."""
    return NumberText(
        label=label,
        help_text=help_text + (TIME_UNITS_HELP if unit == "ms" else ""),
        unit=unit,
        positive=positive,
        names=names,
    )


def set_choices(field: forms.Field, choices: list[tuple[str, str]]) -> None:
    assert isinstance(field, forms.ChoiceField)  # the form's own ChoiceFields, copied per form
    field.choices = choices


def measurement_choices() -> list[tuple[str, str]]:
    return [(m.key, f"{m.label} [{m.unit}]") for m in D.MEASUREMENTS.values()]


class DiagnosisForm(forms.Form):
    """The five sentences, in the order they are said (field names are a contract)."""

    step_ms = _number(
        "1 · Step time (ms)",
        f"The job's step time: each step lasts as long as its slowest rank; average the "
        f"steps shown. Graded ±"
        f"{D.STEP_TOLERANCE * 100:.0f} %.",
        names="the step time",
        positive=True,
    )
    gap_ms = _number(
        "2 · Gap (ms per step)",
        "How long the GPU compute stream sits idle per step (any rank). Graded ±"
        f"{D.GAP_TOLERANCE * 100:.0f} % or ±{D.GAP_FLOOR_OF_STEP * 100:.0f} % of the step time.",
        names="the gap per step",
        positive=False,
    )
    scenario = forms.ChoiceField(
        label="3 · Signature",
        choices=(),
        error_messages={
            "required": "Choose the signature you see.",
            "invalid_choice": "Choose one of the listed signatures.",
        },
    )
    measurement = forms.ChoiceField(
        label="4 · The one measurement that confirms it",
        choices=(),
        error_messages={
            "required": "Choose the measurement that confirms it.",
            "invalid_choice": "Choose one of the listed measurements.",
        },
    )
    measurement_value = _number(
        "Its value on this trace",
        "In the unit the measurement names; it may follow the number (40 %, 20×, 350 GB/s), and "
        "a time may be typed in µs or s. A share is graded ±3–5 points; other values ±15 % "
        "or the measurement's own band (±1 for counts, ±2 % of the step for times).",
        names="the measurement's value on this trace",
        positive=False,
        unit=None,
    )
    fix = forms.ChoiceField(
        label="5 · The fix",
        choices=(),
        error_messages={
            "required": "Choose the fix.",
            "invalid_choice": "Choose one of the listed fixes.",
        },
    )
    expected_step_ms = _number(
        "Expected step time after the fix (ms)",
        "If nothing needs fixing, the current step time. Graded ±"
        f"{D.EXPECTED_TOLERANCE * 100:.0f} %; where the fix saves time, it must be below the "
        "step time.",
        names="the expected step time after the fix",
        positive=True,
    )
    arithmetic = forms.CharField(
        label="Arithmetic (optional)",
        required=False,
        max_length=1000,
        help_text="One line, e.g. 120 − 4 × 9 = 84 ms.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        blank = [("", "— choose —")]
        set_choices(
            self.fields["scenario"],
            blank + [(slug, s.title) for slug, s in engine.SCENARIOS.items()],
        )
        set_choices(self.fields["measurement"], blank + measurement_choices())
        set_choices(self.fields["fix"], blank + list(D.FIX_CATALOGUE.items()))

    def clean_measurement_value(self) -> float:
        """Read in the unit of the measurement chosen beside it ("40 %", "20×", "350 GB/s")."""
        field = self.fields["measurement_value"]
        assert isinstance(field, NumberText)
        m_def = D.MEASUREMENTS.get(self.cleaned_data.get("measurement") or "")
        return field.read(self.cleaned_data["measurement_value"], m_def.unit if m_def else None)

    def diagnosis(self) -> Diagnosis:
        data = self.cleaned_data
        return Diagnosis(
            scenario=data["scenario"],
            measurement=data["measurement"],
            fix=data["fix"],
            expected_step_ms=float(data["expected_step_ms"]),
            step_ms=float(data["step_ms"]),
            gap_ms=float(data["gap_ms"]),
            measurement_value=float(data["measurement_value"]),
            arithmetic=(data.get("arithmetic") or "").strip(),
        )


class StartForm(forms.Form):
    mode = forms.ChoiceField(
        choices=Attempt.Mode.choices,
        initial=Attempt.Mode.TIMED,
        required=False,
        error_messages={"invalid_choice": "Choose one of the listed drill modes."},
    )

    def clean_mode(self) -> str:
        return self.cleaned_data.get("mode") or Attempt.Mode.TIMED
