"""What the quorum-commit page shows of its power cuts: per synchronous_commit setting, the
acknowledged commits the most advanced standby lacked after every copy lost its power,
beside the model's most (labs/models/quorum_power_cut.py), and the figures its text quotes.

The page reads the companion run named by data/runs/quorum-commit/SHIPPED-power-cut
(`--part power-cut`). Pure page code: it reads recorded runs and never touches a VM.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.models import quorum_power_cut as model
from labs.records import SHIPPED_FILE, RecordedRun, load_run, runs_root

COMPANION = f"{SHIPPED_FILE}-power-cut"
BUSY_COMMITS_PER_S = 5000  # the exercise's primary, far busier than the lab's one client
MODEL_COLOR = "#D55E00"
# What the client's "done" waited for, under each setting (k: the run's ANY k).
WAITED_FOR = {"off": "nothing: not even the primary's own flush",
              "local": "the primary's flush",
              "remote_write": "the primary's flush and k standbys' writes (in their memory)",
              "on": "the primary's flush and k standbys' flushes",
              "remote_apply": "the primary's flush and k standbys' replay"}


def companion_run(root: Path | None = None) -> RecordedRun:
    """The run the page's power-cut section was written from."""
    lab_dir = Path(root or runs_root()) / "quorum-commit"
    return load_run(lab_dir / (lab_dir / COMPANION).read_text().strip())


def cuts(run: RecordedRun) -> pd.DataFrame:
    """One row per cut, in the order of the run: the counts, the rate and the model."""
    results = run.results
    rows = results[results["config"] == "power cut"]
    rows = rows[rows["standby"].isna() | (rows["metric"] != "standby_acknowledged_found")]
    table = rows.pivot_table(index=["cut", "synchronous_commit", "k"], columns="metric",
                             values="value", aggfunc="first").reset_index()
    newest = rows[rows["metric"] == "acknowledged_lost"].set_index("cut")["standby"]
    table["newest standby"] = table["cut"].map(newest)
    return table.sort_values("cut").reset_index(drop=True)


def standbys(run: RecordedRun) -> pd.DataFrame:
    """Each standby after each cut: its replay position and the acknowledged rows it held."""
    results = run.results
    rows = results[(results["config"] == "power cut")
                   & (results["metric"] == "standby_acknowledged_found")]
    return pd.DataFrame([{"synchronous_commit": r["synchronous_commit"],
                          "standby": r["standby"], "replay position": r["replay_lsn"],
                          "acknowledged": int(r["acknowledged"]),
                          "acknowledged rows it held": int(r["value"])}
                         for r in rows.to_dict("records")])


def table(run: RecordedRun) -> pd.DataFrame:
    """The cuts as the page shows them."""
    shown = []
    for row in cuts(run).to_dict("records"):
        shown.append({
            "synchronous_commit": row["synchronous_commit"],
            "the client's 'done' waited for": WAITED_FOR[row["synchronous_commit"]].replace(
                "k standbys", f"{int(row['k'])} standbys"),
            "commits per s": f"{row['acks_per_second']:.0f}",
            "acknowledged": int(row["acknowledged"]),
            "lacking on the newest standby": int(row["acknowledged_lost"]),
            "lacking on the primary": int(row["acknowledged"]
                                          - row["primary_acknowledged_found"]),
            "model: most lost": f"{row['model_max_lost']:.1f}",
            "model: window, ms": f"{row['model_window_ms']:.1f}",
            "first lost, ms before the cut": (f"{row['lost_window_ms']:.0f}"
                                              if row["acknowledged_lost"] else "none lost"),
        })
    return pd.DataFrame(shown)


def chart(run: RecordedRun) -> alt.LayerChart:
    """Acknowledged commits the newest standby lacked (bars) beside the model's most (ticks)."""
    data = cuts(run)
    order = list(data["synchronous_commit"])
    bars = alt.Chart(data).mark_bar(color="#0072B2").encode(
        x=alt.X("synchronous_commit:N", sort=order, title="synchronous_commit",
                axis=alt.Axis(labelAngle=0)),
        y=alt.Y("acknowledged_lost:Q", title="acknowledged commits lost"),
        tooltip=["synchronous_commit", "acknowledged", "acknowledged_lost",
                 alt.Tooltip("model_max_lost:Q", format=".1f")])
    ticks = alt.Chart(data).mark_tick(color=MODEL_COLOR, thickness=3, size=40).encode(
        x=alt.X("synchronous_commit:N", sort=order), y="model_max_lost:Q")
    return (bars + ticks).properties(
        width=420, height=220,
        title="After a cut of every copy: what the newest standby lacked (bars) and the "
              "model's most (ticks)")


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the power-cut section quotes, keyed pc_<setting>_<what>."""
    found: dict[str, str] = {}
    for row in cuts(run).to_dict("records"):
        key = f"pc_{row['synchronous_commit']}"
        found[f"{key}_acked"] = str(int(row["acknowledged"]))
        found[f"{key}_lost"] = str(int(row["acknowledged_lost"]))
        found[f"{key}_primary_lost"] = str(int(row["acknowledged"]
                                               - row["primary_acknowledged_found"]))
        found[f"{key}_rate"] = f"{row['acks_per_second']:.0f}"
        found[f"{key}_model_max"] = f"{row['model_max_lost']:.1f}"
        found[f"{key}_model_window_ms"] = f"{row['model_window_ms']:.1f}"
        found[f"{key}_lost_window_ms"] = f"{row['lost_window_ms']:.0f}"
        found[f"{key}_boot_s"] = f"{row['boot_s']:.0f}"
        found[f"{key}_recovery_s"] = f"{row['recovery_s']:.0f}"
    data = cuts(run)
    k = int(data["k"].iloc[0])
    results = run.results
    rtts = sorted(results[(results["workload"] == "ping")
                          & (results["metric"] == "rtt_p50_ms")]["value"])
    value = results.set_index(["config", "metric"])["value"]
    found.update({
        "pc_k": str(k), "pc_cuts": str(len(data)),
        "pc_near_rtt_ms": f"{rtts[0]:.1f}", "pc_near_one_way_ms": f"{rtts[0] / 2:.1f}",
        "pc_kth_rtt_ms": f"{rtts[k - 1]:.1f}",
        "pc_flush_p50_ms": f"{value['flush', 'p50_ms']:.1f}",
        "pc_wall_time_min": f"{value['lab', 'wall_time'] / 60:.0f}",
        "pc_run_id": run.run_id,
        "pc_command": run.meta["parameters"]["command_line"],
    })
    # The exercise: a busy primary, in the same layout, with the same flush.
    flush = float(value["flush", "p50_ms"])
    local = model.window_ms("local", rtts[0], rtts[k - 1], flush)
    any1 = model.window_ms("remote_write", rtts[0], rtts[0], flush)  # ANY 1: s1's write
    found.update({"pc_ex_busy_rate": f"{BUSY_COMMITS_PER_S:,}",
                  "pc_ex_local_window_ms": f"{local:.1f}",
                  "pc_ex_local_lost": f"{model.max_lost(BUSY_COMMITS_PER_S, local):.0f}",
                  "pc_ex_any1_window_ms": f"{any1:.1f}",
                  "pc_ex_any1_lost": f"{model.max_lost(BUSY_COMMITS_PER_S, any1):.0f}"})
    return found
