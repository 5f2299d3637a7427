"""`python -m labs disk`: the Device speed chapter's models on the command line.

    python -m labs disk --drive cheetah --block-kib 4              # seek + rotation + transfer
    python -m labs disk --drive barracuda --queue 200 --seed 1     # FIFO, SSTF, SPTF on a queue
    python -m labs disk --ssd --read-latency-us 80 --channels 8    # IOPS by queue depth
    python -m labs disk --volume sc1 --size-gib 300 --block-kib 16 # a cloud volume's limits
    python -m labs disk --problem schedule --seed 3 [-c]           # practice (and its answer)
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict

from labs.commands import (
    add_practice_arguments,
    print_practice,
    refuse_lone_compute,
    refuse_options,
)
from labs.errors import UsageError
from labs.models import cloud_volume, disk, disk_problems, ssd

HELP = "disk, SSD and cloud-volume models: where an I/O's time goes, practice problems"

QUEUE_DEPTHS = (1, 2, 4, 8, 16, 32, 64)
# The options that only one view reads, with their defaults (None on the command line, so
# that one given to another view is refused instead of silently ignored).
VIEW_OPTIONS = {
    "--ssd": {"read_latency_us": 80.0, "write_latency_us": 20.0, "channels": 8,
              "bandwidth_mb_s": 2000.0},
    "--volume": {"size_gib": 300, "pattern": "random"},
    "--drive": {"sequential_mb": 100},  # the drive's own view, not its --queue
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--drive", choices=sorted(disk.PRESETS), default=None,
                        help="a disk preset (OSTEP's Cheetah 15K.5 and Barracuda, or the toy "
                        "disk of the scheduling problems); the default view")
    parser.add_argument("--block-kib", type=float, default=None,
                        help="size of one random I/O in KiB (default 4; 16 for --volume)")
    parser.add_argument("--sequential-mb", type=float, default=None,
                        help="--drive: size of the one long read to compare with "
                             "(default 100 MB)")
    parser.add_argument("--queue", type=int, metavar="REQUESTS",
                        help="with --drive: serve this many random requests under FIFO, SSTF "
                        "and SPTF at queue depths 1..64 (one seeded workload)")
    parser.add_argument("--ssd", action="store_true",
                        help="the SSD model: IOPS and latency by queue depth")
    parser.add_argument("--read-latency-us", type=float, default=None,
                        help="--ssd: one read's time inside the drive (default 80 us)")
    parser.add_argument("--write-latency-us", type=float, default=None,
                        help="--ssd: one write's time (default 20 us)")
    parser.add_argument("--channels", type=int, default=None,
                        help="--ssd: requests the drive serves at once (default 8)")
    parser.add_argument("--bandwidth-mb-s", type=float, default=None,
                        help="--ssd: the drive's top throughput (default 2000 MB/s)")
    parser.add_argument("--volume", choices=cloud_volume.VOLUME_TYPES,
                        help="a cloud volume (AWS EBS) by its published limits")
    parser.add_argument("--size-gib", type=float, default=None,
                        help="--volume: size in GiB (default 300, the seed article's)")
    parser.add_argument("--pattern", choices=cloud_volume.PATTERNS, default=None,
                        help="--volume: random or sequential I/O (default random)")
    parser.add_argument("--json", action="store_true", help="print one JSON value")
    add_practice_arguments(parser, disk_problems.KINDS,
                           "which problem or workload (default 0); the same seed, the same one")


def _queue_report(drive: str, requests: int, seed: int, block_kib: float) -> dict:
    sectors = block_kib * 1024 / disk.get_drive(drive).sector_bytes
    if sectors != int(sectors):
        raise UsageError(f"--block-kib must be a whole number of 512-byte sectors, "
                         f"got {block_kib:g}")
    if not 1 <= requests <= 5000:
        raise UsageError(f"--queue takes 1 to 5000 requests, got {requests}")
    rows = disk.queue_depth_sweep(drive, requests, seed,
                                  [d for d in QUEUE_DEPTHS if d <= requests], int(sectors))
    return {"drive": disk.get_drive(drive).name, "requests": requests, "seed": seed,
            "block_kib": block_kib, "rows": rows}


def _format_queue(report: dict) -> str:
    lines = [f"{report['drive']}: {report['requests']} random {report['block_kib']:g} KiB "
             f"reads (seed {report['seed']}), IOPS by queue depth",
             f"{'depth':>6} " + " ".join(f"{p.upper():>8}" for p in disk.POLICIES)]
    depths = sorted({row["queue_depth"] for row in report["rows"]})
    for depth in depths:
        iops = {row["policy"]: row["iops"] for row in report["rows"]
                if row["queue_depth"] == depth}
        lines.append(f"{depth:>6} " + " ".join(f"{iops[p]:>8.0f}" for p in disk.POLICIES))
    return "\n".join(lines)


def _ssd_report(args: argparse.Namespace, block_kib: float) -> dict:
    drive = ssd.Ssd(args.read_latency_us, args.write_latency_us, args.channels,
                    args.bandwidth_mb_s)
    return {"ssd": {k: v for k, v in asdict(drive).items() if k != "name"},
            "block_kib": block_kib,
            "saturation_queue_depth": ssd.saturation_queue_depth(drive, block_kib * 1024),
            "rows": ssd.queue_depth_curve(drive, block_kib * 1024, list(QUEUE_DEPTHS))}


def _format_ssd(report: dict) -> str:
    s = report["ssd"]
    lines = [f"SSD: reads {s['read_latency_us']:g} us, {s['channels']} channels, "
             f"{s['bandwidth_mb_s']:g} MB/s; random {report['block_kib']:g} KiB reads",
             f"{'depth':>6} {'IOPS':>9} {'MB/s':>8} {'latency ms':>11}  limit"]
    for row in report["rows"]:
        lines.append(f"{row['queue_depth']:>6g} {row['iops']:>9,.0f} "
                     f"{row['throughput_mb_s']:>8.1f} {row['latency_ms']:>11.3f}  {row['limit']}")
    lines.append(f"top IOPS from queue depth {report['saturation_queue_depth']:.1f} "
                 f"(Little's law: depth = IOPS x latency)")
    return "\n".join(lines)


def _check_block(block_kib: float | None, default: float) -> float:
    block_kib = default if block_kib is None else block_kib
    if not 0.5 <= block_kib <= 64 * 1024:
        raise UsageError(f"--block-kib must be between 0.5 and 65536, got {block_kib:g}")
    return block_kib


def _view_options(args: argparse.Namespace, view: str) -> None:
    """Refuse an option of another view; fill in this view's defaults."""
    for owner, options in VIEW_OPTIONS.items():
        if owner != view:
            refuse_options(args, tuple(options), f"is read only with {owner}"
                           + (" (without --queue)" if owner == "--drive" else ""))
    for name, default in VIEW_OPTIONS.get(view, {}).items():
        if getattr(args, name) is None:
            setattr(args, name, default)


