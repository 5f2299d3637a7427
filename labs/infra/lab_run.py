"""What every lab run opens and closes the same way, written once.

A lab's `run()` does its own measuring inside

    progress.plan(steps(params))
    with LabRun(params, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        ...
    return lab_run.recorded()

and LabRun does the rest: a run id for the host, the recorder (run.json, results.csv and
raw/, published only when the block ends without an error), the command line that
reproduces the run as the first command of its record, then every command run on the lab
host (and its peers) through the host objects it was given, a workspace on each, and the
recorded run loaded back at the end. The run's record keeps the steps the lab planned and the
ones it took, with their start times (from `progress`).
The workspace closes before the recorder: what the lab made is gone before its run is
published, and a run that could not clean up is no run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from typing import Any

from labs.infra.facts import host_facts
from labs.infra.hosts import Host
from labs.infra.workspace import LabWorkspace
from labs.lab import LabParameters
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder, load_run, new_run_id


class LabRun:
    """One run of a lab on `host`: `rec` (the RunRecorder) and `ws` (its LabWorkspace).

    `progress` is the lab's reporter: the run records the steps it planned and took.
    `facts` and `record` replace the host's facts and the parameters' record when a lab
    adds to them; `peers` are more hosts the run uses (DRBD's second side), each with a
    workspace of its own in `peer_workspaces`, opened first so that they close last;
    `log` and `allow_devices` go to the workspaces."""

    def __init__(self, params: LabParameters, host: Host, progress: Progress, *,
                 facts: dict[str, Any] | None = None, record: dict[str, Any] | None = None,
                 peers: Sequence[Host] = (),
                 log: Callable[[str], None] | None = None,
                 allow_devices: Iterable[str] = ()) -> None:
        self.params, self.host, self.peers = params, host, tuple(peers)
        self.progress = progress
        self.run_id = new_run_id(host.name)
        self.rec = RunRecorder(
            params.LAB, params.as_record() if record is None else record, seed=params.seed,
            run_id=self.run_id, lab_host=host.name,
            host=host_facts(host) if facts is None else facts)
        self._workspace_options = {"log": log, "allow_devices": tuple(allow_devices)}
        self._stack = ExitStack()
        self.ws: LabWorkspace  # set on entering
        self.peer_workspaces: list[LabWorkspace] = []

    def _workspace(self, host: Host) -> LabWorkspace:
        return self._stack.enter_context(LabWorkspace(
            host, lab=self.params.LAB, run_id=self.run_id, on_command=self.rec.add_command,
            **self._workspace_options))

    def __enter__(self) -> LabRun:
        with ExitStack() as opening:
            opening.push(self._stack.__exit__)  # an error while opening closes what opened
            self._stack.enter_context(self.rec)
            self.rec.add_command(self.params.command_line())
            # Then what the hosts ran before (the lab's checks, the facts), and from now on
            # everything they run (each workspace makes its host tell the recorder).
            self.peer_workspaces = [self._workspace(peer) for peer in self.peers]
            self.ws = self._workspace(self.host)
            opening.pop_all()
        return self

    def __exit__(self, *exc_info: object) -> bool | None:
        self.rec.steps = self.progress.recorded_steps()  # the last step has started
        try:
            return self._stack.__exit__(*exc_info)
        finally:
            for host in (self.host, *self.peers):
                host.listen(None)  # the recorder is closed: a next run records its own

    def recorded(self) -> RecordedRun:
        """The run as the book reads it, once the `with` block has published it."""
        return load_run(self.rec.final_path)
