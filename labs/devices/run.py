"""Run the devices lab: a lab VM's data disks throttled into cloud volumes, then measured.

QEMU throttles each data disk below the guest kernel, set at run time through QEMU's
monitor (labs/infra/vm/throttle.py): /dev/vdb as gp3 and /dev/vdc as sc1, both of the
article's size, each I/O counted the way AWS publishes it (labs/models/cloud_volume.py).
The throttles are journaled first; the end of the run (or `python -m labs clean`) puts both
disks back to how the VM was booted.

On `--host local` nothing is emulated: the lab measures the reader's own disk through a loop
device over a new file in the lab's work folder (direct I/O; fio, dd and sysbench touch that
device only), with the same fio sweeps and sysbench run, and without the burst and MariaDB
steps (they need QEMU's throttle and the VM's packages).

Steps: the disks' measured region is written once (so reads read data, not holes); fio's
sweeps on the VM's unthrottled disk, on gp3 and on sc1 held in its burst; a time-scaled sc1
that bursts and then falls to its baseline; the article's `sysbench fileio` run on an ext4
file system on each volume; the article's second experiment, a MariaDB stored procedure that
inserts rows one at a time into a MyISAM temporary table, in 1 to 10 sessions at once, with
the server's temporary folder on each volume.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from typing import Any

from labs.devices.params import Parameters
from labs.errors import LabError, UsageError
from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.infra.vm import machine, throttle
from labs.infra.vm.servers import SERVERS
from labs.infra.workspace import LabWorkspace
from labs.models import cloud_volume
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder
from labs.tools import fio as fio_tool
from labs.tools import sysbench

REGION_MIB = 256  # the part of each disk fio reads and writes (written once first)
SWEEP_DEPTH = 16  # the block-size sweep's queue depth
SEQUENTIAL_DEPTH = 4
BURST_VOLUME_GIB = 1024  # a 1 TiB sc1: its baseline (12 MiB/s) is above QEMU's floor
DISKS = {"fast": "/dev/vdb", "slow": "/dev/vdc"}
LOCAL_FILE_MIB = 1024  # the loop device's file on the reader's disk (sparse; holds the fio
#                        region, then sysbench's files on ext4)

# The article's procedure, in this lab's words: a MyISAM temporary table with an
# auto-increment key and two more indexes, filled one INSERT (one statement) at a time.
# MyISAM, because an InnoDB temporary table would live in InnoDB's own temporary
# tablespace in the data folder, not in the server's tmpdir on the volume.
INSERT_PROCEDURE = """CREATE DATABASE lab;
CREATE PROCEDURE lab.insert_rows(IN row_count INT)
BEGIN
  DECLARE inserted INT DEFAULT 0;
  DECLARE started DATETIME(6);
  CREATE TEMPORARY TABLE scratch (
    id INT AUTO_INCREMENT PRIMARY KEY, day DATE, a INT, b INT,
    INDEX by_day (day), INDEX by_a (a)) ENGINE=MyISAM;
  SET started = NOW(6);
  WHILE inserted < row_count DO
    INSERT INTO scratch (day, a, b) VALUES (CURRENT_DATE - INTERVAL FLOOR(RAND() * 14) DAY,
                                            FLOOR(RAND() * 100), FLOOR(RAND() * 100));
    SET inserted = inserted + 1;
  END WHILE;
  SELECT TIMESTAMPDIFF(MICROSECOND, started, NOW(6)) / 1000000;
  DROP TEMPORARY TABLE scratch;
