"""Lab: InnoDB's doublewrite buffer on a real MariaDB (`python -m labs run doublewrite`).

MariaDB 10.11 runs in a container on the lab host, its data directory on a file system the
lab builds there (a loop device over a file in the lab's work dir, ext4, mounted). The lab
inserts rows with sysbench's oltp_insert with `innodb_doublewrite` ON and OFF, on an
unlimited and on a write-limited device, and counts the bytes the device wrote per row;
then it tears a 16 KiB page at a 4 KiB boundary and shows what MariaDB does with it.

params.py     the parameters and profiles
run.py        the whole run (with bench.py and tear.py, the only modules that touch the host,
              through server.py)
bench.py      the sysbench legs
tear.py       the torn page, ON and OFF
innodbpage.py InnoDB's page header, trailer and CRC-32C, so the lab can find and tear a page
model.py      what the chapter predicts: bytes per row, the ON/OFF ratio on a limited device
tables.py     the run as tables (pandas); charts.py the charts; page.py what the page shows
formats.py    the page's figures per repetition, as the numbers it quotes
"""

from labs.doublewrite.params import Parameters

NAME = "doublewrite"
DESCRIPTION = "InnoDB's doublewrite buffer ON/OFF under sysbench inserts, and a torn 16 KiB page"
BOOK_PAGE = "book/torn-pages/doublewrite.md"
NEEDS = "root and a docker engine on the lab host (loop device, ext4, MariaDB container)"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
