"""Lab: a write-mostly RAID1 of a fast local disk and a slow network disk (the "super disk").

    python -m labs run write-mostly --host vm1 [--quick] [--seed 42]

On a lab VM the two legs are the VM's data disks: the first is plain (the local NVMe
stand-in), the second is throttled by QEMU (the network-disk stand-in). The lab

1. measures both legs raw (the "fast only" and "slow only" configurations);
2. builds RAID1 arrays over them: plain, with the slow leg write-mostly, the same with a
   write-intent bitmap, and with write-behind; runs 4k random reads and writes at queue
   depth 1 and 16 on each, and counts where the reads and writes landed per leg;
3. runs failure drills, each followed by a data check that catches a single lost or wrong
   4 KiB block (fio's crc32c verify of data written before the drill):
   losing the slow leg, losing the fast leg the way an instance replacement does, and
   resync time against array size;
4. records everything under data/runs/write-mostly/<run-id>/ (raw/ keeps fio's JSON and
   every /proc/mdstat snapshot).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from labs.errors import LabError, UsageError
from labs.tools import fio as fio_tool
from labs.tools import mdadm as md

LAB = "write-mostly"
RUN_HELP = ("write-mostly RAID1 of a fast and a slow leg: latency per configuration, where "
            "reads land, failure drills with data checks, resync time")
BLOCK_SIZE = "4k"
DATA_BLOCK_SIZE = "64k"  # the drills' verified data
# Workloads (name -> fio rw, queue depth, I/O per second or 0 for as fast as possible);
# every configuration runs all of them. The paced writer asks for fewer writes than the slow
# leg can take, the case write-behind is made for; the others run flat out.
WORKLOADS = {
    "randread-qd1": ("randread", 1, 0),
    "randread-qd16": ("randread", 16, 0),
    "randwrite-qd1": ("randwrite", 1, 0),
    "randwrite-qd16": ("randwrite", 16, 0),
    "randwrite-qd1-paced": ("randwrite", 1, 40),
}
WRITE_BEHIND = 256  # mdadm's default limit of outstanding write-behind writes
MD_NAME = "wm"  # the array appears as /dev/md/wm


@dataclass(frozen=True)
class Profile:
    """How long and how large: --quick for tests and first tries, full for the book."""

    name: str
    runtime_s: float  # per fio workload
    region_mib: int  # the part of each leg the latency workloads touch
    data_mib: int  # the verified data the drills must keep intact
    resync_sizes_mib: tuple[int, ...]  # array sizes of the resync-vs-size drill
    drill_runtime_s: float  # the short workloads inside drills
    drill_array_mib: int  # array size in the instance-replacement drill
    workloads: tuple[str, ...] = tuple(WORKLOADS)


PROFILES = {
    # quick leaves out the flat-out writer at depth 16 (the slowest, and no claim rests on it)
    # and the configurations marked full_only.
    "quick": Profile("quick", runtime_s=1, region_mib=64, data_mib=16,
                     resync_sizes_mib=(32,), drill_runtime_s=1, drill_array_mib=64,
                     workloads=("randread-qd1", "randread-qd16", "randwrite-qd1",
                                "randwrite-qd1-paced")),
    "full": Profile("full", runtime_s=8, region_mib=256, data_mib=64,
                    resync_sizes_mib=(128, 256, 512), drill_runtime_s=3, drill_array_mib=256),
}


@dataclass(frozen=True)
class Configuration:
    """One way of using the legs; `raid` is False for a raw leg."""

    name: str
    label: str
    raid: bool
    leg: str | None = None  # raw configurations: which leg
    write_mostly: bool = False
    bitmap: str = "none"
    write_behind: int | None = None
    # The mirror slot of the slow leg. md lists write-mostly members last at creation, so the
    # slow leg is in slot 1; slot 0 is reached by marking it write-mostly afterwards.
    slow_slot: int = 1
    full_only: bool = False


CONFIGURATIONS = (
    Configuration("fast-only", "fast leg alone", raid=False, leg="fast"),
    Configuration("slow-only", "slow leg alone", raid=False, leg="slow"),
    Configuration("raid1", "RAID1, plain", raid=True),
    Configuration("raid1-wm", "RAID1, slow leg write-mostly", raid=True, write_mostly=True),
    Configuration("raid1-wm-bitmap", "RAID1, write-mostly + bitmap", raid=True,
                  write_mostly=True, bitmap="internal", full_only=True),
    Configuration("raid1-wm-wb", f"RAID1, write-mostly + bitmap + write-behind={WRITE_BEHIND}",
                  raid=True, write_mostly=True, bitmap="internal", write_behind=WRITE_BEHIND,
                  slow_slot=0),
    # The same with the slow leg in slot 1, where mdadm puts it: on kernels whose md looks
    # only at the first member to decide about write-behind, nothing is written behind.
    Configuration("raid1-wm-wb-slot1", "the same, slow leg in mirror slot 1", raid=True,
                  write_mostly=True, bitmap="internal", write_behind=WRITE_BEHIND,
                  full_only=True),
)


# --- the model the resync drill is compared with --------------------------------------------

def transfer_hours(size_bytes: float, rate_mib_s: float) -> float:
    """Hours to move size_bytes at a steady rate_mib_s (resync or streaming from peers)."""
    if rate_mib_s <= 0:
        raise UsageError(f"transfer rate must be positive, not {rate_mib_s}")
    return size_bytes / (rate_mib_s * 1024 * 1024) / 3600


def implied_rate_mib_s(size_bytes: float, hours: float) -> float:
    """The steady rate that moves size_bytes in `hours` (e.g. a reported recovery time)."""
    return size_bytes / (hours * 3600) / (1024 * 1024)


# Figures reported by Hyperconnect's engineering blog (2025) on the super disk: a node of
# about 1.8 TB took 12 to 24 hours to rebuild by streaming from its peers; the RAID resync
# of a 3.66 TB array took about an hour, and md showed speed=200256K/sec at its start.
ARTICLE = {
    "stream_node_bytes": 1.8e12,
    "stream_hours": (12.0, 24.0),
    "resync_array_kib": 3659399168,
    "resync_reported_hours": 1.0,
    "resync_md_speed_kib_s": 200256,
}


# --- running ---------------------------------------------------------------------------------

class Progress:
    """One progress line in the terminal (and, in a notebook, a bar): which step is running."""

    def __init__(self, stream: Any = None,
                 callback: Callable[[float, str], None] | None = None, total_steps: int = 1):
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self.callback = callback
        self.total_steps = max(total_steps, 1)
        self.done_steps = 0

    def step(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[write-mostly {elapsed:6.1f}s] {message}", file=self.stream, flush=True)
        if not message.startswith(" "):  # sub-steps are indented and do not count
            self.done_steps += 1
        if self.callback:
            self.callback(min(self.done_steps / self.total_steps, 1.0), message.strip())


def major_steps(profile: Profile) -> int:
    """How many top-level steps a run takes (for the progress bar)."""
    configs = [c for c in CONFIGURATIONS if profile.name == "full" or not c.full_only]
    return 3 + len(configs) + 2 + len(profile.resync_sizes_mib) + 1


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
class LabParameters:
    host: str
    profile: str
    seed: int
    fast_device: str | None = None
    slow_device: str | None = None
    slow_delay_ms: int = 1
    allow_devices: list[str] = field(default_factory=list)

    def command_line(self) -> str:
        argv = ["python", "-m", "labs", "run", LAB, "--host", self.host, "--seed", str(self.seed)]
        if self.profile == "quick":
            argv.append("--quick")
        if self.fast_device:
            argv += ["--fast-device", self.fast_device]
        if self.slow_device:
            argv += ["--slow-device", self.slow_device]
        argv += ["--slow-delay-ms", str(self.slow_delay_ms)]
        for device in self.allow_devices:
            argv += ["--allow-device", device]
        return shlex.join(argv)


class DataCheckFailed(LabError):
    """The data written before a drill did not read back intact."""


class WriteMostlyLab:
    """The lab's steps on one host; results go to a labs.records.RunRecorder."""

    def __init__(self, host: Any, workspace: Any, recorder: Any, params: LabParameters,
                 legs: Legs, progress: Progress):
        self.host = host
        self.ws = workspace
        self.run = recorder
        self.params = params
        self.profile = PROFILES[params.profile]
        self.legs = legs
        self.progress = progress
        # Guard answers, kept until an array is created or stopped: each check costs several
        # round trips, and the devices cannot change identity in between.
        self.guard_cache: dict[str, str] = {}
        self.mdadm = md.Mdadm(host, self.check_device)
        self.fio_runs = 0
        self.kernel_paths: dict[str, str] = {}  # /dev/mapper/x -> /dev/dm-N

    def check_device(self, device: str) -> str:
        if device not in self.guard_cache:
            self.guard_cache[device] = self.ws.check_device(device)
        return self.guard_cache[device]

    def add_slow_delay(self) -> None:
        """Put a dm-delay device over the slow disk: latency on every I/O, not only a cap."""
        ms = self.params.slow_delay_ms
        if ms <= 0:
            return
        name = "wm-slow-delay"
        disk = self.ws.check_device(self.legs.slow_disk)
        sectors = int(self.host.run(["blockdev", "--getsz", disk], timeout_s=60).stdout)
        table = f"0 {sectors} delay {disk} 0 {ms}"
        device = f"/dev/mapper/{name}"
        self.progress.step(f"slow leg: dm-delay of {ms} ms over {disk}")
        # Safe: a new device-mapper device over a disk the guard just allowed.
        self.ws.journaled("dm", name, f"modprobe dm_delay && dmsetup create {name} --table "
                          f"{shlex.quote(table)} && udevadm settle", device=device)
        self.run.add_command(f"[{self.host.name}] dmsetup create {name} --table '{table}'")
        self.kernel_paths[device] = self.host.run(["readlink", "-f", device],
                                                  timeout_s=60).stdout.strip()
        self.legs.slow = device

    # -- helpers ------------------------------------------------------------------------------

    def sudo(self, command: str | list[str], timeout_s: float = 300, check: bool = True) -> Any:
        text = command if isinstance(command, str) else shlex.join(command)
        self.run.add_command(f"[{self.host.name}] {text}")
        return self.host.sudo(command, timeout_s=timeout_s, check=check)

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
            ) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, md.DiskStat]]:
        """Run fio on the host; returns its JSON, its rows and the legs' counter deltas."""
        return self.fio_batch([(raw_name, jobs)], allow_error=allow_error)[0]

    def fio_batch(self, steps: list[tuple[str, list[fio_tool.FioJob]]], *,
                  allow_error: bool = False) -> list[tuple[dict[str, Any], list[dict[str, Any]],
                                                            dict[str, md.DiskStat]]]:
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
        array = f"/dev/md/{MD_NAME}"
        argv = self.mdadm.create_argv(array, members, bitmap=bitmap, write_behind=write_behind,
                                      assume_clean=assume_clean)
        if size_mib is not None:
            argv.insert(argv.index("--run") + 1, f"--size={size_mib * 1024}")
        devices = [m.device for m in members if m.device != "missing"]
        # The journal names members by path and by kernel name (dm-0), so `clean` finds them.
        devices += [self.kernel_paths[d] for d in devices if d in self.kernel_paths]
        # Safe: every member passed the guard (the lab VM's own data disks or journaled loops).
        self.guard_cache.pop(array, None)
        self.ws.journaled("md", MD_NAME, shlex.join(argv) + " && udevadm settle",
                          device=array, members=devices)
        self.run.add_command(f"[{self.host.name}] {shlex.join(argv)}")
        return array

    def destroy_array(self) -> None:
        """Stop the array and wipe the legs' md superblocks, so nothing re-assembles them."""
        self.guard_cache.pop(f"/dev/md/{MD_NAME}", None)
        self.ws.remove("md", MD_NAME)
        # Safe: zero_superblock refuses anything the guard does not allow.
        self.mdadm.zero_superblock(self.legs.fast, self.legs.slow)

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
                self.progress.step(f"  {state.sync.action} {state.sync.percent:5.1f}% "
                                   f"speed {state.sync.speed_kib_s} KiB/s")
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
        self.progress.step(f"  data check {step}: {'intact' if ok else 'FAILED'}")
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
        self.mdadm.zero_superblock(self.legs.fast, self.legs.slow)

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
                self.mdadm.set_write_mostly(target, self.legs.slow)
                slow_name = self.kernel_paths.get(self.legs.slow, self.legs.slow)
                states = self.member_states(target, config.name)
                if "write_mostly" not in states.get(slow_name.removeprefix("/dev/"), ()):
                    raise LabError(f"{config.name}: the slow leg is not write-mostly after "
                                   f"setting it through sysfs (member states: {states})")
            self.mdstat(f"{config.name}-created")
        else:
            target = getattr(self.legs, config.leg)
        workloads = self.profile.workloads
        self.progress.step(f"  {', '.join(workloads)}: {self.profile.runtime_s:g} s each")
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

    def drill_slow_leg_lost(self) -> None:
        """The network disk goes away: the array serves on, degraded, from the fast leg."""
        drill = "drill-slow-leg-lost"
        self.progress.step(f"{drill}: fail and remove the slow leg")
        array = self.create_array([md.Member(self.legs.fast),
                                   md.Member(self.legs.slow, write_mostly=True)],
                                  bitmap="internal", assume_clean=True)
        t0 = time.monotonic()
        self.write_data(array, drill)
        self.event(drill, "data written", t0)
        self.mdadm.fail(array, self.legs.slow)
        self.event(drill, "slow leg failed", t0)
        self.mdstat(f"{drill}-failed")
        self.member_states(array, f"{drill}-failed")
        self.mdadm.remove(array, self.legs.slow)
        self.event(drill, "slow leg removed", t0)
        state = self.mdstat(f"{drill}-degraded").array(self.md_kernel_name(array))
        self.run.add_result(config=drill, workload="state", metric="degraded",
                            value=1.0 if state.degraded else 0.0, unit="count", leg="array")
        # The array keeps serving: reads and writes beyond the verified data.
        served = ("randread-qd16", "randwrite-qd16")
        outcomes = self.fio_batch([(f"{drill}/{workload}", [self.workload_job(
            workload, array, runtime_s=self.profile.drill_runtime_s,
            offset_mib=self.profile.data_mib, size_mib=self.profile.data_mib)])
            for workload in served])
        for workload, (_doc, rows, deltas) in zip(served, outcomes, strict=True):
            self.record_fio_rows(drill, rows, deltas, workload, WORKLOADS[workload][1],
                                 phase="degraded")
        self.event(drill, "served degraded", t0)
        self.check_data(array, drill, "degraded")
        self.event(drill, "data checked", t0)
        # The disk comes back: with the bitmap md copies only what changed meanwhile.
        self.mdadm.add(array, self.legs.slow, write_mostly=True)
        self.event(drill, "slow leg re-added", t0)
        t_add = time.monotonic()
        self.wait_for_sync(array, f"{drill}-readd", t0)
        self.run.add_result(config=drill, workload="re-add", metric="resync_s",
                            value=time.monotonic() - t_add, unit="s", leg="slow")
        self.event(drill, "in sync", t0)
        self.mdstat(f"{drill}-in-sync")
        self.check_data(array, drill, "after-re-add")
        self.event(drill, "data checked again", t0)
        self.destroy_array()

    def drill_fast_leg_lost(self) -> None:
        """An instance replacement: the local disk comes back empty; rebuild from the slow leg."""
        drill = "drill-fast-leg-lost"
        size_mib = self.profile.drill_array_mib
        self.progress.step(f"{drill}: the fast leg is replaced by an empty disk "
                           f"({size_mib} MiB array)")
        array = self.create_array([md.Member(self.legs.fast),
                                   md.Member(self.legs.slow, write_mostly=True)],
                                  bitmap="internal", assume_clean=True, size_mib=size_mib)
        t0 = time.monotonic()
        self.write_data(array, drill)
        self.event(drill, "data written", t0)
        self.guard_cache.pop(f"/dev/md/{MD_NAME}", None)
        self.ws.remove("md", MD_NAME)
        self.event(drill, "instance lost (array stopped)", t0)
        # The new instance's local disk is blank: no superblock, no data.
        self.mdadm.zero_superblock(self.legs.fast)
        self.check_device_then(self.legs.fast, [
            "dd", "if=/dev/zero", f"of={self.legs.fast}", "bs=1M",
            f"count={self.profile.data_mib + 16}", "oflag=direct", "status=none"])
        self.event(drill, "fast leg blank", t0)
        # As on a new instance: the old array's superblock goes, then a new array is created
        # from the surviving network disk and a missing slot.
        self.mdadm.zero_superblock(self.legs.slow)
        array = self.create_array([md.Member(self.legs.slow, write_mostly=True),
                                   md.Member("missing")], bitmap="internal", size_mib=size_mib)
        self.event(drill, "array re-created from the slow leg", t0)
        self.mdstat(f"{drill}-recreated")
        self.check_data(array, drill, "slow-leg-only")
        self.event(drill, "data checked on the slow leg", t0)
        self.reads_phase(array, drill, "slow-leg-only")
        self.mdadm.add(array, self.legs.fast)
        self.event(drill, "new fast leg added", t0)
        self.mdstat(f"{drill}-recovering")
        timeline: list[dict[str, Any]] = []
        t_add = time.monotonic()
        self.wait_for_sync(array, drill, t0, timeline)
        resync_s = time.monotonic() - t_add
        self.event(drill, "in sync", t0)
        for point in timeline:
            self.run.add_result(config=drill, workload="timeline", metric="recovery_percent",
                                value=point["percent"], unit="percent", leg="fast",
                                t_s=round(point["t_s"], 3))
        self.run.add_result(config=drill, workload="resync", metric="resync_s", value=resync_s,
                            unit="s", leg="fast", size_mib=size_mib)
        self.mdstat(f"{drill}-in-sync")
        self.reads_phase(array, drill, "after-resync")
        self.check_data(array, drill, "after-resync")
        self.event(drill, "data checked after resync", t0)
        self.destroy_array()

    def check_device_then(self, device: str, argv: list[str]) -> None:
        self.ws.check_device(device)
        # Safe: the guard just allowed this device (a lab VM disk or a journaled device).
        self.sudo(argv, timeout_s=300)

    def reads_phase(self, array: str, drill: str, phase: str) -> None:
        _doc, rows, deltas = self.fio(f"{drill}/randread-{phase}", [self.workload_job(
            "randread-qd16", array, runtime_s=self.profile.drill_runtime_s,
            size_mib=self.profile.data_mib)])
        self.record_fio_rows(drill, rows, deltas, "randread-qd16", 16, phase=phase)

    def drill_resync_sizes(self) -> None:
        """Resync time against array size: the recovery of a new fast leg, size by size."""
        drill = "drill-resync-size"
        for size_mib in self.profile.resync_sizes_mib:
            self.progress.step(f"{drill}: {size_mib} MiB array, new fast leg")
            array = self.create_array([md.Member(self.legs.slow, write_mostly=True),
                                       md.Member("missing")], bitmap="internal",
                                      size_mib=size_mib)
            self.mdadm.add(array, self.legs.fast)
            t0 = time.monotonic()
            timeline: list[dict[str, Any]] = []
            before = self.leg_stats()
            seconds = self.wait_for_sync(array, f"{drill}-{size_mib}mib", t0, timeline)
            deltas = {leg: s - before[leg] for leg, s in self.leg_stats().items()}
            speeds = [p["speed_kib_s"] for p in timeline if p["speed_kib_s"]]
            dims = {"size_mib": size_mib, "leg": "fast"}
            self.run.add_result(config=drill, workload="resync", metric="resync_s",
                                value=seconds, unit="s", **dims)
            self.run.add_result(config=drill, workload="resync", metric="resync_rate",
                                value=size_mib / seconds, unit="MiB/s", **dims)
            if speeds:
                self.run.add_result(config=drill, workload="resync", metric="md_speed_median",
                                    value=sorted(speeds)[len(speeds) // 2] / 1024,
                                    unit="MiB/s", **dims)
            self.record_leg_counts(drill, f"resync-{size_mib}mib", deltas, size_mib=size_mib)
            self.destroy_array()

    def drill_check_control(self) -> None:
        """The data check itself must catch one wrong block: corrupt one and watch it fail."""
        drill = "drill-check-control"
        self.progress.step(f"{drill}: does the data check catch a single wrong block?")
        array = self.create_array([md.Member(self.legs.fast),
                                   md.Member(self.legs.slow, write_mostly=True)],
                                  assume_clean=True)
        self.write_data(array, drill)
        self.check_data(array, drill, "before-corruption")
        # Copy block 10 over block 1000: a valid-looking block in the wrong place.
        self.check_device_then(array, ["dd", f"if={array}", f"of={array}", "bs=4096",
                                       "skip=10", "seek=1000", "count=1", "oflag=direct",
                                       "iflag=direct", "conv=notrunc", "status=none"])
        caught = not self.check_data(array, drill, "one-block-moved", expect_ok=False)
        self.run.add_result(config=drill, workload="one-block-moved", metric="corruption_caught",
                            value=1.0 if caught else 0.0, unit="count", leg="array")
        if not caught:
            raise DataCheckFailed(f"{drill}: the data check missed a moved block")
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

def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="vm1",
                        help="lab host (default vm1: start it with `python -m labs vm up`)")
    parser.add_argument("--quick", action="store_true",
                        help="short profile (a few minutes on a 2-core machine)")
    parser.add_argument("--seed", type=int, default=42, help="fio's random seed (default 42)")
    parser.add_argument("--fast-device", help="fast leg (default: the host's first lab disk)")
    parser.add_argument("--slow-device", help="slow leg (default: the host's second lab disk, "
                        "which a lab VM throttles)")
    parser.add_argument("--slow-delay-ms", type=int, default=1, metavar="MS",
                        help="dm-delay added to every I/O of the slow leg, in ms (0: none; "
                        "default 1; under TCG the guest's timers make it coarser: the lab "
                        "measures what it got)")
    parser.add_argument("--allow-device", action="append", default=[], metavar="PATH",
                        help="let the lab use this block device although it did not create it "
                        "(its data is destroyed)")


