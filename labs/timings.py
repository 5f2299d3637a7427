"""How long each lab's quick profile took when it was measured (data/timings/quick-runs.csv):
the line a quick run prints before it starts, and the book's tables (labs/book/guide.py).

    measured_quick_seconds("drbd", "vm1")   # -> 515.0, or None when never measured there
"""

from __future__ import annotations

import csv
from pathlib import Path

from labs import PROJECT_ROOT

QUICK_RUNS_CSV = PROJECT_ROOT / "data" / "timings" / "quick-runs.csv"


def _host_kind(host: str) -> str:
    """Lab VMs are measured as one kind (vm1 or vm2 alike); any other host is itself."""
    return "vm" if host.startswith("vm") and host[2:].isdigit() else host


def measured_quick_seconds(lab: str, host: str, path: Path = QUICK_RUNS_CSV) -> float | None:
    """The measured quick-profile time of `lab` on a host of `host`'s kind, if any (a file
    that cannot be read gives None: a lab never fails over its timings)."""
    try:
        with path.open(newline="") as source:
            rows = list(csv.DictReader(source))
    except (OSError, csv.Error):
        return None
    for row in rows:
        if row.get("lab") == lab and _host_kind(row.get("host", "")) == _host_kind(host):
            try:
                return float(row["seconds"])
            except (KeyError, TypeError, ValueError):
                return None
    return None


def expected_duration_line(lab: str, host: str, profile: str) -> str | None:
    """What a run prints under its command line, before it starts: how long a quick run took
    when measured, for planning (None for other profiles, or where nothing was measured)."""
    note = quick_time_note(lab, host) if profile == "quick" else None
    return f"expected: {note}" if note else None


def about(seconds: float) -> str:
    """'about 56 s' under a minute and a half, else 'about 7 min'."""
    return f"about {seconds:.0f} s" if seconds < 90 else f"about {round(seconds / 60)} min"


def quick_time_note(lab: str, host: str) -> str | None:
    """How long the quick profile took on a host of this kind, and where, in one phrase
    (None where it was never measured)."""
    seconds = measured_quick_seconds(lab, host)
    if seconds is None:
        return None
    boot = "; starting the lab VMs comes on top" if _host_kind(host) == "vm" else ""
    return (f"{about(seconds)} (as this quick profile took on a 2-core machine without "
            f"KVM{boot})")
