"""Run the write-mostly lab on a lab host: legs, arrays, fio, per-leg counters.

The drills (drills.py) are a mixin of the same lab object. Everything the lab creates (the
dm-delay over the slow leg, each md array) goes through the LabWorkspace, which guards
every device and journals every resource, so `python -m labs clean` can undo a killed run.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import asdict, dataclass
from typing import Any

from labs.errors import LabError, UsageError
from labs.infra.facts import host_facts
from labs.infra.hosts import CommandResult, Host
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder, load_run, new_run_id
from labs.tools import fio as fio_tool
from labs.tools import mdadm as md
from labs.write_mostly.drills import DataCheckFailed, Drills
from labs.write_mostly.params import (
    BLOCK_SIZE,
    CONFIGURATIONS,
    DATA_BLOCK_SIZE,
    MD_NAME,
    WORKLOADS,
    Configuration,
    Parameters,
    major_steps,
)

# (fio's JSON, its rows, the legs' counter deltas) for one fio run
FioOutcome = tuple[dict[str, Any], list[dict[str, Any]], dict[str, md.DiskStat]]


@dataclass
class Legs:
    """The devices md uses (`fast`, `slow`) and the disks under them, whose counters we read."""

    fast: str
    slow: str
    fast_disk: str = ""
    slow_disk: str = ""

    def __post_init__(self) -> None:
        self.fast_disk = self.fast_disk or self.fast
        self.slow_disk = self.slow_disk or self.slow

    def names(self) -> dict[str, str]:
        return {"fast": self.fast_disk.removeprefix("/dev/"),
                "slow": self.slow_disk.removeprefix("/dev/")}


@dataclass

class WriteMostlyLab(Drills):
    """The lab's steps on one host; results go to a labs.records.RunRecorder."""

    def __init__(self, host: Host, workspace: LabWorkspace, recorder: RunRecorder,
                 params: Parameters, legs: Legs, progress: Progress):
        self.host = host
        self.ws = workspace
        self.run = recorder
        self.params = params
        self.profile = params.settings
        self.legs = legs
        self.progress = progress
        self.fio_runs = 0
        self.kernel_paths: dict[str, str] = {}  # /dev/mapper/x -> /dev/dm-N

    def add_slow_delay(self) -> None:
        """Put a dm-delay device over the slow disk: latency on every I/O, not only a cap."""
        ms = self.params.slow_delay_ms
        if ms <= 0:
            return
        self.progress.step(f"slow leg: dm-delay of {ms} ms over {self.legs.slow_disk}")
        # Safe: a new device-mapper device over a disk the guard allows (make_dm checks).
        device = self.ws.make_dm_delay("wm-slow-delay", self.legs.slow_disk, ms)
        self.kernel_paths[device] = self.host.run(["readlink", "-f", device],
                                                  timeout_s=60).stdout.strip()
        self.legs.slow = device

    # -- helpers ------------------------------------------------------------------------------

    def sudo(self, command: str | list[str], timeout_s: float = 300, check: bool = True
             ) -> CommandResult:
        text = command if isinstance(command, str) else shlex.join(command)
        self.run.add_command(f"[{self.host.name}] {text}")
        return self.host.sudo(command, timeout_s=timeout_s, check=check)

    def guarded(self, argv: list[str] | str, devices: list[str], check: bool = True
                ) -> CommandResult:
        """A command that changes the lab's devices, after the guard allowed every one."""
        return self.ws.run_guarded(argv, devices, timeout_s=300, check=check)

    def leg_stats(self) -> dict[str, md.DiskStat]:
        names = self.legs.names()
        text = self.host.run(md.disk_stats_command(names.values()), timeout_s=60).stdout
        stats = md.parse_disk_stats(text)
        return {leg: stats[name] for leg, name in names.items()}

    def mdstat(self, raw_name: str | None = None) -> md.MdStat:
        text = self.host.run("cat /proc/mdstat", timeout_s=60).stdout
        if raw_name:
            self.run.add_raw(f"mdstat/{raw_name}.txt", text)
        return md.parse_mdstat(text)

    def member_states(self, array: str, raw_name: str) -> dict[str, frozenset[str]]:
        """Each member's state flags from sysfs (kept under raw/mdstat/ too)."""
        text = self.host.run(md.member_states_command(self.md_kernel_name(array)),
                             timeout_s=60).stdout
        self.run.add_raw(f"mdstat/{raw_name}-member-state.txt", text)
        return md.parse_member_states(text)

    def md_kernel_name(self, array: str) -> str:
        return self.host.run(["readlink", "-f", array], timeout_s=60).stdout.strip().removeprefix(
            "/dev/")

    def fio(self, raw_name: str, jobs: list[fio_tool.FioJob], *, allow_error: bool = False,
            ) -> FioOutcome:
        """Run fio on the host; returns its JSON, its rows and the legs' counter deltas."""
        return self.fio_batch([(raw_name, jobs)], allow_error=allow_error)[0]

    def fio_batch(self, steps: list[tuple[str, list[fio_tool.FioJob]]], *,
                  allow_error: bool = False) -> list[FioOutcome]:
        """Several fio runs in one round trip, each between two snapshots of the legs' counters.

        One command per batch keeps the lab's own overhead (an SSH round trip and a process
        start cost a good fraction of a second under TCG) out of the time budget.
        """
        stats_command = md.disk_stats_command(self.legs.names().values())
        script = []
        for index, (_name, jobs) in enumerate(steps):
            argv = fio_tool.fio_command(jobs)
            self.run.add_command(f"[{self.host.name}] {shlex.join(argv)}")
            err = f"/tmp/labs-write-mostly-fio-{index}.err"
            script += [f"echo @@before; {stats_command}", "echo @@fio",
                       f"{shlex.join(argv)} 2>{err}; echo \"@@rc $?\"",
                       f"echo @@after; {stats_command}", f"echo @@stderr; cat {err}; rm -f {err}"]
        self.fio_runs += len(steps)
        timeout = 120 + sum((j.runtime_s or 30) * 3 for _n, jobs in steps for j in jobs)
        output = self.host.sudo("\n".join(script), timeout_s=timeout).stdout
        sections: list[tuple[str, list[str]]] = []
        for line in output.splitlines(keepends=True):
            if line.startswith("@@"):
                sections.append((line.strip(), []))
            elif sections:
                sections[-1][1].append(line)
        if len(sections) != 5 * len(steps):
            raise LabError(f"fio batch on {self.host.name}: expected {5 * len(steps)} output "
                           f"sections, got {len(sections)}")
        names = self.legs.names()
        results = []
        for index, (raw_name, _jobs) in enumerate(steps):
            before_s, fio_s, rc_s, after_s, err_s = sections[5 * index: 5 * index + 5]
            exit_code = int(rc_s[0].split()[1])
            stdout, stderr = "".join(fio_s[1]), "".join(err_s[1])
            self.run.add_raw(f"fio/{raw_name}.json", stdout)
            if stderr.strip():
                self.run.add_raw(f"fio/{raw_name}.stderr.txt", stderr)
            document = fio_tool.load_fio_json(stdout, f"fio {raw_name} on {self.host.name}")
            errors = fio_tool.job_errors(document)
            if (errors or exit_code != 0) and not allow_error:
                raise LabError(f"fio {raw_name} on {self.host.name} failed (exit {exit_code}, "
                               f"job errors {errors}): {stderr.strip()[-200:]}")
            before = md.parse_disk_stats("".join(before_s[1]))
            after = md.parse_disk_stats("".join(after_s[1]))
            deltas = {leg: after[name] - before[name] for leg, name in names.items()}
            results.append((document, fio_tool.fio_rows(document), deltas))
        return results

    def workload_job(self, name: str, target: str, *, runtime_s: float, offset_mib: int = 0,
                     size_mib: int | None = None) -> fio_tool.FioJob:
        rw, qd, rate_iops = WORKLOADS[name]
        options: dict[str, str | int] = {"norandommap": 1}
        if rate_iops:
            options["rate_iops"] = rate_iops
        if offset_mib:
            options["offset"] = f"{offset_mib}M"
        return fio_tool.FioJob(name=name, filename=target, rw=rw, bs=BLOCK_SIZE, iodepth=qd,
                               size=f"{size_mib or self.profile.region_mib}M",
                               runtime_s=runtime_s, seed=self.params.seed, options=options)

    def record_fio_rows(self, config: str, rows: list[dict[str, Any]], deltas: dict[str,
                        md.DiskStat], workload: str, qd: int, **dimensions: Any) -> None:
        for row in rows:
            for metric, unit in (("iops", "iops"), ("bw_kib_s", "KiB/s"),
                                 ("clat_mean_us", "us"), ("lat_mean_us", "us"),
                                 ("clat_p50_us", "us"), ("clat_p99_us", "us"),
                                 ("clat_p999_us", "us")):
                if row[metric] is not None:
                    self.run.add_result(config=config, workload=workload, metric=metric,
                                        value=row[metric], unit=unit, qd=qd, op=row["op"],
                                        leg="array", **dimensions)
        self.record_leg_counts(config, workload, deltas, qd=qd, **dimensions)

    def record_leg_counts(self, config: str, workload: str, deltas: dict[str, md.DiskStat],
                          **dimensions: Any) -> None:
        for leg, delta in deltas.items():
            for metric, value in (("reads", delta.reads), ("writes", delta.writes),
                                  ("read_bytes", delta.read_sectors * 512),
                                  ("write_bytes", delta.write_sectors * 512)):
                self.run.add_result(config=config, workload=workload, metric=metric,
                                    value=value, unit="bytes" if "bytes" in metric else "count",
                                    leg=leg, **dimensions)
        total_reads = sum(d.reads for d in deltas.values())
        if total_reads:
            self.run.add_result(config=config, workload=workload, metric="slow_read_share",
                                value=deltas["slow"].reads / total_reads, unit="ratio",
                                leg="slow", **dimensions)

    # -- arrays -------------------------------------------------------------------------------

    def create_array(self, members: list[md.Member], *, bitmap: str = "none",
                     write_behind: int | None = None, assume_clean: bool = False,
                     size_mib: int | None = None) -> str:
        # Safe: make_md_raid1 runs every member through the guard before mdadm --create.
        return self.ws.make_md_raid1(MD_NAME, members, bitmap=bitmap, write_behind=write_behind,
                                     assume_clean=assume_clean, size_mib=size_mib)

    def destroy_array(self) -> None:
        """Stop the array and wipe the legs' md superblocks, so nothing re-assembles them."""
        self.ws.remove("md", MD_NAME)
        self.zero_superblocks(self.legs.fast, self.legs.slow)

    def zero_superblocks(self, *devices: str) -> None:
        # Safe: only guarded lab devices lose their md superblock.
        result = self.guarded(md.zero_superblock_command(*devices), list(devices), check=False)
        # A device without a superblock is already what we want.
        if not result.ok and "Unrecognised md component" not in result.stderr:
            raise LabError(f"host {self.host.name}: mdadm --zero-superblock failed: "
                           f"{result.stderr.strip().splitlines()[-1:] or result.exit_code}")

    def manage(self, array: str, action: str, device: str, write_mostly: bool = False) -> None:
        """mdadm ARRAY --fail|--remove|--add DEVICE on the lab's own array and devices."""
        # Safe: fail/remove take a guarded member out; add overwrites a guarded lab device.
        self.guarded(md.manage_command(array, action, device, write_mostly=write_mostly),
                     [array, device])

    def set_write_mostly(self, array: str, member: str) -> None:
        kernel = self.host.run(["readlink", "-f", array, member], timeout_s=60).stdout.split()
        md_name, member_name = (k.removeprefix("/dev/") for k in kernel)
        # Safe: a flag on a guarded member of the lab's own array; no data is touched.
        self.guarded(md.set_write_mostly_command(md_name, member_name), [array, member])

    def wait_for_sync(self, array: str, raw_prefix: str, t0: float,
                      timeline: list[dict[str, Any]] | None = None, timeout_s: float = 1800,
                      poll_s: float = 0.5) -> float:
        """Poll /proc/mdstat until the array is in sync; returns seconds since t0."""
        kernel_name = self.md_kernel_name(array)
        snapshots = []
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.host.run("cat /proc/mdstat", timeout_s=60).stdout
            now = time.monotonic() - t0
            snapshots.append(f"# t_s={now:.3f}\n{text}")
            state = md.parse_mdstat(text).array(kernel_name)
            if timeline is not None:
                timeline.append({"t_s": now, "percent": state.sync.percent if state.sync
                                 else (100.0 if not state.degraded else 0.0),
                                 "speed_kib_s": state.sync.speed_kib_s if state.sync else None,
                                 "health": state.health})
            if state.sync is None and not state.degraded:
                break
            if state.sync and state.sync.percent is not None:
                self.progress.detail(f"{state.sync.action} {state.sync.percent:5.1f}% "
                                     f"speed {state.sync.speed_kib_s} KiB/s", transient=True)
            if time.monotonic() > deadline:
                raise LabError(f"{array} on {self.host.name}: not in sync after {timeout_s} s")
            time.sleep(poll_s)
        self.run.add_raw(f"mdstat/{raw_prefix}-poll.txt", "\n".join(snapshots))
        return now

    # -- data checks --------------------------------------------------------------------------

    def data_job(self, target: str, **options: str | int) -> fio_tool.FioJob:
        # Sequential, seeded, a crc32c over every 64 KiB block and the block's own offset in
        # its header: a lost 4 KiB piece (zeros), a stale one or one from elsewhere all fail.
        # 64 KiB rather than 4 KiB blocks: the slow leg is limited in operations per second.
        return fio_tool.FioJob(name="data", filename=target, rw="write", bs=DATA_BLOCK_SIZE,
                               iodepth=16, size=f"{self.profile.data_mib}M",
                               seed=self.params.seed,
                               options={"verify": "crc32c", **options})

    def write_data(self, target: str, drill: str) -> None:
        self.fio(f"{drill}/data-write", [self.data_job(target, do_verify=0)])

    def check_data(self, target: str, drill: str, step: str, expect_ok: bool = True) -> bool:
        """Read the data back through `target` and verify every block; records the outcome."""
        document, _rows, deltas = self.fio(f"{drill}/data-check-{step}",
                                           [self.data_job(target, verify_only=1)],
                                           allow_error=True)
        ok = not fio_tool.job_errors(document)
        self.run.add_result(config=drill, workload=f"data-check-{step}", metric="data_check_ok",
                            value=1.0 if ok else 0.0, unit="count", leg="array")
        self.record_leg_counts(drill, f"data-check-{step}", deltas)
        outcome = "intact" if ok else "FAILED" + (" (expected: this is the control)"
                                                  if not expect_ok else "")
        self.progress.detail(f"data check {step}: {outcome}")
        if expect_ok and not ok:
            raise DataCheckFailed(f"{drill}: data check '{step}' found a lost or wrong block "
                                  f"(see raw/fio/{drill}/data-check-{step}.json)")
        return ok

    # -- steps --------------------------------------------------------------------------------

    def prepare(self) -> None:
        self.progress.step("preparing: loading raid1, checking tools and legs")
        for device in (self.legs.fast, self.legs.slow):
            self.ws.check_device(device)
        names = self.legs.names()
        facts = self.sudo(
            "modprobe raid1 && fio --version && mdadm --version 2>&1 | head -1 && uname -r && "
            "cat /proc/sys/dev/raid/speed_limit_min /proc/sys/dev/raid/speed_limit_max && "
            f"blockdev --getsize64 {self.legs.fast} {self.legs.slow} && "
            f"cat /sys/block/{names['fast']}/queue/rotational "
            f"/sys/block/{names['slow']}/queue/rotational", timeout_s=60).stdout.split("\n")
        fio_version, mdadm_version, kernel, limit_min, limit_max, *rest = facts
        self.run.add_tool_version("fio", fio_version.strip())
        self.run.add_tool_version("mdadm", mdadm_version.strip())
        self.run.add_tool_version("kernel", kernel.strip())
        self.run.host["md_speed_limit_kib_s"] = {"min": int(limit_min), "max": int(limit_max)}
        for index, (leg, device) in enumerate((("fast", self.legs.fast),
                                               ("slow", self.legs.slow))):
            size = int(rest[index])
            self.run.host[f"{leg}_leg"] = {"device": device, "size_bytes": size,
                                           "rotational": rest[2 + index].strip()}
            needed = (max(self.profile.resync_sizes_mib) + 8) * 1024 * 1024
            if size < needed:
                raise UsageError(f"{leg} leg {device} holds {size} bytes; the {self.profile.name}"
                                 f" profile needs at least {needed}")
        # Leftovers of an interrupted run would make mdadm refuse or auto-assemble.
        self.zero_superblocks(self.legs.fast, self.legs.slow)

    def measure_configuration(self, config: Configuration) -> None:
        self.progress.step(f"configuration {config.name}: {config.label}")
        if config.raid:
            fast = md.Member(self.legs.fast)
            slow = md.Member(self.legs.slow, write_mostly=config.write_mostly
                             and config.slow_slot == 1)
            members = [fast, slow] if config.slow_slot == 1 else [slow, fast]
            # --assume-clean: both legs start unsynchronised but nothing reads data it did not
            # write here, and skipping the initial resync keeps it out of the measurement.
            target = self.create_array(members, bitmap=config.bitmap,
                                       write_behind=config.write_behind, assume_clean=True)
            if config.write_mostly and config.slow_slot == 0:
                self.set_write_mostly(target, self.legs.slow)
                slow_name = self.kernel_paths.get(self.legs.slow, self.legs.slow)
                states = self.member_states(target, config.name)
                if "write_mostly" not in states.get(slow_name.removeprefix("/dev/"), ()):
                    raise LabError(f"{config.name}: the slow leg is not write-mostly after "
                                   f"setting it through sysfs (member states: {states})")
            self.mdstat(f"{config.name}-created")
        else:
            target = getattr(self.legs, config.leg)
        workloads = self.profile.workloads
        self.progress.detail(f"{', '.join(workloads)}: {self.profile.runtime_s:g} s each")
        outcomes = self.fio_batch([
            (f"{config.name}/{workload}",
             [self.workload_job(workload, target, runtime_s=self.profile.runtime_s)])
            for workload in workloads])
        for workload, (_doc, rows, deltas) in zip(workloads, outcomes, strict=True):
            self.record_fio_rows(config.name, rows, deltas, workload, WORKLOADS[workload][1])
        if config.raid:
            self.mdstat(f"{config.name}-after")
            if config.bitmap != "none":
                # How many writes were ever in flight behind the fast leg (0: none).
                kernel = self.md_kernel_name(target)
                used = self.host.run(f"cat /sys/block/{kernel}/md/bitmap/max_backlog_used",
                                     timeout_s=60).stdout.strip()
                self.run.add_result(config=config.name, workload="all",
                                    metric="write_behind_max_backlog", value=int(used),
                                    unit="count", leg="slow")
            self.destroy_array()

    def event(self, drill: str, name: str, t0: float) -> None:
        self.run.add_result(config=drill, workload="timeline", metric="event_s",
                            value=round(time.monotonic() - t0, 3), unit="s", leg="array",
                            event=name)

    def prefill(self) -> None:
        """Write the measured region of both legs once before reading it.

        The VM's disks are thin (qcow2): a block never written reads back as zeros without
        touching the host's disk, far faster than a real read. A drive in service is full.
        """
        self.progress.step(f"prefill: writing the first {self.profile.region_mib} MiB of "
                           "both legs")
        jobs = [(f"prefill/{leg}", [fio_tool.FioJob(
            name=f"prefill-{leg}", filename=device, rw="write", bs="1M", iodepth=4,
            size=f"{self.profile.region_mib}M")])
            for leg, device in (("fast", self.legs.fast), ("slow", self.legs.slow))]
        self.fio_batch(jobs)

    def measure(self, configurations: tuple[Configuration, ...] = CONFIGURATIONS) -> None:
        self.prepare()
        self.add_slow_delay()
        self.prefill()
        for config in configurations:
            if config.full_only and self.profile.name != "full":
                continue
            self.measure_configuration(config)
        self.drill_slow_leg_lost()
        self.drill_fast_leg_lost()
        self.drill_resync_sizes()
        self.drill_check_control()


