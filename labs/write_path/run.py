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
from typing import Any

from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder
from labs.write_path import model
from labs.write_path.logged_disk import LoggedDisk
from labs.write_path.model import Way
from labs.write_path.params import Parameters

SLICE_SECTORS = 131072  # 64 MiB in 512-byte sectors: each slice of the first lab disk


class Bench:
    """The lab's logged disk in the VM, the probe beside it, and one cut at a time."""

    def __init__(self, ws: LabWorkspace, rec: RunRecorder, params: Parameters) -> None:
        self.ws, self.params = ws, params
        self.disk = LoggedDisk(ws, prefix="wp", slice_sectors=SLICE_SECTORS)

    def cut(self, way: Way, number: int) -> dict[str, Any]:
        """One trial: a new file system through the log, the writer, the cut, a count per fault."""
        written = self.disk.new_file_system("written", way.mount_options)
        records = f"{written}/records"
        acks = f"{self.ws.work_dir}/acks-{way.name}-{number}"
        nonce = secrets.token_hex(4)
        probe = self.disk.probe_json
        probe("prepare", records, "--records", str(self.params.records_needed()))
        pid_file = f"{self.ws.work_dir}/trial.pid"
        # Journaled as a server: should the lab die mid-trial, `clean` kills the probe and
        # its writer (the processes whose command line names the records file).
        self.ws.track("server", records, pid_file=pid_file)
        trial = probe("trial", records, "--mode", way.probe_mode, "--rate",
                      f"{self.params.rate:g}", "--seconds", f"{self.params.write_s:g}",
                      "--nonce", nonce, "--dm", self.disk.logged_name, "--acks", acks,
                      "--pid-file", pid_file)
        self.ws.remove("server", records)
        acked = str(trial["acked"])
        crash = probe("count", records, "--nonce", nonce, "--acked", acked)
        self.disk.close_log(written)
        found = {"process crash": crash}
        for fault, mark in model.MARKS.items():
            found[fault], found[f"replay to {mark}"] = self.rebuilt_count(mark, nonce, acked)
        return {"way": way.name, "cut": number, "trial": trial, **found}

    def rebuilt_count(self, mark: str, nonce: str, acked: str) -> tuple[dict, dict]:
        """The disk rebuilt from the log up to `mark`, mounted and counted: (the count, the
        replay's tally)."""
        replayed, replay = self.disk.rebuilt(mark)
        try:
            count = self.disk.probe_json("count", f"{replayed}/records", "--nonce", nonce,
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


def steps(params: Parameters) -> list[str]:
    """The run's steps, in order: the set-up, one cut per way and round, the record."""
    return (["setting up the two 64 MiB slices and the probe"]
            + ["a cut"] * (params.cuts * len(params.ways)) + ["writing the recorded run"])


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    ways = [model.WAYS[name] for name in params.ways]
    progress.plan(steps(params))
    with LabRun(params, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        progress.step("setting up the two 64 MiB slices and the probe")
        bench = Bench(ws, rec, params)
        bench.disk.set_up()
        rec.add_tool_version("kernel", host.run(["uname", "-r"], timeout_s=60).stdout.strip())
        for number in range(1, params.cuts + 1):
            for way in ways:
                progress.step("a cut", f"{number}/{params.cuts}: {way.label}, "
                                       f"{params.write_s:g} s of writing")
                found = bench.cut(way, number)
                record_cut(rec, found)
                progress.detail(f"{way.label}: {found['trial']['acked']} acknowledged; lost "
                              + ", ".join(f"{found[fault]['lost']} to the {fault}"
                                          for fault in model.FAULTS))
        progress.step("writing the recorded run")
    return lab_run.recorded()