def choose_legs(host: Any, params: LabParameters) -> Legs:
    devices = list(getattr(host, "lab_devices", ()))
    fast = params.fast_device or (devices[0] if len(devices) > 0 else None)
    slow = params.slow_device or (devices[1] if len(devices) > 1 else None)
    if not fast or not slow:
        raise UsageError(f"host {host.name} has no two lab disks: name the legs with "
                         "--fast-device and --slow-device, or use a lab VM (vm1)")
    if fast == slow:
        raise UsageError(f"the fast and slow legs must differ (both are {fast})")
    return Legs(fast, slow)


def run_lab(params: LabParameters, out: Callable[[str], None] = print,
            progress_callback: Callable[[float, str], None] | None = None) -> Any:
    from labs.hosts import get_host
    from labs.records import RunRecorder, local_host_facts
    from labs.workspace import LabWorkspace

    out(f"# {params.command_line()}")
    out(f"# parameters: {asdict(params)}; profile {asdict(PROFILES[params.profile])}")
    progress = Progress(callback=progress_callback,
                        total_steps=major_steps(PROFILES[params.profile]))
    started = time.monotonic()
    host = get_host(params.host)
    try:
        legs = choose_legs(host, params)
        facts = local_host_facts()
        facts.update(name=host.name, lab_vm=host.name.startswith("vm"),
                     runner=local_host_facts())
        facts["kernel"] = host.run("uname -r", timeout_s=60).stdout.strip()
        facts["cpu_count"] = int(host.run("nproc", timeout_s=60).stdout.strip())
        if facts["lab_vm"]:
            from labs.vm import machine

            state = machine.read_state(host.name)
            if state is not None:
                facts["vm"] = {key: getattr(state, key) for key in (
                    "accel", "cpus", "memory_mib", "slow_iops", "slow_bps", "image_hash")}
        parameters = {**asdict(params), "profile_settings": asdict(PROFILES[params.profile]),
                      "fast_device": legs.fast, "slow_device": legs.slow,
                      "command_line": params.command_line(),
                      "configurations": [asdict(c) for c in CONFIGURATIONS],
                      "workloads": {k: {"rw": v[0], "iodepth": v[1], "rate_iops": v[2],
                                      "bs": BLOCK_SIZE}
                                    for k, v in WORKLOADS.items()}}
        with RunRecorder(LAB, parameters, seed=params.seed, lab_host=host.name,
                         host=facts) as recorder:
            recorder.add_command(params.command_line())
            with LabWorkspace(host, lab="write-mostly", allow_devices=params.allow_devices,
                              log=progress.step) as workspace:
                lab = WriteMostlyLab(host, workspace, recorder, params, legs, progress)
                lab.measure()
            recorder.add_result(config="lab", workload="wall", metric="wall_time_s",
                                value=time.monotonic() - started, unit="s", leg="none")
        out(f"recorded {recorder.final_path}")
        return recorder
    finally:
        host.close()


