"""What the power-loss page shows of its torn-page legs: pages a cut tore, beside the model."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.power_loss.params import TORN_ROWS
from labs.records import RecordedRun

SETTING_LABELS = {"full_page_writes=on": "full_page_writes = on",
                  "full_page_writes=off": "full_page_writes = off"}


def has_torn_legs(run: RecordedRun) -> bool:
    """Whether the run had the torn-page legs (runs with --tear-delay-ms 0 do not)."""
    return bool((run.results["workload"] == "torn-pages").any())


def torn_outcomes(run: RecordedRun) -> pd.DataFrame:
    """One row per setting and power cut: updates acknowledged, whether PostgreSQL recovered
    by itself, pages damaged, rows whose newest acknowledged update was lost, the model."""
    rows = run.results[run.results["workload"] == "torn-pages"]
    table = rows.pivot_table(index=["setting", "safety", "cut"], columns="metric",
                             values="value").reset_index()
    table.columns.name = None
    table["label"] = table["setting"].map(SETTING_LABELS)
    return table.sort_values(["safety", "cut"]).reset_index(drop=True)


def torn_table(run: RecordedRun) -> pd.DataFrame:
    """Per setting and cut, as the page's table shows it."""
    table = torn_outcomes(run)
    return pd.DataFrame({
        "setting (the book calls it)": table["label"] + " (" + table["safety"] + ")",
        "cut": table["cut"].map("{:.0f}".format),
        "updates acknowledged": table["acknowledged"].map("{:,.0f}".format),
        "per s": table["acks_per_second"].map("{:.0f}".format),
        "recovered by itself": table["recovered_alone"].map({1: "yes", 0: "no"}),
        "damaged pages (model)": [f"{d:.0f} ({m:.0f})" for d, m in
                                  zip(table["damaged_pages"], table["model_damaged_pages"],
                                      strict=True)],
        "rows that lost their newest update": [
            f"{lost:,.0f} of {updated:,.0f}" for lost, updated in
            zip(table["acknowledged_lost"], table["rows_updated"], strict=True)],
    })


def torn_table_styled(run: RecordedRun):
    wrap = [{"selector": "th", "props": [("white-space", "normal"), ("vertical-align", "bottom"),
                                         ("text-align", "left")]},
            {"selector": "td", "props": [("padding-right", "0.8em")]}]
    return torn_table(run).style.hide(axis="index").set_table_styles(wrap)


def torn_chart(run: RecordedRun) -> alt.LayerChart:
    """Damaged pages per cut (points) beside the model's expectation (grey ticks)."""
    table = torn_outcomes(run)
    y = alt.Y("label:N", sort=list(SETTING_LABELS.values()), title=None)
    tooltip = ["label:N", "cut:Q", alt.Tooltip("acknowledged:Q", title="updates acknowledged",
                                               format=",.0f"),
               alt.Tooltip("acks_per_second:Q", title="updates/s", format=".0f"),
               alt.Tooltip("damaged_pages:Q", title="damaged pages"),
               alt.Tooltip("model_damaged_pages:Q", title="model", format=".0f"),
               alt.Tooltip("acknowledged_lost:Q", title="rows that lost their newest update")]
    measured = alt.Chart(table).mark_point(size=90, filled=True, opacity=0.8).encode(
        y=y, x=alt.X("damaged_pages:Q", title="pages that failed their checksum after recovery"),
        color=alt.Color("safety:N", title="the book calls it", legend=alt.Legend(orient="top"),
                        scale=alt.Scale(domain=["safe", "unsafe"],
                                        range=["#009E73", "#D55E00"])),
        shape=alt.Shape("cut:N", title="power cut", legend=alt.Legend(orient="top")),
        tooltip=tooltip)
    expected = alt.Chart(table).mark_tick(thickness=2, size=30, color="#555555").encode(
        y=y, x="model_damaged_pages:Q", tooltip=tooltip)
    return alt.layer(expected, measured).properties(
        width=300, height=alt.Step(44),
        title=["Torn pages: damaged pages after recovery (points, one per cut)",
               "and the model's expectation (grey ticks)"])


def first_fatal(run: RecordedRun, cut: int) -> str:
    """The line with which recovery of the full_page_writes=off server stopped in `cut`, as
    its log says it ("" if it did not stop)."""
    log = run.path / "raw" / f"cut{cut}" / f"postgres-fpw-off-cut{cut}.log"
    for line in log.read_text(errors="replace").splitlines():
        if "FATAL:" in line:
            return line.split("FATAL:", 1)[1].strip()
    return ""


def torn_figures(run: RecordedRun) -> dict[str, str]:
    """Every number the torn-page section quotes, computed from the run."""
    if not has_torn_legs(run):
        return {}
    table = torn_outcomes(run)
    safe, unsafe = table[table["safety"] == "safe"], table[table["safety"] == "unsafe"]
    alone = int(unsafe["recovered_alone"].sum())
    model_total, damaged_total = unsafe["model_damaged_pages"].sum(), unsafe["damaged_pages"].sum()
    error = (damaged_total - model_total) / model_total * 100
    stopped = unsafe[unsafe["recovered_alone"] == 0]
    fatal = first_fatal(run, int(stopped["cut"].iloc[0])) if len(stopped) else ""
    rate_on, rate_off = safe["acks_per_second"].median(), unsafe["acks_per_second"].median()
    return {
        "torn_cuts": str(len(unsafe)),
        "torn_hold_ms": f"{run.meta['parameters']['tear_delay_ms']:,}",
        "torn_rows": f"{TORN_ROWS:,}",
        "torn_safe_damaged": f"{int(safe['damaged_pages'].sum())}",
        "torn_safe_lost": f"{int(safe['acknowledged_lost'].sum())}",
        "torn_safe_alone": ("recovered by itself after every cut" if safe["recovered_alone"].all()
                            else "needed help to recover after some cut"),
        "torn_unsafe_alone": ("recovered by itself after every cut" if alone == len(unsafe)
                              else "refused to start after every cut" if alone == 0
                              else f"recovered by itself after {alone} of {len(unsafe)} cuts"),
        "torn_fatal_quote": f"“{fatal}”" if fatal else "no error",
        "torn_unsafe_damaged_min": f"{int(unsafe['damaged_pages'].min())}",
        "torn_unsafe_damaged_max": f"{int(unsafe['damaged_pages'].max())}",
        "torn_unsafe_lost": f"{int(unsafe['acknowledged_lost'].sum()):,}",
        "torn_unsafe_updated": f"{int(unsafe['rows_updated'].sum()):,}",
        "torn_model_total": f"{model_total:.0f}",
        "torn_damaged_total": f"{int(damaged_total)}",
        "torn_model_error": f"{error:+.0f} %",
        "torn_safe_rate": f"{rate_on:.0f}",
        "torn_unsafe_rate": f"{rate_off:.0f}",
    }