END"""


def sessions_script(socket: str, tmpdir: str, device: str, sessions: int, rows: int,
                    scratch: str) -> str:
    """Shell that runs `sessions` clients at once, each calling the procedure once, and
    prints what parse_sessions reads: each session's seconds, the wall time, the disk's
    writes before and after (/sys/block/<dev>/stat: requests, sectors) and the largest size
    the tmpdir reached (sampled every half second)."""
    stat = f"/sys/block/{device.removeprefix('/dev/')}/stat"
    call = shlex.join(["mariadb", f"--socket={socket}", "-N", "-B",
                       "-e", f"CALL lab.insert_rows({int(rows)})"])
    q = shlex.quote
    return (f"set -u; out={q(scratch)}; rm -f \"$out\".*; "
            f"echo disk-before $(awk '{{print $5, $7}}' {stat}); "
            # The sampler stops by itself once this shell is gone (a killed run leaves none).
            f"( while kill -0 $$ 2>/dev/null; do du -sb {q(tmpdir)} | cut -f1 >> \"$out\".size; "
            "sleep 0.5; done ) & "
            "monitor=$!; start=$(date +%s.%N); pids=''; "
            f"for i in $(seq {int(sessions)}); do {call} > \"$out\".$i & pids=\"$pids $!\"; done; "
            "failed=0; for pid in $pids; do wait $pid || failed=1; done; "
            "end=$(date +%s.%N); kill $monitor; wait $monitor 2>/dev/null; "
            f"echo disk-after $(awk '{{print $5, $7}}' {stat}); "
            "echo wall $(awk \"BEGIN {print $end - $start}\"); "
            f"for i in $(seq {int(sessions)}); do echo session $i $(cat \"$out\".$i); done; "
            "echo tables-max-bytes $(sort -n \"$out\".size | tail -n 1); "
            "rm -f \"$out\".*; exit $failed")


def parse_sessions(text: str, what: str) -> dict[str, Any]:
    """Read sessions_script's output: {'session_s': [..], 'wall_s', 'write_requests',
    'written_bytes', 'tables_max_bytes'}; LabError naming `what` if anything is missing."""
    lines: dict[str, list[str]] = {}
    session_s = []
    for line in text.splitlines():
        words = line.split()
        if words and words[0] == "session" and len(words) == 3:
            session_s.append(float(words[2]))
        elif words:
            lines[words[0]] = words[1:]
    try:
        before = [int(v) for v in lines["disk-before"]]
        after = [int(v) for v in lines["disk-after"]]
        result = {"session_s": session_s, "wall_s": float(lines["wall"][0]),
                  "write_requests": after[0] - before[0],
                  "written_bytes": (after[1] - before[1]) * 512,
                  "tables_max_bytes": int(lines["tables-max-bytes"][0])}
    except (KeyError, IndexError, ValueError) as e:
        raise LabError(f"{what}: unexpected output ({e}): {text.strip()[-200:]!r}") from None
    if not session_s:
        raise LabError(f"{what}: no session reported its time: {text.strip()[-200:]!r}")
    return result


@dataclass
class Target:
    """Where the lab measures: `disks` (fast/slow -> device), and each volume as (name, disk,
    QEMU throttle or None). `emulated`: a lab VM whose disks QEMU throttles."""
    disks: dict[str, str]
    volumes: list[tuple[str, str, cloud_volume.QemuThrottle | None]]
    emulated: bool


def vm_target(params: Parameters) -> Target:
    return Target(dict(DISKS), volumes(params), emulated=True)


def local_target(loop_device: str) -> Target:
    return Target({"fast": loop_device}, [("local", "fast", None)], emulated=False)


def volumes(params: Parameters) -> list[tuple[str, str, cloud_volume.QemuThrottle | None]]:
    """(name, VM data disk, QEMU throttle or None) for each volume fio measures."""
    gp3 = cloud_volume.qemu_throttle(cloud_volume.Gp3(params.size_gib))
    sc1 = cloud_volume.sc1_phase_throttle(cloud_volume.Sc1(params.size_gib), "burst")
    return [("unthrottled", "fast", None), ("gp3", "fast", gp3), ("sc1", "slow", sc1)]


def sysbench_plan(target: Target) -> list[tuple[str, str, bool]]:
    """(volume, disk, repeat) in the order sysbench runs them: on a disk with the unthrottled
    reference and a throttled volume, the reference runs again after it, so the page can
    show how much two runs of the same disk differ."""
    plan = []
    for disk in target.disks:
        names = [name for name, d, _ in target.volumes if d == disk]
        plan += [(name, disk, False) for name in names]
        if "unthrottled" in names and len(names) > 1:
            plan.append(("unthrottled", disk, True))
    return plan


def steps(params: Parameters, emulated: bool) -> list[str]:
    """The run's steps, in order: (on the reader's machine) the loop device; the prefill,
    fio on each volume, (in a lab VM) sc1's burst; a file system per disk, sysbench per
    volume, (in a lab VM) MariaDB's servers and each session count; the teardown."""
    # The steps follow the target's shape; a loop device's name changes none of them.
    target = vm_target(params) if emulated else local_target("(the loop device)")
    names = [] if emulated else ["a loop device over a new file"]
    names += (["writing the first MiB of each disk once"]
              + ["fio on a volume"] * len(target.volumes) + (["sc1's burst"] if emulated else [])
              + ["a file system"] * len(target.disks)
              + ["sysbench fileio rndrw"] * len(sysbench_plan(target)))
    if emulated:
        names += ["MariaDB: a server per disk"] + ["MariaDB inserts"] * len(params.sessions)
    return names + ["removing the file systems"]


