"""Lab: torn pages and what full-page writes cost (`python -m labs run torn-pages`).

PostgreSQL runs in a container on the lab host, its data directory on a file system the lab
builds there (a loop device over a file in the lab's work dir, ext4, mounted). The lab runs
pgbench with `full_page_writes` on and off under checkpoints (on an unlimited and a
write-limited disk), then tears an 8 KiB page at its 4 KiB boundary and shows what each
protection does with it.

params.py  the parameters and profiles
run.py     the benchmark legs (the only modules that touch the lab host: run.py, tear.py)
tear.py    the torn page, four ways
pgpage.py  PostgreSQL's page checksum, in Python (so the torn page carries a real one)
page.py    what the chapter's lab page shows: tables, figures, charts, the panel
burst.py   the page's figures on the burst of images after a forced checkpoint
"""

from labs.torn_pages.params import Parameters

NAME = "torn-pages"
DESCRIPTION = "full_page_writes on/off under checkpoints, and a torn page with and without it"
BOOK_PAGE = "book/torn-pages/lab.md"
NEEDS = "root and a docker engine on the lab host (loop device, ext4, PostgreSQL container)"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
