"""Shared fixtures. Nothing here skips: a missing precondition is a failure."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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


def toc_files() -> list[str]:
    """Every page named in _toc.yml (root, chapters, sections), without the .md suffix."""
    toc = yaml.safe_load((PROJECT_ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            files.append(chapter["file"])
            files += [section["file"] for section in chapter.get("sections", [])]
    return files
