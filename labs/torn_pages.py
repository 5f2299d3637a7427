"""Lab: torn pages and what full-page writes cost (`python -m labs run torn-pages`).

PostgreSQL runs in a container whose data directory sits on a file system the lab builds
(a loop device over a file in the work dir, ext4, mounted in the work dir). The lab:

1. runs pgbench with `full_page_writes` on and off under two `checkpoint_timeout`
   settings, each leg starting right after a checkpoint: TPS, latency percentiles, WAL
   bytes and full-page images (FPIs) per transaction from `pg_stat_wal`, and WAL bytes
   per second sampled from the WAL position;
2. runs pgbench once more per setting with a long checkpoint interval and forces a
   `CHECKPOINT` half way, to show the burst of WAL that follows a checkpoint;
3. tears an 8 KiB heap page at its 4 KiB boundary (first half new, second half old, as a
   power cut in the middle of the page write would leave it) and shows what each
   protection does with it:
   - stopped cluster with data checksums: `pg_checksums --check` and a `SELECT` report it;
   - crash (`docker kill`) after an update with `full_page_writes=on`: recovery writes the
     page image from WAL over the torn page and the read succeeds;
   - the same with `full_page_writes=off` and checksums: recovery stops on the bad page;
   - the same with neither: recovery "succeeds" and the table silently shows rows twice.

Everything is recorded in data/runs/torn-pages/<run-id>/ (raw/ keeps pgbench's output,
the WAL samples, pg_checksums output and server logs).
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import shlex
import shutil
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from labs import localfs, pgpage
from labs.containers import (
    OWNER_LABEL,
    ContainerError,
    ContainerSpec,
    LabContainers,
    engine,
    exec_in,
    new_owner_token,
)
from labs.errors import LabError, UsageError
from labs.images import choose_postgres_image, image_digest
from labs.journal import Journal
from labs.records import RunRecorder, display_path, local_host_facts, new_run_id
from labs.tools import pgbench

LAB = "torn-pages"
RUN_HELP = "full_page_writes on/off under checkpoints, and a torn page with and without it"
PAGE_BYTES = 8192
SECTOR_GROUP_BYTES = 4096  # the tear: ext4 and most devices write 4 KiB atomically at best
PGDATA = "/var/lib/postgresql/data"
OUT = "/lab-out"


@dataclass
class Parameters:
    host: str = "local"
    quick: bool = False
    image: str | None = None
    work_dir: str | None = None
    seed: int = 7
    scale: int = 16
    clients: int = 4
    threads: int = 2
    duration_s: int = 150
    checkpoint_timeouts_s: tuple[int, ...] = (30, 300)
    burst_duration_s: int = 60
    warmup_s: int = 30
    write_mibps: int = 4  # the slow-disk legs: writes limited to this; 0 skips them
    slow_duration_s: int = 90
    fs_size_mib: int = 8192
    shared_buffers_mib: int = 256

    @classmethod
    def quick_profile(cls, **overrides) -> Parameters:
        values = dict(quick=True, scale=8, duration_s=35, burst_duration_s=24, warmup_s=10,
                      slow_duration_s=20)
        values.update(overrides)
        return cls(**values)

    def check(self) -> None:
        if self.host != "local":
            raise UsageError(f"--host {self.host}: this lab runs on --host local "
                             f"(root on this machine) in this version")
        if self.scale < self.clients:
            raise UsageError(f"--scale {self.scale} must be at least --clients "
                             f"{self.clients} (else pgbench measures row contention)")
        if min(self.checkpoint_timeouts_s) < 30:
            raise UsageError("checkpoint_timeout must be at least 30 s (PostgreSQL's minimum)")
        if self.write_mibps < 0:
            raise UsageError("--write-mibps must be 0 (no limit) or positive")
        if min(self.duration_s, self.burst_duration_s, self.slow_duration_s) < 10:
            raise UsageError("durations must be at least 10 s")

    def command_line(self) -> str:
        parts = ["python -m labs run torn-pages", f"--host {self.host}"]
        if self.quick:
            parts.append("--quick")
        if self.image:
            parts.append(f"--image {self.image}")
        parts += [f"--seed {self.seed}", f"--scale {self.scale}", f"--clients {self.clients}",
                  f"--threads {self.threads}", f"--duration-s {self.duration_s}",
                  "--checkpoint-timeouts-s " + ",".join(map(str, self.checkpoint_timeouts_s)),
                  f"--burst-duration-s {self.burst_duration_s}", f"--warmup-s {self.warmup_s}",
                  f"--write-mibps {self.write_mibps}", f"--slow-duration-s {self.slow_duration_s}"]
        return " ".join(parts)


class Progress:
    """One terminal line per step: what the lab is doing and how far it is."""

    def __init__(self, total: int, callback=None):
        self.total = total
        self.step = 0
        self.started = time.monotonic()
        self.callback = callback  # (fraction, text) -> None, for the live panel

    def __call__(self, text: str) -> None:
        self.step += 1
        elapsed = time.monotonic() - self.started
        print(f"[{elapsed:6.0f} s] step {self.step}/{self.total}: {text}", flush=True)
        if self.callback:
            self.callback((self.step - 1) / self.total, text)


def psql(container, sql: str, check: bool = True) -> str:
    return exec_in(container, ["psql", "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql],
                   check=check).strip()


class Lab:
    def __init__(self, params: Parameters, recorder: RunRecorder, containers: LabContainers,
                 work_dir: Path, image: str, fs: localfs.LoopFilesystem, log=print):
        self.p = params
        self.rec = recorder
        self.containers = containers
        self.work_dir = work_dir
        self.image = image
        self.fs = fs
        self.log = log

    # ---- containers ---------------------------------------------------------------------

    def start_postgres(self, name: str, settings: dict[str, str], checksums: bool,
                       write_mibps: int = 0, data_name: str | None = None):
        """Start PostgreSQL on <lab fs>/<data_name or name> (reused if it already exists)."""
        data = self.fs.mount_point / (data_name or name)
        out = self.work_dir / "out" / name
        data.mkdir(exist_ok=True)
        out.mkdir(parents=True)
        os.chmod(out, 0o777)  # written by the container's postgres user (uid 999)
        command = ["postgres"]
        for key, value in settings.items():
            command += ["-c", f"{key}={value}"]
        spec = ContainerSpec(
            name=f"{self.containers.owner}-{name}", image=self.image, command=command,
            environment={"POSTGRES_HOST_AUTH_METHOD": "trust",
                         "POSTGRES_INITDB_ARGS": "--data-checksums" if checksums else ""},
            binds={str(data): PGDATA, str(out): OUT},
            health_command=["pg_isready", "-q", "-h", "127.0.0.1", "-U", "postgres"],
            device_write_bps={self.fs.device: write_mibps * 2**20} if write_mibps else {})
        container = self.containers.start(spec, health_timeout_s=180)
        return container, data, out

    # ---- part 1: full_page_writes under checkpoints -------------------------------------

    def benchmark(self, progress: Progress) -> None:
        # Settings given with -c outrank ALTER SYSTEM, so the two the legs change
        # (full_page_writes, checkpoint_timeout) must not be among them.
        settings = {"shared_buffers": f"{self.p.shared_buffers_mib}MB", "max_wal_size": "4GB",
                    "log_checkpoints": "on"}
        container, _, out = self.start_postgres("bench", settings, checksums=True)
        self.rec.add_tool_version("postgresql", psql(container, "SELECT version()"))
        self.rec.add_tool_version("pgbench", exec_in(container, ["pgbench", "--version"])
                                  .strip())
        progress(f"pgbench -i at scale {self.p.scale}")
        init = pgbench.init_command(self.p.scale, self.p.clients)
        self.rec.add_command(shlex.join(init))
        self.rec.add_raw("bench/init.txt", exec_in(container, init))
        progress(f"warm-up pgbench {self.p.warmup_s} s (not measured)")
        warm = pgbench.run_command(self.p.clients, self.p.threads, self.p.warmup_s, 5,
                                   extra=[f"--random-seed={self.p.seed}"])
        self.rec.add_command(shlex.join(warm))
        self.rec.add_raw("bench/warmup.txt", exec_in(container, warm))
        # Which of on/off runs first is drawn per setting from the seed, so that a drift of
        # the machine during the run does not always favour the same side.
        rng = random.Random(self.p.seed)
        legs = [(timeout, fpw) for timeout in self.p.checkpoint_timeouts_s
                for fpw in rng.sample(["on", "off"], 2)]
        for timeout_s, fpw in legs:
            progress(f"pgbench {self.p.duration_s} s, full_page_writes={fpw}, "
                     f"checkpoint_timeout={timeout_s}s")
            self.run_leg(container, out, fpw, timeout_s, self.p.duration_s, None, 0)
        for fpw in rng.sample(["on", "off"], 2):
            progress(f"pgbench {self.p.burst_duration_s} s, full_page_writes={fpw}, "
                     f"CHECKPOINT forced at {self.p.burst_duration_s // 2} s")
            self.run_leg(container, out, fpw, 3600, self.p.burst_duration_s,
                         self.p.burst_duration_s // 2, 0)
        self.rec.add_raw("bench/server.log", container.logs().decode(errors="replace"))
        if not self.p.write_mibps:
            return
        # The same cluster on a slow disk: a new container on the same data directory,
        # its writes to the loop device limited by the kernel's blkio throttling.
        container.stop(timeout=120)
        slow, _, out = self.start_postgres("bench-slow", settings, checksums=True,
                                           write_mibps=self.p.write_mibps, data_name="bench")
        for timeout_s, fpw in legs:
            progress(f"pgbench {self.p.slow_duration_s} s on a disk limited to "
                     f"{self.p.write_mibps} MiB/s, full_page_writes={fpw}, "
                     f"checkpoint_timeout={timeout_s}s")
            self.run_leg(slow, out, fpw, timeout_s, self.p.slow_duration_s, None,
                         self.p.write_mibps)
        self.rec.add_raw("bench/server-slow.log", slow.logs().decode(errors="replace"))
        slow.stop(timeout=120)

    def apply_settings(self, container, fpw: str, timeout_s: int, attempts: int = 5) -> None:
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

    def run_leg(self, container, out: Path, fpw: str, timeout_s: int, duration_s: int,
                force_checkpoint_at_s: int | None, write_mibps: int) -> None:
        workload = "forced-checkpoint" if force_checkpoint_at_s is not None else "steady"
        config = f"fpw-{fpw}"
        disk = f"limit{write_mibps}mibps" if write_mibps else "nolimit"
        leg = f"{workload}-{disk}-cpt{timeout_s}s-fpw-{fpw}"
        self.apply_settings(container, fpw, timeout_s)
        psql(container, "SELECT pg_stat_reset_shared('wal')")
        checkpoints_before = int(psql(container, "SELECT checkpoints_timed + checkpoints_req "
                                                 "FROM pg_stat_bgwriter"))
        leg_dir = out / leg
        leg_dir.mkdir()
        os.chmod(leg_dir, 0o777)
        command = pgbench.run_command(self.p.clients, self.p.threads, duration_s, 1,
                                      log_prefix="pgbench_log",
                                      extra=[f"--random-seed={self.p.seed}"])
        self.rec.add_command(shlex.join(command))
        script = (f"cd {OUT}/{leg} && {shlex.join(command)} > summary.txt 2> progress.txt")
        samples: list[str] = []
        stop = threading.Event()
        started_epoch = time.time()
        sampler = threading.Thread(target=self._sample_wal, args=(container, samples, stop),
                                   daemon=True)
        forcer = None
        checkpoint_epoch: list[float] = []
        if force_checkpoint_at_s is not None:
            def force() -> None:
                time.sleep(force_checkpoint_at_s)
                checkpoint_epoch.append(time.time())
                psql(container, "CHECKPOINT")
            forcer = threading.Thread(target=force, daemon=True)
        sampler.start()
        if forcer:
            forcer.start()
        result = container.exec_run(["sh", "-c", script], user="postgres")
        stop.set()
        sampler.join()
        if forcer:
            forcer.join()
        summary_text = (leg_dir / "summary.txt").read_text()
        progress_text = (leg_dir / "progress.txt").read_text()
        if result.exit_code != 0:
            tail = progress_text.strip().splitlines()[-1:] or ["no output"]
            raise LabError(f"pgbench ({leg}) exited with {result.exit_code}: {tail[0]}")
        wal = psql(container, "SELECT wal_bytes, wal_fpi, wal_records FROM pg_stat_wal")
        wal_bytes, wal_fpi, wal_records = (int(float(x)) for x in wal.split("|"))
        checkpoints = int(psql(container, "SELECT checkpoints_timed + checkpoints_req "
                                          "FROM pg_stat_bgwriter")) - checkpoints_before
        logs = pgbench.log_files(leg_dir, "pgbench_log")
        for path in [leg_dir / "summary.txt", leg_dir / "progress.txt"]:
            self.rec.add_raw(f"bench/{leg}/{path.name}", path.read_text())
        for path in logs:  # one line per transaction: compressed, they are 5x smaller
            self.rec.add_raw(f"bench/{leg}/{path.name}.gz",
                             gzip.compress(path.read_bytes(), mtime=0))
        self.rec.add_raw(f"bench/{leg}/wal-samples.txt", "\n".join(samples) + "\n")
        summary = pgbench.parse_summary(summary_text, f"{leg}/summary.txt")
        tlog = pgbench.parse_logs(logs)
        dims = {"full_page_writes": fpw, "checkpoint_timeout_s": timeout_s, "leg": leg,
                "write_limit_mibps": write_mibps}

        def add(metric: str, value: float, unit: str, **extra) -> None:
            self.rec.add_result(config=config, workload=workload, metric=metric,
                                value=value, unit=unit, **dims, **extra)

        add("tps", summary.tps, "tps")
        add("transactions", summary.transactions, "count")
        add("failed_transactions", summary.failed, "count")
        add("latency_avg", summary.latency_avg_ms, "ms")
        for percent in (50, 95, 99):
            add(f"latency_p{percent}", tlog.percentile_ms(percent), "ms")
        add("log_transactions", tlog.transactions, "count")
        add("wal_bytes", wal_bytes, "bytes")
        add("wal_fpi", wal_fpi, "count")
        add("wal_records", wal_records, "count")
        add("wal_bytes_per_tx", wal_bytes / summary.transactions, "bytes/tx")
        add("wal_fpi_per_tx", wal_fpi / summary.transactions, "ratio")
        add("checkpoints", checkpoints, "count")
        for row in pgbench.parse_progress(progress_text):
            add("tps_per_second", row["tps"], "tps", time_s=row["time_s"])
        previous = None
        # Completed transactions by time, from the per-transaction logs: dividing each
        # sample interval's WAL by its own transactions keeps TPS swings out of the ratio.
        finished = np.sort(tlog.epoch_s)
        for line in samples:
            epoch, lsn, fpi = (float(x) for x in line.split("|"))
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
        if checkpoint_epoch:
            add("forced_checkpoint_at", checkpoint_epoch[0] - started_epoch, "s")

    def _sample_wal(self, container, samples: list[str], stop: threading.Event) -> None:
        query = ("SELECT extract(epoch FROM clock_timestamp()), "
                 "pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0'), wal_fpi FROM pg_stat_wal")
        while not stop.is_set():
            try:
                line = psql(container, query)
                [float(x) for x in line.split("|")]  # keep only complete samples
                if line.count("|") == 2:
                    samples.append(line)
            except (ContainerError, ValueError):
                pass  # a missed sample only widens the next interval
            stop.wait(1.0)

    # ---- part 2: the torn page ----------------------------------------------------------

    def torn_page_demo(self, progress: Progress) -> None:
        progress("torn page on a stopped cluster with data checksums")
        self.stopped_cluster_tear()
        variants = [("fpw-on", "on", True), ("fpw-off", "off", True),
                    ("fpw-off-nochecksums", "off", False)]
        for name, fpw, checksums in variants:
            progress(f"crash, torn page and recovery: full_page_writes={fpw}, "
                     f"data checksums {'on' if checksums else 'off'}")
            self.crash_tear_recover(name, fpw, checksums)

    def _make_table(self, container) -> str:
        # 40 rows of ~140 bytes fill block 0 from about 2.7 KiB to its end: both halves.
        psql(container, "CREATE TABLE torn (id int PRIMARY KEY, payload text) "
                        "WITH (autovacuum_enabled = off)")
        psql(container, "INSERT INTO torn SELECT g, repeat('a', 100) "
                        "FROM generate_series(1, 40) g")
        psql(container, "SELECT count(*) FROM torn")  # sets hint bits before the checkpoint
        psql(container, "CHECKPOINT")
        return psql(container, "SELECT pg_relation_filepath('torn')")

    @staticmethod
    def _read_page(path: Path, block: int = 0) -> bytes:
        with open(path, "rb") as relation:
            relation.seek(block * PAGE_BYTES)
            return relation.read(PAGE_BYTES)

    @staticmethod
    def _write_page(path: Path, page: bytes, block: int = 0) -> None:
        assert len(page) == PAGE_BYTES
        # Safe: `path` is a relation file inside the lab's own data directory on the lab's
        # own loop file system (see start_postgres), never a device or a user file.
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, page, block * PAGE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)

    def _differing_bytes(self, a: bytes, b: bytes) -> tuple[int, int]:
        half = SECTOR_GROUP_BYTES
        first = sum(x != y for x, y in zip(a[:half], b[:half], strict=True))
        second = sum(x != y for x, y in zip(a[half:], b[half:], strict=True))
        return first, second

    def _checksums_check(self, name: str, data: Path) -> tuple[int, str]:
        """`pg_checksums --check` on a stopped data directory, in a one-off container."""
        client = self.containers.client
        cname = f"{self.containers.owner}-{name}-checksums"
        labels = self.containers.labels()
        self.containers.journal.will_create("container", cname, labels=labels,
                                            label_key=OWNER_LABEL,
                                            label_value=self.containers.owner,
                                            image=self.image)
        try:
            container = client.containers.run(
                self.image, ["pg_checksums", "--check", "-D", PGDATA], name=cname,
                detach=True, labels=labels, user="postgres",
                volumes={str(data): {"bind": PGDATA, "mode": "rw"}},
                entrypoint=[])
            status = container.wait(timeout=300)
            output = container.logs().decode(errors="replace")
        finally:
            self.containers.remove(cname)
        return int(status["StatusCode"]), output

    def stopped_cluster_tear(self) -> None:
        name = "tear-stopped"
        container, data, _ = self.start_postgres(name, {}, checksums=True)
        relpath = self._make_table(container)
        file = data / relpath
        old = self._read_page(file)
        psql(container, "UPDATE torn SET payload = repeat('b', 100) WHERE id <= 10")
        psql(container, "CHECKPOINT")
        container.stop(timeout=60)  # a clean shutdown: the new page is on disk, intact
        new = self._read_page(file)
        code_before, out_before = self._checksums_check(name + "-intact", data)
        torn = new[:SECTOR_GROUP_BYTES] + old[SECTOR_GROUP_BYTES:]
        first, second = self._differing_bytes(new, old)
        self._write_page(file, torn)
        code_after, out_after = self._checksums_check(name + "-torn", data)
        container.start()
        self.containers.wait_healthy(container, 120)
        select = exec_in(container, ["psql", "-XAtq", "-c", "SELECT count(*) FROM torn"],
                         check=False)
        container.stop(timeout=60)
        self.rec.add_raw(f"torn/{name}/pg_checksums-intact.txt", out_before)
        self.rec.add_raw(f"torn/{name}/pg_checksums-torn.txt", out_after)
        self.rec.add_raw(f"torn/{name}/select.txt", select)
        self.rec.add_raw(f"torn/{name}/server.log", container.logs().decode(errors="replace"))
        dims = {"variant": name, "full_page_writes": "on", "data_checksums": "on"}

        def add(metric: str, value: float, unit: str = "count") -> None:
            self.rec.add_result(config=name, workload="torn-page", metric=metric,
                                value=value, unit=unit, **dims)

        add("changed_bytes_first_half", first, "bytes")
        add("changed_bytes_second_half", second, "bytes")
        add("checksum_check_failed_intact", int(code_before != 0))
        add("checksum_check_failed_torn", int(code_after != 0))
        add("select_reported_invalid_page", int("invalid page in block" in select))

    def crash_tear_recover(self, name: str, fpw: str, checksums: bool) -> None:
        settings = {"full_page_writes": fpw, "checkpoint_timeout": "1h",
                    "max_wal_size": "1GB"}
        container, data, _ = self.start_postgres(name, settings, checksums=checksums)
        psql(container, "CREATE EXTENSION pageinspect")
        psql(container, "CREATE EXTENSION pg_walinspect")
        relpath = self._make_table(container)
        file = data / relpath
        old = self._read_page(file)
        lsn_before = psql(container, "SELECT pg_current_wal_lsn()")
        psql(container, "UPDATE torn SET payload = repeat('b', 100) WHERE id <= 10")
        lsn_after = psql(container, "SELECT pg_current_wal_lsn()")
        # The page as it is in shared buffers after the update. PostgreSQL sets the checksum
        # only in the copy it writes out, so set it the same way: the first half of the
        # torn page is then byte for byte what a real write would have put on disk.
        new = bytes.fromhex(psql(container,
                                 "SELECT encode(get_raw_page('torn', 0), 'hex')"))
        checksum_self_check = pgpage.page_checksum(old, 0) == pgpage.stored_checksum(old)
        if checksums:
            if not checksum_self_check:
                raise LabError("the lab's page checksum does not match PostgreSQL's on an "
                               "intact page; refusing to build a torn page from it")
            new = pgpage.with_checksum(new, 0)
        wal = psql(container,
                   "SELECT start_lsn, resource_manager, record_type, fpi_length, block_ref "
                   f"FROM pg_get_wal_records_info('{lsn_before}', '{lsn_after}')")
        relfile = relpath.rsplit("/", 1)[-1]
        fpi_bytes = 0
        for line in wal.splitlines():
            fields = line.split("|")
            if len(fields) >= 5 and f"/{relfile} " in fields[4] + " " and " blk 0" in fields[4]:
                fpi_bytes += int(fields[3])
        # A crash: no shutdown checkpoint, the updated page never reached the data file.
        container.kill()
        container.wait(timeout=60)
        on_disk = self._read_page(file)
        torn = new[:SECTOR_GROUP_BYTES] + on_disk[SECTOR_GROUP_BYTES:]
        first, second = self._differing_bytes(new, on_disk)
        self._write_page(file, torn)
        container.start()
        recovered = True
        try:
            self.containers.wait_healthy(container, 120)
        except ContainerError:
            recovered = False
        rows = b_rows = -1
        if recovered:
            rows = int(psql(container, "SELECT count(*) FROM torn"))
            b_rows = int(psql(container, "SELECT count(*) FROM torn WHERE payload LIKE 'b%'"))
            container.stop(timeout=60)
        container.reload()
        server_log = container.logs().decode(errors="replace")
        checks = None
        if recovered and checksums:
            code, checks = self._checksums_check(name, data)
        self.rec.add_raw(f"torn/{name}/wal-records.txt", wal + "\n")
        self.rec.add_raw(f"torn/{name}/server.log", server_log)
        if checks is not None:
            self.rec.add_raw(f"torn/{name}/pg_checksums-after-recovery.txt", checks)
        dims = {"variant": name, "full_page_writes": fpw,
                "data_checksums": "on" if checksums else "off"}

        def add(metric: str, value: float, unit: str = "count") -> None:
            self.rec.add_result(config=name, workload="torn-page", metric=metric,
                                value=value, unit=unit, **dims)

        add("changed_bytes_first_half", first, "bytes")
        add("changed_bytes_second_half", second, "bytes")
        add("disk_page_equals_pre_update_page", int(on_disk == old))
        if checksums:
            add("checksum_model_matches_postgresql", int(checksum_self_check))
        add("fpi_bytes_for_page_in_wal", fpi_bytes, "bytes")
        add("recovery_completed", int(recovered))
        add("recovery_reported_invalid_page", int("invalid page in block" in server_log))
        if recovered:
            add("rows_visible", rows)
            add("rows_expected", 40)
            add("updated_rows_visible", b_rows)
            if checksums:
                add("checksum_check_failed_after_recovery", int(code != 0))


# ---- command line -----------------------------------------------------------------------

def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = Parameters()
    parser.add_argument("--host", default="local", help="where to run (this version: local)")
    parser.add_argument("--quick", action="store_true",
                        help="a few minutes: smaller scale, shorter legs")
    parser.add_argument("--image", help="container image (default: the local build if "
                        "present, else the official postgres:15)")
    parser.add_argument("--work-dir", help="scratch folder for the loop file system "
                        "(default: a new folder under /var/tmp/storage-labs)")
    parser.add_argument("--seed", type=int, default=defaults.seed,
                        help="pgbench --random-seed")
    parser.add_argument("--scale", type=int, help="pgbench scale (>= clients)")
    parser.add_argument("--clients", type=int, default=defaults.clients)
    parser.add_argument("--threads", type=int, default=defaults.threads)
    parser.add_argument("--duration-s", type=int, help="seconds per pgbench leg")
    parser.add_argument("--checkpoint-timeouts-s", help="comma-separated, e.g. 30,300")
    parser.add_argument("--burst-duration-s", type=int,
                        help="seconds of the forced-checkpoint legs")
    parser.add_argument("--warmup-s", type=int, help="seconds of unmeasured warm-up")
    parser.add_argument("--write-mibps", type=int, help="for the slow-disk legs, limit writes "
                        "to the lab's file system to this many MiB/s (0: no slow-disk legs)")
    parser.add_argument("--slow-duration-s", type=int, help="seconds per slow-disk leg")


def parameters_from_args(args: argparse.Namespace) -> Parameters:
    overrides = {"host": args.host, "image": args.image, "work_dir": args.work_dir,
                 "seed": args.seed, "clients": args.clients, "threads": args.threads}
    for name in ("scale", "duration_s", "burst_duration_s", "warmup_s", "write_mibps",
                 "slow_duration_s"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    if args.checkpoint_timeouts_s:
        try:
            overrides["checkpoint_timeouts_s"] = tuple(
                int(x) for x in args.checkpoint_timeouts_s.split(","))
        except ValueError:
            raise UsageError("--checkpoint-timeouts-s takes integers, e.g. 30,300") from None
    params = Parameters.quick_profile(**overrides) if args.quick else Parameters(**overrides)
    params.check()
    return params


def run_from_args(args: argparse.Namespace) -> int:
    params = parameters_from_args(args)
    print(params.command_line(), flush=True)
    path = run_lab(params)
    print(f"recorded run: {display_path(path)}")
    return 0


def run_lab(params: Parameters, log=print, progress_callback=None) -> Path:
    """Run the whole lab; returns the recorded run's folder."""
    params.check()
    if os.geteuid() != 0:
        raise UsageError("the torn-pages lab needs root on the lab host (loop devices, "
                         "mounts, files written by the container)")
    client = engine(timeout_s=600)
    choice = choose_postgres_image(client, params.image)
    log(f"using {choice.describe()}")
    run_id = new_run_id(params.host)
    work_dir = Path(params.work_dir or f"/var/tmp/storage-labs/{LAB}-{run_id}").resolve()
    if work_dir.exists() and any(work_dir.iterdir()):
        raise UsageError(f"--work-dir {work_dir} is not empty: give a new or empty folder")
    journal = Journal(params.host)
    containers = LabContainers(journal, LAB, new_owner_token(LAB), client)
    legs = 2 * len(params.checkpoint_timeouts_s) * (2 if params.write_mibps else 1) + 2
    progress = Progress(total=4 + legs + 5, callback=progress_callback)
    fs = None
    recorder = RunRecorder(LAB, {**asdict(params), "command_line": params.command_line()},
                           seed=params.seed, run_id=run_id,
                           host={**local_host_facts(), "lab_host": params.host})
    started = time.monotonic()
    try:
        with recorder as rec:
            rec.add_command(params.command_line())
            rec.add_tool_version("image", f"{choice.tag} ({choice.source}) "
                                 f"{image_digest(client, choice.tag)}")
            rec.add_tool_version("docker", client.version().get("Version", "unknown"))
            progress(f"building an ext4 file system on a loop device in {work_dir}")
            fs = localfs.make_loop_filesystem(journal, work_dir, params.fs_size_mib)
            lab = Lab(params, rec, containers, work_dir, choice.tag, fs, log)
            progress("starting PostgreSQL (data checksums on)")
            lab.benchmark(progress)
            lab.torn_page_demo(progress)
            rec.add_result(config="all", workload="lab", metric="wall_time",
                           value=round(time.monotonic() - started, 1), unit="s")
            progress("writing the recorded run")
    finally:
        containers.remove_all()
        if fs is not None:
            localfs.remove_loop_filesystem(journal, fs)
        # Safe: the work dir is this run's own scratch folder (named after the run id or
        # given empty by the user); it holds only the loop image and pgbench's output.
        shutil.rmtree(work_dir, ignore_errors=True)
    return recorder.final_path



