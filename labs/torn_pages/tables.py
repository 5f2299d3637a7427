"""The torn-pages run as tables, each beside what the first-touch model predicts.

Pure page code (pandas and the model): reads a run's results, never a host. Every function
works on any valid run of the lab: any profile, one checkpoint setting or several, with or
without the write-limited legs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from labs.torn_pages import model

BENCH_WORKLOADS = ["steady", "forced-checkpoint", "forced-checkpoint-replay"]
# The lab keeps its WAL for pg_walinspect (wal_keep_size), so no WAL segment is recycled:
# each new 16 MiB segment is first filled with zeros (wal_init_zero, on by default) and then
# written with the records, and the WAL reaches the disk twice.
WAL_COPIES = 2.0
FORCED = "forced CHECKPOINT"
REPLAY = "forced CHECKPOINT, previous leg's transactions replayed"
NO_LIMIT = "no limit"
# An interval between two WAL samples with fewer commits than this share of its leg's median
# is left out of the per-interval values (one image more or less would move its ratio by a
# lot); the leg's totals still count it.
FEW_COMMITS_SHARE = 0.1


def setting_name(workload: str, timeout_s: float) -> str:
    if workload == "forced-checkpoint":
        return FORCED
    if workload == "forced-checkpoint-replay":
        return REPLAY
    return f"checkpoint_timeout {int(timeout_s)} s"


def disk_name(limit_mibps: float) -> str:
    return f"writes limited to {int(limit_mibps)} MiB/s" if limit_mibps else NO_LIMIT


def setting_order(settings) -> list[str]:
    steady = sorted({s for s in settings if s.startswith("checkpoint_timeout")},
                    key=lambda s: int(s.split()[1]))
    return steady + [s for s in (FORCED, REPLAY) if s in set(settings)]


def legs(results: pd.DataFrame) -> pd.DataFrame:
    """One row per pgbench leg: disk, setting, full_page_writes, and its measures."""
    rows = results[results["workload"].isin(BENCH_WORKLOADS) & results["time_s"].isna()]
    table = rows.pivot_table(index=["leg", "workload", "write_limit_mibps",
                                    "checkpoint_timeout_s", "full_page_writes"],
                             columns="metric", values="value", aggfunc="first").reset_index()
    table.columns.name = None
    table["setting"] = [setting_name(w, t) for w, t in
                        zip(table["workload"], table["checkpoint_timeout_s"], strict=True)]
    table["disk"] = table["write_limit_mibps"].map(disk_name)
    table["duration_s"] = table["transactions"] / table["tps"]
    return table


def image_bytes(results: pd.DataFrame) -> float:
    """Average bytes of one full-page image, counted in the WAL of the forced-checkpoint
    leg with full_page_writes on; 8192 if the run has no such count."""
    rows = results[(results["workload"] == "forced-checkpoint")
                   & (results["full_page_writes"] == "on")]
    images = rows[rows["metric"] == "inspected_fpi"]["value"].sum()
    total = rows[rows["metric"] == "inspected_image_bytes"]["value"].sum()
    return float(total / images) if images > 0 else float(model.PAGE_BYTES)


def pools(leg: pd.Series) -> list[model.PagePool]:
    """The pages a pgbench leg changes at random: one accounts heap page per transaction,
    and, for an update that is not HOT, one leaf page of the accounts index."""
    heap = model.PagePool(float(leg["accounts_heap_pages"]), 1.0)
    index = model.PagePool(float(leg["accounts_index_pages"]),
                           1.0 - float(leg["hot_update_share"]))
    return [heap, index]


def checkpoint_interval_s(leg: pd.Series) -> float:
    if leg["workload"].startswith("forced"):
        return float(leg["forced_checkpoint_at"])
    return float(leg["checkpoint_timeout_s"])


def settings(results: pd.DataFrame) -> pd.DataFrame:
    """Per disk and setting: full_page_writes on and off, measured and modelled."""
    table = legs(results)
    table = table[table["workload"] != "forced-checkpoint-replay"]
    size = image_bytes(results)
    rows = []
    for (disk, setting), same in table.groupby(["disk", "setting"], sort=False):
        on = same[same["full_page_writes"] == "on"]
        off = same[same["full_page_writes"] == "off"]
        if on.empty or off.empty:
            continue
        rows.append(_settings_row(disk, setting, on.iloc[0], off.iloc[0], size))
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out["wal_ratio_error"] = out["model_wal_on_over_off"] / out["wal_on_over_off"] - 1
    for side in ("on", "off"):
        out[f"device_error_{side}"] = (out[f"model_device_bytes_per_tx_{side}"]
                                       / out[f"device_bytes_per_tx_{side}"] - 1)
    if "model_tps_on" in out:
        out["tps_on_error"] = out["model_tps_on"] / out["tps_on"] - 1
        out["tps_off_error"] = out["model_tps_off"] / out["tps_off"] - 1
    order = setting_order(out["setting"])
    out["order"] = [(d != NO_LIMIT, order.index(s)) for d, s in
                    zip(out["disk"], out["setting"], strict=True)]
    return out.sort_values("order").drop(columns="order").reset_index(drop=True)


def _settings_row(disk: str, setting: str, on: pd.Series, off: pd.Series,
                  size: float) -> dict:
    """One disk and setting: the legs with full_page_writes on and off, and the model's."""
    interval_s = checkpoint_interval_s(on)
    images = model.leg_images_per_tx(pools(on), on["tps"], interval_s, on["duration_s"])
    wal_on = model.wal_bytes_per_tx(off["wal_bytes_per_tx"], size, images)
    row = {
        "disk": disk, "setting": setting, "write_limit_mibps": on["write_limit_mibps"],
        "checkpoint_interval_s": interval_s,
        "tps_on": on["tps"], "tps_off": off["tps"], "tps_off_over_on": off["tps"] / on["tps"],
        "wal_bytes_per_tx_on": on["wal_bytes_per_tx"],
        "wal_bytes_per_tx_off": off["wal_bytes_per_tx"],
        "wal_on_over_off": on["wal_bytes_per_tx"] / off["wal_bytes_per_tx"],
        "fpi_per_tx_on": on["wal_fpi_per_tx"], "fpi_per_tx_off": off["wal_fpi_per_tx"],
        "model_fpi_per_tx_on": images, "model_wal_bytes_per_tx_on": wal_on,
        "model_wal_on_over_off": wal_on / off["wal_bytes_per_tx"],
        "latency_p50_ms_on": on["latency_p50"], "latency_p50_ms_off": off["latency_p50"],
        "latency_p99_ms_on": on["latency_p99"], "latency_p99_ms_off": off["latency_p99"],
        "device_bytes_per_tx_on": on["device_write_bytes_per_tx"],
        "device_bytes_per_tx_off": off["device_write_bytes_per_tx"],
    }
    for side, leg in (("on", on), ("off", off)):
        row.update(_modelled_side(side, leg, on, off, interval_s, size))
    if on["write_limit_mibps"]:
        row["model_tps_off_over_on"] = row["model_tps_off"] / row["model_tps_on"]
        row["model_tps_off_over_on_recycled"] = (row["model_tps_off_recycled"]
                                                 / row["model_tps_on_recycled"])
    return row


