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

from labs.book import number_text as nt
from labs.book.theme import MODEL_COLOR  # (importing the theme also sets it up)
from labs.quorum_commit import power_cut_findings as found
from labs.quorum_commit import power_cut_model as model
from labs.records import SHIPPED_FILE, RecordedRun, load_run, runs_root

COMPANION = f"{SHIPPED_FILE}-power-cut"
# What the model's count is for each setting (labs/quorum_commit/power_cut_model.py): a ceiling
# where the setting promises it (on, remote_apply) or the manual states a worst case (off),
# an estimate where it rests on the median flush (local, remote_write). Short words keep
# the page's table narrow; the text says what each rests on.
MODEL_KIND = {"off": "ceiling", "local": "estimate", "remote_write": "estimate",
              "on": "ceiling", "remote_apply": "ceiling"}
BUSY_COMMITS_PER_S = 5000  # the exercise's primary, far busier than the lab's one client


def companion_run(root: Path | None = None) -> RecordedRun | None:
    """The run the page's power-cut section was written from (None: not recorded here)."""
    marker = Path(root or runs_root()) / "quorum-commit" / COMPANION
    if not marker.is_file():
        return None
    return load_run(marker.parent / marker.read_text().strip())


def cuts(run: RecordedRun) -> pd.DataFrame:
    """One row per cut, in the order of the run: the counts, the rate and the model."""
    return found.cuts_table(run)


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
    """Every number the power-cut section quotes, keyed pc_<setting>_<what>; a run that cut
    under fewer settings (a quick one) has the keys of those it cut."""
    f = found.findings(run)
    cut = {c.setting: c for c in f.cuts}
    out = {"pc_k": nt.count(f.cuts[0].k), "pc_cuts": nt.count(len(f.cuts)),
           "pc_near_rtt_ms": nt.number(f.near_rtt_ms, 1),
           "pc_to_standby_ms": nt.number(f.to_standby_ms, 2),
           "pc_kth_rtt_ms": nt.number(f.kth_rtt_ms, 1),
           "pc_flush_p50_ms": nt.number(f.flush_p50_ms, 1), **exercise_figures(f)}
    if "off" in cut:
        out.update(_off_figures(cut["off"]))
    if "local" in cut:
        out.update(_local_figures(f))
    if "remote_write" in cut:
        out.update({"pc_remote_write_acked": nt.count(cut["remote_write"].acknowledged),
                    "pc_remote_write_rate": nt.count(cut["remote_write"].acks_per_s)})
    if "on" in cut:
        out.update({"pc_on_acked": nt.count(cut["on"].acknowledged),
                    "pc_on_rate": nt.count(cut["on"].acks_per_s)})
    return out


def _off_figures(cut: found.PowerCut) -> dict[str, str]:
    """The cut with synchronous_commit off: what it took, against the model's count."""
    out = {"pc_off_acked": nt.count(cut.acknowledged), "pc_off_lost": nt.count(cut.lost),
           "pc_off_primary_lost": nt.count(cut.primary_lost),
           "pc_off_rate": nt.count(cut.acks_per_s),
           "pc_off_model_max": count_text(cut.model_most_lost),
           "pc_off_model_window_ms": nt.number(cut.model_window_ms, 1),
           "pc_off_lost_window_ms": nt.count(cut.lost_window_ms)}
    if cut.share_of_model is not None:  # what the cut took, as a share of the model's most
        out["pc_off_share_pct"] = nt.count(100 * cut.share_of_model)
    if cut.lost > 0:  # how long the lost commits took to make, at the rate
        out["pc_off_lost_span_ms"] = nt.count(cut.lost_span_ms)
    return out


def _local_figures(f: found.PowerCutFindings) -> dict[str, str]:
    """The cut with synchronous_commit local, and the standby that held the fewest rows after
    it (when the standbys disagreed)."""
    cut = f.cut("local")
    out = {"pc_local_acked": nt.count(cut.acknowledged),
           "pc_local_rate": nt.count(cut.acks_per_s),
           "pc_local_model_max": count_text(cut.model_most_lost),
           "pc_local_model_window_ms": nt.number(cut.model_window_ms, 1)}
    fewest = f.fewest("local")
    if fewest is not None:
        out.update({"pc_local_fewest_standby": fewest.standby,
                    "pc_local_fewest_held": nt.count(fewest.held),
                    "pc_local_fewest_zone": nt.count(fewest.zone)})
    return out


def exercise_figures(f: found.PowerCutFindings) -> dict[str, str]:
    """The exercise: a busy primary, in the same layout, with the same flush; from the
    figures as the page prints them (rounded), so that its sums add up on the page."""
    near, to_standby = round(f.near_rtt_ms, 1), round(f.to_standby_ms, 2)
    flush = round(f.flush_p50_ms, 1)
    local = model.window_ms("local", to_standby, near, flush)
    any1 = model.window_ms("remote_write", to_standby, near, flush)  # ANY 1: s1's report
    return {"pc_ex_busy_rate": nt.count(BUSY_COMMITS_PER_S),
            "pc_ex_local_window_ms": nt.number(local, 2),
            "pc_ex_local_lost": nt.count(model.max_lost(BUSY_COMMITS_PER_S, local)),
            "pc_ex_any1_window_ms": nt.number(any1, 2),
            "pc_ex_any1_lost": nt.count(model.max_lost(BUSY_COMMITS_PER_S, any1))}


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
