"""The doublewrite lab's recorded run as tables (pandas), with the model beside each figure.

Pure page code: it reads a run's results and never touches a host.
"""

from __future__ import annotations

import pandas as pd

from labs.doublewrite.model import MIB, RowWrites, elapsed_ratio

LEG_KEYS = ["buffer_pool_mib", "write_limit_mibps", "repetition"]
SETTING_KEYS = ["buffer_pool_mib", "write_limit_mibps"]


def setting_label(pool_mib: float, limit_mibps: float) -> str:
    disk = f"writes ≤ {int(limit_mibps)} MiB/s" if limit_mibps else "no write limit"
    return f"buffer pool {int(pool_mib)} MiB, {disk}"


def leg_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per sysbench leg: its settings and every summary metric as a column."""
    rows = results[(results["workload"] == "oltp_insert") & results["time_s"].isna()]
    table = rows.pivot_table(index=["leg", "doublewrite", *LEG_KEYS], columns="metric",
                             values="value", aggfunc="first").reset_index()
    table.columns.name = None
    for key in LEG_KEYS:
        table[key] = table[key].astype(int)
    table["setting"] = [setting_label(p, w) for p, w in
                        zip(table["buffer_pool_mib"], table["write_limit_mibps"], strict=True)]
    table["other_bytes_per_row"] = table["device_bytes_per_row"] - table["innodb_bytes_per_row"]
    if "dblwr_share" not in table:
        table["dblwr_share"] = 0.0
    table["dblwr_share"] = table["dblwr_share"].fillna(0.0)
    return table.sort_values(["buffer_pool_mib", "write_limit_mibps", "repetition",
                              "doublewrite"]).reset_index(drop=True)


def pair_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per ON/OFF pair (setting and repetition): measured ratios beside the model's.

    The model predicts the ON leg from the OFF leg: the same page writes, redo and other bytes
    per row as OFF, plus a doublewrite copy of the share of pages the ON leg's counters say
    went through the doublewrite buffer. On a write-limited device it also predicts both
    legs' inserts per second (the limit divided by the bytes per row), but only where pages
    were flushed: a leg that wrote only its redo log is nowhere near the limit, which then
    cannot set its pace.
    """
    legs = leg_table(results)
    rows = []
    for key, pair in legs.groupby(LEG_KEYS):
        pool, limit, repetition = key
        on = pair[pair["doublewrite"] == "ON"].iloc[0]
        off = pair[pair["doublewrite"] == "OFF"].iloc[0]
        predicted = RowWrites(off["pages_written_per_row"], on["dblwr_share"],
                              off["redo_bytes_per_row"], max(off["other_bytes_per_row"], 0.0))
        every_page = RowWrites(off["pages_written_per_row"], 1.0, off["redo_bytes_per_row"],
                               max(off["other_bytes_per_row"], 0.0))
        row = {
            "buffer_pool_mib": pool, "write_limit_mibps": limit, "repetition": repetition,
            "setting": setting_label(pool, limit),
            "tps_on": on["tps"], "tps_off": off["tps"],
            "tps_off_over_on": off["tps"] / on["tps"],
            "elapsed_on_over_off": elapsed_ratio(on["elapsed_s"], off["elapsed_s"]),
            "bytes_per_row_on": on["device_bytes_per_row"],
            "bytes_per_row_off": off["device_bytes_per_row"],
            "bytes_on_over_off": on["device_bytes_per_row"] / off["device_bytes_per_row"],
            "pages_per_row_on": on["pages_written_per_row"],
            "pages_per_row_off": off["pages_written_per_row"],
            "dblwr_share_on": on["dblwr_share"],
            "redo_bytes_per_row": off["redo_bytes_per_row"],
            "model_bytes_per_row_on": predicted.bytes_per_row(True),
            "model_ratio": predicted.bytes_ratio(),
            "model_ratio_every_page": every_page.bytes_ratio(),
            "elapsed_on_s": on["elapsed_s"], "elapsed_off_s": off["elapsed_s"],
            "latency_p99_on": on["latency_p99"], "latency_p99_off": off["latency_p99"],
            "latency_p50_on": on["latency_p50"], "latency_p50_off": off["latency_p50"],
            "writes_on": on["device_writes"], "writes_off": off["device_writes"],
            "dblwr_batches_on": on["innodb_dblwr_writes"],
            "dblwr_pages_on": on["innodb_dblwr_pages_written"],
        }
        if limit and off["pages_written_per_row"] > 0:
            row["model_tps_off"] = limit * MIB / off["device_bytes_per_row"]
            row["model_tps_on"] = limit * MIB / predicted.bytes_per_row(True)
        rows.append(row)
    return pd.DataFrame(rows)


def setting_table(results: pd.DataFrame) -> pd.DataFrame:
    """The pairs averaged over repetitions, one row per setting (the chapter's headline)."""
    pairs = pair_table(results)
    numeric = [c for c in pairs.columns if c not in (*SETTING_KEYS, "setting", "repetition")]
    table = pairs.groupby(SETTING_KEYS, as_index=False)[numeric].mean()
    table["repetitions"] = pairs.groupby(SETTING_KEYS)["repetition"].count().to_numpy()
    table["setting"] = [setting_label(p, w) for p, w in
                        zip(table["buffer_pool_mib"], table["write_limit_mibps"], strict=True)]
    return table


def tps_series(results: pd.DataFrame) -> pd.DataFrame:
    """Inserts per second, second by second, for every leg."""
    rows = results[(results["workload"] == "oltp_insert") & (results["metric"] ==
                                                             "tps_per_second")].copy()
    rows["setting"] = [setting_label(p, w) for p, w in
                       zip(rows["buffer_pool_mib"], rows["write_limit_mibps"], strict=True)]
    rows["repetition"] = rows["repetition"].astype(int)
    return rows[["setting", "doublewrite", "repetition", "time_s", "value"]].rename(
        columns={"value": "tps"}).reset_index(drop=True)


def torn_table(results: pd.DataFrame) -> pd.DataFrame:
    """The torn-page experiment, one column per doublewrite setting."""
    rows = results[results["workload"] == "torn-page"]
    table = rows.pivot_table(index="metric", columns="doublewrite", values="value",
                             aggfunc="first")
    table.columns.name = None
    return table[[c for c in ("ON", "OFF") if c in table.columns]]


def template_figures(results: pd.DataFrame) -> dict[str, float]:
    rows = results[results["workload"] == "prepare"].set_index("metric")["value"]
    return {k: float(v) for k, v in rows.items()}