def _modelled_side(side: str, leg: pd.Series, on: pd.Series, off: pd.Series,
                   interval_s: float, size: float) -> dict:
    """The model's device bytes per transaction for one side (`leg`), and on a write-limited
    disk its TPS, with the WAL as the server writes it and as if it recycled segments."""
    inputs = dict(fpw_on=side == "on", checkpoint_interval_s=interval_s,
                  duration_s=leg["duration_s"],
                  bytes_without_images=off["wal_bytes_per_tx"], image_bytes=size,
                  wal_flushes_per_tx=leg["wal_writes"] / leg["transactions"])
    row = {f"model_device_bytes_per_tx_{side}": model.device_bytes_per_tx(
        pools(leg), leg["tps"], wal_copies=WAL_COPIES, **inputs)}
    if on["write_limit_mibps"]:
        limit = on["write_limit_mibps"] * 2**20
        row[f"model_tps_{side}"] = model.write_limited_tps(
            limit, pools(leg), wal_copies=WAL_COPIES, **inputs)
        # The same disk if the server recycled its WAL segments (no zero fill).
        row[f"model_tps_{side}_recycled"] = model.write_limited_tps(
            limit, pools(leg), wal_copies=1.0, **inputs)
    return row


def slow_legs(results: pd.DataFrame) -> pd.DataFrame:
    """The write-limited legs one by one: what the disk took against its limit, and the
    model's TPS against the measured."""
    table = settings(results)
    if table.empty or "model_tps_on" not in table:
        return pd.DataFrame()
    legs_by = legs(results).set_index(["disk", "setting", "full_page_writes"])
    rows = []
    for row in table[table["disk"] != NO_LIMIT].to_dict("records"):
        for side in ("on", "off"):
            leg = legs_by.loc[(row["disk"], row["setting"], side)]
            mibps = leg["device_write_bytes"] / leg["duration_s"] / 2**20
            rows.append({
                "setting": row["setting"], "full_page_writes": side,
                "limit_mibps": row["write_limit_mibps"], "device_mibps": mibps,
                "limit_share": mibps / row["write_limit_mibps"],
                "tps": row[f"tps_{side}"], "model_tps": row[f"model_tps_{side}"],
                "tps_error": row[f"tps_{side}_error"],
                "device_error": row[f"device_error_{side}"],
                "latency_avg_ms": leg["latency_avg"]})
    return pd.DataFrame(rows)


