"""The DRBD lab's recorded run as tables, each measurement beside the model.

The model (labs/drbd/model.py) takes its inputs from the same run, never from the text:

- a write on DRBD with its peer disconnected is the local write (DRBD's own cost included);
- the peer's disk write is fio on the peer's own disk, measured before DRBD started;
- the round trip is ping's median over the link at that point of the sweep;
- the time to hand a write to the network at all is protocol A's median at the smallest
  added round trip (the one number the model takes from DRBD's own measurements: under an
  emulated CPU it is far from 0).

The article's throughput jobs (1 MiB and 512 KiB and 4 KiB writes, one at a time) add the
link's bandwidth, measured on its own with one TCP stream: each write must cross the link
before the peer can acknowledge it, and under A the send buffer, once full, drains only as
fast as the link.

A write followed by fdatasync waits twice (the write, then the flush DRBD passes on to the
peer under B and C), so its model is the write's model plus the flush's, each with the
round trip. Pure: records and models, never the VMs; labs/drbd/page.py draws the page.
"""

from __future__ import annotations

import pandas as pd

from labs.drbd import model
from labs.records import RecordedRun

CLIENTS = 10  # pgbench -c 10 (labs/drbd/params.py)
ZONE_PREFIX = "zone-"  # the configs of pgbench at the article's zones (labs/drbd/databases.py)


def _wide(run: RecordedRun, workloads: list[str], keys: list[str]) -> pd.DataFrame:
    """The rows of these workloads, one per config, metrics as columns, with `keys`."""
    rows = run.results[run.results["workload"].isin(workloads)]
    table = rows.pivot_table(index=["config", "workload"], columns="metric",
                             values="value").reset_index()
    table.columns.name = None
    present = [k for k in keys if k in rows.columns]
    dims = rows.drop_duplicates(["config", "workload"])[["config", "workload", *present]]
    return table.merge(dims, on=["config", "workload"], how="left")


def ping_results(run: RecordedRun) -> pd.DataFrame:
    return _wide(run, ["ping"], ["added_rtt_ms"])


def local_row(fio: pd.DataFrame, config: str, variant: str) -> pd.Series:
    rows = fio[(fio["config"] == config) & (fio["variant"] == variant)]
    if len(rows) != 1:
        raise KeyError(f"{config} {variant}: {len(rows)} rows")
    return rows.iloc[0]


def send_ms(table: pd.DataFrame, variant: str, part: str = "write_p50_ms") -> float:
    """The model's one number fitted from the run: the time to hand a write to the network,
    read as protocol A's median at the smallest added round trip (A waits for nothing else).
    0 when the run measured no protocol A."""
    rows = table[(table["protocol"] == "A") & (table["variant"] == variant)]
    if rows.empty:
        return 0.0
    return float(rows.sort_values("added_rtt_ms").iloc[0][part])


def _predict(protocol: str, local: pd.Series, peer: pd.Series, rtt_ms: float,
             sends: dict[str, float], parts: tuple[str, ...]) -> float:
    return sum(model.write_latency_ms(protocol, local_write_ms=local[part],
                                      peer_write_ms=peer[part], rtt_ms=rtt_ms,
                                      send_ms=sends[part]) for part in parts)


def _parts(variant: str) -> tuple[str, ...]:
    return ("write_p50_ms", "sync_p50_ms") if variant == "fdatasync" else ("write_p50_ms",)


def fio_results(run: RecordedRun) -> pd.DataFrame:
    """One row per fio measurement; DRBD rows carry the model and its error."""
    table = _wide(run, ["fio-4k-direct", "fio-4k-fdatasync"],
                  ["variant", "protocol", "added_rtt_ms", "rtt_ms"])
    peer_host = run.meta["parameters"]["peer"]
    sends = {variant: {part: send_ms(table, variant, part) for part in _parts(variant)}
             for variant in ("direct", "fdatasync")}
    models = []
    for row in table.itertuples():
        if row.protocol not in model.PROTOCOLS:
            models.append(float("nan"))
            continue
        local = local_row(table, "drbd-disconnected", row.variant)
        peer = local_row(table, f"local-{peer_host}", row.variant)
        models.append(_predict(row.protocol, local, peer, row.rtt_ms, sends[row.variant],
                               _parts(row.variant)))
    table["model_ms"] = models
    # The measured figure the model is held to: a direct write's median latency; for a write
    # with fdatasync, the median write plus the median sync.
    table["measured_ms"] = table["write_p50_ms"] + table.get("sync_p50_ms", 0).fillna(0)
    table["error_pct"] = 100 * (table["measured_ms"] / table["model_ms"] - 1)
    table.attrs["send_ms"] = sends
    return table


