"""The code passes the project's linter (ruff, configured in pyproject.toml)."""

import subprocess
import sys

from conftest import PROJECT_ROOT


def test_ruff_check_passes():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "labs", "tests",
                             "benchmarks"], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:]
