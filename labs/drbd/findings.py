"""What a DRBD run found, as typed values: the page (labs/drbd/figures.py) formats them, and
the claim tests (tests/test_drbd_recorded.py) assert them, each naming the paragraph of
book/drbd/lab.md it backs.

Pure page code: it reads a recorded run (the tables of labs/drbd/results.py) and calls the
model; it never touches a VM.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pandas as pd

from labs.drbd import article, model
from labs.drbd.params import Parameters
from labs.drbd.results import (
    article_results,
    drill_results,
    fio_results,
    local_row,
    pgbench_results,
    ping_results,
    zone_results,
)
from labs.records import RecordedRun


@dataclass(frozen=True)
class Point:
    """One measurement beside the model: a fio latency (ms), a rate (MiB/s) or a fraction of
    the local disk's TPS."""

    protocol: str
    added_rtt_ms: float
    rtt_ms: float
    measured: float
    model: float
    what: str = ""  # the fio job, where there are several at one point

    @property
    def error_pct(self) -> float:
        """How far the measurement lies from the model, % of the model (+ above it)."""
        return 100 * (self.measured / self.model - 1)


@dataclass(frozen=True)
class Zone:
    """pgbench under C at one of the article's zones, on the run's time scale."""

    name: str
    target_rtt_ms: float  # the round trip the model asked for
    rtt_ms: float  # the one ping measured there
    ratio: float  # TPS as a fraction of the bare disk's
    article_ratio: float
    model_ratio: float  # at the measured round trip

    @property
    def article_error_pct(self) -> float:
        return 100 * (self.ratio / self.article_ratio - 1)

    @property
    def model_error_pct(self) -> float:
        return 100 * (self.ratio / self.model_ratio - 1)


@dataclass(frozen=True)
class Drill:
    """One failover drill: commits acknowledged, lost on the survivor, and A's model."""

    protocol: str
    rtt_ms: float
    acknowledged: int
    lost: int
    commits_per_s: float
    differing_mib: int
    noticed_s: float
    resync_mib: float
    resync_s: float

    @property
    def expected_lost(self) -> float:
        """Little's law: commits made while an acknowledged one still travels to the peer
        (half a round trip). What protocol A's model expects a cut to take; C's is 0."""
        if self.protocol != "A":
            return 0.0
        return model.writes_in_flight(self.commits_per_s, window_ms=self.rtt_ms / 2)


@dataclass(frozen=True)
class Findings:
    params: Parameters
    link_rtt_ms: float  # ping's median at the sweep's first point with nothing added
    before_drbd_rtt_ms: float  # the first ping, on the idle link before DRBD came up
    local_write_ms: float  # a 4 KiB O_DIRECT write on the primary's own disk (p50)
    local_flush_ms: float  # the fdatasync after it (p50)
    peer_write_ms: float
    peer_flush_ms: float
    send_ms: float  # protocol A's write at the smallest round trip: handing it to the network
    waits: tuple[Point, ...]  # plain 4 KiB writes on DRBD, each protocol and round trip
    pairs: tuple[Point, ...]  # a write and its fdatasync, the same
    a_cycles_ms: tuple[float, ...]  # protocol A's plain writes: the mean time per write
    disconnected_iops: float
    local_iops: float
    local_tps: float
    disconnected_tps: float
    local_primary_cores: float  # the primary's QEMU during pgbench on its own disk
    anchor: Point  # pgbench under C at the link's own round trip (a fraction of local TPS)
    anchor_fio_added_ms: float  # fio's write and flush there, beyond the bare disk's
    anchor_sent_kib_per_tx: float  # what DRBD sent to the peer per transaction there
    sweep: tuple[Point, ...]  # pgbench under C at every round trip, beside the model
    others_at_top: dict[str, float]  # pgbench under A and B at the largest, as fractions
    time_scale: float  # k
    zones: tuple[Zone, ...]  # under C, one zone and two
    others_across: dict[str, float]  # pgbench under A and B across zones, as fractions
    jobs: tuple[Point, ...]  # the article's fio jobs on the mirror, MiB/s
    slowest_job: tuple[str, float, str, float]  # protocol, added ms, job, its median write ms
    local_seq1m_mib_s: float  # 1 MiB writes in order on the primary's own disk
    cores: int  # the processors of the machine that runs both VMs
    drills: dict[str, Drill]
    wall_time_s: float

    def waits_of(self, protocol: str) -> tuple[Point, ...]:
        return tuple(p for p in self.waits if p.protocol == protocol)

    def zone(self, name: str) -> Zone:
        return next(z for z in self.zones if z.name == name)

    @property
    def lab_ms_per_transaction(self) -> float:
        return 1000 / self.local_tps

    @property
    def anchor_added_ms(self) -> float:
        """What the mirror added to each transaction under C at the link's own round trip."""
        return 1000 / (self.anchor.measured * self.local_tps) - self.lab_ms_per_transaction


