"""What the power-loss page shows of its doublewrite legs: InnoDB pages a power cut tore,
with the doublewrite buffer on and off, beside the model."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.power_loss.findings import acks_in_window, leg_file
from labs.power_loss.params import TORN_ROWS
from labs.power_loss.torn_page import leg_columns, leg_outcomes, wrapping_header
from labs.records import RecordedRun

SETTING_LABELS = {"innodb_doublewrite=ON": "innodb_doublewrite = ON",
                  "innodb_doublewrite=OFF": "innodb_doublewrite = OFF"}


def has_doublewrite_legs(run: RecordedRun) -> bool:
    """Whether the run had InnoDB's torn-page legs (older runs, and --engines postgres or
    --tear-delay-ms 0, do not)."""
    return bool((run.results["workload"] == "doublewrite").any())


def doublewrite_outcomes(run: RecordedRun) -> pd.DataFrame:
    """One row per setting and power cut: updates acknowledged, pages torn on the disk
    before recovery, pages recovery took from the doublewrite area, whether MariaDB
    recovered by itself, pages still damaged after it, rows whose newest acknowledged
    update was lost, the model."""
    return leg_outcomes(run, "doublewrite", SETTING_LABELS)


def doublewrite_table(run: RecordedRun) -> pd.DataFrame:
    """Per setting and cut, as the page shows it."""
    table = doublewrite_outcomes(run)
    first = leg_columns(table, "buffer")
    del first["updates/s"]  # the model column carries the rate (pages per update x 1 s)
    first["buffer"] = table["setting"].str.split("=").str[1]  # ON is the safe one
    return pd.DataFrame({
        **first,
        "torn (model)": [f"{t:.0f} ({m:.0f})" for t, m in
                         zip(table["torn_pages"], table["model_torn_pages"], strict=True)],
        "copies used": table["doublewrite_pages"].map("{:.0f}".format),
        "damaged after": table["damaged_pages"].map("{:.0f}".format),
        "rows unread": table["rows_unreadable"].map("{:,.0f}".format),
        "updates lost": table["acknowledged_lost"].map("{:,.0f}".format),
    })


def doublewrite_table_styled(run: RecordedRun):
    return wrapping_header(doublewrite_table(run))


WHEN = {"torn_pages": "torn, before recovery", "damaged_pages": "damaged, after recovery"}
MODEL = {"torn_pages": "model_torn_pages", "damaged_pages": "model_damaged_pages"}


def doublewrite_chart(run: RecordedRun) -> alt.FacetChart:
    """Two panels, pages torn on the disk before recovery and pages still damaged after it:
    a point per cut (each cut on a line of its own within its setting's band), the model's
    expectation as a grey tick on the same line."""
    table = doublewrite_outcomes(run)
    long = pd.concat([pd.DataFrame({"setting": table["label"], "safety": table["safety"],
                                    "cut": table["cut"], "when": WHEN[column],
                                    "pages": table[column], "model": table[MODEL[column]],
                                    "acked": table["acknowledged"],
                                    "rate": table["acks_per_second"]})
                      for column in WHEN], ignore_index=True)
    y = alt.Y("setting:N", sort=list(SETTING_LABELS.values()), title=None)
    offset = alt.YOffset("cut:N", title="power cut")
    tooltip = ["setting:N", alt.Tooltip("cut:Q", title="power cut"),
               alt.Tooltip("when:N", title="pages"), alt.Tooltip("pages:Q", title="count"),
               alt.Tooltip("model:Q", title="model", format=".1f"),
               alt.Tooltip("acked:Q", title="updates acknowledged", format=",.0f"),
               alt.Tooltip("rate:Q", title="updates/s (last 10 s)", format=".1f")]
    base = alt.Chart().encode(y=y, yOffset=offset, tooltip=tooltip)
    measured = base.mark_point(size=90, filled=True, opacity=0.8).encode(
        x=alt.X("pages:Q", title="pages failing their checksum"),
        color=alt.Color("safety:N", title="the book calls it", legend=alt.Legend(orient="top"),
                        scale=alt.Scale(domain=["safe", "unsafe"],
                                        range=["#009E73", "#D55E00"])),
        shape=alt.Shape("cut:N", title="power cut", legend=alt.Legend(orient="top")))
    expected = base.mark_tick(thickness=2, size=12, color="#555555").encode(x="model:Q")
    return alt.layer(expected, measured, data=long).properties(
        width=230, height=alt.Step(16),
    ).facet(column=alt.Column("when:N", sort=list(WHEN.values()), title=None)).properties(
        title=["InnoDB: pages torn by each cut and still damaged after recovery (points),",
               "and the model's expectation (grey ticks)"])


def raw_file(run: RecordedRun, leg: str, cut: float, suffix: str) -> Path:
    """A doublewrite leg's raw file: `leg` "on" or "off", `suffix` such as ".log"."""
    return leg_file(run, f"mariadb-dblwr-{leg}", cut, suffix)


def span(values: pd.Series) -> str:
    """"12" for one value or equal values, "12 to 30" otherwise."""
    low, high = int(values.min()), int(values.max())
    return f"{low}" if low == high else f"{low} to {high}"


def doublewrite_figures(run: RecordedRun) -> dict[str, str]:
    """Every number the doublewrite section quotes, computed from the run."""
    if not has_doublewrite_legs(run):
        return {}
    table = doublewrite_outcomes(run)
    safe, unsafe = table[table["safety"] == "safe"], table[table["safety"] == "unsafe"]
    holds = {(row.setting, row.cut): updates_in_hold(run, row) for row in table.itertuples()}
    return {
        "dw_cuts": str(len(unsafe)),
        **_safe_figures(safe),
        **_unsafe_figures(run, unsafe),
        **_model_figures(table, holds),
        **rate_figures(table),
    }


def _safe_figures(safe: pd.DataFrame) -> dict[str, str]:
    """The cuts with doublewrite ON: pages torn, what recovery left."""
    torn_safe = safe["torn_pages"]
    return {
        "dw_safe_torn": span(torn_safe),
        "dw_safe_torn_total": f"{int(torn_safe.sum())}",
        "dw_safe_damaged": f"{int(safe['damaged_pages'].sum())}",
        "dw_safe_lost": f"{int(safe['acknowledged_lost'].sum())}",
    }


def _unsafe_figures(run: RecordedRun, unsafe: pd.DataFrame) -> dict[str, str]:
    """The cuts with doublewrite OFF: pages torn, the failed recovery, the rows lost."""
    failed = unsafe[unsafe["recovered_alone"] == 0]
    per_page = unsafe["rows_unreadable"].sum() / unsafe["damaged_pages"].sum()
    lengths = {length for row in unsafe.itertuples() for length in unreadable_runs(run, row)}
    return {
        "dw_unsafe_torn": span(unsafe["torn_pages"]),
        "dw_unsafe_torn_total": f"{int(unsafe['torn_pages'].sum())}",
        # the cut whose log the page quotes: the first where recovery failed
        "dw_unsafe_quote_cut": f"{int(failed['cut'].iloc[0])}" if len(failed) else "",
        "dw_unsafe_unreadable": span(unsafe["rows_unreadable"]),
        # "in runs of N consecutive keys": the longest run (the recorded-run test checks
        # that every run is that long)
        "dw_unsafe_run_length": f"{max(lengths, default=0)}",
        "dw_unsafe_rows_per_page": f"{per_page:.1f}",
        "dw_unsafe_lost": f"{int(unsafe['acknowledged_lost'].sum()):,}",
        "dw_unsafe_updated": f"{int(unsafe['rows_updated'].sum()):,}",
        "dw_unsafe_damaged": f"{int(unsafe['damaged_pages'].sum())}",
    }


def _model_figures(table: pd.DataFrame, holds: dict[tuple, int]) -> dict[str, str]:
    """Pages torn against the model's, and against the updates acknowledged in the hold."""
    model_total, torn_total = table["model_torn_pages"].sum(), table["torn_pages"].sum()
    in_hold = sum(holds.values())
    hold_apart = max(abs(row.torn_pages - holds[(row.setting, row.cut)])
                     for row in table.itertuples())
    return {
        "dw_model_total": f"{model_total:.0f}",
        "dw_torn_total": f"{int(torn_total)}",
        "dw_model_error": nt.percent((torn_total - model_total) / model_total, signed=True),
        "dw_hold_updates": str(in_hold),
        # "... % fewer than that count"
        "dw_hold_error": f"{abs(torn_total - in_hold) / in_hold * 100:.0f}",
        "dw_hold_apart": f"{hold_apart:.0f}",
    }


ROWS_PER_PAGE = 2  # the torn legs' InnoDB table: rows of 7,000 bytes in 16 KiB pages


def unreadable_runs(run: RecordedRun, row) -> list[int]:
    """The lengths of the runs of consecutive keys the row-by-row read of `row`'s table (a
    row of doublewrite_outcomes) could not read, from the rows it found."""
    path = raw_file(run, row.setting.split("=")[1].lower(), row.cut, "-rows.txt")
    found = {int(line.split("\t")[0]) for line in path.read_text().splitlines() if "\t" in line}
    lengths: list[int] = []
    for key in range(TORN_ROWS):
        if key in found:
            continue
        if key - 1 in found or key == 0 or not lengths:
            lengths.append(1)
        else:
            lengths[-1] += 1
    return lengths


def updates_in_hold(run: RecordedRun, row) -> int:
    """Updates the client of `row` (of doublewrite_outcomes) had acknowledged within the
    hold before its cut, from its acknowledgement file."""
    hold_s = run.meta["parameters"]["tear_delay_ms"] / 1000
    path = raw_file(run, row.setting.split("=")[1].lower(), row.cut, "-acks.txt")
    return acks_in_window(path, row.cut_after_s, hold_s)


def rate_figures(table: pd.DataFrame) -> dict[str, str]:
    """The two clients' median update rates, and by how much ON's was the lower."""
    rates = table.pivot_table(index="cut", columns="safety", values="acks_per_second")
    on, off = rates["safe"].median(), rates["unsafe"].median()
    # One decimal: the gap is of the unrounded medians, and whole numbers would not show it.
    return {"dw_safe_rate": f"{on:.1f}", "dw_unsafe_rate": f"{off:.1f}",
            "dw_rate_gap": f"{(1 - on / off) * 100:.0f}"}
