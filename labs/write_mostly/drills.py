"""The write-mostly lab's failure drills, each followed by a data check of every block.

A mixin of WriteMostlyLab (run.py): the drills use its arrays, fio runs and counters.
"""

from __future__ import annotations

import time
from typing import Any

from labs.errors import LabError
from labs.tools import fio as fio_tool
from labs.tools import mdadm as md
from labs.write_mostly.params import DATA_BLOCK_SIZE, MD_NAME, WORKLOADS


class DataCheckFailed(LabError):
    """The data written before a drill did not read back intact."""


class Drills:
    """Losing the slow leg, losing the fast leg, resync time against size, the control."""

    # -- resync times -------------------------------------------------------------------------

    def add_kernel_resync_s(self, array: str, raw_prefix: str, **dims: Any) -> None:
        """md's own time for the copy that just ended, from the kernel log's lines that began
        and ended it: exact, where the lab's polls of /proc/mdstat (a command over SSH into
        an emulated VM) see the end seconds late. Nothing is recorded if the log lacks them."""
        name = self.md_kernel_name(array)
        log = self.host.sudo(md.KERNEL_LOG_COMMAND, timeout_s=60).stdout
        spans = md.parse_sync_log(log, name)
        if not spans or spans[-1].outcome != "done":
            self.progress.detail(f"{raw_prefix}: md's start and end lines are not in the kernel "
                                 "log; the resync keeps the time of the lab's polls only")
            return
        self.run.add_raw(f"mdstat/{raw_prefix}-kernel-log.txt",
                         "\n".join(line for line in log.splitlines() if name in line))
        self.run.add_result(metric="resync_kernel_s", value=spans[-1].seconds, unit="s",
                            **dims)

    # -- data checks --------------------------------------------------------------------------

    def data_job(self, target: str, **options: str | int) -> fio_tool.FioJob:
        # Sequential, seeded, a crc32c over every 64 KiB block and the block's own offset in
        # its header: a lost 4 KiB piece (zeros), a stale one or one from elsewhere all fail.
        # 64 KiB rather than 4 KiB blocks: the slow leg is limited in operations per second.
        return fio_tool.FioJob(name="data", filename=target, rw="write", bs=DATA_BLOCK_SIZE,
                               iodepth=16, size=f"{self.scale.data_mib}M",
                               seed=self.params.seed,
                               options={"verify": "crc32c", **options})

    def write_data(self, target: str, drill: str) -> None:
        self.fio(f"{drill}/data-write", [self.data_job(target, do_verify=0)])

    def check_data(self, target: str, drill: str, step: str, expect_ok: bool = True) -> bool:
        """Read the data back through `target` and verify every block; records the outcome."""
        document, _rows, deltas, _log = self.fio(f"{drill}/data-check-{step}",
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

    def drill_slow_leg_lost(self) -> None:
        """The network disk goes away: the array serves on, degraded, from the fast leg."""
        drill = "drill-slow-leg-lost"
        self.progress.step("drill: the slow leg lost", f"{drill}: fail and remove it")
        array = self.create_array([md.Member(self.legs.fast),
                                   md.Member(self.legs.slow, write_mostly=True)],
                                  bitmap="internal", assume_clean=True)
        t0 = time.monotonic()
        self.write_data(array, drill)
        self.event(drill, "data written", t0)
        self.manage(array, "fail", self.legs.slow)
        self.event(drill, "slow leg failed", t0)
        self.mdstat(f"{drill}-failed")
        self.member_states(array, f"{drill}-failed")
        self.manage(array, "remove", self.legs.slow)
        self.event(drill, "slow leg removed", t0)
        state = self.mdstat(f"{drill}-degraded").array(self.md_kernel_name(array))
        self.run.add_result(config=drill, workload="state", metric="degraded",
                            value=1.0 if state.degraded else 0.0, unit="count", leg="array")
        # The array keeps serving: reads and writes beyond the verified data.
        served = ("randread-qd16", "randwrite-qd16")
        outcomes = self.fio_batch([(f"{drill}/{workload}", [self.workload_job(
            workload, array, runtime_s=self.scale.drill_runtime_s,
            offset_mib=self.scale.data_mib, size_mib=self.scale.data_mib)])
            for workload in served])
        for workload, (_doc, rows, deltas, _log) in zip(served, outcomes, strict=True):
            self.record_fio_rows(drill, rows, deltas, workload, WORKLOADS[workload][1],
                                 phase="degraded")
        self.event(drill, "served degraded", t0)
        self.check_data(array, drill, "degraded")
        self.event(drill, "data checked", t0)
        # The disk comes back: with the bitmap md copies only what changed meanwhile.
        self.manage(array, "add", self.legs.slow, write_mostly=True)
        self.event(drill, "slow leg re-added", t0)
        t_add = time.monotonic()
        self.wait_for_sync(array, f"{drill}-readd", t0)
        self.run.add_result(config=drill, workload="re-add", metric="resync_s",
                            value=time.monotonic() - t_add, unit="s", leg="slow")
        self.add_kernel_resync_s(array, f"{drill}-readd", config=drill, workload="re-add",
                                 leg="slow")
        self.event(drill, "in sync", t0)
        self.mdstat(f"{drill}-in-sync")
        self.check_data(array, drill, "after-re-add")
        self.event(drill, "data checked again", t0)
        self.destroy_array()

    def drill_fast_leg_lost(self) -> None:
        """An instance replacement: the local disk comes back empty; rebuild from the slow leg."""
        drill = "drill-fast-leg-lost"
        size_mib = self.scale.drill_array_mib
        self.progress.step("drill: the fast leg lost", f"{drill}: replaced by an empty disk "
                           f"({size_mib} MiB array)")
        array = self.create_array([md.Member(self.legs.fast),
                                   md.Member(self.legs.slow, write_mostly=True)],
                                  bitmap="internal", assume_clean=True, size_mib=size_mib)
        t0 = time.monotonic()
        self.write_data(array, drill)
        self.event(drill, "data written", t0)
        self.ws.remove("md", MD_NAME)
        self.event(drill, "instance lost (array stopped)", t0)
        # The new instance's local disk is blank: no superblock, no data.
        self.zero_superblocks(self.legs.fast)
        self.check_device_then(self.legs.fast, [
            "dd", "if=/dev/zero", f"of={self.legs.fast}", "bs=1M",
            f"count={self.scale.data_mib + 16}", "oflag=direct", "status=none"])
        self.event(drill, "fast leg blank", t0)
        # As on a new instance: the old array's superblock goes, then a new array is created
        # from the surviving network disk and a missing slot.
        self.zero_superblocks(self.legs.slow)
        array = self.create_array([md.Member(self.legs.slow, write_mostly=True),
                                   md.Member("missing")], bitmap="internal", size_mib=size_mib)
        self.event(drill, "array re-created from the slow leg", t0)
        self.mdstat(f"{drill}-recreated")
        self.check_data(array, drill, "slow-leg-only")
        self.event(drill, "data checked on the slow leg", t0)
        self.reads_phase(array, drill, "slow-leg-only")
        self.manage(array, "add", self.legs.fast)
        # The clock starts at the add, as in the size drill: a status call first would
        # take seconds of the resync out of its time under emulation.
        t_add = time.monotonic()
        self.event(drill, "new fast leg added", t0)
        self.mdstat(f"{drill}-recovering")
        timeline: list[dict[str, Any]] = []
        self.wait_for_sync(array, drill, t0, timeline)
        resync_s = time.monotonic() - t_add
        self.event(drill, "in sync", t0)
        for point in timeline:
            self.run.add_result(config=drill, workload="timeline", metric="recovery_percent",
                                value=point["percent"], unit="percent", leg="fast",
                                t_s=round(point["t_s"], 3))
        self.run.add_result(config=drill, workload="resync", metric="resync_s", value=resync_s,
                            unit="s", leg="fast", size_mib=size_mib)
        self.add_kernel_resync_s(array, drill, config=drill, workload="resync", leg="fast",
                                 size_mib=size_mib)
        self.mdstat(f"{drill}-in-sync")
        self.reads_phase(array, drill, "after-resync")
        self.check_data(array, drill, "after-resync")
        self.event(drill, "data checked after resync", t0)
        self.destroy_array()

    def check_device_then(self, device: str, argv: list[str]) -> None:
        # Safe: the guard allows the device first (a lab VM disk or a journaled device).
        self.guarded(argv, [device])

    def reads_phase(self, array: str, drill: str, phase: str) -> None:
        _doc, rows, deltas, _log = self.fio(f"{drill}/randread-{phase}", [self.workload_job(
            "randread-qd16", array, runtime_s=self.scale.drill_runtime_s,
            size_mib=self.scale.data_mib)])
        self.record_fio_rows(drill, rows, deltas, "randread-qd16", 16, phase=phase)

    def drill_resync_sizes(self) -> None:
        """Resync time against array size: the recovery of a new fast leg, size by size."""
        drill = "drill-resync-size"
        for size_mib in self.scale.resync_sizes_mib:
            self.progress.step("drill: a resync", f"{drill}: {size_mib} MiB array, new fast "
                                                  "leg")
            array = self.create_array([md.Member(self.legs.slow, write_mostly=True),
                                       md.Member("missing")], bitmap="internal",
                                      size_mib=size_mib)
            self.manage(array, "add", self.legs.fast)
            t0 = time.monotonic()
            timeline: list[dict[str, Any]] = []
            before = self.leg_stats()
            seconds = self.wait_for_sync(array, f"{drill}-{size_mib}mib", t0, timeline)
            deltas = {leg: s - before[leg] for leg, s in self.leg_stats().items()}
            speeds = [p["speed_kib_s"] for p in timeline if p["speed_kib_s"]]
            dims = {"size_mib": size_mib, "leg": "fast"}
            self.run.add_result(config=drill, workload="resync", metric="resync_s",
                                value=seconds, unit="s", **dims)
            self.add_kernel_resync_s(array, f"{drill}-{size_mib}mib", config=drill,
                                     workload="resync", **dims)
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
        self.progress.step("drill: the data check's control", f"{drill}: does it catch a "
                           "single wrong block?")
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
