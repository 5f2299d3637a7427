"""What the lab page shows of the power-cut drill (power_cut.py): a table, a chart and a
paragraph, each with the model beside the measurement.

Pure page code: reads a recorded run, never a host. The page shows the companion run named
by data/runs/write-mostly/SHIPPED-power-cut (`--part power-cut`); without it, one sentence
says so and gives the command that records it.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from labs.records import RecordedRun
from labs.write_mostly.model import HELD_TO_THE_SLOW_PACE, power_cut_lost, slow_leg_latency_ms
from labs.write_mostly.power_cut import CUT_SETTINGS, DRILL, parse_check

MODEL_COLOR = "#000000"
COMMAND = "`python -m labs run write-mostly --host vm1 --part power-cut`"
# What the paragraph cites for md's handling of neighbouring writes behind.
KERNEL_FIX = ("[*md/raid1: fix the comparing region of interval tree*, Xiao Ni, linux-raid, "
              "March 2026](https://lore.kernel.org/linux-raid/20260305011839.5118-2-xni@"
              "redhat.com/)")
SHOWN = {"label": "setting", "cut": "cut", "acknowledged": "acknowledged",
         "acks_per_second": "per s", "flushes_per_write": "flushes per write",
         "max_backlog_before_cut": "most behind", "acknowledged_lost": "lost",
         "model_expected": "model expects", "model_most": "model's most"}
KEPT = ["first_lost", "lost_window_ms"]  # in the table for the paragraph, not shown
DISPLAY = {"setting": "setting", "acknowledged": "acknowledged", "acks_per_second": "per s",
           "max_backlog_before_cut": "most behind", "acknowledged_lost": "lost",
           "model_expected": "model expects", "model_most": "model's most"}


def slow_cap_iops(run: RecordedRun) -> float | None:
    """The slow leg's cap in operations per second, as the run recorded it."""
    return run.meta["parameters"].get("slow_cap_iops")


def slow_latency_ms(run: RecordedRun) -> float:
    """The slow leg's latency at queue depth 1 in the chapter's model: its cap's spacing
    plus the dm-delay the run asked for."""
    return slow_leg_latency_ms(slow_cap_iops(run), run.meta["parameters"]["slow_delay_ms"])


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
    """One row per setting, each cell its cuts' figures in order ("28 / 42"): narrow enough
    for the page's column; the chart has them cut by cut."""
    table = power_cut_table(run)
    if table.empty:
        return pd.DataFrame(columns=list(DISPLAY.values()))

    def cuts(rows: pd.DataFrame, column: str, form: str = ",.0f") -> str:
        return " / ".join(_numbers([v], form) for v in rows[column])

    shown = []
    for name in dict.fromkeys(table["setting"]):
        rows = _setting(table, name)
        shown.append({"setting": CUT_SETTINGS[name].label,
                      **{column: cuts(rows, column) for column in (
                          "acknowledged", "acks_per_second", "max_backlog_before_cut",
                          "acknowledged_lost", "model_most")},
                      "model_expected": cuts(rows, "model_expected", ".1f")})
    return pd.DataFrame(shown)[list(DISPLAY)].rename(columns=DISPLAY)


def _setting(table: pd.DataFrame, name: str) -> pd.DataFrame:
    return table[table["setting"] == name]


def _numbers(values: Any, form: str = ",.0f") -> str:
    """'17', '17 and 40', '17, 40 and 3' (small numbers with `form` as given; whole ones
    without a decimal)."""
    words = [f"{v:{form}}".removesuffix(".0") for v in values]
    return " and ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else words[0]


