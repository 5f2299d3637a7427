"""The write path's explanation page: the model as a chart and a table (page side)."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book.tables import wrapping_table
from labs.book.theme import dropdown, slider
from labs.power_loss import write_path as model

DEFAULT_FAULT = "power cut"
DEFAULT_DEVICE_CACHE = "volatile"
DEFAULT_WRITES_PER_S = 100
DEFAULT_INTERVAL_MS = 1000


def _coefficients(policy: model.Policy, fault: str, device_cache: str) -> dict[str, object]:
    """A policy's window as a + b * T, so that the browser can recompute it for any T."""
    holds = policy.volatile_holds(fault, device_cache)
    return {
        "policy": policy.name, "example": policy.example, "fault": fault,
        "device_cache": device_cache,
        "longest_fixed_s": sum(h.longest_s for h in holds),
        "longest_per_interval": sum(h.per_interval for h in holds),
        "layers": ", ".join(h.layer for h in holds) or "none",
    }


def exposure_table() -> pd.DataFrame:
    """Every policy under every fault and device cache: the terms of its window."""
    return pd.DataFrame([_coefficients(policy, fault, cache) for policy in model.POLICIES
                         for fault in model.FAULTS for cache in model.DEVICE_CACHES])


def loss_chart(table: pd.DataFrame | None = None) -> alt.LayerChart:
    """The most acknowledged writes one fault can take, per way of writing (the model)."""
    table = exposure_table() if table is None else table
    params = [
        dropdown("fault", DEFAULT_FAULT, list(model.FAULTS), label="fault"),
        dropdown("cache", DEFAULT_DEVICE_CACHE, list(model.DEVICE_CACHES),
                 label="device write cache"),
        slider("rate", DEFAULT_WRITES_PER_S, 10, 1000, step=10, label="writes per second"),
        slider("interval_ms", DEFAULT_INTERVAL_MS, 100, 5000, step=100,
               label="background flush every T (ms)"),
    ]
    order = [policy.name for policy in model.POLICIES]
    base = alt.Chart(table).transform_filter(
        "datum.fault == fault && datum.device_cache == cache"
    ).transform_calculate(
        window_s="datum.longest_fixed_s + datum.longest_per_interval * interval_ms / 1000",
        most="rate * datum.window_s",
        label="format(datum.most, ',.0f')",
    ).encode(y=alt.Y("policy:N", sort=order, title=None, axis=alt.Axis(labelLimit=260)))
    tooltip = [alt.Tooltip("policy:N"), alt.Tooltip("example:N", title="for example"),
               alt.Tooltip("layers:N", title="lost from"),
               alt.Tooltip("window_s:Q", title="window (s)", format=",.1f"),
               alt.Tooltip("most:Q", title="at most lost", format=",.0f")]
    # A symmetric log scale: 0 stays on the axis, and 5 and 5,000 are both readable.
    x = alt.X("most:Q", title="most acknowledged writes one fault takes (log scale)",
              scale=alt.Scale(type="symlog", domain=[0, 40_000]),
              axis=alt.Axis(values=[0, 10, 100, 1_000, 10_000], format=",.0f"))
    bars = base.mark_bar(color="#000000", opacity=0.75).encode(x=x, tooltip=tooltip)
    labels = base.mark_text(align="left", dx=4, color="#333333").encode(x=x, text="label:N")
    return (bars + labels).add_params(*params).properties(
        width=420, height=230, title={
            "text": "The most one fault can take, by the way the writes were made",
            "subtitle": "the model: writes per second times the window"})


def fault_table(interval_s: float = DEFAULT_INTERVAL_MS / 1000) -> pd.DataFrame:
    """Each policy's window under each fault, with a volatile device cache (seconds)."""
    rows = []
    for policy in model.POLICIES:
        row = {"Way of writing": policy.name, "For example": policy.example}
        for fault in model.FAULTS:
            window = model.window_s(policy.name, fault, "volatile", interval_s)
            row[fault] = "none" if window == 0 else f"up to {window:g} s"
        rows.append(row)
    return pd.DataFrame(rows)


def fault_table_styled():
    """The fault table as the page shows it: headers that wrap, nothing wider than the page."""
    return wrapping_table(fault_table())


# The rates the page's text and exercises use (writes a second).
EXAMPLE_WRITES_PER_S = DEFAULT_WRITES_PER_S
EXERCISE_WRITES_PER_S = 50


def explain_figures() -> dict[str, str]:
    """Every number the explanation quotes, computed from the model."""
    write_only = ("write() only", "power cut", "volatile", 0.0)
    return {
        "dirty_expire_s": f"{model.DIRTY_EXPIRE_S:g}",
        "writeback_period_s": f"{model.WRITEBACK_PERIOD_S:g}",
        "journal_commit_s": f"{model.JOURNAL_COMMIT_S:g}",
        "write_only_page_longest_s": f"{model.PAGE_CACHE.longest_s:g}",
        "write_only_window_s": f"{model.window_s(*write_only):g}",
        "table_interval_s": f"{DEFAULT_INTERVAL_MS / 1000:g}",
        "example_rate": f"{EXAMPLE_WRITES_PER_S:,}",
        "example_write_only_most": f"{model.most_lost(EXAMPLE_WRITES_PER_S, *write_only):,.0f}",
        "ex_rate": f"{EXERCISE_WRITES_PER_S:,}",
        "ex_rate_most": f"{model.most_lost(EXERCISE_WRITES_PER_S, *write_only):,.0f}",
    }
