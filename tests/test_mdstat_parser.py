"""/proc/mdstat, member state and block counters as a lab VM's kernel (Debian 6.1) wrote them."""

import subprocess
import sys
from pathlib import Path

import pytest

from labs.tools import mdadm as md

FIXTURES = Path(__file__).parent / "fixtures" / "mdstat"
PROJECT = Path(__file__).resolve().parents[1]


def mdstat(name: str) -> md.MdStat:
    return md.parse_mdstat((FIXTURES / name).read_text(), name)


def test_write_mostly_member_over_dm_delay():
    array = mdstat("vm-write-mostly-dm-delay-leg.mdstat").array("md127")
    assert array.active and array.level == "raid1"
    assert [(m.device, m.role, m.write_mostly) for m in array.members] == [
        ("vdb", 0, False), ("dm-0", 1, True)]
    assert (array.size_kib, array.metadata, array.raid_disks, array.working_disks) == (
        1046528, "1.2", 2, 2)
    assert array.health == "UU" and not array.degraded and array.sync is None
    assert array.bitmap_pages is None  # created without a bitmap


def test_write_mostly_member_in_slot_zero_with_bitmap():
    stat = mdstat("vm-write-mostly-slot0-write-behind.mdstat")
    assert "raid1" in stat.personalities and len(stat.personalities) == 8
    array = stat.array("/dev/md127")
    assert array.member("dm-0").write_mostly and array.member("dm-0").role == 0
    assert not array.member("vdb").write_mostly
    assert array.bitmap_pages == (1, 1) and array.bitmap_chunk_kib == 65536


def test_degraded_after_the_slow_leg_was_removed():
    array = mdstat("vm-degraded-slow-leg-removed.mdstat").array("md127")
    assert [m.device for m in array.members] == ["vdb"]
    assert (array.raid_disks, array.working_disks, array.health) == (2, 1, "U_")
    assert array.degraded


def test_recovery_of_a_new_fast_leg():
    array = mdstat("vm-recovery-new-fast-leg.mdstat").array("md127")
    assert array.member("vdb").role == 2  # a member added later gets the next number
    assert array.member("dm-0").write_mostly and array.degraded
    sync = array.sync
    assert (sync.action, sync.percent, sync.done_kib, sync.total_kib) == (
        "recovery", 50.3, 33280, 65536)
    assert sync.speed_kib_s == 33280 and sync.finish_min == 0.0 and sync.waiting is None


def test_initial_resync_then_spare_then_failed_member():
    resync = mdstat("vm-resync-loop-write-mostly.mdstat").array("md127")
    assert resync.sync.action == "resync" and resync.sync.speed_kib_s == 2880
    assert resync.sync.finish_min == 0.5 and not resync.degraded
    spare = mdstat("vm-spare-during-resync.mdstat").array("md127")
    assert [m.device for m in spare.members if m.spare] == ["loop2"]
    failed = mdstat("vm-failed-member-spare-recovering.mdstat").array("md127")
    assert [m.device for m in failed.members if m.faulty] == ["loop0"]
    assert failed.health == "_U" and failed.sync.action == "recovery"
    assert failed.member("loop1").write_mostly


def test_no_arrays():
    stat = mdstat("vm-no-arrays.mdstat")
    assert stat.arrays == {} and "raid1" in stat.personalities


def test_member_states_from_sysfs():
    states = md.parse_member_states((FIXTURES / "vm-member-states.txt").read_text())
    assert states == {"loop0": {"faulty"}, "loop1": {"in_sync", "write_mostly"},
                      "loop2": {"spare"}}


def test_block_counters_and_their_difference():
    stats = md.parse_disk_stats((FIXTURES / "vm-block-stat.txt").read_text())
    assert set(stats) == {"vdb", "vdc", "md127"}
    assert stats["vdb"] == md.DiskStat(reads=548414, read_sectors=6381851, writes=200258,
                                       write_sectors=7266523, flushes=1951)
    delta = stats["vdb"] - stats["vdc"]
    assert delta.reads == 548414 - 37405


@pytest.mark.parametrize("text, message", [
    ("", "Personalities"),
    ("Personalities : [raid1]\nmd0 : resyncing raid1 vdb[0]\n", "active/inactive"),
    ("Personalities : [raid1]\nmd0 : active raid1 vdb[x]\n", "cannot read member"),
    ("Personalities : [raid1]\n      1024 blocks\n", "not part of an array"),
])
def test_malformed_mdstat_is_one_clear_error(text, message):
    with pytest.raises(md.MdError, match=message):
        md.parse_mdstat(text, "x")


def test_unknown_array_names_the_ones_there():
    with pytest.raises(md.MdError, match="arrays: md127"):
        mdstat("vm-degraded-slow-leg-removed.mdstat").array("md0")


def test_cli_parses_a_saved_mdstat():
    result = subprocess.run([sys.executable, "-m", "labs", "parse", "mdstat",
                             str(FIXTURES / "vm-recovery-new-fast-leg.mdstat")], cwd=PROJECT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "dm-0[0](W)" in result.stdout and "recovery 50.3%" in result.stdout
    bad = subprocess.run([sys.executable, "-m", "labs", "parse", "mdstat", "/nonexistent"],
                         cwd=PROJECT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_md_times_its_copies_in_the_kernel_log():
    # In the format md writes them (drivers/md/md.c, md_do_sync), beside other arrays
    # lines and an interrupted resync; a copy still running has no end yet.
    log = (FIXTURES / "dmesg-md-recovery.txt").read_text()
    spans = md.parse_sync_log(log, "md127")
    assert [(s.action, s.seconds, s.outcome) for s in spans] == [
        ("recovery", 6.25, "done"), ("resync", 1.0, "interrupted"), ("recovery", None, None)]
    assert [s.seconds for s in md.parse_sync_log(log, "md126")] == [0.5]
    assert md.parse_sync_log(log, "md1") == []
