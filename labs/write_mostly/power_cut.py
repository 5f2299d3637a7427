"""The power-cut drill: the instance dies with writes acknowledged but not yet on the slow leg.

On a lab VM with disk legs, the fast leg is a loop device over a file in a tmpfs inside the
VM: like an instance store, it is gone when the power goes. The slow leg is the VM's capped
disk (with the lab's dm-delay over it), which keeps what reached it, as a network disk does.
A writer in the VM writes numbered 4 KiB blocks 1, 2, 3, ... to the array (O_DIRECT, and in
most settings O_DSYNC: each returns once md reports it durable) and prints `ack N` after
each; the
controller writes every acknowledgement down (labs/infra/acks.py). Then QEMU is killed, the
VM boots again, md assembles the array from the slow leg alone, and a reader counts the
acknowledged blocks that are not there, intact.

The settings (CUT_SETTINGS), each one variable apart from the one before:
- write-mostly alone, each write O_DSYNC: every write waits for the slow leg (safe);
- write-behind, O_DSYNC: a database's commit (the run counts the slow disk's flushes);
- write-behind, no sync: the write returns once md has it, the case write-behind is for;
- write-behind, no sync, the blocks in order. The others write their blocks in a shuffled
  order, as a database writes pages: md (before a 2026 fix) holds a write to the
  write-mostly leg back while the one next to it is still behind, so writes in order
  barely go behind.

The slow leg sits in slot 0, marked write-mostly at creation: the layout whose writes went
behind on every kernel the lab has measured (section 4 of the lab page).

A mixin of WriteMostlyLab (run.py), like the other drills.
"""

from __future__ import annotations

import random
import secrets
import shlex
import time

from labs.errors import LabError, UsageError
from labs.infra.acks import AckStream
from labs.infra.hosts import Host
from labs.infra.vm import machine, power
from labs.tools import mdadm as md
from labs.write_mostly.cut_blocks import (
    BLOCK_BYTES,
    CHECK_SCRIPT,
    WRITER_SCRIPT,
    BlockCheck,
    parse_check,
)
from labs.write_mostly.params import CUT_SETTINGS, MD_NAME, WRITE_BEHIND, CutSetting
from labs.write_mostly.params import POWER_CUT_DRILL as DRILL

FIRST_ACK_TIMEOUT_S = 300


def region_blocks(write_s: float, cap_iops: float | None) -> int:
    """Blocks enough for the writer: the slow leg's pace (the sustained rate either way) for
    twice the writing time, the write-behind backlog, and room (an uncapped leg: 5,000/s);
    at most 256 MiB, which a fast leg in the VM's memory must hold."""
    return min(int(2 * write_s * (cap_iops or 5000)) + 4 * WRITE_BEHIND + 1024, 65536)


def can_cut_power(host: Host, legs_mode: str, part: str) -> bool:
    """Whether the drill runs here: a lab VM of this install, its two disks as the legs, and a
    part that has it (not --part sweep). With --part power-cut, a host where it cannot is
    refused in one line."""
    possible = (part != "sweep" and legs_mode == "disks" and not host.is_local
                and machine.read_state(host.name) is not None)
    if part == "power-cut" and not possible:
        raise UsageError(f"host {host.name}: --part power-cut cuts a lab VM's power and uses "
                         "its two disks (`python -m labs vm up`, then --host vm1)")
    return possible


