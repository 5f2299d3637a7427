"""The caches lab's probe, run with python3 ON THE LAB HOST (standard library only).

    python3 probe.py fill FILE SIZE_MIB
    python3 probe.py evict PATH [PATH ...]
    python3 probe.py reads FILE --method buffered|direct|mmap --size BYTES --count N
                     --seed S --device loopN [--align BYTES]

`fill` writes random bytes and syncs them. `evict` writes back and then drops the page
cache of the named files (folders: every file below them) with posix_fadvise(DONTNEED):
only those files, never the machine's whole cache. `reads` evicts FILE, reads N records of
BYTES at record-aligned random offsets (seeded), then reads the very same records again,
and prints one JSON object: per pass, the device's read bytes and requests (from
/sys/block/DEV/stat) and the latency of each read in microseconds.

The lab copies this file into its work dir on the lab host and runs it there, so it needs
nothing but the host's own python3; it imports nothing from the project.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import random
import sys
import time

SECTOR_BYTES = 512  # /sys/block/*/stat counts 512-byte sectors whatever the device's own


def device_counters(device: str) -> tuple[int, int]:
    """(bytes read, read requests completed) of a block device, from the kernel's counters."""
    with open(f"/sys/block/{device}/stat") as stat:
        fields = stat.read().split()
    return int(fields[2]) * SECTOR_BYTES, int(fields[0])


def evict(paths: list[str]) -> int:
    """Write back and drop the cached pages of these files only; how many files."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            for folder, _, names in os.walk(path):
                files += [os.path.join(folder, name) for name in names]
        else:
            files.append(path)
    done = 0
    for name in files:
        if not os.path.isfile(name) or os.path.islink(name):
            continue
        try:
            fd = os.open(name, os.O_RDONLY)
        except FileNotFoundError:
            continue  # an engine may delete a file between the walk and here
        try:
            os.fsync(fd)  # dirty pages cannot be dropped
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            done += 1
        finally:
            os.close(fd)
    return done


def fill(path: str, size_mib: int) -> None:
    chunk = 1 << 20
    with open(path, "wb") as out:
        for _ in range(size_mib):
            out.write(os.urandom(chunk))
        out.flush()
        os.fsync(out.fileno())


def offsets(file_bytes: int, record_bytes: int, count: int, seed: int) -> list[int]:
    """Record-aligned random offsets: record i starts at i * record_bytes."""
    records = file_bytes // record_bytes
    rng = random.Random(seed)
    return [rng.randrange(records) * record_bytes for _ in range(count)]


class Reader:
    """Reads `size` bytes at an offset: through the page cache, past it, or by mmap."""

    def __init__(self, path: str, method: str, size: int, align: int):
        self.method, self.size, self.align = method, size, align
        flags = os.O_RDONLY | (os.O_DIRECT if method == "direct" else 0)
        self.fd = os.open(path, flags)
        self.file_bytes = os.fstat(self.fd).st_size
        if method == "mmap":
            self.map = mmap.mmap(self.fd, self.file_bytes, prot=mmap.PROT_READ)
        if method == "direct":
            # O_DIRECT needs an aligned buffer, offset and length: round out to `align`.
            span = ((size + 2 * align - 1) // align + 1) * align
            self.buffer = mmap.mmap(-1, span)

    def read(self, offset: int) -> int:
        if self.method == "buffered":
            return len(os.pread(self.fd, self.size, offset))
        if self.method == "mmap":
            return len(self.map[offset:offset + self.size])
        start = offset - offset % self.align
        end = -(-(offset + self.size) // self.align) * self.align
        view = memoryview(self.buffer)[:end - start]
        return os.preadv(self.fd, [view], start)

    def close(self) -> None:
        if self.method == "mmap":
            self.map.close()
        os.close(self.fd)


def one_pass(reader: Reader, places: list[int], device: str) -> dict:
    bytes_before, ios_before = device_counters(device)
    latencies_us = []
    for offset in places:
        started = time.perf_counter_ns()
        reader.read(offset)
        latencies_us.append(round((time.perf_counter_ns() - started) / 1000, 1))
    bytes_after, ios_after = device_counters(device)
    return {"device_bytes": bytes_after - bytes_before, "device_reads": ios_after - ios_before,
            "latency_us": latencies_us}


def reads(args: argparse.Namespace) -> dict:
    evict([args.file])
    reader = Reader(args.file, args.method, args.size, args.align)
    places = offsets(reader.file_bytes, args.size, args.count, args.seed)
    try:
        cold = one_pass(reader, places, args.device)
        warm = one_pass(reader, places, args.device)
    finally:
        reader.close()
    return {"method": args.method, "size": args.size, "count": args.count,
            "align": args.align, "file_bytes": reader.file_bytes, "cold": cold, "warm": warm}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="probe.py")
    commands = parser.add_subparsers(dest="command", required=True)
    fill_cmd = commands.add_parser("fill")
    fill_cmd.add_argument("file")
    fill_cmd.add_argument("size_mib", type=int)
    evict_cmd = commands.add_parser("evict")
    evict_cmd.add_argument("paths", nargs="+")
    reads_cmd = commands.add_parser("reads")
    reads_cmd.add_argument("file")
    reads_cmd.add_argument("--method", choices=("buffered", "direct", "mmap"), required=True)
    reads_cmd.add_argument("--size", type=int, required=True)
    reads_cmd.add_argument("--count", type=int, required=True)
    reads_cmd.add_argument("--seed", type=int, default=1)
    reads_cmd.add_argument("--device", required=True)
    reads_cmd.add_argument("--align", type=int, default=4096)
    args = parser.parse_args(argv)
    if args.command == "fill":
        fill(args.file, args.size_mib)
        print(json.dumps({"filled": args.file, "size_mib": args.size_mib}))
    elif args.command == "evict":
        print(json.dumps({"evicted_files": evict(args.paths)}))
    else:
        print(json.dumps(reads(args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
