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

Under B and C, one writer's plain writes (queue depth 1) each wait for a flush of the peer's
disk as well: DRBD closes an epoch after every such write, and the peer flushes its disk at
the end of each epoch before it takes the next write (model.write_latency_ms). That flush is
fio's fdatasync on the peer's own disk.

A write followed by fdatasync waits for the write (with its round trip) and then for the
local disk's flush only: DRBD 8.4 turns an empty flush into an epoch boundary for the peer
and completes it locally. The peer flushes meanwhile, so the next write hardly waits.
Pure: records and models, never the VMs; labs/drbd/page.py draws the page.
"""

from __future__ import annotations

import pandas as pd

from labs.drbd import model
from labs.drbd.params import Parameters
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


def send_ms(table: pd.DataFrame, variant: str) -> float:
    """The model's one number fitted from the run: the time to hand a write to the network,
    read as protocol A's median at the smallest added round trip (A waits for nothing else).
    0 when the run measured no protocol A."""
    rows = table[(table["protocol"] == "A") & (table["variant"] == variant)]
    if rows.empty:
        return 0.0
    return float(rows.sort_values("added_rtt_ms").iloc[0]["write_p50_ms"])


def _predict(protocol: str, local: pd.Series, peer: pd.Series, rtt_ms: float, send: float,
             variant: str, peer_flush_ms: float) -> float:
    """The model's time for one fio measurement on DRBD: a plain write (each write an epoch
    of its own, so it waits for the peer's flush of the one before), or a write and then
    its fdatasync (the flush local only; the peer flushed meanwhile)."""
    if variant == "direct":
        return model.write_latency_ms(protocol, local_write_ms=local["write_p50_ms"],
                                      peer_write_ms=peer["write_p50_ms"], rtt_ms=rtt_ms,
                                      send_ms=send, peer_flush_ms=peer_flush_ms)
    left = model.flush_then_write_peer_flush_ms(peer_flush_ms=peer_flush_ms,
                                                local_flush_ms=local["sync_p50_ms"])
    write_ms = model.write_latency_ms(protocol, local_write_ms=local["write_p50_ms"],
                                      peer_write_ms=peer["write_p50_ms"], rtt_ms=rtt_ms,
                                      send_ms=send, peer_flush_ms=left)
    return write_ms + model.flush_latency_ms(local_flush_ms=local["sync_p50_ms"])


def fio_results(run: RecordedRun) -> pd.DataFrame:
    """One row per fio measurement; DRBD rows carry the model and its error."""
    table = _wide(run, ["fio-4k-direct", "fio-4k-fdatasync"],
                  ["variant", "protocol", "added_rtt_ms", "rtt_ms"])
    peer_host = Parameters.of(run).peer
    # Handing a request to the network costs the same whether it carries a write or a flush.
    send = send_ms(table, "direct")
    peer_flush = local_row(table, f"local-{peer_host}", "fdatasync")["sync_p50_ms"]
    models = []
    for row in table.itertuples():
        if row.protocol not in model.PROTOCOLS:
            models.append(float("nan"))
            continue
        local = local_row(table, "drbd-disconnected", row.variant)
        peer = local_row(table, f"local-{peer_host}", row.variant)
        models.append(_predict(row.protocol, local, peer, row.rtt_ms, send, row.variant,
                               peer_flush))
    table["model_ms"] = models
    # The measured figure the model is held to: a direct write's median latency; for a write
    # with fdatasync, the median write plus the median sync.
    table["measured_ms"] = table["write_p50_ms"] + table.get("sync_p50_ms", 0).fillna(0)
    table["error_pct"] = 100 * (table["measured_ms"] / table["model_ms"] - 1)
    table.attrs["send_ms"] = send
    table.attrs["peer_flush_ms"] = peer_flush
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
    from the 4 KiB sweep (A's median). The disks' are times per write in a stream
    (1000 / IOPS); each write also waits for the peer's flush (one epoch per write)."""
    workloads = [f"article-{job}" for job in ARTICLE_JOB_LABELS]
    table = _wide(run, workloads, ["job", "rw", "block_kib", "protocol", "added_rtt_ms",
                                   "rtt_ms"])
    table["label"] = table["job"].map(ARTICLE_JOB_LABELS)
    peer_host = Parameters.of(run).peer
    cycles = table.set_index(["config", "job"])["cycle_ms"]
    links = sweep_bandwidths(run)
    # A stream's cost is the mean time per write (1000 / IOPS), not the median; but the
    # sending cost is A's median 4 KiB write: its mean includes waits for a full send buffer,
    # which the model counts on their own (the peer's pace, the link's).
    fio = fio_results(run)
    send = fio.attrs["send_ms"]
    peer_flush = fio.attrs["peer_flush_ms"]  # each write at queue depth 1 is an epoch
    models = []
    for row in table.itertuples():
        if row.protocol not in model.PROTOCOLS:
            models.append(float("nan"))
            continue
        write_ms = model.depth1_write_ms(
            row.protocol, block_kib=row.block_kib,
            local_write_ms=cycles[("drbd-disconnected", row.job)],
            peer_write_ms=cycles[(f"local-{peer_host}", row.job)], rtt_ms=row.rtt_ms,
            link_mib_s=links[row.added_rtt_ms], send_ms=send, peer_flush_ms=peer_flush)
        models.append(model.depth1_mib_s(row.block_kib, write_ms))
    table["model_mib_s"] = models
    table["link_mib_s"] = table["added_rtt_ms"].map(links)
    table["error_pct"] = 100 * (table["mib_s"] / table["model_mib_s"] - 1)
    return table


