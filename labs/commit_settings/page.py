"""What book/power-loss/commit-settings.md shows of a commit-settings run: its figures
(formatted findings), the loss chart with the model, the oldest lost commit of each cut
beside its window, the table of settings and faults, provenance, the panel and the
headline a reader's run is set beside."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book.fault_counts import loss_headline, loss_table, window_text
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.theme import MODEL_COLOR  # (importing the theme also sets it up)
from labs.commit_settings import model
from labs.commit_settings.findings import findings, lost_ages, tally_table
from labs.commit_settings.params import Parameters
from labs.records import RecordedRun

FAULT_COLOURS = alt.Scale(domain=list(model.FAULTS), range=["#0072B2", "#CC79A7", "#D55E00"])
BUSY_COMMITS_PER_S = 5_000  # an exercise: a busy server's commit rate


def _ms(value_s: float) -> str:
    return nt.count(1000 * value_s)


def figures(run: RecordedRun) -> dict[str, str]:
    found = findings(run)
    p = found.params
    sync_off = found.tally("pg-sync-off", "power cut")
    fsync_off = found.tally("pg-fsync-off", "kernel crash")
    flush_2 = found.tally("innodb-2", "power cut")
    flush_0 = found.tally("innodb-0", "process crash")
    return {
        "cuts": nt.count(p.cuts),
        "write_s": nt.number(p.write_s, 0),
        "writing_s_min": nt.number(min(found.writing_s), 1),
        "writing_s_max": nt.number(max(found.writing_s), 1),
        "commits_per_s_min": nt.count(min(found.commits_per_s.values())),
        "commits_per_s_max": nt.count(max(found.commits_per_s.values())),
        "sync_off_crash_lost": nt.count(found.tally("pg-sync-off", "process crash").lost),
        "sync_off_cut_lost": nt.count(sync_off.lost),
        "sync_off_cut_acked": nt.count(sync_off.acked),
        "sync_off_oldest_ms": _ms(max(t.oldest_lost_s for t in found.tallies
                                      if t.setting == "pg-sync-off")),
        "sync_off_window_ms": _ms(model.PG_ASYNC_FLUSH_S),
        "wal_writer_delay_ms": _ms(model.WAL_WRITER_DELAY_S),
        "sync_off_kernel_lost": nt.count(found.tally("pg-sync-off", "kernel crash").lost),
        "flush_2_kernel_lost": nt.count(found.tally("innodb-2", "kernel crash").lost),
        "fsync_off_kernel_lost": nt.count(fsync_off.lost),
        "fsync_off_kernel_acked": nt.count(fsync_off.acked),
        "fsync_off_window_s": window_text(fsync_off.window_s),
        "fsync_off_extra_s": window_text(found.tally("pg-fsync-off", "power cut").window_s
                                         - fsync_off.window_s),
        "fsync_off_oldest_s": nt.number(fsync_off.oldest_lost_s, 1),
        "recoveries": nt.count(found.recoveries),
        "none_answers": nt.count(len(found.settings_and_faults_losing_nothing)),
        "rate_sync_on": nt.count(found.commits_per_s["pg-sync-on"]),
        "rate_sync_off": nt.count(found.commits_per_s["pg-sync-off"]),
        "flush_2_cut_lost": nt.count(flush_2.lost),
        "flush_2_cut_acked": nt.count(flush_2.acked),
        "flush_2_oldest_ms": _ms(flush_2.oldest_lost_s),
        "innodb_flush_ms": _ms(model.INNODB_FLUSH_S),
        "flush_0_crash_lost": nt.count(flush_0.lost),
        "flush_0_crash_cuts": nt.count(flush_0.cuts_losing),
        # Exercise: the model's most at a busy server's rate.
        "ex_busy_rate": nt.count(BUSY_COMMITS_PER_S),
        "ex_busy_flush_2_most": nt.count(BUSY_COMMITS_PER_S * model.INNODB_FLUSH_S),
        "ex_busy_sync_off_most": nt.count(BUSY_COMMITS_PER_S * model.PG_ASYNC_FLUSH_S),
    }


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    table = table.copy()
    table["setting"] = table["setting"].map(lambda name: model.SETTINGS[name].short)
    table["lost_pct"] = 100 * table["lost"] / table["acked"]
    table["model_most_pct"] = 100 * table["model_most_lost"] / table["acked"]
    return table


def _setting_order(names: set[str]) -> list[str]:
    return [s.short for s in model.SETTINGS_LIST if s.short in names]


def loss_chart(run: RecordedRun) -> alt.FacetChart:
    """Share of acknowledged commits lost, per setting and fault, beside the model's most
    (black tick): one row per setting, one column per fault."""
    table = _labelled(tally_table(run))
    y = alt.Y("setting:N", sort=_setting_order(set(table["setting"])), title=None)
    bars = alt.Chart().mark_bar().encode(
        y=y, x=alt.X("lost_pct:Q", title="commits lost (%)", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("fault:N", scale=FAULT_COLOURS, legend=None),
        tooltip=["setting", "fault", alt.Tooltip("acked:Q", title="acknowledged"), "lost",
                 alt.Tooltip("model_most_lost:Q", title="model's most"), "cuts"])
    ticks = alt.Chart().mark_tick(color=MODEL_COLOR, thickness=3, size=18).encode(
        y=y, x="model_most_pct:Q",
        tooltip=["setting", "fault",
                 alt.Tooltip("model_most_pct:Q", title="model's most (%)", format=".1f")])
    # How many were lost, beside each bar: a loss of a few in thousands shows no bar.
    counts = alt.Chart().mark_text(align="left", dx=4, fontSize=10).encode(
        y=y, x=alt.X("label_at:Q"), text=alt.Text("lost:Q", format=","))
    table["label_at"] = table[["lost_pct", "model_most_pct"]].max(axis=1).clip(upper=60)
    return alt.layer(bars, ticks, counts, data=table).properties(width=140, height=170).facet(
        column=alt.Column("fault:N", sort=list(model.FAULTS), title=None)).properties(
        title="Lost to each fault (bars) and the model's most (black ticks)")


def age_chart(run: RecordedRun) -> alt.LayerChart:
    """The oldest commit each cut lost, its age at the cut, beside the model's window
    (black tick), for the settings whose window is short."""
    ages = lost_ages(run)
    ages = ages[ages["window_s"] < 5].copy()
    ages["setting"] = ages["setting"].map(lambda name: model.SETTINGS[name].short)
    ages["oldest_lost_ms"] = 1000 * ages["oldest_lost_s"]
    windows = ages.drop_duplicates(["setting", "fault"]).assign(
        window_ms=lambda t: 1000 * t["window_s"])
    x = alt.X("setting:N", sort=_setting_order(set(ages["setting"])), title=None,
              axis=alt.Axis(labelAngle=0))
    offset = alt.XOffset("fault:N", scale=alt.Scale(domain=list(model.FAULTS)))
    points = alt.Chart(ages).mark_circle(size=60, opacity=0.8).encode(
        x=x, xOffset=offset,
        y=alt.Y("oldest_lost_ms:Q", title="oldest lost commit, age at the cut (ms)"),
        color=alt.Color("fault:N", scale=FAULT_COLOURS, title="fault"),
        tooltip=["setting", "fault", "cut",
                 alt.Tooltip("oldest_lost_ms:Q", title="oldest lost (ms)", format=".0f")])
    ticks = alt.Chart(windows).mark_tick(color=MODEL_COLOR, thickness=3, size=18).encode(
        x=x, xOffset=offset, y="window_ms:Q",
        tooltip=["setting", "fault", alt.Tooltip("window_ms:Q", title="window (ms)")])
    return alt.layer(ticks, points).properties(
        width=380, height=240,
        title="The oldest commit each cut took (dots) and the model's window (black ticks)")


def setting_table(run: RecordedRun) -> pd.DataFrame:
    """The database table: setting x fault -> cuts, acknowledged, lost, the model's window
    and most."""
    return loss_table(tally_table(run), "setting", "setting",
                      lambda name: model.SETTINGS[name].label,
                      lambda name, fault: model.SETTINGS[name].window_s(fault))


def chart(run: RecordedRun) -> alt.FacetChart:
    return loss_chart(run)


def provenance(run: RecordedRun) -> pd.DataFrame:
    return run_summary(run)


def panel() -> LabPanel:
    return LabPanel(Parameters, fields=("profile", "host", "cuts", "write_s"), chart=chart,
                    title="Six commit settings in a lab VM", defaults={"profile": "quick"},
                    needs_root=True)


def headline(run: RecordedRun) -> pd.DataFrame:
    """A reader's run beside the book's: the share each fault took from each setting."""
    return loss_headline(tally_table(run), "setting", lambda name: model.SETTINGS[name].short)
