"""Shared fixtures. Nothing here skips: a missing precondition is a failure.

The expensive things are made once per test session and shared by every test that needs
them (CI's time budget depends on it):

- `lab_vms`: one pair of lab VMs (vm1, vm2 on a private link), booted once;
- `docker_engine`: the local container engine, started if none runs, with the project's
  images built (cached by recipe hash, so a no-op when they exist).

Tests marked `last` run after all others (they stop what the session shares).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from session_report import (
    TIMES,
    TwoGroupScheduling,
    host_group_done,
    keep_lab_steps,
    lower_priority_for_the_host_group,
    once_per_session,
    relay_figures,
    report,
    start_shared_files,
    wait_while_the_machine_is_wanted,
    write_groups,
    write_time_report,
)

from labs.infra.hosts import TRACE_ENV

PROJECT_ROOT = Path(__file__).resolve().parent.parent
VM_PAIR_ARGS = ("--pair", "--memory", "1536", "--cpus", "2", "--slow-iops", "200")


def run_labs(*args: str, env: dict | None = None, timeout: float = 120):
    """Run `python -m labs ...` as a reader would; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "labs", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def vm_leftovers(lab_vms, vm: str) -> str:
    """`python -m labs leftovers --host VM`'s first line: each kind of resource the labs'
    journals still hold on the VM, as kind=count."""
    out = lab_vms.cli("leftovers", "--host", vm, timeout_s=300)
    assert out.returncode in (0, 1), out.stderr
    return out.stdout.splitlines()[0]


def assert_no_leftovers(lab_vms, vm: str) -> str:
    left = vm_leftovers(lab_vms, vm)
    assert all(word.endswith("=0") for word in left.split()), left
    return left


def assert_one_line_usage_error(result, fragment: str):
    """Bad input: exit code 2, nothing on stdout, one line on stderr naming the problem."""
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert fragment in lines[0], lines[0]


