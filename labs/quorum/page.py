"""What the Quorums chapter's pages show: the model's tables, the recorded run, the panel.

Pure page code: models, records and the book's plumbing; never the host or VM code.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from labs.book import number_text as nt
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.models import quorum as model
from labs.models import quorum_problems
from labs.quorum import charts
from labs.quorum.findings import findings
from labs.quorum.params import Parameters
from labs.records import RecordedRun

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


FAST_AZ_RTTS_MS = (0.5, 0.8)  # two nearby zones
SLOW_AZ_RTT_CHOICES_MS = (0.8, 2.0, 4.0, 8.0)  # the third zone, from near to far
DEFAULT_SLOW_AZ_RTT_MS = 4.0


def kth_ack_distribution(nodes: int = 6, slow_rtts_ms=SLOW_AZ_RTT_CHOICES_MS,
                         max_ms: float = 12.0, points: int = 121) -> pd.DataFrame:
    """Density of the k-th fastest acknowledgement for k = 1..N (exact, from the CDF), for
    each round trip of the third zone (the first two at FAST_AZ_RTTS_MS)."""
    grid_ms = np.linspace(0.0, max_ms, points)
    step_ms = grid_ms[1] - grid_ms[0]
    frames = []
    for slow_ms in slow_rtts_ms:
        replicas = model.replicas_over_azs(nodes, [*FAST_AZ_RTTS_MS, slow_ms])
        for k in range(1, nodes + 1):
            cdf = model.kth_ack_cdf(replicas, k, grid_ms)
            density = np.gradient(cdf, step_ms)
            frames.append(pd.DataFrame({
                "slow_ms": slow_ms, "k": k, "latency_ms": grid_ms.round(2),
                "density": density.round(4)}))
    return pd.concat(frames, ignore_index=True)


def kth_ack_percentiles(nodes: int = 6, slow_rtts_ms=SLOW_AZ_RTT_CHOICES_MS) -> pd.DataFrame:
    """p50 and p99 of the k-th fastest acknowledgement, per k and third-zone round trip."""
    rows = []
    for slow_ms in slow_rtts_ms:
        replicas = model.replicas_over_azs(nodes, [*FAST_AZ_RTTS_MS, slow_ms])
        for k in range(1, nodes + 1):
            rows.append({"slow_ms": slow_ms, "k": k,
                         "p50_ms": round(model.kth_ack_quantile(replicas, k, 0.5), 3),
                         "p99_ms": round(model.kth_ack_quantile(replicas, k, 0.99), 3)})
    return pd.DataFrame(rows)


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



# ----------------------------------------------------------------------------------------
# The recorded run
# ----------------------------------------------------------------------------------------


def smallest_quorums(max_nodes: int = 7) -> pd.DataFrame:
    """The smallest safe (R, W) for N = 1..max_nodes, as the explanation's table."""
    return pd.DataFrame(model.quorum_table(max_nodes)).rename(
        columns={"nodes": "copies N", "read": "smallest R", "write": "smallest W"})


ZONE_LOSS_LAYOUTS = {"Aurora: 6 copies, W 4, R 3": (6, 4, 3), "3 copies, W 2, R 2": (3, 2, 2),
                     "5 copies, W 3, R 3": (5, 3, 3)}


def zone_loss_table() -> pd.DataFrame:
    """Which layouts over three zones survive a zone, and a zone plus one node."""
    rows = []
    for name, (n, w, r) in ZONE_LOSS_LAYOUTS.items():
        report = model.describe(n, w, r, azs=3).as_dict()
        rows.append({"layout (3 AZs)": name,
                     "lose an AZ: writes": report["lose_az"]["write"],
                     "lose an AZ: reads": report["lose_az"]["read"],
                     "AZ + 1 node: writes": report["lose_az_plus_one"]["write"],
                     "AZ + 1 node: reads": report["lose_az_plus_one"]["read"]})
    return pd.DataFrame(rows).replace({True: "survives", False: "stops"})


def explain_figures() -> dict[str, str]:
    """The numbers the explanation page quotes, from the model."""
    aurora = model.describe(6, 4, 3, azs=3).as_dict()
    table = kth_ack_percentiles(slow_rtts_ms=(DEFAULT_SLOW_AZ_RTT_MS,))
    acks = table.set_index("k")["p50_ms"]
    return {"aurora_write_tolerates": str(aurora["write_tolerates"]),
            "aurora_read_tolerates": str(aurora["read_tolerates"]),
            "k4_p50_ms": f"{acks[4]:.1f}", "k5_p50_ms": f"{acks[5]:.1f}",
            "slow_az_ms": f"{DEFAULT_SLOW_AZ_RTT_MS:g}",
            "fast_az_near_ms": f"{FAST_AZ_RTTS_MS[0]:g}",
            "fast_az_other_ms": f"{FAST_AZ_RTTS_MS[1]:g}"}


