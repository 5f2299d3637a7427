"""What the power-loss page shows of its doublewrite legs: InnoDB pages a power cut tore,
with the doublewrite buffer on and off, beside the model."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from labs.book.theme import MODEL_COLOR  # (importing the theme also sets it up)
from labs.power_loss.findings import leg_file
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
    expectation as a black tick on the same line."""
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
    expected = base.mark_tick(thickness=2, size=12, color=MODEL_COLOR).encode(x="model:Q")
    return alt.layer(expected, measured, data=long).properties(
        width=230, height=alt.Step(16),
    ).facet(column=alt.Column("when:N", sort=list(WHEN.values()), title=None)).properties(
        title=["InnoDB: pages torn by each cut and still damaged after recovery (points),",
               "and the model's expectation (black ticks)"])


def raw_file(run: RecordedRun, leg: str, cut: float, suffix: str) -> Path:
    """A doublewrite leg's raw file: `leg` "on" or "off", `suffix` such as ".log"."""
    return leg_file(run, f"mariadb-dblwr-{leg}", cut, suffix)


ROWS_PER_PAGE = 2  # the torn legs' InnoDB table: rows of 7,000 bytes in 16 KiB pages