def findings(run: RecordedRun) -> Findings:
    params = Parameters.of(run)
    fio = fio_results(run)
    host, peer = params.host, params.peer
    tps = pgbench_results(run)
    local_tps = float(tps.loc[tps["config"] == "local", "tps"].iloc[0])
    under_c = _pgbench_points(tps[tps["protocol"] == "C"])
    pings = ping_results(run).set_index("config")
    zones, jobs = zone_results(run), article_results(run)
    return Findings(
        params=params,
        link_rtt_ms=_link_rtt_ms(pings),
        before_drbd_rtt_ms=float(pings.loc["link", "rtt_p50_ms"]),
        local_write_ms=float(local_row(fio, f"local-{host}", "direct")["write_p50_ms"]),
        local_flush_ms=float(local_row(fio, f"local-{host}", "fdatasync")["sync_p50_ms"]),
        peer_write_ms=float(local_row(fio, f"local-{peer}", "direct")["write_p50_ms"]),
        peer_flush_ms=float(fio.attrs["peer_flush_ms"]),
        send_ms=float(fio.attrs["send_ms"]),
        waits=_fio_points(fio, "direct"), pairs=_fio_points(fio, "fdatasync"),
        a_cycles_ms=tuple(fio[(fio["variant"] == "direct") & (fio["protocol"] == "A")]
                          ["cycle_ms"].astype(float)),
        disconnected_iops=float(local_row(fio, "drbd-disconnected", "direct")["iops"]),
        local_iops=float(local_row(fio, f"local-{host}", "direct")["iops"]),
        local_tps=local_tps,
        disconnected_tps=float(tps.loc[tps["config"] == "drbd-disconnected", "tps"].iloc[0]),
        local_primary_cores=float(tps.loc[tps["config"] == "local", "primary_cores"].iloc[0]),
        anchor=under_c[0], anchor_fio_added_ms=_fio_added_at_anchor(fio, host, under_c[0]),
        anchor_sent_kib_per_tx=_sent_kib_per_tx(tps, under_c[0]),
        sweep=under_c,
        others_at_top={row.protocol: row.tps / local_tps for row in
                       tps[tps["protocol"].isin(["A", "B"])].itertuples()},
        time_scale=model.time_scale(lab_ms_per_transaction=1000 / local_tps,
                                    article_ms_per_transaction=article.sample_ms_per_transaction()),
        zones=_zones(zones), others_across=_others_across(zones),
        jobs=_job_points(jobs), slowest_job=_slowest_job(jobs),
        local_seq1m_mib_s=_local_seq1m_mib_s(jobs, host),
        cores=int(run.meta["host"]["controller"]["cpu_count"]), drills=_drills(run),
        wall_time_s=_wall_time_s(run))


def _link_rtt_ms(pings: pd.DataFrame) -> float:
    """The link's own round trip: ping's median at the sweep's point with no round trip
    added, measured just before its fio runs (the pings the model uses); the ping before
    DRBD came up where the sweep added a round trip at every point."""
    name = "added-0" if "added-0" in pings.index else "link"
    return float(pings.loc[name, "rtt_p50_ms"])