def burst_throttle(params: Parameters) -> cloud_volume.QemuThrottle:
    """A 1 TiB sc1 whose bucket is scaled so the burst lasts about params.burst_s."""
    vol = cloud_volume.Sc1(BURST_VOLUME_GIB)
    return cloud_volume.qemu_throttle(vol, time_scale=vol.burst_seconds() / params.burst_s)


def fio_jobs(params: Parameters, device: str,
             limit: cloud_volume.QemuThrottle | None = None
             ) -> list[tuple[fio_tool.FioJob, dict[str, Any]]]:
    """The sweeps on one volume: (job, the dimensions its results carry)."""

    def common(block_kib: int, depth: int) -> dict[str, Any]:
        # fio leaves out what completes during its ramp; a throttled queue of `depth`
        # requests needs depth / rate seconds to turn over once, so the ramp covers that
        # (else the first requests' wait is counted against the measured window).
        turnover_s = depth / limit.predicted_iops(block_kib * 1024) if limit else 0.0
        return {"filename": device, "size": f"{REGION_MIB}M", "runtime_s": params.fio_s,
                "seed": params.seed, "options": {"ramp_time": math.ceil(1 + turnover_s)}}

    jobs = []
    for depth in params.depths:
        jobs.append((fio_tool.FioJob(name=f"depth-randread-16k-qd{depth}", rw="randread", bs="16k",
                                     iodepth=depth, **common(16, depth)),
                     {"workload": "depth-sweep", "pattern": "random", "block_kib": 16,
                      "depth": depth}))
    for block in params.blocks_kib:
        jobs.append((fio_tool.FioJob(name=f"block-randread-{block}k-qd{SWEEP_DEPTH}", rw="randread",
                                     bs=f"{block}k", iodepth=SWEEP_DEPTH,
                                     **common(block, SWEEP_DEPTH)),
                     {"workload": "block-sweep", "pattern": "random", "block_kib": block,
                      "depth": SWEEP_DEPTH}))
    jobs.append((fio_tool.FioJob(name=f"sequential-read-1024k-qd{SEQUENTIAL_DEPTH}", rw="read",
                                 bs="1m", iodepth=SEQUENTIAL_DEPTH,
                                 **common(1024, SEQUENTIAL_DEPTH)),
                 {"workload": "sequential", "pattern": "sequential", "block_kib": 1024,
                  "depth": SEQUENTIAL_DEPTH}))
    jobs.append((fio_tool.FioJob(name=f"write-randwrite-16k-qd{SWEEP_DEPTH}", rw="randwrite",
                                 bs="16k", iodepth=SWEEP_DEPTH, **common(16, SWEEP_DEPTH)),
                 {"workload": "write", "pattern": "random", "block_kib": 16,
                  "depth": SWEEP_DEPTH}))
    # Each job's results are told apart by its name (the depth sweep at 16 and the block
    # sweep at 16 KiB are the same fio job with different roles).
    assert len({job.name for job, _ in jobs}) == len(jobs)
    return jobs


