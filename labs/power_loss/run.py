"""Run the power-loss lab: databases in a lab VM, a power cut, a reboot, recovery, a count.

Each database server runs in the VM from Debian's packages (labs/infra/vm/servers.py says
why not in a container). A client loop in the VM commits rows 1, 2, 3, ... and prints
`ack N` after each commit returned; the controller (this machine) writes each one down
before the power is cut (labs/infra/acks.py).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from labs.errors import LabError
from labs.infra.acks import AckStream, lost_window_ms
from labs.infra.facts import host_facts
from labs.infra.hosts import Host
from labs.infra.vm import machine, power
from labs.infra.vm.servers import SERVERS, Server
from labs.infra.workspace import LabWorkspace
from labs.power_loss import model
from labs.power_loss.params import SETTINGS, Parameters
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder, load_run, new_run_id


@dataclass
class Leg:
    """One database server with one setting, for one power cut."""

    server: Server
    setting: str
    value: str
    safety: str  # safe | unsafe, as the book calls the setting
    data: str  # its folder on the lab's file system in the VM

    @property
    def name(self) -> str:
        return self.data.rsplit("/", 1)[-1]

    def start(self) -> str:
        return self.server.start_command(self.data, self.setting, self.value)

    def restart(self) -> str:
        return self.server.restart_command(self.data, self.setting, self.value)

    def sql(self, ws: LabWorkspace, statement: str) -> str:
        return ws.host.sudo(self.server.sql_command(self.data, statement),
                            timeout_s=300).stdout.strip()


@dataclass
class Writer(AckStream):
    """The client loop of one leg (labs/infra/acks.py reads its acknowledgements)."""

    leg: Leg | None = None

    @classmethod
    def of(cls, leg: Leg) -> Writer:
        return cls(command=leg.server.insert_loop(leg.data), leg=leg)


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    machine.require_lab_vm(host, params.LAB,
                           ("mariadbd", "mariadb-install-db", "psql", "runuser", "setsid"),
                           "ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || echo initdb")
    disk = machine.data_disk(host, params.data_disk)
    progress.expect(2 + 4 * params.cuts)
    rng = random.Random(params.seed)
    run_id = new_run_id(host.name)
    recorder = RunRecorder(params.LAB, params.as_record(), seed=params.seed, run_id=run_id,
                           lab_host=host.name, host=host_facts(host))
    with recorder as rec, LabWorkspace(host, lab=params.LAB, run_id=run_id,
                                       on_command=rec.add_command) as ws:
        rec.add_command(params.command_line())
        progress.step(f"an ext4 file system on {disk}, for the databases' folders")
        ws.make_filesystem(disk, "ext4", label="powerloss")
        point = ws.mount(disk, "data")
        versions = host.sudo("mariadbd --version; "
                             "$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/postgres "
                             "--version", timeout_s=60).stdout.strip().splitlines()
        for name, line in zip(("mariadb", "postgres"), versions, strict=False):
            rec.add_tool_version(name, line.strip())
        for cut in range(1, params.cuts + 1):
            cut_once(params, ws, rec, progress, rng, cut, disk, point)
        progress.step("stopping the databases, removing the file system; writing the run")
    return load_run(recorder.final_path)


def cut_once(params: Parameters, ws: LabWorkspace, rec: RunRecorder, progress: Progress,
             rng: random.Random, cut: int, disk: str, point: str) -> None:
    host = ws.host
    legs = [Leg(SERVERS[engine], setting, value, safety,
                f"{point}/{engine}-{value}-cut{cut}")
            for engine in params.engines for setting, value, safety in SETTINGS[engine]]
    progress.step(f"power cut {cut}: starting {len(legs)} databases in {host.name}")
    # One at a time: made side by side in the VM's 1 GiB, a MariaDB bootstrap crashed.
    for leg in legs:
        progress.detail(f"{leg.name}: {leg.server.label}, {leg.setting}={leg.value}")
        host.sudo(leg.server.init_command(leg.data), timeout_s=900)
        ws.start_server(leg.data, leg.start(), stop=leg.server.stop_command(leg.data),
                        pid_file=leg.server.pid_file(leg.data))
        in_force = leg.sql(ws, leg.server.setting_sql(leg.setting))
        if not leg.server.setting_in_force(in_force, leg.value):
            raise LabError(f"{leg.name}: {leg.setting} is {in_force!r}, not {leg.value!r}")
        leg.sql(ws, leg.server.create_table_sql())
    # Everything made so far (the folders, the empty tables) reaches the disk before the
    # cut: the run then measures the commits, not an unsynced set-up.
    host.sudo("sync", timeout_s=300)
    progress.step(f"power cut {cut}: committing for about {params.write_s} s, then the cut")
    started = time.monotonic()
    writers = [Writer.of(leg) for leg in legs]
    for writer in writers:
        writer.start(host, started)
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
    writing = time.monotonic()
    cut_after_s = params.write_s * (2 / 3 + rng.random() / 3)
    time.sleep(cut_after_s)
    try:
        # The power cut: QEMU dies at once; the guest's memory is gone, its disks stay.
        cut_at = power.power_cut(host.name) - started
        for writer in writers:
            writer.thread.join(timeout=60)
    finally:
        # Whatever happened, the VM gets its power back: its teardown runs inside it.
        progress.step(f"power cut {cut}: booting {host.name} again on the same disks")
        booted = time.monotonic()
        if not machine.is_running(host.name):
            power.power_on(host.name, log=progress.detail)
        boot_s = time.monotonic() - booted
    ws.reconnect()
    for writer in writers:
        if not writer.acks:
            raise LabError(f"{writer.leg.name}: no commit was acknowledged before the cut "
                           f"({writer.ended or 'no answer'})")
    # The same lab disk, mounted again where it was (the journal's mount entry still holds).
    ws.run_guarded(["mount", disk, point], [disk], timeout_s=300)
    progress.step(f"power cut {cut}: recovery and the count")
    for writer in writers:
        leg = writer.leg
        recovering = time.monotonic()
        ws.restart_server(leg.data, leg.restart())
        recovery_s = time.monotonic() - recovering
        rows_acked, rate = writer.acked, writer.rate()
        table = leg.server.table()
        found = int(leg.sql(ws, f"SELECT count(*) FROM {table} WHERE id <= {rows_acked}"))
        newest_found = int(leg.sql(ws, f"SELECT coalesce(max(id), 0) FROM {table} "
                                       f"WHERE id <= {rows_acked}"))
        total = int(leg.sql(ws, f"SELECT count(*) FROM {table}"))
        rec.add_raw(f"cut{cut}/{leg.name}.log",
                    host.sudo(["cat", "--", leg.server.log_file(leg.data)],
                              timeout_s=60).stdout)
        rec.add_raw(f"cut{cut}/{leg.name}-acks.txt",
                    "".join(f"{row} {at:.3f}\n" for row, at in writer.acks))
        dims = {"engine": leg.server.name, "setting": f"{leg.setting}={leg.value}",
                "safety": leg.safety, "cut": cut}
        config = f"{leg.server.name}-{leg.setting}-{leg.value}"

        def add(metric: str, number: float, unit: str, dims: dict = dims,
                config: str = config) -> None:
            rec.add_result(config=config, workload="power-cut", metric=metric, value=number,
                           unit=unit, **dims)

        add("acknowledged", rows_acked, "count")
        add("acknowledged_found", found, "count")
        add("acknowledged_lost", rows_acked - found, "count")
        add("newest_found", newest_found, "count")  # the highest acknowledged row still there
        # How long before the cut the oldest lost commit was acknowledged: the stretch of
        # acknowledged work the cut erased, as the controller's clock saw it (0: none lost).
        add("lost_window_ms", lost_window_ms(writer.acks, newest_found, cut_at), "ms")
        add("unacknowledged_found", total - found, "count")
        add("acks_per_second", rate, "tps")
        add("model_max_lost", model.max_lost(leg.server.name, leg.setting, leg.value, rate),
            "count")
        add("cut_after_s", cut_at, "s")  # since the clients started
        add("writing_s", cut_at - (writing - started), "s")  # since all of them committed
        add("recovery_s", recovery_s, "s")
        add("boot_s", boot_s, "s")
        progress.detail(f"{leg.name}: acknowledged {rows_acked}, found {found}, "
                        f"lost {rows_acked - found}, recovered in {recovery_s:.1f} s")
        ws.remove("server", leg.data)
        # Safe: a folder this cut made on the lab's own file system (its log is kept in the
        # run); the next cut's databases need the room.
        host.sudo(["rm", "-rf", "--one-file-system", "--", leg.data], timeout_s=300)

