"""What the Device speed explanation page shows: the models' tables and figures.

Pure page code: it calls the models (labs/models/disk.py, ssd.py, cloud_volume.py) and
returns small tables for the charts and the numbers the text quotes. Nothing here touches
a host.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from labs.models import cloud_volume, disk, disk_problems, ssd

DRIVES = ("cheetah", "barracuda")
KIB = 1024
# Request sizes for the disk charts: 4 KiB to 1 GiB, four per factor of ten.
REQUEST_BYTES = [int(4 * KIB * 2 ** (k / 2)) // 512 * 512 for k in range(0, 37)]
BAR_SIZES_KIB = (4, 16, 64, 256, 1024, 4096, 16384, 65536)
QUEUE_DEPTHS = (1, 2, 4, 8, 16, 32, 64)
SCHEDULE_REQUESTS = 400   # one seeded workload of random 4 KiB reads
SCHEDULE_SEED = 7
SSD_CHANNELS = (1, 2, 4, 8, 16, 32)
SSD_READ_LATENCIES_US = (25, 50, 100, 200)
SSD_DEPTHS = tuple(2 ** k for k in range(9))   # 1 .. 256
SSD_BANDWIDTH_MB_S = 2000.0                     # an illustrative NVMe drive, not a product
SSD_WRITE_LATENCY_US = 20.0
SC1_SIZES_GIB = (125, 300, 1024, 4096, 16384)
VOLUME_BLOCKS_KIB = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
ARTICLE_SIZE_GIB = 300    # the seed article's two volumes
ARTICLE_BLOCK_KIB = 16    # sysbench fileio's default block size
ARTICLE_RATIO = 45        # what the article measured with sysbench fileio rndrw (about)
ARTICLE_DB_RATIO = 1.6    # its MySQL stored-procedure inserts, 10 sessions (about)
GP3_LATENCIES_MS = tuple(np.round(np.geomspace(0.1, 10, 41), 4))


def random_read_parts() -> pd.DataFrame:
    """One random read of each size on each drive, split into seek, rotation and transfer."""
    rows = []
    for name in DRIVES:
        for size_kib in BAR_SIZES_KIB:
            estimate = disk.random_io(name, size_kib * KIB)
            for part, ms in (("seek", estimate.seek_ms), ("rotation", estimate.rotation_ms),
                             ("transfer", estimate.transfer_ms)):
                rows.append({"drive": disk.get_drive(name).name, "size_kib": size_kib,
                             "part": part, "ms": round(ms, 4),
                             "mb_s": round(estimate.throughput_mb_s, 3)})
    return pd.DataFrame(rows)


def throughput_by_request_size() -> pd.DataFrame:
    """MB/s of back-to-back requests at random places, by request size, on each drive."""
    rows = []
    for name in DRIVES:
        for size in REQUEST_BYTES:
            estimate = disk.random_io(name, size)
            rows.append({"drive": disk.get_drive(name).name, "size_kib": size / KIB,
                         "mb_s": float(f"{estimate.throughput_mb_s:.4g}"),
                         "ms": float(f"{estimate.latency_ms:.4g}")})
    return pd.DataFrame(rows)


def scheduler_sweep() -> pd.DataFrame:
    """IOPS of FIFO, SSTF and SPTF by queue depth, one seeded workload per drive."""
    frames = []
    for name in DRIVES:
        rows = disk.queue_depth_sweep(name, SCHEDULE_REQUESTS, SCHEDULE_SEED, list(QUEUE_DEPTHS))
        frame = pd.DataFrame(rows)[["queue_depth", "policy", "iops"]]
        frame["drive"] = disk.get_drive(name).name
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    table["policy"] = table["policy"].str.upper()
    table["iops"] = table["iops"].round(1)
    return table


def ssd_curves() -> pd.DataFrame:
    """The SSD model's IOPS and per-request time by queue depth, for a grid of drives."""
    rows = []
    for channels in SSD_CHANNELS:
        for read_us in SSD_READ_LATENCIES_US:
            drive = ssd.Ssd(read_us, SSD_WRITE_LATENCY_US, channels, SSD_BANDWIDTH_MB_S)
            for row in ssd.queue_depth_curve(drive, 4096, list(SSD_DEPTHS)):
                rows.append({"channels": channels, "read_us": read_us,
                             "queue_depth": row["queue_depth"], "iops": round(row["iops"]),
                             "latency_ms": round(row["latency_ms"], 4),
                             "limit": row["limit"]})
    return pd.DataFrame(rows)


