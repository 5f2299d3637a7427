"""Saved lab-VM states (labs/infra/vm/saved.py) without a VM: which machine a state belongs
to, and when one is refused. Saving and resuming for real is in test_vm.py."""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, replace

import pytest

from labs.infra.vm import saved

KEY = saved.SavedKey(name="vm1", image_hash="0f64002632842de1", qemu="QEMU emulator 7.2.15",
                     accel="tcg", memory_mib=1536, cpus=2, data_disk_mib=1024, pair=True,
                     devices="a1b2c3d4e5f60718")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def write_state(key: saved.SavedKey, meta: dict | None = None) -> None:
    folder = key.folder()
    folder.mkdir(parents=True)
    for name in (saved.STATE_FILE, saved.ROOT_DISK):
        (folder / name).write_bytes(b"x")
    (folder / saved.META_FILE).write_text(json.dumps(meta if meta is not None else asdict(key)))


@pytest.mark.parametrize("change", [
    {"name": "vm2"}, {"image_hash": "another"}, {"qemu": "QEMU emulator 9.2.1"},
    {"accel": "kvm"}, {"memory_mib": 1024}, {"cpus": 1}, {"data_disk_mib": 2048},
    {"pair": False}, {"devices": "another"}])
def test_a_state_belongs_to_one_machine_only(cache, change):
    write_state(KEY)
    assert saved.find(KEY) == KEY.folder()
    other = replace(KEY, **change)
    assert other.folder() != KEY.folder()
    assert saved.find(other) is None


def test_a_state_whose_record_disagrees_or_that_lacks_a_file_is_not_used(cache):
    write_state(KEY, meta={**asdict(KEY), "cpus": 4})
    assert saved.find(KEY) is None
    saved.forget(KEY)
    write_state(KEY)
    (KEY.folder() / saved.STATE_FILE).unlink()
    assert saved.find(KEY) is None
    saved.forget(KEY)
    assert not KEY.folder().exists()


def test_the_incoming_command_reads_the_state_file_even_in_a_folder_with_spaces(tmp_path):
    folder = tmp_path / "a folder"
    option, value = saved.incoming_args(folder)
    assert option == "-incoming" and value.startswith("exec:")
    assert shlex.split(value[len("exec:"):]) == ["cat", str(folder / saved.STATE_FILE)]


def test_a_save_that_a_kill_cut_short_is_removed_before_the_next_one(cache):
    write_state(KEY)
    for pid in (123, 456):
        half = KEY.folder().with_name(f"{KEY.folder().name}.partial-{pid}")
        half.mkdir()
        (half / saved.STATE_FILE).write_bytes(b"half")
    saved.remove_partial_saves(KEY.folder())
    assert [p.name for p in KEY.folder().parent.iterdir()] == [KEY.folder().name]
    assert saved.find(KEY) == KEY.folder()
