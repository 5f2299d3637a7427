"""Part 1 of the torn-pages lab: pgbench legs with full_page_writes on and off.

Each leg starts right after a checkpoint and records TPS, latency percentiles, WAL bytes and
full-page images (FPIs) per transaction (`pg_stat_wal`), the table's size in pages, the
share of HOT updates, and the bytes the loop device took. A sampler reads the WAL position
and `pg_stat_wal` once a second. For the forced-checkpoint legs the lab also counts, with
pg_walinspect, what the WAL itself holds between the sampled positions (commits, images,
distinct table pages changed), so the burst after a checkpoint is measured without the
statistics' flush lag, and on the exact position where the checkpoint began (its redo LSN).

Every leg draws its own pgbench random seed (the lab's seed plus the leg's number): a leg
that replayed the previous leg's sequence would update rows that the previous leg had just
moved together into a few pages, and would need far fewer page images than a fresh
sequence. One extra forced-checkpoint leg does exactly that, on purpose, to show it.
"""

from __future__ import annotations

import gzip
import itertools
import random
import shlex
import threading
import time
from dataclasses import dataclass

import numpy as np
from docker.models.containers import Container

from labs.errors import LabError
from labs.infra.container_exec import ExecResult, exec_in, run_in
from labs.infra.containers import ContainerError
from labs.progress import Progress
from labs.records import RunRecorder
from labs.tools import pgbench
from labs.torn_pages import walscan
from labs.torn_pages.cluster import OUT, Cluster, psql
from labs.torn_pages.params import Parameters

SECTOR_BYTES = 512  # /sys/block/*/stat counts 512-byte sectors whatever the device's own


@dataclass(frozen=True)
class Leg:
    workload: str  # steady, forced-checkpoint or forced-checkpoint-replay
    fpw: str
    timeout_s: int
    duration_s: int
    force_at_s: int | None
    write_mibps: int
    pgbench_seed: int

    @property
    def name(self) -> str:
        disk = f"limit{self.write_mibps}mibps" if self.write_mibps else "nolimit"
        return f"{self.workload}-{disk}-cpt{self.timeout_s}s-fpw-{self.fpw}"