def run_from_args(args: argparse.Namespace) -> int:
    params = LabParameters(host=args.host, profile="quick" if args.quick else "full",
                           seed=args.seed, fast_device=args.fast_device,
                           slow_device=args.slow_device, slow_delay_ms=args.slow_delay_ms,
                           allow_devices=args.allow_device)
    if not 0 <= params.slow_delay_ms <= 1000:
        raise UsageError(f"--slow-delay-ms {params.slow_delay_ms}: use 0..1000")
    run_lab(params)
    return 0


# --- tables and charts for the book (from a recorded run) ------------------------------------

PERCENTILES = {"clat_p50_us": "p50", "clat_p99_us": "p99", "clat_p999_us": "p99.9"}
CONFIG_ORDER = [c.name for c in CONFIGURATIONS]
CONFIG_LABELS = {c.name: c.label for c in CONFIGURATIONS}


def latency_table(results: Any) -> Any:
    """Completion latency per configuration, workload and percentile (microseconds)."""
    import pandas as pd

    rows = results[results["config"].isin(CONFIG_ORDER) & results["metric"].isin(PERCENTILES)
                   & (results["leg"] == "array")]
    table = pd.DataFrame({
        "config": rows["config"], "label": rows["config"].map(CONFIG_LABELS),
        "workload": rows["workload"], "qd": rows["qd"].astype(int), "op": rows["op"],
        "percentile": rows["metric"].map(PERCENTILES), "latency_us": rows["value"]})
    return table.reset_index(drop=True)