def _fio_points(fio: pd.DataFrame, variant: str) -> tuple[Point, ...]:
    rows = fio[(fio["variant"] == variant) & fio["protocol"].isin(model.PROTOCOLS)]
    rows = rows.sort_values(["protocol", "added_rtt_ms"])
    return tuple(Point(r.protocol, float(r.added_rtt_ms), float(r.rtt_ms),
                       float(r.measured_ms), float(r.model_ms)) for r in rows.itertuples())


def _pgbench_points(under_c: pd.DataFrame) -> tuple[Point, ...]:
    under_c = under_c.sort_values("added_rtt_ms")
    return tuple(Point("C", float(r.added_rtt_ms), float(r.rtt_ms), r.ratio_pct / 100,
                       r.model_ratio_pct / 100) for r in under_c.itertuples())


def _fio_added_at_anchor(fio: pd.DataFrame, host: str, anchor: Point) -> float:
    """fio's write and fdatasync under C at the anchor's round trip, beyond the bare disk's."""
    pair = fio[(fio["variant"] == "fdatasync") & (fio["protocol"] == "C")
               & (fio["added_rtt_ms"] == anchor.added_rtt_ms)]["measured_ms"].iloc[0]
    return float(pair - local_row(fio, f"local-{host}", "fdatasync")["measured_ms"])


def _sent_kib_per_tx(tps: pd.DataFrame, anchor: Point) -> float:
    row = tps[(tps["protocol"] == "C") & (tps["added_rtt_ms"] == anchor.added_rtt_ms)].iloc[0]
    return float(row["sent_bytes"] / 1024 / row["transactions"])


def _zones(table: pd.DataFrame) -> tuple[Zone, ...]:
    """pgbench under C at each zone (results.zone_results: none without --article-zones)."""
    if table.empty:
        return ()
    under_c = table[table["protocol"] == "C"]
    return tuple(Zone(r.name, float(r.target_rtt_ms),
                      float(r.rtt_ms), float(r.ratio), float(r.article_ratio),
                      float(r.model_ratio)) for r in under_c.itertuples())


def _others_across(table: pd.DataFrame) -> dict[str, float]:
    if table.empty:
        return {}
    across = table[(table["zone"] == "zone-two-zones") & (table["protocol"] != "C")]
    return {r.protocol: float(r.ratio) for r in across.itertuples()}


def _on_the_mirror(jobs: pd.DataFrame) -> pd.DataFrame:
    """The article's jobs on DRBD with its peer connected: the rows the model predicts."""
    return jobs[jobs["model_mib_s"].notna()]


def _job_points(jobs: pd.DataFrame) -> tuple[Point, ...]:
    table = _on_the_mirror(jobs)
    return tuple(Point(r.protocol, float(r.added_rtt_ms), float(r.rtt_ms), float(r.mib_s),
                       float(r.model_mib_s), what=r.label) for r in table.itertuples())


def _slowest_job(jobs: pd.DataFrame) -> tuple[str, float, str, float]:
    """The article's job on the mirror whose median write took longest."""
    table = _on_the_mirror(jobs)
    row = table.loc[table["write_p50_ms"].idxmax()]
    return (str(row["protocol"]), float(row["added_rtt_ms"]), str(row["label"]),
            float(row["write_p50_ms"]))


def _local_seq1m_mib_s(jobs: pd.DataFrame, host: str) -> float:
    rows = jobs[(jobs["config"] == f"local-{host}") & (jobs["job"] == "seq-write-1m")]
    return float(rows["mib_s"].iloc[0])


def _drills(run: RecordedRun) -> dict[str, Drill]:
    return {r.protocol: Drill(r.protocol, float(r.rtt_ms), int(r.acknowledged), int(r.lost),
                              float(r.commits_per_s), int(r.differing_mib),
                              float(r.peer_noticed_s), r.resync_bytes / 2**20,
                              float(r.resync_s))
            for r in drill_results(run).itertuples()}


def _wall_time_s(run: RecordedRun) -> float:
    started, finished = (dt.datetime.fromisoformat(run.meta[key])
                         for key in ("started_at", "finished_at"))
    return (finished - started).total_seconds()