ARTICLE_JOB_LABELS = {"seq-write-1m": "1 MiB sequential", "rand-write-1m": "1 MiB random",
                      "rand-write-512k": "512 KiB random", "rand-write-4k": "4 KiB random"}


def link_results(run: RecordedRun) -> pd.DataFrame:
    """One TCP stream's bandwidth over the link: before DRBD ("link") and at each added
    round trip of the sweep ("added-N")."""
    return _wide(run, ["link-bandwidth"], ["added_rtt_ms"])


def sweep_rtts(run: RecordedRun) -> dict[float, float]:
    pings = ping_results(run)
    pings = pings[pings["config"].str.startswith("added-")]
    return dict(zip(pings["added_rtt_ms"], pings["rtt_p50_ms"], strict=True))


def sweep_bandwidths(run: RecordedRun) -> dict[float, float]:
    links = link_results(run)
    links = links[links["config"].str.startswith("added-")]
    return dict(zip(links["added_rtt_ms"], links["link_mib_s"], strict=True))


def article_results(run: RecordedRun) -> pd.DataFrame:
    """The article's four jobs per configuration; DRBD rows carry the model and its error.
    The model's write times per job come from the same job on the DRBD device with its peer
    disconnected (the local write) and on the peer's own disk; the link's bandwidth from one
    TCP stream measured at the same round trip; the time to hand a write to the network
    from the 4 KiB sweep. All of them are times per write in a stream (1000 / IOPS)."""
    workloads = [f"article-{job}" for job in ARTICLE_JOB_LABELS]
    table = _wide(run, workloads, ["job", "rw", "block_kib", "protocol", "added_rtt_ms",
                                   "rtt_ms"])
    table["label"] = table["job"].map(ARTICLE_JOB_LABELS)
    peer_host = run.meta["parameters"]["peer"]
    cycles = table.set_index(["config", "job"])["cycle_ms"]
    links = sweep_bandwidths(run)
    # A stream's cost is the mean time per write (1000 / IOPS), not the median: the sending
    # cost too is read as protocol A's 4 KiB time per write, not its median latency.
    send = send_ms(fio_results(run), "direct", part="cycle_ms")
    models = []
    for row in table.itertuples():
        if row.protocol not in model.PROTOCOLS:
            models.append(float("nan"))
            continue
        write_ms = model.depth1_write_ms(
            row.protocol, block_kib=row.block_kib,
            local_write_ms=cycles[("drbd-disconnected", row.job)],
            peer_write_ms=cycles[(f"local-{peer_host}", row.job)], rtt_ms=row.rtt_ms,
            link_mib_s=links[row.added_rtt_ms], send_ms=send)
        models.append(model.depth1_mib_s(row.block_kib, write_ms))
    table["model_mib_s"] = models
    table["link_mib_s"] = table["added_rtt_ms"].map(links)
    table["error_pct"] = 100 * (table["mib_s"] / table["model_mib_s"] - 1)
    return table