def main(args: argparse.Namespace) -> int:
    if args.problem:
        if args.drive or args.ssd or args.volume or args.queue is not None:
            raise UsageError("--problem prints its own layout: drop --drive, --ssd, "
                             "--volume and --queue")
        refuse_options(args, ("block_kib", "json", *(name for options in VIEW_OPTIONS.values()
                                                     for name in options)),
                       "is not read with --problem (it prints its own layout)")
        return print_practice(args, disk_problems.make_problem)
    refuse_lone_compute(args, seed_read=args.queue is not None,
                        seed_picks="a practice problem (--problem KIND) or the requests of "
                                   "--drive D --queue N")
    if sum(bool(x) for x in (args.drive, args.ssd, args.volume)) > 1:
        raise UsageError("choose one of --drive, --ssd and --volume")
    if args.queue is not None and not args.drive:
        raise UsageError("--queue needs --drive (the disk that serves the queue)")
    if args.volume:
        _view_options(args, "--volume")
        block_kib = _check_block(args.block_kib, 16)
        report = cloud_volume.describe(args.volume, args.size_gib, block_kib, args.pattern)
        text = cloud_volume.format_description(report)
    elif args.ssd:
        _view_options(args, "--ssd")
        report = _ssd_report(args, _check_block(args.block_kib, 4))
        text = _format_ssd(report)
    elif args.queue is not None:
        _view_options(args, "--queue")
        report = _queue_report(args.drive, args.queue, 0 if args.seed is None else args.seed,
                               _check_block(args.block_kib, 4))
        text = _format_queue(report)
    else:
        _view_options(args, "--drive")
        if not math.isfinite(args.sequential_mb) or args.sequential_mb <= 0:
            raise UsageError(f"--sequential-mb must be a number of MB above 0, "
                             f"got {args.sequential_mb:g}")
        report = disk.describe(args.drive or "cheetah", _check_block(args.block_kib, 4) * 1024,
                               args.sequential_mb * disk.MB)
        text = disk.format_description(report)
    print(json.dumps(report) if args.json else text)
    return 0
