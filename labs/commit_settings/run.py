"""Run the commit-settings lab in a lab VM: a database on a disk whose writes dm-log-writes
logs, a client committing rows, a cut, and a count of what each fault took.

The disk and the cut are the write-path lab's (labs/write_path/logged_disk.py): the first lab disk
holds two 256 MiB slices (`cs-data` under the database, `cs-replay` where the cut's disk is
rebuilt), the second the log. Each cut gets a new file system and a new database, made
through the logging device, so that the log holds every write the rebuilt disk needs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from labs.commit_settings import model
from labs.commit_settings.model import Setting
from labs.commit_settings.params import Parameters
from labs.errors import LabError
from labs.infra.acks import AckStream
from labs.infra.hosts import CommandFailed, Host
from labs.infra.lab_run import LabRun
from labs.infra.vm import machine
from labs.infra.vm.servers import SERVERS
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder
from labs.write_path.logged_disk import LoggedDisk

SLICE_SECTORS = 524288  # 256 MiB in 512-byte sectors: a database with its logs, and room
# Each server's own user and process name in the VM: the cut freezes those processes only.
PROCESSES = {"postgres": ("postgres", "postgres"), "mariadb": ("mysql", "mariadbd")}
SERVER_COMMANDS = ("mariadbd", "mariadb-install-db", "psql", "runuser", "setsid", "pgrep")


@contextmanager
def timed(steps_s: dict[str, float], name: str) -> Iterator[None]:
    """How long a step of the cut took (seconds), kept in the cut's raw file."""
    began = time.monotonic()
    try:
        yield
    finally:
        steps_s[name] = round(time.monotonic() - began, 3)


class Bench:
    """The lab's logged disk in the VM, the probe beside it, and one cut at a time."""

    def __init__(self, ws: LabWorkspace, rec: RunRecorder, params: Parameters,
                 progress: Progress) -> None:
        self.ws, self.rec, self.params, self.progress = ws, rec, params, progress
        self.disk = LoggedDisk(ws, prefix="cs", slice_sectors=SLICE_SECTORS)
        self.sudo = self.disk.sudo

    def cut(self, setting: Setting, number: int) -> dict[str, Any]:
        """One trial: a new database through the log, commits, the cut, a count per fault."""
        mounted = self.disk.new_file_system("db")
        data = f"{mounted}/{setting.server}"
        steps_s: dict[str, float] = {}
        with timed(steps_s, "new database"):
            in_force = self.start_empty(setting, data)
        with timed(steps_s, "commits and cut"):
            trial = self.commit_and_cut(setting, data)
        acked = trial["acked"]
        with timed(steps_s, "process crash"):
            found = {"process crash": self.count_after_restart(setting, data, acked)}
            self.ws.remove("server", data)
            self.disk.close_log(mounted)
        for fault, mark in model.MARKS.items():
            with timed(steps_s, fault):
                found[fault] = self.rebuilt_count(setting, mark, acked)
        return {"setting": setting.name, "cut": number, "in_force": in_force,
                "trial": trial, "steps_s": steps_s, **found}

    def start_empty(self, setting: Setting, data: str) -> dict[str, str]:
        """A new database with the setting and an empty table, made durable before the
        commits start (a `sync`, whatever the setting): what the cut can take is then the
        commits alone. Returns what the server says of the setting (and of InnoDB's log
        buffering)."""
        server = SERVERS[setting.server]
        self.sudo(server.init_command(data))
        self.ws.start_server(data, server.start_command(data, setting.setting, setting.value),
                             stop=server.stop_command(data), pid_file=server.pid_file(data))
        self.sql(setting, data, server.create_table_sql())
        if setting.server == "postgres":
            self.sql(setting, data, "CHECKPOINT")
        self.sudo(["sync"])
        names = [setting.setting] + (["innodb_log_file_buffering"]
                                     if setting.server == "mariadb" else [])
        in_force = {name: self.sql(setting, data, server.setting_sql(name)) for name in names}
        if not server.setting_in_force(in_force[setting.setting], setting.value):
            raise LabError(f"{setting.label}: the server runs with {in_force[setting.setting]}")
        return in_force

    def sql(self, setting: Setting, data: str, statement: str) -> str:
        return self.sudo(SERVERS[setting.server].sql_command(data, statement),
                         timeout_s=300).stdout.strip()

    def commit_and_cut(self, setting: Setting, data: str) -> dict[str, Any]:
        """The client commits for write_s seconds; then the probe cuts (labs/write_path/
        probe.py `cut`): the server frozen, the marks, the server killed."""
        # Each acknowledgement stamped in the VM, on the clock the cut is timed by.
        writer = AckStream(f"{SERVERS[setting.server].insert_loop(data)} | "
                           f"python3 -u {self.disk.probe} stamp")
        self.rec.add_command(f"[{self.ws.host.name}] {writer.command}")
        started = time.monotonic()
        writer.start(self.ws.host, started)
        why = writer.wait_for_first(timeout_s=120)
        if why is not None:
            raise LabError(f"{setting.label}: the client committed nothing ({why})")
        self.progress.detail(f"{setting.label}: the first commit is in; committing "
                             f"{self.params.write_s:g} s more")
        time.sleep(self.params.write_s)
        user, process = PROCESSES[setting.server]
        cut = self.disk.probe_json("cut", "--dm", self.disk.logged_name, "--user", user,
                                   "--name", process, devices=[self.disk.logged])
        # The client ends with its server; what it printed before the freeze still comes.
        writer.thread.join(timeout=60)
        if writer.thread.is_alive():
            raise LabError(f"{setting.label}: the client went on after its server was killed")
        frozen_at = cut["frozen_at_s"]
        return {"acked": writer.acked, "processes_frozen": cut["processes"],
                "writing_s": round(frozen_at - writer.host_times_s[0], 6),
                "ack_age_s": [round(frozen_at - at, 6) for at in writer.host_times_s],
                "rows": [row for row, _ in writer.acks]}

    def count_after_restart(self, setting: Setting, data: str, acked: int) -> dict[str, Any]:
        """Start the server on `data` (its recovery runs), then which acknowledged rows are
        there; a server that does not start, or a table that is gone, keeps none."""
        server = SERVERS[setting.server]
        try:
            self.ws.restart_server(data, server.restart_command(data, setting.setting,
                                                                setting.value))
        except CommandFailed:
            return {"started": False, "table": False, "rows": [], "lost": acked}
        read = self.sudo(server.sql_command(data, f"SELECT id FROM {server.table()} "
                                                  f"WHERE id <= {acked} ORDER BY id"),
                         check=False)
        rows = [int(row) for row in read.stdout.split()] if read.ok else []
        return {"started": True, "table": read.ok, "rows": rows, "lost": acked - len(rows)}

    def rebuilt_count(self, setting: Setting, mark: str, acked: int) -> dict[str, Any]:
        """The disk rebuilt from the log up to `mark` and mounted, the server started on it
        (its recovery runs) and counted."""
        replayed, replay = self.disk.rebuilt(mark)
        data = f"{replayed}/{setting.server}"
        server = SERVERS[setting.server]
        # Journaled before it starts, so `clean` stops it should the lab die here.
        self.ws.track("server", data, stop=server.stop_command(data),
                      pid_file=server.pid_file(data))
        try:
            count = self.count_after_restart(setting, data, acked)
            count["log"] = self.sudo(["cat", "--", server.log_file(data)], check=False).stdout
        finally:
            self.ws.remove("server", data)
            self.ws.remove("mount", replayed)
        return {**count, "replay": replay}


