"""What book/power-loss/write-path.md shows of a write-path run: its figures (formatted
findings), the loss chart with the model, the O_DIRECT records by age, the table of ways
and faults, provenance, the panel and the headline a reader's run is set beside."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book.fault_counts import loss_headline, loss_table
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.theme import MODEL_COLOR  # (importing the theme also sets it up)
from labs.power_loss import write_path
from labs.records import RecordedRun
from labs.write_path import model
from labs.write_path.findings import findings, record_ages, tally_table
from labs.write_path.params import Parameters

EXERCISE_WRITE_S = (14, 16)  # writing times for an exercise: the commit timer's model
FAST_LOG_RATE = 10_000  # records a second, for an exercise: a busy database's log
FAULT_COLOURS = alt.Scale(domain=list(model.FAULTS), range=["#0072B2", "#CC79A7", "#D55E00"])


def _seconds(value_s: float) -> str:
    """Whole seconds without decimals (the model's windows, the writing time)."""
    return nt.number(value_s, 0 if value_s == round(value_s) else None)


def figures(run: RecordedRun) -> dict[str, str]:
    found = findings(run)
    p = found.params
    direct = found.tally("direct", "power cut")
    write = found.tally("write", "power cut")
    return {
        "cuts": nt.count(p.cuts),
        "write_s": _seconds(p.write_s),
        "rate": nt.count(p.rate),
        "kernel_write_lost": nt.count(found.tally("write", "kernel crash").lost),
        "kernel_write_acked": nt.count(found.tally("write", "kernel crash").acked),
        "write_lost": nt.count(write.lost),
        "write_acked": nt.count(write.acked),
        "write_window_s": _seconds(model.WAYS["write"].cut_window_s),
        "direct_lost_share": nt.percent(direct.lost_share),
        "direct_lost": nt.count(direct.lost),
        "direct_acked": nt.count(direct.acked),
        "direct_oldest_lost_s": nt.number(found.direct_oldest_lost_age_s, 2),
        "direct_window_s": _seconds(found.direct_window_s),
        "direct_mixed_cuts": nt.count(found.direct_cuts_losing_some_not_all),
        "nobarrier_files_gone": nt.count(
            p.cuts - found.tally("fsync-nobarrier", "power cut").cuts_with_file),
        "app_buffer_lost": nt.count(found.tally("app-buffer", "process crash").lost),
        "direct_first_write_s": nt.number(found.direct_first_write_s, 2),
        "direct_commit_model_s": nt.number(found.direct_commit_model_lost_s, 2),
        "direct_timer_early_ms_min": nt.count(1000 * min(found.direct_boundary_errors_s)),
        "direct_timer_early_ms_max": nt.count(1000 * max(found.direct_boundary_errors_s)),
        **_exercise_figures(found),
        # The defaults behind the model's windows (Linux's writeback, ext4's journal).
        "dirty_expire_s": _seconds(write_path.DIRTY_EXPIRE_S),
        "writeback_period_s": _seconds(write_path.WRITEBACK_PERIOD_S),
        "journal_commit_s": _seconds(write_path.JOURNAL_COMMIT_S),
        # Exercise 1: the model's most at the run's rate, and at a fast log's.
        "ex_direct_most": nt.count(p.rate * found.direct_window_s),
        "ex_fast_rate": nt.count(FAST_LOG_RATE),
        "ex_direct_most_fast": nt.count(FAST_LOG_RATE * found.direct_window_s),
    }


def _exercise_case(found, write_s: float) -> tuple[str, str]:
    """The commit timer's model for one writing time: seconds lost, and their share."""
    lost_s = model.direct_lost_s(write_s, found.direct_first_write_s)
    share = lost_s / (write_s - found.direct_first_write_s)
    return nt.number(lost_s, 2), nt.percent(share)


def _exercise_figures(found) -> dict[str, str]:
    """Exercise 2: the commit timer's model for two other writing times (the keys name them)."""
    short_s, long_s = EXERCISE_WRITE_S
    short, long = _exercise_case(found, short_s), _exercise_case(found, long_s)
    return {"ex_w14_lost_s": short[0], "ex_w14_share": short[1],
            "ex_w16_lost_s": long[0], "ex_w16_share": long[1]}


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    table = table.copy()
    table["way of writing"] = table["way"].map(lambda name: model.WAYS[name].label)
    table["lost_pct"] = 100 * table["lost"] / table["acked"]
    table["model_most_pct"] = 100 * table["model_most_lost"] / table["acked"]
    return table


def loss_chart(run: RecordedRun) -> alt.FacetChart:
    """Share of acknowledged records lost, per way of writing and fault, beside the model's
    most (black tick)."""
    table = _labelled(tally_table(run))
    order = [way.label for way in model.WAYS_LIST if way.name in set(table["way"])]
    x = alt.X("way of writing:N", sort=order, title=None, axis=alt.Axis(labelAngle=-30))
    bars = alt.Chart().mark_bar().encode(
        x=x, y=alt.Y("lost_pct:Q", title="acknowledged records lost (%)",
                     scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("fault:N", scale=FAULT_COLOURS, legend=None),
        tooltip=["way of writing", "fault", alt.Tooltip("acked:Q", title="acknowledged"),
                 "lost", alt.Tooltip("model_most_lost:Q", title="model's most"), "cuts"])
    ticks = alt.Chart().mark_tick(color=MODEL_COLOR, thickness=3, size=28).encode(
        x=x, y="model_most_pct:Q",
        tooltip=["way of writing", "fault",
                 alt.Tooltip("model_most_pct:Q", title="model's most (%)", format=".0f")])
    return alt.layer(bars, ticks, data=table).properties(width=160, height=220).facet(
        column=alt.Column("fault:N", sort=list(model.FAULTS), title=None)).properties(
        title="Lost to each fault (bars) and the model's most (black ticks)")


def direct_chart(run: RecordedRun) -> alt.LayerChart:
    """Each O_DIRECT record by its age at the cut: kept or lost, and the model's window."""
    ages = record_ages(run, "direct")
    ages["what the cut did"] = ages["kept"].map({True: "kept", False: "lost"})
    window = pd.DataFrame({"age_s": [model.WAYS["direct"].cut_window_s]})
    points = alt.Chart(ages).mark_tick(thickness=1, size=14).encode(
        x=alt.X("age_s:Q", title="age of the acknowledgement at the cut (s)",
                scale=alt.Scale(reverse=True)),
        y=alt.Y("cut:O", title="cut"),
        color=alt.Color("what the cut did:N", scale=alt.Scale(
            domain=["kept", "lost"], range=["#009E73", "#D55E00"])),
        tooltip=["cut", "seq", alt.Tooltip("age_s:Q", format=".2f"), "what the cut did"])
    rule = alt.Chart(window).mark_rule(color="black", strokeDash=[4, 3]).encode(x="age_s:Q")
    return alt.layer(points, rule).properties(
        width=560, height=150,
        title="O_DIRECT records at a power cut, newest on the right; dashed: the model's "
              "window")


def way_table(run: RecordedRun) -> pd.DataFrame:
    """The mechanism table: way x fault -> cuts, acknowledged, lost, the model's most."""
    return loss_table(tally_table(run), "way", "way of writing",
                      lambda name: model.WAYS[name].label,
                      lambda name, fault: model.WAYS[name].window_s(fault))


def chart(run: RecordedRun) -> alt.FacetChart:
    return loss_chart(run)


def provenance(run: RecordedRun) -> pd.DataFrame:
    return run_summary(run)


def panel() -> LabPanel:
    return LabPanel(Parameters, fields=("profile", "host", "cuts", "write_s"), chart=chart,
                    title="Six ways of writing in a lab VM", defaults={"profile": "quick"},
                    needs_root=True)


def headline(run: RecordedRun) -> pd.DataFrame:
    """A reader's run beside the book's: the share each fault took from each way."""
    return loss_headline(tally_table(run), "way", lambda name: model.WAYS[name].label)