def leg_table(results: Any, configs: list[str] | None = None) -> Any:
    """Reads and writes each leg served, per configuration and workload (one row per leg)."""
    configs = configs or CONFIG_ORDER
    rows = results[results["config"].isin(configs) & results["metric"].isin(["reads", "writes"])
                   & results["leg"].isin(["fast", "slow"])]
    dims = ["config", "workload", "leg"] + (["phase"] if "phase" in rows else [])
    table = rows.pivot_table(index=dims, columns="metric", values="value", aggfunc="sum",
                             dropna=False).reset_index()
    table = table.dropna(subset=["reads", "writes"], how="all")
    return table


def summary_table(results: Any) -> Any:
    """The figures the chapter quotes: QD1 read/write p50 and p99, and the slow leg's read share."""
    import pandas as pd

    latency = latency_table(results)
    qd1 = latency[latency["qd"] == 1]
    out = []
    for config in CONFIG_ORDER:
        row: dict[str, Any] = {"config": config, "label": CONFIG_LABELS[config]}
        for op, workload in (("read", "randread-qd1"), ("write", "randwrite-qd1")):
            for percentile in ("p50", "p99"):
                value = qd1[(qd1["config"] == config) & (qd1["workload"] == workload)
                            & (qd1["percentile"] == percentile)]["latency_us"]
                row[f"{op}_{percentile}_us"] = float(value.iloc[0]) if len(value) else None
        reads = results[(results["config"] == config) & (results["metric"] == "reads")
                        & results["workload"].str.startswith("randread")]
        total = reads["value"].sum()
        slow = reads[reads["leg"] == "slow"]["value"].sum()
        row["slow_read_share"] = float(slow / total) if total else None
        out.append(row)
    return pd.DataFrame(out)


