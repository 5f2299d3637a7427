"""mdadm command lines (no md needed). The guard in front of them: test_hosts.py."""

import pytest

from labs.errors import UsageError
from labs.tools import mdadm as md


def test_create_marks_only_the_devices_after_write_mostly():
    argv = md.create_command("/dev/md/wm", [md.Member("/dev/vdb"),
                                            md.Member("/dev/vdc", write_mostly=True)],
                             bitmap="internal", write_behind=256, assume_clean=True)
    assert argv[:3] == ["mdadm", "--create", "/dev/md/wm"]
    assert argv[-3:] == ["/dev/vdb", "--write-mostly", "/dev/vdc"]
    assert "--bitmap=internal" in argv and "--write-behind=256" in argv
    assert "--assume-clean" in argv and "--raid-devices=2" in argv and "--level=1" in argv


def test_create_with_missing_member_after_the_write_mostly_one():
    argv = md.create_command("md0", [md.Member("/dev/vdc", write_mostly=True),
                                     md.Member("missing")])
    assert argv[-3:] == ["--write-mostly", "/dev/vdc", "missing"]
    assert argv[2] == "/dev/md0" and "--readwrite" not in argv


def test_create_refuses_a_plain_member_after_a_write_mostly_one():
    with pytest.raises(UsageError, match="before the write-mostly"):
        md.create_command("md0", [md.Member("/dev/vdc", write_mostly=True),
                                  md.Member("/dev/vdb")])


@pytest.mark.parametrize("kwargs, message", [
    ({"write_behind": 256}, "needs a write-intent bitmap"),
])
def test_write_behind_needs_bitmap_and_write_mostly(kwargs, message):
    members = [md.Member("/dev/vdb"), md.Member("/dev/vdc", write_mostly=not kwargs.pop(
        "plain", False))]
    with pytest.raises(UsageError, match=message):
        md.create_command("md0", members, **kwargs)


@pytest.mark.parametrize("name", ["sda", "/dev/sda", "/dev/md/../sda", "md0; rm -rf /", ""])
def test_array_names_are_checked(name):
    with pytest.raises(UsageError):
        md.md_path(name)


def test_manage_commands():
    assert md.manage_command("md0", "fail", "/dev/vdc") == ["mdadm", "/dev/md0", "--fail",
                                                           "/dev/vdc"]
    assert md.manage_command("/dev/md/wm", "add", "/dev/vdc", write_mostly=True) == [
        "mdadm", "/dev/md/wm", "--add", "--write-mostly", "/dev/vdc"]
    with pytest.raises(UsageError):
        md.manage_command("md0", "grow", "/dev/vdc")


def test_size_and_write_mostly_flag_commands():
    argv = md.create_command("/dev/md/wm", [md.Member("/dev/vdb")], size_kib=65536)
    assert "--size=65536" in argv
    with pytest.raises(UsageError):
        md.create_command("/dev/md/wm", [md.Member("/dev/vdb")], size_kib=8)
    assert md.set_write_mostly_command("md127", "dm-0") == \
        "echo writemostly > /sys/block/md127/md/dev-dm-0/state"


def test_disk_stats_command_refuses_odd_names():
    assert md.disk_stats_command(["/dev/vdb", "vdc"]) == \
        "grep -H . /sys/block/vdb/stat /sys/block/vdc/stat"
    with pytest.raises(UsageError):
        md.disk_stats_command(["vdb; reboot"])
