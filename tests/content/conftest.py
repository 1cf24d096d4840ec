from __future__ import annotations

import pytest
from django.core.management import call_command


@pytest.fixture
def loaded_sets(db):
    call_command("load_content", verbosity=0)
