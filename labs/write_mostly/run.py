"""Run the write-mostly lab on a lab host: legs, arrays, fio, per-leg counters.

The drills (drills.py) are a mixin of the same lab object. Everything the lab creates (loop
legs, the dm-delay devices, each md array) goes through the LabWorkspace, which guards every
device and journals every resource, so `python -m labs clean` can undo a killed run.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import asdict
from typing import Any

from labs.errors import LabError
from labs.infra.facts import host_facts
from labs.infra.hosts import CommandResult, Host
from labs.infra.lab_run import LabRun
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder
from labs.tools import fio as fio_tool
from labs.tools import mdadm as md
from labs.write_mostly.drills import Drills
from labs.write_mostly.legs import Legs, check_support, disk_legs, leg_mode, loop_legs
from labs.write_mostly.params import (
    BLOCK_SIZE,
    CONFIGURATIONS,
    MD_NAME,
    TIMELINE_S,
    WORKLOADS,
    Configuration,
    Parameters,
    before_the_delay,
    steps,
    workload_groups,
)
from labs.write_mostly.power_cut import PowerCut, can_cut_power

# (fio's JSON, its rows, the legs' counter deltas, its per-write latency log) for one fio run
FioOutcome = tuple[dict[str, Any], list[dict[str, Any]], dict[str, md.DiskStat], str]
SECTIONS = 6  # per fio run in a batch: before, fio, rc, after, stderr, log


class WriteMostlyLab(Drills, PowerCut):
    """The lab's steps on one host; results go to a labs.records.RunRecorder."""

    def __init__(self, host: Host, workspace: LabWorkspace, recorder: RunRecorder,
                 params: Parameters, legs: Legs, progress: Progress, power_cut: bool):
        self.host = host
        self.ws = workspace
        self.run = recorder
        self.params = params
        self.scale = params.scale
        self.legs = legs
        self.progress = progress
        # Decided once, before the run planned its steps: whether it cuts the VM's power.
        self.power_cut = power_cut
        self.fio_runs = 0
        self.kernel_paths: dict[str, str] = {}  # /dev/mapper/x -> /dev/dm-N

    # -- helpers ------------------------------------------------------------------------------

    def guarded(self, argv: list[str] | str, devices: list[str], check: bool = True
                ) -> CommandResult:
        """A command that changes the lab's devices, after the guard allowed every one."""
        return self.ws.run_guarded(argv, devices, timeout_s=300, check=check)

    def dm_delay(self, name: str, device: str) -> str:
        # Safe: a new device-mapper device over a device the guard allows (make_dm checks).
        path = self.ws.make_dm_delay(name, device, self.params.slow_delay_ms)
        self.kernel_paths[path] = self.host.run(["readlink", "-f", path],
                                                timeout_s=60).stdout.strip()
        return path

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

    def inspect_array(self, array: str, raw_name: str
                      ) -> tuple[dict[str, frozenset[str]], dict[str, str]]:
        """Member states, member slots and /proc/mdstat in one round trip (kept under raw/)."""
        text = self.host.run(
            f"k=$(basename $(readlink -f {array})); echo @@state; "
            "grep -H . /sys/block/$k/md/dev-*/state; echo @@slot; "
            "for d in /sys/block/$k/md/dev-*; do echo \"${d##*/dev-} $(cat $d/slot)\"; done; "
            "echo @@mdstat; cat /proc/mdstat", timeout_s=60).stdout
        states_text, rest = text.split("@@state\n", 1)[1].split("@@slot\n", 1)
        slots_text, mdstat_text = rest.split("@@mdstat\n", 1)
        self.run.add_raw(f"mdstat/{raw_name}-member-state.txt", states_text)
        self.run.add_raw(f"mdstat/{raw_name}-member-slot.txt", slots_text)
        self.run.add_raw(f"mdstat/{raw_name}-created.txt", mdstat_text)
        slots = dict(line.split() for line in slots_text.splitlines() if len(line.split()) == 2)
        return md.parse_member_states(states_text), slots

    def md_kernel_name(self, array: str) -> str:
        return self.host.run(["readlink", "-f", array], timeout_s=60).stdout.strip().removeprefix(
            "/dev/")

    def kernel_name(self, device: str) -> str:
        return self.kernel_paths.get(device, device).removeprefix("/dev/")

    def fio(self, raw_name: str, jobs: list[fio_tool.FioJob], *, allow_error: bool = False,
            ) -> FioOutcome:
        """Run fio on the host; returns its JSON, its rows and the legs' counter deltas."""
        return self.fio_batch([(raw_name, jobs)], allow_error=allow_error)[0]

    def fio_batch(self, steps: list[tuple[str, list[fio_tool.FioJob]]], *,
                  allow_error: bool = False, logs: dict[int, str] | None = None
                  ) -> list[FioOutcome]:
        """Several fio runs in one round trip, each between two snapshots of the legs' counters.

        One command per batch keeps the lab's own overhead (an SSH round trip and a process
        start cost a good fraction of a second under TCG) out of the time budget. `logs`
        maps a step's index to the prefix of its fio latency log, read back after it ran.
        """
        logs = logs or {}
        stats_command = md.disk_stats_command(self.legs.names().values())
        script = []
        for index, (_name, jobs) in enumerate(steps):
            argv = fio_tool.fio_command(jobs)
            self.run.add_command(f"[{self.host.name}] {shlex.join(argv)}")
            err = f"/tmp/labs-write-mostly-fio-{index}.err"
            log = logs.get(index)
            read_log = f"cat {log}_clat.*.log; rm -f {log}_*.log" if log else "true"
            script += [f"echo @@before; {stats_command}", "echo @@fio",
                       f"{shlex.join(argv)} 2>{err}; echo \"@@rc $?\"",
                       f"echo @@after; {stats_command}", f"echo @@stderr; cat {err}; rm -f {err}",
                       f"echo @@log; {read_log}"]
        self.fio_runs += len(steps)
        timeout = 120 + sum((j.runtime_s or 30) * 3 for _n, jobs in steps for j in jobs)
        output = self.host.sudo(self.legs.wrap("\n".join(script)), timeout_s=timeout).stdout
        sections: list[tuple[str, list[str]]] = []
        for line in output.splitlines(keepends=True):
            if line.startswith("@@"):
                sections.append((line.strip(), []))
            elif sections:
                sections[-1][1].append(line)
        if len(sections) != SECTIONS * len(steps):
            raise LabError(f"fio batch on {self.host.name}: expected {SECTIONS * len(steps)} "
                           f"output sections, got {len(sections)}")
        names = self.legs.names()
        results = []
        for index, (raw_name, _jobs) in enumerate(steps):
            before_s, fio_s, rc_s, after_s, err_s, log_s = sections[
                SECTIONS * index: SECTIONS * index + SECTIONS]
            exit_code = int(rc_s[0].split()[1])
            stdout, stderr, log_text = "".join(fio_s[1]), "".join(err_s[1]), "".join(log_s[1])
            self.run.add_raw(f"fio/{raw_name}.json", stdout)
            if stderr.strip():
                self.run.add_raw(f"fio/{raw_name}.stderr.txt", stderr)
            if log_text:
                self.run.add_raw(f"fio/{raw_name}.clat.log", log_text)
            document = fio_tool.load_fio_json(stdout, f"fio {raw_name} on {self.host.name}")
            errors = fio_tool.job_errors(document)
            if (errors or exit_code != 0) and not allow_error:
                raise LabError(f"fio {raw_name} on {self.host.name} failed (exit {exit_code}, "
                               f"job errors {errors}): {stderr.strip()[-200:]}")
            before = md.parse_disk_stats("".join(before_s[1]))
            after = md.parse_disk_stats("".join(after_s[1]))
            deltas = {leg: after[name] - before[name] for leg, name in names.items()}
            results.append((document, fio_tool.fio_rows(document), deltas, log_text))
        return results

    def workload_job(self, name: str, target: str, *, runtime_s: float, offset_mib: int = 0,
                     size_mib: int | None = None, log: str = "") -> fio_tool.FioJob:
        rw, qd, rate_iops = WORKLOADS[name]
        options: dict[str, str | int] = {"norandommap": 1}
        if rate_iops:
            options["rate_iops"] = rate_iops
        if offset_mib:
            options["offset"] = f"{offset_mib}M"
        if log:
            # Every write's completion latency, to see when the write-behind backlog fills.
            options.update(write_lat_log=log, log_avg_msec=0)
        return fio_tool.FioJob(name=name, filename=target, rw=rw, bs=BLOCK_SIZE, iodepth=qd,
                               size=f"{size_mib or self.scale.region_mib}M",
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

    def record_write_log(self, config: str, log_text: str) -> None:
        """The first seconds of the flat-out writer, write by write (fio's clat log: time in
        ms, latency in ns)."""
        for line in log_text.splitlines():
            fields = [f.strip() for f in line.split(",")]
            if len(fields) < 2 or not fields[0].isdigit():
                continue
            t_s = int(fields[0]) / 1000
            if t_s > TIMELINE_S:
                break
            self.run.add_result(config=config, workload="randwrite-qd1", metric="write_clat_us",
                                value=int(fields[1]) / 1000, unit="us", leg="array", t_s=t_s)

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

    # -- steps --------------------------------------------------------------------------------

    def prepare(self) -> None:
        self.progress.step("preparing the legs", f"{self.legs.mode} legs, raid1, tools")
        for device in (self.legs.fast, self.legs.slow):
            self.ws.check_device(device)
        names = self.legs.names()
        facts = self.host.sudo(
            "modprobe raid1 && fio --version && mdadm --version 2>&1 | head -1 && uname -r && "
            "cat /proc/sys/dev/raid/speed_limit_min /proc/sys/dev/raid/speed_limit_max && "
            f"blockdev --getsize64 {self.legs.fast} {self.legs.slow} && "
            f"cat /sys/block/{names['fast']}/queue/rotational "
            f"/sys/block/{names['slow']}/queue/rotational && "
            "(. /etc/os-release && echo \"$PRETTY_NAME\")", timeout_s=60).stdout.split("\n")
        fio_version, mdadm_version, kernel, limit_min, limit_max, *rest = facts
        self.run.add_tool_version("fio", fio_version.strip())
        self.run.add_tool_version("mdadm", mdadm_version.strip())
        self.run.add_tool_version("kernel", kernel.strip())
        self.run.host["os_release"] = rest[4].strip()
        self.run.host["md_speed_limit_kib_s"] = {"min": int(limit_min), "max": int(limit_max)}
        for index, (leg, device) in enumerate((("fast", self.legs.fast),
                                               ("slow", self.legs.slow))):
            size = int(rest[index])
            self.run.host[f"{leg}_leg"] = {"device": device, "size_bytes": size,
                                           "rotational": rest[2 + index].strip()}
            needed = self.scale.leg_mib * 1024 * 1024 - 8 * 1024 * 1024
            if size < needed:
                raise LabError(f"{leg} leg {device} holds {size} bytes; this run's sizes "
                               f"(--region-mib, --resync-sizes-mib, --drill-array-mib) need "
                               f"at least {needed}")
        if self.legs.throttle:
            # What the cgroup limit really is, as the kernel reports it inside the scope.
            limit = self.host.sudo(self.legs.wrap(
                "cat /sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)/io.max"), timeout_s=60)
            self.run.add_raw("cgroup-io.max.txt", limit.stdout)
        # Leftovers of an interrupted run would make mdadm refuse or auto-assemble.
        self.zero_superblocks(self.legs.fast, self.legs.slow)

    def prefill(self) -> None:
        """Write the measured region of both legs once before reading it.

        VM disks are thin (qcow2) and loop files sparse: a block never written reads back as
        zeros without touching a disk, far faster than a real read. A drive in service is full.
        """
        self.progress.step("prefill", f"writing the first {self.scale.region_mib} MiB of "
                                      "both legs")
        jobs = [(f"prefill/{leg}", [fio_tool.FioJob(
            name=f"prefill-{leg}", filename=device, rw="write", bs="1M", iodepth=4,
            size=f"{self.scale.region_mib}M")])
            for leg, device in (("fast", self.legs.fast), ("slow", self.legs.slow))]
        self.fio_batch(jobs)

    def build_mirror(self, config: Configuration) -> str:
        """The array of one configuration, with the slow leg in the slot the configuration
        names, write-mostly as it says; checked in sysfs before anything is measured."""
        fast, slow = self.legs.fast, self.legs.slow
        at_create = config.write_mostly and config.marked == "create"
        if config.slow_slot == 0 and at_create:
            # mdadm's create mode cannot switch --write-mostly off again for a later device,
            # so the slow leg alone (with a missing slot) makes the array, and the fast leg is
            # added and recovered: the layout of a node whose local disk was replaced.
            size = self.scale.region_mib
            target = self.create_array([md.Member(slow, write_mostly=True), md.Member("missing")],
                                       bitmap=config.bitmap, write_behind=config.write_behind,
                                       size_mib=size)
            self.manage(target, "add", fast)
            seconds = self.wait_for_sync(target, f"{config.name}-recovery", time.monotonic())
            self.run.add_result(config=config.name, workload="build", metric="resync_s",
                                value=seconds, unit="s", leg="fast", size_mib=size)
        else:
            members = [md.Member(fast), md.Member(slow, write_mostly=at_create)]
            if config.slow_slot == 0:
                members.reverse()
            # --assume-clean: both legs start unsynchronised but nothing reads data it did not
            # write here, and skipping the initial resync keeps it out of the measurement.
            target = self.create_array(members, bitmap=config.bitmap,
                                       write_behind=config.write_behind, assume_clean=True)
        if config.write_mostly and config.marked == "sysfs":
            self.set_write_mostly(target, slow)
        states, slots = self.inspect_array(target, config.name)
        slow_name, fast_name = self.kernel_name(slow), self.kernel_name(fast)
        marked = "write_mostly" in states.get(slow_name, ())
        if (marked != config.write_mostly or "write_mostly" in states.get(fast_name, ())
                or slots.get(slow_name) != str(config.slow_slot)):
            raise LabError(f"{config.name}: the array is not as configured (member states "
                           f"{dict(states)}, slots {slots})")
        return target

    def leg_target(self, config: Configuration) -> str:
        if config.leg == "fast":
            return self.legs.fast
        if config.leg == "slow":
            return self.legs.slow
        if config.leg == "slow-cap":
            return self.legs.slow_disk
        return self.dm_delay("wm-fast-delay", self.legs.fast)  # the delay alone

    def measure_configuration(self, config: Configuration) -> None:
        self.progress.step("a configuration", f"{config.name}: {config.label}")
        target = self.build_mirror(config) if config.raid else self.leg_target(config)
        groups = workload_groups(config.workloads)
        self.progress.detail(f"{', '.join(w for g in groups.values() for w in g)}: "
                             f"{self.scale.runtime_s:g} s each")
        log = f"/tmp/labs-write-mostly-{config.name}"
        logs = {index: log for index, workloads in enumerate(groups.values())
                if config.write_behind and "randwrite-qd1" in workloads}
        # One fio per operation (its workloads one after another), between two snapshots of
        # the legs' counters: a process start costs seconds under emulation.
        outcomes = self.fio_batch([
            (f"{config.name}/{group}",
             [self.workload_job(workload, target, runtime_s=self.scale.runtime_s,
                                log=log if config.write_behind and workload == "randwrite-qd1"
                                else "") for workload in workloads])
            for group, workloads in groups.items()], logs=logs)
        for group, (_doc, rows, deltas, log_text) in zip(groups, outcomes, strict=True):
            for row in rows:
                self.record_fio_rows(config.name, [row], {}, row["job"],
                                     WORKLOADS[row["job"]][1])
            self.record_leg_counts(config.name, group, deltas)
            if log_text:
                self.record_write_log(config.name, log_text)
        if config.leg == "fast-delay":
            self.ws.remove("dm", "wm-fast-delay")
        if not config.raid:
            return
        # /proc/mdstat, and how many writes were ever in flight behind the fast leg (0: none),
        # in one round trip.
        text = self.host.run(f"cat /proc/mdstat; echo @@backlog; k=$(basename $(readlink -f "
                             f"{target})); cat /sys/block/$k/md/bitmap/max_backlog_used "
                             "2>/dev/null || true", timeout_s=60).stdout
        mdstat_text, used = text.split("@@backlog\n", 1)
        self.run.add_raw(f"mdstat/{config.name}-after.txt", mdstat_text)
        if config.bitmap != "none":
            self.run.add_result(config=config.name, workload="all",
                                metric="write_behind_max_backlog", value=int(used.strip()),
                                unit="count", leg="slow")
        self.destroy_array()

    def event(self, drill: str, name: str, t0: float) -> None:
        self.run.add_result(config=drill, workload="timeline", metric="event_s",
                            value=round(time.monotonic() - t0, 3), unit="s", leg="array",
                            event=name)

    def measure(self, configurations: tuple[Configuration, ...] = CONFIGURATIONS) -> None:
        self.prepare()
        everything = self.params.part in ("all", "sweep")
        if everything:
            self.prefill()
            for config in configurations:
                if before_the_delay(config):
                    self.measure_configuration(config)
        if self.params.slow_delay_ms > 0:
            self.progress.step("the slow leg's delay", f"dm-delay of {self.params.slow_delay_ms} "
                               f"ms over {self.legs.slow_disk}")
            self.legs.slow = self.dm_delay("wm-slow-delay", self.legs.slow_disk)
        else:
            self.progress.step("the slow leg's delay", "none (--slow-delay-ms 0)")
        if everything:
            for config in configurations:
                if not before_the_delay(config):
                    self.measure_configuration(config)
            self.drill_slow_leg_lost()
            self.drill_fast_leg_lost()
            self.drill_resync_sizes()
            self.drill_check_control()
        self.drill_power_cut()


# --- command line ----------------------------------------------------------------------------


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    """The whole lab on `host`; returns the recorded run."""
    started = time.monotonic()
    mode = leg_mode(host, params)
    check_support(host, mode)  # before anything is made: one line if the host cannot
    facts = host_facts(host)
    vm_cap = facts.get("vm", {}).get("slow_iops")
    legs = disk_legs(host, params, vm_cap) if mode == "disks" else None
    power_cut = can_cut_power(host, mode, params.part)  # before anything is made
    progress.plan(steps(params.scale, params.part, power_cut))
    record = {**params.as_record(), "profile_settings": asdict(params.scale),
              "legs_mode": mode, "configurations": [asdict(c) for c in CONFIGURATIONS],
              "workloads": {k: {"rw": v[0], "iodepth": v[1], "rate_iops": v[2],
                                "bs": BLOCK_SIZE} for k, v in WORKLOADS.items()}}
    with LabRun(params, host, progress, facts=facts, record=record, log=progress.detail,
                allow_devices=params.allow_device) as lab_run:
        rec, workspace = lab_run.rec, lab_run.ws
        if legs is None:
            legs = loop_legs(workspace, params.scale, params.loop_slow_iops)
        rec.parameters.update(fast_device=legs.fast, slow_device=legs.slow,
                              slow_cap_iops=legs.cap_iops, slow_cap_by=legs.cap_by)
        lab = WriteMostlyLab(host, workspace, rec, params, legs, progress, power_cut)
        lab.measure()
        rec.add_result(config="lab", workload="wall", metric="wall_time_s",
                       value=time.monotonic() - started, unit="s", leg="none")
        progress.step("taking the array and its devices down; writing the run")
    return lab_run.recorded()
