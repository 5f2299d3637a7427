"""One lab on several lab hosts at once, with Fabric's own group support.

    from labs.infra.group import HostRun, run_on_hosts
    members = [HostRun(host, params_for(host), run_function, progress_for(host)) ...]
    outcomes = run_on_hosts(members)   # {host name: RecordedRun or the exception it raised}

Fabric's ThreadingGroup runs one call per member, each in its own thread, and collects a
GroupResult: the value of each member, or the exception that member raised. Its members are
normally Connections and the call `run`; here each member is a whole lab run on one host
(HostRun) and the call is `run_lab`, so a host that fails is that host's result and the
others carry on. A workshop runs one lab on twenty cloud VMs this way, and two lab VMs in
the tests.

Ctrl-C (or SIGTERM) in the middle interrupts every host: the command each one is running is
stopped (labs.infra.hosts.Host.interrupt), each lab unwinds as after a Ctrl-C on one host
(its workspace removes what it made, its unfinished run is never published), and anything
left stays in the journal for `python -m labs clean`.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from fabric import ThreadingGroup
from fabric.exceptions import GroupException

from labs.infra.hosts import Host
from labs.progress import Progress

UNWIND_TIMEOUT_S = 300  # how long a Ctrl-C waits for the labs to remove what they made


class HostRun:
    """A member of the group: one lab run on one host (the group calls `run_lab`)."""

    def __init__(self, host: Host, params: Any, run_function: Callable, progress: Progress):
        self.host = host
        self.params = params
        self.run_function = run_function
        self.progress = progress
        self.finished = threading.Event()

    def run_lab(self) -> Any:
        try:
            return self.run_function(self.params, self.host, self.progress)
        finally:
            self.progress.close()
            self.finished.set()

    def close(self) -> None:
        """Called by Group.close(): release the host's connection."""
        self.host.close()

    def __repr__(self) -> str:
        return f"<HostRun {self.host.name}>"


class LabGroup(ThreadingGroup):
    """Fabric's ThreadingGroup over HostRun members instead of Connections."""

    def run_labs(self) -> dict[HostRun, Any]:
        # Group._do(method) is Fabric's one dispatch point for every group call (run, sudo,
        # put, get): it calls `method` on each member in its own thread and gathers the
        # results and exceptions into a GroupResult, raising GroupException if any failed.
        return self._do("run_lab")


def run_on_hosts(members: list[HostRun], log: Callable[[str], None] | None = None
                 ) -> dict[str, Any]:
    """Run every member's lab at once; {host name: recorded run or exception}, in order.

    A KeyboardInterrupt interrupts every host, waits for the labs to unwind (a second one
    stops waiting) and is raised again.
    """
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    group = LabGroup.from_connections(members)
    try:
        try:
            results: dict[HostRun, Any] = group.run_labs()
        except GroupException as failed:
            results = failed.result
        except KeyboardInterrupt:
            _interrupt_all(members, log)
            raise
    finally:
        group.close()
    return {member.host.name: results.get(member) for member in members}


def _interrupt_all(members: list[HostRun], log: Callable[[str], None]) -> None:
    running = [m for m in members if not m.finished.is_set()]
    names = ", ".join(m.host.name for m in running) or "no host"
    log(f"interrupted: stopping the lab on {names} and removing what it made "
        f"(Ctrl-C again to leave at once; then run `python -m labs clean`)")
    for member in running:
        member.progress.interrupt()  # a lab between host commands stops at its next step
    stoppers = [threading.Thread(target=m.host.interrupt, daemon=True) for m in running]
    for stopper in stoppers:
        stopper.start()
    deadline = time.monotonic() + UNWIND_TIMEOUT_S
    for member in running:
        while not member.finished.wait(0.2):
            if time.monotonic() > deadline:
                log(f"{member.host.name}: still unwinding after {UNWIND_TIMEOUT_S} s; "
                    "`python -m labs clean` removes what is left")
                return
