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
from labs.write_mostly.cut_blocks import parse_check
from labs.write_mostly.model import HELD_TO_THE_SLOW_PACE, power_cut_lost, slow_leg_latency_ms
from labs.write_mostly.params import CUT_SETTINGS
from labs.write_mostly.params import POWER_CUT_DRILL as DRILL

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
    """One column per setting, each cell its cuts' figures in order ("28 / 42"): narrow
    enough for the page's column; the chart has them cut by cut."""
    table = power_cut_table(run)
    if table.empty:
        return pd.DataFrame(columns=["cut 1 / cut 2"])

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
    """'17', '17 and 40', '17, 40 and 3' (small numbers with `form` as given; whole ones
    without a decimal)."""
    words = [f"{v:{form}}".removesuffix(".0") for v in values]
    return " and ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else words[0]


def power_cut_figures(run: RecordedRun | None,
                      table: pd.DataFrame | None = None) -> dict[str, str]:
    """The numbers the paragraph quotes, per setting (empty without the drill); `table` is
    the run's power_cut_table when the caller has it already."""
    table = power_cut_table(run) if table is None else table
    if table.empty:
        return {}
    f = {"cuts": str(table["cut"].max()), "latency": f"{slow_latency_ms(run):.0f} ms",
         "writing": f"{table['writing_s'].min():.1f} to {table['writing_s'].max():.1f} s",
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
        # How far back the oldest missing write was, counted in acknowledged writes, per cut.
        f[f"{key}_window_writes"] = _numbers(rows["acknowledged"] - rows["first_lost"] + 1)
        per_ack = rows["slow_writes_before_cut"].sum() / rows["acknowledged"].sum()
        f[f"{key}_writes_per_ack"] = f"{per_ack:.1f}"
        # Acknowledged by the cut, less what the slow disk had completed when the lab read its
        # counters a moment before: the writes still on their way, roughly.
        f[f"{key}_outstanding"] = _numbers(rows["acknowledged"] - rows["slow_writes_before_cut"])
        f[f"{key}_error"] = _numbers(rows["model_expected"] / rows["acknowledged_lost"].clip(
            lower=1), ".1f")
    return f


def cuts_with_gaps(table: pd.DataFrame, name: str) -> list[int]:
    """The cuts of this setting whose missing writes were not one unbroken run of the newest:
    the slow disk kept some later writes without some earlier ones."""
    table = _setting(table, name)
    gaps = (table["acknowledged_lost"] > 0) & (
        (table["lost_ranges"] > 1) | (table["first_lost"] + table["acknowledged_lost"] - 1
                                      != table["acknowledged"]))
    return [int(cut) for cut in table.loc[gaps, "cut"]]


def _held(table: pd.DataFrame, name: str, cap: float | None) -> bool:
    """Whether this setting's writer kept (in its median cut) to the slow disk's pace: the
    model's writer that outruns the slow leg (model.HELD_TO_THE_SLOW_PACE)."""
    rate = _setting(table, name)["acks_per_second"].median()
    return bool(cap) and rate >= HELD_TO_THE_SLOW_PACE * cap


def power_cut_text(run: RecordedRun | None) -> str:
    """The section's paragraphs: what each setting lost, against the model, or how to record
    the drill. Every word that depends on the run is chosen from the run."""
    table = power_cut_table(run)
    f = power_cut_figures(run, table)
    if not f or "wm_dsync_acked" not in f or "wb_nosync_acked" not in f:
        return ("The book does not ship a run of this drill yet: it needs a lab VM, whose "
                f"power it cuts. Record one with {COMMAND}.")
    cap = slow_cap_iops(run)
    cuts = f"{f['cuts']} cuts" if f["cuts"] != "1" else "one cut"
    safe_lost = f["wm_dsync_lost_total"] != "0"
    write_s = run.meta["parameters"]["profile_settings"]["power_cut_write_s"]
    parts = [_run_sentence(run, f, cuts, write_s), _write_mostly_paragraph(f, cuts, safe_lost)]
    if "wb_dsync_acked" in f:
        parts.append(_dsync_paragraph(f, _held(table, "wb-dsync", cap)))
    held = _held(table, "wb-nosync", cap)
    nosync = _setting(table, "wb-nosync")
    parts.append(_nosync_paragraph(table, f, held, nosync))
    if "wb_nosync_in_order_acked" in f:
        parts.append(_in_order_paragraph(table, f, held, nosync, cap))
    return "\n\n".join(parts)


def _run_sentence(run: RecordedRun, f: dict[str, str], cuts: str, write_s: float) -> str:
    return (f"The run is `{run.run_id}`, recorded with `--part power-cut` and the "
            f"{run.meta['parameters']['profile']} profile: {cuts} per setting, each after "
            f"{f['writing']} of writing (a moment drawn in the last third of {write_s:g} s).")


def _write_mostly_paragraph(f: dict[str, str], cuts: str, safe_lost: bool) -> str:
    return (f"**Write-mostly alone.** Each O_DSYNC write waited for the slow disk, "
            f"{f['wm_dsync_rate']} acknowledged per second; the {cuts} took "
            f"{f['wm_dsync_lost_total']} of {f['wm_dsync_acked']} acknowledged writes"
            + (", though the model says none: something below md acknowledged writes it had "
               "not kept." if safe_lost else ", as the model says: none."))


def _dsync_paragraph(f: dict[str, str], held: bool) -> str:
    return (f"**Write-behind, O_DSYNC.** The writer went {f['wb_dsync_rate']} per second. "
            f"For each acknowledged write the slow disk completed {f['wb_dsync_flushes']} "
            f"cache flushes and {f['wb_dsync_writes_per_ack']} writes (the run does not say "
            "what the second write was). "
            + (f"The writer kept to the slow disk's cap of {f['cap']} per second, where the "
               "model puts a writer that outruns the slow leg. " if held
               else f"Its {f['wb_dsync_rate']} per second are below the slow disk's cap of "
               f"{f['cap']}: W < S in the chapter's model, so the backlog never fills, and "
               f"each write is behind only while the slow disk takes it ({f['latency']} in "
               "the model), which leaves about W × that behind at any moment. ")
            + f"md held at most {f['wb_dsync_backlog']} behind, and the cuts took "
            f"{f['wb_dsync_lost']} acknowledged writes (the model expects "
            f"{f['wb_dsync_expected']}).")


def _nosync_paragraph(table: pd.DataFrame, f: dict[str, str], held: bool,
                      nosync: pd.DataFrame) -> str:
    below_limit = nosync["max_backlog_before_cut"].max() < nosync["model_most"].max()
    gaps = cuts_with_gaps(table, "wb-nosync")
    return (
        "**Write-behind, no sync.** Without a flush per write the writer "
        + (f"kept to the slow disk's pace, {f['wb_nosync_rate']} per second against a cap of "
           f"{f['cap']}, which the model would explain by a writer that outruns the slow leg and "
           f"a backlog that fills to the limit of {f['wb_nosync_most']} and drains. The "
           f"model then expects half the limit, {f['wb_nosync_expected']}, behind at a "
           f"moment chosen at random. The cuts took {f['wb_nosync_lost']}: the model expects "
           f"{f['wb_nosync_error']} times that. " if held else
           f"went {f['wb_nosync_rate']} per second, below the slow disk's cap of {f['cap']}; "
           f"the cuts took {f['wb_nosync_lost']} (the model expects "
           f"{f['wb_nosync_expected']}). ")
        + (f"md's own counter peaked at {f['wb_nosync_backlog']}, below the limit, so the "
           "backlog never filled as the model assumes; this run does not say why (the "
           "writer's own pace, without the slow disk, was not measured). " if held
           and below_limit else "")
        + "A cross-check: the writes acknowledged by the cut, less those the slow disk had "
        f"completed when the lab read its counters a moment before, were "
        f"{f['wb_nosync_outstanding']}, against {f['wb_nosync_lost']} lost."
        + (f" In cut {' and '.join(map(str, gaps))} the missing writes were not one unbroken "
           "run of the newest: the slow disk held some later writes without some earlier "
           "ones, a state the writer never saw." if gaps else
           " The missing writes were the newest ones: the slow disk held an older state, "
           "behind what the writer had been told.")
        + f" Cut by cut, every missing write was among the last "
        f"{f['wb_nosync_window_writes']} acknowledged.")


def _in_order_paragraph(table: pd.DataFrame, f: dict[str, str], held: bool,
                        nosync: pd.DataFrame, cap: float | None) -> str:
    """The setting that differs from write-behind without sync only in its blocks' order;
    `held` says whether that one kept to the slow disk's pace."""
    order = _setting(table, "wb-nosync-in-order")["max_backlog_before_cut"].max()
    shuffled = nosync["max_backlog_before_cut"].max()
    slower = held and not _held(table, "wb-nosync-in-order", cap)
    return (
        "**The same, blocks in order.** Only the order differs from the last setting. "
        f"The writer went {f['wb_nosync_in_order_rate']} per second, md held at most "
        f"{f['wb_nosync_in_order_backlog']} behind, and the cuts took "
        f"{f['wb_nosync_in_order_lost']} (the model, from that rate, expects "
        f"{f['wb_nosync_in_order_expected']})."
        + (" The order alone kept the writer below the slow disk's pace and the backlog "
           "nearly empty. The likely reason is in md: it keeps a write to the "
           "write-mostly disk from passing one still on its way that it overlaps, and "
           "its check counted a write that only touches the next one as overlapping, so "
           "a writer going in order waits for the slow disk at nearly every write "
           f"({KERNEL_FIX} corrects the check; the lab has not run a kernel with the fix)."
           if slower and order * 10 <= shuffled else ""))


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