def resync_table(results: Any) -> Any:
    """Every timed resync of a new fast leg: array size, seconds and the rate it implies."""
    rows = results[(results["workload"] == "resync") & (results["metric"] == "resync_s")]
    table = rows[["config", "size_mib", "value"]].rename(columns={"value": "resync_s"})
    table = table.assign(rate_mib_s=table["size_mib"] / table["resync_s"])
    return table.sort_values("size_mib").reset_index(drop=True)


def drill_events(results: Any) -> Any:
    rows = results[(results["metric"] == "event_s")]
    return rows[["config", "event", "value"]].rename(columns={"value": "t_s"}).reset_index(
        drop=True)


def recovery_timeline(results: Any, drill: str = "drill-fast-leg-lost") -> Any:
    rows = results[(results["config"] == drill) & (results["metric"] == "recovery_percent")]
    return rows[["t_s", "value"]].rename(columns={"value": "percent"}).sort_values(
        "t_s").reset_index(drop=True)


def streaming_comparison(measured_resync_mib_s: float, sizes_tb: tuple[float, ...] = (
        0.5, 1.0, 1.8, 2.5, 3.5)) -> Any:
    """Hours to refill a node of each size: by resync (measured rate, md's default ceiling)
    and by streaming from peers at the rate Hyperconnect's 12 to 24 hours for 1.8 TB imply."""
    import pandas as pd

    stream_fast = implied_rate_mib_s(ARTICLE["stream_node_bytes"], ARTICLE["stream_hours"][0])
    stream_slow = implied_rate_mib_s(ARTICLE["stream_node_bytes"], ARTICLE["stream_hours"][1])
    methods = {
        f"resync at this run's rate ({measured_resync_mib_s:.0f} MiB/s)": measured_resync_mib_s,
        "resync at md's default ceiling (195 MiB/s)": 200000 / 1024,
        f"streaming from peers, best case ({stream_fast:.0f} MiB/s)": stream_fast,
        f"streaming from peers, worst case ({stream_slow:.0f} MiB/s)": stream_slow,
    }
    rows = [{"method": method, "rate_mib_s": rate, "node_tb": size,
             "hours": transfer_hours(size * 1e12, rate)}
            for method, rate in methods.items() for size in sizes_tb]
    return pd.DataFrame(rows)


