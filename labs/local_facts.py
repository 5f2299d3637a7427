"""What a run records about where its Python side ran: this machine's facts and the
project's commit (labs.records puts them in run.json; labs.infra.facts adds a lab host's)."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from typing import Any

from labs import PROJECT_ROOT


def project_git_commit() -> str:
    """The project's commit, with `-dirty` when the work tree has changes."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
            text=True, timeout=10, check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=PROJECT_ROOT,
            capture_output=True, text=True, timeout=10,
        ).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def load_averages() -> list[float]:
    """This machine's load averages over 1, 5 and 15 minutes (empty where the system keeps
    none). A lab VM's timings depend on the machine that emulates it, busy or quiet."""
    try:
        return [round(load, 2) for load in os.getloadavg()]
    except OSError:
        return []


def cpu_model() -> str:
    """The processor's model name from /proc/cpuinfo ("unknown" where it does not say)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def local_host_facts() -> dict[str, Any]:
    """Facts about the machine this Python runs on (labs on other hosts add their own)."""
    memory_bytes = None
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    memory_bytes = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {
        "name": socket.gethostname(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "memory_bytes": memory_bytes,
        "python": platform.python_version(),
        "lab_vm": False,
    }
