"""The diagnosis form reads numbers the way a viewer shows them ("345.2 µs", Perfetto's
"12ms 345us", "1,234.5", "40 %"), refuses what is not one value (a range, two numbers, a unit of
another quantity) with a message beside the field, and keeps what the learner typed."""

from __future__ import annotations

import re
from html import unescape

import pytest

from drills.trainer.numbers import NumberError, read_number
from scenarios.engine import diagnosis as D
from tests.conftest import right_answer
from tests.drills.test_drill_flow import start


@pytest.mark.parametrize(
    ("text", "unit", "value"),
    [
        ("40", "ms", 40.0),
        ("40 ms", "ms", 40.0),
        ("~40ms", "ms", 40.0),
        ("40000 µs", "ms", 40.0),
        ("40000 μs", "ms", 40.0),
        ("40000us", "ms", 40.0),
        ("0.04 s", "ms", 40.0),
        ("1.2345 s", "ms", 1234.5),  # this viewer's "Δ 1.2345 s"
        ("12ms 345us 678ns", "ms", 12.345678),  # Perfetto's duration
        ("1s 2ms", "ms", 1002.0),
        ("1.2e3", "ms", 1200.0),
        ("1,234.5", "ms", 1234.5),
        ("1.234,5", "ms", 1234.5),
        ("40,5", "ms", 40.5),
        ("1,234,567", "ms", 1234567.0),
        ("40 %", "%", 40.0),
        ("40%", "%", 40.0),
        ("20x", "×", 20.0),
        ("20 ×", "×", 20.0),
        ("350 GB/s", "GB/s", 350.0),
        ("8 per step", "per step", 8.0),
        ("8 syncs per step", "per step", 8.0),
        ("8 allocs/step", "per step", 8.0),
        ("1e-3", "ms", 0.001),
    ],
)
def test_a_number_read_off_a_viewer_is_read_in_the_field_s_unit(text, unit, value):
    assert read_number(text, unit) == pytest.approx(value)


@pytest.mark.parametrize(
    ("text", "unit", "says"),
    [
        ("30-50", "ms", "is a range"),
        ("30 – 50 ms", "ms", "is a range"),
        ("30 to 50", "ms", "is a range"),
        ("40 50", "ms", "holds 2 numbers"),
        ("2ms 1s", "ms", "holds 2 numbers"),
        ("40 %", "ms", "is a percentage"),
        ("40 ms", "%", "is a time, and this answer is a percentage"),
        ("1,234", "ms", "thousands separator or a decimal point"),
        ("NaN", "ms", "Could not read a number"),
        ("1e400", "ms", "not a finite number"),
        ("9" * 80, "ms", "80 characters"),
        ("<script>alert(1)</script>", "ms", "Could not read a number"),
    ],
)
def test_what_is_not_one_value_is_refused_with_a_reason(text, unit, says):
    with pytest.raises(NumberError, match=re.escape(says)):
        read_number(text, unit)


def submit(client, attempt, **change):
    return client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/", {**right_answer(attempt), **change}
    )


@pytest.mark.django_db
def test_a_step_time_typed_as_perfetto_shows_it_is_graded_right(learner_client, no_refill):
    attempt = start(learner_client)
    g = attempt.trace.key["grading"]
    us = round(g["step_ms"] * 1000)
    measurement = g["measurements_accepted"][0]
    unit = D.MEASUREMENTS[measurement].unit  # "40 %", "20 ×", "350 GB/s", "8 per step"
    response = submit(
        learner_client,
        attempt,
        step_ms=f"{us // 1000}ms {us % 1000}us",
        gap_ms=f"{g['gap_ms'] * 1000:,.1f} µs",
        measurement_value=f"{g['measurements'][measurement]['value']:.4f} {unit}",
    )
    assert response.status_code == 302
    attempt.refresh_from_db()
    assert attempt.answer_step_ms == pytest.approx(us / 1000)
    assert attempt.step_correct and attempt.gap_correct and attempt.value_correct


@pytest.mark.django_db
def test_a_range_is_refused_beside_its_field_and_every_typed_answer_stays(
    learner_client, no_refill
):
    attempt = start(learner_client)
    response = submit(learner_client, attempt, step_ms="30-50", gap_ms="1,234.5 ms")
    assert response.status_code == 400
    html = unescape(response.content.decode())
    assert "“30-50” is a range: give the one value you read" in html
    # the boxes are text boxes holding what was typed: a browser's number box would show
    # nothing for "30-50" and send "" for "1,234.5"
    step_box = re.search(r'<input[^>]*name="step_ms"[^>]*>', html).group(0)
    assert 'value="30-50"' in step_box and 'type="text"' in step_box
    gap_box = re.search(r'<input[^>]*name="gap_ms"[^>]*>', html).group(0)
    assert 'value="1,234.5 ms"' in gap_box and 'type="text"' in gap_box
    attempt.refresh_from_db()
    assert attempt.submitted_at is None and attempt.answer_step_ms is None


@pytest.mark.django_db
def test_a_refused_diagnosis_sent_by_htmx_replaces_only_the_form_and_keeps_the_timeline(
    learner_client, no_refill
):
    """The whole drill area came back on a refused field: the timeline was mounted afresh and
    the learner lost their zoom, selection and measurements, under the clock."""
    attempt = start(learner_client)
    response = learner_client.post(
        f"/drill/attempts/{attempt.pk}/diagnosis/",
        {**right_answer(attempt), "step_ms": "30-50"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 400
    assert response["HX-Retarget"] == "#diagnosis-form"
    assert response["HX-Reswap"] == "outerHTML"
    html = unescape(response.content.decode())
    assert html.lstrip().startswith('<form method="post"') and 'id="diagnosis-form"' in html
    assert "is a range" in html and 'value="30-50"' in html
    assert 'id="timeline"' not in html and 'id="clock"' not in html