def plan_legs(p: Parameters) -> tuple[list[Leg], list[Leg]]:
    """The legs on the unlimited disk and on the slow disk, in the order they run."""
    # Which of on/off runs first is drawn per setting from the seed, so that a drift of the
    # machine during the run does not always favour the same side.
    rng = random.Random(p.seed)
    seeds = itertools.count(p.seed + 1)
    order = [(timeout, fpw) for timeout in p.checkpoint_timeouts_s
             for fpw in rng.sample(["on", "off"], 2)]
    fast = [Leg("steady", fpw, timeout, p.duration_s, None, 0, next(seeds))
            for timeout, fpw in order]
    burst = [Leg("forced-checkpoint", fpw, 3600, p.burst_duration_s, p.burst_duration_s // 2,
                  0, next(seeds)) for fpw in rng.sample(["on", "off"], 2)]
    replay = Leg("forced-checkpoint-replay", "on", 3600, p.burst_duration_s,
                 p.burst_duration_s // 2, 0, burst[-1].pgbench_seed)
    slow = [Leg("steady", fpw, timeout, p.slow_duration_s, None, p.write_mibps, next(seeds))
            for timeout, fpw in order] if p.write_mibps else []
    return [*fast, *burst, replay], slow


class Benchmark:
    def __init__(self, params: Parameters, rec: RunRecorder, cluster: Cluster,
                 progress: Progress):
        self.p, self.rec, self.cluster, self.progress = params, rec, cluster, progress

    def run(self) -> None:
        # Settings given with -c outrank ALTER SYSTEM, so the two the legs change
        # (full_page_writes, checkpoint_timeout) must not be among them. wal_keep_size keeps
        # a leg's WAL after its checkpoints, for pg_walinspect to read once the leg is over.
        settings = {"shared_buffers": f"{self.p.shared_buffers_mib}MB", "max_wal_size": "4GB",
                    "wal_keep_size": "2GB", "log_checkpoints": "on"}
        fast, slow = plan_legs(self.p)
        self.progress.step("starting PostgreSQL", "data checksums on")
        container = self.cluster.start("bench", settings, checksums=True)
        self.rec.add_tool_version("postgresql", psql(container, "SELECT version()"))
        self.rec.add_tool_version("pgbench", exec_in(container, ["pgbench", "--version"],
                                                     user="postgres").strip())
        psql(container, "CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        self.progress.step("pgbench -i", f"scale {self.p.scale}")
        init = pgbench.init_command(self.p.scale, self.p.clients)
        self.rec.add_command(shlex.join(init))
        self.rec.add_raw("bench/init.txt", exec_in(container, init, user="postgres"))
        self.progress.step("warm-up", f"pgbench {self.p.warmup_s} s (not measured)")
        if self.p.warmup_s:
            warm = pgbench.run_command(self.p.clients, self.p.threads, self.p.warmup_s, 5,
                                       extra=[f"--random-seed={self.p.seed}"])
            self.rec.add_command(shlex.join(warm))
            self.rec.add_raw("bench/warmup.txt", exec_in(container, warm, user="postgres"))
        for leg in fast:
            self.progress.step("a pgbench leg", describe(leg))
            LegRun(self, container, "bench", leg).run()
        self.rec.add_raw("bench/server.log", container.logs().decode(errors="replace"))
        container.stop(timeout=120)
        if not slow:
            return
        # The same cluster on a slow disk: a new container on the same data directory,
        # its writes to the loop device limited by the kernel's blkio throttling.
        slow_container = self.cluster.start("bench-slow", settings, checksums=True,
                                            write_mibps=self.p.write_mibps, data_name="bench")
        for leg in slow:
            self.progress.step("a pgbench leg", describe(leg))
            LegRun(self, slow_container, "bench-slow", leg).run()
        self.rec.add_raw("bench/server-slow.log",
                         slow_container.logs().decode(errors="replace"))
        slow_container.stop(timeout=120)


def describe(leg: Leg) -> str:
    where = f" on a disk limited to {leg.write_mibps} MiB/s" if leg.write_mibps else ""
    what = f"checkpoint_timeout={leg.timeout_s}s"
    if leg.force_at_s is not None:
        what = f"CHECKPOINT forced at {leg.force_at_s} s"
        if leg.workload.endswith("replay"):
            what += ", replaying the previous leg's transactions"
    return (f"{leg.duration_s} s{where}, full_page_writes={leg.fpw}, {what}, "
            f"--random-seed={leg.pgbench_seed}")


def apply_settings(container: Container, fpw: str, timeout_s: int, attempts: int = 5) -> None:
    """Put full_page_writes and checkpoint_timeout in force, then start at a checkpoint.

    A new session's SHOW is not enough: the server applies both settings when the
    checkpointer processes the reload, which it does only between checkpoints (a slow,
    spread checkpoint of the previous leg can hold it for a long time). So: finish any
    checkpoint, reload, take the leg's starting checkpoint, and check the value that
    checkpoint record carries (pg_control_checkpoint), retrying until it agrees.
    """
    psql(container, "CHECKPOINT")  # let a running checkpoint finish first
    psql(container, f"ALTER SYSTEM SET full_page_writes = {fpw}")
    psql(container, f"ALTER SYSTEM SET checkpoint_timeout = '{timeout_s}s'")
    shown = ""
    for attempt in range(1, attempts + 1):
        psql(container, "SELECT pg_reload_conf()")
        time.sleep(attempt)  # the checkpointer takes the reload between checkpoints
        # Every leg starts right after a checkpoint: where full-page writes cost most.
        psql(container, "CHECKPOINT")
        shown = psql(container, "SELECT full_page_writes FROM pg_control_checkpoint()")
        if shown == ("t" if fpw == "on" else "f"):
            break
    else:
        raise LabError(f"full_page_writes={fpw} was not in force after {attempts} "
                       f"reloads (the last checkpoint record says {shown!r})")
    setting = psql(container, "SELECT setting FROM pg_settings "
                              "WHERE name = 'checkpoint_timeout'")
    if int(setting) != timeout_s:
        raise LabError(f"checkpoint_timeout is {setting} s, not {timeout_s} s")


TABLE_QUERY = ("SELECT pg_relation_size('pgbench_accounts') / 8192, "
               "pg_relation_size('pgbench_accounts_pkey') / 8192, "
               "pg_relation_filenode('pgbench_accounts'), n_tup_upd, n_tup_hot_upd "
               "FROM pg_stat_user_tables WHERE relid = 'pgbench_accounts'::regclass")
CHECKPOINTS_QUERY = "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"


class LegRun:
    """One pgbench leg: settings, sampling, pgbench, and what the leg records."""

    def __init__(self, bench: Benchmark, container: Container, out_name: str, leg: Leg):
        self.bench, self.container, self.out_name, self.leg = bench, container, out_name, leg
        self.rec, self.cluster, self.p = bench.rec, bench.cluster, bench.p
        self.samples: list[str] = []
        self.forced: dict[str, float | str] = {}

    def device_written_bytes(self) -> int:
        name = self.cluster.fs.device.rsplit("/", 1)[-1]
        stat = self.cluster.host.run(["cat", f"/sys/block/{name}/stat"], timeout_s=30).stdout
        return int(stat.split()[6]) * SECTOR_BYTES

    def force_checkpoint(self) -> None:
        time.sleep(self.leg.force_at_s)
        self.forced["issued"] = time.time()
        psql(self.container, "CHECKPOINT")
        self.forced["done"] = time.time()
        self.forced["redo_lsn"] = psql(self.container,
                                       "SELECT redo_lsn FROM pg_control_checkpoint()")

    def run(self) -> None:
        leg, container = self.leg, self.container
        apply_settings(container, leg.fpw, leg.timeout_s)
        psql(container, "SELECT pg_stat_reset_shared('wal')")
        heap_pages, index_pages, filenode, upd_before, hot_before = (
            int(x) for x in psql(container, TABLE_QUERY).split("|"))
        checkpoints_before = int(psql(container, CHECKPOINTS_QUERY))
        device_before = self.device_written_bytes()
        leg_dir = f"{self.cluster.out_dir(self.out_name)}/{leg.name}"
        started_epoch, result = self._run_pgbench()
        summary_text = self.cluster.read_text(f"{leg_dir}/summary.txt")
        progress_text = self.cluster.read_text(f"{leg_dir}/progress.txt")
        if result.exit_code != 0:
            tail = progress_text.strip().splitlines()[-1:] or ["no output"]
            raise LabError(f"pgbench ({leg.name}) exited with {result.exit_code}: {tail[0]}")
        wal_counts = self._wal_counts()
        checkpoints = int(psql(container, CHECKPOINTS_QUERY)) - checkpoints_before
        device_bytes = self.device_written_bytes() - device_before
        _, _, _, upd_after, hot_after = (int(x) for x in psql(container, TABLE_QUERY).split("|"))
        log_texts = self._keep_raw_files(leg_dir, summary_text, progress_text)
        summary = pgbench.parse_summary(summary_text, f"{leg.name}/summary.txt")
        tlog = pgbench.parse_log_texts(log_texts)
        add = self.adder()
        _add_pgbench_results(add, summary, tlog)
        _add_wal_results(add, wal_counts, summary.transactions)
        add("checkpoints", checkpoints, "count")
        add("pgbench_seed", leg.pgbench_seed, "count")
        add("accounts_heap_pages", heap_pages, "count")
        add("accounts_index_pages", index_pages, "count")
        updates = upd_after - upd_before
        add("hot_update_share", (hot_after - hot_before) / updates if updates else 0, "ratio")
        add("device_write_bytes", device_bytes, "bytes")
        add("device_write_bytes_per_tx", device_bytes / summary.transactions, "bytes/tx")
        for row in pgbench.parse_progress(progress_text):
            add("tps_per_second", row["tps"], "tps", time_s=row["time_s"])
        self.per_interval(add, np.sort(tlog.epoch_s), started_epoch)
        if self.forced:
            add("forced_checkpoint_at", self.forced["issued"] - started_epoch, "s")
            add("forced_checkpoint_done_at", self.forced["done"] - started_epoch, "s")
        if leg.force_at_s is not None:
            self.inspect_wal(add, filenode, started_epoch)

    def _run_pgbench(self) -> tuple[float, ExecResult]:
        """pgbench in the container while threads sample the WAL (and, in a forced-checkpoint
        leg, force the checkpoint); returns when it started (epoch s) and how it exited."""
        leg, container = self.leg, self.container
        exec_in(container, ["mkdir", "-p", f"{OUT}/{leg.name}"], user="postgres")
        command = pgbench.run_command(self.p.clients, self.p.threads, leg.duration_s, 1,
                                      log_prefix="pgbench_log",
                                      extra=[f"--random-seed={leg.pgbench_seed}"])
        self.rec.add_command(shlex.join(command))
        script = f"cd {OUT}/{leg.name} && {shlex.join(command)} > summary.txt 2> progress.txt"
        stop = threading.Event()
        started_epoch = time.time()
        threads = [threading.Thread(target=_sample_wal, args=(container, self.samples, stop),
                                    daemon=True)]
        if leg.force_at_s is not None:
            threads.append(threading.Thread(target=self.force_checkpoint, daemon=True))
        for thread in threads:
            thread.start()
        result = run_in(container, ["sh", "-c", script], user="postgres")
        stop.set()
        for thread in threads:
            thread.join()
        return started_epoch, result

    def _wal_counts(self) -> tuple[int, int, int, int, int]:
        """pg_stat_wal since the leg's reset: bytes, images, records, writes and syncs."""
        wal = psql(self.container, "SELECT wal_bytes, wal_fpi, wal_records, wal_write, wal_sync "
                                   "FROM pg_stat_wal")
        wal_bytes, wal_fpi, wal_records, wal_writes, wal_syncs = (
            int(float(x)) for x in wal.split("|"))
        return wal_bytes, wal_fpi, wal_records, wal_writes, wal_syncs

    def _keep_raw_files(self, leg_dir: str, summary_text: str, progress_text: str
                        ) -> list[tuple[str, str]]:
        """Record the leg's raw files; returns its per-transaction logs as (name, text)."""
        leg = self.leg
        names = self.cluster.host.sudo(["ls", "-1", "--", leg_dir], timeout_s=60).stdout.split()
        log_texts = []
        for name in pgbench.log_file_names(names, "pgbench_log"):
            raw = self.cluster.fetch(f"{leg_dir}/{name}")
            # One line per transaction: compressed, they are 5x smaller.
            self.rec.add_raw(f"bench/{leg.name}/{name}.gz", gzip.compress(raw, mtime=0))
            log_texts.append((f"{leg.name}/{name}", raw.decode()))
        self.rec.add_raw(f"bench/{leg.name}/summary.txt", summary_text)
        self.rec.add_raw(f"bench/{leg.name}/progress.txt", progress_text)
        self.rec.add_raw(f"bench/{leg.name}/wal-samples.txt", "\n".join(self.samples) + "\n")
        return log_texts

    def adder(self):
        leg = self.leg
        dims = {"full_page_writes": leg.fpw, "checkpoint_timeout_s": leg.timeout_s,
                "leg": leg.name, "write_limit_mibps": leg.write_mibps}

        def add(metric: str, value: float, unit: str, **extra: float) -> None:
            self.rec.add_result(config=f"fpw-{leg.fpw}", workload=leg.workload, metric=metric,
                                value=value, unit=unit, **dims, **extra)
        return add

    def per_interval(self, add, finished: np.ndarray, started_epoch: float) -> None:
        """Per sample interval, from pg_stat_wal and the WAL position: rates and per-tx.

        Completed transactions by time come from the per-transaction logs: dividing each
        interval's WAL by its own transactions keeps TPS swings out of the ratio.
        """
        previous = None
        for line in self.samples:
            epoch, lsn, fpi, _ = line.split("|")
            epoch, lsn, fpi = float(epoch), float(lsn), float(fpi)
            if previous is not None and epoch > previous[0]:
                seconds = epoch - previous[0]
                at = round(epoch - started_epoch, 2)
                add("wal_mib_per_second", (lsn - previous[1]) / seconds / 2**20, "MiB/s",
                    time_s=at)
                add("wal_fpi_per_second", (fpi - previous[2]) / seconds, "count", time_s=at)
                done = int(np.searchsorted(finished, epoch) -
                           np.searchsorted(finished, previous[0]))
                if done > 0:
                    add("wal_bytes_per_tx_interval", (lsn - previous[1]) / done, "bytes/tx",
                        time_s=at)
                    add("wal_fpi_per_tx_interval", (fpi - previous[2]) / done, "ratio",
                        time_s=at)
            previous = (epoch, lsn, fpi)

    def inspect_wal(self, add, filenode: int, started_epoch: float) -> None:
        """The WAL between consecutive samples, read back with pg_walinspect.

        The forced checkpoint's redo position is one of the boundaries, so every interval
        lies wholly before or after the point from which pages need a new image.
        """
        points = []  # (epoch, lsn bytes, lsn text, pg_stat_wal fpi)
        for line in self.samples:
            epoch, lsn, fpi, text = line.split("|")
            points.append((float(epoch), int(float(lsn)), text, int(float(fpi))))
        redo_bytes = None
        if "redo_lsn" in self.forced:
            redo_text = str(self.forced["redo_lsn"])
            redo_bytes = walscan.lsn_bytes(redo_text)
            lsns = [p[1] for p in points]
            at = int(np.searchsorted(lsns, redo_bytes))
            if 0 < at < len(points) and redo_bytes not in lsns:
                (e0, l0, _, f0), (e1, l1, _, f1) = points[at - 1], points[at]
                share = (redo_bytes - l0) / (l1 - l0)
                points.insert(at, (e0 + share * (e1 - e0), redo_bytes, redo_text,
                                   round(f0 + share * (f1 - f0))))
            add("forced_checkpoint_redo_at",
                float(np.interp(redo_bytes, [p[1] for p in points], [p[0] for p in points]))
                - started_epoch, "s")
        bounds = [(a[2], b[2]) for a, b in zip(points, points[1:], strict=False)]
        if not bounds:
            raise LabError(f"{self.leg.name}: fewer than two WAL samples to inspect")
        text = psql(self.container, walscan.interval_query(bounds, filenode))
        self.rec.add_raw(f"bench/{self.leg.name}/wal-intervals.txt",
                         "\n".join(f"{a} {b}" for a, b in bounds) + "\n\n" + text + "\n")
        rows = walscan.parse_intervals(text, len(bounds), f"{self.leg.name}/wal-intervals")
        since = 0  # commits since the latest checkpoint began, at each interval's start
        for row, a, b in zip(rows, points, points[1:], strict=False):
            if redo_bytes is not None and a[1] == redo_bytes:
                since = 0
            at = round(b[0] - started_epoch, 2)
            add("inspected_interval_start", round(a[0] - started_epoch, 2), "s", time_s=at)
            add("inspected_commits", row.commits, "count", time_s=at)
            add("inspected_commits_since_checkpoint", since, "count", time_s=at)
            add("inspected_fpi", row.full_page_images, "count", time_s=at)
            add("inspected_image_bytes", row.image_bytes, "bytes", time_s=at)
            add("inspected_wal_bytes", b[1] - a[1], "bytes", time_s=at)
            add("inspected_accounts_pages", row.accounts_pages, "count", time_s=at)
            add("inspected_accounts_images", row.accounts_images, "count", time_s=at)
            add("stats_fpi", b[3] - a[3], "count", time_s=at)
            since += row.commits


def _add_pgbench_results(add, summary: pgbench.PgbenchSummary,
                         tlog: pgbench.TransactionLog) -> None:
    add("tps", summary.tps, "tps")
    add("transactions", summary.transactions, "count")
    add("failed_transactions", summary.failed, "count")
    add("latency_avg", summary.latency_avg_ms, "ms")
    for percent in (50, 95, 99):
        add(f"latency_p{percent}", tlog.percentile_ms(percent), "ms")
    add("log_transactions", tlog.transactions, "count")


def _add_wal_results(add, wal_counts: tuple[int, int, int, int, int],
                     transactions: int) -> None:
    wal_bytes, wal_fpi, wal_records, wal_writes, wal_syncs = wal_counts
    add("wal_bytes", wal_bytes, "bytes")
    add("wal_fpi", wal_fpi, "count")
    add("wal_records", wal_records, "count")
    add("wal_writes", wal_writes, "count")
    add("wal_syncs", wal_syncs, "count")
    add("wal_bytes_per_tx", wal_bytes / transactions, "bytes/tx")
    add("wal_fpi_per_tx", wal_fpi / transactions, "ratio")


def _sample_wal(container: Container, samples: list[str], stop: threading.Event) -> None:
    # The WAL position and pg_stat_wal's image counter read in one query, so the two can be
    # compared: the position is exact, the counter is what backends have flushed so far.
    query = ("SELECT extract(epoch FROM clock_timestamp()), "
             "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'), wal_fpi, pg_current_wal_lsn() "
             "FROM pg_stat_wal")
    while not stop.is_set():
        try:
            line = psql(container, query)
            fields = line.split("|")
            if len(fields) == 4:
                [float(x) for x in fields[:3]]  # keep only complete samples
                walscan.lsn_bytes(fields[3])
                samples.append(line)
        except (ContainerError, ValueError, LabError):
            pass  # a missed sample only widens the next interval
        stop.wait(1.0)
