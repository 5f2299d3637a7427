"""What the quorum-commit page shows of its power cuts: per synchronous_commit setting, the
acknowledged commits the most advanced standby lacked after every copy lost its power,
beside the model's most (labs/quorum_commit/power_cut_model.py), and the figures its text quotes.

The page reads the companion run named by data/runs/quorum-commit/SHIPPED-power-cut
(`--part power-cut`). Pure page code: it reads recorded runs and never touches a VM.
"""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.quorum_commit import power_cut_model as model
from labs.records import SHIPPED_FILE, RecordedRun, load_run, runs_root

COMPANION = f"{SHIPPED_FILE}-power-cut"
# Each cut's figures: pc_<setting>_<name> -> (its column in `cuts`, its format).
CUT_FIGURES = {"acked": ("acknowledged", "{:.0f}"), "lost": ("acknowledged_lost", "{:.0f}"),
               "primary_lost": ("primary_lost", "{:.0f}"), "rate": ("acks_per_second", "{:.0f}"),
               "model_max": ("model_max_lost", "count"),
               "model_window_ms": ("model_window_ms", "{:.1f}"),
               "lost_window_ms": ("lost_window_ms", "{:.0f}"), "boot_s": ("boot_s", "{:.0f}"),
               "recovery_s": ("recovery_s", "{:.0f}")}
# What the model's count is for each setting (labs/quorum_commit/power_cut_model.py): a ceiling
# where the setting promises it (on, remote_apply) or the manual states a worst case (off),
# an estimate where it rests on the median flush (local, remote_write). Short words keep
# the page's table narrow; the text says what each rests on.
MODEL_KIND = {"off": "ceiling", "local": "estimate", "remote_write": "estimate",
              "on": "ceiling", "remote_apply": "ceiling"}
BUSY_COMMITS_PER_S = 5000  # the exercise's primary, far busier than the lab's one client
MODEL_COLOR = "#D55E00"


def companion_run(root: Path | None = None) -> RecordedRun | None:
    """The run the page's power-cut section was written from (None: not recorded here)."""
    marker = Path(root or runs_root()) / "quorum-commit" / COMPANION
    if not marker.is_file():
        return None
    return load_run(marker.parent / marker.read_text().strip())


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
    """The cuts as the page shows them (what each setting waited for, and its window, are in
    the text beside the model)."""
    shown = []
    for row in cuts(run).to_dict("records"):
        shown.append({
            "setting": row["synchronous_commit"],
            "commits/s": f"{row['acks_per_second']:.0f}",
            "acked": int(row["acknowledged"]),
            "lost: newest standby": int(row["acknowledged_lost"]),
            "lost: primary": int(row["acknowledged"] - row["primary_acknowledged_found"]),
            "model": count_text(row["model_max_lost"]),
            "model is": MODEL_KIND[row["synchronous_commit"]],
        })
    return pd.DataFrame(shown)


def chart(run: RecordedRun) -> alt.LayerChart:
    """Acknowledged commits the newest standby lacked (bars) beside the model's most (ticks)."""
    data = cuts(run)
    order = list(data["synchronous_commit"])
    top = 1.1 * max(data["model_max_lost"].max(), data["acknowledged_lost"].max(), 1)
    bars = alt.Chart(data).mark_bar(color="#0072B2").encode(
        x=alt.X("synchronous_commit:N", sort=order, title="synchronous_commit",
                axis=alt.Axis(labelAngle=0)),
        y=alt.Y("acknowledged_lost:Q", title="acknowledged commits lost",
                scale=alt.Scale(domain=[0, top])),
        tooltip=["synchronous_commit", "acknowledged", "acknowledged_lost",
                 alt.Tooltip("model_max_lost:Q", format=".1f")])
    ticks = alt.Chart(data).mark_tick(color=MODEL_COLOR, thickness=3, size=40).encode(
        x=alt.X("synchronous_commit:N", sort=order), y="model_max_lost:Q")
    return (bars + ticks).properties(
        width=420, height=220,
        title=alt.TitleParams("A cut of every copy: commits lost",
                              subtitle="bars: lacking on the newest standby; ticks: the "
                                       "model (a ceiling for off and on, an estimate for "
                                       "local and remote_write)"))


