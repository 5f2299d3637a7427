"""What the lab page shows of the power-cut drill (power_cut.py): a table, a chart and the
numbers its text quotes, each with the model beside the measurement.

Pure page code: reads a recorded run, never a host. The page shows the companion run named
by data/runs/write-mostly/SHIPPED-power-cut (`--part power-cut`); without it, every figure is
NOT_MEASURED and the chart says so.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import altair as alt
import pandas as pd

from labs.book.theme import MODEL_COLOR
from labs.records import RecordedRun
from labs.write_mostly.cut_blocks import parse_check
from labs.write_mostly.model import power_cut_lost, slow_leg_latency_ms
from labs.write_mostly.params import CUT_SETTINGS, Parameters
from labs.write_mostly.params import POWER_CUT_DRILL as DRILL
from labs.write_mostly.tables import NOT_MEASURED, recorded_scale

SHOWN = {"label": "setting", "cut": "cut", "acknowledged": "acknowledged",
         "acks_per_second": "per s", "flushes_per_write": "flushes per write",
         "max_backlog_before_cut": "most behind", "acknowledged_lost": "lost",
         "model_expected": "model expects", "model_most": "model's most"}
KEPT = ["first_lost", "writing_s", "slow_writes_before_cut", "lost_ranges"]  # for the text
DISPLAY = {"setting": "setting", "acknowledged": "acknowledged",
           "acks_per_second": "acknowledged per second",
           "max_backlog_before_cut": "most held behind", "acknowledged_lost": "lost",
           "model_expected": "lost, the model expects", "model_most": "lost, the model's most"}


def slow_cap_iops(run: RecordedRun) -> float | None:
    """The slow leg's cap in operations per second, as the run recorded it."""
    return run.meta["parameters"].get("slow_cap_iops")


def slow_latency_ms(run: RecordedRun) -> float:
    """The slow leg's latency at queue depth 1 in the chapter's model: its cap's spacing
    plus the dm-delay the run asked for."""
    return slow_leg_latency_ms(slow_cap_iops(run), Parameters.of(run).slow_delay_ms)


def power_cut_table(run: RecordedRun | None) -> pd.DataFrame:
    """One row per setting and cut: what was acknowledged, how fast, what md held behind,
    what the cut took, and what the model expects (power_cut_lost)."""
    if run is None or not (run.results["config"] == DRILL).any():
        return pd.DataFrame(columns=["setting", *SHOWN, *KEPT])
    rows = run.results[run.results["config"] == DRILL]
    table = rows.pivot_table(index=["setting", "cut"], columns="metric", values="value",
                             aggfunc="first").reset_index()
    order = list(CUT_SETTINGS)
    table["cut"] = table["cut"].astype(int)
    table = table.assign(rank=table["setting"].map(order.index)).sort_values(
        ["rank", "cut"]).reset_index(drop=True)
    table["label"] = [CUT_SETTINGS[name].label for name in table["setting"]]
    table["flushes_per_write"] = table["slow_flushes_before_cut"] / table["acknowledged"]
    table["first_lost"] = [_first_lost(run, name, cut, acked) for name, cut, acked
                           in zip(table["setting"], table["cut"], table["acknowledged"],
                                  strict=True)]
    cap, latency = slow_cap_iops(run), slow_latency_ms(run)
    model = [power_cut_lost(CUT_SETTINGS[name].write_behind, rate, cap, latency)
             for name, rate in zip(table["setting"], table["acks_per_second"], strict=True)]
    table["model_most"] = [most for most, _ in model]
    table["model_expected"] = [expected for _, expected in model]
    return table[["setting", *SHOWN, *KEPT]]


def _first_lost(run: RecordedRun, setting: str, cut: int, acknowledged: float) -> float:
    """The oldest acknowledged write the cut took (its block number), from the run's raw
    check; one past the last acknowledgement if it took none."""
    check = parse_check((run.raw_dir / f"power-cut/{setting}-cut{cut}-check.json").read_text())
    return float(check.missing[0][0]) if check.missing else acknowledged + 1


