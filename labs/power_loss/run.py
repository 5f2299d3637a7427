"""Run the power-loss lab: databases in a lab VM, a power cut, a reboot, recovery, a count.

Each database server runs in the VM from Debian's packages (labs/infra/vm/servers.py says
why not in a container). A client loop in the VM commits rows 1, 2, 3, ... and prints
`ack N` after each commit returned; the controller (this machine) writes each one down
before the power is cut (labs/infra/acks.py).
"""

from __future__ import annotations

import random
import shlex
import time
from dataclasses import dataclass
from typing import Any

from labs.errors import LabError
from labs.infra.acks import AckStream, lost_window_ms
from labs.infra.hosts import CommandFailed, CommandResult, Host
from labs.infra.lab_run import LabRun
from labs.infra.vm import machine, power
from labs.infra.vm.servers import SERVERS, Server
from labs.infra.workspace import LabWorkspace
from labs.power_loss import model, torn
from labs.power_loss.params import SETTINGS, TORN_ROWS, TORN_SETTINGS, Parameters
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder
from labs.tools import innochecksum, mariadb


@dataclass
class Leg:
    """One database server with one setting, for one power cut."""

    server: Server
    setting: str
    value: str
    safety: str  # safe | unsafe, as the book calls the setting
    data: str  # its folder on the lab's file system in the VM
    wal: str | None = None  # a torn-page leg's log folder (on the disk that does not tear)

    @property
    def name(self) -> str:
        return self.data.rsplit("/", 1)[-1]

    @property
    def tears(self) -> bool:
        """A torn-page leg: its data on the stripe that tears pages, updates not inserts."""
        return self.wal is not None

    @property
    def workload(self) -> str:
        """How the run's results name this leg's rows (the doublewrite legs are InnoDB's)."""
        if not self.tears:
            return "power-cut"
        return "torn-pages" if self.server.name == "postgres" else "doublewrite"

    def options(self) -> tuple[str, ...]:
        if not self.tears:
            return ()
        return torn.PAGE_LEGS_OPTIONS[self.server.name] + self.server.log_options(self.wal)

    def start(self) -> str:
        return self.server.start_command(self.data, self.setting, self.value, self.options())

    def restart(self, *more: str) -> str:
        return self.server.restart_command(self.data, self.setting, self.value,
                                           self.options() + more)

    def sql(self, ws: LabWorkspace, statement: str) -> str:
        return ws.host.sudo(self.server.sql_command(self.data, statement),
                            timeout_s=300).stdout.strip()


@dataclass
class Writer(AckStream):
    """The client loop of one leg (labs/infra/acks.py reads its acknowledgements)."""

    leg: Leg | None = None

    @classmethod
    def of(cls, leg: Leg) -> Writer:
        command = (leg.server.update_loop(leg.data, TORN_ROWS) if leg.tears
                   else leg.server.insert_loop(leg.data))
        return cls(command=command, leg=leg)


CUT_STEPS = ("starting the databases", "committing, then the power cut", "booting again",
             "recovery and the count")


