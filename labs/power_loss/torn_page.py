"""What the power-loss page shows of its torn-page legs: pages a cut tore, beside the model."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book.theme import MODEL_COLOR  # (importing the theme also sets it up)
from labs.power_loss import findings as found
from labs.power_loss import model
from labs.power_loss.findings import acks_in_window, leg_file
from labs.power_loss.params import Parameters
from labs.records import RecordedRun

SETTING_LABELS = {"full_page_writes=on": "full_page_writes = on",
                  "full_page_writes=off": "full_page_writes = off"}


def has_torn_legs(run: RecordedRun) -> bool:
    """Whether the run had the torn-page legs (runs with --tear-delay-ms 0 do not)."""
    return found.has_legs(run, "torn-pages")


def leg_outcomes(run: RecordedRun, workload: str, labels: dict[str, str]) -> pd.DataFrame:
    """found.leg_outcomes, with each setting's label beside it."""
    table = found.leg_outcomes(run, workload)
    table["label"] = table["setting"].map(labels)
    return table


def torn_outcomes(run: RecordedRun) -> pd.DataFrame:
    """One row per setting and power cut: updates acknowledged, whether PostgreSQL recovered
    by itself, pages damaged, rows whose newest acknowledged update was lost, the model."""
    return leg_outcomes(run, "torn-pages", SETTING_LABELS)


def leg_columns(table: pd.DataFrame, setting: str) -> dict[str, pd.Series]:
    """The first columns of a torn-page legs' table: the setting's value (and what the book
    calls it), the cut, the client's acknowledged updates and their rate."""
    return {
        setting: table["setting"].str.split("=").str[1] + " (" + table["safety"] + ")",
        "cut": table["cut"].map("{:.0f}".format),
        "updates acked": table["acknowledged"].map("{:,.0f}".format),
        "updates/s": table["acks_per_second"].map("{:.0f}".format),
    }


def torn_table(run: RecordedRun) -> pd.DataFrame:
    """Per setting and cut, as the page's table shows it."""
    table = torn_outcomes(run)
    return pd.DataFrame({
        **leg_columns(table, "full_page_writes"),
        "recovered alone": table["recovered_alone"].map({1: "yes", 0: "no"}),
        "damaged pages (model)": [f"{d:.0f} ({m:.0f})" for d, m in
                                  zip(table["damaged_pages"], table["model_damaged_pages"],
                                      strict=True)],
        "lost updates": table["acknowledged_lost"].map("{:,.0f}".format),
    })


def wrapping_header(table: pd.DataFrame):
    """A table styled with headers that wrap and no index."""
    wrap = [{"selector": "th", "props": [("white-space", "normal"), ("vertical-align", "bottom"),
                                         ("text-align", "left")]},
            {"selector": "td", "props": [("padding-right", "0.8em")]}]
    return table.style.hide(axis="index").set_table_styles(wrap)


def torn_table_styled(run: RecordedRun):
    return wrapping_header(torn_table(run))


def torn_chart(run: RecordedRun) -> alt.LayerChart:
    """Damaged pages per cut (points) beside the model's expectation (black ticks), each cut
    on a line of its own within its setting's band, so that no cut hides another."""
    table = torn_outcomes(run)
    y = alt.Y("label:N", sort=list(SETTING_LABELS.values()), title=None)
    tooltip = ["label:N", "cut:Q", alt.Tooltip("acknowledged:Q", title="updates acknowledged",
                                               format=",.0f"),
               alt.Tooltip("acks_per_second:Q", title="updates/s", format=".0f"),
               alt.Tooltip("damaged_pages:Q", title="damaged pages"),
               alt.Tooltip("model_damaged_pages:Q", title="model", format=".0f"),
               alt.Tooltip("acknowledged_lost:Q", title="rows that lost their newest update")]
    offset = alt.YOffset("cut:N", title="power cut")
    measured = alt.Chart(table).mark_point(size=90, filled=True, opacity=0.8).encode(
        y=y, yOffset=offset,
        x=alt.X("damaged_pages:Q", title="pages that failed their checksum after recovery"),
        color=alt.Color("safety:N", title="the book calls it", legend=alt.Legend(orient="top"),
                        scale=alt.Scale(domain=["safe", "unsafe"],
                                        range=["#009E73", "#D55E00"])),
        shape=alt.Shape("cut:N", title="power cut", legend=alt.Legend(orient="top")),
        tooltip=tooltip)
    expected = alt.Chart(table).mark_tick(thickness=2, size=12, color=MODEL_COLOR).encode(
        y=y, yOffset=offset, x="model_damaged_pages:Q", tooltip=tooltip)
    return alt.layer(expected, measured).properties(
        width=300, height=alt.Step(20),
        title=["Torn pages: damaged pages after recovery (points, one per cut)",
               "and the model's expectation (black ticks)"])


def exercise_figures(lab_pages_per_s: float | None = None) -> dict[str, str]:
    """The torn-page exercise: a real disk's window for a tear, through the same model, at a
    busy server's pace and at the lab's (its `off` client's median update rate)."""
    pages_per_s, window_s = 5000, 100e-6
    busy = model.torn_pages("unsafe", pages_per_s, window_s)
    figures = {"ex_torn_pages_per_s": f"{pages_per_s:,}",
               "ex_torn_window_us": f"{window_s * 1e6:.0f}", "ex_torn_per_cut": f"{busy:.1f}"}
    if lab_pages_per_s:
        lab = model.torn_pages("unsafe", lab_pages_per_s, window_s)
        # "one torn page in about N cuts", from the per-cut figure as printed, so that a
        # reader's own division gives the same N
        lab_shown = max(float(f"{lab:.4f}"), 0.0001)
        figures.update({"ex_torn_lab_rate": f"{lab_pages_per_s:.0f}",
                        "ex_torn_lab_per_cut": f"{lab_shown:.4f}",
                        "ex_torn_lab_cuts": f"{round(1 / lab_shown, -1):,.0f}"})
    return figures


def updates_in_hold(run: RecordedRun, unsafe: pd.DataFrame) -> pd.Series:
    """Per cut: the updates the full_page_writes=off client (`unsafe`, its rows of
    torn_outcomes) had acknowledged within the hold before the cut, counted from the
    acknowledgements' own times (the pages the model expects torn, at the rate of that last
    stretch instead of the last ten seconds)."""
    hold_s = Parameters.of(run).tear_delay_ms / 1000
    counts = {}
    for row in unsafe.itertuples():
        acks = leg_file(run, "postgres-fpw-off", row.cut, "-acks.txt")
        counts[int(row.cut)] = acks_in_window(acks, row.cut_after_s, hold_s)
    return pd.Series(counts, name="updates_in_hold")


def hold_counts(run: RecordedRun) -> pd.DataFrame:
    """Per cut of the full_page_writes=off server: the updates its client had acknowledged
    within the hold before the cut, and the pages found damaged."""
    unsafe = torn_outcomes(run).query("safety == 'unsafe'")
    damaged = unsafe.set_index(unsafe["cut"].astype(int))["damaged_pages"]
    return pd.DataFrame({"updates_in_hold": updates_in_hold(run, unsafe),
                         "damaged_pages": damaged.astype(int)}).rename_axis("cut")


def hold_table(run: RecordedRun):
    """hold_counts as the page shows it."""
    counts = hold_counts(run).reset_index()
    hold_ms = Parameters.of(run).tear_delay_ms
    return wrapping_header(pd.DataFrame({
        "power cut": counts["cut"],
        f"updates acknowledged in the last {hold_ms:,} ms": counts["updates_in_hold"],
        "damaged pages": counts["damaged_pages"]}))
