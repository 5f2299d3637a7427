"""Count what the WAL itself holds between sampled positions, with pg_walinspect.

`pg_stat_wal` is a counter that each backend adds to at most about once a second, so its
samples can run behind the WAL position sampled in the same query. The WAL does not lag:
this module builds one query that reads the records between consecutive sampled positions
(`pg_get_wal_records_info`) and counts, per interval, the commits, the full-page images
(each carries "(FPW)" in its block reference), their bytes, and the distinct pages of
pgbench's accounts table that were changed. Builds SQL text and parses psql's output: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labs.errors import LabError

LSN = re.compile(r"^[0-9A-F]{1,8}/[0-9A-F]{1,8}$")


@dataclass(frozen=True)
class WalInterval:
    """What the WAL holds between two sampled positions."""

    index: int
    commits: int
    full_page_images: int
    image_bytes: int
    records: int
    accounts_pages: int  # distinct pgbench_accounts heap pages changed in the interval
    accounts_images: int  # of those changes, how many carried a full-page image


def interval_query(bounds: list[tuple[str, str]], accounts_filenode: int) -> str:
    """One query over every interval [start, end) given as pg_lsn text pairs."""
    if not bounds:
        raise LabError("no WAL intervals to inspect")
    for start, end in bounds:
        if not (LSN.match(start) and LSN.match(end)):
            raise LabError(f"not a WAL position: {start!r} or {end!r}")
    values = ", ".join(f"({i}, '{start}'::pg_lsn, '{end}'::pg_lsn)"
                       for i, (start, end) in enumerate(bounds))
    # The accounts table's pages: "rel 1663/5/<filenode> fork main blk N", then "(FPW)"
    # when the change carries the page's image.
    page = rf"rel \d+/\d+/{int(accounts_filenode)} fork main blk (\d+)( \(FPW\))?"
    return (
        f"WITH b(i, s, e) AS (VALUES {values}), "
        "r AS MATERIALIZED (SELECT b.i, w.resource_manager, w.record_type, w.fpi_length, "
        "w.block_ref FROM b, LATERAL pg_get_wal_records_info(b.s, b.e) w WHERE b.s < b.e), "
        "totals AS (SELECT i, "
        "count(*) FILTER (WHERE resource_manager = 'Transaction' "
        "AND record_type LIKE 'COMMIT%') AS commits, "
        "coalesce(sum((length(block_ref) - length(replace(block_ref, '(FPW)', ''))) / 5), 0) "
        "AS images, coalesce(sum(fpi_length), 0) AS image_bytes, count(*) AS records "
        "FROM r GROUP BY i), "
        "pages AS (SELECT r.i, count(DISTINCT m[1]) AS pages, count(m[2]) AS images "
        f"FROM r, regexp_matches(r.block_ref, '{page}', 'g') m GROUP BY r.i) "
        "SELECT b.i, coalesce(t.commits, 0), coalesce(t.images, 0), "
        "coalesce(t.image_bytes, 0), coalesce(t.records, 0), coalesce(p.pages, 0), "
        "coalesce(p.images, 0) FROM b LEFT JOIN totals t USING (i) "
        "LEFT JOIN pages p USING (i) ORDER BY b.i")


def parse_intervals(text: str, expected: int, source: str = "pg_walinspect") -> list[WalInterval]:
    """psql -At output of `interval_query`: one line per interval, fields split by |."""
    rows = []
    for number, line in enumerate(text.strip().splitlines(), start=1):
        fields = line.split("|")
        if len(fields) != 7:
            raise LabError(f"{source}: line {number} has {len(fields)} fields, expected 7")
        try:
            values = [int(float(x)) for x in fields]
        except ValueError:
            raise LabError(f"{source}: line {number} is not numeric: {line!r}") from None
        rows.append(WalInterval(*values))
    if len(rows) != expected:
        raise LabError(f"{source}: {len(rows)} intervals, expected {expected}")
    return rows


def lsn_bytes(lsn: str) -> int:
    """A pg_lsn text ('16/B374D848') as a byte position."""
    if not LSN.match(lsn):
        raise LabError(f"not a WAL position: {lsn!r}")
    high, low = lsn.split("/")
    return (int(high, 16) << 32) + int(low, 16)
