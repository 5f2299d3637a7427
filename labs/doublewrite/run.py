"""Run the doublewrite lab on a lab host: MariaDB in a container, data on a lab-built loop
file system, sysbench inserts with innodb_doublewrite ON and OFF, then a torn page.

Everything the lab makes lives in a LabWorkspace on the host (labs.infra.workspace): the loop
device and its ext4 file system, the containers (docker SDK, on the host's own engine), and
every data directory (folders on that file system). Only bench.py and tear.py touch the host,
through server.py.
"""

from __future__ import annotations

import time
import uuid

from labs.doublewrite.bench import Benchmark, planned_legs
from labs.doublewrite.params import Parameters
from labs.doublewrite.server import Servers
from labs.doublewrite.tear import TORN_MODES, torn_page_demo
from labs.errors import UsageError
from labs.infra import images
from labs.infra.facts import host_facts
from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.progress import Progress
from labs.records import RecordedRun


def load_average(host: Host) -> list[float]:
    """The lab host's 1, 5 and 15 minute load averages (the machine may be shared)."""
    fields = host.run(["cat", "/proc/loadavg"], timeout_s=60).stdout.split()
    return [float(x) for x in fields[:3]]


def steps(params: Parameters) -> list[str]:
    """The run's steps, in order: the image, the file system, the table every leg starts
    from, the legs, the torn pages (if asked), the teardown."""
    torn = ["a torn 16 KiB page"] * len(TORN_MODES) if params.torn_page else []
    return (["choosing the MariaDB image", "a file system on a loop device", "sysbench prepare"]
            + ["inserts"] * len(planned_legs(params)) + torn
            + ["removing the containers and the file system; writing the run"])


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    """The whole lab on `host`; returns the recorded run."""
    if not host.sudo("true", check=False, timeout_s=60).ok:
        raise UsageError(f"host {host.name}: the doublewrite lab needs root there (a loop "
                         f"device, a mount, files written by the container): run it with sudo")
    progress.plan(steps(params))
    started = time.monotonic()
    facts = host_facts(host)
    facts["load_average_before"] = load_average(host)
    with LabRun(params, host, progress, facts=facts) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        progress.step("choosing the MariaDB image")
        choice = images.use_image(ws.engine(), host.is_local, "mariadb", params.image, progress,
                                  rec.add_tool_version)
        progress.step("a file system on a loop device", f"ext4, in {ws.work_dir}")
        # noinit_itable: no background zeroing of inode tables, whose writes the device
        # counters would otherwise mix into the legs' bytes.
        fs = ws.make_loop_filesystem("labfs", params.fs_size_mib, options="noinit_itable")
        servers = Servers(ws, fs, choice.tag, uuid.uuid4().hex[:6])
        bench = Benchmark(params, rec, servers, progress)
        bench.run()
        if params.torn_page:
            torn_page_demo(servers, rec, progress, bench.settings, params.force_recovery)
        rec.add_result(config="all", workload="lab", metric="wall_time",
                       value=round(time.monotonic() - started, 1), unit="s")
        rec.host["load_average_after"] = load_average(host)
        progress.step("removing the containers and the file system; writing the run")
    return lab_run.recorded()
