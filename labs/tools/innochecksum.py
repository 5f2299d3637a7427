"""innochecksum, MariaDB's offline page checker: build the command, read its report.

    command = checksum_command("/data/db")     # every table file (*.ibd) under a folder
    invalid_pages(report)                       # {file: pages whose checksum failed}
    invalid_page_numbers(report)                # {file: {page numbers}}

The server must not be running. `--allow-mismatches` lets it go on past a bad page: it then
prints "Fail: page::12 invalid" for each one.
"""

from __future__ import annotations

import re
import shlex

INVALID = re.compile(r"^Fail: page::(\d+) invalid", re.MULTILINE)
CHECKED_FILE = re.compile(r"^== (\S+)$", re.MULTILINE)


def checksum_command(data: str) -> str:
    """innochecksum over every table file in `data`: each file's name after "== ", then a
    line for each page whose checksum fails. The system tablespace is left out: innochecksum
    calls every page of its doublewrite area invalid (they hold copies of other files'
    pages)."""
    return (f"find {shlex.quote(data)} -name '*.ibd' | sort | while read -r file; do "
            "echo \"== $file\"; innochecksum --allow-mismatches=1000000000 \"$file\" 2>&1; "
            "done")


def invalid_pages(report: str) -> dict[str, int]:
    """File -> pages whose checksum failed, from checksum_command's output."""
    counts: dict[str, int] = {}
    for part in re.split(r"(?m)^(?=== )", report):
        named = CHECKED_FILE.match(part)
        if named:
            counts[named.group(1)] = len(INVALID.findall(part))
    return counts


def invalid_page_numbers(report: str) -> dict[str, set[int]]:
    """File -> the numbers of the pages whose checksum failed, from checksum_command's
    output."""
    pages: dict[str, set[int]] = {}
    for part in re.split(r"(?m)^(?=== )", report):
        named = CHECKED_FILE.match(part)
        if named:
            pages[named.group(1)] = {int(page) for page in INVALID.findall(part)}
    return pages