def intervals(results: pd.DataFrame) -> pd.DataFrame:
    """The forced-checkpoint legs interval by interval, as counted in the WAL, with the
    first-touch model's images per transaction for the same transactions."""
    rows = results[results["workload"].str.startswith("forced")
                   & results["metric"].str.startswith(("inspected_", "stats_fpi"))]
    if rows.empty:
        return pd.DataFrame()
    table = rows.pivot_table(index=["leg", "workload", "full_page_writes", "time_s"],
                             columns="metric", values="value", aggfunc="first").reset_index()
    table.columns.name = None
    leg_rows = legs(results).set_index("leg")
    commits = table["inspected_commits"].where(table["inspected_commits"] > 0)
    table["fpi_per_tx"] = table["inspected_fpi"] / commits
    table["stats_fpi_per_tx"] = table["stats_fpi"] / commits
    table["wal_bytes_per_tx"] = table["inspected_wal_bytes"] / commits
    table["accounts_pages_per_tx"] = table["inspected_accounts_pages"] / commits
    table["tps"] = table["inspected_commits"] / (table["time_s"]
                                                 - table["inspected_interval_start"])
    model_fpi = []
    for row in table.itertuples():
        leg = leg_rows.loc[row.leg]
        if row.full_page_writes != "on":
            model_fpi.append(0.0)
            continue
        start = row.inspected_commits_since_checkpoint
        model_fpi.append(float(model.images_per_tx_between(
            pools(leg), start, start + row.inspected_commits)))
    table["model_fpi_per_tx"] = model_fpi
    median = table.groupby("leg")["inspected_commits"].transform("median")
    table["few_commits"] = ((table["inspected_commits"] <= 0)
                            | (table["inspected_commits"] < FEW_COMMITS_SHARE * median))
    table["setting"] = [setting_name(w, 3600) for w in table["workload"]]
    return table.sort_values(["leg", "time_s"]).reset_index(drop=True)


def forced_checkpoints(results: pd.DataFrame) -> pd.DataFrame:
    """When each forced CHECKPOINT was issued, when its WAL position (redo) was passed,
    and when the command returned, in seconds since the leg's pgbench started."""
    rows = results[results["metric"].isin(["forced_checkpoint_at", "forced_checkpoint_redo_at",
                                           "forced_checkpoint_done_at"])]
    table = rows.pivot_table(index=["leg", "workload", "full_page_writes"], columns="metric",
                             values="value", aggfunc="first").reset_index()
    table.columns.name = None
    table["setting"] = [setting_name(w, 3600) for w in table["workload"]]
    return table


