"""Lab A stands on its own: the page gives the exact install line, the script needs no checkout."""

from __future__ import annotations

import subprocess
import sys

import pytest

from content.labs.lab_a_profile import CPU_TORCH_INSTALL

pytestmark = pytest.mark.django_db


def test_the_page_gives_the_cpu_torch_install_line_and_no_checkout_instructions(learner_client):
    html = learner_client.get("/track/lab-a-torch-profiler/").content.decode()
    assert CPU_TORCH_INSTALL in html
    assert "repository root" not in html and "pip install -e" not in html


def test_the_downloaded_script_runs_from_an_empty_folder_and_names_the_install_line(
    learner_client, tmp_path
):
    response = learner_client.get("/track/files/lab_a_profile.py")
    assert response.status_code == 200
    script = tmp_path / "lab_a_profile.py"
    script.write_bytes(b"".join(response.streaming_content))
    run = subprocess.run(
        [sys.executable, "-S", str(script), "--help"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    try:
        import torch  # noqa: F401
    except ImportError:
        run = subprocess.run(
            [sys.executable, "-S", str(script), "--out", "t.json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert run.returncode == 2
        assert CPU_TORCH_INSTALL in run.stderr
