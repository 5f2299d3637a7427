"""What a test session reports: the figures tests print for the closing note, the two groups
the suite runs in side by side, and the time per area at the end (CI's budget).

`make test` runs two pytest-xdist workers (`-n 2 --dist loadgroup`; `make test-fast` spreads
whole files over two workers instead). Every test that uses the lab VMs is in the
group `vm`, every other test in the group `host`, and each worker runs one whole group in
collection order, as a single process would (TwoGroupScheduling): the VM labs (mostly
waiting on emulated machines) run beside the models, the book, the browser and the
container labs. Within a group nothing changes, so tests that share a machine never overlap.
The workers find the groups (they know each test's fixtures) and write them to a file the
controller's scheduler reads. The host group's worker runs at the lowest CPU priority: the
VM group is the longer one, and its emulated machines need the CPU most; while a VM test
holds the machine (`machine_to_itself`: the DRBD lab's ci run until its drill, the devices lab's),
the host group's worker starts no new test, and the hold begins once its current test is over.

The figures a worker reports go to a file the controller reads after every test (a worker's
own standard output reaches no terminal). The time report is printed at the end and
written to `_build/test-times.json` (benchmarks/ci_times.py keeps a record of it), with the
steps of every lab run the tests checked and how long each took (`keep_lab_steps`;
benchmarks/lab_steps.py keeps a record of those: where a lab's ci time goes).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

PROJECT_ROOT = Path(__file__).resolve().parent.parent
FIGURES_ENV = "LABS_TEST_FIGURES"
GROUPS_ENV = "LABS_TEST_GROUPS"
MACHINE_WANTED_ENV = "LABS_TEST_MACHINE_WANTED"
TWO_GROUPS_ENV = "LABS_TEST_TWO_GROUPS"  # set: a host group's worker runs beside this one
ONCE_ENV = "LABS_TEST_ONCE"  # a folder: what once_per_session did, and its locks
LAB_STEPS_ENV = "LABS_TEST_LAB_STEPS"  # a file: one line per lab run the tests checked
TIMES_FILE = PROJECT_ROOT / "_build" / "test-times.json"

# A test in this group uses the lab VMs (booted once per session, in the worker that runs
# the group); every other test is in HOST_GROUP.
VM_GROUP, HOST_GROUP = "vm", "host"
VM_FIXTURES = {"lab_vms", "background_ci"}


def is_worker(config: pytest.Config | None) -> bool:
    return config is not None and hasattr(config, "workerinput")


def report(config: pytest.Config | None, message: str) -> None:
    """A figure for the closing note: straight to the terminal, past pytest's capture (from
    a worker, through the figures file the controller prints)."""
    shared = os.environ.get(FIGURES_ENV)
    if shared and is_worker(config):
        with open(shared, "a", encoding="utf-8") as out:
            out.write(f"{message}\n")
        return
    capture = config.pluginmanager.getplugin("capturemanager") if config else None
    if capture is None:
        print(f"[figures] {message}")
        return
    with capture.global_and_fixture_disabled():
        sys.stdout.write(f"\n[figures] {message}\n")
        sys.stdout.flush()


def _fixtures(item: pytest.Item) -> set[str]:
    return set(getattr(item, "fixturenames", ()))


def vm_modules(items: list[pytest.Item]) -> set[str]:
    """Test files in which some test uses the lab VMs."""
    return {item.nodeid.split("::", 1)[0] for item in items if VM_FIXTURES & _fixtures(item)}


def group_of(item: pytest.Item, modules_with_vms: set[str]) -> str:
    """VM_GROUP for a test that uses the lab VMs, or that lives beside such tests and drives
    a lab host (a test that reaches a VM fixture through request.getfixturevalue shows none
    in its signature, and is marked lab_host instead), unless it uses the container engine
    (the container labs stay in one group). A test beside them that drives no lab host (bad
    input, parsers: what `make test-fast` runs without any VM) goes to the host group, off
    CI's longest path."""
    fixtures = _fixtures(item)
    if VM_FIXTURES & fixtures:
        return VM_GROUP
    if "docker_engine" in fixtures or item.get_closest_marker("lab_host") is None:
        return HOST_GROUP
    return VM_GROUP if item.nodeid.split("::", 1)[0] in modules_with_vms else HOST_GROUP


# The VM group is CI's longest path, and its emulated machines are bound by this machine's
# CPU: the host group's worker runs at the lowest priority (it and what it starts, such as
# the book build and the browser), so it uses what the VMs leave and delays them little.
HOST_GROUP_NICE = 19
_lowered: list[bool] = []
_GROUP_OF_TEST: dict[str, str] = {}  # in a worker, from its collection