def volume_rates() -> pd.DataFrame:
    """gp3 (baseline) and sc1 (each size, burst and baseline): IOPS and MiB/s by block size."""
    rows = []
    for size in SC1_SIZES_GIB:
        curves = [("gp3", cloud_volume.Gp3(ARTICLE_SIZE_GIB), "steady"),
                  ("sc1 burst", cloud_volume.Sc1(size), "burst"),
                  ("sc1 baseline", cloud_volume.Sc1(size), "baseline")]
        for pattern in cloud_volume.PATTERNS:
            for block_kib in VOLUME_BLOCKS_KIB:
                for label, vol, phase in curves:
                    p = cloud_volume.predict(vol, block_kib, pattern, phase)
                    rows.append({"sc1_gib": size, "pattern": pattern, "volume": label,
                                 "block_kib": block_kib, "iops": float(f"{p.iops:.4g}"),
                                 "mib_s": float(f"{p.mib_s:.4g}"), "limit": p.limit})
    return pd.DataFrame(rows)


def sc1_timeline(hours: float = 24, step_minutes: float = 5) -> pd.DataFrame:
    """A sustained 1 MiB sequential scan on each sc1 size, from a full bucket."""
    frames = []
    for size in SC1_SIZES_GIB:
        rows = cloud_volume.sc1_over_time(cloud_volume.Sc1(size), hours * 3600,
                                          step_minutes * 60)
        frame = pd.DataFrame({"hours": np.round(np.array(rows["time_s"]) / 3600, 3),
                              "mib_s": np.round(rows["mib_s"], 2),
                              "credit_pct": np.round(np.array(rows["credit_fraction"]) * 100, 1)})
        frame["sc1_gib"] = size
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def one_thread_ratio(latency_ms: float) -> float:
    """gp3/sc1 for 16 KiB random I/O when one thread waits `latency_ms` for each gp3 I/O.

    Only gp3 gets the client bound: at sc1's burst rate of about 23 I/Os a second, one thread
    keeps up unless each sc1 I/O takes over 40 ms.
    """
    gp3 = cloud_volume.predict(cloud_volume.Gp3(ARTICLE_SIZE_GIB), ARTICLE_BLOCK_KIB, "random",
                               queue_depth=1, latency_ms=latency_ms)
    sc1 = cloud_volume.predict(cloud_volume.Sc1(ARTICLE_SIZE_GIB), ARTICLE_BLOCK_KIB, "random",
                               "burst")
    return gp3.iops / sc1.iops


def ratio_by_gp3_latency() -> pd.DataFrame:
    return pd.DataFrame({"latency_ms": GP3_LATENCIES_MS,
                         "ratio": [round(one_thread_ratio(ms), 2) for ms in GP3_LATENCIES_MS]})


def latency_for_ratio(ratio: float) -> float:
    """The gp3 latency at which one thread sees `ratio` (where the client bound is the limit)."""
    sc1 = cloud_volume.predict(cloud_volume.Sc1(ARTICLE_SIZE_GIB), ARTICLE_BLOCK_KIB, "random",
                               "burst")
    return 1000.0 / (ratio * sc1.iops)


def practice_answer(kind: str, seed: int) -> str:
    """The worked answer of a generated problem (what `disk --problem ... -c` adds)."""
    return disk_problems.make_problem(kind, seed).solve().text


def _sweep_iops(table: pd.DataFrame, drive: str, depth: int, policy: str) -> float:
    row = table[(table.drive == drive) & (table.queue_depth == depth) & (table.policy == policy)]
    return float(row["iops"].iloc[0])


