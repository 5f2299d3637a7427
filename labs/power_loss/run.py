"""Run the power-loss lab: writers in containers on a lab VM, a power cut, recovery, a count.

The client loop runs inside each database's container and prints `ack N` only after the
database returned from committing row N; the controller (this machine) reads those lines
over the VM's SSH connection and writes each one down before the power is cut. What the
controller saw is what was acknowledged: an acknowledgement still in flight when the power
went is not counted, which can only make the count of lost commits smaller, never larger.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from dataclasses import dataclass, field

from docker.models.containers import Container

from labs.errors import LabError, UsageError
from labs.infra import images
from labs.infra.containers import ContainerSpec, exec_in, wait_healthy
from labs.infra.facts import host_facts
from labs.infra.hosts import Host
from labs.infra.vm import machine, power
from labs.infra.workspace import LabWorkspace
from labs.power_loss import model
from labs.power_loss.params import SETTINGS, Parameters
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder, load_run, new_run_id
from labs.tools import mariadb

PGDATA = "/var/lib/postgresql/data"
MYSQL_DATA = "/var/lib/mysql"


@dataclass
class Engine:
    """How the lab talks to one database engine, in its container."""

    name: str
    user: str
    data_dir: str
    health: list[str]

    def spec(self, container: str, image: str, data: str, setting: str, value: str
             ) -> ContainerSpec:
        if self.name == "postgres":
            return ContainerSpec(
                name=container, image=image, binds={data: self.data_dir},
                command=["postgres", "-c", f"{setting}={value}", "-c", "shared_buffers=32MB"],
                environment={"POSTGRES_HOST_AUTH_METHOD": "trust"}, health_command=self.health)
        return ContainerSpec(
            name=container, image=image, binds={data: self.data_dir}, health_command=self.health,
            command=mariadb.server_arguments({setting: value, "innodb_buffer_pool_size": "32M"}))

    def sql(self, container: Container, statement: str) -> str:
        if self.name == "postgres":
            argv = ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", statement]
        else:
            argv = mariadb.client_command(statement)
        return exec_in(container, argv, user=self.user).strip()

    def insert_loop(self) -> list[str]:
        """Commit rows 1, 2, 3, ... one by one; print `ack N` after each commit returned."""
        if self.name == "postgres":
            insert = 'psql -XAtq -c "INSERT INTO acks VALUES ($i)"'
        else:
            insert = 'mariadb -N -B -e "INSERT INTO lab.acks VALUES ($i)"'
        return ["sh", "-c", f"i=0; while i=$((i+1)); do {insert} >/dev/null || exit 3; "
                            f"echo ack $i; done"]

    def setting_in_force(self, container: Container, setting: str) -> str:
        if self.name == "postgres":
            return self.sql(container, f"SHOW {setting}")
        return self.sql(container, f"SELECT @@{setting}")

    def create_table(self, container: Container) -> None:
        if self.name == "postgres":
            self.sql(container, "CREATE TABLE acks (id int PRIMARY KEY)")
        else:
            self.sql(container, "CREATE DATABASE lab; "
                                "CREATE TABLE lab.acks (id INT PRIMARY KEY) ENGINE=InnoDB")

    def count(self, container: Container, acked: int) -> tuple[int, int]:
        """(rows among 1..acked found, rows in all) after recovery."""
        table = "acks" if self.name == "postgres" else "lab.acks"
        found = int(self.sql(container, f"SELECT count(*) FROM {table} WHERE id <= {acked}"))
        total = int(self.sql(container, f"SELECT count(*) FROM {table}"))
        return found, total


ENGINES = {
    "postgres": Engine("postgres", "postgres", PGDATA,
                       ["pg_isready", "-q", "-h", "127.0.0.1", "-U", "postgres"]),
    "mariadb": Engine("mariadb", "root", MYSQL_DATA, ["healthcheck.sh"]),
}


@dataclass
class Writer:
    """One database's client loop; the controller keeps every acknowledgement it sees."""

    engine: Engine
    container: Container
    acks: list[tuple[int, float]] = field(default_factory=list)  # (row, seconds since start)
    thread: threading.Thread | None = None

    def start(self, started: float) -> None:
        def read() -> None:
            pending = b""
            try:
                output = self.container.exec_run(self.engine.insert_loop(),
                                                 user=self.engine.user, stream=True).output
                for chunk in output:
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if line.startswith(b"ack "):
                            self.acks.append((int(line[4:]), time.monotonic() - started))
            except Exception:  # the power cut breaks the stream: that is the experiment
                pass

        self.thread = threading.Thread(target=read, daemon=True)
        self.thread.start()

    @property
    def acked(self) -> int:
        return self.acks[-1][0] if self.acks else 0

    def rate(self) -> float:
        """Acknowledgements per second over the last ten seconds before the cut."""
        if len(self.acks) < 2:
            return 0.0
        last = self.acks[-1][1]
        recent = [a for a in self.acks if a[1] >= last - 10]
        span = recent[-1][1] - recent[0][1]
        return (len(recent) - 1) / span if span > 0 else 0.0


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    if host.is_local or machine.read_state(host.name) is None:
        raise UsageError(f"host {host.name}: the power-loss lab needs a lab VM "
                         "(`python -m labs vm up`, then --host vm1)")
    disk = params.data_disk or (host.lab_devices[0] if host.lab_devices else None)
    if not disk:
        raise UsageError(f"host {host.name} has no lab disk for the data")
    progress.expect(2 + 4 * params.cuts)
    rng = random.Random(params.seed)
    run_id = new_run_id(host.name)
    token = uuid.uuid4().hex[:6]
    recorder = RunRecorder(params.LAB, params.as_record(), seed=params.seed, run_id=run_id,
                           lab_host=host.name, host=host_facts(host))
    with recorder as rec, LabWorkspace(host, lab=params.LAB, run_id=run_id,
                                       on_command=rec.add_command) as ws:
        rec.add_command(params.command_line())
        progress.step(f"an ext4 file system on {disk}; the engines' images in the VM")
        ws.make_filesystem(disk, "ext4", label="powerloss")
        point = ws.mount(disk, "data")
        tags = {}
        for name in params.engines:
            choice = images.ensure_image(ws.engine(), False, name, None, progress)
            tags[name] = choice.tag
            digest = images.image_digest(ws.engine(), choice.tag)
            rec.add_tool_version(name, f"{choice.tag} {digest}")
        for cut in range(1, params.cuts + 1):
            cut_once(params, host, ws, rec, progress, rng, cut, token, tags, disk, point)
        progress.step("removing the containers and the file system; writing the run")
    return load_run(recorder.final_path)


