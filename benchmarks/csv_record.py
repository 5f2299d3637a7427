"""Appending rows to a benchmark's CSV record (its header written once, when it is new)."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path


def append(record: Path, fields: Sequence[str], rows: Iterable[dict]) -> None:
    new = not record.exists()
    with record.open("a", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerows(rows)