def power_cut_display(run: RecordedRun | None) -> pd.DataFrame:
    """One column per setting, each cell its cuts' figures in order ("28 / 42"): narrow
    enough for the page's column; the chart has them cut by cut."""
    table = power_cut_table(run)
    if table.empty:
        return pd.DataFrame(columns=["cut 1 / cut 2"])

    def cuts(rows: pd.DataFrame, column: str, form: str = ",.0f") -> str:
        return _numbers(rows[column], form)

    shown = []
    for name in dict.fromkeys(table["setting"]):
        rows = _setting(table, name)
        shown.append({"setting": CUT_SETTINGS[name].label,
                      **{column: cuts(rows, column) for column in (
                          "acknowledged", "acks_per_second", "max_backlog_before_cut",
                          "acknowledged_lost", "model_most")},
                      "model_expected": cuts(rows, "model_expected", ".1f")})
    # One column per setting, one row per figure: four narrow columns fit the page.
    return (pd.DataFrame(shown)[list(DISPLAY)].rename(columns=DISPLAY).set_index("setting")
            .T.rename_axis(None, axis=1).reset_index(
                names=" / ".join(f"cut {cut}" for cut in sorted(set(table["cut"])))))


def power_cut_headline(run: RecordedRun) -> pd.DataFrame:
    """labs.book.compare's headline of a power-cut run: per setting, the acknowledged writes
    a cut took (the mean over its cuts) beside the model's expectation."""
    from labs.book.compare import headline_table

    table = power_cut_table(run)
    return headline_table([
        {"measure": "acknowledged writes lost per power cut", "config": CUT_SETTINGS[name].label,
         "value": float(rows["acknowledged_lost"].mean()), "unit": "count", "better": "lower",
         "model": float(rows["model_expected"].mean())}
        for name in dict.fromkeys(table["setting"])
        for rows in [_setting(table, name)]])


def _setting(table: pd.DataFrame, name: str) -> pd.DataFrame:
    return table[table["setting"] == name]


def _numbers(values: Any, form: str = ",.0f") -> str:
    """One figure per cut, as the table's cells show them: "28 / 42"."""
    return " / ".join(f"{v:{form}}".removesuffix(".0") for v in values)


# Every figure of a power-cut run the lab page may quote, NOT_MEASURED without that run.
CUT_KEYS = (
    "cut_run_id", "cut_cuts", "cut_latency", "cut_writing_min", "cut_writing_max",
    "cut_write_s", "cut_cap",
    "cut_wm_dsync_acked", "cut_wm_dsync_rate",
    "cut_wb_dsync_rate", "cut_wb_dsync_backlog", "cut_wb_dsync_flushes",
    "cut_wb_dsync_writes_per_ack", "cut_wb_dsync_expected",
    "cut_wb_nosync_rate", "cut_wb_nosync_backlog", "cut_wb_nosync_expected",
    "cut_wb_nosync_most", "cut_wb_nosync_lost_1", "cut_wb_nosync_lost_2",
    "cut_wb_nosync_outstanding_1", "cut_wb_nosync_outstanding_2",
    "cut_wb_nosync_window_1", "cut_wb_nosync_window_2",
    "cut_wb_nosync_expected_ratio_1", "cut_wb_nosync_expected_ratio_2",
    "cut_wb_nosync_in_order_rate", "cut_wb_nosync_in_order_backlog",
    "cut_wb_nosync_in_order_expected", "cut_wb_nosync_in_order_lost_1",
    "cut_wb_nosync_in_order_lost_2",
)


class OverCuts(NamedTuple):
    """One setting's figures over all its cuts, as the page prints them."""

    acked: str
    rate: str  # acknowledged writes a second, the median cut's
    backlog: str  # md's write-behind counter at its highest before a cut
    flushes: str  # cache flushes per write, the median cut's
    writes_per_ack: str  # writes the slow disk completed per acknowledged write
    expected: str  # the model's expected loss, the mean over cuts
    most: str  # the most the model allows


class OneCut(NamedTuple):
    """One cut of one setting, as the page prints it."""

    lost: str
    outstanding: str  # acknowledged, less what the slow disk had completed: still on its way
    window: str  # how far back the oldest missing write was, in acknowledged writes
    expected_ratio: str  # the model's expected loss over this cut's


