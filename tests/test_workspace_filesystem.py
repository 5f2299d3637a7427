"""The lab-built file system: a loop device over a file in the work dir, ext4, mounted, all
through LabWorkspace on the local host (real loop devices and mounts)."""

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from labs.errors import LabError
from labs.infra.devices import loop_devices_by_backing_file, mounted_at
from labs.infra.inventory import get_host
from labs.infra.journal import Journal
from labs.infra.workspace import LabWorkspace


@pytest.fixture
def tmp_path(monkeypatch):
    # Not pytest's own tmp_path: a concurrent pytest session may rename old basetemp
    # folders, and a mount point must not move under a test.
    path = Path(tempfile.mkdtemp(prefix="storage-labs-test-", dir="/var/tmp"))
    monkeypatch.setenv("LABS_STATE_DIR", str(path / "state"))
    monkeypatch.setenv("LABS_WORK_DIR", str(path / "work"))
    yield path
    mounts = Path("/proc/mounts").read_text()
    assert str(path) not in mounts
    shutil.rmtree(path)


def test_build_use_and_remove(tmp_path):
    host, journal = get_host("local"), Journal("local")
    with LabWorkspace(host, lab="fs-test", journal=journal) as ws:
        fs = ws.make_loop_filesystem("labfs", size_mib=64)
        assert loop_devices_by_backing_file(host).get(fs.image) == [fs.device]
        assert mounted_at(host, fs.mount_point)
        Path(fs.mount_point, "hello").write_text("on the lab's own file system")
        kinds = [e.kind for e in journal.live_entries()]
        assert kinds == ["work-dir", "loop", "mount"]  # journaled before creation, in order
    assert not mounted_at(host, fs.mount_point)
    assert loop_devices_by_backing_file(host).get(fs.image) is None
    assert journal.live_entries() == []
    assert not Path(ws.work_dir).exists()


def test_journal_clean_after_a_crash(tmp_path):
    host, journal = get_host("local"), Journal("local")
    ws = LabWorkspace(host, lab="fs-test", journal=journal)
    fs = ws.make_loop_filesystem("labfs", size_mib=64)
    # The lab "crashed" here: only the journal knows what to remove.
    removed = journal.clean(host=host, log=lambda line: None)
    assert [e.kind for e in removed] == ["mount", "loop", "work-dir"]
    assert not mounted_at(host, fs.mount_point)
    assert loop_devices_by_backing_file(host).get(fs.image) is None


def test_refuses_an_existing_image(tmp_path):
    host, journal = get_host("local"), Journal("local")
    ws = LabWorkspace(host, lab="fs-test", journal=journal)
    ws.prepare()
    image = Path(ws.work_dir) / "labfs.img"
    image.write_bytes(b"someone's file")
    with pytest.raises(LabError, match="already exists"):
        ws.make_loop_filesystem("labfs", size_mib=64)
    assert image.read_bytes() == b"someone's file"
    assert [e.kind for e in journal.live_entries()] == ["work-dir"]
    image.unlink()
    ws.close()
    assert journal.live_entries() == []
    assert subprocess.run(["losetup", "-j", str(image)], capture_output=True,
                          text=True).stdout == ""
