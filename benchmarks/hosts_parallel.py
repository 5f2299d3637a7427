"""How long does a lab take on several hosts at once, against one host alone?

    .venv/bin/python benchmarks/hosts_parallel.py --hosts vm1,vm2 [--lab write-mostly] \
        [-- --quick --slow-delay-ms 1]

Runs `python -m labs run LAB --host FIRST ...` once, then `python -m labs run LAB --hosts
A,B,... ...` once, and prints both wall times and their ratio. The runs go to a temporary
runs folder (not data/runs/). On one machine the hosts share its CPUs (two lab VMs under
TCG on a 2-core machine compete for them), so the ratio says as much about the machine as
about the harness: on separate cloud VMs the hosts do not compete.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "labs", *argv], env=env,
                            capture_output=True, text=True)
    seconds = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed: {result.stderr.strip().splitlines()[-1:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", required=True, help="comma-separated lab hosts, e.g. vm1,vm2")
    parser.add_argument("--lab", default="write-mostly")
    parser.add_argument("lab_options", nargs="*", help="options for the lab (after --)")
    args = parser.parse_args()
    options = args.lab_options or ["--quick"]
    hosts = args.hosts.split(",")
    with tempfile.TemporaryDirectory(prefix="hosts-parallel-") as runs:
        env = {**os.environ, "LABS_RUNS_DIR": runs}
        load_before = os.getloadavg()[0]
        one_s = timed(["run", args.lab, "--host", hosts[0], *options], env)
        many_s = timed(["run", args.lab, "--hosts", args.hosts, *options], env)
        load_after = os.getloadavg()[0]
    print(f"{args.lab} {' '.join(options)}: one host ({hosts[0]}) {one_s:.0f} s; "
          f"{len(hosts)} hosts at once ({args.hosts}) {many_s:.0f} s; ratio "
          f"{many_s / one_s:.2f} (load average {load_before:.1f} before, {load_after:.1f} "
          f"after, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
