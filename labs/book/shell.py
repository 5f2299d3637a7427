"""Show a real `python -m labs ...` call and its output inside a book page.

The lab pages run the same command line a reader types, with the same Python that builds
the book, so the output shown is the output the command really prints.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

from labs import PROJECT_ROOT


def run_labs_command(arguments: str, timeout_s: float = 120) -> str:
    """Run `python -m labs <arguments>`; return the prompt line and its output."""
    argv = [sys.executable, "-m", "labs", *shlex.split(arguments)]
    result = subprocess.run(argv, cwd=PROJECT_ROOT, capture_output=True, text=True,
                            timeout=timeout_s)
    output = (result.stdout + result.stderr).rstrip()
    status = "" if result.returncode == 0 else f"\n(exit code {result.returncode})"
    return f"$ python -m labs {arguments}\n{output}{status}"


def show_labs_command(arguments: str) -> None:
    print(run_labs_command(arguments))