def power_cut_figures(run: RecordedRun | None) -> dict[str, str]:
    """The numbers the paragraph quotes, per setting (empty without the drill)."""
    table = power_cut_table(run)
    if table.empty:
        return {}
    f = {"cuts": str(table["cut"].max()), "latency": f"{slow_latency_ms(run):.0f} ms",
         "cap": f"{slow_cap_iops(run):,.0f}" if slow_cap_iops(run) else "no cap"}
    for name in CUT_SETTINGS:
        rows = _setting(table, name)
        if rows.empty:
            continue
        key = name.replace("-", "_")
        f[f"{key}_acked"] = f"{rows['acknowledged'].sum():,.0f}"
        f[f"{key}_lost"] = _numbers(rows["acknowledged_lost"])
        f[f"{key}_lost_total"] = f"{rows['acknowledged_lost'].sum():,.0f}"
        f[f"{key}_rate"] = f"{rows['acks_per_second'].median():,.0f}"
        f[f"{key}_backlog"] = f"{rows['max_backlog_before_cut'].max():,.0f}"
        f[f"{key}_half_backlog"] = f"{rows['max_backlog_before_cut'].max() / 2:,.0f}"
        f[f"{key}_flushes"] = f"{rows['flushes_per_write'].median():.1f}"
        f[f"{key}_expected"] = _numbers(rows["model_expected"].unique(), ".1f")
        f[f"{key}_most"] = f"{rows['model_most'].max():,.0f}"
        # How far back the oldest missing write was: in writes, and in time before the cut.
        f[f"{key}_window_writes"] = f"{(rows['acknowledged'] - rows['first_lost'] + 1).max():,.0f}"
        f[f"{key}_window_ms"] = f"{rows['lost_window_ms'].max():,.0f}"
    return f


def lost_were_the_newest(run: RecordedRun, name: str) -> bool | None:
    """Whether every cut of this setting lost only its newest acknowledged writes (one
    unbroken run of block numbers ending at the last acknowledgement); None if it lost none."""
    rows = run.results[(run.results["config"] == DRILL) & (run.results["setting"] == name)]
    by = rows.pivot_table(index="cut", columns="metric", values="value", aggfunc="first")
    lost = by[by["acknowledged_lost"] > 0]
    if lost.empty:
        return None
    return bool(((lost["lost_ranges"] == 1)
                 & (lost["newest_found"] == lost["acknowledged"] - lost["acknowledged_lost"])
                 ).all())


def _held(table: pd.DataFrame, name: str, cap: float | None) -> bool:
    """Whether this setting's writer kept (in its median cut) to the slow disk's pace: the
    model's writer that outruns the slow leg (model.HELD_TO_THE_SLOW_PACE)."""
    rate = _setting(table, name)["acks_per_second"].median()
    return bool(cap) and rate >= HELD_TO_THE_SLOW_PACE * cap


