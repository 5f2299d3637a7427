"""One progress reporter for every long job: which step, step k of n, elapsed time.

    progress = Progress("torn-pages", total_steps=1)
    progress.plan(["pgbench -i", "a pgbench leg", ...])  # the lab's steps, declared once
    progress.step("pgbench -i", "scale 16")       # counts: "step 1/17: pgbench -i — scale 16"
    progress.detail("resync 41.0 % at 48 MiB/s")  # a sub-step: shown, not counted
    progress.close()

A lab declares its steps once, by name and in order, with the conditions its parameters set
(`plan`); the total a reader sees is their number, never a sum written by hand. Each step
then gives its name and, optionally, what this run does in it (`detail`: a host, a delay).
A lab run records both lists (`recorded_steps`, kept in run.json): the tests check that a
run took the steps it planned, and a step's start time shows where a run's time went.

In a terminal it draws a tqdm bar on stderr (`tqdm.auto` draws a notebook bar in
JupyterLab); anywhere else (a log file, CI, a pipe read by the live panel) it prints one
plain line per step on stderr, `[torn-pages    12 s] step 3/17: ...`, which is easy to read
and to parse. Progress never goes to stdout: stdout carries the lab's command line and its
result, so a reader can pipe them.

A lab run on several hosts at once gives each host its own reporter, named after lab and
host (`[template@seat-a  12 s] ...`), each drawn on its own line (`position`) in a terminal.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import IO, Any

from tqdm.auto import tqdm

from labs.errors import Interrupted, unwinding_from_an_interrupt

STEP_LINE = re.compile(r"^\[(?P<name>\S+)\s+(?P<elapsed>\d+) s\] step (?P<step>\d+)/(?P<total>\d+)"
                       r": (?P<text>.*)$")
STEP_DETAIL_SEPARATOR = " — "  # between a step's name and what this run does in it
QUIET_DETAIL_S = 20.0  # without a terminal, transient details are printed this often at most

# A Ctrl-C (or a SIGTERM, which unwinds like one) must stop the lab even when the
# KeyboardInterrupt it raises never reaches the lab's code: one that lands while Python runs a
# finalizer (a weakref callback, a __del__) can only be reported as "Exception ignored", and
# code that catches too much can eat one silently (CI once saw a torn-pages run go on for
# minutes past its Ctrl-C, with nothing printed). `python -m labs` notes each one here
# (`note_interrupt`, from its signal handler), and the next step or detail in the main thread
# raises it again, unless the lab is already unwinding from that very one.
_pending_interrupt: BaseException | None = None


def note_interrupt(interrupt: BaseException | None) -> None:
    """Remember the KeyboardInterrupt a signal raises now (None: forget any)."""
    global _pending_interrupt
    _pending_interrupt = interrupt


def keep_swallowed_interrupts(unraisable) -> None:
    """A `sys.unraisablehook`: a KeyboardInterrupt that could not be raised is kept, silently,
    for the next progress report; anything else is printed as Python would."""
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        note_interrupt(unraisable.exc_value or KeyboardInterrupt())
        return
    sys.__unraisablehook__(unraisable)


@dataclass(frozen=True)
class TakenStep:
    name: str
    detail: str
    started_at: float  # Unix time: a run's record shows where its time went


class Progress:
    def __init__(self, name: str, total_steps: int, *, stream: IO[str] | None = None,
                 callback: Callable[[float, str], None] | None = None,
                 interactive: bool | None = None, position: int | None = None):
        self.name = name
        # With several reporters at once (one per host), what `say` prints names its reporter.
        self.say_prefix = f"[{name}] " if position is not None else ""
        self.total = max(int(total_steps), 1)
        self.stream = stream or sys.stderr
        self.callback = callback  # (fraction done, step text), for widgets
        self.done = 0
        self.planned: tuple[str, ...] = ()  # the lab's steps by name, once it declares them
        self.taken: list[TakenStep] = []
        self.stop_requested = False  # set by `interrupt`, from another thread
        self.started = time.monotonic()
        self._last_detail = 0.0
        if interactive is None:
            interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar = None
        if interactive:
            self.bar = tqdm(total=self.total, desc=name, unit="step", file=self.stream,
                            bar_format="{desc}: step {n_fmt}/{total_fmt} {bar} [{elapsed}] "
                                       "{postfix}", leave=True, dynamic_ncols=True,
                            position=position)

    def plan(self, steps: Sequence[str]) -> None:
        """Declare the job's steps by name, in order (a lab knows them after validating its
        parameters): the total shown is their number."""
        names = tuple(steps)
        for name in names:
            if not name.strip() or STEP_DETAIL_SEPARATOR in name:
                raise ValueError(f"{self.name}: {name!r} cannot name a step")
        self.planned = names
        self.total = max(len(names), self.done, 1)
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.refresh()

    def recorded_steps(self) -> dict[str, Any]:
        """The steps planned, the steps taken (name, detail, start) and now (the last step's
        end: the lab's work is done when its run is recorded), for run.json."""
        return {"planned": list(self.planned), "taken": [asdict(step) for step in self.taken],
                "ended_at": time.time()}

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def interrupt(self) -> None:
        """Make the lab stop at its next step or detail (a lab that runs only Python, such as
        a simulation, has no host command to interrupt)."""
        self.stop_requested = True

    def _stop_if_asked(self) -> None:
        # Signals are handled in the main thread only: a lab's own thread (one per host in a
        # run on several hosts) is stopped through `interrupt` instead.
        interrupt = _pending_interrupt
        if interrupt is not None and threading.current_thread() is threading.main_thread():
            note_interrupt(None)  # once, as Ctrl-C would have been
            if not unwinding_from_an_interrupt(interrupt):
                raise KeyboardInterrupt  # it was swallowed on its way
        if self.stop_requested:
            self.stop_requested = False  # once: the lab's cleanup may report progress too
            # Its host may have stopped the lab first (HostInterrupted): the same stop.
            if not unwinding_from_an_interrupt():
                raise Interrupted(f"{self.name}: interrupted")

    def step(self, name: str, detail: str = "") -> None:
        """A new step starts: its name as planned, and what this run does in it. Steps
        beyond the total stretch the total."""
        self._stop_if_asked()
        self.taken.append(TakenStep(name, detail, time.time()))
        text = f"{name}{STEP_DETAIL_SEPARATOR}{detail}" if detail else name
        self.done += 1
        if self.done > self.total:
            self.total = self.done
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.n = self.done
            self.bar.set_postfix_str(text[:80], refresh=True)
        else:
            self._line(f"step {self.done}/{self.total}: {text}")
        if self.callback:
            self.callback((self.done - 1) / self.total, text)

    def detail(self, text: str, transient: bool = False) -> None:
        """Something inside the current step. Transient details (a percentage that keeps
        changing) are rate-limited without a terminal."""
        self._stop_if_asked()
        if self.bar is not None:
            if transient:
                self.bar.set_postfix_str(text[:80], refresh=True)
            else:
                self.bar.write(f"  {text}", file=self.stream)
            return
        now = time.monotonic()
        if transient and now - self._last_detail < QUIET_DETAIL_S:
            return
        self._last_detail = now
        self._line(f"  {text}")

    def say(self, text: str) -> None:
        """A fact the reader should find in the output (an image chosen, a host used): stdout."""
        text = self.say_prefix + text
        if self.bar is not None:
            self.bar.write(text, file=sys.stdout)
        else:
            print(text, flush=True)

    def _line(self, text: str) -> None:
        print(f"[{self.name} {self.elapsed_s:6.0f} s] {text}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self.callback:
            self.callback(1.0, "done")


def parse_step_line(line: str) -> dict[str, str] | None:
    """The parts of a plain step line (for the live panel), or None for other lines."""
    match = STEP_LINE.match(line.strip())
    return match.groupdict() if match else None