class DriveFigures(NamedTuple):
    """One drive's model figures as the explanation page prints them."""

    rnd_ms: str  # a random 4 KiB read
    rnd_mb_s: str
    seq_mb_s: str  # reading 100 MB in one sweep
    ratio: str  # sequential over random throughput
    rot_ms: str  # half a rotation, on average
    half_rate_mb: str  # the transfer size at which a read reaches half the peak rate
    sptf64_gain: str  # SPTF over FIFO at 64 requests queued
    sptf4_gain: str  # ... and at 4


def _drive_figures(name: str, sweep: pd.DataFrame) -> DriveFigures:
    rvs = disk.random_vs_sequential(name, 4096, 100 * disk.MB)
    drive = disk.get_drive(name)
    # Half the peak rate: the transfer takes as long as the seek and rotation before it.
    positioning_s = (drive.avg_seek_ms + drive.avg_rotation_ms) / 1000
    half_bytes = positioning_s * drive.transfer_mb_s * disk.MB
    fifo = _sweep_iops(sweep, drive.name, 64, "FIFO")
    return DriveFigures(
        rnd_ms=f"{rvs['random']['latency_ms']:.2f}",
        rnd_mb_s=f"{rvs['random']['throughput_mb_s']:.2f}",
        seq_mb_s=f"{rvs['sequential']['throughput_mb_s']:.0f}",
        ratio=f"{rvs['ratio']:.0f}", rot_ms=f"{drive.avg_rotation_ms:.2f}",
        half_rate_mb=f"{half_bytes / disk.MB:.2f}",
        sptf64_gain=f"{_sweep_iops(sweep, drive.name, 64, 'SPTF') / fifo:.1f}",
        sptf4_gain=f"{_sweep_iops(sweep, drive.name, 4, 'SPTF') / fifo:.1f}")


