"""fincore (util-linux): how much of each file sits in the page cache.

    fincore --json --bytes -- FILE...   ->  {"fincore": [{"res": bytes resident,
                                             "pages": pages resident, "size": file bytes,
                                             "file": name}, ...]}

With --bytes, `res` and `size` are byte counts (util-linux 2.38 prints them as numbers;
some versions print them as strings, so both are read). Pages are the kernel's page size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from labs.errors import LabError, UsageError


class FincoreParseError(LabError):
    """fincore output that cannot be read."""


@dataclass(frozen=True)
class FileResidency:
    file: str
    resident_bytes: int
    resident_pages: int
    size_bytes: int


def command(paths: list[str]) -> list[str]:
    if not paths:
        raise UsageError("fincore: give at least one file")
    return ["fincore", "--json", "--bytes", "--", *paths]


def parse(text: str, source: str = "fincore") -> dict[str, FileResidency]:
    try:
        rows = json.loads(text)["fincore"]
    except (ValueError, KeyError, TypeError):
        raise FincoreParseError(f"{source}: not fincore's JSON output") from None
    found = {}
    for row in rows:
        try:
            found[row["file"]] = FileResidency(row["file"], int(row["res"]), int(row["pages"]),
                                               int(row["size"]))
        except (KeyError, ValueError, TypeError):
            raise FincoreParseError(f"{source}: cannot read entry {row!r}") from None
    return found