def pgbench_results(run: RecordedRun) -> pd.DataFrame:
    """TPS per configuration, as a share of the primary's own disk's ("local", no DRBD), and
    the model's: for clients that share one branch row (scale 1) and so commit one at a
    time, _serial_model_tps; for clients with a row each, _per_client_model_tps."""
    table = _pgbench_rows(run)
    # The base of every share: the bare disk; in runs made before the lab measured it, the
    # mirror with its peer disconnected.
    base = "local" if (table["config"] == "local").any() else "drbd-disconnected"
    local_tps = table[table["config"] == base]["tps"].iloc[0]
    table["model_tps"] = (_serial_model_tps(table, local_tps) if serial_commits(run)
                          else _per_client_model_tps(run, table, base, local_tps))
    # Where the machine's processors went: each VM's QEMU, in cores (CPU seconds a second).
    for role in ("primary", "peer"):
        table[f"{role}_cores"] = table[f"{role}_cpu_s"] / table["wall_s"]
    # DRBD's counters: none on the bare disk (NaN there).
    for column in ("sent_bytes", "disk_write_bytes"):
        if column not in table:
            table[column] = float("nan")
    table["ratio_pct"] = 100 * table["tps"] / local_tps
    table["model_ratio_pct"] = 100 * table["model_tps"] / local_tps
    table["error_pct"] = 100 * (table["tps"] / table["model_tps"] - 1)
    table.attrs["base"] = base
    return table


def _per_client_model_tps(run: RecordedRun, table: pd.DataFrame, base: str,
                          local_tps: float) -> list[float]:
    """The model for clients with a branch row each: each client's work per transaction
    from the run on `base`, plus the commit's wait in each configuration (DRBD disconnected:
    fio's commit on DRBD alone; A, B, C: predicted from fio's write and fdatasync)."""
    fio = fio_results(run)
    params = Parameters.of(run)
    host, peer_host = params.host, params.peer
    disconnected = local_row(fio, "drbd-disconnected", "fdatasync")
    local_commit_ms = (local_row(fio, f"local-{host}", "fdatasync") if base == "local"
                       else disconnected)["measured_ms"]
    cpu_ms = model.cpu_ms_per_transaction(local_tps=local_tps, clients=CLIENTS,
                                          local_commit_ms=local_commit_ms)
    peer = local_row(fio, f"local-{peer_host}", "fdatasync")
    models = []
    for row in table.itertuples():
        if row.protocol not in model.PROTOCOLS:
            commit_ms = local_commit_ms if row.config == "local" else \
                disconnected["measured_ms"]
        else:
            commit_ms = _predict(row.protocol, disconnected, peer, row.rtt_ms,
                                 fio.attrs["send_ms"], "fdatasync", fio.attrs["peer_flush_ms"])
        models.append(model.pgbench_tps(clients=CLIENTS, cpu_ms=cpu_ms, commit_ms=commit_ms))
    return models


def serial_commits(run: RecordedRun) -> bool:
    """Whether the run's pgbench clients shared one branch row (scale 1, the article's), so
    that their commits went one at a time. Runs made before the option used scale 10."""
    return run.meta["parameters"].get("pgbench_scale", CLIENTS) < CLIENTS


def _serial_model_tps(table: pd.DataFrame, local_tps: float) -> list[float]:
    """The model for commits one at a time (model.serial_commit_ratio): C's run at the
    smallest added round trip is its anchor; each ms of round trip beyond it adds a ms to
    every transaction. Only C's rows have it: A and B wait for no whole round trip."""
    under_c = table[table["protocol"] == "C"].sort_values("added_rtt_ms")
    if under_c.empty:
        return [float("nan")] * len(table)
    anchor = under_c.iloc[0]
    return [local_tps * model.serial_commit_ratio(
        local_tps=local_tps, anchor_tps=anchor["tps"], anchor_rtt_ms=anchor["rtt_ms"],
        rtt_ms=row.rtt_ms) if row.protocol == "C" else
        local_tps if row.config == "local" else float("nan") for row in table.itertuples()]


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
    """pgbench at the article's two zones (--article-zones), one row per zone and protocol
    (`zone` its config, `name` as the page says it, "one zone"): the run's time scale, the
    round trip the model asked for and the one measured, TPS as a fraction of the bare
    disk's beside the article's and the model's. Empty without them."""
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
    table["name"] = table["zone"].str.removeprefix(ZONE_PREFIX).str.replace("-", " ")
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
