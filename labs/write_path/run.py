"""Run the write-path lab in a lab VM: a disk whose writes dm-log-writes logs, a writer, a
cut, the disk rebuilt as the cut would leave it, and a count of what each fault took.

The VM's first lab disk holds two 64 MiB slices (dm-linear): `wp-data`, under the writer's
file system, and `wp-replay`, where the cut's disk is rebuilt. The second lab disk holds the
log. Each cut gets a new file system, made through the logging device, so that the log
holds every write the rebuilt disk needs.
"""

from __future__ import annotations

import json
import secrets
import shlex
from pathlib import Path
from typing import Any

from labs.infra.facts import host_facts
from labs.infra.hosts import Host, printed_json
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder, load_run, new_run_id
from labs.write_path import model
from labs.write_path.model import Way
from labs.write_path.params import Parameters

PROBE_SOURCE = Path(__file__).with_name("probe.py")
SLICE_SECTORS = 131072  # 64 MiB in 512-byte sectors: each slice of the first lab disk
LAB_DISKS = ("/dev/vdb", "/dev/vdc")  # a lab VM's two lab disks: the slices, the log
DATA, REPLAY, LOGGED = "wp-data", "wp-replay", "wp-logged"
# No discards (the log would need them replayed as zeroes) and no lazy initialisation (a
# kernel thread would go on writing the inode tables during the trial).
MKFS = ["mkfs.ext4", "-q", "-F", "-b", "4096", "-E",
        "nodiscard,lazy_itable_init=0,lazy_journal_init=0"]


class Bench:
    """The lab's devices in the VM, the probe beside them, and one cut at a time."""

    def __init__(self, ws: LabWorkspace, rec: RunRecorder, params: Parameters) -> None:
        self.ws, self.rec, self.params = ws, rec, params
        self.probe = f"{ws.work_dir}/probe.py"
        self.data = self.replay = ""

    def sudo(self, argv: list[str], devices: list[str] | None = None,
             timeout_s: float = 600) -> str:
        if devices is not None:  # the workspace records what it runs guarded
            return self.ws.run_guarded(argv, devices, timeout_s=timeout_s).stdout
        self.rec.add_command(f"[{self.ws.host.name}] {shlex.join(argv)}")
        return self.ws.host.sudo(argv, timeout_s=timeout_s).stdout

    def probe_json(self, *args: str, devices: list[str] | None = None) -> dict[str, Any]:
        return printed_json(self.sudo(["python3", self.probe, *args], devices))

    def set_up(self) -> None:
        self.ws.prepare()
        self.ws.host.put_as_root(PROBE_SOURCE, self.probe)
        first = LAB_DISKS[0]
        self.data = self.ws.make_dm(DATA, f"0 {SLICE_SECTORS} linear {first} 0", [first])
        self.replay = self.ws.make_dm(
            REPLAY, f"0 {SLICE_SECTORS} linear {first} {SLICE_SECTORS}", [first])

    def cut(self, way: Way, number: int) -> dict[str, Any]:
        """One trial: a new file system through the log, the writer, the cut, a count per fault."""
        log_disk = LAB_DISKS[1]
        logged = self.ws.make_dm(LOGGED, f"0 {SLICE_SECTORS} log-writes {self.data} {log_disk}",
                                 [self.data, log_disk], modules=["dm_log_writes"])
        # Safe: the device is the lab's own logging device, made just above.
        self.sudo([*MKFS, logged], [logged])
        written = self.ws.mount(logged, "written", way.mount_options)
        records = f"{written}/records"
        acks = f"{self.ws.work_dir}/acks-{way.name}-{number}"
        nonce = secrets.token_hex(4)
        self.probe_json("prepare", records, "--records", str(self.params.records_needed()))
        pid_file = f"{self.ws.work_dir}/trial.pid"
        # Journaled as a server: should the lab die mid-trial, `clean` kills the probe and
        # its writer (the processes whose command line names the records file).
        self.ws.track("server", records, pid_file=pid_file)
        trial = self.probe_json("trial", records, "--mode", way.probe_mode, "--rate",
                                f"{self.params.rate:g}", "--seconds", f"{self.params.write_s:g}",
                                "--nonce", nonce, "--dm", LOGGED, "--acks", acks,
                                "--pid-file", pid_file)
        self.ws.remove("server", records)
        acked = str(trial["acked"])
        crash = self.probe_json("count", records, "--nonce", nonce, "--acked", acked)
        self.ws.remove("mount", written)
        # Removing the logging device writes the rest of its log and the final entry count.
        self.ws.remove("dm", LOGGED)
        found = {"process crash": crash}
        for fault, mark in model.MARKS.items():
            found[fault], found[f"replay to {mark}"] = self.rebuilt_count(mark, nonce, acked)
        return {"way": way.name, "cut": number, "trial": trial, **found}

    def rebuilt_count(self, mark: str, nonce: str, acked: str) -> tuple[dict, dict]:
        """The disk rebuilt from the log up to `mark` on the replay slice, mounted (ext4
        replays its journal) and counted: (the count, the replay's tally)."""
        # Safe: the replay slice is the lab's own dm device; zeroed so nothing of an earlier
        # replay can be read back as this one's.
        self.sudo(["dd", "if=/dev/zero", f"of={self.replay}", "bs=1M",
                   f"count={SLICE_SECTORS // 2048}", "oflag=direct", "status=none"],
                  [self.replay])
        replay = self.probe_json("replay", LAB_DISKS[1], self.replay, "--mark", mark,
                                 devices=[self.replay])
        replayed = self.ws.mount(self.replay, "replayed")
        try:
            count = self.probe_json("count", f"{replayed}/records", "--nonce", nonce,
                                    "--acked", acked)
        finally:
            self.ws.remove("mount", replayed)
        return count, replay


