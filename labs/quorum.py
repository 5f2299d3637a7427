"""The Quorums lab: the `quorum` command, the recorded Monte Carlo run, and chart data.

    python -m labs quorum --nodes 6 --write 4 --read 3 --azs 3 --p-node 0.01 --json
    python -m labs quorum --table --max-nodes 7
    python -m labs run quorum-montecarlo --nodes 6 --write 4 --read 3 --azs 3 \
        --p-node 0.05 --p-az 0.01 --trials 2000000 --seed 2017
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
import pandas as pd

from labs.errors import UsageError
from labs.models import quorum as model

LAB_NAME = "quorum-montecarlo"
RUN_HELP = "Monte Carlo of quorum availability, checked against the exact model"

# Aurora's layout (Verbitski et al., SIGMOD 2017, section 2.1).
AURORA = {"nodes": 6, "write": 4, "read": 3, "azs": 3}


# ----------------------------------------------------------------------------------------
# `python -m labs quorum`
# ----------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, help="copies of the data (N)")
    parser.add_argument("--write", type=int,
                        help="write quorum W (default: the smallest valid one for N)")
    parser.add_argument("--read", type=int,
                        help="read quorum R (default: the smallest valid one for N and W)")
    parser.add_argument("--azs", type=int, help="availability zones Z (nodes round-robin)")
    parser.add_argument("--p-node", type=float, help="chance a node is down (0..1)")
    parser.add_argument("--p-az", type=float,
                        help="chance an AZ is out, with all its nodes (0..1; needs --azs)")
    parser.add_argument("--table", action="store_true",
                        help="print the smallest valid (N, R, W) for N = 1..--max-nodes")
    parser.add_argument("--max-nodes", type=int, default=7, help="rows of --table (default 7)")
    parser.add_argument("--json", action="store_true", help="print one JSON value")


def quorum_report(nodes: int, write: int | None, read: int | None, azs: int | None = None,
                  p_node: float | None = None, p_az: float | None = None) -> dict:
    """Everything the `quorum` command prints, as a dict (the JSON output)."""
    if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes >= 1:
        default_read, default_write = model.smallest_valid_quorum(nodes)
        write = default_write if write is None else write
        if read is None:
            read = max(nodes - write + 1, 1) if isinstance(write, int) else default_read
    report = model.describe(nodes, write, read, azs).as_dict()
    if p_az is not None and p_node is None:
        raise UsageError("--p-az needs --p-node as well (the chance a single node is down)")
    if p_node is not None:
        model.check_probability("p-node", p_node)
        if p_az is not None:
            model.check_probability("p-az", p_az)
            if azs is None:
                raise UsageError("--p-az needs --azs (how many AZs the nodes are spread over)")
        report["p_node"] = p_node
        report["p_az"] = p_az or 0.0
        report.update(model.unavailability(nodes, write, read, p_node, azs or 1, p_az or 0.0))
    return report


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def format_report(report: dict) -> str:
    lines = [
        f"N = {report['nodes']} copies, W = {report['write']}, R = {report['read']}: "
        + ("valid" if report["valid"] else "NOT valid"),
        f"  R + W > N  (every read meets the latest write): "
        f"{_yes(report['rules']['read_write_overlap'])}",
        f"  W > N/2    (no two conflicting writes):        "
        f"{_yes(report['rules']['write_majority'])}",
        f"  writes survive {report['write_tolerates']} failed node(s), "
        f"reads survive {report['read_tolerates']}",
    ]
    if "azs" in report:
        lines.append(f"  {report['azs']} AZs holding {report['nodes_per_az']} nodes")
        for key, label in (("lose_az", "lose one AZ"), ("lose_az_plus_one", "lose an AZ + 1")):
            lines.append(f"  {label:<15} writes: {_yes(report[key]['write']):<3}  "
                         f"reads: {_yes(report[key]['read'])}")
    if "p_write_unavailable" in report:
        lines.append(f"  with p(node down) = {report['p_node']:g}, p(AZ out) = {report['p_az']:g}:")
        lines.append(f"    P(writes unavailable) = {report['p_write_unavailable']:.3e}")
        lines.append(f"    P(reads unavailable)  = {report['p_read_unavailable']:.3e}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    if args.table:
        if args.nodes is not None or args.write is not None or args.read is not None:
            raise UsageError("--table prints every N: drop --nodes, --write and --read")
        if args.max_nodes < 1:
            raise UsageError(f"--max-nodes must be at least 1, got {args.max_nodes}")
        if args.max_nodes > 99:
            raise UsageError(f"--max-nodes must be at most 99, got {args.max_nodes}")
        rows = model.quorum_table(args.max_nodes)
        if args.json:
            print(json.dumps(rows))
        else:
            print(f"{'N':>3} {'R':>3} {'W':>3}")
            for row in rows:
                print(f"{row['nodes']:>3} {row['read']:>3} {row['write']:>3}")
        return 0
    if args.nodes is None:
        raise UsageError("--nodes is required (or use --table)")
    report = quorum_report(args.nodes, args.write, args.read, args.azs, args.p_node, args.p_az)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


# ----------------------------------------------------------------------------------------
# `python -m labs run quorum-montecarlo`: a recorded run
# ----------------------------------------------------------------------------------------


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=AURORA["nodes"])
    parser.add_argument("--write", type=int, default=AURORA["write"])
    parser.add_argument("--read", type=int, default=AURORA["read"])
    parser.add_argument("--azs", type=int, default=AURORA["azs"])
    parser.add_argument("--p-node", type=float, default=0.05,
                        help="chance a node is down (default 0.05)")
    parser.add_argument("--p-az", type=float, default=0.01,
                        help="chance an AZ is out (default 0.01)")
    parser.add_argument("--trials", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=2017)
    parser.add_argument("--quick", action="store_true", help="200,000 trials")


def run_parameters(args: argparse.Namespace) -> dict:
    trials = 200_000 if args.quick else args.trials
    if trials < 1:
        raise UsageError(f"--trials must be at least 1, got {trials}")
    model.check_counts(args.nodes, args.write, args.read, args.azs)
    model.check_probability("p-node", args.p_node)
    model.check_probability("p-az", args.p_az)
    return {"nodes": args.nodes, "write": args.write, "read": args.read, "azs": args.azs,
            "p_node": args.p_node, "p_az": args.p_az, "trials": trials, "seed": args.seed}


def command_line(parameters: dict) -> str:
    return ("python -m labs run quorum-montecarlo "
            f"--nodes {parameters['nodes']} --write {parameters['write']} "
            f"--read {parameters['read']} --azs {parameters['azs']} "
            f"--p-node {parameters['p_node']:g} --p-az {parameters['p_az']:g} "
            f"--trials {parameters['trials']} --seed {parameters['seed']}")


def run_montecarlo(parameters: dict, progress=None, runs_root=None):
    """Run the Monte Carlo, record it, and return the RecordedRun."""
    from labs import records  # here: keeps `import labs.quorum` light for the book

    config = f"n{parameters['nodes']}-w{parameters['write']}-r{parameters['read']}"
    workload = f"z{parameters['azs']}-pnode{parameters['p_node']:g}-paz{parameters['p_az']:g}"
    recorder = records.RunRecorder(
        LAB_NAME, {**parameters, "command_line": command_line(parameters)},
        seed=parameters["seed"], root=runs_root)
    with recorder as run:
        run.add_command(command_line(parameters))
        run.add_tool_version("numpy", np.__version__)
        started = time.perf_counter()
        estimate = model.simulate_unavailability(
            parameters["nodes"], parameters["write"], parameters["read"], parameters["p_node"],
            parameters["azs"], parameters["p_az"], trials=parameters["trials"],
            rng=np.random.default_rng(parameters["seed"]), progress=progress)
        seconds = time.perf_counter() - started
        exact = model.unavailability(parameters["nodes"], parameters["write"],
                                     parameters["read"], parameters["p_node"],
                                     parameters["azs"], parameters["p_az"])
        raw = {"estimate": estimate.__dict__, "exact": exact, "seconds": seconds}
        run.add_raw("montecarlo.json", json.dumps(raw, indent=2, default=list) + "\n")
        for op, interval in (("write", estimate.write_interval),
                             ("read", estimate.read_interval)):
            key = f"p_{op}_unavailable"
            common = {"config": config, "workload": workload, "unit": "probability", "op": op}
            run.add_result(metric="estimate", value=getattr(estimate, key), **common)
            run.add_result(metric="ci95_low", value=interval[0], **common)
            run.add_result(metric="ci95_high", value=interval[1], **common)
            run.add_result(metric="exact", value=exact[key], **common)
        run.add_result(config=config, workload=workload, metric="throughput",
                       value=parameters["trials"] / seconds, unit="trials/s", op="both")
    return records.load_run(recorder.final_path)


def run_from_args(args: argparse.Namespace) -> int:
    parameters = run_parameters(args)
    print(command_line(parameters), flush=True)  # every run says how to reproduce it

    def progress(done: int, total: int) -> None:
        print(f"\rmonte carlo: {done:,}/{total:,} trials ({100 * done / total:.0f} %)",
              end="", file=sys.stderr, flush=True)

    run = run_montecarlo(parameters, progress)
    print(file=sys.stderr)
    table = run.results.pivot_table(index="op", columns="metric", values="value")
    for op in ("write", "read"):
        row = table.loc[op]
        inside = row["ci95_low"] <= row["exact"] <= row["ci95_high"]
        print(f"P({op}s unavailable): estimate {row['estimate']:.4e}  "
              f"95% CI [{row['ci95_low']:.4e}, {row['ci95_high']:.4e}]  "
              f"exact {row['exact']:.4e}  {'inside' if inside else 'OUTSIDE'} the interval")
    throughput = run.results.query("metric == 'throughput'")["value"].iloc[0]
    print(f"{throughput:,.0f} trials/s; recorded in {run.path}")
    return 0


# ----------------------------------------------------------------------------------------
# Chart data: small tidy tables the chapter's charts embed
# ----------------------------------------------------------------------------------------

P_NODE_GRID = np.logspace(-4, math.log10(0.5), 19)
P_AZ_CHOICES = (0.0, 0.001, 0.01)


def tolerance_grid(max_nodes: int = 9) -> pd.DataFrame:
    """Every (N, W, R) up to max_nodes: validity, broken rule, tolerated failures."""
    rows = []
    for nodes in range(1, max_nodes + 1):
        for write in range(1, nodes + 1):
            for read in range(1, nodes + 1):
                overlap = model.read_write_overlap(nodes, write, read)
                majority = model.write_majority(nodes, write)
                verdict = ("valid" if overlap and majority else
                           "reads can miss the latest write" if not overlap else
                           "two writes can both win")
                rows.append({"n": nodes, "w": write, "r": read, "verdict": verdict,
                             "write_tolerates": nodes - write, "read_tolerates": nodes - read})
    return pd.DataFrame(rows)


def availability_curves(max_nodes: int = 7, max_azs: int = 3) -> pd.DataFrame:
    """P(fewer than k nodes up) for every N, k, Z <= max_azs, p(AZ) choice and p(node).

    The chart picks k = W for writes and k = R for reads, so one table serves every (W, R).
    """
    rows = []
    for nodes in range(1, max_nodes + 1):
        for azs in range(1, min(max_azs, nodes) + 1):
            for p_az in P_AZ_CHOICES:
                for needed in range(1, nodes + 1):
                    for p_node in P_NODE_GRID:
                        unavailable = model.p_fewer_than_up(nodes, needed, p_node, azs, p_az)
                        rows.append({
                            "n": nodes, "z": azs, "q": p_az, "k": needed,
                            "p": float(f"{p_node:.4g}"),
                            "unavailable": float(f"{unavailable:.4g}"),
                        })
    return pd.DataFrame(rows)


DEFAULT_AZ_RTTS_MS = (0.5, 0.8, 4.0)


def kth_ack_distribution(nodes: int = 6, az_rtts_ms=DEFAULT_AZ_RTTS_MS,
                         max_ms: float = 8.0, points: int = 161) -> pd.DataFrame:
    """Density of the k-th fastest acknowledgement for k = 1..N (exact, from the CDF)."""
    replicas = model.replicas_over_azs(nodes, list(az_rtts_ms))
    grid_ms = np.linspace(0.0, max_ms, points)
    step_ms = grid_ms[1] - grid_ms[0]
    frames = []
    for k in range(1, nodes + 1):
        cdf = model.kth_ack_cdf(replicas, k, grid_ms)
        density = np.gradient(cdf, step_ms)
        frames.append(pd.DataFrame({
            "k": k, "latency_ms": grid_ms.round(3), "density": density.round(4),
            "p50_ms": round(model.kth_ack_quantile(replicas, k, 0.5), 3),
            "p99_ms": round(model.kth_ack_quantile(replicas, k, 0.99), 3),
        }))
    return pd.concat(frames, ignore_index=True)


HOURS_PER_YEAR = 24 * 365
MTTR_GRID_HOURS = np.logspace(math.log10(10 / 3600), math.log10(24 * 14), 17)
MTBF_CHOICES_DAYS = (30, 365, 1825)
DURABILITY_LAYOUTS = (("3 copies, W = 2", 3, 2), ("6 copies, W = 4 (Aurora)", 6, 4))


def durability_curves() -> pd.DataFrame:
    """Chance per year of losing write quorum / possibly losing data, vs repair time.

    The chance comes from the exact mean time to the event, as 1 - exp(-1 year / mean):
    for events this rare the waiting time is very nearly exponential, and unlike the
    transient solution it does not underflow to zero for second-long repairs.
    """
    rows = []
    for layout, nodes, write in DURABILITY_LAYOUTS:
        for mtbf_days in MTBF_CHOICES_DAYS:
            for mttr_hours in MTTR_GRID_HOURS:
                risk = model.durability_risk(nodes, write, 1 / (24 * mtbf_days), mttr_hours,
                                             HOURS_PER_YEAR)
                for event in ("write_quorum_lost", "data_possibly_lost"):
                    mean_hours = risk[f"mean_hours_to_{event}"]
                    rows.append({
                        "layout": layout, "mtbf_days": mtbf_days,
                        "mttr_hours": float(f"{mttr_hours:.4g}"),
                        "event": event.replace("_", " "),
                        "mean_years": float(f"{mean_hours / HOURS_PER_YEAR:.4g}"),
                        "p_per_year": float(f"{-math.expm1(-HOURS_PER_YEAR / mean_hours):.4g}"),
                    })
    return pd.DataFrame(rows)


def montecarlo_panel():
    """The live panel of the lab page: run the Monte Carlo, record it, redraw."""
    from labs import charts
    from labs.widgets import ChoiceParameter, FloatParameter, IntParameter, LabPanel

    def parameters_from(values: dict) -> dict:
        args = argparse.Namespace(quick=False, **values)
        return run_parameters(args)

    def run(values: dict, progress) -> object:
        return run_montecarlo(parameters_from(values),
                              lambda done, total: progress(done / total, "simulating"))

    return LabPanel(
        title="Monte Carlo of quorum availability",
        parameters=[
            IntParameter("nodes", "copies N", AURORA["nodes"], 1, 9),
            IntParameter("write", "write quorum W", AURORA["write"], 1, 9),
            IntParameter("read", "read quorum R", AURORA["read"], 1, 9),
            IntParameter("azs", "AZs Z", AURORA["azs"], 1, 9),
            FloatParameter("p_node", "p(node down)", 0.05, 0.0, 1.0, 0.01),
            FloatParameter("p_az", "p(AZ out)", 0.01, 0.0, 1.0, 0.001),
            ChoiceParameter("trials", "trials", 2_000_000, (200_000, 2_000_000, 20_000_000)),
            IntParameter("seed", "seed", 2017, 0, 2**31 - 1),
        ],
        command=lambda values: command_line(parameters_from(values)),
        run=run,
        chart=lambda recorded: charts.montecarlo_chart(recorded.results),
    )