# ---- tables and charts for the chapter ---------------------------------------------------

SETTING_ORDER = ["checkpoint_timeout 30 s", "checkpoint_timeout 300 s", "forced CHECKPOINT"]
LEG_MEASURES = {
    "wal_bytes_per_tx": "WAL bytes per transaction",
    "wal_fpi_per_tx": "full-page images per transaction",
    "tps": "transactions per second",
    "latency_p50": "latency p50 (ms)",
    "latency_p99": "latency p99 (ms)",
}
BURST_SERIES = {
    "wal_fpi_per_tx_interval": "full-page images per transaction",
    "wal_bytes_per_tx_interval": "WAL bytes per transaction",
    "wal_mib_per_second": "WAL written (MiB/s)",
    "wal_fpi_per_second": "full-page images per second",
    "tps_per_second": "transactions per second",
}
REFERENCE_DIR = Path(__file__).resolve().parent.parent / "data" / "reference"


def _setting(row) -> str:
    if row["workload"] == "forced-checkpoint":
        return "forced CHECKPOINT"
    return f"checkpoint_timeout {int(row['checkpoint_timeout_s'])} s"


def _disk(limit_mibps) -> str:
    return f"writes limited to {int(limit_mibps)} MiB/s" if limit_mibps else "no limit"


def leg_summary(results):
    """One row per pgbench leg: disk, setting, full_page_writes, and measures as columns."""
    legs = results[results["workload"].isin(["steady", "forced-checkpoint"])
                   & results["time_s"].isna()].copy()
    legs["setting"] = legs.apply(_setting, axis=1)
    legs["disk"] = legs["write_limit_mibps"].map(_disk)
    table = legs.pivot_table(index=["disk", "setting", "full_page_writes"], columns="metric",
                             values="value", aggfunc="first").reset_index()
    table.columns.name = None
    return table


