"""What the power-loss page shows of its doublewrite legs: InnoDB pages a power cut tore,
with the doublewrite buffer on and off, beside the model."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.power_loss.params import TORN_ROWS
from labs.power_loss.torn_page import (
    acks_in_window,
    leg_columns,
    leg_file,
    leg_outcomes,
    wrapping_header,
)
from labs.records import RecordedRun
from labs.tools import innochecksum, mariadb

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


def first_line(path: Path, words: str) -> str:
    """The first line of a raw file that contains `words`, from there on ("" if none)."""
    if not path.exists():
        return ""
    for line in path.read_text(errors="replace").splitlines():
        if words in line:
            return line[line.index(words):].strip()
    return ""


def more_or_fewer(error_pct: float) -> str:
    """"5 % fewer" / "5 % more" / "as many": a count against another, in words."""
    if round(error_pct) == 0:
        return "as many as"
    return f"{abs(error_pct):.0f} % {'fewer' if error_pct < 0 else 'more'} than"


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
        **_safe_figures(run, safe),
        **_unsafe_figures(run, unsafe),
        **_model_figures(table, holds),
        "dw_torn_pairs": torn_pairs(table),
        **rate_figures(table),
    }


def _safe_figures(run: RecordedRun, safe: pd.DataFrame) -> dict[str, str]:
    """The cuts with doublewrite ON: pages torn, copies used, what recovery left."""
    copied = safe[safe["doublewrite_pages"] > 0]  # the quote needs a cut with a copy
    safe_cut = int((copied if len(copied) else safe)["cut"].iloc[0])
    copies, torn_safe = safe["doublewrite_pages"], safe["torn_pages"]
    return {
        "dw_safe_torn": span(torn_safe),
        "dw_safe_torn_total": f"{int(torn_safe.sum())}",
        "dw_safe_copies": ("every one of them" if (copies == torn_safe).all()
                           else f"{int(copies.sum())} of them"),
        "dw_safe_quote": first_line(raw_file(run, "on", safe_cut, ".log"), "Recovered page"),
        "dw_safe_damaged": f"{int(safe['damaged_pages'].sum())}",
        "dw_safe_lost": f"{int(safe['acknowledged_lost'].sum())}",
        "dw_safe_alone": ("recovered by itself after every cut" if safe["recovered_alone"].all()
                          else "needed help to recover after some cut"),
    }


def _unsafe_figures(run: RecordedRun, unsafe: pd.DataFrame) -> dict[str, str]:
    """The cuts with doublewrite OFF: pages torn, the failed recovery, the rows lost."""
    unsafe_cut = int(unsafe["cut"].iloc[0])
    failed = unsafe[unsafe["recovered_alone"] == 0]
    failed_cut = int(failed["cut"].iloc[0]) if len(failed) else unsafe_cut
    unread = unsafe[unsafe["table_read"] == 0]
    unread_cut = int(unread["cut"].iloc[0]) if len(unread) else unsafe_cut
    per_page = unsafe["rows_unreadable"].sum() / unsafe["damaged_pages"].sum()
    return {
        "dw_unsafe_torn": span(unsafe["torn_pages"]),
        "dw_unsafe_torn_total": f"{int(unsafe['torn_pages'].sum())}",
        "dw_unsafe_failed": ("after every cut" if len(failed) == len(unsafe)
                             else f"after {len(failed)} of {len(unsafe)} cuts"),
        "dw_unsafe_named": named_verdict(run, failed),
        "dw_unsafe_quote": first_line(raw_file(run, "off", failed_cut, ".log"),
                                      "Unable to apply log"),
        "dw_unsafe_read": ("a full scan of the table failed after every cut"
                           if len(unread) == len(unsafe) else
                           f"a full scan of the table failed after {len(unread)} of "
                           f"{len(unsafe)} cuts"),
        # "ERROR 1034 (HY000) at line 1: Index for table ...": the server's words only
        "dw_unsafe_read_error": first_line(raw_file(run, "off", unread_cut, "-read.txt"),
                                           "ERROR").split(": ", 1)[-1],
        "dw_unsafe_unreadable": span(unsafe["rows_unreadable"]),
        "dw_unsafe_runs": runs_text(run, unsafe),
        "dw_unsafe_rows_per_page": f"{per_page:.1f}",
        "dw_unsafe_rows_verdict": (
            "no more than the two rows a page holds" if per_page <= ROWS_PER_PAGE else
            "more than the two rows a page holds, so rows next to a damaged page could not "
            "be read either (the lab does not look into why)"),
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
        "dw_model_error": f"{(torn_total - model_total) / model_total * 100:+.0f} %",
        "dw_hold_updates": str(in_hold),
        "dw_hold_error": more_or_fewer((torn_total - in_hold) / in_hold * 100),
        "dw_hold_apart": f"{hold_apart:.0f}",
    }


def torn_pairs(table: pd.DataFrame) -> str:
    """Per setting, cut by cut, torn pages against the model's: "0 against 13, 9 against 10
    and 21 against 14 with ON; 14 against 16, ... with OFF"."""
    pieces = []
    for label, rows in table.groupby("label", sort=False):
        pairs = [f"{row.torn_pages:.0f} against {row.model_torn_pages:.0f}"
                 for row in rows.sort_values("cut").itertuples()]
        listed = pairs[0] if len(pairs) == 1 else ", ".join(pairs[:-1]) + " and " + pairs[-1]
        pieces.append(f"{listed} with {label.split(' = ')[1]}")
    return "; ".join(pieces)


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