def lower_priority_for_the_host_group(item: pytest.Item) -> None:
    """In a worker, before its first host-group test: `nice` itself (once)."""
    if is_worker(item.config) and not _lowered and \
            _GROUP_OF_TEST.get(item.nodeid) == HOST_GROUP:
        os.nice(HOST_GROUP_NICE)
        _lowered.append(True)


# The lowest priority is not enough for the longest VM lab run: beside the host group's
# containers, browser and book build, the DRBD lab's ci run took 653 s, alone about 400 s (the
# emulated machines lose more than their share of the two cores). While a VM test holds the
# machine (machine_to_itself), the host group's worker waits between its tests. The wait
# is on CI's longest path when the host group is the longer one (it was, by a minute, in the
# rehearsal of 7bc711d): hold the machine only while a run times what it measures.
MACHINE_WAIT_LIMIT_S = 900


# A hold stops only new tests: a container lab or an image build already running in the host
# group goes on at normal priority (the engine's processes are not the worker's children), and
# beside one a cold rehearsal's devices run measured gp3 12 % below its contract. So a hold
# first waits, at most QUIET_WAIT_LIMIT_S, until the host group's worker is between tests.
QUIET_WAIT_LIMIT_S = 600


def _host_idle_path(wanted: str) -> Path:
    """Present while the host group's worker waits for a hold, once its group is done, and
    once it gave up waiting for a hold (it waits for none after that)."""
    return Path(f"{wanted}.host-idle")


@contextmanager
def machine_to_itself():
    """In the VM group: the host group starts no new test while this block runs, or until
    the block calls what it yields (`let_go()`: the rest of the block needs no quiet). The
    block starts once the host group's current test has ended (QUIET_WAIT_LIMIT_S at most)."""
    wanted = os.environ.get(MACHINE_WANTED_ENV)
    if not wanted:  # outside a session that shares files with its workers
        yield lambda: None
        return
    path = Path(wanted)
    path.touch()
    try:
        if os.environ.get(TWO_GROUPS_ENV):  # else no host group runs beside: nobody to wait for
            _wait_for_the_host_group_to_pause(wanted)
        yield lambda: path.unlink(missing_ok=True)
    finally:
        path.unlink(missing_ok=True)


def _wait_for_the_host_group_to_pause(wanted: str) -> None:
    started = time.monotonic()
    while not _host_idle_path(wanted).exists():
        if time.monotonic() - started >= QUIET_WAIT_LIMIT_S:
            return
        time.sleep(0.5)


_gave_up_waiting: list[bool] = []


def wait_while_the_machine_is_wanted(item: pytest.Item) -> None:
    """In the host group's worker, before each test: wait while a VM test holds the
    machine, saying so (the holder waits for that). After MACHINE_WAIT_LIMIT_S in one wait
    it never waits again: a VM worker that died holding the machine delays the host group
    only that long."""
    wanted = os.environ.get(MACHINE_WANTED_ENV)
    if not wanted or _gave_up_waiting or _GROUP_OF_TEST.get(item.nodeid) != HOST_GROUP:
        return
    started = time.monotonic()
    idle = _host_idle_path(wanted)
    try:
        while Path(wanted).exists():
            idle.touch()
            if time.monotonic() - started >= MACHINE_WAIT_LIMIT_S:
                _gave_up_waiting.append(True)
                return
            time.sleep(0.5)
    finally:
        if not _gave_up_waiting:  # else it never pauses again: a later hold waits for nothing
            idle.unlink(missing_ok=True)


def host_group_done(config: pytest.Config) -> None:
    """In the host group's worker, at its session's end: a later hold has nothing to wait
    for."""
    wanted = os.environ.get(MACHINE_WANTED_ENV)
    if wanted and is_worker(config) and _lowered:
        _host_idle_path(wanted).touch()


def write_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker: each test's group, for the controller's scheduler (written whole, then
    renamed: both workers write the same groups)."""
    path = os.environ.get(GROUPS_ENV)
    if not is_worker(config) or not path:
        return
    partial = Path(f"{path}.{config.workerinput['workerid']}")
    modules = vm_modules(items)
    _GROUP_OF_TEST.update({item.nodeid: group_of(item, modules) for item in items})
    partial.write_text(json.dumps(_GROUP_OF_TEST))
    partial.replace(path)


class TwoGroupScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling with two scopes, the groups: each goes whole to one
    worker, its tests in collection order."""

    def _split_scope(self, nodeid: str) -> str:
        if not hasattr(self, "groups"):
            self.groups = json.loads(Path(os.environ[GROUPS_ENV]).read_text())
        return self.groups.get(nodeid, HOST_GROUP)