def exercise_figures() -> dict[str, str]:
    """The lab page's exercise answers, computed from the model (never typed in)."""
    five = model.describe(5, 3, 3, azs=3).as_dict()
    two_azs = model.describe(6, 4, 3, azs=2).as_dict()
    six = model.unavailability(6, 4, 3, p_node=0.01, azs=3, p_az=0.001)
    three = model.unavailability(3, 2, 2, p_node=0.01, azs=3, p_az=0.001)
    # The same chances split by cause: no zone out (node failures alone) vs a zone out.
    no_zone = (1 - 0.001) ** 3
    six_nodes = no_zone * model.unavailability(6, 4, 3, 0.01, 3, 0.0)["p_write_unavailable"]
    three_nodes = no_zone * model.unavailability(3, 2, 2, 0.01, 3, 0.0)["p_write_unavailable"]
    trials_needed = ex4_trials()
    return {
        "ex1_w": str(model.smallest_valid_quorum(5)[1]),
        "ex1_r": str(model.smallest_valid_quorum(5)[0]),
        "ex1_wt": str(five["write_tolerates"]),
        "ex1_rt": str(five["read_tolerates"]),
        "ex1_az_sizes": str(five["nodes_per_az"]),
        "ex2_sizes": str(two_azs["nodes_per_az"]),
        "ex2_left": str(6 - max(two_azs["nodes_per_az"])),
        "ex3_six": f"{six['p_write_unavailable']:.2e}",
        "ex3_three": f"{three['p_write_unavailable']:.2e}",
        "ex3_ratio": f"{three['p_write_unavailable'] / six['p_write_unavailable']:.1f}",
        "ex3_six_nodes": f"{six_nodes:.2e}", "ex3_three_nodes": f"{three_nodes:.2e}",
        "ex3_nodes_ratio": f"{three_nodes / six_nodes:.0f}",
        "ex3_six_zones": f"{six['p_write_unavailable'] - six_nodes:.2e}",
        "ex3_three_zones": f"{three['p_write_unavailable'] - three_nodes:.2e}",
        "ex3_three_left": str(model.survivors_after_az_loss(3, 3)),
        "ex3_six_left": str(model.survivors_after_az_loss(6, 3)),
        "ex3_three_stop": str(model.tolerated_failures(3, 2) + 1),
        "ex3_six_stop": str(model.tolerated_failures(6, 4) + 1),
        "ex4_trials": f"{trials_needed / 1e8:.1f} × 10⁸",
    }


def ex4_trials(p_target: float = 1e-4, relative: float = 0.01) -> int:
    """Exercise 4: trials for a 95 % interval of ±`relative` around a chance `p_target`."""
    return math.ceil(1.96**2 * (1 - p_target) / (p_target * relative**2))


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the lab page quotes, formatted from the run's findings, and the
    exercises'."""
    found = findings(run)
    return {
        "mc_trials": nt.count(found.params.trials),
        "mc_write_estimate": f"{found.write.estimate:.3e}",
        "mc_write_exact": f"{found.write.exact:.3e}",
        "mc_throughput_millions": nt.number(found.trials_per_s / 1e6, 0),
        **exercise_figures(),
        # Exercise 4: the trials it asks for, against this run's and at its trials a second.
        "ex4_times_the_run": nt.count(ex4_trials() / found.params.trials),
        "ex4_time": nt.duration_ms(ex4_trials() / found.trials_per_s * 1000),
    }


def practice_answer(kind: str, seed: int) -> str:
    """The worked answer of a generated problem (what `quorum --problem ... -c` adds)."""
    return quorum_problems.make_problem(kind, seed).solve().text


def provenance(run: RecordedRun) -> pd.DataFrame:
    return run_summary(run)


def panel() -> LabPanel:
    """The live panel of the lab page: run the Monte Carlo, record it, redraw."""
    return LabPanel(Parameters, fields=("profile", "nodes", "write", "read", "azs", "p_node",
                                        "p_az", "trials", "seed"),
                    chart=lambda recorded: charts.montecarlo_chart(recorded.results),
                    title="Monte Carlo of quorum availability")


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare: the estimated chance that writes
    and reads lose their quorum (model: the exact value), and the simulation's speed."""
    from labs.book.compare import headline_table

    rows = []
    for (config, workload), group in run.results.groupby(["config", "workload"], sort=False):
        key = f"{config}, {workload}"
        for op in ("write", "read"):
            values = group[group["op"] == op].set_index("metric")["value"]
            if "estimate" in values:
                rows.append({"measure": f"chance that {op}s are unavailable", "config": key,
                             "value": values["estimate"], "unit": "probability",
                             "better": "neither", "model": values.get("exact")})
        speed = group[group["metric"] == "throughput"]["value"]
        if len(speed):
            rows.append({"measure": "simulation speed", "config": key,
                         "value": speed.iloc[0], "unit": "trials/s", "better": "higher",
                         "model": None})
    return headline_table(rows)
