"""Part 2 of the doublewrite lab: tear one 16 KiB InnoDB page, with doublewrite ON and OFF.

For each setting, on a copy of the benchmark's template data directory:

1. A table `lab.torn_t` of 48 rows of 230 letters (one leaf page, page 3 of torn_t.ibd,
   filled from its start to near its end) is written and the server shut down cleanly:
   that page on disk is V0. A second table `lab.other_t` holds two rows.
2. The server starts again; `other_t` is updated first (its dirty page keeps the checkpoint
   from moving past this point), then every row of `torn_t`; `FLUSH TABLES ... FOR EXPORT`
   writes the new page V1 home (with doublewrite ON, into ibdata1's doublewrite area first)
   and the server is killed at once (SIGKILL): a crash right after the page write.
3. On disk V1 is whole. A power cut in the middle of that write, on a device that writes
   4 KiB atomically, could have left V1's first 4 KiB and V0's last 12 KiB: the lab writes
   exactly that over page 3 (only ever a file inside the lab's own data directory).
4. The server starts on the torn page; the lab records what it said, whether it came up,
   and reads every row back. If it refused, it is started with innodb_force_recovery=1 and
   then 6, each on its own copy of the crashed data directory, to show what can be read.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from docker.models.containers import Container

from labs.doublewrite import innodbpage
from labs.doublewrite.server import TEMPLATE, Servers, sql, status
from labs.errors import LabError
from labs.infra.container_exec import run_in
from labs.progress import Progress
from labs.records import RunRecorder
from labs.tools import mariadb

ROWS = 48
TORN_AT_BYTES = 4096  # ext4's block and most devices' atomic unit at best
PAGE_NO = 3  # the clustered index root of a file-per-table tablespace
TABLE_SQL = "CREATE TABLE lab.{name} (id INT PRIMARY KEY, v VARCHAR(240) NOT NULL) ENGINE=InnoDB"
# Old rows hold upper-case letters (65 = 'A'), new rows lower-case (97 = 'a'): CHAR() gives a
# binary string, so the comparison is exact.
ROW_QUERIES = {
    "count": "SELECT COUNT(*) FROM lab.torn_t",
    "versions": "SELECT SUM(BINARY v = REPEAT(CHAR(97 + id % 26), 230)), "
                "SUM(BINARY v = REPEAT(CHAR(65 + id % 26), 230)) FROM lab.torn_t",
    "check": "CHECK TABLE lab.torn_t",
    "other": "SELECT COUNT(*), MIN(LEFT(v, 1)) FROM lab.other_t",
}
RECOVERED = "from the doublewrite buffer"
FORCE_LEVELS = (1, 6)
TORN_MODES = ("ON", "OFF")  # innodb_doublewrite, in the order the torn pages are made
CORRUPTED = "Unable to apply log to corrupted page"


def torn_page_demo(servers: Servers, rec: RunRecorder, progress: Progress,
                   settings: Callable[[str], dict], force_recovery: bool) -> None:
    """`settings(mode)`: the server settings with innodb_doublewrite=mode."""
    for mode in TORN_MODES:
        progress.step("a torn 16 KiB page", f"innodb_doublewrite={mode}: crash, tear, restart")
        Tear(servers, rec, mode, settings(mode)).run(force_recovery)


def page_summary(page: bytes) -> dict:
    p = innodbpage.parse_page(page)
    return {"page_no": p.page_no, "type": p.type_name, "space_id": p.space_id, "lsn": p.lsn,
            "trailer_lsn_low32": p.trailer_lsn_low32, "lsn_consistent": p.lsn_consistent,
            "stored_checksum": f"{p.stored_checksum:08x}",
            "computed_checksum": f"{p.computed_checksum:08x}", "checksum_ok": p.checksum_ok,
            "n_recs": p.n_recs, "level": p.level}


def read_rows(container: Container) -> dict[str, dict]:
    """Each query's exit code and output (errors included: they are the finding)."""
    out = {}
    for label, query in ROW_QUERIES.items():
        result = run_in(container, mariadb.client_command(query))
        out[label] = {"exit": result.exit_code, "output": result.output.strip()}
    return out