def pgbench_results(run: RecordedRun) -> pd.DataFrame:
    """TPS per configuration, as a share of the primary's own disk's ("local", no DRBD); the
    model: each client's work per transaction from the local run, plus the commit's wait in
    each configuration (DRBD disconnected: fio's commit on DRBD alone; A, B, C: predicted)."""
    table = _pgbench_rows(run)
    fio = fio_results(run)
    host, peer_host = run.meta["parameters"]["host"], run.meta["parameters"]["peer"]
    disconnected = local_row(fio, "drbd-disconnected", "fdatasync")
    # The base of every share: the bare disk; in runs made before the lab measured it, the
    # mirror with its peer disconnected.
    base = "local" if (table["config"] == "local").any() else "drbd-disconnected"
    local = table[table["config"] == base].iloc[0]
    local_commit_ms = (local_row(fio, f"local-{host}", "fdatasync") if base == "local"
                       else disconnected)["measured_ms"]
    cpu_ms = model.cpu_ms_per_transaction(local_tps=local["tps"], clients=CLIENTS,
                                          local_commit_ms=local_commit_ms)
    peer = local_row(fio, f"local-{peer_host}", "fdatasync")
    models = []
    for row in table.itertuples():
        if row.protocol not in model.PROTOCOLS:
            commit_ms = local_commit_ms if row.config == "local" else \
                disconnected["measured_ms"]
        else:
            commit_ms = _predict(row.protocol, disconnected, peer, row.rtt_ms,
                                 fio.attrs["send_ms"]["fdatasync"], _parts("fdatasync"))
        models.append(model.pgbench_tps(clients=CLIENTS, cpu_ms=cpu_ms, commit_ms=commit_ms))
    table["model_tps"] = models
    # Where the machine's processors went: each VM's QEMU, in cores (CPU seconds a second)
    # and in host CPU milliseconds per transaction.
    for role in ("primary", "peer"):
        table[f"{role}_cores"] = table[f"{role}_cpu_s"] / table["wall_s"]
        table[f"{role}_cpu_ms_per_tx"] = 1000 * table[f"{role}_cpu_s"] / table["transactions"]
    table["both_cores"] = table["primary_cores"] + table["peer_cores"]
    table["cpu_ms_per_tx"] = table["primary_cpu_ms_per_tx"] + table["peer_cpu_ms_per_tx"]
    # A second model, for a machine whose processors are the limit: the rate scales with
    # the processor time each transaction costs (the local run's over this run's).
    table["cpu_ratio_pct"] = 100 * table.loc[table["config"] == base, "cpu_ms_per_tx"].iloc[0] \
        / table["cpu_ms_per_tx"]
    # DRBD's counters: none on the bare disk (NaN there).
    for column in ("sent_bytes", "disk_write_bytes"):
        if column not in table:
            table[column] = float("nan")
    table["sent_kib_per_tx"] = table["sent_bytes"] / 1024 / table["transactions"]
    table["written_kib_per_tx"] = table["disk_write_bytes"] / 1024 / table["transactions"]
    table["ratio_pct"] = 100 * table["tps"] / local["tps"]
    table["model_ratio_pct"] = 100 * table["model_tps"] / local["tps"]
    table["error_pct"] = 100 * (table["tps"] / table["model_tps"] - 1)
    table.attrs["cpu_ms"] = cpu_ms
    table.attrs["local_commit_ms"] = local_commit_ms
    table.attrs["base"] = base
    return table


def _pgbench_rows(run: RecordedRun) -> pd.DataFrame:
    """The pgbench rows in today's names. Runs made before the lab measured the bare disk
    called the disconnected mirror's run "local" and each VM's CPU time `<role>_vm_cpu_s`."""
    table = _wide(run, ["pgbench"], ["protocol", "added_rtt_ms", "rtt_ms"])
    table = table[~table["config"].str.startswith(ZONE_PREFIX)].reset_index(drop=True)
    if "drbd-disconnected" not in set(table["config"]):
        table["config"] = table["config"].replace({"local": "drbd-disconnected"})
    return table.rename(columns={f"{role}_vm_cpu_s": f"{role}_cpu_s"
                                 for role in ("primary", "peer")})


def zone_results(run: RecordedRun) -> pd.DataFrame:
    """pgbench at the article's two zones (--article-zones), one row per zone and protocol:
    the run's time scale, the round trip the model asked for and the one measured, TPS as a
    fraction of the bare disk's beside the article's and the model's. Empty without them."""
    rows = run.results[run.results["config"].str.startswith(ZONE_PREFIX)]
    if rows.empty:
        return pd.DataFrame()
    zones = _wide(run, ["zones"], ["rtt_ms"])
    pgbench = _wide(run, ["pgbench"], ["protocol"])
    local_tps = pgbench.set_index("config").loc["local", "tps"]
    runs = pgbench[pgbench["config"].str.startswith(ZONE_PREFIX)].copy()
    runs["zone"] = runs["config"].str.rsplit("-", n=1).str[0]
    table = runs[["zone", "protocol", "tps"]].merge(
        zones.rename(columns={"config": "zone"}).drop(columns="workload"), on="zone")
    table["ratio"] = table["tps"] / local_tps
    # The model's fraction is C's (one round trip per commit); A and B wait for none.
    table.loc[table["protocol"] != "C", "model_ratio"] = float("nan")
    return table


def resync_results(run: RecordedRun) -> pd.DataFrame:
    table = _wide(run, ["resync"], [])
    table["mib_s"] = table["resync_bytes"] / 2**20 / table["resync_s"]
    return table


def drill_results(run: RecordedRun) -> pd.DataFrame:
    table = _wide(run, ["drill"], ["protocol", "added_rtt_ms", "rtt_ms"])
    table["resync_mib_s"] = table["resync_bytes"] / 2**20 / table["resync_s"]
    return table
