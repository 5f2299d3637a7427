"""Shared fixtures. Nothing here skips: a missing precondition is a failure."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def run_labs(*args: str, env: dict | None = None, timeout: float = 120):
    """Run `python -m labs ...` as a reader would; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "labs", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """A private data/runs/ for tests that record runs."""
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("LABS_RUNS_DIR", str(root))
    return root