def record_cut(rec: RunRecorder, found: dict[str, Any]) -> None:
    way = model.WAYS[found["way"]]
    config = f"{way.name}-cut{found['cut']}"
    rec.add_raw(f"cuts/{config}.json", json.dumps(found, indent=1))
    ages = found["trial"]["ack_age_s"]
    dims = {"way": way.name, "cut": found["cut"]}
    rec.add_result(config=config, workload="records", metric="acked",
                   value=found["trial"]["acked"], unit="count", **dims)
    for fault in model.FAULTS:
        seen = found[fault]
        lost_ages = [age for age, bit in zip(ages, seen["kept_bits"], strict=True) if bit == "0"]
        slug = fault.replace(" ", "_")
        rec.add_result(config=config, workload=slug, metric="lost", value=seen["lost"],
                       unit="count", fault=fault, **dims)
        rec.add_result(config=config, workload=slug, metric="model_most_lost",
                       value=model.most_lost(ages, way.window_s(fault)), unit="count",
                       fault=fault, **dims)
        if lost_ages:  # how old the oldest lost record was at the cut
            rec.add_result(config=config, workload=slug, metric="oldest_lost_age_s",
                           value=max(lost_ages), unit="s", fault=fault, **dims)
        rec.add_result(config=config, workload=slug, metric="files_found",
                       value=int(seen["file_exists"]), unit="count", fault=fault, **dims)


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    ways = [model.WAYS[name] for name in params.ways]
    progress.expect(1 + len(ways) * params.cuts + 1)
    run_id = new_run_id(host.name)
    recorder = RunRecorder(params.LAB, params.as_record(), seed=params.seed, run_id=run_id,
                           lab_host=host.name, host=host_facts(host))
    with recorder as rec, LabWorkspace(host, lab=params.LAB, run_id=run_id,
                                       on_command=rec.add_command) as ws:
        rec.add_command(params.command_line())
        progress.step("setting up the two 64 MiB slices and the probe")
        bench = Bench(ws, rec, params)
        bench.set_up()
        rec.add_tool_version("kernel", host.run(["uname", "-r"], timeout_s=60).stdout.strip())
        for number in range(1, params.cuts + 1):
            for way in ways:
                progress.step(f"cut {number}/{params.cuts}: {way.label}, "
                              f"{params.write_s:g} s of writing")
                found = bench.cut(way, number)
                record_cut(rec, found)
                progress.detail(f"{way.label}: {found['trial']['acked']} acknowledged; lost "
                              + ", ".join(f"{found[fault]['lost']} to the {fault}"
                                          for fault in model.FAULTS))
        progress.step("writing the recorded run")
    return load_run(recorder.final_path)
