"""Configuration: validated environment variables, embedded default, production refusal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STRONG = "p" * 20 + "-production-secret-0123456789-abcdefghijklmnop"


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**keep, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_embedded_default_needs_no_configuration(tmp_path):
    result = manage("check", env={"TRACETRACK_VAR_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    env = {"DEBUG": "false", "ALLOWED_HOSTS": "example.com", "TRACETRACK_VAR_DIR": str(tmp_path)}
    result = manage("check", env=env)
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    weak = manage("check", env={**env, "SECRET_KEY": "short"})
    assert weak.returncode != 0 and "too weak" in weak.stderr


def test_production_settings_pass_the_deploy_check(tmp_path):
    env = {
        "DEBUG": "false",
        "SECRET_KEY": STRONG,
        "ALLOWED_HOSTS": "tracetrack.example.com",
        "TRACETRACK_VAR_DIR": str(tmp_path),
    }
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_bad_value_names_the_variable(tmp_path):
    for env, needle in [
        ({"DEBUG": "maybe"}, "DEBUG"),
        ({"DESIRED_RETENTION": "2"}, "DESIRED_RETENTION"),
        ({"DATABASE_URL": "mysql://x"}, "DATABASE_URL"),
        ({"POOL_TARGET": "3", "POOL_LOW_WATER": "9"}, "POOL_LOW_WATER"),
    ]:
        result = manage("check", env={"TRACETRACK_VAR_DIR": str(tmp_path), **env})
        assert result.returncode != 0 and needle in result.stderr, (env, result.stderr[-500:])