class Tear:
    def __init__(self, servers: Servers, rec: RunRecorder, mode: str, settings: dict):
        self.servers, self.rec, self.mode = servers, rec, mode
        self.name = f"dblwr-{mode.lower()}"
        self.data = f"torn-{mode.lower()}"
        self.settings = settings

    def add(self, metric: str, value: float, unit: str = "count") -> None:
        self.rec.add_result(config=self.name, workload="torn-page", metric=metric,
                            value=value, unit=unit, doublewrite=self.mode)

    def raw(self, name: str, content: str) -> None:
        self.rec.add_raw(f"torn/{self.name}/{name}", content)

    def run(self, force_recovery: bool) -> None:
        # A copy of the benchmark's template: a data directory made and shut down cleanly
        # already, which starts in seconds where a fresh one takes a full initialisation.
        self.servers.copy_data(TEMPLATE, self.data)
        container = self.servers.start(f"torn-{self.mode.lower()}", self.settings, self.data)
        ibd = self.servers.inside(f"{self.servers.data_dir(self.data)}/lab/torn_t.ibd")
        ibdata = self.servers.inside(f"{self.servers.data_dir(self.data)}/ibdata1")
        # 1. V0 on disk after a clean shutdown.
        space_id = self._write_v0(container)
        offset = PAGE_NO * innodbpage.PAGE_BYTES
        v0 = self.servers.read_bytes(ibd, offset, innodbpage.PAGE_BYTES)
        # 2. V1: the new page written home, then a crash.
        if self.servers.restart(container) is None:
            raise LabError(f"{self.name}: the server did not come back after a clean stop")
        sql(container, "UPDATE lab.other_t SET v = REPEAT('p', 200)")
        sql(container, "UPDATE lab.torn_t SET v = REPEAT(CHAR(97 + id % 26), 230)")
        before = status(container)
        sql(container, "FLUSH TABLES lab.torn_t FOR EXPORT; UNLOCK TABLES")
        after = status(container)
        container.kill()  # SIGKILL: the crash, right after the page reached its home
        container.wait(timeout=120)
        log_before = container.logs().decode(errors="replace")
        v1 = self.servers.read_bytes(ibd, offset, innodbpage.PAGE_BYTES)
        copies = self._doublewrite_copies(ibdata, space_id)
        # 3. The tear.
        torn = self._tear(ibd, offset, v1, v0)
        # 4. Restart on the torn page.
        log_offset = len(container.logs())
        ready_s = self.servers.restart(container, timeout_s=300)
        container.reload()
        rows = read_rows(container) if ready_s is not None else None
        after_restart = (self.servers.read_bytes(ibd, offset, innodbpage.PAGE_BYTES)
                         if ready_s is not None else None)
        if ready_s is not None:
            self.servers.stop(container, 120)
        container.reload()
        exit_code = container.attrs["State"].get("ExitCode")
        restart_log = container.logs()[log_offset:].decode(errors="replace")
        self.servers.remove(container)
        self.raw("before-restart.log", log_before)
        self.raw("restart.log", restart_log)
        self.raw("pages.json", _pages_json(space_id, v0, v1, torn, copies, after_restart,
                                           before, after))
        if rows is not None:
            self.raw("rows.json", json.dumps(rows, indent=1))
        self.record(v0, v1, torn, copies, before, after, ready_s, exit_code, restart_log, rows,
                    after_restart)
        if ready_s is None and force_recovery:
            self.force_recovery()
        self.servers.remove_data(self.data)

    def _write_v0(self, container: Container) -> int:
        """Both tables written, then a clean shutdown; torn_t's tablespace id."""
        sql(container, "CREATE DATABASE lab")
        sql(container, TABLE_SQL.format(name="torn_t"))
        sql(container, TABLE_SQL.format(name="other_t"))
        values = ",".join(f"({i}, REPEAT(CHAR(65 + {i} % 26), 230))" for i in range(1, ROWS + 1))
        sql(container, f"INSERT INTO lab.torn_t VALUES {values}")
        sql(container, "INSERT INTO lab.other_t VALUES (1, REPEAT('o', 200)), "
                       "(2, REPEAT('o', 200))")
        space_id = int(sql(container, "SELECT SPACE FROM information_schema.INNODB_SYS_TABLES "
                                      "WHERE NAME = 'lab/torn_t'"))
        self.checksum_setting(container)
        self.servers.stop(container, 120)
        return space_id

    def _doublewrite_copies(self, ibdata: str, space_id: int) -> list:
        """(ibdata1 page number, page) of each copy of page 3 in the doublewrite area."""
        area = self.servers.read_bytes(
            ibdata, innodbpage.DOUBLEWRITE_FIRST_PAGE * innodbpage.PAGE_BYTES,
            innodbpage.DOUBLEWRITE_PAGES * innodbpage.PAGE_BYTES)
        return [(index + innodbpage.DOUBLEWRITE_FIRST_PAGE, page) for index, page in
                innodbpage.find_page_copies(area, space_id, PAGE_NO)]

    def _tear(self, ibd: str, offset: int, v1: bytes, v0: bytes) -> bytes:
        """V1's first TORN_AT_BYTES and V0's rest, written over the page and read back."""
        torn = innodbpage.torn_page(v1, v0, TORN_AT_BYTES)
        self.servers.write_bytes(ibd, offset, torn)
        on_disk = self.servers.read_bytes(ibd, offset, innodbpage.PAGE_BYTES)
        if on_disk != torn:
            raise LabError(f"{self.name}: the torn page did not reach {ibd}")
        return torn

    def checksum_setting(self, container: Container) -> None:
        """Which page checksum this server writes, and whether it lets anyone turn it off."""
        algorithm = sql(container, "SELECT @@innodb_checksum_algorithm")
        refused = run_in(container, mariadb.client_command(
            "SET GLOBAL innodb_checksum_algorithm = 'none'"))
        output = refused.output.strip()
        self.raw("checksum-setting.txt", f"innodb_checksum_algorithm = {algorithm}\n"
                                         f"SET GLOBAL innodb_checksum_algorithm = 'none': "
                                         f"exit {refused.exit_code}\n{output}\n")
        self.add("checksum_full_crc32", int(algorithm == "full_crc32"))
        self.add("checksum_none_refused", int(refused.exit_code != 0 and "ERROR 1231" in output))

    def record(self, v0: bytes, v1: bytes, torn: bytes, copies, before, after,
               ready_s: float | None, exit_code: int | None, restart_log: str,
               rows: dict | None, after_restart: bytes | None) -> None:
        first = sum(a != b for a, b in zip(v0[:TORN_AT_BYTES], v1[:TORN_AT_BYTES], strict=True))
        rest = sum(a != b for a, b in zip(v0[TORN_AT_BYTES:], v1[TORN_AT_BYTES:], strict=True))
        torn_page = innodbpage.parse_page(torn)
        lsn_v1 = innodbpage.parse_page(v1).lsn
        self.add("page_bytes", innodbpage.PAGE_BYTES, "bytes")
        self.add("torn_at_bytes", TORN_AT_BYTES, "bytes")
        self.add("changed_bytes_first_part", first, "bytes")
        self.add("changed_bytes_rest", rest, "bytes")
        self.add("v1_checksum_ok", int(innodbpage.parse_page(v1).checksum_ok))
        self.add("torn_checksum_ok", int(torn_page.checksum_ok))
        self.add("torn_lsn_consistent", int(torn_page.lsn_consistent))
        self.add("doublewrite_copies_of_v1", sum(1 for _, p in copies if p.lsn == lsn_v1
                                                  and p.checksum_ok))
        for key, metric in (("Innodb_dblwr_pages_written", "flush_dblwr_pages"),
                            ("Innodb_pages_written", "flush_pages_written")):
            self.add(metric, int(after[key]) - int(before[key]))
        # Recovery replays the redo log from the last checkpoint: the page's change must lie
        # after it, or recovery would never look at the page (the test's precondition).
        self.add("checkpoint_before_page_change",
                 int(int(after["Innodb_lsn_last_checkpoint"]) < lsn_v1))
        messages = mariadb.parse_error_log(restart_log)
        self.add("restart_completed", int(ready_s is not None))
        if ready_s is not None:
            self.add("restart_s", round(ready_s, 2), "s")
        self.add("restart_exit_code", -1 if exit_code is None else exit_code)
        self.add("log_recovered_from_doublewrite",
                 int(any("Recovered page" in m.message and RECOVERED in m.message
                         for m in messages)))
        self.add("log_unable_to_apply_log", int(any(CORRUPTED in m.message for m in messages)))
        self.add("log_error_lines", len([m for m in messages if m.level == "ERROR"]))
        self.add("rows_expected", ROWS)
        if rows is not None:
            self.add_rows("", rows)
        if after_restart is not None:
            page = innodbpage.parse_page(after_restart)
            self.add("page_checksum_ok_after_restart", int(page.checksum_ok))
            self.add("page_equals_v1_after_restart", int(after_restart == v1))

    def add_rows(self, prefix: str, rows: dict) -> None:
        count = rows["count"]
        self.add(f"{prefix}select_failed", int(count["exit"] != 0))
        if count["exit"] == 0:
            self.add(f"{prefix}rows_visible", int(count["output"]))
            new, old = (int(x) for x in rows["versions"]["output"].split("\t"))
            self.add(f"{prefix}rows_new_version", new)
            self.add(f"{prefix}rows_old_version", old)
        self.add(f"{prefix}check_table_ok",
                 int(rows["check"]["exit"] == 0 and rows["check"]["output"].endswith("OK")))
        other = rows["other"]
        if other["exit"] == 0:
            count_other, letter = other["output"].split("\t")
            self.add(f"{prefix}other_rows_visible", int(count_other))
            self.add(f"{prefix}other_rows_updated", int(letter == "p"))

    def force_recovery(self) -> None:
        """The server refused. innodb_force_recovery=1 skips the redo of corrupted pages (what
        its log suggests); 6 skips the redo log altogether (what MariaDB warns against)."""
        for level in FORCE_LEVELS:
            # Each level starts from its own copy of the crashed data directory, so what one
            # level's server wrote cannot change what the next one finds.
            copy = f"{self.data}-force{level}"
            self.servers.copy_data(self.data, copy)
            settings = dict(self.settings, innodb_force_recovery=level)
            container = self.servers.start(f"torn-{self.mode.lower()}-force{level}", settings,
                                           copy, wait=False)
            ready_s = self.servers.wait_ready(container, 300)
            rows = read_rows(container) if ready_s is not None else None
            container.kill()
            container.wait(timeout=120)
            self.raw(f"force-recovery-{level}.log", container.logs().decode(errors="replace"))
            self.servers.remove(container)
            self.servers.remove_data(copy)
            self.add(f"force{level}_started", int(ready_s is not None))
            if rows is not None:
                self.raw(f"force-recovery-{level}-rows.json", json.dumps(rows, indent=1))
                self.add_rows(f"force{level}_", rows)
                self.add(f"force{level}_select_error_1877",
                         int("ERROR 1877" in rows["count"]["output"]))


def _pages_json(space_id: int, v0: bytes, v1: bytes, torn: bytes, copies: list,
                after_restart: bytes | None, before: dict, after: dict) -> str:
    """pages.json: every version of the page on disk, and the status counters around the flush."""
    return json.dumps({
        "file": "lab/torn_t.ibd", "page_no": PAGE_NO, "space_id": space_id,
        "torn_at_bytes": TORN_AT_BYTES, "v0_clean_shutdown": page_summary(v0),
        "v1_written_home": page_summary(v1), "torn": page_summary(torn),
        "doublewrite_copies": [{"ibdata1_page": i, "lsn": p.lsn, "checksum_ok":
                                p.checksum_ok} for i, p in copies],
        "after_restart": page_summary(after_restart) if after_restart else None,
        "status_before_flush": {k: before[k] for k in STATUS_KEYS},
        "status_after_flush": {k: after[k] for k in STATUS_KEYS}}, indent=1)


STATUS_KEYS = ("Innodb_lsn_current", "Innodb_lsn_last_checkpoint", "Innodb_dblwr_pages_written",
               "Innodb_dblwr_writes", "Innodb_pages_written", "Innodb_buffer_pool_pages_dirty")