class PowerCut:
    """The power-cut drill; needs a lab VM of this install and its two disks as the legs."""

    def drill_power_cut(self) -> None:
        if not self.power_cut:
            self.progress.detail("no power-cut drill: --part sweep leaves it out (--part "
                                 "power-cut runs it)" if self.params.part == "sweep" else
                                 "no power-cut drill: it needs a lab VM of this install and "
                                 "its two disks as the legs")
            return
        rng = random.Random(self.params.seed)
        for cut in range(1, self.scale.power_cuts + 1):
            for name in self.scale.power_cut_settings:
                self.cut_once(rng, cut, CUT_SETTINGS[name])

    def cut_once(self, rng: random.Random, cut: int, setting: CutSetting) -> None:
        host, name = self.host, setting.name
        write_s = self.scale.power_cut_write_s
        blocks = region_blocks(write_s, self.legs.cap_iops)
        size_mib = -(-(blocks + 1) * BLOCK_BYTES // (1024 * 1024)) + 1
        self.progress.step("power cut: writes, then the cut", f"{DRILL} {cut}, "
                           f"{setting.label}: a fast leg in memory, {write_s:g} s of "
                           f"acknowledged writes, then {host.name}'s power is cut")
        array = self._fresh_array(cut, setting, size_mib)
        token, seed = secrets.token_hex(8), rng.randrange(2**31)
        layout = [str(blocks), setting.order, str(seed)]
        # Safe: the writer writes only the lab's own array, made above over guarded legs.
        stream = AckStream(shlex.join(["python3", "-c", WRITER_SCRIPT, array, token, *layout,
                                       setting.sync]))
        before = self.leg_stats()
        started = time.monotonic()
        stream.start(host, started)
        why = stream.wait_for_first(FIRST_ACK_TIMEOUT_S)
        if why:
            raise LabError(f"{DRILL}: the writer wrote nothing ({why})")
        writing = time.monotonic()
        time.sleep(write_s * (2 / 3 + rng.random() / 3))
        backlog, slow = self.just_before_the_cut(array, before)
        if not stream.thread.is_alive():
            raise LabError(f"{DRILL}: the writer stopped before the cut ({stream.ended}; "
                           f"its region holds {blocks} blocks)")
        cut_at, boot_s = self._cut_then_boot(cut, setting, stream, started)
        check = self.assemble_and_check(f"{name}-cut{cut}", token, layout, stream.acked)
        self._record_cut(cut, setting, stream, check, backlog, slow, cut_at=cut_at,
                         writing_began_s=writing - started, boot_s=boot_s)
        self.progress.detail(f"{setting.label}: acknowledged {stream.acked}, lost {check.lost} "
                             f"(the most writes held behind before the cut: {backlog})")

    def _fresh_array(self, cut: int, setting: CutSetting, size_mib: int) -> str:
        """The drill's array, new for each cut: the slow leg in slot 0, write-mostly, and a
        fast leg in the VM's memory, in sync and flushed; returns its device."""
        host, name = self.host, setting.name
        fast = self.instance_store(size_mib)
        # The region written once and flushed first. The slow disk is a qcow2 file, and QEMU
        # keeps which of its clusters hold data in its memory until a flush
        # (labs/infra/vm/power.py): an unsynced write into a cluster never written before
        # could vanish with QEMU for that reason alone. Written, the count is md's.
        # Safe: zeroes only the lab's slow disk, which the guard allows first.
        self.check_device_then(self.legs.slow_disk, [
            "dd", "if=/dev/zero", f"of={self.legs.slow_disk}", "bs=1M", f"count={size_mib + 16}",
            "oflag=direct", "conv=fsync", "status=none"])
        # Slot 0 at creation, as Hyperconnect built it: the slow leg and a missing slot,
        # then the fast leg added, which md fills from the slow leg.
        array = self.create_array([md.Member(self.legs.slow, write_mostly=True),
                                   md.Member("missing")], bitmap="internal",
                                  write_behind=setting.write_behind, size_mib=size_mib)
        self.manage(array, "add", fast)
        self.wait_for_sync(array, f"{DRILL}-{name}-cut{cut}-add", time.monotonic())
        host.sudo("sync", timeout_s=300)
        return array

    def _cut_then_boot(self, cut: int, setting: CutSetting, stream: AckStream,
                       started: float) -> tuple[float, float]:
        """Cut the VM's power with the writer running, boot it again and reconnect; returns
        when the cut came (s after `started`) and how long the boot took (s)."""
        ws, host = self.ws, self.host
        try:
            # The power cut: QEMU dies at once; the guest's memory and its tmpfs are gone.
            cut_at, boot_s = power.cut_then_boot(
                host.name, waiting=[stream.thread], log=self.progress.detail,
                before_boot=lambda: self.progress.step(
                    "power cut: booting again", f"{DRILL} {cut}, {setting.label}: "
                    f"{host.name}; the array from the slow leg alone"))
            cut_at -= started
        finally:
            ws.reconnect()
        return cut_at, boot_s

    def _record_cut(self, cut: int, setting: CutSetting, stream: AckStream, check: BlockCheck,
                    backlog: int, slow: md.DiskStat, *, cut_at: float, writing_began_s: float,
                    boot_s: float) -> None:
        """The cut's acknowledgements (raw) and its results; `cut_at` and `writing_began_s`
        count from the writer's start."""
        name = setting.name
        self.run.add_raw(f"power-cut/{name}-cut{cut}-acks.txt",
                         "".join(f"{number} {at:.3f}\n" for number, at in stream.acks))
        first_lost_at = next((at for number, at in stream.acks
                              if check.missing and number == check.missing[0][0]), None)
        dims = {"setting": name, "safety": setting.safety, "cut": cut, "leg": "slow",
                "sync": setting.sync, "order": setting.order}
        for metric, value, unit in (
                ("acknowledged", stream.acked, "count"),
                ("acknowledged_lost", check.lost, "count"),
                ("lost_ranges", len(check.missing), "count"),
                ("newest_found", check.newest_intact, "count"),
                ("unacknowledged_found", check.intact_beyond_ack, "count"),
                ("acks_per_second", stream.rate(), "tps"),
                ("max_backlog_before_cut", backlog, "count"),
                ("write_behind_limit", setting.write_behind or 0, "count"),
                ("slow_writes_before_cut", slow.writes, "count"),
                ("slow_flushes_before_cut", slow.flushes, "count"),
                ("lost_window_ms", 0.0 if first_lost_at is None
                 else round(1000 * (cut_at - first_lost_at), 1), "ms"),
                ("cut_after_s", cut_at, "s"),
                ("writing_s", cut_at - writing_began_s, "s"),
                ("boot_s", boot_s, "s")):
            self.run.add_result(config=DRILL, workload="power-cut", metric=metric, value=value,
                                unit=unit, **dims)

    def instance_store(self, size_mib: int) -> str:
        """A loop device over a file in a tmpfs inside the VM: gone with the power."""
        ws = self.ws
        ws.prepare()
        mount_point = f"{ws.work_dir}/mnt/instance-store"
        self.host.sudo(["mkdir", "-p", mount_point], timeout_s=60)
        # Safe: a new tmpfs on an empty folder inside the lab's own work dir.
        ws.journaled("mount", mount_point, ["mount", "-t", "tmpfs", "-o", f"size={size_mib + 32}m",
                                      "lab-instance-store", mount_point], device="tmpfs")
        return ws.make_loop_device("wm-instance-store", size_mib + 16, direct_io=False,
                                   folder=mount_point)

    def just_before_the_cut(self, array: str, before: dict[str, md.DiskStat]
                            ) -> tuple[int, md.DiskStat]:
        """The most writes md has held behind the fast leg so far (md does not export how
        many are behind right now), and what the slow disk completed since the writer began
        (writes, cache flushes), in one command."""
        kernel = self.md_kernel_name(array)
        out = self.host.run(f"cat /sys/block/{kernel}/md/bitmap/max_backlog_used; "
                            + md.disk_stats_command([self.legs.slow_disk]),
                            timeout_s=60).stdout
        first, _, rest = out.partition("\n")
        slow_name = self.legs.slow_disk.removeprefix("/dev/")
        return int(first), md.parse_disk_stats(rest)[slow_name] - before["slow"]

    def assemble_and_check(self, raw_name: str, token: str, layout: list[str], acked: int
                           ) -> BlockCheck:
        """After the reboot: the array from the slow leg alone, every block read back."""
        ws, slow_disk = self.ws, self.legs.slow_disk
        ws.remove("md", MD_NAME)  # an array udev assembled at boot from the slow disk
        ws.remove("loop", f"{ws.work_dir}/mnt/instance-store/wm-instance-store.img")
        ws.remove("mount", f"{ws.work_dir}/mnt/instance-store")
        ws.check_device(slow_disk)
        array = f"/dev/md/{MD_NAME}"
        # Safe: assembles the lab's own array from a lab disk the guard allowed just above.
        ws.journaled("md", MD_NAME, md.assemble_command(array, [slow_disk]), device=array,
                     members=[slow_disk])
        self.mdstat(f"{DRILL}-{raw_name}-assembled")
        out = self.host.sudo(["python3", "-c", CHECK_SCRIPT, array, token, *layout, str(acked)],
                             timeout_s=1800).stdout
        self.run.add_raw(f"power-cut/{raw_name}-check.json", out)
        check = parse_check(out)
        ws.remove("md", MD_NAME)
        self.zero_superblocks(slow_disk)
        if self.params.slow_delay_ms > 0:  # the dm-delay went with the power: make it again
            ws.remove("dm", "wm-slow-delay")
            self.legs.slow = self.dm_delay("wm-slow-delay", slow_disk)
        return check
