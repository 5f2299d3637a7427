"""mdadm command lines and the device guard in front of them (no md needed)."""

import pytest

from labs.errors import UsageError
from labs.tools import mdadm as md


class RecordingHost:
    name = "fake"

    def __init__(self):
        self.commands = []

    def sudo(self, argv, **kwargs):
        self.commands.append(argv)

        class Result:
            ok, stdout, stderr, exit_code = True, "", "", 0
        return Result()


def guard_allowing(*devices):
    def check(device):
        if device not in devices:
            raise md.NotALabDevice(f"refusing {device}")
        return device
    return check


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


def test_guard_refuses_foreign_devices_before_running_anything():
    host = RecordingHost()
    mdadm = md.Mdadm(host, guard_allowing("/dev/vdb", "/dev/vdc", "/dev/md/wm"))
    with pytest.raises(md.NotALabDevice, match="/dev/sda"):
        mdadm.create_argv("/dev/md/wm", [md.Member("/dev/vdb"), md.Member("/dev/sda")])
    for action in (mdadm.fail, mdadm.remove, mdadm.add):
        with pytest.raises(md.NotALabDevice):
            action("/dev/md/wm", "/dev/nvme0n1")
    with pytest.raises(md.NotALabDevice):
        mdadm.zero_superblock("/dev/vda")
    with pytest.raises(md.NotALabDevice):
        mdadm.stop("/dev/md0")
    assert host.commands == []
    mdadm.fail("/dev/md/wm", "/dev/vdc")
    assert host.commands == [["mdadm", "/dev/md/wm", "--fail", "/dev/vdc"]]


def test_missing_needs_no_guard():
    mdadm = md.Mdadm(RecordingHost(), guard_allowing("/dev/vdc"))
    argv = mdadm.create_argv("/dev/md/wm", [md.Member("/dev/vdc", write_mostly=True),
                                            md.Member("missing")])
    assert argv[-1] == "missing"


def test_journal_guard(tmp_path):
    from labs.journal import Journal

    journal = Journal("fake", tmp_path / "journal.jsonl")
    check = md.journal_check(journal, lab_devices=("/dev/vdb",))
    assert check("/dev/vdb") == "/dev/vdb"
    with pytest.raises(md.NotALabDevice):
        check("/dev/loop3")
    journal.will_create("loop", "/work/x/fast.img", device="/dev/loop3")
    assert check("/dev/loop3") == "/dev/loop3"
    journal.released("loop", "/work/x/fast.img")
    with pytest.raises(md.NotALabDevice):
        check("/dev/loop3")


def test_disk_stats_command_refuses_odd_names():
    assert md.disk_stats_command(["/dev/vdb", "vdc"]) == \
        "grep -H . /sys/block/vdb/stat /sys/block/vdc/stat"
    with pytest.raises(UsageError):
        md.disk_stats_command(["vdb; reboot"])
