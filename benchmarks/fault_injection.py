"""Kill every lab at random points, clean, and count what is left: the safety promise, measured.

    sudo .venv/bin/python benchmarks/fault_injection.py --kills 200 --hours 1.5
    sudo .venv/bin/python benchmarks/fault_injection.py --labs torn-pages --kills 10
    sudo .venv/bin/python benchmarks/fault_injection.py --kills 20 --teardown
    .venv/bin/python benchmarks/fault_injection.py --report

The full run takes many hours (each kill costs about half of its lab's quick run), so it is
made in parts: every kill is appended to a log (default data/faults/kills.jsonl, one JSON
object a line, with the session, commit and seed), `--kills N` is the goal over the whole log
(each lab's share, less the kills the log already holds for it), `--hours` stops starting new
kills after that long, and `--report` prints the log's totals.

For each lab in the registry (its quick profile, on its usual host: local, or the lab VM
pair which the script boots in its own state dir, as CI does), the script times one uncut
run, then starts the lab again and again and stops it after a random time drawn over that
run's length: mostly with SIGKILL, sometimes with SIGINT (what Ctrl-C sends) or SIGTERM,
and for labs on a VM sometimes by killing the VM's QEMU process or its SSH sessions
instead. After every kill it runs `python -m labs clean` and counts, from the systems' own
view (labs/infra/leftovers.py), what is left on this machine and in the VMs, the unfinished
runs in data/runs, and a lab that ran on to the end past its signal (it exited 0). A run
that fails by itself before its kill counts as a failure too: a run after a `clean` must
work. The phase a kill landed in (set-up, measurement, teardown) comes from the lab's own
step lines: its last step (taking the lab's parts down and writing its run) is the
teardown. That step is short, so a kill drawn over the whole run seldom lands in it;
`--teardown` draws every kill within it instead (the uncut run gives the number and length of
the last step it printed; each kill comes at a random delay after that step's line, up to
that length), and `--kills` then counts the log's teardown kills alone. The last run of
each lab runs to the end and must record a valid run. Give each part of the full run its
own --seed, so that its kills land at new points.

Prints one line per kill, then totals per lab and phase. Exit code 1 if anything leaked.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KILL_LOG = ROOT / "data" / "faults" / "kills.jsonl"
VM_PAIR_ARGS = ("--pair", "--memory", "1536", "--cpus", "2", "--slow-iops", "200")  # as in CI
KINDS = ("SIGKILL", "SIGINT", "SIGTERM", "ssh", "qemu")  # the ways a lab is stopped
sys.path.insert(0, str(ROOT))

from labs import records, registry  # noqa: E402
from labs.progress import parse_step_line  # noqa: E402


@dataclass
class Kill:
    lab: str
    how: str
    after_s: float
    phase: str
    step: str
    leftovers: dict[str, int]
    clean_ok: bool
    # Where the log has them: the part (its start time) and the commit that made the kill.
    session: str = field(default="", compare=False)
    commit: str = field(default="", compare=False)

    @property
    def leaked(self) -> int:
        """What a kill (or a run) left on the machine, and a clean that failed."""
        return (sum(n for what, n in self.leftovers.items() if what != "failed")
                + (0 if self.clean_ok else 1))

    @property
    def failed_run(self) -> bool:
        """A run of the lab that failed by itself after a clean (no kill)."""
        return self.how in NOT_KILLS and "failed" in self.leftovers

    @classmethod
    def from_json(cls, line: str) -> Kill:
        row = json.loads(line)
        return cls(**{name: row[name] for name in cls.__dataclass_fields__ if name in row})


@dataclass
class Harness:
    base: Path
    seed: int
    log: callable = print
    ways_on_vm: tuple[str, ...] = ("ssh", "qemu")  # besides signals to the lab itself
    only_ways: tuple[str, ...] = ()  # --how: these kinds of kill alone (to check a fix)
    kill_log: Path | None = None  # every kill appended here (None: kept in memory only)
    deadline: float | None = None  # time.monotonic() after which no new kill starts
    teardown: bool = False  # --teardown: every kill lands in the lab's last step
    kills: list[Kill] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.env = {**os.environ, "LABS_STATE_DIR": str(self.base / "state"),
                    "LABS_WORK_DIR": str(self.base / "work"),
                    "LABS_RUNS_DIR": str(self.base / "runs"),
                    "LABS_INVENTORY": str(self.base / "hosts.toml"),
                    "PYTHONUNBUFFERED": "1"}
        (self.base / "runs").mkdir(parents=True, exist_ok=True)
        if not (self.base / "hosts.toml").exists():
            (self.base / "hosts.toml").write_text("")
        self.rng = random.Random(self.seed)
        self.session = {
            "session": datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ"),
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                     capture_output=True, text=True).stdout.strip(),
            "seed": self.seed}

    def add(self, kill: Kill) -> None:
        self.kills.append(kill)
        if self.kill_log is not None:
            self.kill_log.parent.mkdir(parents=True, exist_ok=True)
            with open(self.kill_log, "a") as log:
                own = {k: v for k, v in asdict(kill).items() if k not in self.session}
                log.write(json.dumps({**self.session, **own}) + "\n")

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def cli(self, *args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "labs", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout_s)

    def ensure_vm(self) -> None:
        """The lab VM pair, as CI boots it: every VM lab runs on vm1, the DRBD lab on both."""
        if {"vm1", "vm2"} <= set(self.cli("hosts").stdout.split()):
            return
        self.cli("vm", "down", timeout_s=600)  # a lone vm1 (after a QEMU kill) goes too
        self.log("booting the lab VM pair for the labs that need a VM ...")
        booted = self.cli("vm", "up", *VM_PAIR_ARGS, timeout_s=1800)
        if booted.returncode != 0:
            raise SystemExit(f"vm up failed: {booted.stderr.strip()[-300:]}")

    def run_lab(self, command: list[str], stop_after_s: float | None, how: str,
                log_path: Path, *, from_step: int | None = None) -> LabRun:
        """Start a lab; stop it `stop_after_s` after it started, or after the line of its
        step number `from_step` appeared; None: let it end."""
        steps: list[dict] = []
        newest_step_at = None  # when the newest step line appeared (time.monotonic())
        with open(log_path, "w") as log:
            # The clock starts before the lab does: read after Popen returns, a busy machine
            # could let the lab run for a few milliseconds before it started.
            started = time.monotonic()
            process = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
            clock = None if from_step else started
            while process.poll() is None:
                now = time.monotonic()
                seen = self.steps_in(log_path)
                if len(seen) > len(steps):
                    steps, newest_step_at = seen, now
                    # The step number, not its "of n": a lab's own total can be off by one.
                    if clock is None and int(steps[-1]["step"]) >= from_step:
                        clock = now
                if stop_after_s is not None and clock is not None \
                        and now - clock >= stop_after_s:
                    break
                time.sleep(0.05)
            stopped_at_s = time.monotonic() - started
            steps = self.steps_in(log_path)
            ended = process.poll() is not None
            if not ended:
                self.stop(process, how)
            try:
                process.wait(timeout=180)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        last_step_s = None if newest_step_at is None else time.monotonic() - newest_step_at
        if ended:
            return LabRun("after the end", "", process.returncode, stopped_at_s, last_step_s,
                          int(steps[-1]["step"]) if steps else None)
        # The signal landed as the lab was finishing: no step began after it, the run was
        # recorded and the lab ended normally. Nothing ran on; there was nothing to stop.
        final = log_path.read_text()
        final_steps = [s for s in map(parse_step_line, final.splitlines()) if s]
        if process.returncode == 0 and len(final_steps) == len(steps) \
                and "\nrecorded run: " in final:
            return LabRun("after the end", "", process.returncode, stopped_at_s, None)
        if not steps:
            return LabRun("set-up", "before the first step", process.returncode, stopped_at_s,
                          None)
        step, total = int(steps[-1]["step"]), int(steps[-1]["total"])
        phase = ("set-up" if step <= max(1, total // 4) else
                 "teardown" if step >= total else "measurement")
        return LabRun(phase, f"step {step}/{total}: {steps[-1]['text']}", process.returncode,
                      stopped_at_s, None)

    @staticmethod
    def steps_in(log_path: Path) -> list[dict]:
        return [s for s in map(parse_step_line, log_path.read_text().splitlines()) if s]

    def stop(self, process: subprocess.Popen, how: str) -> None:
        if how == "SIGINT":
            os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends: the whole group
        elif how == "SIGTERM":
            process.send_signal(signal.SIGTERM)
        elif how == "qemu":
            # The VM dies under the lab, as a power cut would take it.
            state = json.loads((self.base / "state" / "vms" / "vm1" / "state.json").read_text())
            os.kill(state["pid"], signal.SIGKILL)
        elif how == "ssh":
            # The lab's SSH connections die (a network blip, a restarted sshd).
            self.cli("vm", "run", "vm1", "--", "pkill -KILL -f 'sshd: root@'", timeout_s=60)
        else:
            process.send_signal(signal.SIGKILL)

    def leftovers(self, on_vm: bool) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for host in (["local", "vm1", "vm2"] if on_vm else ["local"]):
            if host != "local" and host not in self.cli("hosts").stdout.split():
                continue  # the VM is gone, and everything in it with it
            out = self.cli("leftovers", "--host", host, timeout_s=300).stdout.splitlines()
            for word in (out[0].split() if out else []):
                name, _, value = word.partition("=")
                counts[f"{host}:{name}"] += int(value)
        return {k: v for k, v in counts.items() if v}

    def lab(self, name: str, kills: int, window_s: float | None = None,
            final_run: bool = True) -> None:
        """`kills` runs of the lab stopped at random points: within one uncut run's length,
        or within `window_s` when given (then no uncut run is timed first); then one run to
        the end (unless final_run is False, where another test already ran it whole)."""
        lab = registry.lab(name)
        params = lab.parameters.for_profile("quick" if "quick" in lab.parameters.PROFILES
                                            else None)
        on_vm = params.host.startswith("vm")
        if on_vm:
            self.ensure_vm()
        command = [sys.executable, "-m", "labs", *params.command_line().split()[3:]]
        logs = self.base / "logs"
        logs.mkdir(exist_ok=True)
        timing = self._time_uncut(name, command, params.host, logs, window_s)
        ways = self._ways(name, on_vm)
        done, attempts = 0, 0
        while done < kills and attempts < 3 * kills and not self.out_of_time():
            attempts += 1
            done += self._kill_once(name, command, on_vm, ways, timing,
                                    logs / f"{name}-{attempts}.log")
        if final_run:
            self._final_run(name, command, on_vm, logs)

    def _time_uncut(self, name: str, command: list[str], host: str, logs: Path,
                    window_s: float | None) -> UncutTiming:
        """How long a whole run takes (and its last step), from one uncut run, unless the
        caller gave the window to kill in."""
        if window_s is not None:
            timing = UncutTiming(window_s, None, None)
        else:
            uncut = self.run_lab(command, None, "", logs / f"{name}-uncut.log")
            timing = UncutTiming(uncut.stopped_at_s, uncut.last_step_s, uncut.last_step)
            if uncut.code != 0:
                raise SystemExit(f"{name}: the uncut run failed; see "
                                 f"{logs / f'{name}-uncut.log'}")
            self.log(f"{name}: uncut quick run {timing.run_s:.0f} s on {host}"
                     + (f", its last step ({timing.last_step}) {timing.last_step_s:.1f} s"
                        if timing.last_step_s else ""))
        if self.teardown and not timing.last_step_s:
            raise SystemExit(f"{name}: --teardown needs the lab's last step timed in an "
                             "uncut run, and none was")
        return timing

    def _ways(self, name: str, on_vm: bool) -> list[str]:
        """The ways a run may be stopped: mostly SIGKILL, as a crash or an OOM kill would."""
        ways = ["SIGKILL"] * 6 + ["SIGINT", "SIGTERM"] + (list(self.ways_on_vm) if on_vm else [])
        if self.only_ways:
            ways = [w for w in self.only_ways if on_vm or w not in self.ways_on_vm]
            if not ways:
                raise SystemExit(f"{name}: none of --how {','.join(self.only_ways)} applies "
                                 "to a lab that runs on this machine")
        return ways

    def _kill_once(self, name: str, command: list[str], on_vm: bool, ways: list[str],
                   timing: UncutTiming, log_path: Path) -> int:
        """One run stopped at a random point, then `clean` and a count of what is left;
        1 when the kill landed, 0 when the run ended before it."""
        how = self.rng.choice(ways)
        if how == "qemu" and not self.only_ways and self.rng.random() < 0.6:
            how = "SIGKILL"  # a VM reboot costs minutes: keep QEMU kills rare
        after_s = (self.rng.uniform(0, timing.last_step_s) if self.teardown else
                   self.rng.uniform(0.5, timing.run_s))
        if on_vm:
            self.ensure_vm()
        run = self.run_lab(command, after_s, how, log_path,
                           from_step=timing.last_step if self.teardown else None)
        if run.phase == "after the end":
            self._ended_before_the_kill(name, run, log_path)
            return 0
        # --keep-vms: the VM is the harness's, not the lab's; clean what is inside it.
        cleaned = self.cli("clean", "--keep-vms", timeout_s=900)
        left = self.leftovers(on_vm)
        unfinished = list((self.base / "runs").glob("*/.staging-*"))
        if unfinished:
            left["unfinished runs"] = len(unfinished)
        if how in ("SIGINT", "SIGTERM", "SIGKILL") and run.code == 0:
            # The lab ignored the signal and ran to the end (it may have recorded a run).
            left["ran on after the signal"] = 1
        kill = Kill(name, how, run.stopped_at_s, run.phase, run.step, left,
                    cleaned.returncode == 0)
        self.add(kill)
        kills_so_far = sum(1 for k in self.kills if k.how not in NOT_KILLS)
        self.log(f"kill {kills_so_far}: {name} {how} at {run.stopped_at_s:.1f} s "
                 f"({run.phase}; {run.step or 'no step yet'}); clean "
                 f"{'ok' if kill.clean_ok else 'FAILED'}; left: {left or 'nothing'}")
        return 1

    def _ended_before_the_kill(self, name: str, run: LabRun, log_path: Path) -> None:
        cleaned = self.cli("clean", "--keep-vms", timeout_s=900)
        if run.code == 0:
            self.log(f"{name}: the run ended at {run.stopped_at_s:.1f} s, before its kill: "
                     "not counted")
            return
        # A run after a clean failed by itself: something the last kill left behind (or the
        # lab) is broken. That is a failure, whatever the leftovers say.
        self.add(Kill(name, "run failed", run.stopped_at_s, "after the end",
                      f"exit {run.code} before the kill", {"failed": 1},
                      cleaned.returncode == 0))
        self.log(f"{name}: the run FAILED (exit {run.code}) at {run.stopped_at_s:.1f} s, "
                 f"before its kill; see {log_path}")

    def _final_run(self, name: str, command: list[str], on_vm: bool, logs: Path) -> None:
        if on_vm:
            self.ensure_vm()
        code = self.run_lab(command, None, "", logs / f"{name}-after.log").code
        valid, refused = records.scan_runs(name, self.base / "runs")
        self.log(f"{name}: a run after the kills {'succeeded' if code == 0 else 'FAILED'}; "
                 f"valid runs {len(valid)}, refused {len(refused)}")
        self.add(Kill(name, "final run", 0, "after the end", "",
                      {"failed": 1} if code != 0 or refused else {}, True))

    def report(self) -> int:
        return report(self.kills, self.log)


NOT_KILLS = ("final run", "run failed")


@dataclass
class UncutTiming:
    """What one uncut run showed, or the window the caller gave instead."""
    run_s: float  # kills land within this many seconds of the start
    last_step_s: float | None  # how long the last step took (a teardown kill lands in it)
    last_step: str | None


@dataclass
class LabRun:
    """One run of a lab, as the harness saw it."""
    phase: str  # where a kill landed: set-up, measurement, teardown, or "after the end"
    step: str  # the last step line before the kill ("step 3/9: ...")
    code: int  # the lab's exit code
    stopped_at_s: float  # from its start to its kill (or to its end, when it ended first)
    last_step_s: float | None  # from its last step line to its end, when it ran to its end
    last_step: int | None = None  # that step's number


def report(kills: list[Kill], log: callable = print) -> int:
    """Totals per lab and phase, what was left, and the runs that failed after a clean;
    1 when anything leaked or a run failed."""
    by_lab_phase = Counter((k.lab, k.phase) for k in kills if k.how not in NOT_KILLS)
    leaked = [k for k in kills if k.leaked]
    failed = [k for k in kills if k.failed_run]
    finals = Counter((k.lab, k.failed_run) for k in kills if k.how == "final run")
    log("")
    for (lab, phase), count in sorted(by_lab_phase.items()):
        log(f"{lab:<14} {phase:<14} {count:>4} kills")
    for lab in sorted({lab for lab, _ in finals}):
        log(f"{lab:<14} runs to the end after its kills: {finals[lab, False]} succeeded, "
            f"{finals[lab, True]} failed")
    ways = Counter(k.how for k in kills if k.how not in NOT_KILLS)
    log(f"total: {sum(by_lab_phase.values())} kills ({dict(ways)}); "
        f"kills or runs that left something: {len(leaked)}; runs that failed: {len(failed)}")
    return 1 if leaked or failed else 0


def read_log(path: Path) -> list[Kill]:
    if not path.exists():
        return []
    return [Kill.from_json(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200,
                        help="kills in all, counting those already in the log (default 200)")
    parser.add_argument("--labs", default="", help="comma-separated labs (default: all)")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--hours", type=float, default=None,
                        help="start no new kill after this long (the lab under way still "
                             "makes its run to the end)")
    parser.add_argument("--log", type=Path, default=KILL_LOG,
                        help=f"the kill log to append to (default {KILL_LOG.relative_to(ROOT)})")
    parser.add_argument("--report", action="store_true",
                        help="print the log's totals and stop")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--teardown", action="store_true",
                        help="kill every run within the lab's last step (its teardown); "
                             "--kills then counts the log's teardown kills alone")
    parser.add_argument("--how", default="",
                        help="comma-separated kinds of kill to make, among "
                             f"{', '.join(KINDS)} (default: all, mostly SIGKILL); "
                             "to check the fix of what a kind of kill left behind")
    args = parser.parse_args()
    only_ways = tuple(w for w in args.how.split(",") if w)
    unknown = [w for w in only_ways if w not in KINDS]
    if unknown:
        parser.error(f"--how {','.join(unknown)}: use some of {', '.join(KINDS)}")
    logged = read_log(args.log)
    if args.report:
        return report(logged)
    names = [n for n in args.labs.split(",") if n] or [
        lab.name for lab in registry.labs() if lab.book_page]
    base = Path(tempfile.mkdtemp(prefix="storage-labs-faults-", dir="/var/tmp"))
    deadline = None if args.hours is None else time.monotonic() + 3600 * args.hours
    harness = Harness(base, args.seed, kill_log=args.log, deadline=deadline,
                      only_ways=only_ways, teardown=args.teardown)
    harness.log(f"fault injection: labs {names}, {args.kills} kills in all, seed {args.seed}, "
                f"log {args.log}, scratch {base}")
    try:
        share, extra = divmod(args.kills, len(names))
        for index, name in enumerate(names):
            already = sum(1 for k in logged if k.lab == name and k.how not in NOT_KILLS
                          and (k.phase == "teardown" or not args.teardown))
            wanted = share + (1 if index < extra else 0) - already
            if wanted <= 0:
                harness.log(f"{name}: {already} kills in the log already")
            elif harness.out_of_time():
                harness.log(f"{name}: not reached (--hours {args.hours:g})")
            else:
                harness.lab(name, wanted)
    finally:
        harness.cli("vm", "down")
        harness.cli("clean")
    code = harness.report()
    harness.log(f"the whole log ({args.log}):")
    report(read_log(args.log), harness.log)
    if not args.keep:
        subprocess.run(["rm", "-rf", "--one-file-system", str(base)], check=False)
    return code


if __name__ == "__main__":
    sys.exit(main())