# --- the areas of the time report -------------------------------------------------------------

BOOK_FILES = {"test_book.py", "test_book_controls.py", "test_book_incremental.py",
              "test_workshop_book.py", "test_pages_are_notebooks.py"}
VM_AREA_FILES = {"test_vm.py", "test_vm_image_build.py", "test_hosts.py",
                 "test_run_on_many_hosts.py", "test_throttle_qmp.py"}
LAB_FILE = re.compile(r"test_(?P<lab>[a-z_]+?)_(?:lab|local|power_cut)\.py$")


def area_of(path: str) -> str:
    """The area a test file's time counts to: set-up and unit work apart from each live lab."""
    name = Path(path).name
    if name in BOOK_FILES:
        return "book and browser"
    if name == "test_fault_injection.py":
        return "faults"
    if name in VM_AREA_FILES:
        return "lab VMs and hosts"
    if name.endswith("_recorded.py"):
        return "recorded runs"
    lab = LAB_FILE.search(name)
    if lab:
        return f"{lab.group('lab').replace('_', '-')} lab (live)"
    return "unit (models, parsers, tools, commands)"


class SessionTimes:
    """Seconds per test file and per area, and each worker's span, from the test reports."""

    def __init__(self) -> None:
        self.started = time.time()
        self.seconds_by_file: dict[str, float] = {}
        self.span_by_worker: dict[str, list[float]] = {}
        # When each file ran, per worker: which tests of one group ran beside which of the
        # other (the VM group's labs are slower beside the host group's containers).
        self.span_by_file: dict[tuple[str, str], list[float]] = {}
        self.cpu_at_start = cpu_times()
        self.figures_read = 0

    def add(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.seconds_by_file[path] = self.seconds_by_file.get(path, 0.0) + report.duration
        worker = getattr(getattr(report, "node", None), "gateway", None)
        name = worker.id if worker is not None else "main"
        for spans, key in ((self.span_by_worker, name), (self.span_by_file, (name, path))):
            span = spans.setdefault(key, [report.start, report.stop])
            span[0], span[1] = min(span[0], report.start), max(span[1], report.stop)

    def timeline(self) -> list[list]:
        """[worker, file, first start, last stop] (seconds into the session), by start."""
        return sorted([[worker, path, round(start - self.started, 1),
                        round(stop - self.started, 1)]
                       for (worker, path), (start, stop) in self.span_by_file.items()],
                      key=lambda row: row[2])

    def seconds_by_area(self) -> dict[str, float]:
        areas: dict[str, float] = {}
        for path, seconds in self.seconds_by_file.items():
            areas[area_of(path)] = areas.get(area_of(path), 0.0) + seconds
        return dict(sorted(areas.items(), key=lambda item: -item[1]))

    def summary(self) -> dict:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=PROJECT_ROOT,
                                capture_output=True, text=True).stdout.strip()
        return {"commit": commit, "wall_s": round(time.time() - self.started, 1),
                "workers_s": {name: round(stop - start, 1)
                              for name, (start, stop) in sorted(self.span_by_worker.items())},
                "cpu_idle_pct": idle_pct(self.cpu_at_start, cpu_times()),
                "areas_s": {area: round(s, 1) for area, s in self.seconds_by_area().items()},
                "files_s": {path: round(s, 1) for path, s in sorted(
                    self.seconds_by_file.items(), key=lambda item: -item[1])},
                "timeline": self.timeline()}