# --- command line ----------------------------------------------------------------------------


def choose_legs(host: Host, params: Parameters) -> Legs:
    devices = list(host.lab_devices)
    fast = params.fast_device or (devices[0] if len(devices) > 0 else None)
    slow = params.slow_device or (devices[1] if len(devices) > 1 else None)
    if not fast or not slow:
        raise UsageError(f"host {host.name} has no two lab disks: name the legs with "
                         "--fast-device and --slow-device, or use a lab VM (vm1)")
    if fast == slow:
        raise UsageError(f"the fast and slow legs must differ (both are {fast})")
    return Legs(fast, slow)


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    """The whole lab on `host`; returns the recorded run."""
    started = time.monotonic()
    progress.expect(major_steps(params.settings))
    legs = choose_legs(host, params)
    run_id = new_run_id(host.name)
    record = {**params.as_record(), "profile_settings": asdict(params.settings),
              "fast_device": legs.fast, "slow_device": legs.slow,
              "configurations": [asdict(c) for c in CONFIGURATIONS],
              "workloads": {k: {"rw": v[0], "iodepth": v[1], "rate_iops": v[2],
                                "bs": BLOCK_SIZE} for k, v in WORKLOADS.items()}}
    recorder = RunRecorder(params.LAB, record, seed=params.seed, run_id=run_id,
                           lab_host=host.name, host=host_facts(host))
    with recorder as rec:
        rec.add_command(params.command_line())
        with LabWorkspace(host, lab=params.LAB, run_id=run_id,
                          allow_devices=params.allow_device, log=progress.detail,
                          on_command=rec.add_command) as workspace:
            lab = WriteMostlyLab(host, workspace, rec, params, legs, progress)
            lab.measure()
        rec.add_result(config="lab", workload="wall", metric="wall_time_s",
                       value=time.monotonic() - started, unit="s", leg="none")
    return load_run(recorder.final_path)
