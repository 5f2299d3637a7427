"""Hyperconnect's published figures (data/reference/hyperconnect-super-disk.csv), and what they
say when read closely: the explanation page quotes only what is computed here.

Pure page code: it reads the reference file with pandas and never touches a host.
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from labs import PROJECT_ROOT
from labs.book import number_text as nt
from labs.write_mostly.model import MD_SPEED_LIMIT_MAX_KIB_S, implied_rate_mib_s

REFERENCE_CSV = PROJECT_ROOT / "data" / "reference" / "hyperconnect-super-disk.csv"
URL = ("https://hyperconnect.github.io/2025/05/15/"
       "Building-Resilient-High-Performance-ScyllaDB-Clusters-with-Super-Disk.html")
PERCENTILES = ("50", "90", "95", "98", "99", "99.9", "99.99", "max")


@cache
def figures_table() -> pd.DataFrame:
    return pd.read_csv(REFERENCE_CSV, dtype={"percentile": str}, keep_default_na=False)


def figure(name: str) -> float:
    """One scalar figure of the post (e.g. "stream_hours_min")."""
    rows = figures_table()[figures_table()["figure"] == name]
    if len(rows) != 1:
        raise KeyError(f"{REFERENCE_CSV.name}: expected one row {name!r}, found {len(rows)}")
    return float(rows["value"].iloc[0])


def latte_table() -> pd.DataFrame:
    """Cycle latency by operation and percentile, both clusters side by side, and the change."""
    rows = figures_table()
    rows = rows[(rows["figure"] == "latte_cycle_latency") & rows["percentile"].isin(PERCENTILES)]
    wide = rows.pivot_table(index=["operation", "percentile"], columns="cluster",
                            values="value").reset_index()
    wide["change"] = wide["RAID"] / wide["no RAID"] - 1
    order = {p: i for i, p in enumerate(PERCENTILES)}
    return wide.sort_values(["operation", "percentile"], key=lambda c: c.map(order)
                            if c.name == "percentile" else c).reset_index(drop=True)


def latte_display() -> pd.DataFrame:
    """The latte comparison as the page shows it (one operation; readable column names)."""
    table = latte_table()
    table = table[table["operation"] == "standard1_select_cache"]
    return pd.DataFrame({
        "percentile": ["p" + p if p != "max" else "max" for p in table["percentile"]],
        "local NVMe only (ms)": table["no RAID"].map("{:.3f}".format),
        "write-mostly mirror (ms)": table["RAID"].map("{:.3f}".format),
        "change": table["change"].map(lambda change: nt.percent(change, signed=True)),
    })


def article_figures() -> dict[str, str]:
    """Every figure of the post the explanation page quotes, formatted."""
    latte = latte_table()
    band = latte[latte["percentile"].isin(["50", "90", "95", "98"])]
    tail = latte[latte["percentile"].isin(["99", "99.99", "max"])]
    p999 = latte[latte["percentile"] == "99.9"]
    select = latte[latte["operation"] == "standard1_select_cache"].set_index("percentile")
    array_kib = figure("array_recovery_kib")
    array_bytes = array_kib * 1024
    speed_kib_s = figure("recovery_md_speed_kib_s")
    hours = figure("rebuild_hours_reported")
    f = {
        "hc_change_min": nt.percent(-band['change'].max()),
        "hc_change_max": nt.percent(-band['change'].min()),
        "hc_tail_change_max": nt.percent(tail['change'].max()),
        "hc_p999_change_max": nt.percent(-p999['change'].min(), 1),
        "hc_p50_plain": f"{select.loc['50', 'no RAID']:.3f} ms",
        "hc_p50_mirror": f"{select.loc['50', 'RAID']:.3f} ms",
        "hc_p90_plain": f"{select.loc['90', 'no RAID']:.3f} ms",
        "hc_p90_mirror": f"{select.loc['90', 'RAID']:.3f} ms",
        "hc_p95_plain": f"{select.loc['95', 'no RAID']:.3f} ms",
        "hc_p95_mirror": f"{select.loc['95', 'RAID']:.3f} ms",
        "hc_rate": f"{figure('latte_target_rate'):,.0f}",
        "hc_throughput_plain": f"{_cluster_value('latte_throughput', 'no RAID'):,.0f}",
        "hc_throughput_mirror": f"{_cluster_value('latte_throughput', 'RAID'):,.0f}",
        "hc_mean_cycle_plain": f"{_cluster_value('latte_cycle_latency_mean', 'no RAID'):.3f} ms",
        "hc_mean_cycle_mirror": f"{_cluster_value('latte_cycle_latency_mean', 'RAID'):.3f} ms",
        "hc_array_kib": f"{array_kib:,.0f}",
        "hc_array_tb": f"{array_bytes / 1e12:.2f} TB",
        "hc_array_tib": f"{array_bytes / 2**40:.2f} TiB",
        "hc_speed": f"{speed_kib_s:,.0f} KiB/s",
        "hc_speed_mb": f"{speed_kib_s * 1024 / 1e6:.0f} MB/s",
        "hc_finish_min": f"{figure('recovery_md_finish_min'):.1f}",
        "hc_estimate_h": f"{array_kib / speed_kib_s / 3600:.1f}",
        "hc_ceiling_share": nt.percent(speed_kib_s / MD_SPEED_LIMIT_MAX_KIB_S),
        "hc_needed_mib_s": f"{implied_rate_mib_s(array_bytes, hours):,.0f} MiB/s",
        "hc_stream_rate_lo": f"{stream_rate(figure('stream_hours_max')):.0f} MiB/s",
        "hc_stream_rate_hi": f"{stream_rate(figure('stream_hours_min')):.0f} MiB/s",
    }
    return f


def stream_rate(hours: float) -> float:
    """MiB/s of streaming a node from its peers that the post's hours for 1.8 TB imply."""
    return implied_rate_mib_s(figure("stream_node_tb") * 1e12, hours)


def _cluster_value(name: str, cluster: str) -> float:
    rows = figures_table()
    rows = rows[(rows["figure"] == name) & (rows["cluster"] == cluster)]
    return float(rows["value"].iloc[0])