def steps(params: Parameters) -> list[str]:
    """The run's steps, in order: the disks, four per power cut, the teardown."""
    return (["the file systems"] + list(CUT_STEPS) * params.cuts
            + ["stopping the databases, removing the file system; writing the run"])


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    machine.require_lab_vm(host, params.LAB,
                           ("mariadbd", "mariadb-install-db", "psql", "runuser", "setsid"),
                           "ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || echo initdb")
    disk = machine.data_disk(host, params.data_disk)
    tears = bool(params.tear_delay_ms)
    second = next((d for d in host.lab_devices if d != disk), None) if tears else None
    if tears and second is None:
        raise LabError(f"{host.name} has one lab disk; the torn-page legs need two "
                       "(or leave them out with --tear-delay-ms 0)")
    progress.plan(steps(params))
    rng = random.Random(params.seed)
    with LabRun(params, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        disks = set_up_disks(params, ws, progress, disk, second)
        versions = host.sudo("mariadbd --version; "
                             "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/postgres "
                             "--version", timeout_s=60).stdout.strip().splitlines()
        for name, line in zip(("mariadb", "postgres"), versions, strict=False):
            rec.add_tool_version(name, line.strip())
        for cut in range(1, params.cuts + 1):
            cut_once(params, ws, rec, progress, rng, cut, disks)
        progress.step("stopping the databases, removing the file system; writing the run")
    return lab_run.recorded()


@dataclass
class Disks:
    """Where the legs keep their folders, and how to put the disks back after a cut."""

    first: str  # the lab disk of the commit legs
    plain: str  # the device of the commit legs' file system (and of the torn legs' WAL)
    plain_point: str
    layout: torn.TearLayout | None = None  # the disk that tears pages (None: no torn legs)
    torn_point: str | None = None  # where its stripe is mounted


def set_up_disks(params: Parameters, ws: LabWorkspace, progress: Progress, first: str,
                 second: str | None) -> Disks:
    if second is None:
        progress.step("the file systems", f"ext4 on {first}, for the databases' folders")
        ws.make_filesystem(first, "ext4", label="powerloss")
        return Disks(first, first, ws.mount(first, "data"))
    progress.step("the file systems", f"a disk that tears pages: 4 KiB stripes over {first} "
                  f"and {second} "
                  f"(while the clients write, {second} holds each write "
                  f"{params.tear_delay_ms} ms); two file systems")
    layout = torn.build(ws, first, second)
    ws.make_filesystem(layout.plain, "ext4", label="powerloss")
    ws.make_filesystem(layout.torn, "ext4", label="pl-torn")
    return Disks(first, layout.plain, ws.mount(layout.plain, "data"), layout,
                 ws.mount(layout.torn, "torn"))


def mount_again(ws: LabWorkspace, disks: Disks) -> None:
    """After the reboot, each file system where it was, the device-mapper devices below
    them made again first."""
    if disks.layout and disks.torn_point:
        # The mounts are journaled again after the devices below them, so that a teardown
        # (which goes newest first) unmounts before it removes a device.
        ws.remove("mount", disks.torn_point)
        ws.remove("mount", disks.plain_point)
        disks.layout = torn.rebuild_after_boot(ws, disks.first, disks.layout.second)
        ws.mount(disks.layout.torn, "torn")
        ws.mount(disks.plain, "data")
        return
    ws.run_guarded(["mount", disks.plain, disks.plain_point], [disks.plain], timeout_s=300)


def make_legs(params: Parameters, disks: Disks, cut: int) -> list[Leg]:
    legs = [Leg(SERVERS[engine], setting, value, safety,
                f"{disks.plain_point}/{engine}-{value}-cut{cut}")
            for engine in params.engines for setting, value, safety in SETTINGS[engine]]
    if disks.torn_point:
        for engine in params.engines:
            for setting, value, safety in TORN_SETTINGS[engine]:
                name = f"{engine}-{TORN_NAMES[engine]}-{value.lower()}-cut{cut}"
                legs.append(Leg(SERVERS[engine], setting, value, safety,
                                f"{disks.torn_point}/{name}",
                                wal=f"{disks.plain_point}/{name}-wal"))
    return legs


TORN_NAMES = {"postgres": "fpw", "mariadb": "dblwr"}  # in the torn legs' folder names


def cut_once(params: Parameters, ws: LabWorkspace, rec: RunRecorder, progress: Progress,
             rng: random.Random, cut: int, disks: Disks) -> None:
    host = ws.host
    legs = make_legs(params, disks, cut)
    progress.step("starting the databases", f"power cut {cut}: {len(legs)} of them in "
                                               f"{host.name}")
    _start_databases(ws, progress, legs)
    # Everything made so far (the folders, the tables) reaches the disk before the cut: the
    # run then measures the commits, not an unsynced set-up.
    host.sudo("sync", timeout_s=300)
    if disks.layout:
        # Only now: the set-up (a table's first writes) at a second a write would take minutes.
        torn.hold_writes(ws, disks.layout, params.tear_delay_ms)
    progress.step("committing, then the power cut", f"power cut {cut}: about "
                                                       f"{params.write_s} s of commits")
    started = time.monotonic()
    writers = [Writer.of(leg) for leg in legs]
    for writer in writers:
        writer.start(host, started)
    _wait_for_first_commits(writers)
    writing = time.monotonic()
    cut_after_s = params.write_s * (2 / 3 + rng.random() / 3)
    time.sleep(cut_after_s)
    # The power cut: QEMU dies at once; the guest's memory is gone, its disks stay.
    cut_at, boot_s = power.cut_then_boot(
        host.name, waiting=[writer.thread for writer in writers], log=progress.detail,
        before_boot=lambda: progress.step("booting again", f"power cut {cut}: {host.name} "
                                          "on the same disks"))
    cut_at -= started
    ws.reconnect()
    for writer in writers:
        if not writer.acks:
            raise LabError(f"{writer.leg.name}: no commit was acknowledged before the cut "
                           f"({writer.ended or 'no answer'})")
    mount_again(ws, disks)
    progress.step("recovery and the count", f"power cut {cut}")
    for writer in writers:
        _count_leg(params, ws, rec, progress, writer, cut, started, writing, cut_at, boot_s)


def _start_databases(ws: LabWorkspace, progress: Progress, legs: list[Leg]) -> None:
    """Each leg's server made, started, checked for its setting, and its table created."""
    host = ws.host
    # One at a time: made side by side in the VM's 1 GiB, a MariaDB bootstrap crashed.
    for leg in legs:
        progress.detail(f"{leg.name}: {leg.server.label}, {leg.setting}={leg.value}")
        host.sudo(leg.server.init_command(leg.data, leg.wal), timeout_s=900)
        ws.start_server(leg.data, leg.start(), stop=leg.server.stop_command(leg.data),
                        pid_file=leg.server.pid_file(leg.data))
        in_force = leg.sql(ws, leg.server.setting_sql(leg.setting))
        if not leg.server.setting_in_force(in_force, leg.value):
            raise LabError(f"{leg.name}: {leg.setting} is {in_force!r}, not {leg.value!r}")
        for statement in (leg.server.pages_table_sql(TORN_ROWS) if leg.tears
                          else [leg.server.create_table_sql()]):
            leg.sql(ws, statement)


def _wait_for_first_commits(writers: list[Writer]) -> None:
    # The writing window starts once every client has its first commit back: under
    # emulation, opening four SSH sessions and four database connections takes seconds.
    deadline = time.monotonic() + 300
    while not all(writer.acks for writer in writers):
        stopped = [w for w in writers if not w.acks and not w.thread.is_alive()]
        if stopped or time.monotonic() > deadline:
            leg = (stopped or [w for w in writers if not w.acks])[0]
            raise LabError(f"{leg.leg.name}: the client committed nothing "
                           f"({leg.ended or 'no answer within 300 s'})")
        time.sleep(0.1)


def _count_leg(params: Parameters, ws: LabWorkspace, rec: RunRecorder, progress: Progress,
               writer: Writer, cut: int, started: float, writing: float, cut_at: float,
               boot_s: float) -> None:
    """After the cut: one leg's recovery and count, its model and timings recorded, then its
    folders removed. `started`, `writing`: when the clients started and when all had
    committed (time.monotonic()); `cut_at`: the cut, in seconds since `started`."""
    host = ws.host
    leg = writer.leg
    dims = {"engine": leg.server.name, "setting": f"{leg.setting}={leg.value}",
            "safety": leg.safety, "cut": cut}
    config = f"{leg.server.name}-{leg.setting}-{leg.value}"
    workload = leg.workload

    def add(metric: str, number: float, unit: str, dims: dict = dims,
            config: str = config, workload: str = workload) -> None:
        rec.add_result(config=config, workload=workload, metric=metric, value=number,
                       unit=unit, **dims)

    rate = writer.rate()
    if leg.tears:
        hold_s = params.tear_delay_ms / 1000
        count = count_pages if leg.server.name == "postgres" else count_innodb_pages
        counted = count(ws, rec, writer, add, cut)
        add("model_torn_pages", model.pages_in_hold(rate, hold_s), "count")
        add("model_damaged_pages", model.torn_pages(leg.safety, rate, hold_s), "count")
    else:
        counted = count_rows(ws, rec, writer, add, cut, cut_at)
        add("model_max_lost", model.max_lost(leg.server.name, leg.setting, leg.value,
                                             rate), "count")
    rec.add_raw(f"cut{cut}/{leg.name}-acks.txt",
                "".join(f"{row} {at:.3f}\n" for row, at in writer.acks))
    add("acks_per_second", rate, "tps")
    add("cut_after_s", cut_at, "s")  # since the clients started
    add("writing_s", cut_at - (writing - started), "s")  # since all of them committed
    add("boot_s", boot_s, "s")
    progress.detail(f"{leg.name}: {counted}")
    ws.remove("server", leg.data)
    # Safe: folders this cut made on the lab's own file systems (the log is kept in the
    # run); the next cut's databases need the room.
    host.sudo(["rm", "-rf", "--one-file-system", "--", leg.data, *([leg.wal] if leg.wal
                                                                  else [])],
              timeout_s=300)


def count_rows(ws: LabWorkspace, rec: RunRecorder, writer: Writer, add: Any, cut: int,
               cut_at: float) -> str:
    """A commit leg: recovery, then which acknowledged rows are there."""
    leg, host = writer.leg, ws.host
    recovering = time.monotonic()
    ws.restart_server(leg.data, leg.restart())
    recovery_s = time.monotonic() - recovering
    rows_acked = writer.acked
    table = leg.server.table()
    found = int(leg.sql(ws, f"SELECT count(*) FROM {table} WHERE id <= {rows_acked}"))
    newest_found = int(leg.sql(ws, f"SELECT coalesce(max(id), 0) FROM {table} "
                                   f"WHERE id <= {rows_acked}"))
    total = int(leg.sql(ws, f"SELECT count(*) FROM {table}"))
    rec.add_raw(f"cut{cut}/{leg.name}.log",
                host.sudo(["cat", "--", leg.server.log_file(leg.data)], timeout_s=60).stdout)
    add("acknowledged", rows_acked, "count")
    add("acknowledged_found", found, "count")
    add("acknowledged_lost", rows_acked - found, "count")
    add("newest_found", newest_found, "count")  # the highest acknowledged row still there
    # How long before the cut the oldest lost commit was acknowledged: the stretch of
    # acknowledged work the cut erased, as the controller's clock saw it (0: none lost).
    add("lost_window_ms", lost_window_ms(writer.acks, newest_found, cut_at), "ms")
    add("unacknowledged_found", total - found, "count")
    add("recovery_s", recovery_s, "s")
    return (f"acknowledged {rows_acked}, found {found}, lost {rows_acked - found}, "
            f"recovered in {recovery_s:.1f} s")


def count_pages(ws: LabWorkspace, rec: RunRecorder, writer: Writer, add: Any,
                cut: int) -> str:
    """A torn-page leg: does PostgreSQL recover by itself? If not, again with
    zero_damaged_pages (it then zeroes each page that fails its checksum and goes on); which
    pages were damaged; which rows lost their newest acknowledged update."""
    leg, host = writer.leg, ws.host
    recovering = time.monotonic()
    try:
        ws.restart_server(leg.data, leg.restart())
        alone = 1
    except CommandFailed:
        alone = 0
        # What a reader would do to get the rest of the data back, and how the lab counts
        # the damage: every page that fails its checksum is zeroed, with a warning.
        ws.restart_server(leg.data, leg.restart("zero_damaged_pages=on"))
    recovery_s = time.monotonic() - recovering
    expected = torn.expected_values(writer.acks, TORN_ROWS)
    read = host.sudo(leg.server.sql_command(
        leg.data, "SET zero_damaged_pages = on; SELECT id, v FROM pages"),
        timeout_s=600, check=False)
    found = dict(tuple(map(int, line.split("|"))) for line in read.stdout.split()
                 if read.ok and "|" in line)
    relation = leg.sql(ws, "SELECT pg_relation_filepath('pages')") if read.ok else ""
    # The server's log lives on the disk that tears: its last lines before the cut may be
    # zeroes, which are left out.
    log = host.sudo(f"tr -d '\\000' < {shlex.quote(leg.server.log_file(leg.data))}",
                    timeout_s=60).stdout
    rec.add_raw(f"cut{cut}/{leg.name}.log", log)
    rec.add_raw(f"cut{cut}/{leg.name}-read.txt", read.stderr)
    damaged = torn.damaged_pages(log, read.stderr)
    lost = torn.lost_updates(expected, found) if read.ok else len(expected)
    add("acknowledged", writer.acked, "count")
    add("rows_updated", len(expected), "count")  # rows with an acknowledged update
    add("recovered_alone", alone, "count")  # 1: recovery needed no help
    add("table_read", int(read.ok), "count")  # 1: the table could be read (maybe zeroed)
    add("damaged_pages", len(damaged), "count")
    add("damaged_table_pages", sum(1 for rel, _ in damaged if rel == relation), "count")
    add("acknowledged_lost", lost, "count")
    add("recovery_s", recovery_s, "s")
    return (f"acknowledged {writer.acked}, recovered {'alone' if alone else 'only with help'}, "
            f"{len(damaged)} damaged pages, {lost} rows lost their newest update")


def count_innodb_pages(ws: LabWorkspace, rec: RunRecorder, writer: Writer, add: Any,
                       cut: int) -> str:
    """A doublewrite leg: which pages fail their checksum before recovery (innochecksum);
    does MariaDB recover by itself? If not, again with innodb_force_recovery=1 (it then
    starts with the damaged pages left as they are); which rows lost their newest
    acknowledged update; after a clean shutdown, which pages still fail their checksum."""
    leg, host = writer.leg, ws.host
    before = host.sudo(innochecksum.checksum_command(leg.data), timeout_s=600).stdout
    rec.add_raw(f"cut{cut}/{leg.name}-checksums-before.txt", before)
    recovering = time.monotonic()
    alone, started = _restart_innodb(ws, leg)
    recovery_s = time.monotonic() - recovering
    expected = torn.expected_values(writer.acks, TORN_ROWS)
    read, one_by_one = _read_innodb_table(host, leg, started)
    table_read = read is not None and read.ok
    found = (dict(tuple(map(int, line.split("\t"))) for line in one_by_one.stdout.splitlines()
                  if "\t" in line) if one_by_one is not None else {})
    if started:
        # A clean shutdown writes every page home: what fails its checksum then, recovery
        # could not mend.
        host.sudo(f"mariadb-admin --socket={shlex.quote(leg.data + '/server.sock')} shutdown",
                  timeout_s=600, check=False)
    after = host.sudo(innochecksum.checksum_command(leg.data), timeout_s=600).stdout
    rec.add_raw(f"cut{cut}/{leg.name}-checksums-after.txt", after)
    log = host.sudo(f"tr -d '\\000' < {shlex.quote(leg.server.log_file(leg.data))}",
                    timeout_s=60).stdout
    rec.add_raw(f"cut{cut}/{leg.name}.log", log)
    _record_innodb_reads(rec, cut, leg, read, one_by_one)
    torn_before, damaged = innochecksum.invalid_pages(before), innochecksum.invalid_pages(after)
    table_file = f"{leg.data}/lab/pages.ibd"
    lost = torn.lost_updates(expected, found)
    add("acknowledged", writer.acked, "count")
    add("rows_updated", len(expected), "count")
    add("torn_pages", sum(torn_before.values()), "count")  # before recovery
    add("torn_table_pages", torn_before.get(table_file, 0), "count")
    add("doublewrite_pages", len(mariadb.pages_from_doublewrite(log)), "count")
    add("recovered_alone", alone, "count")
    add("table_read", int(table_read), "count")  # 1: a full scan of the table worked
    add("rows_unreadable", TORN_ROWS - len(found), "count")  # read one by one
    add("damaged_pages", sum(damaged.values()), "count")  # after recovery and a shutdown
    add("damaged_table_pages", damaged.get(table_file, 0), "count")
    add("acknowledged_lost", lost, "count")
    add("recovery_s", recovery_s, "s")
    return (f"acknowledged {writer.acked}, {sum(torn_before.values())} torn pages, recovered "
            f"{'alone' if alone else 'only with help' if started else 'not at all'}, "
            f"{sum(damaged.values())} damaged after, {TORN_ROWS - len(found)} rows unreadable, "
            f"{lost} rows lost their newest update")


def _restart_innodb(ws: LabWorkspace, leg: Leg) -> tuple[int, bool]:
    """(1 if MariaDB recovered by itself else 0, whether it started at all)."""
    alone, started = 1, True
    try:
        ws.restart_server(leg.data, leg.restart())
    except CommandFailed:
        alone = 0
        try:
            # What the manual offers a reader whose server will not start on a damaged page.
            ws.restart_server(leg.data, leg.restart("innodb_force_recovery=1"))
        except CommandFailed:
            started = False
    return alone, started


def _read_innodb_table(host: Host, leg: Leg,
                       started: bool) -> tuple[CommandResult | None, CommandResult | None]:
    """(the full scan, the rows read one by one), each None when the server did not start."""
    # A full scan (what an application's query would meet), then every row by itself, so
    # that a damaged page costs only its own rows.
    read = host.sudo(leg.server.sql_command(leg.data, "SELECT id, v FROM lab.pages"),
                     timeout_s=600, check=False) if started else None
    one_by_one = host.sudo(leg.server.rows_one_by_one(leg.data, TORN_ROWS), timeout_s=900,
                           check=False) if started else None
    return read, one_by_one


def _record_innodb_reads(rec: RunRecorder, cut: int, leg: Leg, read: CommandResult | None,
                         one_by_one: CommandResult | None) -> None:
    rec.add_raw(f"cut{cut}/{leg.name}-read.txt",
                read.stderr if read is not None else "not started")
    if one_by_one is not None:
        rec.add_raw(f"cut{cut}/{leg.name}-rows.txt", one_by_one.stdout)
        rec.add_raw(f"cut{cut}/{leg.name}-rows-errors.txt", one_by_one.stderr)