def fpw_ratios(results):
    """Per setting: the on/off values and their ratios (the chapter's headline numbers)."""
    table = leg_summary(results)
    rows = []
    pairs = sorted(set(zip(table["disk"], table["setting"], strict=True)),
                   key=lambda p: (p[0] != "no limit", p[0], SETTING_ORDER.index(p[1])))
    for disk, setting in pairs:
        same = table[(table["disk"] == disk) & (table["setting"] == setting)]
        on = same[same["full_page_writes"] == "on"].iloc[0]
        off = same[same["full_page_writes"] == "off"].iloc[0]
        rows.append({
            "disk": disk, "setting": setting,
            "tps_on": on["tps"], "tps_off": off["tps"],
            "tps_off_over_on": off["tps"] / on["tps"],
            "wal_bytes_per_tx_on": on["wal_bytes_per_tx"],
            "wal_bytes_per_tx_off": off["wal_bytes_per_tx"],
            "wal_on_over_off": on["wal_bytes_per_tx"] / off["wal_bytes_per_tx"],
            "fpi_per_tx_on": on["wal_fpi_per_tx"],
            "latency_p99_ms_on": on["latency_p99"], "latency_p99_ms_off": off["latency_p99"],
        })
    import pandas as pd

    return pd.DataFrame(rows)