def cut_once(params: Parameters, host: Host, ws: LabWorkspace, rec: RunRecorder,
             progress: Progress, rng: random.Random, cut: int, token: str,
             tags: dict[str, str], disk: str, point: str) -> None:
    legs = [(ENGINES[name], setting, value, kind) for name in params.engines
            for setting, value, kind in SETTINGS[name]]
    progress.step(f"power cut {cut}: starting {len(legs)} databases")
    writers: list[tuple[Writer, str, str, str]] = []
    for engine, setting, value, kind in legs:
        name = f"pl-{token}-{engine.name[:2]}{value}-{cut}"
        data = f"{point}/{name}"
        host.sudo(["mkdir", "-p", data], timeout_s=60)
        container = ws.run_container(engine.spec(name, tags[engine.name], data, setting, value),
                                     health_timeout_s=300)
        in_force = engine.setting_in_force(container, setting)
        if in_force.lower() not in (value.lower(), "on" if value == "1" else value):
            raise LabError(f"{name}: {setting} is {in_force!r}, not {value!r}")
        engine.create_table(container)
        writers.append((Writer(engine, container), setting, value, kind))
    progress.step(f"power cut {cut}: writing for about {params.write_s} s, then the cut")
    started = time.monotonic()
    for writer, *_ in writers:
        writer.start(started)
    cut_after_s = params.write_s * (2 / 3 + rng.random() / 3)
    time.sleep(cut_after_s)
    # The power cut: QEMU dies at once; the guest's memory is gone, its disks stay.
    power.power_cut(host.name)
    cut_at = time.monotonic() - started
    for writer, *_ in writers:
        writer.thread.join(timeout=60)
    acked = {writer.container.name: (writer.acked, writer.rate()) for writer, *_ in writers}
    progress.step(f"power cut {cut}: booting the VM again on the same disks")
    booted = time.monotonic()
    power.power_on(host.name, log=progress.detail)
    boot_s = time.monotonic() - booted
    ws.reconnect()
    # The same lab disk, mounted again where it was (the journal's mount entry still holds).
    ws.run_guarded(["mount", disk, point], [disk], timeout_s=300)
    progress.step(f"power cut {cut}: recovery and the count")
    for writer, setting, value, kind in writers:
        engine, name = writer.engine, writer.container.name
        container = ws.engine().containers.get(name)
        recovering = time.monotonic()
        container.start()
        wait_healthy(container, 600)
        recovery_s = time.monotonic() - recovering
        rows_acked, rate = acked[name]
        found, total = engine.count(container, rows_acked)
        rec.add_raw(f"cut{cut}/{name}.log", container.logs().decode(errors="replace"))
        rec.add_raw(f"cut{cut}/{name}-acks.txt",
                    "".join(f"{row} {at:.3f}\n" for row, at in writer.acks))
        dims = {"engine": engine.name, "setting": f"{setting}={value}", "safety": kind,
                "cut": cut}
        config = f"{engine.name}-{setting}-{value}"

        def add(metric: str, number: float, unit: str, dims: dict = dims,
                config: str = config) -> None:
            rec.add_result(config=config, workload="power-cut", metric=metric, value=number,
                           unit=unit, **dims)

        add("acknowledged", rows_acked, "count")
        add("acknowledged_found", found, "count")
        add("acknowledged_lost", rows_acked - found, "count")
        add("unacknowledged_found", total - found, "count")
        add("acks_per_second", rate, "tps")
        add("model_max_lost", model.max_lost(engine.name, setting, value, rate), "count")
        add("cut_after_s", cut_at, "s")
        add("recovery_s", recovery_s, "s")
        add("boot_s", boot_s, "s")
        ws.remove("container", name)