def cpu_times() -> tuple[float, float]:
    """This machine's (idle, total) CPU time so far, in ticks (/proc/stat's first line;
    iowait counts as idle: a processor waiting for a disk could run something else)."""
    try:
        fields = [float(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return (0.0, 0.0)
    return (fields[3] + fields[4], sum(fields[:8]))


def idle_pct(before: tuple[float, float], after: tuple[float, float]) -> float | None:
    """The share of the processors' time spent idle between two cpu_times()."""
    total = after[1] - before[1]
    return round(100 * (after[0] - before[0]) / total, 1) if total > 0 else None


TIMES = SessionTimes()


def start_shared_files(config: pytest.Config) -> None:
    """In the controller, before the workers start: the files they write their figures and
    the tests' groups to (the workers inherit the environment)."""
    if is_worker(config):
        return
    folder = Path(tempfile.mkdtemp(prefix="labs-test-session-"))
    os.environ[FIGURES_ENV] = str(folder / "figures.txt")
    os.environ[GROUPS_ENV] = str(folder / "groups.json")
    os.environ[MACHINE_WANTED_ENV] = str(folder / "machine-wanted")
    if config.getoption("dist", "no") == "loadgroup":
        os.environ[TWO_GROUPS_ENV] = "1"
    os.environ[ONCE_ENV] = str(folder)
    os.environ[LAB_STEPS_ENV] = str(folder / "lab-steps.jsonl")


def keep_lab_steps(run, how: str) -> None:
    """Note a lab run the tests checked (`how`: its lab, profile and host) with the seconds
    of each step it took, for the time report."""
    path = os.environ.get(LAB_STEPS_ENV)
    if not path:
        return
    line = {"lab": run.lab, "how": how, "wall_s": round(run.wall_s, 1),
            "steps": [[name, round(seconds, 1)] for name, _, seconds in run.step_seconds()]}
    with open(path, "a", encoding="utf-8") as out:  # one short line: appends do not interleave
        out.write(json.dumps(line) + "\n")


def lab_runs() -> list[dict]:
    """The lab runs the workers noted (keep_lab_steps), slowest first."""
    path = os.environ.get(LAB_STEPS_ENV)
    if not path or not Path(path).exists():
        return []
    runs = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
    return sorted(runs, key=lambda run: -run["wall_s"])


def once_per_session(name: str, work: Callable[[], None]) -> bool:
    """Do `work` once in the whole session, whichever worker asks first; a worker that asks
    while another does it waits for it. True if this call did it. Work that fails is not
    marked done: the next to ask tries again (and fails the same way)."""
    folder = os.environ.get(ONCE_ENV)
    if not folder:  # outside a session that shares files with its workers
        work()
        return True
    done = Path(folder) / f"{name}.done"
    with open(Path(folder) / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done.exists():
            return False
        work()
        done.touch()
        return True


def relay_figures(config: pytest.Config) -> None:
    """Print the figures the workers wrote since the last call (controller only)."""
    path = os.environ.get(FIGURES_ENV)
    if is_worker(config) or not path or not Path(path).exists():
        return
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    reporter = config.pluginmanager.getplugin("terminalreporter")
    for line in lines[TIMES.figures_read:]:
        if reporter is not None:
            reporter.write_line(f"[figures] {line}")
    TIMES.figures_read = len(lines)


def write_lab_steps(terminalreporter, runs: list[dict]) -> None:
    """Each lab run the tests checked: its wall time and its three slowest steps."""
    if not runs:
        return
    terminalreporter.section("lab runs: wall time and the slowest steps")
    for run in runs:
        slowest = sorted(run["steps"], key=lambda step: -step[1])[:3]
        terminalreporter.write_line(f"{run['wall_s']:8.1f} s  {run['how']}: " + "; ".join(
            f"{name} {seconds:.0f} s" for name, seconds in slowest))


def write_time_report(terminalreporter) -> None:
    if not TIMES.seconds_by_file or is_worker(terminalreporter.config):
        return
    relay_figures(terminalreporter.config)
    summary = TIMES.summary()
    write = terminalreporter.write_line
    terminalreporter.section("time per area (setup, call and teardown, summed per area)")
    for area, seconds in summary["areas_s"].items():
        write(f"{seconds:8.1f} s  {area}")
    for worker, seconds in summary["workers_s"].items():
        write(f"{seconds:8.1f} s  wall time of worker {worker}")
    write(f"{summary['wall_s']:8.1f} s  wall time of the session "
          f"(processors idle {summary['cpu_idle_pct']} % of it)")
    terminalreporter.section("time per test file")
    total = sum(summary["files_s"].values()) or 1.0  # a session of instant tests
    for path, seconds in list(summary["files_s"].items())[:25]:
        write(f"{seconds:8.1f} s  {100 * seconds / total:5.1f} %  {path}")
    summary["lab_runs"] = lab_runs()
    write_lab_steps(terminalreporter, summary["lab_runs"])
    TIMES_FILE.parent.mkdir(exist_ok=True)
    TIMES_FILE.write_text(json.dumps(summary, indent=1) + "\n")
    write(f"written to {TIMES_FILE.relative_to(PROJECT_ROOT)}")