def burst_timeline(results):
    """The forced-checkpoint legs, per second: WAL MiB/s, FPIs/s and TPS."""
    rows = results[(results["workload"] == "forced-checkpoint")
                   & results["metric"].isin(list(BURST_SERIES))].copy()
    rows["series"] = rows["metric"].map(BURST_SERIES)
    return rows[["full_page_writes", "series", "time_s", "value"]].reset_index(drop=True)


def forced_checkpoint_times(results):
    rows = results[results["metric"] == "forced_checkpoint_at"]
    return rows[["full_page_writes", "value"]].rename(columns={"value": "time_s"})


def torn_page_outcomes(results):
    """The torn-page experiments as a small table, one row per variant."""
    rows = results[results["workload"] == "torn-page"]
    table = rows.pivot_table(index="variant", columns="metric", values="value",
                             aggfunc="first")
    order = [v for v in ["tear-stopped", "fpw-on", "fpw-off", "fpw-off-nochecksums"]
             if v in table.index]
    return table.loc[order]


def reference_rds():
    import pandas as pd

    return pd.read_csv(REFERENCE_DIR / "rds-optimized-writes.csv")


def settings_chart(results):
    """Bars per checkpoint setting, full_page_writes on vs off; a dropdown picks the measure."""
    import altair as alt

    table = leg_summary(results)
    long = table.melt(id_vars=["disk", "setting", "full_page_writes"],
                      value_vars=list(LEG_MEASURES), var_name="metric", value_name="value")
    long["measure"] = long["metric"].map(LEG_MEASURES)
    measure = alt.param(name="measure", value=LEG_MEASURES["wal_bytes_per_tx"],
                        bind=alt.binding_select(options=list(LEG_MEASURES.values()),
                                                name="measure "))
    disks = sorted(long["disk"].unique(), key=lambda d: d != "no limit")
    disk = alt.param(name="disk", value=disks[0],
                     bind=alt.binding_select(options=disks, name="disk "))
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("setting:N", sort=SETTING_ORDER, title=None, axis=alt.Axis(labelAngle=-20)),
        xOffset=alt.XOffset("full_page_writes:N", sort=["on", "off"]),
        y=alt.Y("value:Q", title="value of the chosen measure"),
        color=alt.Color("full_page_writes:N", sort=["on", "off"],
                        scale=alt.Scale(domain=["on", "off"], range=["#D55E00", "#0072B2"])),
        tooltip=["setting", "full_page_writes", "measure",
                 alt.Tooltip("value:Q", format=",.2f")],
    ).add_params(measure, disk).transform_filter(
        (alt.datum.measure == measure) & (alt.datum.disk == disk)).properties(
        width=420, height=260,
        title="pgbench with full_page_writes on and off (each leg starts at a checkpoint)")