def runs_text(run: RecordedRun, unsafe: pd.DataFrame) -> str:
    """How the unreadable rows lie: in runs of consecutive keys, one per damaged page?"""
    cuts = [(unreadable_runs(run, row), int(row.damaged_pages)) for row in unsafe.itertuples()]
    lengths = {length for runs, _ in cuts for length in runs}
    if all(len(runs) == damaged for runs, damaged in cuts) and len(lengths) == 1:
        return (f"in runs of {lengths.pop()} consecutive keys, one run for each damaged "
                "page")
    return (f"in {sum(len(runs) for runs, _ in cuts)} runs of consecutive keys, "
            f"{min(lengths)} to {max(lengths)} long, for "
            f"{sum(damaged for _, damaged in cuts)} damaged pages")


def updates_in_hold(run: RecordedRun, row) -> int:
    """Updates the client of `row` (of doublewrite_outcomes) had acknowledged within the
    hold before its cut, from its acknowledgement file."""
    hold_s = run.meta["parameters"]["tear_delay_ms"] / 1000
    path = raw_file(run, row.setting.split("=")[1].lower(), row.cut, "-acks.txt")
    return acks_in_window(path, row.cut_after_s, hold_s)


def named_verdict(run: RecordedRun, failed: pd.DataFrame) -> str:
    """Whether, in every cut where recovery failed, its log named (as "unable to apply log to
    corrupted page N in file F") the very pages innochecksum had found torn before it, page
    by page and file by file."""
    named, torn = [], []
    for row in failed.itertuples():
        log = raw_file(run, "off", row.cut, ".log").read_text(errors="replace")
        named.append({(table_file(name), page) for name, page in mariadb.unusable_pages(log)})
        report = raw_file(run, "off", row.cut, "-checksums-before.txt").read_text(
            errors="replace")
        torn.append({(table_file(name), page)
                     for name, pages in innochecksum.invalid_page_numbers(report).items()
                     for page in pages})
    if named == torn:
        return "exactly the pages innochecksum had found torn"
    same = sum(len(n & t) for n, t in zip(named, torn, strict=True))
    return (f"{sum(map(len, named))} pages in all, where innochecksum had found "
            f"{sum(map(len, torn))} torn, {same} of them the same")


def table_file(path: str) -> str:
    """A table file's database folder and name ("lab/pages.ibd"), however a tool spells its
    path ("./lab/pages.ibd" in the server's log, the full path in innochecksum's report)."""
    return "/".join(path.split("/")[-2:])


def rate_figures(table: pd.DataFrame) -> dict[str, str]:
    """The two clients' update rates, and whether one was the slower in every cut."""
    rates = table.pivot_table(index="cut", columns="safety", values="acks_per_second")
    on, off = rates["safe"].median(), rates["unsafe"].median()
    if (rates["safe"] < rates["unsafe"]).all():
        verdict = f"ON was the slower in every cut, by {(1 - on / off) * 100:.0f} % at the median"
    elif (rates["safe"] > rates["unsafe"]).all():
        verdict = "ON was the faster in every cut"
    else:
        verdict = "neither was the faster in every cut"
    return {"dw_safe_rate": f"{on:.0f}", "dw_unsafe_rate": f"{off:.0f}",
            "dw_rate_verdict": verdict}
