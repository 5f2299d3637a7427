"""Kill every lab at random points, clean, and count what is left: the safety promise, measured.

    sudo .venv/bin/python benchmarks/fault_injection.py --kills 200 --seed 20261122
    sudo .venv/bin/python benchmarks/fault_injection.py --labs torn-pages --kills 10

For each lab in the registry (its quick profile, on its usual host: local, or vm1 which the
script boots in its own state dir), the script times one uncut run, then starts the lab
again and again and stops it after a random time drawn over that run's length: mostly with
SIGKILL, sometimes with SIGINT (what Ctrl-C sends) or SIGTERM, and for labs on a VM
sometimes by killing the VM's QEMU process or its SSH sessions instead. After every kill it
runs `python -m labs clean` and counts, from the systems' own view (labs/infra/leftovers.py),
what is left on this machine and in the VM, the unfinished runs in data/runs, and a lab
that ran on to the end past its signal (it exited 0). The phase a kill landed in (set-up,
measurement, teardown) comes from the lab's own step lines. The last run of each lab runs
to the end and must record a valid run.

Prints one line per kill, then totals per lab and phase. Exit code 1 if anything leaked.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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

    @property
    def leaked(self) -> int:
        return sum(self.leftovers.values()) + (0 if self.clean_ok else 1)


@dataclass
class Harness:
    base: Path
    seed: int
    log: callable = print
    ways_on_vm: tuple[str, ...] = ("ssh", "qemu")  # besides signals to the lab itself
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

    def cli(self, *args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "labs", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout_s)

    def ensure_vm(self) -> None:
        if "vm1" in self.cli("hosts").stdout.split():
            return
        self.log("booting vm1 for the labs that need a VM ...")
        booted = self.cli("vm", "up", timeout_s=1800)
        if booted.returncode != 0:
            raise SystemExit(f"vm up failed: {booted.stderr.strip()[-300:]}")

    def run_lab(self, command: list[str], stop_after_s: float | None, how: str,
                log_path: Path) -> tuple[str, str, int]:
        """Start a lab; stop it `stop_after_s` after its first line (None: let it end).
        Returns (phase, step text, exit code)."""
        steps: list[dict] = []
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
            started = time.monotonic()
            while process.poll() is None:
                if stop_after_s is not None and time.monotonic() - started >= stop_after_s:
                    break
                time.sleep(0.05)
            steps = [s for s in map(parse_step_line, log_path.read_text().splitlines()) if s]
            ended = process.poll() is not None
            if not ended:
                self.stop(process, how)
            try:
                process.wait(timeout=180)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if ended:
            return "after the end", "", process.returncode
        # The signal landed as the lab was finishing: no step began after it, the run was
        # recorded and the lab ended normally. Nothing ran on; there was nothing to stop.
        final = log_path.read_text()
        final_steps = [s for s in map(parse_step_line, final.splitlines()) if s]
        if process.returncode == 0 and len(final_steps) == len(steps) \
                and "\nrecorded run: " in final:
            return "after the end", "", process.returncode
        if not steps:
            return "set-up", "before the first step", process.returncode
        step, total = int(steps[-1]["step"]), int(steps[-1]["total"])
        phase = ("set-up" if step <= max(1, total // 4) else
                 "teardown" if step >= total else "measurement")
        return phase, f"step {step}/{total}: {steps[-1]['text']}", process.returncode

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
        for host in (["local", "vm1"] if on_vm else ["local"]):
            if host == "vm1" and "vm1" not in self.cli("hosts").stdout.split():
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
        uncut_s = window_s
        if uncut_s is None:
            started = time.monotonic()
            phase, _, code = self.run_lab(command, None, "", logs / f"{name}-uncut.log")
            uncut_s = time.monotonic() - started
            if code != 0:
                raise SystemExit(f"{name}: the uncut run failed; see "
                                 f"{logs / f'{name}-uncut.log'}")
            self.log(f"{name}: uncut quick run {uncut_s:.0f} s on {params.host}")
        ways = ["SIGKILL"] * 6 + ["SIGINT", "SIGTERM"] + (list(self.ways_on_vm) if on_vm else [])
        done, attempts = 0, 0
        while done < kills and attempts < 3 * kills:
            attempts += 1
            number = attempts
            how = self.rng.choice(ways)
            if how == "qemu" and self.rng.random() < 0.6:
                how = "SIGKILL"  # a VM reboot costs minutes: keep QEMU kills rare
            after_s = self.rng.uniform(0.5, uncut_s)
            if on_vm:
                self.ensure_vm()
            phase, step, code = self.run_lab(command, after_s, how,
                                             logs / f"{name}-{number}.log")
            if phase == "after the end":
                self.log(f"{name}: the run ended before the kill at {after_s:.1f} s: not counted")
                self.cli("clean", "--keep-vms", timeout_s=900)
                continue
            done += 1
            # --keep-vms: the VM is the harness's, not the lab's; clean what is inside it.
            cleaned = self.cli("clean", "--keep-vms", timeout_s=900)
            left = self.leftovers(on_vm)
            unfinished = list((self.base / "runs").glob("*/.staging-*"))
            if unfinished:
                left["unfinished runs"] = len(unfinished)
            if how in ("SIGINT", "SIGTERM", "SIGKILL") and code == 0:
                # The lab ignored the signal and ran to the end (it may have recorded a run).
                left["ran on after the signal"] = 1
            kill = Kill(name, how, after_s, phase, step, left, cleaned.returncode == 0)
            self.kills.append(kill)
            self.log(f"kill {len(self.kills)}: {name} {how} at {after_s:.1f} s ({phase}; "
                     f"{step or 'no step yet'}); clean {'ok' if kill.clean_ok else 'FAILED'}"
                     f"; left: {left or 'nothing'}")
        if not final_run:
            return
        if on_vm:
            self.ensure_vm()
        phase, _, code = self.run_lab(command, None, "", logs / f"{name}-after.log")
        valid, refused = records.scan_runs(name, self.base / "runs")
        self.log(f"{name}: a run after the kills {'succeeded' if code == 0 else 'FAILED'}; "
                 f"valid runs {len(valid)}, refused {len(refused)}")
        if code != 0 or refused:
            self.kills.append(Kill(name, "final run", 0, "after the end", "", {"failed": 1},
                                   False))

    def report(self) -> int:
        by_lab_phase = Counter((k.lab, k.phase) for k in self.kills if k.how != "final run")
        leaked = [k for k in self.kills if k.leaked]
        self.log("")
        for (lab, phase), count in sorted(by_lab_phase.items()):
            self.log(f"{lab:<14} {phase:<14} {count:>4} kills")
        ways = Counter(k.how for k in self.kills if k.how != "final run")
        self.log(f"total: {sum(by_lab_phase.values())} kills ({dict(ways)}); "
                 f"kills that left something: {len(leaked)}")
        return 1 if leaked else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200, help="kills in all (default 200)")
    parser.add_argument("--labs", default="", help="comma-separated labs (default: all)")
    parser.add_argument("--seed", type=int, default=20261122)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args()
    names = [n for n in args.labs.split(",") if n] or [
        lab.name for lab in registry.labs() if lab.book_page]
    base = Path(tempfile.mkdtemp(prefix="storage-labs-faults-", dir="/var/tmp"))
    harness = Harness(base, args.seed)
    harness.log(f"fault injection: labs {names}, {args.kills} kills, seed {args.seed}, "
                f"scratch {base}")
    try:
        share, extra = divmod(args.kills, len(names))
        for index, name in enumerate(names):
            harness.lab(name, share + (1 if index < extra else 0))
    finally:
        harness.cli("vm", "down")
        harness.cli("clean")
    code = harness.report()
    if not args.keep:
        subprocess.run(["rm", "-rf", "--one-file-system", str(base)], check=False)
    return code


if __name__ == "__main__":
    sys.exit(main())