def _over_cuts(rows: pd.DataFrame) -> OverCuts:
    per_ack = rows["slow_writes_before_cut"].sum() / rows["acknowledged"].sum()
    return OverCuts(acked=f"{rows['acknowledged'].sum():,.0f}",
                    rate=f"{rows['acks_per_second'].median():,.0f}",
                    backlog=f"{rows['max_backlog_before_cut'].max():,.0f}",
                    flushes=f"{rows['flushes_per_write'].median():.1f}",
                    writes_per_ack=f"{per_ack:.1f}",
                    expected=f"{rows['model_expected'].mean():.1f}",
                    most=f"{rows['model_most'].max():,.0f}")


def _one_cut(rows: pd.DataFrame, cut: int) -> OneCut:
    """Cut `cut` of a setting (all NOT_MEASURED when the run cut it fewer times)."""
    picked = rows[rows["cut"] == cut]
    if picked.empty:
        return OneCut(NOT_MEASURED, NOT_MEASURED, NOT_MEASURED, NOT_MEASURED)
    row = picked.iloc[0]
    lost = row["acknowledged_lost"]
    return OneCut(lost=f"{lost:,.0f}",
                  # The slow disk's counters were read a moment before the cut: roughly.
                  outstanding=f"{row['acknowledged'] - row['slow_writes_before_cut']:,.0f}",
                  window=f"{row['acknowledged'] - row['first_lost'] + 1:,.0f}",
                  expected_ratio=(f"{row['model_expected'] / lost:.1f}" if lost
                                  else NOT_MEASURED))


def power_cut_figures(run: RecordedRun | None,
                      table: pd.DataFrame | None = None) -> dict[str, str]:
    """The numbers the page quotes (CUT_KEYS), per setting and, where a cut matters, per cut
    (keys ending _1, _2); empty without the drill. `table` is the run's power_cut_table when
    the caller has it already."""
    table = power_cut_table(run) if table is None else table
    if table.empty:
        return {}
    f = {"cut_run_id": run.run_id, "cut_cuts": str(table["cut"].max()),
         "cut_latency": f"{slow_latency_ms(run):.0f} ms",
         "cut_writing_min": f"{table['writing_s'].min():.1f} s",
         "cut_writing_max": f"{table['writing_s'].max():.1f} s",
         "cut_write_s": f"{recorded_scale(run.meta)['power_cut_write_s']:g} s",
         "cut_cap": f"{slow_cap_iops(run):,.0f}" if slow_cap_iops(run) else NOT_MEASURED}
    settings = set(table["setting"])
    if "wm-dsync" in settings:
        alone = _over_cuts(_setting(table, "wm-dsync"))
        f.update({"cut_wm_dsync_acked": alone.acked, "cut_wm_dsync_rate": alone.rate})
    if "wb-dsync" in settings:
        f.update(_wb_dsync_figures(_setting(table, "wb-dsync")))
    if "wb-nosync" in settings:
        f.update(_wb_nosync_figures(_setting(table, "wb-nosync")))
    if "wb-nosync-in-order" in settings:
        f.update(_in_order_figures(_setting(table, "wb-nosync-in-order")))
    return f


def _wb_dsync_figures(rows: pd.DataFrame) -> dict[str, str]:
    """Write-behind with O_DSYNC: the writer's pace, the slow disk's flushes per write."""
    over = _over_cuts(rows)
    return {"cut_wb_dsync_rate": over.rate, "cut_wb_dsync_backlog": over.backlog,
            "cut_wb_dsync_flushes": over.flushes,
            "cut_wb_dsync_writes_per_ack": over.writes_per_ack,
            "cut_wb_dsync_expected": over.expected}


def _wb_nosync_figures(rows: pd.DataFrame) -> dict[str, str]:
    """Write-behind, no sync: over the cuts, and cut by cut against the model."""
    over, first, second = _over_cuts(rows), _one_cut(rows, 1), _one_cut(rows, 2)
    return {"cut_wb_nosync_rate": over.rate, "cut_wb_nosync_backlog": over.backlog,
            "cut_wb_nosync_expected": over.expected, "cut_wb_nosync_most": over.most,
            "cut_wb_nosync_lost_1": first.lost, "cut_wb_nosync_lost_2": second.lost,
            "cut_wb_nosync_outstanding_1": first.outstanding,
            "cut_wb_nosync_outstanding_2": second.outstanding,
            "cut_wb_nosync_window_1": first.window, "cut_wb_nosync_window_2": second.window,
            "cut_wb_nosync_expected_ratio_1": first.expected_ratio,
            "cut_wb_nosync_expected_ratio_2": second.expected_ratio}