def record_cut(rec: RunRecorder, found: dict[str, Any]) -> None:
    setting = model.SETTINGS[found["setting"]]
    config = f"{setting.name}-cut{found['cut']}"
    # The model's most is not recorded: the findings compute it from the ages kept here.
    rec.add_raw(f"cuts/{config}.json", json.dumps(found, indent=1))
    trial = found["trial"]
    ages = dict(zip(trial["rows"], trial["ack_age_s"], strict=True))
    dims = {"setting": setting.name, "cut": found["cut"]}
    rec.add_result(config=config, workload="commits", metric="acked", value=trial["acked"],
                   unit="count", **dims)
    for fault in model.FAULTS:
        seen = found[fault]
        kept = set(seen["rows"])
        lost_ages = [age for row, age in ages.items() if row not in kept]
        slug = fault.replace(" ", "_")
        add = {"config": config, "workload": slug, "fault": fault, **dims}
        rec.add_result(metric="lost", value=seen["lost"], unit="count", **add)
        rec.add_result(metric="started", value=int(seen["started"]), unit="count", **add)
        if lost_ages:  # how old the oldest lost commit was at the cut
            rec.add_result(metric="oldest_lost_age_s", value=max(lost_ages), unit="s", **add)


def steps(params: Parameters) -> list[str]:
    """The run's steps, in order: the set-up, one cut per setting and round, the record."""
    return (["setting up the two 256 MiB slices and the probe"]
            + ["a cut"] * (params.cuts * len(params.settings)) + ["writing the recorded run"])


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    machine.require_lab_vm(host, params.LAB, SERVER_COMMANDS,
                           "ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || echo initdb")
    settings = [model.SETTINGS[name] for name in params.settings]
    progress.plan(steps(params))
    with LabRun(params, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        progress.step("setting up the two 256 MiB slices and the probe")
        bench = Bench(ws, rec, params, progress)
        bench.disk.set_up()
        rec.add_tool_version("kernel", host.run(["uname", "-r"], timeout_s=60).stdout.strip())
        for number in range(1, params.cuts + 1):
            for setting in settings:
                progress.step("a cut", f"{number}/{params.cuts}: {setting.label}, "
                                       f"{params.write_s:g} s of commits")
                found = bench.cut(setting, number)
                record_cut(rec, found)
                progress.detail(f"{setting.label}: {found['trial']['acked']} acknowledged; lost "
                                + ", ".join(f"{found[fault]['lost']} to the {fault}"
                                            for fault in model.FAULTS))
        progress.step("writing the recorded run")
    return lab_run.recorded()
