"""The test session's own machinery (tests/session_report.py): while a VM test holds the
machine, the host group's worker starts no new test, and only until the VM test lets go; the
hold starts once the host group's worker is between tests."""

from __future__ import annotations

import os
import sys
import threading
import time
from types import SimpleNamespace

import pytest
import session_report
from conftest import run_reading_progress
from session_report import (
    HOST_GROUP,
    MACHINE_WANTED_ENV,
    TWO_GROUPS_ENV,
    VM_GROUP,
    host_group_done,
    machine_to_itself,
    wait_while_the_machine_is_wanted,
)


@pytest.fixture
def wanted(tmp_path, monkeypatch):
    path = tmp_path / "machine-wanted"
    monkeypatch.setenv(MACHINE_WANTED_ENV, str(path))
    monkeypatch.setitem(session_report._GROUP_OF_TEST, "host::test", HOST_GROUP)
    monkeypatch.setitem(session_report._GROUP_OF_TEST, "vm::test", VM_GROUP)
    monkeypatch.setattr(session_report, "_gave_up_waiting", [])
    monkeypatch.setenv(TWO_GROUPS_ENV, "1")
    # Unless a test says otherwise, the host group has finished: a hold need not wait.
    session_report._host_idle_path(str(path)).touch()
    return path


def test_without_a_host_group_beside_a_hold_does_not_wait(wanted, monkeypatch):
    # One process, or workers not split into the two groups: no host worker would answer.
    host_idle(wanted).unlink()
    monkeypatch.delenv(TWO_GROUPS_ENV)
    started = time.monotonic()
    with machine_to_itself():
        assert wanted.exists() and time.monotonic() - started < 1.0


def host_idle(wanted):
    return session_report._host_idle_path(str(wanted))


def test_a_hold_starts_once_the_host_group_is_between_tests(wanted):
    host_idle(wanted).unlink()  # the host group is in the middle of a test
    entered = []

    def hold():
        with machine_to_itself():
            entered.append(time.monotonic())

    holder = threading.Thread(target=hold)
    started = time.monotonic()
    holder.start()
    time.sleep(1.0)
    assert not entered and wanted.exists()  # wanted, and waiting for the test to end
    # The host group's test ends; before its next one it sees the hold and waits.
    host = threading.Thread(target=wait_while_the_machine_is_wanted,
                            args=(SimpleNamespace(nodeid="host::test"),))
    host.start()
    holder.join(10)
    host.join(10)
    assert entered and entered[0] - started >= 1.0
    assert not wanted.exists() and not host_idle(wanted).exists()


def test_a_hold_waits_for_the_host_group_only_so_long(wanted, monkeypatch):
    host_idle(wanted).unlink()
    monkeypatch.setattr(session_report, "QUIET_WAIT_LIMIT_S", 1.0)
    started = time.monotonic()
    with machine_to_itself():
        assert 1.0 <= time.monotonic() - started < 5.0


def test_once_the_host_group_is_done_a_hold_does_not_wait(wanted, monkeypatch):
    host_idle(wanted).unlink()
    monkeypatch.setattr(session_report, "_lowered", [True])  # this worker ran the host group
    host_group_done(SimpleNamespace(workerinput={}))
    started = time.monotonic()
    with machine_to_itself():
        assert time.monotonic() - started < 1.0


def test_once_the_host_group_gave_up_waiting_a_later_hold_does_not_wait(wanted, monkeypatch):
    monkeypatch.setattr(session_report, "MACHINE_WAIT_LIMIT_S", 1.0)
    monkeypatch.setattr(session_report, "QUIET_WAIT_LIMIT_S", 3.0)
    host_idle(wanted).unlink()  # the host group is in the middle of a test
    with machine_to_itself():  # a hold longer than the host group waits
        wait_while_the_machine_is_wanted(SimpleNamespace(nodeid="host::test"))
    assert session_report._gave_up_waiting
    started = time.monotonic()
    with machine_to_itself():  # the host group's worker runs its tests now: nobody to wait for
        assert time.monotonic() - started < 1.0
    started = time.monotonic()
    wait_while_the_machine_is_wanted(SimpleNamespace(nodeid="host::test"))
    assert time.monotonic() - started < 1.0


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


def test_a_vm_test_may_let_go_before_its_block_ends(wanted):
    with machine_to_itself() as let_go:
        assert wanted.exists()
        let_go()
        assert not wanted.exists()
        started = time.monotonic()
        wait_while_the_machine_is_wanted(SimpleNamespace(nodeid="host::test"))
        assert time.monotonic() - started < 1.0
    assert not wanted.exists()


def test_a_lab_run_can_let_go_at_a_line_of_its_progress(wanted):
    # As the DRBD lab's ci run does at its drill: the lines come while the command runs.
    script = ("import sys, time\nfor step in ('sweep', 'drill'):\n"
              "    print(f'step: {step}', file=sys.stderr, flush=True)\n    time.sleep(0.5)\n"
              "print('recorded')")
    held = []
    with machine_to_itself() as let_go:
        def on_progress(line):
            held.append(wanted.exists())
            if "drill" in line:
                let_go()
        ran = run_reading_progress([sys.executable, "-c", script], dict(os.environ), 30,
                                   on_progress)
        assert not wanted.exists()
    assert held == [True, True] and ran.returncode == 0
    assert ran.stdout == "recorded\n" and ran.stderr == "step: sweep\nstep: drill\n"


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


def test_work_done_once_per_session_makes_a_second_asker_wait_for_it(tmp_path, monkeypatch):
    monkeypatch.setenv(session_report.ONCE_ENV, str(tmp_path))
    done, returned = [], {}

    def build():
        time.sleep(0.5)
        done.append(time.monotonic())

    def ask(name):
        returned[name] = (session_report.once_per_session("book", build), time.monotonic())

    first = threading.Thread(target=ask, args=("first",))
    first.start()
    time.sleep(0.1)  # the first holds the lock and works
    ask("second")
    first.join()
    assert len(done) == 1
    assert returned["first"][0] is True and returned["second"][0] is False
    assert returned["second"][1] >= done[0]  # it came back only once the work was done


def test_work_that_fails_is_not_marked_done(tmp_path, monkeypatch):
    monkeypatch.setenv(session_report.ONCE_ENV, str(tmp_path))

    def fail():
        raise RuntimeError("the build failed")

    with pytest.raises(RuntimeError):
        session_report.once_per_session("book", fail)
    assert session_report.once_per_session("book", lambda: None) is True


def test_the_timeline_gives_each_files_span_per_worker_in_seconds_into_the_session():
    times = session_report.SessionTimes()
    for nodeid, worker, start, stop in [("a.py::x", "gw0", 10, 12), ("a.py::y", "gw0", 12, 20),
                                        ("b.py::z", "gw1", 5, 9)]:
        times.add(SimpleNamespace(nodeid=nodeid, duration=stop - start, start=times.started
                                  + start, stop=times.started + stop,
                                  node=SimpleNamespace(gateway=SimpleNamespace(id=worker))))
    assert times.timeline() == [["gw1", "b.py", 5.0, 9.0], ["gw0", "a.py", 10.0, 20.0]]


def test_idle_share_of_the_processors_between_two_readings():
    assert session_report.idle_pct((100.0, 400.0), (160.0, 600.0)) == 30.0
    assert session_report.idle_pct((0.0, 0.0), (0.0, 0.0)) is None
    idle, total = session_report.cpu_times()
    assert 0 < idle <= total
