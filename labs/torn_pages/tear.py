"""Part 2 of the torn-pages lab: tear an 8 KiB page at its 4 KiB boundary, four ways.

The torn page is the first 4 KiB of the new page (with the checksum PostgreSQL would have
written for it) followed by the last 4 KiB of the old one, as a power cut in the middle of
the page write could leave it. Then:

- stopped cluster with data checksums: `pg_checksums --check` and a `SELECT` report it;
- crash (`docker kill`) after an update with `full_page_writes=on`: recovery writes the
  page image from WAL over the torn page and the read succeeds;
- the same with `full_page_writes=off` and checksums: recovery stops on the bad page;
- the same with neither: recovery "succeeds" and the table silently shows rows twice.
"""

from __future__ import annotations

import base64
import shlex

from docker.models.containers import Container

from labs.errors import LabError
from labs.infra.container_exec import exec_in
from labs.infra.containers import ContainerError, ContainerSpec, wait_healthy
from labs.progress import Progress
from labs.records import RunRecorder
from labs.torn_pages import pgpage
from labs.torn_pages.cluster import PGDATA, Cluster, psql

PAGE_BYTES = 8192
SECTOR_GROUP_BYTES = 4096  # the tear: ext4 and most devices write 4 KiB atomically at best


# The crashes, in order: (name, full_page_writes, data checksums).
CRASHES = (("fpw-on", "on", True), ("fpw-off", "off", True), ("fpw-off-nochecksums", "off", False))


def torn_page_demo(cluster: Cluster, rec: RunRecorder, progress: Progress) -> None:
    tear = Tear(cluster, rec)
    progress.step("a torn page on a stopped cluster", "data checksums on")
    tear.stopped_cluster()
    for name, fpw, checksums in CRASHES:
        progress.step("a crash, a torn page, recovery", f"full_page_writes={fpw}, "
                      f"data checksums {'on' if checksums else 'off'}")
        tear.crash_and_recover(name, fpw, checksums)


def differing_bytes(a: bytes, b: bytes) -> tuple[int, int]:
    """How many bytes differ in the first and in the second 4 KiB of two pages."""
    half = SECTOR_GROUP_BYTES
    first = sum(x != y for x, y in zip(a[:half], b[:half], strict=True))
    second = sum(x != y for x, y in zip(a[half:], b[half:], strict=True))
    return first, second


