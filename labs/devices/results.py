"""The devices lab's recorded run as tables, each measurement beside the model.

The model for an emulated volume: the lower of what its QEMU throttle allows (by QEMU's own
accounting: every I/O up to iops-size is one operation, and bytes count as they are) and
what the VM's unthrottled disk delivered in the same measurement (the throttle can only
slow a disk down).

The measured operations a second are fio's bytes moved divided by the block size, over the
whole job. fio's own IOPS figure counts only the requests issued within the runtime but
divides by the runtime plus the wait for the last queued requests (on sc1 at depth 64, 8 s
plus 2.8 s), which reads as a slower volume where the volume was not slower.
Pure page code: records and models, never the VM.
"""

from __future__ import annotations

import pandas as pd

from labs.models import cloud_volume
from labs.records import RecordedRun

VOLUMES = ("unthrottled", "gp3", "sc1")
LOCAL = "local"  # a run on --host local: the reader's own disk, nothing emulated
FIO_WORKLOADS = ("depth-sweep", "block-sweep", "sequential", "write")
THROTTLE_FIELDS = {"iops-total": "iops_total", "bps-total": "bps_total",
                   "iops-size": "iops_size", "iops-total-max": "iops_total_max",
                   "iops-total-max-length": "iops_total_max_length",
                   "bps-total-max": "bps_total_max"}


def throttle_of(run: RecordedRun, volume: str) -> cloud_volume.QemuThrottle | None:
    """The QEMU throttle the run applied to `volume` (None: no limits)."""
    rows = run.results[(run.results["volume"] == volume)
                       & run.results["workload"].isin(["throttle", "burst-throttle"])]
    values = {THROTTLE_FIELDS[m]: int(v) for m, v in zip(rows["metric"], rows["value"],
                                                         strict=True)}
    if not any(values.values()):
        return None
    values["bps_total_max_length"] = values.get("iops_total_max_length", 0)
    return cloud_volume.QemuThrottle(**values)


def fio_results(run: RecordedRun) -> pd.DataFrame:
    """One row per volume and fio measurement, measured beside the model."""
    rows = run.results[run.results["workload"].isin(FIO_WORKLOADS)]
    table = rows.pivot_table(index=["volume", "workload", "op", "pattern", "block_kib", "depth"],
                             columns="metric", values="value").reset_index()
    table.columns.name = None
    table["fio_iops"] = table["iops"]
    table["iops"] = table["mib_s"] * 1024 / table["block_kib"]  # from the bytes moved
    key = ["workload", "op", "pattern", "block_kib", "depth"]
    reference = table[table["volume"] == "unthrottled"].set_index(key)["iops"]
    limits = {volume: throttle_of(run, volume) for volume in table["volume"].unique()}
    models = []
    for row in table.itertuples():
        limit = limits[row.volume]
        if limit is None:
            models.append(float("nan"))  # the reference itself: nothing to predict it from
            continue
        allowed = limit.predicted_iops(int(row.block_kib) * 1024)
        models.append(min(allowed, reference.get(tuple(getattr(row, k) for k in key),
                                                 float("inf"))))
    table["model_iops"] = models
    table["error_pct"] = 100 * (table["iops"] / table["model_iops"] - 1)
    table["model_mib_s"] = table["model_iops"] * table["block_kib"] / 1024
    return table


def burst_results(run: RecordedRun) -> pd.DataFrame:
    """The time-scaled sc1's MiB/s second by second, beside the model's burst-then-baseline."""
    rows = run.results[(run.results["workload"] == "burst") & (run.results["metric"] == "mib_s")]
    limit = throttle_of(run, "sc1-burst")
    table = rows[["second", "value"]].rename(columns={"value": "mib_s"}).reset_index(drop=True)
    burst_mib_s = limit.bps_total_max / cloud_volume.MIB
    base_mib_s = limit.bps_total / cloud_volume.MIB
    # fio's log gives the average over each second that ends at `second`.
    starts = table["second"] - 1
    bursting = (limit.burst_seconds - starts).clip(0, 1)
    table["model_mib_s"] = bursting * burst_mib_s + (1 - bursting) * base_mib_s
    return table


def sysbench_results(run: RecordedRun) -> pd.DataFrame:
    """sysbench fileio rndrw per volume: reads + writes per second, beside the model."""
    rows = run.results[run.results["workload"] == "sysbench-rndrw"]
    table = rows.pivot_table(index="volume", columns="metric", values="value")
    table = table.reindex([v for v in (*VOLUMES, LOCAL) if v in table.index]).reset_index()
    table.columns.name = None
    table["ops_per_s"] = table["reads_per_s"] + table["writes_per_s"]
    # The unthrottled disk ran before and after gp3 (the same disk): the model's reference
    # is the mean of the two, and the table keeps both.
    again = run.results[(run.results["workload"] == "sysbench-rndrw-repeat")
                        & run.results["metric"].isin(["reads_per_s", "writes_per_s"])]
    table["again_ops_per_s"] = float("nan")
    if len(again):
        table.loc[table["volume"] == "unthrottled", "again_ops_per_s"] = again["value"].sum()
    unthrottled = table[table["volume"] == "unthrottled"]
    reference = (float(unthrottled[["ops_per_s", "again_ops_per_s"]].mean(axis=1).iloc[0])
                 if len(unthrottled) else float("nan"))
    table["reference_ops_per_s"] = reference
    models = []
    for volume in table["volume"]:
        limit = throttle_of(run, volume)
        models.append(float("nan") if limit is None else
                      min(limit.predicted_iops(16 * 1024), reference))
    table["model_ops_per_s"] = models
    table["error_pct"] = 100 * (table["ops_per_s"] / table["model_ops_per_s"] - 1)
    return table


def volume_busy_s(limit: cloud_volume.QemuThrottle | None, requests: float,
                  written_bytes: float) -> float:
    """Seconds a volume needs, at its limits, for `requests` writes moving `written_bytes`
    (QEMU's accounting: a request counts once up to iops-size, a larger one as several)."""
    if limit is None:
        return 0.0
    units = max(requests, written_bytes / limit.iops_size) if limit.iops_size else requests
    return max(units / limit.iops_total, written_bytes / limit.bps_total)


def mariadb_results(run: RecordedRun) -> pd.DataFrame:
    """One row per volume and session count: the time until every session finished, what
    reached the volume, and the model: the unthrottled disk's time (what the CPUs need), or
    the time the volume needs for the writes that reached it, whichever is longer."""
    rows = run.results[(run.results["workload"] == "mariadb-inserts")
                       & (run.results["metric"] != "session_s")]
    table = rows.pivot_table(index=["volume", "sessions"], columns="metric",
                             values="value").reset_index()
    table.columns.name = None
    table["sessions"] = table["sessions"].astype(int)
    cpu_s = table[table["volume"] == "unthrottled"].set_index("sessions")["wall_s"]
    # Seconds the writes that reached each volume cost it, by its limits.
    table["busy_s"] = [volume_busy_s(throttle_of(run, row.volume), row.write_requests,
                                     row.written_mib * 2**20) for row in table.itertuples()]
    table["model_s"] = [max(cpu_s[row.sessions], row.busy_s) if row.volume != "unthrottled"
                        else float("nan") for row in table.itertuples()]
    table["error_pct"] = 100 * (table["wall_s"] / table["model_s"] - 1)
    order = {v: i for i, v in enumerate(VOLUMES)}
    return table.sort_values(["volume", "sessions"], key=lambda c: c.map(order)
                             if c.name == "volume" else c).reset_index(drop=True)

