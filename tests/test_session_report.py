"""The test session's own machinery (tests/session_report.py): while a VM test holds the
machine, the host group's worker starts no new test, and only until the VM test lets go; the
host group's containers run at the lowest CPU weight, and the weight comes back after."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import session_report
from session_report import (
    ENGINE_CPU_WEIGHTS,
    HOST_GROUP,
    MACHINE_WANTED_ENV,
    VM_GROUP,
    containers_at_the_lowest_priority,
    machine_to_itself,
    wait_while_the_machine_is_wanted,
)

from labs.infra import images


@pytest.fixture
def wanted(tmp_path, monkeypatch):
    path = tmp_path / "machine-wanted"
    monkeypatch.setenv(MACHINE_WANTED_ENV, str(path))
    monkeypatch.setitem(session_report._GROUP_OF_TEST, "host::test", HOST_GROUP)
    monkeypatch.setitem(session_report._GROUP_OF_TEST, "vm::test", VM_GROUP)
    monkeypatch.setattr(session_report, "_gave_up_waiting", [])
    return path


def test_the_machine_is_held_only_inside_the_block_even_when_it_fails(wanted):
    with pytest.raises(RuntimeError):
        with machine_to_itself():
            assert wanted.exists()
            raise RuntimeError("the VM test failed")
    assert not wanted.exists()


def test_a_host_test_waits_until_the_vm_test_lets_go(wanted):
    holding = machine_to_itself()
    holding.__enter__()
    threading.Timer(1.5, holding.__exit__, args=(None, None, None)).start()
    started = time.monotonic()
    wait_while_the_machine_is_wanted(SimpleNamespace(nodeid="host::test"))
    waited_s = time.monotonic() - started
    assert not wanted.exists() and waited_s >= 1.0


def test_a_vm_test_never_waits_and_nobody_waits_for_a_free_machine(wanted):
    wanted.touch()
    started = time.monotonic()
    wait_while_the_machine_is_wanted(SimpleNamespace(nodeid="vm::test"))
    assert time.monotonic() - started < 1.0
    wanted.unlink()
    wait_while_the_machine_is_wanted(SimpleNamespace(nodeid="host::test"))
    assert time.monotonic() - started < 1.0


def test_a_holder_that_never_lets_go_delays_the_host_group_once_and_only_so_long(
        wanted, monkeypatch):
    monkeypatch.setattr(session_report, "MACHINE_WAIT_LIMIT_S", 1.0)
    wanted.touch()
    started = time.monotonic()
    wait_while_the_machine_is_wanted(SimpleNamespace(nodeid="host::test"))
    assert 1.0 <= time.monotonic() - started < 5.0
    started = time.monotonic()
    wait_while_the_machine_is_wanted(SimpleNamespace(nodeid="host::test"))
    assert time.monotonic() - started < 0.5  # the next test does not wait again


def test_the_engine_weight_is_lowered_in_the_block_and_put_back_even_when_it_fails(tmp_path):
    weight = tmp_path / "cpu" / "docker" / "cpu.shares"
    weight.parent.mkdir(parents=True)
    weight.write_text("1024\n")
    with pytest.raises(RuntimeError):
        with containers_at_the_lowest_priority([(weight, 15, True)]) as done:
            assert weight.read_text() == "15\n"
            assert "1024 -> 15" in done
            raise RuntimeError("a container test failed")
    assert weight.read_text() == "1024\n"


def test_without_an_engine_cgroup_or_one_that_cannot_be_read_nothing_changes(tmp_path):
    missing = tmp_path / "docker" / "cpu.weight"
    with containers_at_the_lowest_priority([(missing, 1, False)]) as done:
        assert "no engine cgroup" in done
    assert not missing.parent.exists()
    unreadable = tmp_path / "cpu" / "docker" / "cpu.shares"
    unreadable.mkdir(parents=True)  # a folder where the weight file should be
    with containers_at_the_lowest_priority([(unreadable, 15, True)]) as done:
        assert done.startswith("containers at their default CPU weight")


def cpu_cgroup_of(pid: int) -> str:
    """The process's group in the cgroup hierarchy that holds the CPU controller."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, group = line.split(":", 2)
        if "cpu" in controllers.split(",") or controllers == "":
            return group
    raise AssertionError(f"no CPU cgroup for pid {pid}")


def test_the_sessions_containers_run_under_the_lowest_weight(docker_engine):
    weight_file, lowest, _ = next((path, lowest, make) for path, lowest, make in
                                  ENGINE_CPU_WEIGHTS if path.exists())
    container = docker_engine.containers.run(images.RECIPES["postgres"].tag, "sleep 30",
                                             entrypoint=[], detach=True, remove=True)
    try:
        container.reload()
        group = cpu_cgroup_of(container.attrs["State"]["Pid"])
        assert group.startswith(f"/{weight_file.parent.name}/"), group
        assert weight_file.read_text().strip() == str(lowest)
    finally:
        # Safe: the container this test started (removed when it stops).
        container.kill()