def sysbench_options(params: Parameters) -> sysbench.FileioOptions:
    """The article's run (rndrw, 16 KiB, one thread, fsync every 100 requests, a report a
    second), with O_DIRECT so the guest's page cache cannot answer for the volume."""
    return sysbench.FileioOptions(total_size_mib=params.sysbench_mib, test_mode="rndrw",
                                  direct=True, time_s=params.sysbench_s, report_interval_s=1,
                                  rand_seed=params.seed)


def _record_throttle(rec: RunRecorder, name: str, limit: cloud_volume.QemuThrottle | None,
                     workload: str) -> None:
    options = limit.options() if limit else {}
    for option, unit in (("throttling.iops-total", "iops"), ("throttling.bps-total", "B/s"),
                         ("throttling.iops-size", "bytes"), ("throttling.iops-total-max", "iops"),
                         ("throttling.iops-total-max-length", "s"),
                         ("throttling.bps-total-max", "B/s")):
        rec.add_result(config=name, workload=workload, metric=option.removeprefix("throttling."),
                       value=options.get(option, 0), unit=unit, volume=name)


class DevicesLab:
    """The lab's steps on one host (a lab VM, or local); results go to a RunRecorder."""

    def __init__(self, params: Parameters, ws: LabWorkspace, rec: RunRecorder,
                 progress: Progress, target: Target):
        self.params, self.ws, self.rec, self.progress = params, ws, rec, progress
        self.host, self.target = ws.host, target

    def throttle(self, disk: str, limit: cloud_volume.QemuThrottle | None) -> None:
        if not self.target.emulated:
            assert limit is None  # nothing to throttle on the reader's own disk
            return
        self.rec.add_command(f"[qmp {self.host.name}] block_set_io_throttle {disk} "
                             + (limit.drive_suffix().lstrip(",") if limit else "(none)"))
        throttle.throttle_in_workspace(self.ws, disk, limit.options() if limit else {})

    def prefill(self) -> None:
        self.progress.step("writing the first MiB of each disk once", f"{REGION_MIB} MiB")
        for disk, device in self.target.disks.items():
            self.throttle(disk, None)
            # Safe: a lab disk of the lab VM (the guard checks it), nothing of the reader's.
            self.ws.run_guarded(["dd", "if=/dev/urandom", f"of={device}", "bs=1M",
                                 f"count={REGION_MIB}", "oflag=direct", "status=none"],
                                [device], timeout_s=600)

    def fio_sweeps(self) -> None:
        for name, disk, limit in self.target.volumes:
            device = self.target.disks[disk]
            jobs = fio_jobs(self.params, device, limit)
            self.progress.step("fio on a volume", f"{name} ({device}): {len(jobs)} measurements "
                               f"of {self.params.fio_s} s"
                               + (f", {limit.emulates}" if limit else ""))
            self.throttle(disk, limit)
            _record_throttle(self.rec, name, limit, "throttle")
            for job, dims in jobs:
                # One fio process per measurement: jobs of one process set up side by side,
                # and the first measurement on sc1 ran slow among them.
                argv = fio_tool.fio_command([job], output_format="json")
                # Safe: fio reads and writes the lab disk's first REGION_MIB only (guarded).
                out = self.ws.run_guarded(argv, [device], timeout_s=self.params.fio_s + 300).stdout
                self.rec.add_raw(f"fio/{name}/{job.name}.json", out)
                document = fio_tool.load_fio_json(out, f"fio {job.name} on {name}")
                errors = fio_tool.job_errors(document)
                if any(errors.values()):
                    raise LabError(f"fio {job.name} on {name} failed: {errors}")
                for row in fio_tool.fio_rows(document, f"fio {job.name} on {name}"):
                    for metric, value, unit in (
                            ("iops", row["iops"], "iops"),
                            ("mib_s", row["bw_bytes_s"] / 2**20, "MiB/s"),
                            ("lat_mean_ms", row["lat_mean_us"] / 1000, "ms"),
                            ("lat_p99_ms", (row["clat_p99_us"] or 0) / 1000, "ms")):
                        self.rec.add_result(config=name, workload=dims["workload"],
                                            metric=metric, value=round(value, 4), unit=unit,
                                            volume=name, op=row["op"], pattern=dims["pattern"],
                                            block_kib=dims["block_kib"], depth=dims["depth"])
                    self.progress.detail(f"{name} {job.name}: {row['iops']:,.1f} IOPS, "
                                         f"{row['lat_mean_us'] / 1000:.2f} ms")

    def burst(self) -> None:
        limit = burst_throttle(self.params)
        seconds = round(2 * limit.burst_seconds) + 10
        self.progress.step("sc1's burst", f"{BURST_VOLUME_GIB} GiB, time scaled: {seconds} s "
                           "of 1 MiB sequential reads, burst then baseline")
        device = DISKS["slow"]
        _record_throttle(self.rec, "sc1-burst", limit, "burst-throttle")
        self.throttle("slow", limit)
        prefix = "/tmp/storage-labs-devices-burst"
        job = fio_tool.FioJob(name="burst", filename=device, rw="read", bs="1m",
                              iodepth=SEQUENTIAL_DEPTH, size=f"{REGION_MIB}M",
                              runtime_s=seconds,
                              options={"write_bw_log": prefix, "log_avg_msec": 1000})
        argv = fio_tool.fio_command([job], output_format="json")
        # Safe: reads only, of the lab disk (guarded); the log goes to a /tmp file of its own.
        self.ws.run_guarded(argv, [device], timeout_s=seconds + 180)
        log = self.host.sudo(f"cat {prefix}_bw.1.log; rm -f {prefix}_bw.1.log",
                             timeout_s=60).stdout
        self.rec.add_raw("fio/sc1-burst_bw.log", log)
        for row in fio_tool.parse_log(log, "the burst's bandwidth log"):
            self.rec.add_result(config="sc1-burst", workload="burst", metric="mib_s",
                                value=round(row["value"] / 1024, 3), unit="MiB/s",
                                volume="sc1-burst", second=round(row["time_ms"] / 1000, 1))
        self.rec.add_result(config="sc1-burst", workload="burst", metric="model_burst_s",
                            value=round(limit.burst_seconds, 2), unit="s", volume="sc1-burst")

    def file_systems(self) -> dict[str, str]:
        """An ext4 file system on each disk, mounted for the rest of the run: disk -> folder."""
        mount_points = {}
        for disk, device in self.target.disks.items():
            self.progress.step("a file system", f"ext4 on {device}")
            self.throttle(disk, None)
            self.ws.make_filesystem(device, "ext4", label=f"dev-{disk}")
            mount_points[disk] = self.ws.mount(device, f"fileio-{disk}")
        return mount_points

    def sysbench_runs(self, mount_points: dict[str, str]) -> None:
        options = sysbench_options(self.params)
        limits = {name: limit for name, _, limit in self.target.volumes}
        plan = sysbench_plan(self.target)
        for disk, mount_point in mount_points.items():
            self.progress.detail(f"sysbench fileio prepare: {options.total_size_mib} MiB of "
                                 f"files on {self.target.disks[disk]}")
            self.host.sudo(f"cd {shlex.quote(mount_point)} && "
                           + shlex.join(sysbench.fileio_command("prepare", options))
                           + " >/dev/null", timeout_s=1800)
            for name, _, repeat in [step for step in plan if step[1] == disk]:
                label = f"{name}-again" if repeat else name
                self.progress.step("sysbench fileio rndrw", f"on {name}"
                                   + (" again" if repeat else "") + f": {options.time_s} s")
                self.throttle(disk, limits[name])
                # Nothing of the files stays in the guest's memory from the preparation.
                self.host.sudo("sync && echo 3 > /proc/sys/vm/drop_caches", timeout_s=300)
                command = (f"cd {shlex.quote(mount_point)} && "
                           + shlex.join(sysbench.fileio_command("run", options)))
                out = self.host.sudo(command, timeout_s=options.time_s + 600).stdout
                self.rec.add_raw(f"sysbench/{label}.txt", out)
                result = sysbench.parse_fileio(out, f"sysbench fileio on {label}")
                for metric, value, unit in (
                        ("reads_per_s", result.reads_per_s, "iops"),
                        ("writes_per_s", result.writes_per_s, "iops"),
                        ("fsyncs_per_s", result.fsyncs_per_s, "iops"),
                        ("read_mib_s", result.read_mib_per_s, "MiB/s"),
                        ("written_mib_s", result.written_mib_per_s, "MiB/s"),
                        ("latency_avg_ms", result.general.latency.avg_ms, "ms")):
                    self.rec.add_result(config=name, workload=("sysbench-rndrw-repeat" if repeat
                                                               else "sysbench-rndrw"),
                                        metric=metric, value=value, unit=unit, volume=name)
                self.progress.detail(f"{label}: {result.reads_per_s:,.1f} reads/s, "
                                     f"{result.writes_per_s:,.1f} writes/s")
            self.throttle(disk, None)
            self.host.sudo(f"cd {shlex.quote(mount_point)} && "
                           + shlex.join(sysbench.fileio_command("cleanup", options))
                           + " >/dev/null", timeout_s=600)

    def mariadb_inserts(self, mount_points: dict[str, str]) -> None:
        """The article's stored procedure: one server per disk, its temporary tables on that
        disk's file system; the volumes take turns at each session count, so a slow spell of
        the emulated processors does not fall on one volume alone."""
        server = SERVERS["mariadb"]
        sockets, tmpdirs = {}, {}
        self.progress.step("MariaDB: a server per disk", f"in {self.host.name}, its "
                           "temporary folder on the disk")
        for disk, mount_point in mount_points.items():
            data = f"{self.ws.work_dir}/mariadb-{disk}"  # on the VM's own disk, not the volume
            tmpdirs[disk], sockets[disk] = f"{mount_point}/mariadb-tmp", f"{data}/server.sock"
            # One after the other: two bootstraps side by side once crashed in 1 GiB.
            self.host.sudo(f"install -d -o mysql -g mysql {shlex.quote(tmpdirs[disk])} && "
                           + server.init_command(data), timeout_s=900)
            self.ws.start_server(data, server.start_command(data, "tmpdir", tmpdirs[disk]),
                                 stop=server.stop_command(data), pid_file=server.pid_file(data))
            self.host.sudo(f"mariadb --socket={shlex.quote(sockets[disk])} --delimiter='$$' "
                           f"<<'SQL'\n{INSERT_PROCEDURE}\nSQL", timeout_s=300)
        for sessions in self.params.sessions:
            plural = "s" if sessions > 1 else ""
            self.progress.step("MariaDB inserts", f"{sessions} session{plural} of "
                               f"{self.params.rows:,} rows, on each volume in turn")
            for name, disk, limit in self.target.volumes:
                self.throttle(disk, limit)
                self.host.sudo("sync && echo 3 > /proc/sys/vm/drop_caches", timeout_s=300)
                script = sessions_script(sockets[disk], tmpdirs[disk], self.target.disks[disk],
                                         sessions, self.params.rows,
                                         f"{self.ws.work_dir}/sessions")
                self.rec.add_command(f"[{self.host.name}] {sessions} x mariadb -e "
                                     f"'CALL lab.insert_rows({self.params.rows})' at once")
                out = self.host.sudo(script, timeout_s=3600).stdout
                self.rec.add_raw(f"mariadb/{name}-{sessions}-sessions.txt", out)
                result = parse_sessions(out, f"MariaDB inserts on {name}, {sessions} sessions")
                dims = {"volume": name, "sessions": sessions, "rows": self.params.rows}
                for i, seconds in enumerate(result["session_s"], start=1):
                    self.rec.add_result(config=name, workload="mariadb-inserts",
                                        metric="session_s", value=seconds, unit="s",
                                        session=i, **dims)
                for metric, value, unit in (
                        ("wall_s", result["wall_s"], "s"),
                        ("write_requests", result["write_requests"], "count"),
                        ("written_mib", round(result["written_bytes"] / 2**20, 3), "MiB"),
                        ("tables_max_mib", round(result["tables_max_bytes"] / 2**20, 3),
                         "MiB")):
                    self.rec.add_result(config=name, workload="mariadb-inserts",
                                        metric=metric, value=value, unit=unit, **dims)
                self.progress.detail(f"{name}: {result['wall_s']:.1f} s, "
                                     f"{result['written_bytes'] / 2**20:.1f} MiB written")
        for disk in mount_points:
            self.throttle(disk, None)
            self.ws.remove("server", f"{self.ws.work_dir}/mariadb-{disk}")