def window_mean(table: pd.DataFrame, column: str, start_s: float, end_s: float,
                widen: str | None = None) -> float:
    """Per-transaction average of a column over the intervals that begin in
    [start_s, end_s), weighted by each interval's commits; intervals with too few commits
    (`few_commits`, as the burst chart leaves them out) do not count.

    A window can hold no such interval: on a loaded machine one interval beside a checkpoint
    may stall, or be cut very short by the redo point. With `widen` ("earlier" or "later")
    the window then takes the nearest counted interval on that side, which keeps it on its
    own side of the checkpoint; without it the answer is NaN."""
    if widen not in (None, "earlier", "later"):
        raise ValueError(f"widen must be 'earlier' or 'later', not {widen!r}")
    kept = table[~table["few_commits"]] if "few_commits" in table else \
        table[table["inspected_commits"] > 0]
    begins = kept["inspected_interval_start"]
    rows = kept[(begins >= start_s) & (begins < end_s)]
    if rows.empty and widen == "earlier":
        rows = kept[begins < start_s].tail(1)
    elif rows.empty and widen == "later":
        rows = kept[begins >= end_s].head(1)
    if rows.empty:
        return float("nan")
    return float(np.average(rows[column], weights=rows["inspected_commits"]))


def stats_lag(table: pd.DataFrame) -> dict[str, float]:
    """How far pg_stat_wal's image counter trailed the images in the WAL, over one leg."""
    behind = (table["inspected_fpi"].cumsum() - table["stats_fpi"].cumsum())
    seconds = (table["time_s"].iloc[-1] - table["inspected_interval_start"].iloc[0])
    per_s = table["inspected_fpi"].sum() / seconds if seconds > 0 else float("nan")
    most = float(behind.max())
    return {"max_behind_images": most, "max_behind_s": most / per_s if per_s else float("nan"),
            "total_images": float(table["inspected_fpi"].sum()),
            "total_stats_images": float(table["stats_fpi"].sum())}


def torn_page_outcomes(results: pd.DataFrame) -> pd.DataFrame:
    """The torn-page experiments, one row per variant, numbers as the run recorded them."""
    rows = results[results["workload"] == "torn-page"]
    table = rows.pivot_table(index="variant", columns="metric", values="value",
                             aggfunc="first")
    order = [v for v in ["tear-stopped", "fpw-on", "fpw-off", "fpw-off-nochecksums"]
             if v in table.index]
    return table.loc[order]


TORN_ROWS = {
    "changed_bytes_first_half": ("bytes changed by the update in the first 4 KiB", "n"),
    "changed_bytes_second_half": ("bytes changed by the update in the last 4 KiB", "n"),
    "checksum_check_failed_torn": ("pg_checksums --check fails on the torn page", "yes"),
    "select_reported_invalid_page": ("a SELECT reports an invalid page", "yes"),
    "fpi_bytes_for_page_in_wal": ("bytes of the page's image in the WAL", "n"),
    "recovery_completed": ("crash recovery completes", "yes"),
    "recovery_reported_invalid_page": ("recovery reports an invalid page", "yes"),
    "rows_visible": ("rows the table shows", "n"),
    "rows_expected": ("rows it holds", "n"),
    "updated_rows_visible": ("updated rows it shows", "n"),
    "checksum_check_failed_after_recovery": ("pg_checksums --check fails after recovery",
                                             "yes"),
}
TORN_COLUMNS = {"tear-stopped": "stopped cluster (checksums on)",
                "fpw-on": "crash, full_page_writes on", "fpw-off": "crash, full_page_writes off",
                "fpw-off-nochecksums": "crash, neither protection"}


def torn_page_table(results: pd.DataFrame) -> pd.DataFrame:
    """The torn-page outcomes for readers: yes/no, numbers, and blank where a step does not
    apply to a variant."""
    outcomes = torn_page_outcomes(results)
    rows = {}
    for metric, (label, kind) in TORN_ROWS.items():
        if metric not in outcomes.columns:
            continue
        cells = []
        for variant in outcomes.index:
            value = outcomes.loc[variant, metric]
            if pd.isna(value):
                cells.append("")
            elif kind == "yes":
                cells.append("yes" if value else "no")
            else:
                cells.append(f"{int(value):,}")
        rows[label] = cells
    table = pd.DataFrame(rows, index=[TORN_COLUMNS.get(v, v) for v in outcomes.index]).T
    table.index.name = "what the lab checked"
    return table