def burst_chart(results):
    """Per-second series around a forced CHECKPOINT; dropdown for the series, legend filter."""
    import altair as alt

    timeline = burst_timeline(results)
    marks = forced_checkpoint_times(results)
    series = alt.param(name="series", value=BURST_SERIES["wal_fpi_per_tx_interval"],
                       bind=alt.binding_select(options=list(BURST_SERIES.values()),
                                               name="series "))
    legend = alt.selection_point(fields=["full_page_writes"], bind="legend")
    color = alt.Color("full_page_writes:N", sort=["on", "off"],
                      scale=alt.Scale(domain=["on", "off"], range=["#D55E00", "#0072B2"]))
    lines = alt.Chart(timeline).mark_line(point=True).encode(
        x=alt.X("time_s:Q", title="seconds since pgbench started"),
        y=alt.Y("value:Q", title="value of the chosen series"),
        color=color,
        opacity=alt.condition(legend, alt.value(1.0), alt.value(0.15)),
        tooltip=["full_page_writes", "series", alt.Tooltip("time_s:Q", format=".1f"),
                 alt.Tooltip("value:Q", format=",.2f")],
    ).add_params(series, legend).transform_filter(alt.datum.series == series)
    rules = alt.Chart(marks).mark_rule(strokeDash=[4, 3]).encode(
        x="time_s:Q", color=color, tooltip=[alt.Tooltip("time_s:Q", title="CHECKPOINT at",
                                                        format=".1f")])
    return (lines + rules).properties(
        width=520, height=260, title="What a checkpoint does to the WAL (dashed: CHECKPOINT)")


