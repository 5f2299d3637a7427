"""What one command costs in a lab VM, with and without address-space randomization.

    sudo .venv/bin/python benchmarks/vm_command_cost.py [--host vm1] [--calls 10]

Every lab step is commands sent to the VM over SSH, and under emulation (TCG) starting a
process is most of what a short command costs: QEMU reuses code it translated only where the
code sits at the same address again. The emulated VMs therefore boot with `norandmaps`
(labs/infra/vm/machine.py). This script sets the guest's randomization to each value in
turn (kernel.randomize_va_space: 2, the kernel's default, then 0, as `norandmaps` sets it),
times the same commands under both, and puts back what the VM booted with. The commands:
an empty command through `host.sudo` (SSH, sudo, the command's wrapper), Debian's `psql`
(a Perl wrapper that picks a version) and the psql binary itself (labs.infra.vm.servers.PSQL).
Needs a running lab VM (`sudo .venv/bin/python -m labs vm up`).
"""

from __future__ import annotations

import argparse
import json
import time

from labs.infra.inventory import get_host
from labs.infra.vm.servers import PSQL

SETTING = "kernel.randomize_va_space"
COMMANDS = {"sudo true": "true", "psql --version (wrapper)": "cd / && psql --version",
            "psql --version (binary)": f"cd / && {PSQL} --version"}


def seconds_per_call(host, command: str, calls: int) -> float:
    host.sudo(command, timeout_s=120)  # the first call translates; the others are timed
    started = time.monotonic()
    for _ in range(calls):
        host.sudo(command, timeout_s=120)
    return (time.monotonic() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="vm1")
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    host = get_host(args.host)
    booted = host.sudo(f"sysctl -n {SETTING}", timeout_s=60).stdout.strip()
    figures: dict[str, dict[str, float]] = {}
    try:
        for value in ("2", "0"):
            # Safe: a kernel setting of the throw-away lab VM, put back below.
            host.sudo(f"sysctl -qw {SETTING}={value}", timeout_s=60)
            figures[f"randomize_va_space={value}"] = {
                name: round(seconds_per_call(host, command, args.calls), 3)
                for name, command in COMMANDS.items()}
            print(f"randomize_va_space={value}: " + ", ".join(
                f"{name} {s:.3f} s" for name, s in figures[f"randomize_va_space={value}"].items()))
    finally:
        host.sudo(f"sysctl -qw {SETTING}={booted}", timeout_s=60)
    print(json.dumps({"host": args.host, "calls": args.calls, "booted_with": booted,
                      "seconds_per_call": figures}))


if __name__ == "__main__":
    main()
