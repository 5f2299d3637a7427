"""A lab's set-up phase, for the fault-injection test to kill at random points.

    python tests/fault_setup.py local   # loop devices, ext4, a mount on this machine

It prints "setup complete" when everything exists and then waits to be killed. It never
cleans up by itself on SIGKILL: that is `python -m labs clean`'s job.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from labs.infra.inventory import get_host  # noqa: E402
from labs.infra.workspace import LabWorkspace  # noqa: E402


def main(host_name: str) -> None:
    host = get_host(host_name)
    ws = LabWorkspace(host, lab="faults")
    print("setup starting", flush=True)  # the fault test's kill clock starts here
    first = ws.make_loop_device("leg1", size_mib=64)
    ws.make_loop_device("leg2", size_mib=64)
    ws.make_filesystem(first)
    ws.mount(first, "data")
    print("setup complete", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1])