def _in_order_figures(rows: pd.DataFrame) -> dict[str, str]:
    """Write-behind, no sync, blocks in order: the pace, the backlog, what each cut took."""
    over = _over_cuts(rows)
    return {"cut_wb_nosync_in_order_rate": over.rate,
            "cut_wb_nosync_in_order_backlog": over.backlog,
            "cut_wb_nosync_in_order_expected": over.expected,
            "cut_wb_nosync_in_order_lost_1": _one_cut(rows, 1).lost,
            "cut_wb_nosync_in_order_lost_2": _one_cut(rows, 2).lost}


def page_cut_figures(run: RecordedRun | None) -> dict[str, str]:
    """power_cut_figures for the lab page: every name it may quote (CUT_KEYS), NOT_MEASURED
    where the run (or a shorter profile's fewer cuts or settings) has none."""
    return {**dict.fromkeys(CUT_KEYS, NOT_MEASURED), **power_cut_figures(run)}


def cuts_with_gaps(table: pd.DataFrame, name: str) -> list[int]:
    """The cuts of this setting whose missing writes were not one unbroken run of the newest:
    the slow disk kept some later writes without some earlier ones."""
    table = _setting(table, name)
    gaps = (table["acknowledged_lost"] > 0) & (
        (table["lost_ranges"] > 1) | (table["first_lost"] + table["acknowledged_lost"] - 1
                                      != table["acknowledged"]))
    return [int(cut) for cut in table.loc[gaps, "cut"]]



def power_cut_chart(run: RecordedRun | None) -> alt.TopLevelMixin:
    """Lost acknowledged writes per cut, beside the model's expectation (diamond) and the
    most it allows (tick)."""
    table = power_cut_table(run)
    if table.empty:
        return alt.Chart(pd.DataFrame({"text": ["This run has no power-cut drill."]})).mark_text(
            fontSize=13, align="left", x=5).encode(text="text:N").properties(width=420,
                                                                            height=30)
    table = table.assign(row=[f"{label}, cut {cut}" for label, cut
                              in zip(table["label"], table["cut"], strict=True)])
    y = alt.Y("row:N", title=None, sort=list(table["row"]), axis=alt.Axis(labelLimit=300))
    tooltip = [alt.Tooltip("row:N", title="cut"),
               alt.Tooltip("acknowledged:Q", format=",.0f", title="acknowledged"),
               alt.Tooltip("acknowledged_lost:Q", format=",.0f", title="lost"),
               alt.Tooltip("max_backlog_before_cut:Q", format=",.0f", title="most held behind"),
               alt.Tooltip("model_expected:Q", format=",.1f", title="model: expected"),
               alt.Tooltip("model_most:Q", format=",.0f", title="model: at most")]
    top = max(300.0, float(table["model_most"].max()) * 1.1,
              float(table["acknowledged_lost"].max()) * 1.1)
    bars = alt.Chart(table).mark_bar(color="#d95f02").encode(
        x=alt.X("acknowledged_lost:Q", title="acknowledged writes missing after the cut",
                scale=alt.Scale(domain=[0, top], nice=False)), y=y, tooltip=tooltip)
    most = alt.Chart(table).mark_tick(color=MODEL_COLOR, thickness=2, size=16).encode(
        x="model_most:Q", y=y, tooltip=tooltip)
    expected = alt.Chart(table).mark_point(color=MODEL_COLOR, shape="diamond", filled=True,
                                           size=60).encode(x="model_expected:Q", y=y,
                                                           tooltip=tooltip)
    return alt.layer(bars, most, expected).properties(
        width=300, height=alt.Step(20),
        title=alt.Title("The instance's power cut, cut by cut",
                        subtitle="bars: measured; diamond: what the model expects; tick: "
                                 "the most it allows"))
