"""Models and migrations agree: a model change without its migration fails here, not in deploy."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_no_model_change_is_missing_a_migration():
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out)
    except SystemExit:  # --check exits 1 when a migration would be written
        pytest.fail(f"models changed without a migration:\n{out.getvalue()}", pytrace=False)
    assert "No changes detected" in out.getvalue()
