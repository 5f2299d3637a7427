"""The DRBD chapter's charts (Altair), drawn from the tables in explain.py (and page.py).

Every control is an Altair parameter bound to an input, evaluated in the browser.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book.theme import slider

PROTOCOL_RANGE = ["#009E73", "#E69F00", "#D55E00"]
PROTOCOL_COLOURS = alt.Scale(domain=["A", "B", "C"], range=PROTOCOL_RANGE)
# A dotted, B dashed, C solid: where two protocols take the same time both stay visible.
PROTOCOL_DASHES = alt.Scale(domain=["A", "B", "C"], range=[[2, 3], [7, 3], [1, 0]])
ARTICLE_COLOUR = "#555555"

# --- the explanation page ---

# The model's write latency from explain.protocol_paths()'s two columns, in Vega's expression
# language (tests/test_drbd_explain.py evaluates the same strings against the model).
LATENCY_EXPR = "max(LOCAL, datum.network_ms + datum.peer_writes * PEER)"
COMMIT_EXPR = "max(DISK, datum.network_ms + datum.peer_writes * DISK)"
RATIO_PCT_EXPR = "100 * (WORK + DISK) / (WORK + datum.commit_ms)"
# Where protocol C's curve meets a ratio r (in %): the round trip a transaction of
# WORK + DISK ms may add, (WORK + DISK) x (1 / r - 1), as drbd.model.added_commit_ms_for_ratio.
CROSSING_EXPR = "(WORK + DISK) * (100 / datum.ratio_pct - 1)"


def _rtt_axis(max_ms: float) -> alt.X:
    return alt.X("rtt_ms:Q", title="network round trip (ms)",
                 scale=alt.Scale(domain=[0, max_ms], nice=False))


def latency_chart(paths: pd.DataFrame, local_ms: float = 3, peer_ms: float = 3) -> alt.Chart:
    """One write's latency by round trip under A, B and C, with sliders for the two disks."""
    params = [slider("LOCAL", local_ms, 0.1, 10, 0.1, label="local disk write (ms)"),
              slider("PEER", peer_ms, 0.1, 10, 0.1, label="peer disk write (ms)")]
    base = alt.Chart(paths).transform_calculate(latency_ms=LATENCY_EXPR).encode(
        x=_rtt_axis(float(paths["rtt_ms"].max())),
        y=alt.Y("latency_ms:Q", title="one write acknowledged after (ms)"),
        color=alt.Color("protocol:N", scale=PROTOCOL_COLOURS, title="protocol",
                        legend=alt.Legend(orient="bottom")),
        strokeDash=alt.StrokeDash("protocol:N", title="protocol", scale=PROTOCOL_DASHES),
        tooltip=["protocol:N", alt.Tooltip("rtt_ms:Q", title="round trip (ms)", format=".1f"),
                 alt.Tooltip("latency_ms:Q", title="latency (ms)", format=".2f")])
    return base.mark_line(strokeWidth=2.5).add_params(*params).properties(
        width=460, height=280, title="One write's latency: the slower of the two paths")


def tps_ratio_chart(paths: pd.DataFrame, article: dict[str, float], work_ms: float,
                    disk_ms: float) -> alt.LayerChart:
    """TPS on the mirror as % of the local disk's, by round trip, beside the article's ratios.

    Transactions run one at a time, each working WORK ms and committing with one disk write
    of DISK ms on either side; where C's curve meets a ratio, the round trip it reads as."""
    params = [slider("WORK", work_ms, 0, 20, 0.01, label="work per transaction (ms)"),
              slider("DISK", disk_ms, 0.1, 10, 0.1, label="disk write, each side (ms)")]
    max_rtt = float(paths["rtt_ms"].max())
    curves = alt.Chart(paths).transform_calculate(
        commit_ms=COMMIT_EXPR).transform_calculate(ratio_pct=RATIO_PCT_EXPR).encode(
        x=_rtt_axis(max_rtt),
        y=alt.Y("ratio_pct:Q", title="TPS, % of the local disk's",
                scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("protocol:N", scale=PROTOCOL_COLOURS, title="protocol",
                        legend=alt.Legend(orient="bottom")),
        strokeDash=alt.StrokeDash("protocol:N", title="protocol", scale=PROTOCOL_DASHES),
        tooltip=["protocol:N", alt.Tooltip("rtt_ms:Q", title="round trip (ms)", format=".1f"),
                 alt.Tooltip("ratio_pct:Q", title="TPS %", format=".1f")]
    ).mark_line(strokeWidth=2.5)
    marks = pd.DataFrame({"ratio_pct": [r * 100 for r in article.values()],
                          "label": [f"the article, {name}: {r * 100:g} %"
                                    for name, r in article.items()]})
    rules = alt.Chart(marks).mark_rule(strokeDash=[4, 3], color=ARTICLE_COLOUR).encode(
        y="ratio_pct:Q")
    text = alt.Chart(marks).mark_text(align="right", dy=-6, color=ARTICLE_COLOUR).encode(
        y="ratio_pct:Q", x=alt.datum(max_rtt), text="label:N")
    crossings = alt.Chart(marks).transform_calculate(rtt_ms=CROSSING_EXPR).transform_filter(
        f"datum.rtt_ms <= {max_rtt}").mark_point(
        size=80, filled=True, color=PROTOCOL_RANGE[2]).encode(
        x="rtt_ms:Q", y="ratio_pct:Q",
        tooltip=["label:N", alt.Tooltip("rtt_ms:Q", title="C's round trip here (ms)",
                                        format=".2f")])
    return alt.layer(curves, rules, text, crossings).add_params(*params).properties(
        width=460, height=300,
        title="Transactions one at a time: TPS on the mirror, as % of the local disk's")
