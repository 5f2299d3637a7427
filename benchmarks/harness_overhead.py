"""Does the lab harness cost anything measurable? The same fio job, bare and through a host.

    sudo .venv/bin/python benchmarks/harness_overhead.py [--rounds 5] [--runtime-s 5]

Makes one loop device (through a LabWorkspace on the local host, journaled like any lab's),
then alternates the same 4 KiB random-read fio job at queue depth 16 on it: once started
directly with subprocess ("bare"), once through `host.sudo` (the command marker, `timeout`,
invoke: what every lab command goes through). Prints IOPS per round and the ratio of the
medians, harness / bare (the goal is >= 0.97: the harness adds nothing measurable).
Needs root (a loop device).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess

from labs.infra.inventory import get_host
from labs.infra.workspace import LabWorkspace
from labs.tools import fio


def job(device: str, runtime_s: int) -> list[str]:
    return fio.fio_command([fio.FioJob(name="overhead", filename=device, rw="randread",
                                       bs="4k", iodepth=16, size="256M", runtime_s=runtime_s,
                                       seed=7)], output_format="json")


def iops(output: str) -> float:
    return sum(row["iops"] for row in fio.fio_rows(fio.load_fio_json(output)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runtime-s", type=int, default=5)
    args = parser.parse_args()
    host = get_host("local")
    with LabWorkspace(host, lab="harness-benchmark") as ws:
        device = ws.make_loop_device("bench", size_mib=256)
        # Safe: the guard allows only the loop device this workspace just made.
        ws.run_guarded(["dd", "if=/dev/zero", f"of={device}", "bs=1M", "count=256",
                        "oflag=direct", "status=none"], [device])
        argv = job(device, args.runtime_s)
        bare, harness = [], []
        for round_number in range(1, args.rounds + 1):
            bare.append(iops(subprocess.run(argv, capture_output=True, text=True,
                                            check=True).stdout))
            harness.append(iops(host.sudo(argv, timeout_s=args.runtime_s + 120).stdout))
            print(f"round {round_number}: bare {bare[-1]:,.0f} IOPS, through the host "
                  f"{harness[-1]:,.0f} IOPS")
    ratio = statistics.median(harness) / statistics.median(bare)
    print(json.dumps({"bare_median_iops": round(statistics.median(bare)),
                      "harness_median_iops": round(statistics.median(harness)),
                      "ratio": round(ratio, 3), "goal": ">= 0.97"}))


if __name__ == "__main__":
    main()