def power_cut_text(run: RecordedRun | None) -> str:
    """The section's paragraphs: what each setting lost, against the model, or how to record
    the drill. Every word that depends on the run is chosen from the run."""
    f = power_cut_figures(run)
    if not f or "wm_dsync_acked" not in f or "wb_nosync_acked" not in f:
        return ("The book does not ship a run of this drill yet: it needs a lab VM, whose "
                f"power it cuts. Record one with {COMMAND}.")
    table, cap = power_cut_table(run), slow_cap_iops(run)
    cuts = f"{f['cuts']} cuts" if f["cuts"] != "1" else "one cut"
    safe_lost = f["wm_dsync_lost_total"] != "0"
    parts = [
        f"The run is `{run.run_id}`, recorded with `--part power-cut` and the "
        f"{run.meta['parameters']['profile']} profile: {cuts} per setting, each after about "
        f"{run.meta['parameters']['profile_settings']['power_cut_write_s']:g} s of writing.",
        f"**Write-mostly alone.** Each O_DSYNC write waited for the slow disk, "
        f"{f['wm_dsync_rate']} acknowledged per second; the {cuts} took "
        f"{f['wm_dsync_lost_total']} of {f['wm_dsync_acked']} acknowledged writes"
        + (", though the model says none: something below md acknowledged writes it had "
           "not kept." if safe_lost else ", as the model says: none.")]
    if "wb_dsync_acked" in f:
        held = _held(table, "wb-dsync", cap)
        parts.append(
            f"**Write-behind, O_DSYNC.** The writer went {f['wb_dsync_rate']} per second, "
            f"and every write still sent the slow disk a cache flush ({f['wb_dsync_flushes']} "
            "per write). "
            + (f"It kept to the slow disk's cap of {f['cap']} per second, where the model "
               "puts a writer that outruns the slow leg: the backlog fills and drains. " if held
               else f"That is below the slow disk's cap of {f['cap']} per second: W < S in "
               "the chapter's model, so the backlog never fills, and each write is behind "
               f"only while the slow disk takes it ({f['latency']} in the model), which "
               "leaves about W × that behind at any moment. ")
            + f"md held at most {f['wb_dsync_backlog']} behind, and the cuts took "
            f"{f['wb_dsync_lost']} acknowledged writes (the model expects "
            f"{f['wb_dsync_expected']}).")
    newest = lost_were_the_newest(run, "wb-nosync")
    held = _held(table, "wb-nosync", cap)
    full_below = (_setting(table, "wb-nosync")["max_backlog_before_cut"].max()
                  < _setting(table, "wb-nosync")["model_most"].max())
    parts.append(
        "**Write-behind, no sync.** Without a flush per write the writer "
        + (f"reached the slow disk's pace, {f['wb_nosync_rate']} per second against a cap of "
           f"{f['cap']}, which is where the model puts a writer that outruns it: the backlog "
           "fills and drains in cycles. " if held else
           f"went {f['wb_nosync_rate']} per second, below the slow disk's cap of {f['cap']}. ")
        + (f"The model allows at most {f['wb_nosync_most']}, the write-behind limit, and "
           f"expects half of it, {f['wb_nosync_expected']}, at a moment chosen at random, if "
           "the backlog fills to the limit. "
           + (f"It did not quite: md's own counter reached {f['wb_nosync_backlog']} at most "
              f"before the cut, which makes half of that, {f['wb_nosync_half_backlog']}, the "
              "better guess. " if full_below else "")
           + f"The cuts took {f['wb_nosync_lost']} acknowledged writes; each cut is one draw "
           "between none and the top of the backlog." if held else
           f"md held up to {f['wb_nosync_backlog']} writes behind, and the cuts took "
           f"{f['wb_nosync_lost']} acknowledged writes (the model expects "
           f"{f['wb_nosync_expected']}).")
        + (" The missing writes were always the newest ones: the network disk held an "
           "older, consistent state, behind what the writer had been told." if newest else "")
        + (" The missing writes were not only the newest: the network disk held some later "
           "writes without some earlier ones, a state the writer never saw, though every "
           f"missing write was among the last {f['wb_nosync_window_writes']} acknowledged "
           f"(within {f['wb_nosync_window_ms']} ms of the cut)." if newest is False else ""))
    if "wb_nosync_in_order_acked" in f:
        order = _setting(table, "wb-nosync-in-order")["max_backlog_before_cut"].max()
        shuffled = _setting(table, "wb-nosync")["max_backlog_before_cut"].max()
        slower = _held(table, "wb-nosync", cap) and not _held(table, "wb-nosync-in-order", cap)
        parts.append(
            "**The same, blocks in order.** Only the order differs from the last setting. "
            f"The writer went {f['wb_nosync_in_order_rate']} per second, md held at most "
            f"{f['wb_nosync_in_order_backlog']} behind, and the cuts took "
            f"{f['wb_nosync_in_order_lost']} (the model, from that rate, expects "
            f"{f['wb_nosync_in_order_expected']})."
            + (" The order alone kept the writer below the slow disk's pace and the backlog "
               "nearly empty. md keeps a write to the write-mostly disk from passing one "
               "still on its way that it overlaps, and its check counted a write that only "
               "touches the next one as overlapping, so a writer going in order waits for the "
               f"slow disk at nearly every write ({KERNEL_FIX} corrects the check)."
               if slower and order * 10 <= shuffled else ""))
    return "\n\n".join(parts)


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
               alt.Tooltip("model_expected:Q", format=",.0f", title="model: expected"),
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
