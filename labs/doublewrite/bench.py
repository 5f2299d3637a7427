"""Part 1 of the doublewrite lab: sysbench oltp_insert with innodb_doublewrite ON and OFF.

A table of `initial_rows` rows is made once (sysbench prepare) and shut down cleanly; every
leg starts MariaDB on a fresh copy of it, with a cold buffer pool, and inserts the same
number of rows with the same seed. Before and after the inserts the leg reads the lab's
loop device's own write counters and InnoDB's counters (SHOW GLOBAL STATUS), so bytes per
row come from the device itself and are split by InnoDB into page writes, doublewrite
copies and redo log. The write-limited legs run the same server with its writes to the
loop device throttled by the kernel (cgroup blkio), as a slow volume would.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shlex
import time

from labs.doublewrite.params import Parameters
from labs.doublewrite.server import TEMPLATE, Servers, exec_long, sql, status, variables
from labs.errors import LabError
from labs.infra.container_exec import exec_in
from labs.progress import Progress
from labs.records import RunRecorder
from labs.tools import mariadb, sysbench

LEG_DATA = "leg"
PERCENTILES = (50, 95, 99)


def server_settings(params: Parameters, doublewrite: str, buffer_pool_mib: int
                    ) -> dict[str, str | int | bool]:
    """What every leg runs with; only innodb_doublewrite and the pool size vary."""
    return {
        "innodb_doublewrite": doublewrite,
        "innodb_buffer_pool_size": f"{buffer_pool_mib}M",
        "innodb_log_file_size": f"{params.log_file_mib}M",
        # Every commit waits for its redo to be on the device, as on RDS.
        "innodb_flush_log_at_trx_commit": 1,
        # Pages bypass the page cache: what InnoDB writes is what the device sees, when
        # InnoDB writes it (so the write limit applies to it).
        "innodb_flush_method": "O_DIRECT",
        # Every leg starts cold, whatever the previous leg left in its buffer pool.
        "innodb_buffer_pool_load_at_startup": False,
        "innodb_buffer_pool_dump_at_shutdown": False,
    }


def oltp_options(params: Parameters) -> sysbench.OltpOptions:
    return sysbench.OltpOptions(
        script="oltp_insert", tables=1, table_size=params.initial_rows,
        threads=params.threads, time_s=0, events=params.rows, report_interval_s=1,
        rand_seed=params.seed, extra=(("rand_type", params.key_distribution),),
        histogram=True, percentile=99)


def planned_legs(p: Parameters) -> list[tuple[str, int, int, int]]:
    """(innodb_doublewrite, buffer pool MiB, write limit MiB/s, repetition) of each leg, in
    the order they run."""
    # Which of ON/OFF runs first is drawn per pair from the seed, so that a drift of the
    # shared machine during the run does not always favour the same side.
    rng = random.Random(p.seed)
    return [(doublewrite, pool_mib, limit, repetition)
            for pool_mib in p.buffer_pools_mib for limit in p.disks()
            for repetition in range(1, p.repetitions + 1)
            for doublewrite in rng.sample(["ON", "OFF"], 2)]


class Benchmark:
    def __init__(self, params: Parameters, rec: RunRecorder, servers: Servers,
                 progress: Progress):
        self.p, self.rec, self.servers, self.progress = params, rec, servers, progress
        self.index = 0

    def make_template(self) -> None:
        """The table every leg starts from, on the lab's file system, shut down cleanly."""
        self.progress.step("sysbench prepare", f"a table of {self.p.initial_rows:,} rows")
        # A large pool only to load faster; the legs set their own.
        settings = server_settings(self.p, "ON", 256)
        container = self.servers.start("template", settings, TEMPLATE)
        self.rec.add_tool_version("mariadb", sql(container, "SELECT VERSION()"))
        self.rec.add_tool_version("sysbench", exec_in(container, ["sysbench", "--version"])
                                  .strip())
        sql(container, "CREATE DATABASE sbtest")
        prepare = sysbench.oltp_command("prepare", oltp_options(self.p))
        self.rec.add_command(shlex.join(prepare))
        started = time.monotonic()
        self.rec.add_raw("bench/prepare.txt", exec_long(container, prepare))
        prepare_s = time.monotonic() - started
        rows = int(sql(container, "SELECT COUNT(*) FROM sbtest.sbtest1"))
        if rows != self.p.initial_rows:
            raise LabError(f"sysbench prepare made {rows} rows, not {self.p.initial_rows}")
        size = sql(container, "SELECT DATA_LENGTH + INDEX_LENGTH FROM information_schema."
                              "TABLES WHERE TABLE_SCHEMA='sbtest' AND TABLE_NAME='sbtest1'")
        self.servers.stop(container)
        self.rec.add_raw("bench/template-server.log", container.logs().decode(errors="replace"))
        self.servers.remove(container)
        for metric, value, unit in (("prepare_s", prepare_s, "s"), ("table_rows", rows, "count"),
                                    ("table_bytes", int(size), "bytes")):
            self.rec.add_result(config="template", workload="prepare", metric=metric,
                                value=round(value, 3), unit=unit)

    def run(self) -> None:
        self.make_template()
        for doublewrite, pool_mib, limit, repetition in planned_legs(self.p):
            self.run_leg(doublewrite, pool_mib, limit, repetition)
        self.servers.remove_data(LEG_DATA)

    def settings(self, doublewrite: str, buffer_pool_mib: int = 64) -> dict:
        return server_settings(self.p, doublewrite, buffer_pool_mib)

    def run_leg(self, doublewrite: str, pool_mib: int, limit_mibps: int,
                repetition: int) -> None:
        disk = f"limit{limit_mibps}" if limit_mibps else "nolimit"
        leg = f"bp{pool_mib}-{disk}-r{repetition}-dblwr-{doublewrite.lower()}"
        self.index += 1
        self.progress.step(
            "inserts", f"{self.p.rows:,} of them, innodb_doublewrite={doublewrite}, buffer pool "
            f"{pool_mib} MiB, " + (f"writes limited to {limit_mibps} MiB/s" if limit_mibps
                                   else "no write limit") + f" (repetition {repetition})")
        started = time.monotonic()
        self.servers.copy_data(TEMPLATE, LEG_DATA)
        copied = time.monotonic()
        container = self.servers.start(f"leg{self.index}", server_settings(
            self.p, doublewrite, pool_mib), LEG_DATA, write_mibps=limit_mibps)
        overheads = {"copy_s": copied - started, "start_s": time.monotonic() - copied}
        seen_variables = variables(container)
        seen = mariadb.server_settings(seen_variables)
        if seen.doublewrite != doublewrite:
            raise LabError(f"{leg}: the server reports innodb_doublewrite={seen.doublewrite}")
        if self.index == 1:
            self.rec.add_raw("bench/server-variables.json", json.dumps(
                {k: seen_variables[k] for k in sorted(seen_variables)
                 if k.startswith("innodb_") or k == "version"}, indent=1))
        command = sysbench.oltp_command("run", oltp_options(self.p))
        self.rec.add_command(shlex.join(command))
        device_before, innodb_before = self.servers.device_stats(), status(container)
        started = time.monotonic()
        output = exec_long(container, command)
        wall_s = time.monotonic() - started
        device_after, innodb_after = self.servers.device_stats(), status(container)
        stop_s = self.servers.stop(container)
        device_stopped = self.servers.device_stats()
        self.rec.add_raw(f"bench/{leg}/sysbench.txt", output)
        self.rec.add_raw(f"bench/{leg}/status-before.json", json.dumps(innodb_before, indent=1))
        self.rec.add_raw(f"bench/{leg}/status-after.json", json.dumps(innodb_after, indent=1))
        self.rec.add_raw(f"bench/{leg}/server.log", container.logs().decode(errors="replace"))
        self.servers.remove(container)
        overheads.update(wall_s=wall_s, shutdown_s=stop_s)
        self.record(leg, doublewrite, pool_mib, limit_mibps, repetition, output, overheads,
                    device_after - device_before, device_stopped - device_before,
                    mariadb.innodb_writes(innodb_after) - mariadb.innodb_writes(innodb_before))

    def record(self, leg: str, doublewrite: str, pool_mib: int, limit_mibps: int,
               repetition: int, output: str, seconds: dict[str, float], device_run,
               device_with_stop, innodb: mariadb.InnodbWrites) -> None:
        result = sysbench.parse_oltp(output, f"{leg}/sysbench.txt")
        histogram = sysbench.parse_histogram(output, f"{leg}/sysbench.txt")
        rows = result.transactions
        if rows != self.p.rows or result.ignored_errors:
            raise LabError(f"{leg}: sysbench inserted {rows} rows with "
                           f"{result.ignored_errors} errors; expected {self.p.rows}, none")
        dims = {"doublewrite": doublewrite, "buffer_pool_mib": pool_mib,
                "write_limit_mibps": limit_mibps, "repetition": repetition, "leg": leg}

        def add(metric: str, value: float, unit: str, **extra: float) -> None:
            self.rec.add_result(config=f"dblwr-{doublewrite.lower()}", workload="oltp_insert",
                                metric=metric, value=value, unit=unit, **dims, **extra)

        add("rows", rows, "count")
        add("tps", result.tps, "tps")
        add("elapsed_s", result.general.total_time_s, "s")
        for name, value in seconds.items():  # wall time of sysbench, and the leg's overheads
            add(name, round(value, 3), "s")
        add("latency_avg", result.general.latency.avg_ms, "ms")
        add("latency_max", result.general.latency.max_ms, "ms")
        for percent in PERCENTILES:
            add(f"latency_p{percent}", histogram.percentile_ms(percent), "ms")
        add("device_write_bytes", device_run.write_sectors * 512, "bytes")
        add("device_writes", device_run.writes, "count")
        add("device_write_bytes_with_shutdown", device_with_stop.write_sectors * 512, "bytes")
        add("device_read_bytes", device_run.read_sectors * 512, "bytes")
        for field in dataclasses.fields(innodb):
            if field.name != "buffer_pool_pages_dirty":
                add(f"innodb_{field.name}", getattr(innodb, field.name),
                    "bytes" if field.name.endswith("_bytes") else "count")
        # The per-row figures the chapter's model uses.
        add("device_bytes_per_row", device_run.write_sectors * 512 / rows, "bytes/row")
        add("device_bytes_per_row_with_shutdown", device_with_stop.write_sectors * 512 / rows,
            "bytes/row")
        add("pages_written_per_row", innodb.pages_written / rows, "pages/row")
        add("dblwr_pages_per_row", innodb.dblwr_pages_written / rows, "pages/row")
        add("redo_bytes_per_row", innodb.os_log_written_bytes / rows, "bytes/row")
        add("innodb_bytes_per_row", (innodb.data_written_bytes + innodb.os_log_written_bytes)
            / rows, "bytes/row")
        if innodb.pages_written:
            add("dblwr_share", innodb.dblwr_pages_written / innodb.pages_written, "ratio")
        for interval in result.intervals:
            add("tps_per_second", interval.tps, "tps", time_s=interval.time_s)
