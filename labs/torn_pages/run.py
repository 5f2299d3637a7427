"""Run the torn-pages lab on a lab host: pgbench legs with full_page_writes on and off,
then a torn page four ways.

Everything the lab makes lives in a LabWorkspace on the host (labs.infra.workspace): the
loop file system the data directories sit on, the containers (docker SDK, on the host's
own engine), pgbench's output folders. bench.py runs the pgbench legs, tear.py the torn page.
"""

from __future__ import annotations

import time
import uuid

from labs.errors import UsageError
from labs.infra import images
from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder
from labs.torn_pages.bench import Benchmark, plan_legs
from labs.torn_pages.cluster import Cluster
from labs.torn_pages.params import Parameters
from labs.torn_pages.tear import CRASHES, torn_page_demo


def steps(params: Parameters) -> list[str]:
    """The run's steps, in order: the image, the file system, the server, its tables, the
    warm-up, the legs, the tear on a stopped cluster, the crashes, the teardown."""
    fast, slow = plan_legs(params)
    return (["choosing the PostgreSQL image", "a file system on a loop device",
             "starting PostgreSQL", "pgbench -i", "warm-up"]
            + ["a pgbench leg"] * (len(fast) + len(slow))
            + ["a torn page on a stopped cluster"]
            + ["a crash, a torn page, recovery"] * len(CRASHES)
            + ["removing the containers and the file system; writing the run"])


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    """The whole lab on `host`; returns the recorded run."""
    if not host.sudo("true", check=False, timeout_s=60).ok:
        raise UsageError(f"host {host.name}: the torn-pages lab needs root there (a loop "
                         f"device, a mount, files written by the container): run it with sudo")
    progress.plan(steps(params))
    started = time.monotonic()
    with LabRun(params, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        # The machine may be shared: its load before and after says how noisy the run was.
        add_load_average(host, rec, "start")
        progress.step("choosing the PostgreSQL image")
        choice = images.use_image(ws.engine(), host.is_local, "postgres", params.image, progress,
                                  rec.add_tool_version)
        progress.step("a file system on a loop device", f"ext4, in {ws.work_dir}")
        fs = ws.make_loop_filesystem("labfs", params.fs_size_mib)
        cluster = Cluster(ws, fs, choice.tag, uuid.uuid4().hex[:6])
        Benchmark(params, rec, cluster, progress).run()
        torn_page_demo(cluster, rec, progress)
        add_load_average(host, rec, "end")
        rec.add_result(config="all", workload="lab", metric="wall_time",
                       value=round(time.monotonic() - started, 1), unit="s")
        progress.step("removing the containers and the file system; writing the run")
    return lab_run.recorded()


def add_load_average(host: Host, rec: RunRecorder, when: str) -> None:
    """The lab host's 1-minute load average and CPU count, as results."""
    load_1min = float(host.run(["cat", "/proc/loadavg"], timeout_s=30).stdout.split()[0])
    cpus = int(host.run(["nproc"], timeout_s=30).stdout.strip())
    rec.add_result(config="all", workload="lab", metric=f"load_average_1min_{when}",
                   value=load_1min, unit="count")
    rec.add_result(config="all", workload="lab", metric=f"cpu_count_{when}", value=cpus,
                   unit="count")
