"""The lab-built file system: a loop device over a file in the work dir, ext4, mounted."""

import shutil
import tempfile
from pathlib import Path

import pytest

from labs import localfs
from labs.hosts import get_host
from labs.journal import Journal


@pytest.fixture
def tmp_path():
    # Not pytest's own tmp_path: a concurrent pytest session may rename old basetemp
    # folders, and a mount point must not move under a test.
    path = Path(tempfile.mkdtemp(prefix="storage-labs-test-", dir="/var/tmp"))
    yield path
    assert not localfs.is_mount_point(path / "work" / "labfs")
    shutil.rmtree(path)


@pytest.fixture
def journal(tmp_path, monkeypatch):
    monkeypatch.setenv("LABS_STATE_DIR", str(tmp_path / "state"))
    return Journal("local")


def test_build_use_and_remove(journal, tmp_path):
    fs = localfs.make_loop_filesystem(journal, tmp_path / "work", size_mib=64)
    try:
        assert localfs.loop_devices_backed_by(fs.image_path) == [fs.device]
        assert localfs.is_mount_point(fs.mount_point)
        (fs.mount_point / "hello").write_text("on the lab's own file system")
        kinds = [e.kind for e in journal.live_entries()]
        assert kinds == ["loop", "mount"]  # journaled before creation, in that order
    finally:
        localfs.remove_loop_filesystem(journal, fs)
    assert not localfs.is_mount_point(fs.mount_point)
    assert localfs.loop_devices_backed_by(fs.image_path) == []
    assert journal.live_entries() == []


def test_journal_clean_after_a_crash(journal, tmp_path):
    fs = localfs.make_loop_filesystem(journal, tmp_path / "work", size_mib=64)
    # The lab "crashed" here: only the journal knows what to remove.
    removed = journal.clean(host=get_host("local"), log=lambda line: None)
    assert [e.kind for e in removed] == ["mount", "loop"]
    assert not localfs.is_mount_point(fs.mount_point)
    assert localfs.loop_devices_backed_by(fs.image_path) == []


def test_refuses_an_existing_image(journal, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "labfs.img").write_bytes(b"someone's file")
    with pytest.raises(localfs.FilesystemError, match="already exists"):
        localfs.make_loop_filesystem(journal, work, size_mib=64)
    assert (work / "labfs.img").read_bytes() == b"someone's file"
    assert journal.live_entries() == []
