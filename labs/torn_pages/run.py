"""Run the torn-pages lab on a lab host: pgbench legs with full_page_writes on and off.

Everything the lab makes lives in a LabWorkspace on the host (labs.infra.workspace): the
loop file system the data directories sit on, the containers (docker SDK, on the host's
own engine), pgbench's output folders. Each pgbench leg starts right after a checkpoint
and records TPS, latency percentiles, WAL bytes and full-page images (FPIs) per
transaction (`pg_stat_wal`), and WAL sampled every second from the WAL position. Then
tear.py tears a page four ways.
"""

from __future__ import annotations

import gzip
import random
import shlex
import threading
import time
import uuid

import numpy as np
from docker.models.containers import Container

from labs.errors import LabError, UsageError
from labs.infra import images
from labs.infra.containers import ContainerError, exec_in
from labs.infra.facts import host_facts
from labs.infra.hosts import Host
from labs.infra.workspace import LabWorkspace
from labs.progress import Progress
from labs.records import RecordedRun, RunRecorder, load_run, new_run_id
from labs.tools import pgbench
from labs.torn_pages.cluster import OUT, Cluster, psql
from labs.torn_pages.params import Parameters
from labs.torn_pages.tear import torn_page_demo


class Benchmark:
    """Part 1: pgbench legs with full_page_writes on and off under checkpoint settings."""

    def __init__(self, params: Parameters, rec: RunRecorder, cluster: Cluster,
                 progress: Progress):
        self.p, self.rec, self.cluster, self.progress = params, rec, cluster, progress

    def run(self) -> None:
        # Settings given with -c outrank ALTER SYSTEM, so the two the legs change
        # (full_page_writes, checkpoint_timeout) must not be among them.
        settings = {"shared_buffers": f"{self.p.shared_buffers_mib}MB", "max_wal_size": "4GB",
                    "log_checkpoints": "on"}
        self.progress.step("starting PostgreSQL (data checksums on)")
        container = self.cluster.start("bench", settings, checksums=True)
        self.rec.add_tool_version("postgresql", psql(container, "SELECT version()"))
        self.rec.add_tool_version("pgbench", exec_in(container, ["pgbench", "--version"],
                                                     user="postgres").strip())
        self.progress.step(f"pgbench -i at scale {self.p.scale}")
        init = pgbench.init_command(self.p.scale, self.p.clients)
        self.rec.add_command(shlex.join(init))
        self.rec.add_raw("bench/init.txt", exec_in(container, init, user="postgres"))
        self.progress.step(f"warm-up pgbench {self.p.warmup_s} s (not measured)")
        if self.p.warmup_s:
            warm = pgbench.run_command(self.p.clients, self.p.threads, self.p.warmup_s, 5,
                                       extra=[f"--random-seed={self.p.seed}"])
            self.rec.add_command(shlex.join(warm))
            self.rec.add_raw("bench/warmup.txt", exec_in(container, warm, user="postgres"))
        # Which of on/off runs first is drawn per setting from the seed, so that a drift of
        # the machine during the run does not always favour the same side.
        rng = random.Random(self.p.seed)
        legs = [(timeout, fpw) for timeout in self.p.checkpoint_timeouts_s
                for fpw in rng.sample(["on", "off"], 2)]
        for timeout_s, fpw in legs:
            self.progress.step(f"pgbench {self.p.duration_s} s, full_page_writes={fpw}, "
                               f"checkpoint_timeout={timeout_s}s")
            self.run_leg(container, "bench", fpw, timeout_s, self.p.duration_s, None, 0)
        for fpw in rng.sample(["on", "off"], 2):
            self.progress.step(f"pgbench {self.p.burst_duration_s} s, full_page_writes={fpw}, "
                               f"CHECKPOINT forced at {self.p.burst_duration_s // 2} s")
            self.run_leg(container, "bench", fpw, 3600, self.p.burst_duration_s,
                         self.p.burst_duration_s // 2, 0)
        self.rec.add_raw("bench/server.log", container.logs().decode(errors="replace"))
        container.stop(timeout=120)
        if not self.p.write_mibps:
            return
        # The same cluster on a slow disk: a new container on the same data directory,
        # its writes to the loop device limited by the kernel's blkio throttling.
        slow = self.cluster.start("bench-slow", settings, checksums=True,
                                  write_mibps=self.p.write_mibps, data_name="bench")
        for timeout_s, fpw in legs:
            self.progress.step(f"pgbench {self.p.slow_duration_s} s on a disk limited to "
                               f"{self.p.write_mibps} MiB/s, full_page_writes={fpw}, "
                               f"checkpoint_timeout={timeout_s}s")
            self.run_leg(slow, "bench-slow", fpw, timeout_s, self.p.slow_duration_s, None,
                         self.p.write_mibps)
        self.rec.add_raw("bench/server-slow.log", slow.logs().decode(errors="replace"))
        slow.stop(timeout=120)

    def apply_settings(self, container: Container, fpw: str, timeout_s: int,
                       attempts: int = 5) -> None:
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

    def run_leg(self, container: Container, out_name: str, fpw: str, timeout_s: int,
                duration_s: int, force_checkpoint_at_s: int | None, write_mibps: int) -> None:
        workload = "forced-checkpoint" if force_checkpoint_at_s is not None else "steady"
        disk = f"limit{write_mibps}mibps" if write_mibps else "nolimit"
        leg = f"{workload}-{disk}-cpt{timeout_s}s-fpw-{fpw}"
        self.apply_settings(container, fpw, timeout_s)
        psql(container, "SELECT pg_stat_reset_shared('wal')")
        checkpoints_before = int(psql(container, "SELECT checkpoints_timed + checkpoints_req "
                                                 "FROM pg_stat_bgwriter"))
        leg_dir = f"{self.cluster.out_dir(out_name)}/{leg}"
        exec_in(container, ["mkdir", "-p", f"{OUT}/{leg}"], user="postgres")
        command = pgbench.run_command(self.p.clients, self.p.threads, duration_s, 1,
                                      log_prefix="pgbench_log",
                                      extra=[f"--random-seed={self.p.seed}"])
        self.rec.add_command(shlex.join(command))
        script = f"cd {OUT}/{leg} && {shlex.join(command)} > summary.txt 2> progress.txt"
        samples: list[str] = []
        stop = threading.Event()
        started_epoch = time.time()
        sampler = threading.Thread(target=_sample_wal, args=(container, samples, stop),
                                   daemon=True)
        checkpoint_epoch: list[float] = []
        forcer = None
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
        summary_text = self.cluster.read_text(f"{leg_dir}/summary.txt")
        progress_text = self.cluster.read_text(f"{leg_dir}/progress.txt")
        if result.exit_code != 0:
            tail = progress_text.strip().splitlines()[-1:] or ["no output"]
            raise LabError(f"pgbench ({leg}) exited with {result.exit_code}: {tail[0]}")
        wal = psql(container, "SELECT wal_bytes, wal_fpi, wal_records FROM pg_stat_wal")
        wal_bytes, wal_fpi, wal_records = (int(float(x)) for x in wal.split("|"))
        checkpoints = int(psql(container, "SELECT checkpoints_timed + checkpoints_req "
                                          "FROM pg_stat_bgwriter")) - checkpoints_before
        names = self.cluster.host.sudo(["ls", "-1", "--", leg_dir], timeout_s=60).stdout.split()
        log_texts = []
        for name in pgbench.log_file_names(names, "pgbench_log"):
            raw = self.cluster.fetch(f"{leg_dir}/{name}")
            # One line per transaction: compressed, they are 5x smaller.
            self.rec.add_raw(f"bench/{leg}/{name}.gz", gzip.compress(raw, mtime=0))
            log_texts.append((f"{leg}/{name}", raw.decode()))
        self.rec.add_raw(f"bench/{leg}/summary.txt", summary_text)
        self.rec.add_raw(f"bench/{leg}/progress.txt", progress_text)
        self.rec.add_raw(f"bench/{leg}/wal-samples.txt", "\n".join(samples) + "\n")
        summary = pgbench.parse_summary(summary_text, f"{leg}/summary.txt")
        tlog = pgbench.parse_log_texts(log_texts)
        dims = {"full_page_writes": fpw, "checkpoint_timeout_s": timeout_s, "leg": leg,
                "write_limit_mibps": write_mibps}

        def add(metric: str, value: float, unit: str, **extra: float) -> None:
            self.rec.add_result(config=f"fpw-{fpw}", workload=workload, metric=metric,
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
        # Completed transactions by time, from the per-transaction logs: dividing each
        # sample interval's WAL by its own transactions keeps TPS swings out of the ratio.
        finished = np.sort(tlog.epoch_s)
        previous = None
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


def _sample_wal(container: Container, samples: list[str], stop: threading.Event) -> None:
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


def run(params: Parameters, host: Host, progress: Progress) -> RecordedRun:
    """The whole lab on `host`; returns the recorded run."""
    if not host.sudo("true", check=False, timeout_s=60).ok:
        raise UsageError(f"host {host.name}: the torn-pages lab needs root there (a loop "
                         f"device, a mount, files written by the container): run it with sudo")
    progress.expect(4 + params.leg_count() + 5)
    run_id = new_run_id(host.name)
    started = time.monotonic()
    recorder = RunRecorder(params.LAB, params.as_record(), seed=params.seed, run_id=run_id,
                           lab_host=host.name, host=host_facts(host))
    with recorder as rec, LabWorkspace(host, lab=params.LAB, run_id=run_id) as ws:
        rec.add_command(params.command_line())
        progress.step("choosing the PostgreSQL image")
        choice = images.ensure_image(ws.engine(), host.is_local, "postgres", params.image,
                                     progress)
        progress.say(f"using {choice.describe()}")
        rec.add_tool_version("image", f"{choice.tag} ({choice.source}) "
                             f"{images.image_digest(ws.engine(), choice.tag)}")
        rec.add_tool_version("docker", ws.engine().version().get("Version", "unknown"))
        progress.step(f"building an ext4 file system on a loop device in {ws.work_dir}")
        fs = ws.make_loop_filesystem("labfs", params.fs_size_mib)
        cluster = Cluster(ws, fs, choice.tag, uuid.uuid4().hex[:6])
        Benchmark(params, rec, cluster, progress).run()
        torn_page_demo(cluster, rec, progress)
        rec.add_result(config="all", workload="lab", metric="wall_time",
                       value=round(time.monotonic() - started, 1), unit="s")
        progress.step("removing the containers and the file system; writing the run")
    return load_run(recorder.final_path)