class Tear:
    def __init__(self, cluster: Cluster, rec: RunRecorder):
        self.cluster, self.host, self.rec = cluster, cluster.host, rec

    # --- pages in the data files on the lab host ---------------------------------------

    def _relation_file(self, data: str, relpath: str) -> str:
        path = f"{data}/{relpath}"
        # Only ever a relation file inside the lab's own data directory on its own file system.
        if not path.startswith(self.cluster.fs.mount_point + "/") or ".." in relpath:
            raise LabError(f"refusing to touch {path}: not inside the lab's data directory")
        return path

    def read_page(self, path: str, block: int = 0) -> bytes:
        out = self.host.sudo(f"dd if={shlex.quote(path)} bs={PAGE_BYTES} skip={block} count=1 "
                             f"status=none | base64 -w0", timeout_s=60).stdout
        page = base64.b64decode(out)
        if len(page) != PAGE_BYTES:
            raise LabError(f"{path}: block {block} is {len(page)} bytes, not {PAGE_BYTES}")
        return page

    def write_page(self, path: str, page: bytes, block: int = 0) -> None:
        """Write one page and read it back: the torn-page results are worth nothing unless
        the file holds exactly the page the lab built."""
        assert len(page) == PAGE_BYTES
        encoded = base64.b64encode(page).decode()
        # Safe: `path` is a relation file inside the lab's own data directory on the lab's
        # own loop file system (_relation_file checked it), never a device or a user file.
        # iflag=fullblock: from a pipe, one read() may return less than a page, and with
        # count=1 dd would then write only that part (half a page, under load).
        self.host.sudo(f"set -o pipefail; echo {encoded} | base64 -d | dd "
                       f"of={shlex.quote(path)} bs={PAGE_BYTES} seek={block} count=1 "
                       f"iflag=fullblock conv=notrunc,fsync status=none", timeout_s=60)
        landed = self.read_page(path, block)
        if landed != page:
            raise LabError(f"{path}: block {block} differs from the page just written to it "
                           f"in {sum(differing_bytes(landed, page))} bytes")

    def checksums_check(self, name: str, data: str) -> tuple[int, str]:
        """`pg_checksums --check` on a stopped data directory, in a one-off container."""
        spec = ContainerSpec(name=f"tp-{self.cluster.token}-{name}-checksums",
                             image=self.cluster.image,
                             command=["pg_checksums", "--check", "-D", PGDATA],
                             binds={data: PGDATA}, user="postgres", entrypoint=[])
        container = self.cluster.ws.run_container(spec)
        try:
            status = container.wait(timeout=300)
            output = container.logs().decode(errors="replace")
        finally:
            self.cluster.remove(container)
        return int(status["StatusCode"]), output

    def _make_table(self, container: Container) -> str:
        # 40 rows of ~140 bytes fill block 0 from about 2.7 KiB to its end: both halves.
        psql(container, "CREATE TABLE torn (id int PRIMARY KEY, payload text) "
                        "WITH (autovacuum_enabled = off)")
        psql(container, "INSERT INTO torn SELECT g, repeat('a', 100) "
                        "FROM generate_series(1, 40) g")
        psql(container, "SELECT count(*) FROM torn")  # sets hint bits before the checkpoint
        psql(container, "CHECKPOINT")
        return psql(container, "SELECT pg_relation_filepath('torn')")

    # --- the four cases --------------------------------------------------------------------

    def stopped_cluster(self) -> None:
        name = "tear-stopped"
        container = self.cluster.start(name, {}, checksums=True)
        data = self.cluster.data_dir(name)
        file = self._relation_file(data, self._make_table(container))
        old = self.read_page(file)
        psql(container, "UPDATE torn SET payload = repeat('b', 100) WHERE id <= 10")
        psql(container, "CHECKPOINT")
        container.stop(timeout=60)  # a clean shutdown: the new page is on disk, intact
        new = self.read_page(file)
        code_before, out_before = self.checksums_check(name + "-intact", data)
        torn = new[:SECTOR_GROUP_BYTES] + old[SECTOR_GROUP_BYTES:]
        first, second = differing_bytes(new, old)
        self.write_page(file, torn)
        code_after, out_after = self.checksums_check(name + "-torn", data)
        container.start()
        wait_healthy(container, 120)
        select = exec_in(container, ["psql", "-XAtq", "-c", "SELECT count(*) FROM torn"],
                         user="postgres", check=False)
        container.stop(timeout=60)
        self.rec.add_raw(f"torn/{name}/pg_checksums-intact.txt", out_before)
        self.rec.add_raw(f"torn/{name}/pg_checksums-torn.txt", out_after)
        self.rec.add_raw(f"torn/{name}/select.txt", select)
        self.rec.add_raw(f"torn/{name}/server.log", container.logs().decode(errors="replace"))
        dims = {"variant": name, "full_page_writes": "on", "data_checksums": "on"}

        def add(metric: str, value: float, unit: str = "count") -> None:
            self.rec.add_result(config=name, workload="torn-page", metric=metric,
                                value=value, unit=unit, **dims)

        add("changed_bytes_first_half", first, "bytes")
        add("changed_bytes_second_half", second, "bytes")
        add("checksum_check_failed_intact", int(code_before != 0))
        add("checksum_check_failed_torn", int(code_after != 0))
        add("select_reported_invalid_page", int("invalid page in block" in select))

    def crash_and_recover(self, name: str, fpw: str, checksums: bool) -> None:
        settings = {"full_page_writes": fpw, "checkpoint_timeout": "1h",
                    "max_wal_size": "1GB"}
        container = self.cluster.start(name, settings, checksums=checksums)
        data = self.cluster.data_dir(name)
        psql(container, "CREATE EXTENSION pageinspect")
        psql(container, "CREATE EXTENSION pg_walinspect")
        relpath = self._make_table(container)
        file = self._relation_file(data, relpath)
        old = self.read_page(file)
        lsn_before = psql(container, "SELECT pg_current_wal_lsn()")
        psql(container, "UPDATE torn SET payload = repeat('b', 100) WHERE id <= 10")
        lsn_after = psql(container, "SELECT pg_current_wal_lsn()")
        new, checksum_self_check = self._page_as_written(container, old, checksums)
        wal = psql(container,
                   "SELECT start_lsn, resource_manager, record_type, fpi_length, block_ref "
                   f"FROM pg_get_wal_records_info('{lsn_before}', '{lsn_after}')")
        fpi_bytes = _page_image_bytes(wal, relpath)
        on_disk, first, second = self._crash_and_tear(container, file, new)
        recovered, rows, b_rows = self._restart_after_crash(container)
        container.reload()
        server_log = container.logs().decode(errors="replace")
        checks, code = None, 0
        if recovered and checksums:
            code, checks = self.checksums_check(name, data)
        self.rec.add_raw(f"torn/{name}/wal-records.txt", wal + "\n")
        self.rec.add_raw(f"torn/{name}/server.log", server_log)
        if checks is not None:
            self.rec.add_raw(f"torn/{name}/pg_checksums-after-recovery.txt", checks)
        dims = {"variant": name, "full_page_writes": fpw,
                "data_checksums": "on" if checksums else "off"}

        def add(metric: str, value: float, unit: str = "count") -> None:
            self.rec.add_result(config=name, workload="torn-page", metric=metric,
                                value=value, unit=unit, **dims)

        add("changed_bytes_first_half", first, "bytes")
        add("changed_bytes_second_half", second, "bytes")
        add("disk_page_equals_pre_update_page", int(on_disk == old))
        if checksums:
            add("checksum_model_matches_postgresql", int(checksum_self_check))
        add("fpi_bytes_for_page_in_wal", fpi_bytes, "bytes")
        add("recovery_completed", int(recovered))
        add("recovery_reported_invalid_page", int("invalid page in block" in server_log))
        if recovered:
            add("rows_visible", rows)
            add("rows_expected", 40)
            add("updated_rows_visible", b_rows)
            if checksums:
                add("checksum_check_failed_after_recovery", int(code != 0))

    def _page_as_written(self, container: Container, old: bytes, checksums: bool
                         ) -> tuple[bytes, bool]:
        """The updated page as PostgreSQL would write it out, and whether the lab's checksum
        of the intact page on disk (`old`) matches the one PostgreSQL stored."""
        # The page as it is in shared buffers after the update. PostgreSQL sets the checksum
        # only in the copy it writes out, so set it the same way: the first half of the
        # torn page is then byte for byte what a real write would have put on disk.
        new = bytes.fromhex(psql(container, "SELECT encode(get_raw_page('torn', 0), 'hex')"))
        checksum_self_check = pgpage.page_checksum(old, 0) == pgpage.stored_checksum(old)
        if checksums:
            if not checksum_self_check:
                raise LabError("the lab's page checksum does not match PostgreSQL's on an "
                               "intact page; refusing to build a torn page from it")
            new = pgpage.with_checksum(new, 0)
        return new, checksum_self_check

    def _crash_and_tear(self, container: Container, file: str, new: bytes
                        ) -> tuple[bytes, int, int]:
        """Kill the server, then tear the page on disk with the first half of `new`; returns
        the page the crash left and how many bytes differ in each half."""
        # A crash: no shutdown checkpoint, the updated page never reached the data file.
        container.kill()
        container.wait(timeout=60)
        on_disk = self.read_page(file)
        torn = new[:SECTOR_GROUP_BYTES] + on_disk[SECTOR_GROUP_BYTES:]
        first, second = differing_bytes(new, on_disk)
        self.write_page(file, torn)
        return on_disk, first, second

    def _restart_after_crash(self, container: Container) -> tuple[bool, int, int]:
        """Start the server on the torn page and, if recovery completes, count the rows and
        the updated rows among them (-1 if not), then stop it cleanly."""
        container.start()
        recovered = True
        try:
            wait_healthy(container, 120)
        except ContainerError:
            recovered = False
        rows = b_rows = -1
        if recovered:
            rows = int(psql(container, "SELECT count(*) FROM torn"))
            b_rows = int(psql(container, "SELECT count(*) FROM torn WHERE payload LIKE 'b%'"))
            container.stop(timeout=60)
        return recovered, rows, b_rows


def _page_image_bytes(wal: str, relpath: str) -> int:
    """The bytes of full-page images of the table's block 0 in pg_get_wal_records_info rows."""
    relfile = relpath.rsplit("/", 1)[-1]
    fpi_bytes = 0
    for line in wal.splitlines():
        fields = line.split("|")
        if len(fields) >= 5 and f"/{relfile} " in fields[4] + " " and " blk 0" in fields[4]:
            fpi_bytes += int(fields[3])
    return fpi_bytes
