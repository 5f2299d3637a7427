"""Progress and interrupts: a Ctrl-C is never lost, even when it lands in a finalizer or code
that catches too much swallows it."""

import io
import os
import signal
import sys
import threading
import time

import pytest

from labs import progress as progress_module
from labs.__main__ import _interrupted, main
from labs.errors import Interrupted, LabError
from labs.infra.hosts import HostInterrupted, LocalHost
from labs.progress import Progress, keep_swallowed_interrupts


class InterruptedWhileCollected:
    """Raises KeyboardInterrupt in __del__, as a Ctrl-C does when it lands in a weakref
    callback: Python cannot raise it there, and hands it to sys.unraisablehook."""

    def __del__(self):
        raise KeyboardInterrupt


def plain_progress(steps: int = 4) -> tuple[Progress, io.StringIO]:
    stream = io.StringIO()
    return Progress("t", steps, stream=stream, interactive=False), stream


def test_a_ctrl_c_lost_in_a_finalizer_stops_the_lab_at_its_next_step(monkeypatch):
    monkeypatch.setattr(sys, "unraisablehook", keep_swallowed_interrupts)
    progress, stream = plain_progress()
    progress.step("one")
    InterruptedWhileCollected()  # collected at once; its KeyboardInterrupt cannot unwind
    with pytest.raises(KeyboardInterrupt):
        progress.step("two")
    progress.step("clean-up reports progress too")  # raised once, as Ctrl-C would be
    assert "step 2/4: clean-up" in stream.getvalue()


def test_a_detail_also_raises_the_lost_ctrl_c(monkeypatch):
    monkeypatch.setattr(sys, "unraisablehook", keep_swallowed_interrupts)
    progress, _ = plain_progress()
    InterruptedWhileCollected()
    with pytest.raises(KeyboardInterrupt):
        progress.detail("waiting")


def test_other_errors_in_finalizers_are_printed_and_do_not_stop_the_lab(monkeypatch, capsys):
    class FailsWhileCollected:
        def __del__(self):
            raise ValueError("broken finalizer")

    monkeypatch.setattr(sys, "unraisablehook", keep_swallowed_interrupts)
    progress, _ = plain_progress()
    FailsWhileCollected()
    progress.step("goes on")
    assert "broken finalizer" in capsys.readouterr().err


def test_the_command_line_installs_the_guard_and_honours_ctrl_c(monkeypatch, capsys):
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    # As in a background job of a shell script: SIGINT ignored on entry.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert main(["list"]) == 0
        assert signal.getsignal(signal.SIGINT) is _interrupted
        assert signal.getsignal(signal.SIGTERM) is _interrupted  # unwinds like Ctrl-C
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    assert sys.unraisablehook is keep_swallowed_interrupts


@pytest.fixture
def lab_signals(monkeypatch):
    """This process handles SIGINT as `python -m labs` does, with no Ctrl-C pending."""
    monkeypatch.setattr(progress_module, "_pending_interrupt", None)
    before = signal.signal(signal.SIGINT, _interrupted)
    yield
    signal.signal(signal.SIGINT, before)


def ctrl_c() -> None:
    """A real SIGINT to this process; the handler raises at the next instruction."""
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)  # interrupted at once
    pytest.fail("the SIGINT was not handled")


def test_a_ctrl_c_that_code_catching_too_much_swallows_stops_the_lab_at_its_next_step(
        lab_signals):
    progress, stream = plain_progress()
    progress.step("one")
    try:
        ctrl_c()
    except KeyboardInterrupt:
        pass  # a library that catches too much, and goes on
    with pytest.raises(KeyboardInterrupt):
        progress.step("two")
    progress.step("clean-up reports progress too")  # raised once, as Ctrl-C would be
    assert "step 2/4: clean-up" in stream.getvalue()


def test_a_lab_unwinding_from_its_ctrl_c_reports_its_clean_up_without_a_second_one(
        lab_signals):
    progress, stream = plain_progress()
    with pytest.raises(KeyboardInterrupt):
        try:
            ctrl_c()
        finally:
            progress.step("removing the containers")  # the lab's teardown, unwinding
    # Turned into another error on its way out: still the same Ctrl-C.
    with pytest.raises(LabError):
        try:
            try:
                ctrl_c()
            except KeyboardInterrupt:
                raise LabError("stopped") from None
        finally:
            progress.detail("taking the array down")
    progress.step("a later step")  # nothing is pending any more
    assert "removing the containers" in stream.getvalue()
    assert "a later step" in stream.getvalue()