def count_text(commits: float) -> str:
    """A model's count of commits: '217', or '0.2' below ten (a part of a commit)."""
    return f"{commits:.0f}" if commits >= 10 else f"{commits:.1f}"


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the power-cut section quotes, keyed pc_<setting>_<what>."""
    found: dict[str, str] = {}
    for row in cuts(run).to_dict("records"):
        row["primary_lost"] = row["acknowledged"] - row["primary_acknowledged_found"]
        for name, (column, form) in CUT_FIGURES.items():
            found[f"pc_{row['synchronous_commit']}_{name}"] = (
                count_text(row[column]) if form == "count" else form.format(row[column]))
    data = cuts(run)
    for row in data.to_dict("records"):
        key = f"pc_{row['synchronous_commit']}"
        if row["model_max_lost"] > 0:  # what the cut took, as a share of the model's most
            found[f"{key}_share_pct"] = (
                f"{100 * row['acknowledged_lost'] / row['model_max_lost']:.0f}")
        if row["acknowledged_lost"] > 0:  # how long the lost commits took to make, at the rate
            found[f"{key}_lost_span_ms"] = (
                f"{1000 * row['acknowledged_lost'] / row['acks_per_second']:.0f}")
    found.update(standby_figures(run))
    k = int(data["k"].iloc[0])
    results = run.results
    ping = results[(results["workload"] == "ping") & (results["metric"] == "rtt_p50_ms")]
    rtts = sorted(ping["value"])
    # The WAL's way to a standby: netem holds only what a standby sends, so half the round
    # trip without the added delay (the lab's power_cut.cuts computes it the same way).
    to_standby = float(((ping["value"] - ping["added_rtt_ms"]) / 2).min())
    value = results.set_index(["config", "metric"])["value"]
    found.update({
        "pc_k": str(k), "pc_cuts": str(len(data)),
        "pc_near_rtt_ms": f"{rtts[0]:.1f}", "pc_to_standby_ms": f"{to_standby:.2f}",
        "pc_kth_rtt_ms": f"{rtts[k - 1]:.1f}",
        "pc_flush_p50_ms": f"{value['flush', 'p50_ms']:.1f}",
        "pc_wall_time_min": f"{value['lab', 'wall_time'] / 60:.0f}",
        "pc_run_id": run.run_id,
        "pc_command": run.meta["parameters"]["command_line"],
    })
    # The exercise: a busy primary, in the same layout, with the same flush; from the
    # figures as the page prints them, so that its sums add up on the page.
    near, to_standby, flush = (float(found[f"pc_{name}"])
                               for name in ("near_rtt_ms", "to_standby_ms", "flush_p50_ms"))
    local = model.window_ms("local", to_standby, near, flush)
    any1 = model.window_ms("remote_write", to_standby, near, flush)  # ANY 1: s1's report
    found.update({"pc_ex_busy_rate": f"{BUSY_COMMITS_PER_S:,}",
                  "pc_ex_local_window_ms": f"{local:.2f}",
                  "pc_ex_local_lost": f"{model.max_lost(BUSY_COMMITS_PER_S, local):.0f}",
                  "pc_ex_any1_window_ms": f"{any1:.2f}",
                  "pc_ex_any1_lost": f"{model.max_lost(BUSY_COMMITS_PER_S, any1):.0f}"})
    return found


def standby_figures(run: RecordedRun) -> dict[str, str]:
    """After the cuts where the five standbys did not hold the same rows, which one held the
    fewest: pc_<setting>_fewest_standby, _fewest_held, _zone."""
    held = standbys(run)
    results = run.results
    zones = results[results["workload"] == "ping"].set_index("standby")["zone"]
    found = {}
    for setting, rows in held.groupby("synchronous_commit", sort=False):
        counts = rows["acknowledged rows it held"]
        if counts.nunique() == 1 and rows["replay position"].nunique() == 1:
            continue
        fewest = rows.loc[counts.idxmin()]
        found.update({f"pc_{setting}_fewest_standby": fewest["standby"],
                      f"pc_{setting}_fewest_held": str(int(fewest["acknowledged rows it held"])),
                      f"pc_{setting}_fewest_zone": str(int(zones[fewest["standby"]].iloc[0]))})
    return found


def headline(run: RecordedRun) -> pd.DataFrame:
    """labs.book.compare's headline of a run of the power cuts alone: per setting, the
    acknowledged commits the newest standby lacked, beside the model's most."""
    from labs.book.compare import headline_table

    return headline_table([
        {"measure": "acknowledged commits lost to a cut of every copy",
         "config": f"synchronous_commit={row['synchronous_commit']}",
         "value": float(row["acknowledged_lost"]), "unit": "count", "better": "lower",
         "model": float(row["model_max_lost"])}
        for row in cuts(run).to_dict("records")])