def run_provenance(run: Any) -> Any:
    """Where a recorded run came from, as a two-column table (the command, not every step)."""
    import pandas as pd

    meta = run.meta
    host = meta["host"]
    vm = host.get("vm", {})
    legs = meta["parameters"]
    rows = [
        ("run", f"{meta['lab']}/{meta['run_id']}"),
        ("command", meta["parameters"].get("command_line", "-")),
        ("seed", str(meta["seed"])),
        ("host", f"{host.get('name')}, kernel {host.get('kernel')}, {host.get('cpu_count')} "
                 f"CPUs" + (f", lab VM under {vm.get('accel', '?').upper()}" if vm else "")),
        ("legs", f"fast {legs.get('fast_device')}; slow {legs.get('slow_device')} throttled by "
                 f"QEMU to {vm.get('slow_iops', '?')} I/O per second, plus dm-delay "
                 f"{legs.get('slow_delay_ms')} ms"),
        ("tools", ", ".join(f"{k} {v}" for k, v in sorted(meta["tool_versions"].items()))),
        ("project commit", meta["git_commit"][:12]),
        ("started / finished (UTC)", f"{meta['started_at']} / {meta['finished_at']}"),
    ]
    return pd.DataFrame(rows, columns=["", "recorded run"])


def latency_chart(results: Any) -> Any:
    """Completion latency per configuration; dropdowns pick the workload and the percentile."""
    import altair as alt

    from labs import charts

    table = latency_table(results)
    workloads = [w for w in WORKLOADS if w in set(table["workload"])]
    workload = charts.dropdown("WORKLOAD", workloads[0], workloads, label="workload")
    percentile = charts.dropdown("PCT", "p50", ["p50", "p99", "p99.9"], label="percentile")
    order = [CONFIG_LABELS[c] for c in CONFIG_ORDER if c in set(table["config"])]
    base = alt.Chart(table).transform_filter(
        "datum.workload == WORKLOAD && datum.percentile == PCT")
    bars = base.mark_bar().encode(
        y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=330)),
        x=alt.X("latency_us:Q", scale=alt.Scale(type="log", domain=[10, 1_000_000]),
                title="completion latency (µs, log scale)"),
        x2=alt.datum(10),  # bars start at the axis: a log scale has no zero
        color=alt.Color("label:N", sort=order, legend=None),
        tooltip=["label:N", "workload:N", "percentile:N",
                 alt.Tooltip("latency_us:Q", format=",.0f", title="latency (µs)")])
    text = base.mark_text(align="left", dx=4).encode(
        y=alt.Y("label:N", sort=order), x="latency_us:Q",
        text=alt.Text("latency_us:Q", format=",.0f"))
    return (bars + text).add_params(workload, percentile).properties(
        width=420, height=alt.Step(26),
        title="4 KiB completion latency by configuration")


def legs_chart(results: Any) -> Any:
    """Which leg served the reads and the writes, as shares of each configuration's I/O."""
    import altair as alt

    table = leg_table(results)
    rows = []
    for config in [c for c in CONFIG_ORDER if c in set(table["config"])]:
        for op, prefix, metric in (("reads", "randread", "reads"),
                                   ("writes", "randwrite", "writes")):
            part = table[(table["config"] == config) & table["workload"].str.startswith(prefix)]
            for leg in ("fast", "slow"):
                rows.append({"label": CONFIG_LABELS[config], "op": op, "leg": f"{leg} leg",
                             "count": float(part[part["leg"] == leg][metric].sum())})
    import pandas as pd

    data = pd.DataFrame(rows)
    totals = data.groupby(["label", "op"])["count"].transform("sum")
    data["share"] = data["count"] / totals.where(totals > 0, 1)
    order = [CONFIG_LABELS[c] for c in CONFIG_ORDER if CONFIG_LABELS[c] in set(data["label"])]
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=330)),
        x=alt.X("share:Q", axis=alt.Axis(format="%"), title="share of the I/Os the legs served"),
        color=alt.Color("leg:N", title=None, scale=alt.Scale(domain=["fast leg", "slow leg"])),
        column=alt.Column("op:N", title=None),
        tooltip=["label:N", "op:N", "leg:N", alt.Tooltip("count:Q", format=",.0f"),
                 alt.Tooltip("share:Q", format=".2%")],
    ).properties(width=220, height=alt.Step(24),
                 title="Where the reads and the writes landed (per-device counters)")


