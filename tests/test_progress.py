"""Progress and interrupts: a Ctrl-C is never lost, even when it lands in a finalizer."""

import io
import signal
import sys

import pytest

from labs.__main__ import main
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
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)  # main makes SIGTERM unwind like Ctrl-C
    assert sys.unraisablehook is keep_swallowed_interrupts
