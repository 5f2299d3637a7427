"""Run the template lab on a lab host, through a workspace, and record the run."""

from __future__ import annotations

import time

from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.progress import Progress
from labs.records import RecordedRun
from labs.template.params import Parameters


def steps(params: Parameters) -> list[str]:
    """The run's steps, in order: one file per block count, then the record."""
    return ["dd"] * len(params.blocks) + ["writing the recorded run"]


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    progress.plan(steps(params))
    # LabRun opens the recorder and the workspace and records the command line first; the
    # workspace journals its folder first: after a crash `python -m labs clean` removes it.
    with LabRun(params, host, progress) as lab_run:
        rec, ws = lab_run.rec, lab_run.ws
        ws.prepare()
        for count in params.blocks:
            progress.step("dd", f"{count} x {params.block_kib} KiB")
            target = f"{ws.work_dir}/file-{count}"
            dd = ["dd", "if=/dev/zero", f"of={target}", f"bs={params.block_kib}K",
                  f"count={count}", "conv=fdatasync", "status=none"]
            started = time.monotonic()
            host.sudo(dd, timeout_s=120)
            seconds = time.monotonic() - started
            size = int(host.run(["stat", "--format=%s", target], timeout_s=60).stdout)
            dims = {"blocks": count, "block_kib": params.block_kib}
            rec.add_result(config=f"blocks-{count}", workload="dd", metric="file_bytes",
                           value=size, unit="bytes", **dims)
            rec.add_result(config=f"blocks-{count}", workload="dd", metric="model_bytes",
                           value=count * params.block_kib * 1024, unit="bytes", **dims)
            rec.add_result(config=f"blocks-{count}", workload="dd", metric="seconds",
                           value=seconds, unit="s", **dims)
        progress.step("writing the recorded run")
    return lab_run.recorded()
