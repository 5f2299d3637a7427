"""Run the quorum lab: simulate, compare with the exact model, record the run."""

from __future__ import annotations

import json
import time

import numpy as np

from labs.infra.hosts import Host
from labs.infra.lab_run import LabRun
from labs.models import quorum as model
from labs.progress import Progress
from labs.quorum.params import Parameters
from labs.records import RecordedRun

STEPS = ("simulating", "the exact model", "writing the recorded run")


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    """Simulate `params.trials` worlds on this machine (the model needs no lab host)."""
    progress.plan(STEPS)
    # A model on this machine: the run's workspace stays unused.
    with LabRun(params, host, progress) as lab_run:
        progress.step("simulating", f"{params.trials:,} worlds of {params.config} over "
                                    f"{params.azs} zones")
        rec = lab_run.rec
        rec.add_tool_version("numpy", np.__version__)
        started = time.perf_counter()
        estimate = model.simulate_unavailability(
            params.nodes, params.write, params.read, params.p_node, params.azs, params.p_az,
            trials=params.trials, rng=np.random.default_rng(params.seed),
            progress=lambda done, total: progress.detail(
                f"{done:,}/{total:,} trials", transient=True))
        seconds = time.perf_counter() - started
        progress.step("the exact model")
        exact = model.unavailability(params.nodes, params.write, params.read, params.p_node,
                                     params.azs, params.p_az)
        raw = {"estimate": estimate.__dict__, "exact": exact, "seconds": seconds}
        rec.add_raw("montecarlo.json", json.dumps(raw, indent=2, default=list) + "\n")
        for op, interval in (("write", estimate.write_interval),
                             ("read", estimate.read_interval)):
            key = f"p_{op}_unavailable"
            common = {"config": params.config, "workload": params.workload,
                      "unit": "probability", "op": op}
            rec.add_result(metric="estimate", value=getattr(estimate, key), **common)
            rec.add_result(metric="ci95_low", value=interval[0], **common)
            rec.add_result(metric="ci95_high", value=interval[1], **common)
            rec.add_result(metric="exact", value=exact[key], **common)
            inside = interval[0] <= exact[key] <= interval[1]
            progress.say(f"P({op}s unavailable): estimate {getattr(estimate, key):.4e}  "
                         f"95% CI [{interval[0]:.4e}, {interval[1]:.4e}]  exact "
                         f"{exact[key]:.4e}  {'inside' if inside else 'OUTSIDE'} the interval")
        rec.add_result(config=params.config, workload=params.workload, metric="throughput",
                       value=params.trials / seconds, unit="trials/s", op="both")
        progress.step("writing the recorded run")
        progress.say(f"{params.trials / seconds:,.0f} trials/s")
    return lab_run.recorded()