def drills_chart(results: Any) -> Any:
    """The drills' steps on a time line, and the new fast leg's recovery percentage."""
    import altair as alt

    events = drill_events(results)
    points = alt.Chart(events).mark_point(filled=True, size=80).encode(
        x=alt.X("t_s:Q", title="seconds since the drill started"),
        y=alt.Y("config:N", title=None),
        color=alt.Color("config:N", legend=None),
        tooltip=["config:N", "event:N", alt.Tooltip("t_s:Q", format=".1f")])
    labels = alt.Chart(events).mark_text(align="left", angle=315, dx=4, dy=-4,
                                         fontSize=10).encode(
        x="t_s:Q", y="config:N", text="event:N")
    timeline = recovery_timeline(results)
    recovery = alt.Chart(timeline).mark_line(point=True).encode(
        x=alt.X("t_s:Q", title="seconds since the drill started"),
        y=alt.Y("percent:Q", title="recovery of the new fast leg (%)",
                scale=alt.Scale(domain=[0, 100])),
        tooltip=[alt.Tooltip("t_s:Q", format=".1f"), alt.Tooltip("percent:Q", format=".1f")])
    return alt.vconcat(
        (points + labels).properties(width=520, height=160, title="Failure drills, step by step"),
        recovery.properties(width=520, height=160,
                            title="Instance replacement: the new fast leg catches up"))


def resync_chart(results: Any) -> Any:
    """Refill time against node size: resync at the measured rate vs streaming from peers.

    The slider sets the streaming rate; the chart recomputes in the browser.
    """
    import altair as alt
    import pandas as pd

    from labs import charts

    measured = resync_table(results)
    rate = float(measured["size_mib"].sum() / measured["resync_s"].sum())
    sizes = [round(0.1 * i, 1) for i in range(1, 41)]
    stream_default = round(implied_rate_mib_s(ARTICLE["stream_node_bytes"],
                                              ARTICLE["stream_hours"][0]))
    grid = pd.DataFrame({"node_tb": sizes})
    stream = charts.slider("STREAM", stream_default, 5, 400, 5,
                           label="streaming from peers (MiB/s)")
    lines = alt.Chart(grid).transform_calculate(
        resync_lab=f"datum.node_tb * 1e12 / ({rate} * 1048576) / 3600",
        resync_ceiling="datum.node_tb * 1e12 / (200000 * 1024) / 3600",
        streaming="datum.node_tb * 1e12 / (STREAM * 1048576) / 3600",
    ).transform_fold(["resync_lab", "resync_ceiling", "streaming"], as_=["method", "hours"]
                     ).transform_calculate(
        label="datum.method == 'resync_lab' ? 'resync at this run\\'s rate (" +
              f"{rate:.0f} MiB/s)' : datum.method == 'resync_ceiling' ? " +
              "'resync at md\\'s default ceiling (195 MiB/s)' : 'streaming from peers'"
    ).mark_line().encode(
        x=alt.X("node_tb:Q", title="data on the node (TB)"),
        y=alt.Y("hours:Q", title="hours to refill a replaced node", scale=alt.Scale(type="log")),
        color=alt.Color("label:N", title=None, legend=alt.Legend(labelLimit=400)),
        tooltip=["label:N", "node_tb:Q", alt.Tooltip("hours:Q", format=".1f")])
    reported = pd.DataFrame([
        {"node_tb": ARTICLE["stream_node_bytes"] / 1e12, "hours": h,
         "what": f"reported: streaming {h:g} h"} for h in ARTICLE["stream_hours"]] + [
        {"node_tb": ARTICLE["resync_array_kib"] * 1024 / 1e12,
         "hours": ARTICLE["resync_reported_hours"], "what": "reported: RAID resync about 1 h"}])
    points = alt.Chart(reported).mark_point(shape="diamond", size=110, filled=True,
                                            color="#000000").encode(
        x="node_tb:Q", y="hours:Q", tooltip=["what:N", "node_tb:Q", "hours:Q"])
    return (lines + points).add_params(stream).properties(
        width=460, height=300,
        title="Refilling a replaced node: resync from the network disk vs streaming")


def lab_panel() -> Any:
    """The live panel of the lab page: run the lab on a lab host, record it, redraw."""
    from labs.widgets import ChoiceParameter, IntParameter, LabPanel

    def parameters_from(values: dict) -> LabParameters:
        return LabParameters(host=values["host"], profile=values["profile"],
                             seed=values["seed"], slow_delay_ms=values["slow_delay_ms"])

    def run(values: dict, progress: Callable[[float, str], None]) -> Any:
        from labs.records import load_run

        recorder = run_lab(parameters_from(values), out=lambda line: None,
                           progress_callback=progress)
        return load_run(recorder.final_path)

    return LabPanel(
        title="write-mostly RAID1 on a lab VM",
        parameters=[
            ChoiceParameter("host", "lab host", "vm1", ("vm1",)),
            ChoiceParameter("profile", "profile", "quick", ("quick", "full")),
            IntParameter("seed", "seed", 42, 0, 2**31 - 1),
            IntParameter("slow_delay_ms", "slow leg delay (ms)", 1, 0, 20),
        ],
        command=lambda values: parameters_from(values).command_line(),
        run=run,
        chart=lambda recorded: latency_chart(recorded.results),
    )