def explain_figures() -> dict[str, str]:
    """Every number the explanation page quotes, computed from the models."""
    sweep = scheduler_sweep()
    cheetah, barracuda = _drive_figures("cheetah", sweep), _drive_figures("barracuda", sweep)
    f = {"cheetah_rnd_ms": cheetah.rnd_ms, "cheetah_rnd_mb_s": cheetah.rnd_mb_s,
         "cheetah_seq_mb_s": cheetah.seq_mb_s, "cheetah_ratio": cheetah.ratio,
         "cheetah_rot_ms": cheetah.rot_ms, "cheetah_half_rate_mb": cheetah.half_rate_mb,
         "cheetah_sptf64_gain": cheetah.sptf64_gain, "cheetah_sptf4_gain": cheetah.sptf4_gain,
         "barracuda_rnd_ms": barracuda.rnd_ms, "barracuda_rnd_mb_s": barracuda.rnd_mb_s,
         "barracuda_seq_mb_s": barracuda.seq_mb_s, "barracuda_ratio": barracuda.ratio,
         "barracuda_rot_ms": barracuda.rot_ms, "barracuda_half_rate_mb": barracuda.half_rate_mb,
         "barracuda_sptf64_gain": barracuda.sptf64_gain,
         "barracuda_sptf4_gain": barracuda.sptf4_gain}
    cheetah_name = disk.get_drive("cheetah").name  # the text quotes the Cheetah's IOPS
    f["cheetah_fifo_iops"] = f"{_sweep_iops(sweep, cheetah_name, 64, 'FIFO'):.0f}"
    f["cheetah_sstf64_iops"] = f"{_sweep_iops(sweep, cheetah_name, 64, 'SSTF'):.0f}"
    f["cheetah_sptf64_iops"] = f"{_sweep_iops(sweep, cheetah_name, 64, 'SPTF'):.0f}"
    f["schedule_requests"] = f"{SCHEDULE_REQUESTS}"
    nvme = ssd.Ssd(100, SSD_WRITE_LATENCY_US, 8, SSD_BANDWIDTH_MB_S)
    f["ssd_qd1_iops"] = f"{ssd.ssd_iops(nvme, 1).iops:,.0f}"
    f["ssd_top_iops"] = f"{ssd.ssd_iops(nvme, 8).iops:,.0f}"
    f["ssd_qd64_latency_ms"] = f"{ssd.ssd_iops(nvme, 64).latency_ms:.1f}"
    gp3, sc1 = cloud_volume.Gp3(ARTICLE_SIZE_GIB), cloud_volume.Sc1(ARTICLE_SIZE_GIB)
    f["sc1_baseline_mib_s"] = f"{sc1.baseline_mib_s:.2f}"
    f["sc1_burst_mib_s"] = f"{sc1.burst_mib_s:.1f}"
    f["sc1_burst_hours"] = f"{sc1.burst_seconds() / 3600:.1f}"
    f["sc1_refill_hours"] = f"{sc1.refill_seconds() / 3600:.0f}"
    burst = cloud_volume.predict(sc1, ARTICLE_BLOCK_KIB, "random", "burst")
    baseline = cloud_volume.predict(sc1, ARTICLE_BLOCK_KIB, "random", "baseline")
    gp3_random = cloud_volume.predict(gp3, ARTICLE_BLOCK_KIB, "random")
    f["sc1_burst_iops"] = f"{burst.iops:.1f}"
    f["sc1_baseline_iops"] = f"{baseline.iops:.1f}"
    f["sc1_burst_useful_mib_s"] = f"{burst.mib_s:.2f}"
    f["gp3_iops"] = f"{gp3_random.iops:,.0f}"
    f["ratio_burst"] = f"{gp3_random.iops / burst.iops:.0f}"
    f["ratio_baseline"] = f"{gp3_random.iops / baseline.iops:.0f}"
    seq_gp3 = cloud_volume.predict(gp3, 1024, "sequential")
    seq_sc1 = cloud_volume.predict(sc1, 1024, "sequential", "burst")
    f["seq_ratio"] = f"{seq_gp3.mib_s / seq_sc1.mib_s:.1f}"
    f["article_ratio"] = f"{ARTICLE_RATIO}"
    f["article_db_ratio"] = f"{ARTICLE_DB_RATIO:g}"
    fit_ms = latency_for_ratio(ARTICLE_RATIO)
    f["fit_latency_ms"] = f"{fit_ms:.2f}"
    f["fit_gp3_iops"] = f"{1000 / fit_ms:,.0f}"
    f["one_thread_1ms_ratio"] = f"{one_thread_ratio(1.0):.0f}"
    f["gp3_qd_for_full_iops_at_1ms"] = f"{ssd.queue_depth_from(gp3.iops, 1.0):.0f}"
    f.update(exercise_figures())
    return f


def exercise_figures() -> dict[str, str]:
    """The worked answers of the explanation page's exercises."""
    f: dict[str, str] = {}
    big = cloud_volume.Sc1(2048)
    f["ex1_burst_mib_s"] = f"{big.burst_mib_s:.0f}"
    f["ex1_baseline_mib_s"] = f"{big.baseline_mib_s:.0f}"
    f["ex1_burst_iops"] = f"{cloud_volume.predict(big, 16, 'random', 'burst').iops:.0f}"
    f["ex1_baseline_iops"] = f"{cloud_volume.predict(big, 16, 'random', 'baseline').iops:.0f}"
    largest = cloud_volume.Sc1(cloud_volume.PUBLISHED[("sc1", "max_size_gib")])
    f["ex1_cap_iops"] = f"{cloud_volume.predict(largest, 16, 'random', 'burst').iops:.0f}"
    f["ex1_cap_mib_s"] = f"{cloud_volume.PUBLISHED[('sc1', 'max_throughput_mib_s')]:.0f}"
    f["ex1_cap_baseline_mib_s"] = f"{largest.baseline_mib_s:.0f}"
    f["ex1_cap_baseline_iops"] = \
        f"{cloud_volume.predict(largest, 16, 'random', 'baseline').iops:.0f}"
    in_flight = ssd.queue_depth_from(2000, 1.0)
    f["ex2_in_flight"] = f"{in_flight:.0f}"
    disk_iops = disk.random_io("cheetah", 4096).iops
    f["ex2_disk_iops"] = f"{disk_iops:.0f}"
    f["ex2_disks"] = f"{int(np.ceil(2000 / disk_iops))}"
    return f
