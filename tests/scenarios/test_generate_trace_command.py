"""`manage.py generate_trace` works with no database and no services."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios import engine

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    # An unreachable database proves the command never touches one.
    env["DATABASE_URL"] = "postgres://nobody@127.0.0.1:1/none"
    env["TRACETRACK_VAR_DIR"] = str(tmp_path / "var")
    return subprocess.run(
        [sys.executable, "manage.py", "generate_trace", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_perfetto_export_and_key(tmp_path):
    out, key = tmp_path / "t.json", tmp_path / "k.json"
    result = run(
        "--scenario", "straggler", "--seed", "7", "--format", "perfetto",
        "--out", str(out), "--key", str(key), tmp_path=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    trace = json.loads(out.read_text(encoding="utf-8"))
    assert trace["traceEvents"]
    assert "straggler" not in out.read_text(encoding="utf-8").lower()
    answer = json.loads(key.read_text())
    assert answer["scenario"] == "straggler"
    expected = engine.generate("straggler", 7).key.to_dict()
    assert answer["expected_step_ms"] == pytest.approx(expected["expected_step_ms"])


def test_hta_export_writes_one_file_per_rank(tmp_path):
    out = tmp_path / "hta"
    result = run(
        "--scenario", "healthy", "--seed", "3", "--hardware", "a100", "--format", "hta",
        "--out", str(out), tmp_path=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files and all(f.startswith("rank-") and f.endswith(".json") for f in files)
    first = (out / "rank-0.json").read_text(encoding="utf-8")
    assert '"rank": 0' in first


def test_timeline_export(tmp_path):
    out = tmp_path / "timeline.json"
    result = run(
        "--scenario", "launch-bound", "--seed", "1", "--format", "timeline", "--out", str(out),
        tmp_path=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["v"] == 1 and len(data["slices"]["ts"]) == len(data["slices"]["dur"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "nope", "--seed", "1", "--format", "perfetto"], "invalid choice"),
        (["--scenario", "healthy", "--seed", "x", "--format", "perfetto"], "invalid int"),
        (["--scenario", "healthy", "--seed", "1", "--format", "pdf"], "invalid choice"),
        (["--scenario", "healthy", "--seed", "-1", "--format", "perfetto"], "non-negative"),
    ],
)
def test_bad_arguments_fail_with_a_clear_message(tmp_path, args, message):
    result = run(*args, "--out", str(tmp_path / "x.json"), tmp_path=tmp_path)
    assert result.returncode != 0
    assert message in result.stderr
    assert not (tmp_path / "x.json").exists()