def run_cli(args, env, timeout=1200):
    """`python -m labs ARGS` with exactly `env` (a lab test's private state and runs)."""
    return subprocess.run([sys.executable, "-m", "labs", *args], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def owner_label(state_dir: Path) -> str:
    """The container label value of a state dir (labs.infra.paths.command_marker)."""
    return subprocess.run([sys.executable, "-c", "from labs.infra.paths import command_marker; "
                           "print(command_marker())"], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, check=True,
                          env={**os.environ, "LABS_STATE_DIR": str(state_dir)}).stdout.strip()


def interrupt_lab_at(args: list[str], env: dict, step_line: str) -> tuple[int, str]:
    """Start `python -m labs ARGS`, send SIGINT (a Ctrl-C) once its progress on stderr shows
    `step_line`, and return (exit code, the rest of its stderr)."""
    lab = subprocess.Popen([sys.executable, "-m", "labs", *args], cwd=PROJECT_ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before: list[str] = []
    try:
        for line in lab.stderr:
            before.append(line)
            if step_line in line:
                break
        else:  # the lab ended without reaching the step: the test would prove nothing
            lab.wait(timeout=60)
            pytest.fail(f"the lab exited ({lab.returncode}) before {step_line!r}: "
                        + "".join(before[-20:]))
        lab.send_signal(signal.SIGINT)
        _, stderr = lab.communicate(timeout=300)
    finally:
        if lab.poll() is None:
            lab.kill()
    return lab.returncode, stderr


def local_lab_env(base: Path) -> dict:
    """The environment of a local lab run whose state, runs and work files live in `base`."""
    return {**os.environ, "LABS_STATE_DIR": str(base / "state"),
            "LABS_RUNS_DIR": str(base / "runs"), "LABS_WORK_DIR": str(base / "work"),
            "PYTHONUNBUFFERED": "1"}


def commands_not_recorded(trace: Path, run) -> tuple[int, list[str]]:
    """How many commands a lab ran through its hosts (the file TRACE_ENV names,
    written while it ran), and those of them its run.json does not list. Unmarked commands
    are the session's plumbing (who am I, stop my commands), not the lab's, and are left
    out."""
    recorded = set(run.meta["commands"])
    ran = [json.loads(line) for line in trace.read_text().splitlines() if line]
    marked = [entry["command"] for entry in ran if entry["marked"]]
    return len(marked), [command for command in marked if command not in recorded]


def command_trace(trace: Path) -> dict[str, str]:
    """The environment that makes a lab write every command it runs to `trace` (emptied
    first: a lab run twice in one folder is compared with its own commands only)."""
    trace.unlink(missing_ok=True)
    return {TRACE_ENV: str(trace)}


def assert_every_command_recorded(trace: Path, run, lab: str) -> None:
    """The commands a lab's run executed on its hosts are the ones its run.json lists."""
    ran, missing = commands_not_recorded(trace, run)
    assert ran > 0, f"{lab}: no command was traced ({trace})"
    assert missing == [], f"{lab}: {len(missing)} of {ran} commands it ran are not in run.json: " \
                          f"{missing[:5]}"


def assert_steps_as_planned(output: str, run) -> None:
    """A lab's progress knows its length, from the steps it declared: every step line has
    the same total, and the last step is that total (a lab that makes one step too many goes
    from "step 20/20" to "step 21/21"; one that makes too few ends at "step 19/20"). The run's
    record keeps the plan and the steps taken, by name: the same, in the same order. The run
    and its step times then go to the session's time report."""
    from labs.progress import parse_step_line

    steps = [(int(s["step"]), int(s["total"]))
             for s in map(parse_step_line, output.splitlines()) if s]
    assert steps, "no step lines"
    assert steps[0][0] == 1, f"the first step line is step {steps[0][0]}/{steps[0][1]}"
    totals = {total for _, total in steps}
    assert len(totals) == 1, f"step totals changed during the run: {sorted(totals)}"
    assert steps[-1][0] == totals.pop(), f"the last step line is step {steps[-1][0]}/{steps[-1][1]}"
    planned, taken = run.meta["steps"]["planned"], run.meta["steps"]["taken"]
    assert [step["name"] for step in taken] == planned, \
        f"{run.lab}: the steps taken are not the ones its plan declares"
    assert len(planned) == steps[-1][1], f"{run.lab}: the plan is not what progress counted"
    parameters = run.meta["parameters"]
    keep_lab_steps(run, f"{run.lab} --profile {parameters.get('profile')} on "
                        f"{parameters.get('host')}")


def run_local_ci(lab: str, base: Path, timeout: float) -> dict:
    """`python -m labs run LAB --host local --profile ci` with its state in `base`; asserts it
    succeeded and recorded one run: {"run", "stdout", "stderr", "base"}."""
    from labs.records import list_runs, load_run

    trace = base / "commands-ran.jsonl"
    result = run_cli(["run", lab, "--host", "local", "--profile", "ci"],
                     {**local_lab_env(base), **command_trace(trace)}, timeout=timeout)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    runs = list_runs(lab, base / "runs")
    assert len(runs) == 1
    run = load_run(runs[0])
    assert_steps_as_planned(result.stderr, run)
    assert_every_command_recorded(trace, run, lab)
    return {"run": run, "stdout": result.stdout, "stderr": result.stderr, "base": base}


@dataclass
class VmCiRun:
    run: object  # labs.records.RecordedRun
    wall_s: float
    stdout: str
    stderr: str


def run_vm_ci(lab_vms, lab: str, *args: str, timeout_s: float = 2400,
              env: dict | None = None, on_progress=None) -> VmCiRun:
    """`python -m labs run LAB ARGS --profile ci` in the session's lab VMs (with `env` on top
    of theirs); asserts it succeeded and recorded exactly one run, and returns that run, its
    wall time and what the command printed. `on_progress(line)`: called with each line of
    the lab's progress (standard error) as it comes."""
    from labs.records import list_runs, load_run

    before = set(list_runs(lab, lab_vms.base / "runs"))
    trace = lab_vms.base / f"{lab}-commands-ran.jsonl"
    started = time.monotonic()
    ran = lab_vms.cli("run", lab, *args, "--profile", "ci", timeout_s=timeout_s,
                      env={**(env or {}), **command_trace(trace)}, on_progress=on_progress)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    new = [p for p in list_runs(lab, lab_vms.base / "runs") if p not in before]
    assert len(new) == 1
    run = load_run(new[0])
    assert_steps_as_planned(ran.stderr, run)
    assert_every_command_recorded(trace, run, lab)
    return VmCiRun(run, time.monotonic() - started, ran.stdout, ran.stderr)


def glued_names(page: Path) -> set[str]:
    """The figure names a book page quotes with {glue:text}`name`."""
    return set(re.findall(r"\{glue:text\}`([A-Za-z0-9_\-]+)`", page.read_text()))


def kill_once_it_prints(args: list[str], env: dict, marker: str, settle_s: float = 0) -> str:
    """Start `python -m labs ARGS`, SIGKILL it `settle_s` after a line of its output (stdout
    and stderr together) shows `marker`, and return what it printed: a SIGKILL leaves the
    lab no cleanup of its own, only its journal."""
    lab = subprocess.Popen([sys.executable, "-m", "labs", *args], cwd=PROJECT_ROOT,
                           env={**env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        for line in lab.stdout:
            seen.append(line)
            if marker in line:
                break
        time.sleep(settle_s)
        lab.send_signal(signal.SIGKILL)
        lab.wait(timeout=60)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()
    printed = "".join(seen)
    assert marker in printed, f"the lab ended before {marker!r}:\n{printed[-3000:]}"
    return printed


def kill_at_step_then_clean(args: list[str], env: dict, step_line: str, leftovers) -> None:
    """Kill a local lab once its progress shows `step_line` (kill_once_it_prints), and check
    that `leftovers()` lists something that `clean` then removes."""
    kill_once_it_prints(args, env, step_line)
    assert leftovers() != []  # a SIGKILL cleans nothing by itself
    cleaned = run_cli(["clean"], env, timeout=600)
    assert cleaned.returncode == 0, cleaned.stderr
    assert leftovers() == []


def journal_and_container_leftovers(base: Path) -> list[str]:
    """Live journal entries on this machine, and containers and networks carrying the owner
    label, of a local lab run whose state dir is base/state."""
    import docker

    from labs.infra.containers import OWNER_LABEL
    from labs.infra.journal import Journal

    found = [f"journal {e.kind} {e.id}" for e in
             Journal("local", base / "state" / "journal-local.jsonl").live_entries()]
    owner = owner_label(base / "state")
    engine = docker.from_env()
    found += [f"container {c.name}" for c in engine.containers.list(
        all=True, filters={"label": f"{OWNER_LABEL}={owner}"})]
    found += [f"network {n.name}" for n in engine.networks.list(
        filters={"label": f"{OWNER_LABEL}={owner}"})]
    return found


def loops_over(folder: Path) -> list[str]:
    """`losetup -a` lines of loop devices over files in `folder`."""
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(folder) in line]


@pytest.fixture
def runs_dir(tmp_path, monkeypatch):
    """A private data/runs/ for tests that record runs."""
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("LABS_RUNS_DIR", str(root))
    return root


def small_book(folder: Path, pages: list[str], written: dict[str, str] | None = None) -> Path:
    """A book of a few pages (paths under book/, the first one its root) and the glossary
    their terms link to, with the project's configuration and static files; `written`
    adds pages from text. For tests that build a book of their own."""
    written = written or {}
    for page in [*pages, "appendix/glossary.md"]:
        (folder / "book" / page).parent.mkdir(parents=True, exist_ok=True)
        if page not in written:
            shutil.copy(PROJECT_ROOT / "book" / page, folder / "book" / page)
    for page, text in written.items():
        (folder / "book" / page).write_text(text)
    shutil.copy(PROJECT_ROOT / "_config.yml", folder)
    shutil.copytree(PROJECT_ROOT / "book" / "_static", folder / "book" / "_static")
    names = [f"book/{page.removesuffix('.md')}" for page in [*pages, "appendix/glossary.md"]]
    (folder / "_toc.yml").write_text(
        f"format: jb-book\nroot: {names[0]}\nchapters:\n"
        + "".join(f"  - file: {name}\n" for name in names[1:]))
    return folder


def toc_files() -> list[str]:
    """Every page named in _toc.yml (root, chapters, sections), without the .md suffix."""
    toc = yaml.safe_load((PROJECT_ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc["parts"]:
        for chapter in part["chapters"]:
            files.append(chapter["file"])
            files += [section["file"] for section in chapter.get("sections", [])]
    return files


@pytest.fixture
def figures(request):
    """report(message) for the closing note's figures."""
    return lambda message: report(request.config, message)


# --- the shared lab VM pair ------------------------------------------------------------------

@dataclass
class LabEnv:
    """A private state dir, work dir, inventory and runs dir, and the CLI run inside them."""

    base: Path
    env: dict[str, str]

    def cli(self, *args: str, timeout_s: float = 900, env: dict | None = None,
            on_progress=None) -> subprocess.CompletedProcess:
        argv, full_env = [sys.executable, "-m", "labs", *args], {**os.environ, **self.env,
                                                                  **(env or {})}
        if on_progress is None:
            return subprocess.run(argv, cwd=PROJECT_ROOT, env=full_env, capture_output=True,
                                  text=True, timeout=timeout_s)
        return run_reading_progress(argv, full_env, timeout_s, on_progress)


def run_reading_progress(argv: list[str], env: dict, timeout_s: float,
                         on_progress) -> subprocess.CompletedProcess:
    """subprocess.run(argv, capture_output=True), calling on_progress(line) with each line
    the command writes to standard error as it comes (a lab's progress); killed after
    timeout_s, as subprocess.run would (then subprocess.TimeoutExpired)."""
    with tempfile.TemporaryFile("w+") as out:
        # Standard output to a file: a pipe nobody reads while stderr is read would fill.
        process = subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, stdout=out,
                                   stderr=subprocess.PIPE, text=True)
        watchdog = threading.Timer(timeout_s, process.kill)
        watchdog.start()
        lines = []
        try:
            for line in process.stderr:
                lines.append(line)
                on_progress(line)
            process.wait()
        finally:
            timed_out = not watchdog.is_alive()
            watchdog.cancel()
            if process.poll() is None:
                process.kill()
                process.wait()
        if timed_out:
            raise subprocess.TimeoutExpired(argv, timeout_s, "".join(lines))
        out.seek(0)
        return subprocess.CompletedProcess(argv, process.returncode, out.read(), "".join(lines))


def qemu_processes_under(directory: Path) -> list[int]:
    """QEMU processes whose command line names anything under `directory` (ps, not state)."""
    out = subprocess.run(["ps", "-eo", "pid=,args="], capture_output=True, text=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()
            if "qemu-system" in line and str(directory) in line]


@pytest.fixture(scope="session")
def lab_vms(request, tmp_path_factory):
    """vm1 and vm2, booted once for the whole session, in their own state dir."""
    base = tmp_path_factory.mktemp("vmlab")
    env = {"LABS_STATE_DIR": str(base / "state"), "LABS_WORK_DIR": str(base / "work"),
           "LABS_INVENTORY": str(base / "hosts.toml"), "LABS_RUNS_DIR": str(base / "runs")}
    (base / "hosts.toml").write_text("")  # an empty inventory: no SSH hosts
    lab = LabEnv(base, env)
    started = time.monotonic()
    built = lab.cli("vm", "build", timeout_s=1800)
    assert built.returncode == 0, f"vm build failed: {built.stderr[-2000:]}"
    report(request.config, f"image build: {time.monotonic() - started:.1f} s "
                           f"({built.stdout.strip().splitlines()[-1]})")
    started = time.monotonic()
    booted = lab.cli("vm", "up", *VM_PAIR_ARGS, timeout_s=1200)
    assert booted.returncode == 0, f"vm up --pair failed: {booted.stderr[-2000:]}"
    for line in booted.stdout.splitlines():
        if "SSH ready" in line or "KVM probe" in line or "started" in line:
            report(request.config, line)
    report(request.config, f"vm up --pair: {time.monotonic() - started:.1f} s wall")
    with pytest.MonkeyPatch.context() as patch:
        # In-process calls (get_host("vm1")) need the VMs' state; LABS_RUNS_DIR stays out of
        # the process environment, so pages and recorded-run tests still read data/runs/.
        for key, value in env.items():
            if key != "LABS_RUNS_DIR":
                patch.setenv(key, value)
        try:
            yield lab
        finally:
            lab.cli("vm", "down")
            lab.cli("clean")
            leaked = qemu_processes_under(base)
            for pid in leaked:  # only ours: their command line names our tmp folder
                os.kill(pid, signal.SIGKILL)
            assert not leaked, f"QEMU processes left behind: {leaked}"


SUDO_USER = "labs-user"  # a login user with password-less sudo, made in a lab VM by a test


def add_sudo_user(host) -> None:
    """Give a lab VM (reached as root) the login user SUDO_USER: root's SSH key, password-less
    sudo, as a reader's cloud machine often has it."""
    # Safe: a user of the throw-away guest's own, nothing on this machine.
    host.run(f"id {SUDO_USER} >/dev/null 2>&1 || useradd --create-home {SUDO_USER}; "
             f"install -d -m 700 -o {SUDO_USER} /home/{SUDO_USER}/.ssh && "
             f"install -m 600 -o {SUDO_USER} /root/.ssh/authorized_keys /home/{SUDO_USER}/.ssh/ "
             f"&& echo '{SUDO_USER} ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/{SUDO_USER} && "
             f"chmod 440 /etc/sudoers.d/{SUDO_USER}", timeout_s=60)


def remove_sudo_user(host) -> None:
    # Safe: removes only the throw-away user add_sudo_user made in the guest, and its processes.
    host.run(f"pkill -KILL -u {SUDO_USER}; userdel --remove {SUDO_USER}; "
             f"rm -f /etc/sudoers.d/{SUDO_USER}", check=False, timeout_s=60, marked=False)


def vm_inventory_entry(name: str, vm: str, **extra: str) -> str:
    """An inventory entry naming a running lab VM as the SSH host `name`, as a reader names a
    machine of their own (address, port, key, pinned host key, the VM's work dir), with any
    `extra` string fields."""
    from labs.infra.vm import machine

    state = machine.read_state(vm)
    fields = {"address": "127.0.0.1", "port": state.ssh_port, "user": "root",
              "key": str(machine.ensure_keys().client_key),
              "known_hosts": f"{state.directory}/known_hosts",
              "work_dir": machine.GUEST_WORK_DIR, **extra}
    return f"[hosts.{name}]\n" + "".join(
        f"{key} = {value}\n" if isinstance(value, int) else f'{key} = "{value}"\n'
        for key, value in fields.items())


BACKGROUND_LIMIT_S = 2400  # a background lab ci run's longest wait


@dataclass
class BackgroundRun:
    """One lab ci run going on in the background, and the test files it may run beside."""

    process: subprocess.Popen
    runs_before: set  # the lab's recorded runs before it started
    started_s: float  # time.monotonic() at its start
    trace: Path  # where its hosts wrote each command they ran
    beside: tuple[str, ...]  # names of the test files that may run meanwhile

    def wait(self, limit_s: float = BACKGROUND_LIMIT_S) -> None:
        """Until it ends, at most `limit_s` from its start (then subprocess.TimeoutExpired)."""
        self.process.wait(timeout=max(1.0, limit_s - (time.monotonic() - self.started_s)))


class BackgroundCiRuns:
    """Lab ci runs started in the background on one VM while the tests of a few named files
    use only the other: the write-path lab (vm2) beside the commit-settings tests (vm1), the
    quorum-commit lab (vm1) beside the power-loss tests (vm2), which cut only vm2's power
    and clean only vm2. Before a test of any other file starts, the session waits for the
    run (`wait_unless_beside`): that test may use the run's VM. `start` is a no-op for a
    lab already started; `finish` waits for it (starting it first if needed) and returns
    (its run, its recorded wall time in s)."""

    started: list[BackgroundCiRuns] = []  # the session's, for pytest_runtest_setup

    def __init__(self, lab_vms):
        self.lab_vms = lab_vms
        self.runs: dict[str, BackgroundRun] = {}
        BackgroundCiRuns.started.append(self)

    def start(self, lab: str, *args: str, beside: tuple[str, ...] = ()) -> None:
        from labs.records import list_runs

        if lab in self.runs:
            return
        before = set(list_runs(lab, self.lab_vms.base / "runs"))
        # Output to files: a pipe that nobody reads while other tests run would fill up.
        trace = self.lab_vms.base / f"{lab}-commands-ran.jsonl"
        with (self.lab_vms.base / f"{lab}-ci.out").open("w") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "labs", "run", lab, *args, "--profile", "ci"],
                cwd=PROJECT_ROOT, env={**os.environ, **self.lab_vms.env,
                                       **command_trace(trace)},
                stdout=out, stderr=subprocess.STDOUT, text=True)
        self.runs[lab] = BackgroundRun(process, before, time.monotonic(), trace, beside)

    @classmethod
    def wait_unless_beside(cls, item: pytest.Item) -> None:
        """Before `item`: wait for every background run not allowed beside its file."""
        file_name = Path(item.nodeid.split("::", 1)[0]).name
        for runs in cls.started:
            for run in runs.runs.values():
                if file_name in run.beside or run.process.poll() is not None:
                    continue
                try:  # as long as `finish` would wait; a run killed here fails there
                    run.wait()
                except subprocess.TimeoutExpired:
                    run.process.kill()
                    run.process.wait()

    def finish(self, lab: str, *args: str, timeout_s: float = BACKGROUND_LIMIT_S):
        from labs.records import list_runs, load_run

        self.start(lab, *args)
        background = self.runs[lab]
        background.wait(timeout_s)
        output = (self.lab_vms.base / f"{lab}-ci.out").read_text()
        assert background.process.returncode == 0, output[-6000:]
        new = [p for p in list_runs(lab, self.lab_vms.base / "runs")
               if p not in background.runs_before]
        assert len(new) == 1
        run = load_run(new[0])
        assert_steps_as_planned(output, run)
        assert_every_command_recorded(background.trace, run, lab)
        return run, run.wall_s  # its own time, not the wait: it may have ended long before

    def stop_all(self) -> None:
        for background in self.runs.values():
            if background.process.poll() is None:
                background.process.kill()
                background.process.wait()
        BackgroundCiRuns.started.remove(self)


@pytest.fixture(scope="session")
def background_ci(lab_vms):
    runs = BackgroundCiRuns(lab_vms)
    try:
        yield runs
    finally:
        runs.stop_all()


# --- the shared container engine -----------------------------------------------------------

@pytest.fixture(scope="session")
def docker_engine(request):
    """The local engine (started when none answers) with the labs' images built (each
    build's time is a figure: on a fresh machine it is part of CI's cold start)."""
    from labs.infra import images
    from labs.infra.containers import local_engine, start_engine_if_needed
    from labs.progress import Progress

    start_engine_if_needed()
    client = local_engine(timeout_s=1800)
    seconds = {}
    for name in images.RECIPES:
        started = time.monotonic()
        # Cached by recipe hash: a no-op when the image is already built on this machine.
        images.build(name, client, Progress(f"image {name}", 3))
        seconds[name] = time.monotonic() - started
    report(request.config, "container images (the first includes the debootstrap base): "
           + ", ".join(f"{name} {s:.0f} s" for name, s in seconds.items()))
    return client


# --- ordering ----------------------------------------------------------------------------------

def pytest_configure(config):
    config.addinivalue_line("markers", "last: runs after every other test (it stops what the "
                                       "session shares, such as the lab VMs)")
    config.addinivalue_line("markers", "lab_host: drives a real lab host (a VM, containers, "
                                       "loop devices as root); `make test-fast` leaves it out")
    # Started in the background by a script (`make test &`), this process inherits SIGINT
    # ignored, and so would every lab it starts: the Ctrl-C tests would send a signal nobody
    # hears. A handler (unlike "ignored") is not inherited: the labs start with the default.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    start_shared_files(config)
    report_config[:] = [config]


report_config: list[pytest.Config] = []  # the session's config, for the report hooks


# Fixtures that bring up a lab host: a test that uses one (directly or through another
# fixture) is left out of `make test-fast`, as are modules marked `pytestmark = LAB_HOST`.
LAB_HOST_FIXTURES = {"lab_vms", "background_ci", "docker_engine"}
LAB_HOST = pytest.mark.lab_host


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        if LAB_HOST_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(LAB_HOST)
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)
    write_groups(config, items)


# --- time per area and the figures --------------------------------------------------------
# CI's time is spent in a few files (the live labs); their sum per area and per file, printed
# at the end, shows where a regression came from without reading 2,000 durations.


def pytest_runtest_setup(item):
    lower_priority_for_the_host_group(item)
    wait_while_the_machine_is_wanted(item)
    BackgroundCiRuns.wait_unless_beside(item)


def pytest_sessionfinish(session):
    host_group_done(session.config)


def pytest_runtest_logreport(report):
    TIMES.add(report)
    if report_config:
        relay_figures(report_config[0])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    # `make test` asks for groups (--dist loadgroup); any other mode is pytest-xdist's own.
    return TwoGroupScheduling(config, log) if config.getoption("dist") == "loadgroup" else None


def pytest_terminal_summary(terminalreporter):
    write_time_report(terminalreporter)


# --- the built book and a browser, for the book's tests ------------------------------------

SITE = PROJECT_ROOT / "_build" / "html"


def build_the_book() -> None:
    from labs.book.build import build_command

    started = time.monotonic()
    command = build_command()
    command[0] = str(Path(sys.executable).with_name("jupyter-book"))
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True,
                            timeout=1200)
    print(f"book build: {time.monotonic() - started:.1f} s")
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


@pytest.fixture(scope="session")
def built_site():
    # Once in the session: a worker whose browser tests come first waits for the other's
    # build, then reads the same site (test_book.py, test_book_controls.py).
    once_per_session("book build", build_the_book)
    return SITE


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site_url(built_site):
    handler = functools.partial(QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, (
        "chromium and chromium-driver are needed: scripts/system-packages.sh test installs them")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1600",
                 # The network is unreachable: no name resolves except the local server.
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    yield driver
    driver.quit()
