"""The write-path lab's probe, run with python3 AS ROOT ON THE LAB HOST (standard library only).

    python3 probe.py prepare FILE --records N
    python3 probe.py trial FILE --mode MODE --rate R --seconds S --nonce X --dm NAME
                     --acks ACKFILE --pid-file PIDFILE
    python3 probe.py write FILE --mode MODE --rate R --nonce X --acks ACKFILE
    python3 probe.py count FILE --nonce X --acked K
    python3 probe.py replay LOG TARGET --mark NAME
    python3 probe.py cut --dm NAME --user USER --name PROCESS
    python3 probe.py stamp

`prepare` fills FILE with N zeroed 4 KiB records and makes the file and its name durable
(fsync of the file and of its folder). `write` (the child that `trial` starts) writes
record 0, 1, 2, ... at R records a second in one way of writing (MODE) and appends
"seq seconds" to ACKFILE each time the way of writing says a record is written: the
acknowledgement. `trial` lets the writer run S seconds, then cuts: it freezes the writer
(SIGSTOP, so no acknowledgement can follow), puts the mark "cut" into the dm-log-writes log
of device NAME (every write a completed flush covered is before it in the log), sends the
device a bare FLUSH and puts the mark "crash" after it (every write the device had completed
is then before it), and kills the writer (SIGKILL: the process crash). It prints one JSON
object: how many records were acknowledged and how old each acknowledgement was at the cut.

`cut` makes the same cut for a database server: it freezes every process of USER named
PROCESS (the server's own), marks "cut", flushes, marks "crash" and kills those processes.
Its clients are left alone: they end when they find the server gone. It prints the
moment it froze them on CLOCK_MONOTONIC; `stamp` copies a client's "ack N" lines from its
standard input to its output with the same clock's time added ("ack N T").

`replay` rebuilds, on TARGET, the disk as it was at the mark: every logged write up to the
mark, in the log's order. dm-log-writes logs a write only once a flush that covers it has
completed (or at once, for a FUA write). Up to the mark "cut", the rebuilt disk has what
the device's media had, had its volatile cache been lost then (a power cut); up to "crash",
every write the device had completed, and nothing still in the page cache (a kernel crash).
`count` reads FILE back and says which of the first K records are there, byte for byte, with
this trial's nonce.

The log's format (Linux, drivers/md/dm-log-writes.c): a super block at byte 0 (magic,
version, entry count, sector size), then entries from the second sector on: one sector with
the entry (sector, sector count, flags, data length; a mark's name after it), then the
written data (sector count x sector size; none for a discard).

The lab copies this file into its work dir on the lab host and runs it there, so it needs
nothing but the host's own python3; it imports nothing from the project.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import signal
import struct
import subprocess
import sys
import time

RECORD_BYTES = 4096
MODES = ("app-buffer", "write", "write+fsync", "direct", "direct+dsync")

LOG_MAGIC = 0x6A736677736872
LOG_VERSION = 1
SUPER = struct.Struct("<QQQI")  # magic, version, entries, sector size
ENTRY = struct.Struct("<QQQQ")  # sector, sectors, flags, data length
FLUSH, FUA, DISCARD, MARK = 1, 2, 4, 8
REPLAY_CHUNK_BYTES = 1 << 20


def record(nonce: str, seq: int) -> bytes:
    """Record `seq` of one trial: its header repeated over 4 KiB, unlike any other's."""
    header = f"{nonce}:{seq:09d}|".encode()
    return (header * (RECORD_BYTES // len(header) + 1))[:RECORD_BYTES]


def prepare(path: str, records: int) -> dict:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        zeros = bytes(RECORD_BYTES)
        for _ in range(records):
            os.write(fd, zeros)
        os.fsync(fd)
    finally:
        os.close(fd)
    folder = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(folder)  # the file's name, not only its blocks
    finally:
        os.close(folder)
    return {"records": records, "bytes": records * RECORD_BYTES}


class Writer:
    """One way of writing a record; `put` returns once that way says it is written."""

    def __init__(self, path: str, mode: str, records: int) -> None:
        self.mode = mode
        flags = os.O_WRONLY
        if mode.startswith("direct"):
            flags |= os.O_DIRECT
        if mode == "direct+dsync":
            flags |= os.O_DSYNC
        self.fd = os.open(path, flags)
        # O_DIRECT needs a buffer aligned to the block size: an anonymous mapping is.
        self.buffer = mmap.mmap(-1, RECORD_BYTES)
        # The application's own buffer: big enough that it never spills to the kernel.
        self.file = (os.fdopen(self.fd, "wb", buffering=(records + 1) * RECORD_BYTES)
                     if mode == "app-buffer" else None)

    def put(self, seq: int, data: bytes) -> None:
        if self.file is not None:
            # In order from record 0, so no seek: a buffered file's seek empties its buffer.
            self.file.write(data)
            return
        self.buffer[:] = data
        os.pwrite(self.fd, self.buffer, seq * RECORD_BYTES)
        if self.mode == "write+fsync":
            os.fsync(self.fd)


def write(path: str, mode: str, rate: float, nonce: str, acks: str) -> None:
    size = os.path.getsize(path)
    records = size // RECORD_BYTES
    writer = Writer(path, mode, records)
    ack_fd = os.open(acks, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    started = time.monotonic()
    for seq in range(records):
        due = started + seq / rate
        time.sleep(max(0.0, due - time.monotonic()))
        writer.put(seq, record(nonce, seq))
        # Written whole by one write(): the trial reads complete lines only.
        os.write(ack_fd, f"{seq} {time.monotonic():.6f}\n".encode())
    time.sleep(3600)  # out of records: wait for the cut, acknowledging nothing more


def read_acks(path: str) -> list[tuple[int, float]]:
    acks = []
    with open(path) as lines:
        for line in lines:
            if line.endswith("\n"):
                seq, at = line.split()
                acks.append((int(seq), float(at)))
    return acks


def trial(path: str, mode: str, rate: float, seconds: float, nonce: str, dm: str,
          acks: str, pid_file: str) -> dict:
    with open(pid_file, "w") as out:  # for `clean`, should the lab die mid-trial
        out.write(f"{os.getpid()}\n")
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "write", path,
                              "--mode", mode, "--rate", str(rate), "--nonce", nonce,
                              "--acks", acks])
    try:
        wait_until_writing(child, acks)
        time.sleep(seconds)
        if child.poll() is not None:
            raise SystemExit(f"probe: the writer ended early (exit {child.returncode})")
        child.send_signal(signal.SIGSTOP)  # frozen: no acknowledgement after this point
        cut_at = time.monotonic()
        mark_cut_and_crash(dm)
    finally:
        child.kill()  # the process crash
        child.wait()
    got = read_acks(acks)
    return {"acked": len(got), "ack_age_s": [round(cut_at - at, 6) for _, at in got],
            "seconds": seconds, "rate": rate}


WRITER_START_LIMIT_S = 120.0


def wait_until_writing(child: subprocess.Popen, acks: str) -> None:
    """Until the writer has opened its acknowledgements, just before its first record: the
    trial's seconds count from there, not from the spawn (in an emulated VM on a busy
    machine, the interpreter's start alone can outlast a short trial)."""
    deadline = time.monotonic() + WRITER_START_LIMIT_S
    while not os.path.exists(acks):
        if child.poll() is not None:
            raise SystemExit(f"probe: the writer ended before writing (exit {child.returncode})")
        if time.monotonic() > deadline:
            raise SystemExit(f"probe: the writer did not start in {WRITER_START_LIMIT_S:g} s")
        time.sleep(0.01)


def mark_cut_and_crash(dm: str) -> None:
    """Mark "cut" (what a completed flush covered), flush, mark "crash" (all completed)."""
    mark(dm, "cut")
    # A bare FLUSH of the device alone (not of the file system's page cache): it logs
    # every write the device had completed, flushed or not, which a kernel crash leaves.
    device = os.open(f"/dev/mapper/{dm}", os.O_WRONLY)
    try:
        os.fsync(device)
    finally:
        os.close(device)
    mark(dm, "crash")


def cut_server(dm: str, user: str, name: str) -> dict:
    """Freeze the server's processes, make the marks, then kill them (a process crash)."""
    found = subprocess.run(["pgrep", "-u", user, "-x", name], capture_output=True, text=True)
    pids = [int(pid) for pid in found.stdout.split()]
    if not pids:
        raise SystemExit(f"probe: no process {name} of user {user} to cut")
    try:
        for pid in pids:  # frozen: no commit can be acknowledged after this point
            os.kill(pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        mark_cut_and_crash(dm)
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return {"processes": len(pids), "frozen_at_s": frozen_at}


def stamp() -> None:
    """Copy "ack N" lines from standard input with the time added, one line at a time."""
    for line in sys.stdin:
        if line.startswith("ack "):
            sys.stdout.write(f"{line.strip()} {time.monotonic():.6f}\n")
            sys.stdout.flush()


def mark(dm: str, name: str) -> None:
    """Put a mark into the dm-log-writes log of device `dm`, after every logged write."""
    subprocess.run(["dmsetup", "message", dm, "0", "mark", name], check=True)


def count(path: str, nonce: str, acked: int) -> dict:
    """Which of the first `acked` records FILE holds byte for byte ("1") or not ("0")."""
    kept = []
    try:
        with open(path, "rb") as file:
            for seq in range(acked):
                file.seek(seq * RECORD_BYTES)
                kept.append("1" if file.read(RECORD_BYTES) == record(nonce, seq) else "0")
        exists = True
    except FileNotFoundError:
        kept, exists = ["0"] * acked, False
    bits = "".join(kept)
    return {"file_exists": exists, "kept": bits.count("1"), "lost": bits.count("0"),
            "kept_bits": bits}


def read_exactly(fd: int, offset: int, size: int) -> bytes:
    data = os.pread(fd, size, offset)
    if len(data) != size:
        raise SystemExit(f"probe: the log ends inside an entry at byte {offset}")
    return data


def replay(log: str, target: str, mark: str) -> dict:
    """Write the log's entries onto TARGET, in order, up to the mark; stop there."""
    log_fd = os.open(log, os.O_RDONLY)
    target_fd = os.open(target, os.O_WRONLY)
    try:
        magic, version, entries, sector = SUPER.unpack_from(read_exactly(log_fd, 0, SUPER.size))
        if magic != LOG_MAGIC or version != LOG_VERSION:
            raise SystemExit(f"probe: {log} holds no dm-log-writes log (magic {magic:#x})")
        tally = {"entries": entries, "replayed": 0, "writes": 0, "flushes": 0, "fua": 0,
                 "discards": 0, "bytes": 0, "mark_found": False, "sector_bytes": sector}
        offset = sector
        for _ in range(entries):
            head = read_exactly(log_fd, offset, sector)
            start, sectors, flags, length = ENTRY.unpack_from(head)
            offset += sector
            if flags & MARK:
                if head[ENTRY.size:ENTRY.size + length].decode() == mark:
                    tally["mark_found"] = True
                    break
                continue
            tally["replayed"] += 1
            tally["flushes"] += bool(flags & FLUSH)
            tally["fua"] += bool(flags & FUA)
            if flags & DISCARD:
                tally["discards"] += 1
                write_range(target_fd, start * sector, sectors * sector)
                continue
            if sectors:
                write_range(target_fd, start * sector, sectors * sector, log_fd, offset)
                tally["writes"] += 1
                tally["bytes"] += sectors * sector
                offset += sectors * sector
        os.fsync(target_fd)
    finally:
        os.close(log_fd)
        os.close(target_fd)
    if not tally["mark_found"]:
        raise SystemExit(f"probe: no mark {mark!r} in the log of {log}")
    return tally


def write_range(target_fd: int, at: int, size: int, source_fd: int | None = None,
                offset: int = 0) -> None:
    """Write `size` bytes at `at` on TARGET, in chunks: from the log at `offset`, or zeroes
    (a discard) when no source is given."""
    done = 0
    while done < size:
        part = min(REPLAY_CHUNK_BYTES, size - done)
        data = bytes(part) if source_fd is None else read_exactly(source_fd, offset + done, part)
        os.pwrite(target_fd, data, at + done)
        done += part


def main() -> None:
    parser = argparse.ArgumentParser(prog="probe.py")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("prepare")
    p.add_argument("file")
    p.add_argument("--records", type=int, required=True)
    for name in ("trial", "write"):
        p = commands.add_parser(name)
        p.add_argument("file")
        p.add_argument("--mode", choices=MODES, required=True)
        p.add_argument("--rate", type=float, required=True)
        p.add_argument("--nonce", required=True)
        p.add_argument("--acks", required=True)
        if name == "trial":
            p.add_argument("--seconds", type=float, required=True)
            p.add_argument("--dm", required=True)
            p.add_argument("--pid-file", required=True)
    p = commands.add_parser("count")
    p.add_argument("file")
    p.add_argument("--nonce", required=True)
    p.add_argument("--acked", type=int, required=True)
    p = commands.add_parser("replay")
    p.add_argument("log")
    p.add_argument("target")
    p.add_argument("--mark", required=True)
    p = commands.add_parser("cut")
    p.add_argument("--dm", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--name", required=True)
    commands.add_parser("stamp")
    args = parser.parse_args()
    if args.command == "write":
        write(args.file, args.mode, args.rate, args.nonce, args.acks)
        return
    if args.command == "stamp":
        stamp()
        return
    result = {
        "prepare": lambda: prepare(args.file, args.records),
        "trial": lambda: trial(args.file, args.mode, args.rate, args.seconds, args.nonce,
                               args.dm, args.acks, args.pid_file),
        "count": lambda: count(args.file, args.nonce, args.acked),
        "replay": lambda: replay(args.log, args.target, args.mark),
        "cut": lambda: cut_server(args.dm, args.user, args.name),
    }[args.command]()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
