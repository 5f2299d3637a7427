"""What the instructor's guide (book/appendix/instructors.md) computes: how long each lab took.

    lab_times(registry.labs())   # one row per lab with a page: where it runs, the shipped
                                 # run's profile, host and wall time
    figures(registry.labs())     # the same times as text for the guide's schedules

Times come from the shipped runs' own start and end (run.json), never typed in: a rerun on
another machine takes what it takes, and the guide says so.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

import pandas as pd

from labs import classes, records


def wall_minutes(run: records.RecordedRun) -> float:
    started = dt.datetime.fromisoformat(run.meta["started_at"])
    finished = dt.datetime.fromisoformat(run.meta["finished_at"])
    return (finished - started).total_seconds() / 60


def lab_times(labs: Iterable[Any]) -> pd.DataFrame:
    rows = []
    for lab in labs:
        if not lab.book_page:
            continue
        run = records.shipped_run(lab.name)
        host = classes.host_description(run)
        minutes = wall_minutes(run)
        rows.append({
            "lab": lab.name, "needs": lab.needs,
            "shipped run": f"{run.meta['parameters'].get('profile') or 'full'} profile, "
                           f"{host['CPUs']} CPUs"
                           + ("" if host["virtual machine"].startswith(("no", "unknown"))
                              else f", {host['virtual machine']}"),
            "took": "under a minute" if minutes < 1 else f"{minutes:.0f} min"})
    return pd.DataFrame(rows)


def figures(labs: Iterable[Any]) -> dict[str, str]:
    """The shipped runs' wall times, in minutes, keyed `<lab>_min` (dashes as underscores)."""
    times = {}
    for lab in labs:
        if lab.book_page:
            minutes = wall_minutes(records.shipped_run(lab.name))
            times[f"{lab.name.replace('-', '_')}_min"] = f"{max(minutes, 1):.0f}"
    return times