def test_a_ctrl_c_is_raised_again_in_the_main_thread_only(lab_signals):
    progress, _ = plain_progress()
    try:
        ctrl_c()
    except KeyboardInterrupt:
        pass
    # A lab's own thread (one per host) is stopped through Progress.interrupt instead.
    in_thread = []
    worker = threading.Thread(target=lambda: in_thread.append(progress.step("in a thread")))
    worker.start()
    worker.join()
    assert in_thread == [None]
    with pytest.raises(KeyboardInterrupt):
        progress.step("main thread")


def test_a_second_ctrl_c_swallowed_during_the_clean_up_still_stops_it(lab_signals):
    # The first Ctrl-C unwinds the lab; a second one asks to leave at once, even when
    # something swallows it on the way.
    progress, _ = plain_progress()
    with pytest.raises(KeyboardInterrupt):
        try:
            ctrl_c()
        finally:
            try:
                ctrl_c()
            except KeyboardInterrupt:
                pass  # swallowed
            with pytest.raises(KeyboardInterrupt):
                progress.step("removing the containers")


def test_a_later_command_in_the_same_process_starts_with_no_ctrl_c_pending(monkeypatch):
    monkeypatch.setattr(progress_module, "_pending_interrupt", KeyboardInterrupt())
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        assert main(["list"]) == 0
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    progress, _ = plain_progress()
    try:
        progress.step("runs")
    except KeyboardInterrupt:  # (pytest would take it for the reader's own Ctrl-C)
        pytest.fail("a Ctrl-C noted before main() stopped a later lab")


@pytest.mark.parametrize("first", ["progress", "host"])
def test_one_stop_of_a_lab_on_several_hosts_does_not_stop_its_clean_up_again(first):
    # A Ctrl-C during a run on several hosts stops each lab twice over: its progress
    # (Interrupted at its next step) and its host (HostInterrupted from its next command).
    # Whichever comes first unwinds the lab; the other must not cut its teardown short.
    progress, stream = plain_progress()
    host = LocalHost()
    progress.interrupt()
    host._interrupt.set()
    measure = {"progress": lambda: progress.step("measuring"), "host": lambda: host.run("true")}
    with pytest.raises(Interrupted if first == "progress" else HostInterrupted):
        try:
            measure[first]()
        finally:
            host.run("true")  # the teardown runs its commands and reports its steps
            progress.step("removing the array")
    assert "removing the array" in stream.getvalue()


def test_a_quick_run_says_how_long_it_took_when_measured_and_other_profiles_say_nothing(
        tmp_path):
    from labs import timings

    measured = tmp_path / "quick-runs.csv"
    measured.write_text("lab,host,seconds,boot_included,measured_on,commit,how\n"
                        "drbd,vm1,515,no,2026-11-29,abc,uncut\ndevices,local,56,no,,,x\n")
    assert timings.measured_quick_seconds("drbd", "vm2", measured) == 515  # any lab VM
    assert timings.measured_quick_seconds("devices", "local", measured) == 56
    assert timings.measured_quick_seconds("devices", "vm1", measured) is None
    assert timings.measured_quick_seconds("drbd", "vm1", tmp_path / "missing.csv") is None
    line = timings.expected_duration_line("devices", "vm1", "quick")
    assert line is not None and line.startswith("expected: about ")
    assert timings.expected_duration_line("devices", "vm1", "full") is None


def test_the_expected_time_is_printed_only_for_the_quick_profile_as_it_is():
    # `--quick --part all` runs more than the measured quick run: no expected time for it.
    from labs.drbd.params import Parameters

    quick = Parameters.for_profile("quick")
    assert quick.changed_from_profile() == []
    assert Parameters.for_profile("quick", seed=3, peer="vm3").changed_from_profile() == []
    assert Parameters.for_profile("quick", part="all").changed_from_profile() == ["part"]


def test_a_planned_job_counts_its_declared_steps_and_prints_name_and_detail():
    progress, stream = plain_progress(1)
    progress.plan(["set-up", "a leg", "a leg", "teardown"])
    progress.step("set-up", "on vm1")
    progress.step("a leg")
    lines = stream.getvalue().splitlines()
    assert lines[0].endswith("step 1/4: set-up — on vm1")
    assert lines[1].endswith("step 2/4: a leg")
    recorded = progress.recorded_steps()
    assert recorded["planned"] == ["set-up", "a leg", "a leg", "teardown"]
    assert [(step["name"], step["detail"]) for step in recorded["taken"]] == [
        ("set-up", "on vm1"), ("a leg", "")]


@pytest.mark.parametrize("name", ["", "  ", "a leg — the first"])
def test_a_step_name_must_be_words_without_the_detail_separator(name):
    progress, _ = plain_progress()
    with pytest.raises(ValueError, match="cannot name a step"):
        progress.plan(["set-up", name])
