"""How the DRBD lab page words its numbers: the formats it prints them in, and the
sentences that depend on the recorded run (labs/drbd/figures.py computes the numbers)."""

from __future__ import annotations

import pandas as pd


def ms_text(value: float) -> str:
    return f"{value:.1f}" if value >= 1 else f"{value:.2f}"


def error_span(errors_pct: pd.Series) -> str:
    """Where a protocol's points fell against the model: "below the model by 6 to 19 %",
    "above ...", or "within 19 % of the model" when on both sides."""
    if errors_pct.empty:
        return "not measured"
    low, high = errors_pct.abs().min(), errors_pct.abs().max()
    if (errors_pct < 0).all():
        return f"below the model by {low:.0f} to {high:.0f} %"
    if (errors_pct > 0).all():
        return f"above the model by {low:.0f} to {high:.0f} %"
    return f"within {high:.0f} % of the model"


def commit_sentence(drill: pd.DataFrame, protocol: str) -> str:
    """How many round trips the drill's commits paid under `protocol`: the time per commit
    beyond the same loop's under A (which does not wait for the peer, so its time is the
    client's and PostgreSQL's own on these processors), in round trips of the link."""
    row = drill.loc[protocol]
    commit_ms = 1000 / row["commits_per_s"]
    if "A" not in drill.index:
        return (f"Its one client committed every {ms_text(commit_ms)} ms; this run has no drill "
                "under A to tell the client's own time per commit from the mirror's.")
    own_ms = 1000 / drill.loc["A", "commits_per_s"]
    trips = (commit_ms - own_ms) / row["rtt_ms"]
    paid = ("close to two" if trips >= 1.8 else "between one and two" if trips > 1.2
            else "about one")
    text = (f"Its one client committed every {ms_text(commit_ms)} ms, "
            f"{ms_text(commit_ms - own_ms)} ms more than the same loop under A "
            f"({ms_text(own_ms)} ms, what a commit takes on these emulated machines without "
            f"waiting for the peer, as A does not wait for it): {trips:.1f} round trips of "
            f"{ms_text(row['rtt_ms'])} ms. PostgreSQL's commit, a log write and then a flush "
            f"through ext4, paid {paid}, where fio's write and flush added up to two")
    if trips <= 1.2:
        return text + ": the run suggests that the file system and DRBD spared it most of " \
                      "the flush's second trip, without showing how."
    return text + ". The run does not show how much of the flush's trip the file system " \
                  "and DRBD spared it."


def mib_s_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else (f"{value:.1f}" if value >= 1 else f"{value:.2f}")
