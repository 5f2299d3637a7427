"""The catalog of labs as the book shows it (the set-up page): from the registry and runs."""

from __future__ import annotations

import pandas as pd

from labs import records, registry


def _minutes(run: records.RecordedRun) -> str:
    minutes = run.wall_s / 60
    return "under a minute" if minutes < 1 else f"{minutes:.0f} min"


def lab_table() -> pd.DataFrame:
    rows = []
    for lab in registry.labs():
        if not lab.book_page:
            continue
        try:
            run = records.shipped_run(lab.name)
            took = f"{_minutes(run)} ({run.meta['parameters'].get('profile', 'full')} profile," \
                   f" {run.meta['host'].get('cpu_count', '?')} CPUs)"
        except records.RecordError:
            took = "no recorded run yet"
        rows.append({"Lab": lab.name, "What it does": lab.description,
                     "Its lab host needs": lab.needs, "The book's run took": took})
    return pd.DataFrame(rows)
