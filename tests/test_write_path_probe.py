"""The write-path lab's probe, off any lab host: its replay of a dm-log-writes log (a log
built here in the kernel's documented format: parsing is what is tested), its records and
its count, and the lab's model of each way's window. Bad input is one line."""

from __future__ import annotations

import math
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from labs.write_path import model, probe
from labs.write_path.params import MAX_RECORDS, Parameters

PROBE = Path(probe.__file__)
SECTOR = 512


def entry(sector: int, sectors: int, flags: int, data: bytes = b"", mark: str = "") -> bytes:
    """One log entry: its header sector (a mark's name after the header), then its data."""
    text = mark.encode()
    head = struct.pack("<QQQQ", sector, sectors, flags, len(text)) + text
    return head.ljust(SECTOR, b"\0") + data


def write_log(path: Path, entries: list[bytes]) -> None:
    superblock = struct.pack("<QQQI", probe.LOG_MAGIC, probe.LOG_VERSION, len(entries), SECTOR)
    path.write_bytes(superblock.ljust(SECTOR, b"\0") + b"".join(entries))


def replay(log: Path, target: Path, mark: str = "cut") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PROBE), "replay", str(log), str(target),
                           "--mark", mark], capture_output=True, text=True, timeout=60)


def test_replay_writes_what_came_before_the_mark_and_nothing_after(tmp_path):
    log, target = tmp_path / "log", tmp_path / "target"
    target.write_bytes(b"\xff" * 8 * SECTOR)
    write_log(log, [
        entry(0, 2, 0, b"A" * 2 * SECTOR),  # a write, logged once the flush covered it
        entry(0, 0, probe.FLUSH),
        entry(4, 2, probe.DISCARD),  # a discard carries no data: replayed as zeroes
        entry(0, 0, probe.MARK, mark="mkfs"),  # another mark: passed over
        entry(6, 1, probe.FUA, b"F" * SECTOR),
        entry(0, 0, probe.MARK, mark="cut"),
        entry(2, 1, 0, b"Z" * SECTOR),  # after the cut: never replayed
    ])
    out = replay(log, target)
    assert out.returncode == 0, out.stderr
    tally = probe.json.loads(out.stdout)
    assert tally["mark_found"] and tally["writes"] == 2 and tally["flushes"] == 1
    assert tally["fua"] == 1 and tally["discards"] == 1 and tally["bytes"] == 3 * SECTOR
    disk = target.read_bytes()
    assert disk[:2 * SECTOR] == b"A" * 2 * SECTOR
    assert disk[2 * SECTOR:4 * SECTOR] == b"\xff" * 2 * SECTOR  # the write after the cut
    assert disk[4 * SECTOR:6 * SECTOR] == bytes(2 * SECTOR)
    assert disk[6 * SECTOR:7 * SECTOR] == b"F" * SECTOR


@pytest.mark.parametrize("case, words", [
    ("no mark", "no mark 'cut'"),
    ("not a log", "holds no dm-log-writes log"),
    ("cut short", "ends inside an entry"),
])
def test_a_bad_log_is_one_line_and_nonzero(tmp_path, case, words):
    log, target = tmp_path / "log", tmp_path / "target"
    target.write_bytes(bytes(4 * SECTOR))
    if case == "no mark":
        write_log(log, [entry(0, 1, 0, b"A" * SECTOR)])
    elif case == "not a log":
        log.write_bytes(bytes(4 * SECTOR))
    else:
        write_log(log, [entry(0, 4, 0, b"A" * SECTOR)])  # says 4 sectors, holds 1
    out = replay(log, target)
    assert out.returncode != 0 and words in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_records_differ_by_number_and_nonce_and_count_finds_them(tmp_path):
    assert len(probe.record("ab", 1)) == probe.RECORD_BYTES
    assert probe.record("ab", 1) != probe.record("ab", 2) != probe.record("cd", 2)
    path = tmp_path / "records"
    path.write_bytes(probe.record("ab", 0) + bytes(probe.RECORD_BYTES)
                     + probe.record("xx", 2) + probe.record("ab", 3))
    found = probe.count(str(path), "ab", 4)
    assert found["kept_bits"] == "1001" and (found["kept"], found["lost"]) == (2, 2)
    gone = probe.count(str(tmp_path / "missing"), "ab", 3)
    assert gone == {"file_exists": False, "kept": 0, "lost": 3, "kept_bits": "000"}


def test_each_way_has_the_write_path_models_windows():
    ways = model.WAYS
    # Flushing before the answer: nothing to lose, to either fault.
    for name in ("write+fsync", "direct+dsync"):
        assert ways[name].window_s("process crash") == ways[name].window_s("power cut") == 0
    # A process crash takes only the program's own buffer.
    assert [w.name for w in model.WAYS_LIST if w.window_s("process crash") > 0] == ["app-buffer"]
    # The page cache's 30 s expiry plus the 5 s flusher period, then ext4's 5 s commit.
    assert ways["write"].cut_window_s == 40.0
    assert ways["direct"].cut_window_s == 5.0
    assert math.isinf(ways["fsync-nobarrier"].cut_window_s)
    assert model.most_lost([0.5, 4.9, 5.0, 30.0], 5.0) == 2
    assert model.most_lost([0.5, 1e6], math.inf) == 2


def test_the_profiles_fit_the_file_system():
    for profile in ("ci", "quick", "full"):
        params = Parameters.for_profile(profile)
        params.validate()
        assert params.records_needed() <= MAX_RECORDS