def comparison_chart(results):
    """The article's figure (InnoDB doublewrite on/off) beside this run (full_page_writes)."""
    import altair as alt

    ref = reference_rds()
    ref["minutes"] = ref["duration_s"] / 60
    ref["protection"] = ref["doublewrite"].map({"on": "doublewrite on",
                                                "off": "doublewrite off (atomic 16 KiB)"})
    article = alt.Chart(ref).mark_bar().encode(
        x=alt.X("protection:N", title=None, sort=["doublewrite on"],
                axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("minutes:Q", title="minutes to insert 30 M rows (lower is better)"),
        color=alt.Color("protection:N", legend=None,
                        scale=alt.Scale(range=["#0072B2", "#D55E00"])),
        tooltip=["configuration", alt.Tooltip("minutes:Q", format=".1f")],
    ).properties(width=200, height=260,
                 title="RDS for MySQL (Jade 2025): 2.1x")
    ours = fpw_ratios(results)
    ours = ours[ours["setting"] != "forced CHECKPOINT"].copy()
    ours["setting"] = ours["setting"].str.replace("checkpoint_timeout ", "timeout ") + \
        ", " + ours["disk"].str.replace("writes limited to ", "disk ")
    long = ours.melt(id_vars=["setting"], value_vars=["tps_on", "tps_off"],
                     var_name="leg", value_name="tps")
    long["protection"] = long["leg"].map({"tps_on": "full_page_writes on",
                                          "tps_off": "full_page_writes off"})
    lab = alt.Chart(long).mark_bar().encode(
        x=alt.X("setting:N", sort=list(ours["setting"]), title=None,
                axis=alt.Axis(labelAngle=-30)),
        xOffset=alt.XOffset("protection:N", sort=["full_page_writes on"]),
        y=alt.Y("tps:Q", title="pgbench TPS (higher is better)"),
        color=alt.Color("protection:N", sort=["full_page_writes on"],
                        scale=alt.Scale(range=["#D55E00", "#0072B2"])),
        tooltip=["setting", "protection", alt.Tooltip("tps:Q", format=",.0f")],
    ).properties(width=360, height=260, title="PostgreSQL 15, this run")
    return alt.hconcat(article, lab).resolve_scale(color="independent")


def torn_panel():
    """The live panel of the lab page (needs root and a container engine to run)."""
    from labs.records import load_run
    from labs.widgets import ChoiceParameter, IntParameter, LabPanel

    def parameters_from(values: dict) -> Parameters:
        chosen = dict(seed=values["seed"], write_mibps=values["write_mibps"])
        params = (Parameters.quick_profile(**chosen) if values["profile"] == "quick"
                  else Parameters(**chosen))
        params.check()
        return params

    def run(values: dict, progress):
        return load_run(run_lab(parameters_from(values), progress_callback=progress))

    return LabPanel(
        title="Torn pages: full_page_writes on and off, then a torn page",
        parameters=[
            ChoiceParameter("profile", "profile", "quick", ("quick", "full")),
            IntParameter("write_mibps", "slow-disk limit (MiB/s, 0: none)", 4, 0, 64),
            IntParameter("seed", "seed", 7, 0, 2**31 - 1),
        ],
        command=lambda values: "sudo " + parameters_from(values).command_line(),
        run=run,
        chart=lambda recorded: settings_chart(recorded.results),
    )