LOCAL_TOOLS = ("fio", "sysbench", "mkfs.ext4", "dd", "losetup")
VM_TOOLS = ("fio", "sysbench", "mkfs.ext4", "dd", "mariadbd", "mariadb-install-db", "setsid", "du")


def check_local_host(host: Host) -> None:
    """Refuse, in one line, a local host without root or without the lab's tools."""
    if not host.sudo("true", check=False, timeout_s=60).ok:
        raise UsageError(f"host {host.name}: the devices lab needs root there (a loop device "
                         "over a file of its own): run it with sudo")
    missing = host.missing_commands(LOCAL_TOOLS)
    if missing:
        raise UsageError(f"host {host.name} lacks {', '.join(missing)}: install them "
                         "(Debian: apt-get install fio sysbench e2fsprogs util-linux)")


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    if host.is_local:
        check_local_host(host)
    else:
        machine.require_lab_vm(host, params.LAB, VM_TOOLS)
        throttle.current_throttle(host.name, "fast")  # the monitor answers, or one clear line
        volumes(params), burst_throttle(params)  # refuses limits QEMU cannot honour, first
    progress.plan(steps(params, emulated=not host.is_local))
    with LabRun(params, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        tools = [("fio", "fio --version"), ("sysbench", "sysbench --version")]
        if host.is_local:
            progress.step("a loop device over a new file", f"{LOCAL_FILE_MIB} MiB in "
                          f"{ws.work_dir} (direct I/O)")
            target = local_target(ws.make_loop_device("disk", LOCAL_FILE_MIB, direct_io=True))
        else:
            target = vm_target(params)
            tools.append(("mariadb", "mariadbd --version"))
        for tool, command in tools:
            rec.add_tool_version(tool, host.sudo(command, timeout_s=60).stdout.strip())
        lab = DevicesLab(params, ws, rec, progress, target)
        lab.prefill()
        lab.fio_sweeps()
        if target.emulated:
            lab.burst()
        mount_points = lab.file_systems()
        lab.sysbench_runs(mount_points)
        if target.emulated:  # the server comes from the lab VM's packages
            lab.mariadb_inserts(mount_points)
        progress.step("removing the file systems", "the disks' throttles back as booted"
                      if target.emulated else "and the loop device with its file")
    return lab_run.recorded()