def _us(value: float) -> str:
    return f"{value / 1000:.1f} ms" if value >= 1000 else f"{value:.0f} µs"


def page_figures(run: Any) -> dict[str, str]:
    """Every number the lab page quotes, formatted, computed from a recorded run."""
    results = run.results
    summary = summary_table(results).set_index("config")
    latency = latency_table(results)
    resync = resync_table(results)

    def p(config: str, workload: str, percentile: str = "p50") -> float:
        row = latency[(latency.config == config) & (latency.workload == workload)
                      & (latency.percentile == percentile)]
        if row.empty:
            raise LabError(f"run {run.run_id}: no {percentile} latency for {config}/{workload}")
        return float(row.latency_us.iloc[0])

    def iops(config: str, workload: str) -> float:
        rows = results[(results.config == config) & (results.workload == workload)
                       & (results.metric == "iops")]
        return float(rows.value.iloc[0])

    f: dict[str, str] = {}
    for leg in ("fast", "slow"):
        for workload in ("randread-qd1", "randwrite-qd1"):
            for percentile in ("p50", "p99"):
                f[f"{leg}_{workload}_{percentile}"] = _us(p(f"{leg}-only", workload, percentile))
        f[f"{leg}_read_qd16_iops"] = f"{iops(f'{leg}-only', 'randread-qd16'):,.0f}"
    f["slow_iops_cap"] = str(run.meta["host"].get("vm", {}).get("slow_iops", "?"))
    f["delay_ms"] = str(run.meta["parameters"]["slow_delay_ms"])
    f["plain_share"] = f"{summary.loc['raid1', 'slow_read_share']:.1%}"
    f["wm_share"] = f"{summary.loc['raid1-wm', 'slow_read_share']:.2%}"
    f["fast_read_p50"] = _us(p("fast-only", "randread-qd1"))
    f["wm_read_p50"] = _us(p("raid1-wm", "randread-qd1"))
    f["plain_read_qd16_p99"] = _us(p("raid1", "randread-qd16", "p99"))
    f["wm_read_qd16_p99"] = _us(p("raid1-wm", "randread-qd16", "p99"))
    f["wm_write_p50"] = _us(p("raid1-wm", "randwrite-qd1"))
    f["wb_write_p50"] = _us(p("raid1-wm-wb", "randwrite-qd1"))
    f["wb_paced_p50"] = _us(p("raid1-wm-wb", "randwrite-qd1-paced"))
    f["wm_paced_p50"] = _us(p("raid1-wm", "randwrite-qd1-paced"))
    f["wb_qd16_iops"] = f"{iops('raid1-wm-wb', 'randwrite-qd16'):,.0f}"
    f["slow_qd16_write_iops"] = f"{iops('slow-only', 'randwrite-qd16'):,.0f}"
    backlog = results[results.metric == "write_behind_max_backlog"].set_index("config")["value"]
    f["backlog_slot0"] = f"{backlog['raid1-wm-wb']:.0f}"
    f["backlog_slot1"] = f"{backlog['raid1-wm-wb-slot1']:.0f}"
    f["slot1_write_p50"] = _us(p("raid1-wm-wb-slot1", "randwrite-qd1"))
    rate = float(resync.size_mib.sum() / resync.resync_s.sum())
    stream_rate = implied_rate_mib_s(ARTICLE["stream_node_bytes"], ARTICLE["stream_hours"][0])
    ceiling_mib_s = 200000 / 1024
    f["resync_rate"] = f"{rate:.0f} MiB/s"
    f["resync_sizes"] = ", ".join(f"{s:.0f} MiB in {t:.1f} s" for s, t in
                                  zip(resync.size_mib, resync.resync_s, strict=True))
    f["node_resync_h"] = f"{transfer_hours(3.5e12, rate):.0f}"
    f["stream_rate"] = f"{stream_rate:.0f} MiB/s"
    ratio = rate / stream_rate
    f["resync_vs_stream"] = ("faster than" if ratio > 1.2 else
                             "slower than" if ratio < 0.8 else "about as fast as")
    f["ceiling_h"] = f"{transfer_hours(3.5e12, ceiling_mib_s):.1f}"
    f["article_estimate_h"] = (
        f"{ARTICLE['resync_array_kib'] / ARTICLE['resync_md_speed_kib_s'] / 3600:.1f}")
    wall = results[results.metric == "wall_time_s"].value.iloc[0]
    f["wall_min"] = f"{wall / 60:.0f}"
    readd = results[(results.config == "drill-slow-leg-lost") & (results.metric == "resync_s")]
    f["readd_s"] = f"{readd.value.iloc[0]:.1f} s"
    replace = resync[resync.config == "drill-fast-leg-lost"].iloc[0]
    f["replace_resync"] = f"{replace.size_mib:.0f} MiB in {replace.resync_s:.1f} s"
    # Exercises.
    fast_write_iops = iops("fast-only", "randwrite-qd1")
    slow_write_iops = iops("slow-only", "randwrite-qd16")
    burst_s = WRITE_BEHIND / max(fast_write_iops - slow_write_iops, 1)
    f["ex_fast_w"] = f"{fast_write_iops:,.0f}"
    f["ex_slow_w"] = f"{slow_write_iops:,.0f}"
    f["ex_burst_ms"] = f"{burst_s * 1000:.0f} ms"
    f["ex_lost_kib"] = f"{WRITE_BEHIND * 4:,} KiB"
    f["ex_node_resync_h"] = f"{transfer_hours(3.5e12, rate):.1f}"
    f["ex_node_stream_h"] = f"{transfer_hours(3.5e12, stream_rate):.1f}"
    f["ex_ceiling_h"] = f"{transfer_hours(3.5e12, ceiling_mib_s):.1f}"
    return f
