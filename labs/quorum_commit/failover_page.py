"""What the quorum-commit page shows of its failover: the two clients' commits through the
loss of zone 1 and the promotion, what each survivor held, and the numbers its text quotes
(from labs/quorum_commit/failover_findings.py).

Pure page code: it reads recorded runs and never touches a VM.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.quorum_commit import failover_findings as found
from labs.records import RecordedRun

EVENT_COLOR = "#D55E00"  # the failover's moments
BIN_S = 0.5  # the chart counts commits per half second
CLIENTS = {"before": "on the old primary", "after": "on the new primary"}
MOMENTS = (("zone 1 lost", "zone 1 lost"), ("survivors counted", "rows counted"),
           ("promoted", "promoted"), ("followed", "others follow"))


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the failover section quotes; empty for a run without a failover."""
    f = found.findings(run)
    if f is None:
        return {}
    return {
        "fo_k": nt.count(f.k),
        "fo_acknowledged": nt.count(f.acknowledged),
        "fo_rate_before": nt.number(f.rate_before, 1),
        "fo_survivors": nt.count(len(f.survivors)),
        "fo_holding_all": nt.count(f.survivors_holding_all),
        "fo_model_holding_all": nt.count(f.model_survivors_holding_all),
        "fo_quorum_after": nt.count(f.quorum_after),
        "fo_last_before_s": nt.number(-f.last_ack_before_kill_s, 1),
        "fo_counted_after_s": nt.number(f.counted_after_s, 1),
        "fo_promote_s": nt.number(f.promoted_after_s - f.counted_after_s, 1),
        "fo_follow_s": nt.number(f.followed_after_s - f.promoted_after_s, 1),
        "fo_first_commit_after_s": nt.number(f.first_commit_after_s, 1),
        "fo_writes_stopped_s": nt.number(f.writes_stopped_s, 1),
        "fo_rate_after": nt.number(f.rate_after, 1),
        "fo_end_copies": nt.count(f.end_copies),
        "fo_end_holding_all": nt.count(f.end_copies_holding_all),
    }


def survivors_table(run: RecordedRun) -> pd.DataFrame:
    """Each survivor once it had replayed the WAL on its disk: what it held."""
    f = found.findings(run)
    return pd.DataFrame([{"standby": s.standby, "zone": s.zone,
                          "WAL received (position)": s.receive_lsn,
                          "acknowledged commits it holds": f"{s.held} of {f.acknowledged}",
                          "rows it holds": s.rows,
                          "promoted": "yes" if s.standby == f.promoted else ""}
                         for s in f.survivors])


def rates(run: RecordedRun) -> pd.DataFrame:
    """Commits acknowledged in each half second, by the client before and the one after."""
    acks = found.acks(run)
    end = found.events(run)["end"]
    bins = range(int(end // BIN_S) + 1)
    tables = []
    for client in ("before", "after"):
        seconds = acks[acks["client"] == client]["seconds"]
        counts = (seconds // BIN_S).astype(int).value_counts().reindex(bins, fill_value=0)
        tables.append(pd.DataFrame({"second": counts.index * BIN_S,
                                    "commits_per_s": counts.to_numpy() / BIN_S,
                                    "client": CLIENTS[client]}))
    return pd.concat(tables, ignore_index=True)


def chart(run: RecordedRun) -> alt.LayerChart:
    """Commits per second through the failover, with the moments the lab marked."""
    f = found.findings(run)
    marks = found.events(run)
    # Each label a line lower than the one before: the moments can be a second apart.
    rules = pd.DataFrame([{"second": marks[key], "event": text, "line": 14 * index}
                          for index, (key, text) in enumerate(MOMENTS)])
    table = rates(run)
    area = alt.Chart(table).mark_area(opacity=0.7, interpolate="step-after").encode(
        x=alt.X("second:Q", title="seconds into the failover"),
        # Headroom above the bars for the moments' labels.
        y=alt.Y("commits_per_s:Q", title="commits acknowledged per second",
                scale=alt.Scale(domain=[0, 1.6 * max(1.0, table["commits_per_s"].max())])),
        color=alt.Color("client:N", title=None, sort=list(CLIENTS.values()),
                        scale=alt.Scale(domain=list(CLIENTS.values()),
                                        range=["#009E73", "#0072B2"]),
                        legend=alt.Legend(orient="top")))
    rule = alt.Chart(rules).mark_rule(color=EVENT_COLOR, strokeDash=[4, 3]).encode(
        x="second:Q")
    text = alt.Chart(rules).mark_text(align="left", dx=4, baseline="top",
                                      color=EVENT_COLOR).encode(
        x="second:Q", y=alt.Y("line:Q", scale=None), text="event:N")
    return (area + rule + text).properties(
        width=560, height=220,
        title=f"The failover: commits per second under ANY {f.k}, then on {f.promoted}")
